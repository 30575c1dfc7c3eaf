//! The consensus core of a Tessera cluster: raft-rs (`raft` 0.7) driven
//! sans-IO, with a durable file-backed log and a deterministic simulation.
//!
//! # What it is
//! [`Replica`] wraps `raft::RawNode`. It has no threads, clock or sockets:
//! the caller feeds it inputs and carries out its outputs.
//! - Inputs: [`Replica::step`] (a message from a peer), [`Replica::tick`]
//!   (one unit of logical time; elections after `election_tick` ticks
//!   without a leader, heartbeats every `heartbeat_tick`),
//!   [`Replica::propose`], [`Replica::propose_conf_change`] (ConfChangeV2,
//!   joint consensus with automatic leave), [`Replica::read_index`].
//! - [`Replica::drive`] runs the ready loop once and returns an [`Output`]:
//!   messages to send and linearizable reads ([`ReadReady`]) that the state
//!   machine may now serve. Committed entries are applied to the caller's
//!   [`StateMachine`] in log order inside `drive`.
//!
//! # How to drive it
//! Loop: deliver received messages with `step`, call `tick` on a timer
//! (e.g. every 100 ms), call `drive` after any input, send
//! `Output::messages` to `Message::to`, answer reads from `Output::reads`.
//!
//! # Durability (fsync points)
//! The [`LogStore`] write methods are durable when they return. `drive`
//! calls them (entries, then hard state) before it releases the messages
//! raft gates on persistence (votes, append responses), so a replica never
//! promises what a crash could lose. [`FileLog`] keeps the log as
//! CRC-framed records fsynced per append and the hard/conf state in a file
//! replaced by write-temp, fsync, rename; a torn tail is cut on open.
//! [`MemLog`] is the in-memory store for tests and the simulation.
//!
//! # Snapshots and compaction
//! [`Replica::compact`] replaces the applied log with the state machine's
//! snapshot ([`StateMachine::snapshot`]) once it holds a threshold of
//! entries; [`FileLog`] writes the snapshot durably before it rewrites the
//! log without the entries it covers. A follower behind the compacted log
//! is sent the snapshot and restores from it
//! ([`StateMachine::restore`]); so does a replica restarting over a
//! compacted store. A snapshot message that gets no answer within three
//! election timeouts is reported failed, so the leader sends it again.
//!
//! # Invariants (checked by the simulation in `tests/sim.rs`)
//! At most one leader per term; a committed entry is never lost or changed;
//! every replica applies the same sequence, without gaps, each proposal at
//! most once; a ReadIndex read observes every write committed before it
//! was issued; after faults heal, a leader is elected and a new proposal is
//! applied everywhere; a voter is replaced through joint consensus; with
//! replicas compacting at random, snapshots are taken and installed.
//!
//! # Membership
//! A removed member's leader steps down when it applies its removal (raft-rs
//! would otherwise keep it leading without its own progress); the removed
//! process is then expected to stop its replica.
//!
//! raft-rs logs through `slog`; [`logging::TracingDrain`] forwards to
//! `tracing` under the `raft` target.
pub mod cluster_state;
pub mod file_log;
pub mod locks;
pub mod logging;
pub mod mem;
pub mod replica;
pub use cluster_state::{ClusterState, Command, MetaEvent, NodeInfo, NodeState};
pub use file_log::{FileLog, FileLogError};
pub use mem::MemLog;
pub use replica::{ConsensusError, LogStore, Output, ReadReady, Replica, StateMachine, Timing};

//! The sans-IO replica: raft-rs's `RawNode` behind explicit inputs and
//! outputs. The caller owns time (ticks), the network (messages in and out)
//! and the thread; the replica owns the ready-loop order.

use protobuf::Message as _;
use raft::eraftpb::{ConfChange, ConfChangeV2, Entry, EntryType, HardState, Message, Snapshot};
use raft::prelude::ConfState;
use raft::{Config, RawNode, StateRole, Storage};

/// Errors of the consensus core (typed; inputs from the network or disk never
/// panic).
#[derive(Debug, thiserror::Error)]
pub enum ConsensusError {
    /// raft-rs refused an input or its storage failed.
    #[error("raft: {0}")]
    Raft(#[from] raft::Error),
    /// A snapshot's state does not restore.
    #[error("the snapshot at index {index} does not restore: {why}")]
    Restore {
        /// Its index.
        index: u64,
        /// Why.
        why: String,
    },
    /// A committed conf change could not be decoded.
    #[error("committed conf change at index {index} does not decode: {source}")]
    ConfChangeDecode {
        /// Log index of the entry.
        index: u64,
        /// The decoder's error.
        source: protobuf::ProtobufError,
    },
}

/// Log storage the replica writes to. Each write method must be durable
/// (written and fsynced) when it returns: the replica releases the messages
/// raft gates on persistence only after these calls return.
pub trait LogStore: Storage {
    /// Append (and overwrite any conflicting suffix with) `entries`.
    fn append(&self, entries: &[Entry]) -> raft::Result<()>;
    /// Persist the hard state (term, vote, commit).
    fn set_hard_state(&self, hs: HardState) -> raft::Result<()>;
    /// Persist an advanced commit index (reported by a light ready).
    fn set_commit(&self, commit: u64) -> raft::Result<()>;
    /// Persist the conf state that the committed conf change at `index`
    /// produced.
    fn set_conf_state(&self, cs: ConfState, index: u64) -> raft::Result<()>;
    /// The log index of the conf change the stored conf state reflects (0
    /// for the initial configuration): a restarted replica that re-applies
    /// its log must not apply those changes to raft a second time.
    fn conf_state_index(&self) -> u64;
    /// Replace the log with a snapshot received from the leader.
    fn apply_snapshot(&self, snap: Snapshot) -> raft::Result<()>;
    /// Keep `snap` (with its data) as the latest snapshot, durably, and
    /// drop the log entries it covers. What [`Storage::snapshot`] returns
    /// from then on.
    fn compact(&self, snap: Snapshot) -> raft::Result<()>;
}

/// What the replicated state machine sees: committed entries, in log order,
/// exactly once per replica lifetime from the applied index on.
pub trait StateMachine {
    /// Apply a committed normal entry's payload at `index`.
    fn apply(&mut self, index: u64, data: &[u8]);
    /// The index of the last entry applied (where a restart resumes).
    fn applied_index(&self) -> u64;
    /// A committed membership change took effect.
    fn on_conf_change(&mut self, _index: u64, _cs: &ConfState) {}
    /// The state as bytes, for a snapshot at [`StateMachine::applied_index`].
    fn snapshot(&self) -> Vec<u8>;
    /// Replace the state with a snapshot's (taken at `index`);
    /// [`StateMachine::on_conf_change`] follows with the snapshot's
    /// membership.
    fn restore(&mut self, index: u64, data: &[u8]) -> Result<(), String>;
}

/// A linearizable read that may now be served: the state machine has
/// applied at least `index`, the leader's commit index when the read began.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadReady {
    /// The context the caller passed to [`Replica::read_index`].
    pub ctx: Vec<u8>,
    /// The commit index the read must observe.
    pub index: u64,
}

/// Outputs of one [`Replica::drive`] call.
#[derive(Debug, Default)]
pub struct Output {
    /// Messages to send to peers (already ordered after the persistence that
    /// raft requires before they leave).
    pub messages: Vec<Message>,
    /// Reads that may now be served from the state machine.
    pub reads: Vec<ReadReady>,
    /// The node observed a change of its soft state (leader or role).
    pub soft_state_changed: bool,
}

/// Election and heartbeat timing, in ticks of the caller's clock.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Ticks between heartbeats.
    pub heartbeat_tick: usize,
    /// Ticks without a leader before campaigning (randomised by raft in
    /// `[election_tick, 2 * election_tick)`).
    pub election_tick: usize,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            heartbeat_tick: 2,
            election_tick: 10,
        }
    }
}

/// One raft member, driven by its caller.
pub struct Replica<S: LogStore, M: StateMachine> {
    node: RawNode<S>,
    sm: M,
    pending_reads: Vec<ReadReady>,
    /// Snapshots sent, with the ticks left before one still unacknowledged
    /// is reported failed (a lost snapshot message would otherwise leave
    /// its follower waiting for ever).
    snapshots_sent: Vec<(u64, usize)>,
    election_tick: usize,
    jitter: Option<Jitter>,
}

/// A seeded source of election timeouts, replacing raft-rs's thread-local
/// randomness so that a simulation replays exactly from its seed.
struct Jitter {
    state: u64,
    /// Term, role and leader when the timeout was last drawn: raft-rs
    /// redraws its own whenever it resets, which changes one of them.
    seen: (u64, StateRole, u64),
}

impl Jitter {
    fn next(&mut self) -> u64 {
        // SplitMix64.
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl<S: LogStore, M: StateMachine> Replica<S, M> {
    /// Start (or restart) the member `id` over `store`, which holds whatever
    /// was persisted before; `sm` resumes after its own applied index.
    pub fn new(id: u64, store: S, mut sm: M, timing: Timing) -> Result<Self, ConsensusError> {
        // A compacted log starts from its snapshot: the state machine
        // resumes from it, not from entries that are gone.
        let snap = store.snapshot(0, id)?;
        let at = snap.get_metadata().index;
        if at > sm.applied_index() {
            sm.restore(at, snap.get_data())
                .map_err(|why| ConsensusError::Restore { index: at, why })?;
            sm.on_conf_change(at, snap.get_metadata().get_conf_state());
        }
        let cfg = Config {
            id,
            heartbeat_tick: timing.heartbeat_tick,
            election_tick: timing.election_tick,
            applied: sm.applied_index(),
            // Reads go through ReadIndex with a quorum round (no clock
            // assumption); check-quorum and pre-vote keep a partitioned node
            // from disrupting a healthy majority.
            check_quorum: true,
            pre_vote: true,
            max_size_per_msg: 1024 * 1024,
            max_inflight_msgs: 256,
            ..Default::default()
        };
        let node = RawNode::new(&cfg, store, &crate::logging::raft_logger())?;
        Ok(Replica {
            node,
            sm,
            pending_reads: Vec::new(),
            snapshots_sent: Vec::new(),
            election_tick: timing.election_tick,
            jitter: None,
        })
    }

    /// Draws election timeouts from a generator seeded with `seed` instead
    /// of raft-rs's thread-local one, so that a deterministic simulation of
    /// this replica replays exactly. Production replicas keep raft-rs's.
    pub fn seed_election_jitter(&mut self, seed: u64) {
        self.jitter = Some(Jitter {
            state: seed ^ self.id().wrapping_mul(0x2545_f491_4f6c_dd1d),
            seen: (u64::MAX, StateRole::Follower, u64::MAX),
        });
        self.redraw_election_timeout();
    }

    /// After any input that may have reset raft (a new term, role or
    /// leader), replaces raft-rs's drawn timeout with the seeded one.
    fn redraw_election_timeout(&mut self) {
        // raft-rs draws from [election_tick, 2 * election_tick) (the
        // configuration leaves its bounds at their defaults).
        let lo = self.election_tick;
        let Some(j) = self.jitter.as_mut() else {
            return;
        };
        let r = &mut self.node.raft;
        let now = (r.term, r.state, r.leader_id);
        if now == j.seen {
            return;
        }
        j.seen = now;
        let t = lo + (j.next() % lo.max(1) as u64) as usize;
        r.set_randomized_election_timeout(t);
    }

    /// This member's id.
    pub fn id(&self) -> u64 {
        self.node.raft.id
    }
    /// The current term.
    pub fn term(&self) -> u64 {
        self.node.raft.term
    }
    /// Whether this member is the leader.
    pub fn is_leader(&self) -> bool {
        self.node.raft.state == StateRole::Leader
    }
    /// The leader this member knows of (0 when none).
    pub fn leader_id(&self) -> u64 {
        self.node.raft.leader_id
    }
    /// The commit index.
    pub fn commit_index(&self) -> u64 {
        self.node.raft.raft_log.committed
    }
    /// The state machine.
    pub fn state_machine(&self) -> &M {
        &self.sm
    }
    /// The storage.
    pub fn store(&self) -> &S {
        self.node.store()
    }
    /// The current voters and learners.
    pub fn conf_state(&self) -> ConfState {
        self.node.raft.prs().conf().to_conf_state()
    }

    /// One tick of logical time.
    pub fn tick(&mut self) {
        self.node.tick();
        self.redraw_election_timeout();
        let mut expired = Vec::new();
        self.snapshots_sent.retain_mut(|(to, left)| {
            *left = left.saturating_sub(1);
            if *left == 0 {
                expired.push(*to);
            }
            *left > 0
        });
        for to in expired {
            let waiting = self
                .node
                .raft
                .prs()
                .get(to)
                .is_some_and(|p| p.state == raft::ProgressState::Snapshot);
            if self.is_leader() && waiting {
                self.node.report_snapshot(to, raft::SnapshotStatus::Failure);
            }
        }
    }
    /// A message from a peer. Messages that raft rejects (stale or for
    /// another configuration) are dropped and reported as an error.
    pub fn step(&mut self, mut m: Message) -> Result<(), ConsensusError> {
        // A leader's heartbeat carries a commit index no greater than what
        // it believes this member holds; beyond this member's log it can
        // only come from a leader that has not yet learnt that this member
        // lost its log (see [`Replica::forget_progress`]). raft-rs would
        // panic on it: the commit index stays where it is instead.
        if m.get_msg_type() == raft::eraftpb::MessageType::MsgHeartbeat
            && m.commit > self.node.raft.raft_log.last_index()
        {
            m.commit = self.commit_index();
        }
        let r = self.node.step(m);
        self.redraw_election_timeout();
        Ok(r?)
    }
    /// On a leader: forgets what it knows of member `id`'s log, because that
    /// member lost it (a replaced node): the leader probes it from the
    /// start again, sending entries or a snapshot, instead of ignoring its
    /// refusals of entries beyond what it holds. Returns whether this
    /// member led and knew `id`.
    pub fn forget_progress(&mut self, id: u64) -> bool {
        if !self.is_leader() || id == self.id() {
            return false;
        }
        match self.node.raft.mut_prs().get_mut(id) {
            Some(pr) => {
                pr.matched = 0;
                pr.become_probe();
                true
            }
            None => false,
        }
    }

    /// Propose `data` for the log (only a leader accepts; others return
    /// `ProposalDropped`).
    pub fn propose(&mut self, data: Vec<u8>) -> Result<(), ConsensusError> {
        Ok(self.node.propose(Vec::new(), data)?)
    }
    /// Propose a membership change (joint consensus for several changes).
    pub fn propose_conf_change(&mut self, cc: ConfChangeV2) -> Result<(), ConsensusError> {
        Ok(self.node.propose_conf_change(Vec::new(), cc)?)
    }
    /// Begin a linearizable read tagged `ctx`; its [`ReadReady`] comes out of
    /// a later [`Replica::drive`] once the state machine has caught up.
    pub fn read_index(&mut self, ctx: Vec<u8>) {
        self.node.read_index(ctx);
    }
    /// Start an election now (tests and leader hand-over).
    pub fn campaign(&mut self) -> Result<(), ConsensusError> {
        let r = self.node.campaign();
        self.redraw_election_timeout();
        Ok(r?)
    }

    /// Run the ready loop once: persist what raft asks for, apply what is
    /// committed, and return the messages to send and the reads to serve.
    pub fn drive(&mut self) -> Result<Output, ConsensusError> {
        let mut out = Output::default();
        if !self.node.has_ready() {
            self.release_reads(&mut out);
            return Ok(out);
        }
        let mut rd = self.node.ready();
        out.soft_state_changed = rd.ss().is_some();
        // A leader's messages may leave before its own log is persisted
        // (raft thesis 10.2.1); a follower's are in persisted_messages.
        out.messages.extend(rd.take_messages());
        for m in &out.messages {
            if m.get_msg_type() == raft::eraftpb::MessageType::MsgSnapshot {
                self.snapshots_sent.push((m.to, 3 * self.election_tick));
            }
        }
        if !rd.snapshot().is_empty() {
            let snap = rd.snapshot().clone();
            let at = snap.get_metadata().index;
            self.node.store().apply_snapshot(snap.clone())?;
            self.sm
                .restore(at, snap.get_data())
                .map_err(|why| ConsensusError::Restore { index: at, why })?;
            // The membership is the snapshot's from here on.
            self.sm
                .on_conf_change(at, snap.get_metadata().get_conf_state());
        }
        for rs in rd.take_read_states() {
            self.pending_reads.push(ReadReady {
                ctx: rs.request_ctx,
                index: rs.index,
            });
        }
        let committed = rd.take_committed_entries();
        self.apply_entries(committed)?;
        // Fsync point: entries and hard state are durable before any message
        // that depends on them (votes, append responses) is released.
        if !rd.entries().is_empty() {
            self.node.store().append(rd.entries())?;
        }
        if let Some(hs) = rd.hs() {
            self.node.store().set_hard_state(hs.clone())?;
        }
        out.messages.extend(rd.take_persisted_messages());
        let mut light = self.node.advance(rd);
        if let Some(commit) = light.commit_index() {
            self.node.store().set_commit(commit)?;
        }
        out.messages.extend(light.take_messages());
        let committed = light.take_committed_entries();
        self.apply_entries(committed)?;
        self.node.advance_apply();
        self.redraw_election_timeout();
        self.release_reads(&mut out);
        Ok(out)
    }

    /// Compacts the log once it holds `threshold` applied entries: the
    /// state machine's snapshot at its applied index replaces them (a
    /// follower further behind is sent the snapshot). Returns whether it
    /// compacted.
    pub fn compact(&mut self, threshold: u64) -> Result<bool, ConsensusError> {
        let applied = self.sm.applied_index();
        let first = self.node.store().first_index()?;
        if applied < first || applied - first + 1 < threshold.max(1) {
            return Ok(false);
        }
        let mut snap = Snapshot::default();
        snap.set_data(self.sm.snapshot().into());
        let meta = snap.mut_metadata();
        meta.index = applied;
        meta.term = self.node.store().term(applied)?;
        meta.set_conf_state(self.conf_state());
        self.node.store().compact(snap)?;
        Ok(true)
    }

    fn release_reads(&mut self, out: &mut Output) {
        let applied = self.sm.applied_index();
        let (ready, waiting): (Vec<_>, Vec<_>) = self
            .pending_reads
            .drain(..)
            .partition(|r| r.index <= applied);
        self.pending_reads = waiting;
        out.reads.extend(ready);
    }

    /// Apply a committed conf change to raft and persist the result, unless
    /// the stored conf state already reflects it (a replay after restart).
    fn apply_conf_change(
        &mut self,
        index: u64,
        cc: &ConfChangeV2,
    ) -> Result<ConfState, ConsensusError> {
        if index <= self.node.store().conf_state_index() {
            return Ok(self.conf_state());
        }
        let cs = self.node.apply_conf_change(cc)?;
        self.node.store().set_conf_state(cs.clone(), index)?;
        let me = self.id();
        let member = cs.voters.contains(&me)
            || cs.voters_outgoing.contains(&me)
            || cs.learners.contains(&me)
            || cs.learners_next.contains(&me);
        if !member && self.is_leader() {
            // raft-rs keeps a removed leader leading (and panics when it
            // next advances the commit index without its own progress):
            // step down in the same term so the remaining voters elect.
            let term = self.term();
            self.node.raft.become_follower(term, raft::INVALID_ID);
        }
        Ok(cs)
    }

    fn apply_entries(&mut self, entries: Vec<Entry>) -> Result<(), ConsensusError> {
        for e in entries {
            if e.index <= self.sm.applied_index() {
                continue;
            }
            match e.get_entry_type() {
                EntryType::EntryNormal => {
                    // An empty entry is the new leader's no-op; the state
                    // machine still advances its applied index over it.
                    self.sm.apply(e.index, &e.data);
                }
                EntryType::EntryConfChange => {
                    let old = ConfChange::parse_from_bytes(&e.data).map_err(|source| {
                        ConsensusError::ConfChangeDecode {
                            index: e.index,
                            source,
                        }
                    })?;
                    // The single-change form is the joint form with one change.
                    let mut single = raft::eraftpb::ConfChangeSingle::default();
                    single.set_change_type(old.get_change_type());
                    single.node_id = old.node_id;
                    let mut cc = ConfChangeV2::default();
                    cc.set_changes(vec![single].into());
                    let cs = self.apply_conf_change(e.index, &cc)?;
                    self.sm.on_conf_change(e.index, &cs);
                    self.sm.apply(e.index, &[]);
                }
                EntryType::EntryConfChangeV2 => {
                    let cc = ConfChangeV2::parse_from_bytes(&e.data).map_err(|source| {
                        ConsensusError::ConfChangeDecode {
                            index: e.index,
                            source,
                        }
                    })?;
                    let cs = self.apply_conf_change(e.index, &cc)?;
                    self.sm.on_conf_change(e.index, &cs);
                    self.sm.apply(e.index, &[]);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::MemLog;

    #[derive(Default)]
    struct Log(Vec<(u64, Vec<u8>)>, u64);
    impl StateMachine for Log {
        fn apply(&mut self, index: u64, data: &[u8]) {
            self.1 = index;
            self.0.push((index, data.to_vec()));
        }
        fn applied_index(&self) -> u64 {
            self.1
        }
        fn snapshot(&self) -> Vec<u8> {
            Vec::new()
        }
        fn restore(&mut self, index: u64, _data: &[u8]) -> Result<(), String> {
            self.1 = index;
            Ok(())
        }
    }

    fn cluster(n: u64) -> Vec<Replica<MemLog, Log>> {
        let voters: Vec<u64> = (1..=n).collect();
        voters
            .iter()
            .map(|&id| {
                let s = MemLog::new(ConfState::from((voters.clone(), vec![])));
                Replica::new(id, s, Log::default(), Timing::default()).unwrap()
            })
            .collect()
    }

    /// Drive every replica and deliver messages until quiet; returns reads.
    fn settle(rs: &mut [Replica<MemLog, Log>]) -> Vec<(u64, ReadReady)> {
        let mut reads = Vec::new();
        for _ in 0..100 {
            let mut msgs = Vec::new();
            for r in rs.iter_mut() {
                let out = r.drive().unwrap();
                msgs.extend(out.messages);
                reads.extend(out.reads.into_iter().map(|x| (r.id(), x)));
            }
            if msgs.is_empty() {
                return reads;
            }
            for m in msgs {
                let to = m.to as usize - 1;
                let _ = rs[to].step(m);
            }
        }
        panic!("cluster did not settle");
    }

    #[test]
    fn elect_propose_apply_and_read_on_a_follower() {
        let mut rs = cluster(3);
        rs[0].campaign().unwrap();
        settle(&mut rs);
        assert!(rs[0].is_leader());
        rs[0].propose(b"a".to_vec()).unwrap();
        settle(&mut rs);
        for r in &rs {
            assert_eq!(
                r.state_machine().0.last().map(|e| e.1.clone()),
                Some(b"a".to_vec())
            );
        }
        rs[1].read_index(b"ctx".to_vec());
        let reads = settle(&mut rs);
        assert_eq!(reads.len(), 1, "{reads:?}");
        assert_eq!(reads[0].0, 2);
        assert_eq!(reads[0].1.ctx, b"ctx".to_vec());
        assert_eq!(reads[0].1.index, rs[0].commit_index());
    }

    #[test]
    fn a_member_that_lost_its_log_catches_up_once_the_leader_forgets_it() {
        let mut rs = cluster(3);
        rs[0].campaign().unwrap();
        settle(&mut rs);
        for i in 0..5 {
            rs[0].propose(vec![i]).unwrap();
            settle(&mut rs);
        }
        let commit = rs[0].commit_index();
        assert!(rs[2].state_machine().0.len() > 5);
        // Member 3 comes back with a blank log.
        let voters = vec![1, 2, 3];
        let s = MemLog::new(ConfState::from((voters, vec![])));
        rs[2] = Replica::new(3, s, Log::default(), Timing::default()).unwrap();
        // The leader's heartbeats carry a commit beyond the blank log:
        // no panic, and nothing is committed on it.
        for _ in 0..4 {
            rs[0].tick();
        }
        settle(&mut rs);
        assert_eq!(rs[2].commit_index(), 0);
        // Told, the leader sends it the log from the start.
        assert!(rs[0].forget_progress(3));
        assert!(!rs[1].forget_progress(3), "only a leader forgets");
        for _ in 0..4 {
            rs[0].tick();
        }
        settle(&mut rs);
        assert_eq!(rs[2].commit_index(), commit);
        assert_eq!(rs[2].state_machine().0, rs[0].state_machine().0);
    }

    #[test]
    fn a_member_without_a_leader_drops_proposals() {
        let mut rs = cluster(3);
        assert!(matches!(
            rs[1].propose(b"x".to_vec()),
            Err(ConsensusError::Raft(raft::Error::ProposalDropped))
        ));
    }
}

//! The node's raft member: a thread that owns the [`Replica`] (its log
//! writes fsync, so it stays off the async runtime), ticks it, steps the
//! messages peers send, and hands the messages it emits to one sender task
//! per peer, which carries them over the node RPC (`raft.step`).

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use consensus::locks::{assign_partitions, balance_partitions};
use consensus::{ClusterState, Command, FileLog, NodeInfo, NodeState, Replica, Timing};
use protobuf::Message as _;
use raft::eraftpb::{ConfState, Message};
use rpc::Peer;

/// One unit of raft time: elections after 10-20 ticks without a leader,
/// heartbeats every 2.
pub const TICK: Duration = Duration::from_millis(100);
/// Voters at most; the other nodes are learners.
pub const MAX_VOTERS: usize = 5;
/// Messages waiting for one peer at most (raft resends what is dropped).
const PEER_QUEUE: usize = 1024;
/// Inbound messages waiting for the raft thread at most.
pub const INBOUND_QUEUE: usize = 4096;
/// Largest batch of raft messages one RPC call accepts.
pub const MAX_BATCH_BYTES: usize = 8 << 20;
/// How often a node confirms its lock partitions (a ReadIndex); well
/// within the owner lease, so one or two lost confirmations cost nothing.
const CONFIRM_EVERY: Duration = Duration::from_millis(1000);
/// Applied entries the log holds before it is compacted into a snapshot.
const COMPACT_EVERY: u64 = 10_000;
/// How often the leader checks whether lock partitions must move and
/// whether members changed state.
const REASSIGN_EVERY: Duration = Duration::from_secs(2);
/// A node the leader cannot reach for this long is recorded offline.
const OFFLINE_AFTER: Duration = Duration::from_secs(5);
/// A node reachable again for this long gets its share of lock partitions
/// back (moving them costs their hand-over, so a flapping node waits).
const REBALANCE_AFTER: Duration = Duration::from_secs(10);
/// How long a member that lost its log withholds its vote when no leader
/// reaches it: far beyond the longest election (20 ticks), so no election
/// it may have voted in before is still open.
const AMNESIA_WAIT: Duration = Duration::from_secs(30);

/// The raft ids of the nodes this node can reach (itself included).
pub type Live = Arc<dyn Fn() -> Vec<u64> + Send + Sync>;

/// What the node's member knows, for status and health.
#[derive(Debug, Clone, Default)]
pub struct RaftView {
    pub id: u64,
    pub term: u64,
    pub leader: u64,
    pub commit: u64,
    pub applied: u64,
    pub members: Vec<(u64, NodeInfo)>,
    pub layout_version: u64,
    pub voters: Vec<u64>,
    pub learners: Vec<u64>,
}

/// The initial configuration every node starts from: the first
/// [`MAX_VOTERS`] nodes (raft ids 1..) vote, the rest learn.
pub fn initial_conf(nodes: usize) -> ConfState {
    let ids: Vec<u64> = (1..=nodes as u64).collect();
    let split = nodes.min(MAX_VOTERS);
    ConfState {
        voters: ids[..split].to_vec(),
        learners: ids[split..].to_vec(),
        ..Default::default()
    }
}

/// Encodes messages as a batch: each a big-endian u32 length and its
/// protobuf bytes.
pub fn encode_batch(msgs: &[Message]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in msgs {
        let bytes = m.write_to_bytes().unwrap_or_default();
        out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        out.extend_from_slice(&bytes);
    }
    out
}

/// Decodes a batch of [`encode_batch`]; `Err` on any malformed part.
pub fn decode_batch(mut data: &[u8]) -> Result<Vec<Message>, String> {
    let mut out = Vec::new();
    while !data.is_empty() {
        if data.len() < 4 {
            return Err("a truncated length".into());
        }
        let n = u32::from_be_bytes([data[0], data[1], data[2], data[3]]) as usize;
        let body = data
            .get(4..4 + n)
            .ok_or_else(|| "a truncated message".to_owned())?;
        out.push(Message::parse_from_bytes(body).map_err(|e| e.to_string())?);
        data = &data[4 + n..];
    }
    Ok(out)
}

/// What a raft member starts from.
pub struct Member {
    /// Its raft id: 1-based index of `nodes`.
    pub id: u64,
    /// Whether a peer reported a committed raft log at start: with an
    /// empty log of its own, this member lost its state (a replaced node).
    pub cluster_has_history: bool,
    /// Where its log lives.
    pub dir: std::path::PathBuf,
    /// Every node's name, in endpoint order.
    pub nodes: Vec<String>,
    /// `peers[i]` calls node `i + 1` (`None` for this node).
    pub peers: Vec<Option<Peer>>,
    /// The layout the nodes agreed on (endpoints, set sizes, parity,
    /// format version), recorded in the cluster state once.
    pub layout: Vec<u8>,
    /// Messages from the peers, and proposals of this node.
    pub inbound: Receiver<Input>,
    /// Where the metadata events go once applied, in order.
    pub applied: tokio::sync::mpsc::Sender<Applied>,
    /// Raft ids of members that lost their log (a replaced node says so):
    /// a leader probes them from the start.
    pub forgotten: Receiver<u64>,
    /// Where it shows what it knows.
    pub view: Arc<Mutex<RaftView>>,
    /// The node's lock service, which it gives assignments and
    /// confirmations.
    pub locks: Arc<super::locks::Locks>,
    /// The nodes this node can reach.
    pub live: Live,
}

/// Starts the member. Returns once the log is open, with whether it is
/// empty while the cluster has a history (this node lost its log); the
/// member runs on its own thread from then on.
pub fn start(m: Member) -> Result<bool, String> {
    let Member {
        id,
        cluster_has_history,
        dir,
        nodes,
        peers,
        layout,
        inbound,
        applied: applied_tx,
        forgotten,
        view,
        locks,
        live,
    } = m;
    let dir = dir.as_path();
    let log = FileLog::open(dir, initial_conf(nodes.len()))
        .map_err(|e| format!("the raft log in {}: {e}", dir.display()))?;
    let timing = Timing {
        heartbeat_tick: 2,
        election_tick: 10,
    };
    let empty = raft::Storage::initial_state(&log).is_ok_and(|s| s.hard_state.term == 0)
        && raft::Storage::last_index(&log).is_ok_and(|i| i == 0);
    // A member that lost its log may have voted in a term it no longer
    // remembers: it casts no vote until a leader reaches it (its term is
    // then the current one) or until any election it could have voted in
    // is long over.
    let lost_log = empty && cluster_has_history;
    let mut amnesiac = lost_log.then(Instant::now);
    if amnesiac.is_some() {
        tracing::warn!(
            "this node's raft log is empty while the cluster has a history (a replaced \
             node): it votes only once a leader has reached it"
        );
    }
    let mut replica = Replica::new(id, log, ClusterState::default(), timing)
        .map_err(|e| format!("starting raft: {e}"))?;
    let outbound: Vec<Option<tokio::sync::mpsc::Sender<Message>>> =
        peers.into_iter().map(|p| p.map(spawn_sender)).collect();
    std::thread::Builder::new()
        .name("tessera-raft".into())
        .spawn(move || {
            let mut next_tick = Instant::now() + TICK;
            let mut confirmed = Instant::now() - CONFIRM_EVERY;
            let mut reassigned = Instant::now() - REASSIGN_EVERY;
            // Since when the leader sees each node reachable (Ok) or not.
            let mut seen: Vec<Result<Instant, Instant>> = vec![Ok(Instant::now()); nodes.len()];
            // The next metadata event to hand on, and whether some were
            // lost (the consumer then forgets everything it cached).
            let mut event_cursor = 1u64;
            let mut reload = false;
            loop {
                let wait = next_tick.saturating_duration_since(Instant::now());
                match inbound.recv_timeout(wait) {
                    Ok(input) => {
                        take(&mut replica, input, amnesiac.is_some());
                        while let Ok(input) = inbound.try_recv() {
                            take(&mut replica, input, amnesiac.is_some());
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                while let Ok(who) = forgotten.try_recv() {
                    if replica.forget_progress(who) {
                        tracing::info!(
                            member = who,
                            "a member lost its log: sending it the log again"
                        );
                    }
                }
                if let Some(since) = amnesiac
                    && (replica.leader_id() != 0 || since.elapsed() >= AMNESIA_WAIT)
                {
                    amnesiac = None;
                    tracing::info!(
                        term = replica.term(),
                        leader = replica.leader_id(),
                        "this node's raft member votes again"
                    );
                }
                if Instant::now() >= next_tick {
                    replica.tick();
                    next_tick += TICK;
                    if next_tick < Instant::now() {
                        next_tick = Instant::now() + TICK;
                    }
                }
                // Lock partitions: confirm ownership with a linearizable
                // read; the leader moves the partitions of unreachable
                // nodes (the first assignment gives every node its share).
                if confirmed.elapsed() >= CONFIRM_EVERY {
                    confirmed = Instant::now();
                    replica.read_index(locks.now_ms().to_be_bytes().to_vec());
                }
                if replica.is_leader() && reassigned.elapsed() >= REASSIGN_EVERY {
                    reassigned = Instant::now();
                    let live_now = live();
                    for (i, s) in seen.iter_mut().enumerate() {
                        let up = live_now.contains(&(i as u64 + 1));
                        match (*s, up) {
                            (Err(_), true) => *s = Ok(Instant::now()),
                            (Ok(_), false) => *s = Err(Instant::now()),
                            _ => {}
                        }
                    }
                    if replica.state_machine().layout().0 == 0 {
                        let cmd = Command::SetLayout {
                            version: 1,
                            blob: layout.clone(),
                        };
                        if let Err(e) = replica.propose(cmd.encode()) {
                            tracing::debug!("proposing the layout: {e}");
                        }
                    }
                    for cmd in member_changes(replica.state_machine(), &nodes, &seen) {
                        if let Err(e) = replica.propose(cmd.encode()) {
                            tracing::debug!("proposing a member's state: {e}");
                        }
                    }
                    let (epoch, current) = replica.state_machine().lock_assignment();
                    let next = if epoch == 0 {
                        assign_partitions(current, &(1..=nodes.len() as u64).collect::<Vec<_>>())
                    } else {
                        let settled: Vec<u64> = seen
                            .iter()
                            .enumerate()
                            .filter(|(_, s)| s.is_ok_and(|t| t.elapsed() >= REBALANCE_AFTER))
                            .map(|(i, _)| i as u64 + 1)
                            .collect();
                        assign_partitions(current, &live_now)
                            .or_else(|| balance_partitions(current, &settled))
                    };
                    if let Some(next) = next {
                        let cmd = Command::AssignLocks {
                            epoch: epoch + 1,
                            owners: next,
                        };
                        if let Err(e) = replica.propose(cmd.encode()) {
                            tracing::debug!("proposing a lock assignment: {e}");
                        }
                    }
                }
                match replica.drive() {
                    Ok(out) => {
                        let (epoch, owners) = replica.state_machine().lock_assignment();
                        if epoch > locks.epoch() {
                            tracing::info!(epoch, "lock partitions reassigned");
                            locks.assign(epoch, owners);
                        }
                        for r in &out.reads {
                            if let Ok(sent) = <[u8; 8]>::try_from(r.ctx.as_slice()) {
                                locks.confirm(epoch, u64::from_be_bytes(sent));
                            }
                        }
                        for m in out.messages {
                            let to = m.to as usize;
                            if let Some(Some(tx)) = outbound.get(to.wrapping_sub(1)) {
                                // Full: raft resends what a peer missed.
                                let _ = tx.try_send(m);
                            }
                        }
                        if out.soft_state_changed {
                            tracing::info!(
                                term = replica.term(),
                                leader = replica.leader_id(),
                                "raft: leadership changed"
                            );
                        }
                    }
                    Err(e) => {
                        // The log could not be written: this member stops
                        // rather than promise what it did not persist.
                        tracing::error!("raft: {e}; this node's raft member stops");
                        return;
                    }
                }
                let next_event = replica.state_machine().next_event_seq();
                if next_event > event_cursor {
                    let (complete, events) = replica.state_machine().events_since(event_cursor);
                    let index = consensus::StateMachine::applied_index(replica.state_machine());
                    reload |= !complete;
                    for (_, e) in events {
                        reload |= applied_tx.try_send(Applied::Event(e, index)).is_err();
                    }
                    event_cursor = next_event;
                }
                if reload && applied_tx.try_send(Applied::Reload).is_ok() {
                    reload = false;
                }
                // The log is compacted into a snapshot of the cluster
                // state every COMPACT_EVERY applied entries.
                if let Err(e) = replica.compact(COMPACT_EVERY) {
                    tracing::error!("raft: compacting the log: {e}; this node's raft member stops");
                    return;
                }
                // The view changes only with the term, the leader or the
                // log (members, layout and configuration change by applied
                // entries): it is rebuilt only then, not on every message.
                let applied = consensus::StateMachine::applied_index(replica.state_machine());
                let mut v = view.lock().unwrap_or_else(|e| e.into_inner());
                let now = (
                    id,
                    replica.term(),
                    replica.leader_id(),
                    replica.commit_index(),
                    applied,
                );
                if (v.id, v.term, v.leader, v.commit, v.applied) != now {
                    let cs = replica.conf_state();
                    *v = RaftView {
                        id,
                        term: replica.term(),
                        leader: replica.leader_id(),
                        commit: replica.commit_index(),
                        applied,
                        members: replica
                            .state_machine()
                            .nodes()
                            .iter()
                            .map(|(k, v)| (*k, v.clone()))
                            .collect(),
                        layout_version: replica.state_machine().layout().0,
                        voters: cs.voters.clone(),
                        learners: cs.learners.clone(),
                    };
                }
            }
        })
        .map_err(|e| format!("starting the raft thread: {e}"))?;
    Ok(lost_log)
}

/// The member records the leader proposes: every node of `nodes` not yet
/// recorded (online), and each recorded one whose state differs from what
/// the leader sees: unreachable for [`OFFLINE_AFTER`] goes offline,
/// reachable goes online (`seen[i]` is node `i + 1`'s reachability and
/// since when).
fn member_changes(
    state: &ClusterState,
    nodes: &[String],
    seen: &[Result<Instant, Instant>],
) -> Vec<Command> {
    let mut out = Vec::new();
    for (i, (name, s)) in nodes.iter().zip(seen).enumerate() {
        let id = i as u64 + 1;
        let want = match (state.nodes().get(&id).map(|n| n.state), s) {
            (None, _) => NodeState::Online,
            (Some(NodeState::Offline), Ok(_)) => NodeState::Online,
            (Some(NodeState::Online), Err(since)) if since.elapsed() >= OFFLINE_AFTER => {
                NodeState::Offline
            }
            _ => continue,
        };
        let endpoint = format!("http://{name}");
        if state.nodes().contains_key(&id) {
            tracing::info!(node = %endpoint, state = ?want, "recording a member's state");
        }
        out.push(Command::SetNode {
            id,
            info: NodeInfo {
                endpoint,
                state: want,
            },
        });
    }
    out
}

/// Steps a peer's message; while `no_vote`, vote requests go unanswered.
/// Steps a peer's message or proposes this node's command.
fn take(replica: &mut Replica<FileLog, ClusterState>, input: Input, no_vote: bool) {
    match input {
        Input::Step(m) => step(replica, m, no_vote),
        Input::Propose(data) => {
            // A follower forwards the proposal to the leader; without a
            // leader it is dropped and its author's wait runs out.
            if let Err(e) = replica.propose(data) {
                tracing::debug!("raft: a proposal refused: {e}");
            }
        }
    }
}

fn step(replica: &mut Replica<FileLog, ClusterState>, m: Message, no_vote: bool) {
    use raft::eraftpb::MessageType::{MsgRequestPreVote, MsgRequestVote};
    if no_vote && matches!(m.get_msg_type(), MsgRequestVote | MsgRequestPreVote) {
        return;
    }
    if let Err(e) = replica.step(m) {
        tracing::debug!("raft: a message refused: {e}");
    }
}

/// The task that carries one peer's messages, batched, over the RPC.
fn spawn_sender(peer: Peer) -> tokio::sync::mpsc::Sender<Message> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Message>(PEER_QUEUE);
    tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            let mut batch = vec![first];
            while batch.len() < 256 {
                match rx.try_recv() {
                    Ok(m) => batch.push(m),
                    Err(_) => break,
                }
            }
            let bytes = encode_batch(&batch);
            if let Err(e) = peer
                .call("raft.step", bytes.into(), Some(Duration::from_secs(1)))
                .await
            {
                tracing::trace!("raft messages to {}: {e}", peer.name());
            }
        }
    });
    tx
}

/// The sender the RPC handler queues inbound messages on.
pub type Inbound = SyncSender<Input>;

/// What the raft thread takes in.
pub enum Input {
    /// A peer's raft message.
    Step(Message),
    /// A command of this node to propose.
    Propose(Vec<u8>),
}

/// What the raft thread hands on as it applies the log.
#[derive(Debug)]
pub enum Applied {
    /// A metadata event, in log order, and the applied index it is
    /// covered by.
    Event(consensus::MetaEvent, u64),
    /// Events were lost (the queue was full, or compacted away): forget
    /// everything derived from them.
    Reload,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_round_trip_and_voters_are_the_first_five() {
        let m = Message {
            to: 2,
            term: 7,
            ..Default::default()
        };
        let m2 = Message {
            from: 3,
            ..Default::default()
        };
        let batch = encode_batch(&[m.clone(), m2.clone()]);
        assert_eq!(decode_batch(&batch).unwrap(), vec![m, m2]);
        assert!(decode_batch(&batch[..batch.len() - 1]).is_err());
        assert!(decode_batch(&[0, 0, 0]).is_err());
        let cs = initial_conf(7);
        assert_eq!((cs.voters, cs.learners), (vec![1, 2, 3, 4, 5], vec![6, 7]));
        assert_eq!(initial_conf(4).voters, vec![1, 2, 3, 4]);
    }
}

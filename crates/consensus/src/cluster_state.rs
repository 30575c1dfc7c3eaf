//! The replicated cluster metadata: membership and each node's state, the
//! pool/set layout as an opaque versioned blob, and an ordered log of
//! metadata change events that every node applies in the same order.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::replica::StateMachine;

/// How many recent events the state keeps for followers of the event log
/// (older ones are summarised by the state itself).
pub const EVENTS_KEPT: usize = 10_000;
/// The largest snapshot [`ClusterState::restore`] accepts.
pub const MAX_SNAPSHOT: usize = 64 * 1024 * 1024;

/// A node's state as the cluster agrees on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeState {
    /// Serving.
    Online,
    /// Known down.
    Offline,
    /// Being replaced or removed.
    Decommissioning,
}

/// A member's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// The node's endpoint as in the command line (`http://host:port`).
    pub endpoint: String,
    /// Its state.
    pub state: NodeState,
}

/// A cluster metadata change, announced in order to every node.
///
/// `origin` names the change's author (a node and a sequence of its own),
/// so that the node that made a change can tell when it is applied; empty
/// in events written before it existed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MetaEvent {
    /// A bucket was created.
    BucketCreated {
        /// Bucket name.
        bucket: String,
        /// Who made the change.
        #[serde(default)]
        origin: String,
    },
    /// A bucket was deleted.
    BucketDeleted {
        /// Bucket name.
        bucket: String,
        /// Who made the change.
        #[serde(default)]
        origin: String,
    },
    /// One of a bucket's configurations changed (the name of the config,
    /// e.g. `versioning`, `policy`); nodes reload it from the drives.
    BucketConfigChanged {
        /// Bucket name.
        bucket: String,
        /// Which configuration.
        config: String,
        /// Who made the change.
        #[serde(default)]
        origin: String,
    },
}

impl MetaEvent {
    /// The bucket the event is about.
    pub fn bucket(&self) -> &str {
        match self {
            MetaEvent::BucketCreated { bucket, .. }
            | MetaEvent::BucketDeleted { bucket, .. }
            | MetaEvent::BucketConfigChanged { bucket, .. } => bucket,
        }
    }

    /// Who made the change (empty when unknown).
    pub fn origin(&self) -> &str {
        match self {
            MetaEvent::BucketCreated { origin, .. }
            | MetaEvent::BucketDeleted { origin, .. }
            | MetaEvent::BucketConfigChanged { origin, .. } => origin,
        }
    }
}

/// A proposal's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Record or update a member.
    SetNode {
        /// Raft id.
        id: u64,
        /// Its record.
        info: NodeInfo,
    },
    /// Install layout `version` if the current version is `version - 1`
    /// (compare-and-set, so two racing proposals cannot both win).
    SetLayout {
        /// The new version.
        version: u64,
        /// The opaque layout.
        blob: Vec<u8>,
    },
    /// Append a metadata event.
    Event(MetaEvent),
    /// Install lock-partition assignment `epoch` (`owners[p]` owns
    /// partition `p`, see [`crate::locks`]) if the current epoch is
    /// `epoch - 1`.
    AssignLocks {
        /// The new epoch.
        epoch: u64,
        /// One owner (raft id) per partition.
        owners: Vec<u64>,
    },
}

impl Command {
    /// The bytes to propose.
    pub fn encode(&self) -> Vec<u8> {
        // Serialising these plain types cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// Errors restoring a snapshot.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Larger than [`MAX_SNAPSHOT`].
    #[error("snapshot of {0} bytes exceeds the limit")]
    TooLarge(usize),
    /// Does not decode.
    #[error("snapshot does not decode: {0}")]
    Decode(#[from] serde_json::Error),
}

/// The state machine. Every replica that applied the same log holds an
/// equal value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterState {
    applied: u64,
    nodes: BTreeMap<u64, NodeInfo>,
    layout_version: u64,
    layout: Vec<u8>,
    /// Sequence number of the next event (starts at 1, never reused).
    next_seq: u64,
    events: VecDeque<(u64, MetaEvent)>,
    /// Entries that did not decode (skipped by every replica alike).
    rejected: u64,
    /// The lock partitions' assignment and its epoch (0: none yet).
    #[serde(default)]
    lock_epoch: u64,
    #[serde(default)]
    lock_owners: Vec<u64>,
}

impl ClusterState {
    /// The members.
    pub fn nodes(&self) -> &BTreeMap<u64, NodeInfo> {
        &self.nodes
    }
    /// The layout and its version (0: none yet).
    pub fn layout(&self) -> (u64, &[u8]) {
        (self.layout_version, &self.layout)
    }
    /// Events with a sequence number at or after `from`, oldest first; the
    /// bool is false when events before the first returned were dropped
    /// (the caller must reload the state instead of replaying).
    pub fn events_since(&self, from: u64) -> (bool, Vec<(u64, MetaEvent)>) {
        let oldest = self.events.front().map_or(self.next_seq.max(1), |e| e.0);
        let complete = from >= oldest;
        (
            complete,
            self.events
                .iter()
                .filter(|e| e.0 >= from)
                .cloned()
                .collect(),
        )
    }
    /// The lock partitions' owners and the assignment's epoch (0: none
    /// yet).
    pub fn lock_assignment(&self) -> (u64, &[u64]) {
        (self.lock_epoch, &self.lock_owners)
    }
    /// The sequence number the next event will get.
    pub fn next_event_seq(&self) -> u64 {
        self.next_seq.max(1)
    }
    /// Entries skipped because they did not decode.
    pub fn rejected(&self) -> u64 {
        self.rejected
    }
    /// Serialise for a raft snapshot.
    pub fn snapshot(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
    /// Restore from [`ClusterState::snapshot`] bytes.
    pub fn restore(bytes: &[u8]) -> Result<ClusterState, StateError> {
        if bytes.len() > MAX_SNAPSHOT {
            return Err(StateError::TooLarge(bytes.len()));
        }
        Ok(serde_json::from_slice(bytes)?)
    }

    fn apply_command(&mut self, cmd: Command) {
        match cmd {
            Command::SetNode { id, info } => {
                self.nodes.insert(id, info);
            }
            Command::SetLayout { version, blob } => {
                if version == self.layout_version + 1 {
                    self.layout_version = version;
                    self.layout = blob;
                }
            }
            Command::AssignLocks { epoch, owners } => {
                if epoch == self.lock_epoch + 1 && owners.len() == crate::locks::PARTITIONS {
                    self.lock_epoch = epoch;
                    self.lock_owners = owners;
                }
            }
            Command::Event(e) => {
                let seq = self.next_seq.max(1);
                self.next_seq = seq + 1;
                self.events.push_back((seq, e));
                while self.events.len() > EVENTS_KEPT {
                    self.events.pop_front();
                }
            }
        }
    }
}

impl StateMachine for ClusterState {
    fn apply(&mut self, index: u64, data: &[u8]) {
        self.applied = index;
        if data.is_empty() {
            return;
        }
        match serde_json::from_slice::<Command>(data) {
            Ok(cmd) => self.apply_command(cmd),
            Err(e) => {
                // Deterministic: every replica skips the same entry.
                self.rejected += 1;
                tracing::warn!(index, error = %e, "cluster state: skipping an entry that does not decode");
            }
        }
    }
    fn applied_index(&self) -> u64 {
        self.applied
    }
    fn snapshot(&self) -> Vec<u8> {
        ClusterState::snapshot(self)
    }
    fn restore(&mut self, index: u64, data: &[u8]) -> Result<(), String> {
        let mut state = ClusterState::restore(data).map_err(|e| e.to_string())?;
        state.applied = index;
        *self = state;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(b: &str) -> Vec<u8> {
        Command::Event(MetaEvent::BucketCreated {
            bucket: b.into(),
            origin: String::new(),
        })
        .encode()
    }

    #[test]
    fn lock_assignments_are_compare_and_set() {
        let mut s = ClusterState::default();
        let owners = vec![1u64; crate::locks::PARTITIONS];
        let assign = |epoch, owners: &Vec<u64>| {
            Command::AssignLocks {
                epoch,
                owners: owners.clone(),
            }
            .encode()
        };
        s.apply(1, &assign(2, &owners));
        assert_eq!(s.lock_assignment().0, 0);
        s.apply(2, &assign(1, &owners));
        assert_eq!(s.lock_assignment(), (1, &owners[..]));
        // Racing proposals of the same epoch: the first wins.
        let other = vec![2u64; crate::locks::PARTITIONS];
        s.apply(3, &assign(1, &other));
        assert_eq!(s.lock_assignment().1, &owners[..]);
        // A wrong number of partitions is ignored.
        s.apply(4, &assign(2, &vec![1; 3]));
        assert_eq!(s.lock_assignment().0, 1);
        // Survives a snapshot.
        let back = ClusterState::restore(&s.snapshot()).unwrap();
        assert_eq!(back.lock_assignment(), (1, &owners[..]));
    }

    #[test]
    fn layout_is_compare_and_set_and_events_are_numbered() {
        let mut s = ClusterState::default();
        s.apply(
            1,
            &Command::SetLayout {
                version: 1,
                blob: b"v1".to_vec(),
            }
            .encode(),
        );
        s.apply(
            2,
            &Command::SetLayout {
                version: 1,
                blob: b"other".to_vec(),
            }
            .encode(),
        );
        s.apply(
            3,
            &Command::SetLayout {
                version: 3,
                blob: b"skip".to_vec(),
            }
            .encode(),
        );
        assert_eq!(s.layout(), (1, &b"v1"[..]));
        s.apply(4, &ev("a"));
        s.apply(5, b"not json");
        s.apply(6, &ev("b"));
        assert_eq!(s.rejected(), 1);
        assert_eq!(s.applied_index(), 6);
        let (complete, evs) = s.events_since(2);
        assert!(complete);
        assert_eq!(
            evs,
            vec![(
                2,
                MetaEvent::BucketCreated {
                    bucket: "b".into(),
                    origin: String::new(),
                }
            )]
        );
        let back = ClusterState::restore(&s.snapshot()).unwrap();
        assert_eq!(back, s);
        assert!(ClusterState::restore(b"{").is_err());
    }

    #[test]
    fn old_events_are_dropped_and_reported_incomplete() {
        let mut s = ClusterState::default();
        for i in 0..(EVENTS_KEPT as u64 + 5) {
            s.apply(i + 1, &ev(&format!("b{i}")));
        }
        assert!(!s.events_since(1).0);
        let (complete, evs) = s.events_since(6);
        assert!(complete);
        assert_eq!(evs.len(), EVENTS_KEPT);
        assert_eq!(s.next_event_seq(), EVENTS_KEPT as u64 + 6);
    }
}

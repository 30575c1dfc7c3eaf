//! Bucket changes seen by every node: a node that creates or deletes a
//! bucket, or changes its versioning or a configuration, proposes an event
//! through raft; every node applies the events in log order and drops what
//! its object layer cached of that bucket, so the next request reads the
//! bucket's metadata from the drives again. An IAM change is an event of
//! `.minio.sys`: applying it reads the IAM documents again
//! (`ObjectLayer::config_changed`) before the event counts as applied.
//!
//! The call that made the change returns once the event is applied on this
//! node and every node that answers has applied it too (each asked for its
//! applied index, within [`PEER_WAIT`]): a client that changes versioning
//! through one node and writes through another sees the change. A node that
//! cannot be reached then has no leader either, and learns the event when
//! it rejoins, before its raft member counts as caught up. Without a
//! leader, the change is on the drives but unannounced: the wait ends after
//! [`APPLY_WAIT`] with a warning, and other nodes serve what they cached
//! until the next event about the bucket or their restart.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use consensus::{Command, MetaEvent};
use object::layer::{BucketChange, BucketHook, ObjectLayer};
use rpc::{Peer, PeerState};
use tokio::sync::oneshot;

use super::raft_node::{Applied, Inbound, Input};

/// How long a change waits for its event to be applied on this node.
pub const APPLY_WAIT: Duration = Duration::from_secs(5);
/// How long it then waits for the other nodes that answer.
pub const PEER_WAIT: Duration = Duration::from_secs(2);
/// Applied events waiting for the consumer at most (beyond: it forgets
/// every bucket's cache instead).
pub const EVENT_QUEUE: usize = 4096;

/// Announces this node's bucket changes and applies everyone's.
pub struct BucketEvents {
    me: String,
    next: AtomicU64,
    inbound: Inbound,
    peers: Vec<Peer>,
    waiters: Mutex<HashMap<String, oneshot::Sender<u64>>>,
    /// The log index of the last event this node has fully applied (what
    /// `raft.applied` answers the node that made a change).
    consumed: Arc<AtomicU64>,
}

impl BucketEvents {
    pub fn new(
        me: String,
        inbound: Inbound,
        peers: Vec<Peer>,
        consumed: Arc<AtomicU64>,
    ) -> BucketEvents {
        BucketEvents {
            me,
            next: AtomicU64::new(1),
            inbound,
            peers,
            waiters: Mutex::new(HashMap::new()),
            consumed,
        }
    }

    /// The object layer's hook: [`announce`](Self::announce).
    pub fn hook(self: &Arc<Self>) -> BucketHook {
        let me = Arc::clone(self);
        Arc::new(move |bucket, change| {
            let me = Arc::clone(&me);
            Box::pin(async move { me.announce(bucket, change).await })
        })
    }

    fn waiters(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<u64>>> {
        self.waiters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Proposes the event of a change and waits until this node and every
    /// node that answers applied it (bounded; see the module's doc).
    pub async fn announce(&self, bucket: String, change: BucketChange) {
        let origin = format!("{}/{}", self.me, self.next.fetch_add(1, Ordering::Relaxed));
        let event = match &change {
            BucketChange::Created => MetaEvent::BucketCreated {
                bucket: bucket.clone(),
                origin: origin.clone(),
            },
            BucketChange::Deleted => MetaEvent::BucketDeleted {
                bucket: bucket.clone(),
                origin: origin.clone(),
            },
            other => MetaEvent::BucketConfigChanged {
                bucket: bucket.clone(),
                config: other.name().to_owned(),
                origin: origin.clone(),
            },
        };
        let (tx, rx) = oneshot::channel();
        self.waiters().insert(origin.clone(), tx);
        let proposed = self
            .inbound
            .try_send(Input::Propose(Command::Event(event).encode()));
        let applied = match proposed {
            Ok(()) => tokio::time::timeout(APPLY_WAIT, rx)
                .await
                .ok()
                .and_then(Result::ok),
            Err(_) => None,
        };
        let Some(target) = applied else {
            self.waiters().remove(&origin);
            tracing::warn!(
                %bucket,
                change = change.name(),
                "a bucket change was not ordered through raft within {APPLY_WAIT:?} (no \
                 leader?): other nodes serve what they cached of the bucket until its next change"
            );
            return;
        };
        let deadline = tokio::time::Instant::now() + PEER_WAIT;
        for p in self.peers.iter().filter(|p| p.state() == PeerState::Up) {
            loop {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                if left.is_zero() {
                    tracing::warn!(peer = %p.name(), %bucket, "a node did not apply a bucket change within {PEER_WAIT:?}");
                    break;
                }
                match p.call("raft.applied", Bytes::new(), Some(left)).await {
                    Ok(b) if applied_of(&b) >= target => break,
                    Ok(_) => tokio::time::sleep(Duration::from_millis(5)).await,
                    // A node that stopped answering learns it when it
                    // rejoins.
                    Err(_) => break,
                }
            }
        }
    }

    /// Applies the events as the raft thread hands them on: the layer
    /// forgets what it cached of each event's bucket, and a change of this
    /// node's learns that it is applied.
    pub async fn run(
        self: Arc<Self>,
        layer: Arc<ObjectLayer>,
        mut applied: tokio::sync::mpsc::Receiver<Applied>,
    ) {
        while let Some(a) = applied.recv().await {
            match a {
                Applied::Event(e, index) => {
                    layer.forget_bucket(e.bucket());
                    if e.bucket() == drive::format::META_VOLUME {
                        layer.config_changed().await;
                    }
                    self.consumed.fetch_max(index, Ordering::SeqCst);
                    if let Some(w) = self.waiters().remove(e.origin()) {
                        let _ = w.send(index);
                    }
                }
                Applied::Reload => {
                    layer.forget_buckets();
                    layer.config_changed().await;
                }
            }
        }
    }
}

/// The applied index in a `raft.applied` answer (0 if malformed).
pub fn applied_of(b: &[u8]) -> u64 {
    <[u8; 8]>::try_from(b).map_or(0, u64::from_be_bytes)
}

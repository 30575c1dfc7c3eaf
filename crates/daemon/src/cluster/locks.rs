//! The lock service of a cluster node: this node's [`LockTable`] (the
//! partitions raft assigned to it), the node-RPC methods other nodes take
//! leases through, and the client side that finds a resource's owner and
//! takes a lease there: in this process when the owner is this node, in one
//! round trip otherwise.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use consensus::locks::{Lease, LockConfig, LockError, LockTable, Mode};
use rpc::{Failure, Peer, RpcError};
use serde_json::{Value, json};

/// A lease request or answer on the wire.
fn request(resource: &str, mode: Mode, holder: &str, ttl_ms: u64) -> Bytes {
    Bytes::from(
        serde_json::to_vec(&json!({
            "resource": resource,
            "mode": mode,
            "holder": holder,
            "ttl_ms": ttl_ms,
        }))
        .unwrap_or_default(),
    )
}

/// HTTP statuses of the lock methods' refusals.
const BUSY: u16 = 409;
const NOT_OWNER: u16 = 421;
const NOT_READY: u16 = 503;
const UNKNOWN: u16 = 404;

fn failure(e: LockError) -> Failure {
    let status = match e {
        LockError::Busy => BUSY,
        LockError::NotOwner(_) => NOT_OWNER,
        LockError::NotReady(_) => NOT_READY,
        LockError::Unknown => UNKNOWN,
    };
    Failure {
        status,
        message: serde_json::to_string(&e).unwrap_or_default(),
    }
}

fn bad(msg: &str) -> Failure {
    Failure {
        status: 400,
        message: msg.to_owned(),
    }
}

/// The lock service of this node.
pub struct Locks {
    me: u64,
    table: Mutex<LockTable>,
    base: Instant,
    /// `peers[id - 1]`: how to reach node `id` (`None` for this node).
    peers: Vec<Option<Peer>>,
}

/// A lease taken through [`Locks::acquire`], and the node that granted it.
#[derive(Debug, Clone)]
pub struct Taken {
    pub lease: Lease,
    pub owner: u64,
}

impl Locks {
    pub fn new(me: u64, cfg: LockConfig, peers: Vec<Option<Peer>>) -> Locks {
        Locks {
            me,
            table: Mutex::new(LockTable::new(me, cfg)),
            base: Instant::now(),
            peers,
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, LockTable> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This node's raft id.
    pub fn me(&self) -> u64 {
        self.me
    }

    /// This node's monotonic clock, in ms.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The assignment epoch applied.
    pub fn epoch(&self) -> u64 {
        self.table().epoch()
    }

    /// How many lock partitions this node owns.
    pub fn partitions_owned(&self) -> usize {
        self.table().partitions_owned()
    }

    /// Leases held in this node's partitions.
    pub fn held(&self) -> usize {
        self.table().held()
    }

    /// Applies a committed assignment.
    pub fn assign(&self, epoch: u64, owners: &[u64]) {
        let now = self.now_ms();
        self.table().assign(epoch, owners, now);
    }

    /// A linearizable read sent at `sent` saw assignment `epoch`.
    pub fn confirm(&self, epoch: u64, sent: u64) {
        self.table().confirm(epoch, sent);
    }

    /// Grants a lease on this node's table.
    fn grant(
        &self,
        resource: &str,
        mode: Mode,
        holder: &str,
        ttl: u64,
    ) -> Result<Lease, LockError> {
        let now = self.now_ms();
        self.table().acquire(resource, mode, holder, ttl, now)
    }

    /// Refreshes (`ttl` given) or releases a lease on this node's table:
    /// what the RPC answers (the ms a refreshed lease now lasts).
    fn settle(&self, op: &str, resource: &str, holder: &str, ttl: u64) -> Result<Bytes, Failure> {
        let now = self.now_ms();
        let mut t = self.table();
        match op {
            "refresh" => {
                let ms = t.refresh(resource, holder, ttl, now).map_err(failure)?;
                Ok(Bytes::from(ms.to_string()))
            }
            "release" if t.release(resource, holder) => Ok(Bytes::new()),
            "release" => Err(failure(LockError::Unknown)),
            _ => Err(bad("no such lock method")),
        }
    }

    /// The node-RPC method `lock.<op>` on this node's table.
    pub fn serve(&self, op: &str, body: &[u8]) -> Result<Bytes, Failure> {
        let v: Value = serde_json::from_slice(body).map_err(|_| bad("not JSON"))?;
        let resource = v["resource"].as_str().ok_or_else(|| bad("no resource"))?;
        let holder = v["holder"].as_str().ok_or_else(|| bad("no holder"))?;
        if resource.len() > 2048 || holder.len() > 256 {
            return Err(bad("resource or holder too long"));
        }
        let ttl = v["ttl_ms"].as_u64().unwrap_or(0).min(3_600_000);
        if op != "acquire" {
            return self.settle(op, resource, holder, ttl);
        }
        let mode: Mode = serde_json::from_value(v["mode"].clone()).map_err(|_| bad("no mode"))?;
        let lease = self.grant(resource, mode, holder, ttl).map_err(failure)?;
        Ok(Bytes::from(serde_json::to_vec(&lease).unwrap_or_default()))
    }

    /// One call of `lock.<op>` to node `owner` (another node).
    async fn remote(&self, owner: u64, op: &str, body: Bytes) -> Result<Bytes, (u16, String)> {
        let Some(Some(peer)) = self.peers.get((owner as usize).wrapping_sub(1)) else {
            return Err((NOT_OWNER, format!("no node {owner}")));
        };
        match peer
            .call(&format!("lock.{op}"), body, Some(Duration::from_secs(2)))
            .await
        {
            Ok(b) => Ok(b),
            Err(RpcError::Remote {
                status, message, ..
            }) => Err((status, message)),
            Err(e) => Err((NOT_READY, e.to_string())),
        }
    }

    /// Takes `resource` in `mode` for `holder`, retrying while it is busy
    /// or its owner is not ready, until `timeout`.
    pub async fn acquire(
        &self,
        resource: &str,
        mode: Mode,
        holder: &str,
        ttl_ms: u64,
        timeout: Duration,
    ) -> Result<Taken, String> {
        let deadline = Instant::now() + timeout;
        // The request of a remote attempt, built at the first one.
        let mut body: Option<Bytes> = None;
        let mut backoff = Duration::from_millis(1);
        let mut hint: Option<u64> = None;
        loop {
            // Without an assignment yet (a node that just started and has
            // not applied the log), the call waits for one, as for an
            // owner that is not ready.
            let owner = hint.take().or_else(|| self.table().owner_of(resource));
            let attempt = if let Some(owner) = owner {
                self.attempt(owner, resource, mode, holder, ttl_ms, &mut body)
                    .await
                    .map(|lease| Taken { lease, owner })
            } else {
                Err((NOT_READY, "no lock partitions assigned yet".to_owned()))
            };
            match attempt {
                Ok(taken) => return Ok(taken),
                Err((NOT_OWNER, msg)) => {
                    // The owner's answer names the owner it knows.
                    hint = serde_json::from_str::<LockError>(&msg)
                        .ok()
                        .and_then(|e| match e {
                            LockError::NotOwner(o) => o,
                            _ => None,
                        })
                        .filter(|o| Some(*o) != owner);
                }
                Err((status, msg)) if status != BUSY && status != NOT_READY => {
                    return Err(format!("lock {resource}: {msg}"));
                }
                Err(_) => {}
            }
            if Instant::now() + backoff > deadline {
                return Err(format!(
                    "a timeout occurred while trying to lock {resource} ({} ms)",
                    timeout.as_millis()
                ));
            }
            if hint.is_none() {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(50));
            }
        }
    }

    /// One attempt at `owner`: in process for this node's own partitions,
    /// over the RPC for another's.
    async fn attempt(
        &self,
        owner: u64,
        resource: &str,
        mode: Mode,
        holder: &str,
        ttl_ms: u64,
        body: &mut Option<Bytes>,
    ) -> Result<Lease, (u16, String)> {
        if owner == self.me {
            return self.grant(resource, mode, holder, ttl_ms).map_err(|e| {
                let f = failure(e);
                (f.status, f.message)
            });
        }
        let body = body
            .get_or_insert_with(|| request(resource, mode, holder, ttl_ms))
            .clone();
        let b = self.remote(owner, "acquire", body).await?;
        serde_json::from_slice::<Lease>(&b).map_err(|e| (400, e.to_string()))
    }

    /// `refresh` or `release` of a lease taken from node `owner`.
    pub async fn on_owner(
        &self,
        owner: u64,
        op: &str,
        resource: &str,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Bytes, (u16, String)> {
        if owner == self.me {
            return self
                .settle(op, resource, holder, ttl_ms)
                .map_err(|f| (f.status, f.message));
        }
        self.remote(
            owner,
            op,
            request(resource, Mode::Exclusive, holder, ttl_ms),
        )
        .await
    }
}

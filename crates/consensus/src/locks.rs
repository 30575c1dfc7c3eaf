//! The lock service's core, sans-IO: namespace locks as leases, granted by
//! the node that owns the resource's partition, without a raft round trip.
//!
//! # How safety is kept
//! Resources hash into [`PARTITIONS`] partitions. Raft holds the assignment
//! of partitions to nodes, with an epoch that grows with every change
//! ([`assign_partitions`] computes one; the cluster state stores it). The
//! owner of a partition grants leases for its resources on its own:
//!
//! - **Ownership is itself a lease.** An owner may grant only until
//!   `owned_until`: the send time (its own clock) of its last linearizable
//!   read (ReadIndex) that saw it still owner in the current epoch, plus
//!   [`LockConfig::owner_lease_ms`]. A node cut off from the quorum cannot
//!   renew it, so it stops granting by itself.
//! - **No lease outlives the ownership it was granted under**: a lease ends
//!   at `min(now + ttl, owned_until)`.
//! - **A new owner waits out the old one.** A read that saw the old owner
//!   was sent before the new assignment committed, which is before the new
//!   owner applied it; the old owner's leases all end within
//!   `owner_lease_ms` of that send, by its clock. So the new owner grants
//!   nothing until [`LockConfig::handover_ms`] after it applied the change:
//!   the owner lease stretched by the largest clock *rate* difference
//!   ([`LockConfig::max_drift_ppm`]) plus a margin. Absolute clock offsets do
//!   not matter; only how fast clocks run.
//! - **Fencing**: every lease carries a [`Fence`] (epoch, sequence) that
//!   grows with every grant in the cluster's order of ownership, for
//!   storage to refuse writes of a holder that a later grant superseded.
//!
//! A holder must finish what the lease guards before its `expires_ms` (by
//! the granting node's clock, which the caller reads as a duration from the
//! grant) or refresh it; [`LockTable::refresh`] extends it up to the
//! owner's `owned_until`.
//!
//! Times are milliseconds of the node's monotonic clock, passed in: the
//! core reads no clock, so the simulation (`tests/locks_sim.rs`) drives it
//! with clocks that drift.

use std::collections::HashMap;

/// Partitions of the lock space.
pub const PARTITIONS: usize = 64;

/// The partition of a resource (FNV-1a, stable across releases and
/// nodes).
pub fn partition_of(resource: &str) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in resource.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % PARTITIONS as u64) as usize
}

/// Shared or exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mode {
    /// Readers: any number at once, no writer.
    Shared,
    /// One writer, no reader.
    Exclusive,
}

/// A fencing token: greater for every later grant on a resource.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Fence {
    /// The assignment epoch the grant was made under.
    pub epoch: u64,
    /// The granting owner's sequence within the epoch.
    pub seq: u64,
}

/// A granted lease.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lease {
    /// The resource.
    pub resource: String,
    /// Its mode.
    pub mode: Mode,
    /// Who holds it (a request's unique id).
    pub holder: String,
    /// Its fencing token.
    pub fence: Fence,
    /// Milliseconds it lasts from the grant (the owner's clock).
    pub ttl_ms: u64,
}

/// Why a lock is not granted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum LockError {
    /// Another node owns the partition (`None`: nobody yet).
    #[error("the lock's partition is owned by node {0:?}")]
    NotOwner(Option<u64>),
    /// This node owns it but may not grant yet (waiting out the previous
    /// owner, or its ownership is not confirmed).
    #[error("the partition's owner is not ready for another {0} ms")]
    NotReady(u64),
    /// Held in a conflicting mode by another holder.
    #[error("the resource is locked")]
    Busy,
    /// No such lease (expired or released).
    #[error("no such lease")]
    Unknown,
}

/// Timing of the lock service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockConfig {
    /// How long a confirmation of ownership lets an owner grant.
    pub owner_lease_ms: u64,
    /// The largest difference in clock rates between two nodes, in parts
    /// per million.
    pub max_drift_ppm: u64,
    /// Added to the hand-over wait.
    pub margin_ms: u64,
}

impl Default for LockConfig {
    fn default() -> Self {
        LockConfig {
            owner_lease_ms: 5_000,
            // 0.1 %: far beyond the tens of ppm of real oscillators.
            max_drift_ppm: 1_000,
            margin_ms: 100,
        }
    }
}

impl LockConfig {
    /// How long a new owner waits after applying its assignment.
    pub fn handover_ms(&self) -> u64 {
        let stretched = self.owner_lease_ms + self.owner_lease_ms * self.max_drift_ppm / 1_000_000;
        stretched + 1 + self.margin_ms
    }
}

#[derive(Debug, Clone)]
enum Held {
    Exclusive { holder: String, expires: u64 },
    Shared { holders: HashMap<String, u64> },
}

#[derive(Debug, Clone, Default)]
struct Partition {
    owned: bool,
    /// No grant before this time (hand-over).
    ready_at: u64,
    /// No grant at or after this time (ownership unconfirmed).
    owned_until: u64,
    locks: HashMap<String, Held>,
}

/// One node's lock table: the partitions it owns and their leases.
#[derive(Debug, Clone)]
pub struct LockTable {
    me: u64,
    cfg: LockConfig,
    epoch: u64,
    owners: Vec<u64>,
    parts: Vec<Partition>,
    seq: u64,
}

impl LockTable {
    /// The table of node `me`, owning nothing yet.
    pub fn new(me: u64, cfg: LockConfig) -> LockTable {
        LockTable {
            me,
            cfg,
            epoch: 0,
            owners: Vec::new(),
            parts: vec![Partition::default(); PARTITIONS],
            seq: 0,
        }
    }

    /// The assignment epoch applied.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The owner of `resource`'s partition, as this node knows it.
    pub fn owner_of(&self, resource: &str) -> Option<u64> {
        self.owners.get(partition_of(resource)).copied()
    }

    /// How many partitions this node owns in the applied assignment.
    pub fn partitions_owned(&self) -> usize {
        self.parts.iter().filter(|p| p.owned).count()
    }

    /// Leases held in this node's partitions (expired ones included until
    /// they are next looked at).
    pub fn held(&self) -> usize {
        self.parts
            .iter()
            .map(|p| {
                p.locks
                    .values()
                    .map(|h| match h {
                        Held::Exclusive { .. } => 1,
                        Held::Shared { holders } => holders.len(),
                    })
                    .sum::<usize>()
            })
            .sum()
    }

    /// Applies a committed assignment (`owners[p]` owns partition `p`) at
    /// local time `now`. Partitions this node keeps keep their leases; ones
    /// it gains wait out the hand-over; ones it loses are dropped.
    pub fn assign(&mut self, epoch: u64, owners: &[u64], now: u64) {
        if epoch <= self.epoch || owners.len() != PARTITIONS {
            return;
        }
        for (p, part) in self.parts.iter_mut().enumerate() {
            let mine = owners[p] == self.me;
            if mine && !part.owned {
                *part = Partition {
                    owned: true,
                    ready_at: now + self.cfg.handover_ms(),
                    owned_until: 0,
                    locks: HashMap::new(),
                };
            } else if !mine {
                *part = Partition::default();
            }
        }
        self.epoch = epoch;
        self.owners = owners.to_vec();
        self.seq = 0;
    }

    /// A linearizable read sent at local time `sent` saw assignment
    /// `epoch` as the latest: this node's ownership of what it owns in it
    /// is confirmed until `sent + owner_lease_ms`.
    pub fn confirm(&mut self, epoch: u64, sent: u64) {
        if epoch != self.epoch {
            return;
        }
        let until = sent + self.cfg.owner_lease_ms;
        for part in self.parts.iter_mut().filter(|p| p.owned) {
            part.owned_until = part.owned_until.max(until);
        }
    }

    fn owned(&mut self, resource: &str, now: u64) -> Result<&mut Partition, LockError> {
        let p = partition_of(resource);
        let owner = self.owners.get(p).copied();
        let part = &mut self.parts[p];
        if !part.owned {
            return Err(LockError::NotOwner(owner));
        }
        if now < part.ready_at {
            return Err(LockError::NotReady(part.ready_at - now));
        }
        if now >= part.owned_until {
            return Err(LockError::NotReady(self.cfg.owner_lease_ms));
        }
        Ok(part)
    }

    /// Grants `resource` in `mode` to `holder` for at most `ttl` ms from
    /// `now` (less when the ownership ends sooner). The same holder asking
    /// again in the same mode renews its lease.
    pub fn acquire(
        &mut self,
        resource: &str,
        mode: Mode,
        holder: &str,
        ttl: u64,
        now: u64,
    ) -> Result<Lease, LockError> {
        let epoch = self.epoch;
        let part = self.owned(resource, now)?;
        let expires = (now + ttl).min(part.owned_until);
        let held = part.locks.get_mut(resource);
        // Expired holders are forgotten first.
        let held = match held {
            Some(Held::Exclusive { expires: e, .. }) if *e <= now => {
                part.locks.remove(resource);
                None
            }
            Some(Held::Shared { holders }) => {
                holders.retain(|_, e| *e > now);
                if holders.is_empty() {
                    part.locks.remove(resource);
                    None
                } else {
                    part.locks.get_mut(resource)
                }
            }
            Some(_) => part.locks.get_mut(resource),
            None => None,
        };
        match (held, mode) {
            (None, Mode::Exclusive) => {
                part.locks.insert(
                    resource.to_owned(),
                    Held::Exclusive {
                        holder: holder.to_owned(),
                        expires,
                    },
                );
            }
            (None, Mode::Shared) => {
                part.locks.insert(
                    resource.to_owned(),
                    Held::Shared {
                        holders: HashMap::from([(holder.to_owned(), expires)]),
                    },
                );
            }
            (
                Some(Held::Exclusive {
                    holder: h,
                    expires: e,
                }),
                Mode::Exclusive,
            ) if h == holder => *e = expires,
            (Some(Held::Shared { holders }), Mode::Shared) => {
                holders.insert(holder.to_owned(), expires);
            }
            (Some(_), _) => return Err(LockError::Busy),
        }
        self.seq += 1;
        Ok(Lease {
            resource: resource.to_owned(),
            mode,
            holder: holder.to_owned(),
            fence: Fence {
                epoch,
                seq: self.seq,
            },
            ttl_ms: expires - now,
        })
    }

    /// Extends `holder`'s lease on `resource` to `now + ttl` (at most the
    /// ownership's end); returns the ms it now lasts.
    pub fn refresh(
        &mut self,
        resource: &str,
        holder: &str,
        ttl: u64,
        now: u64,
    ) -> Result<u64, LockError> {
        let part = self.owned(resource, now)?;
        let expires = (now + ttl).min(part.owned_until);
        let slot = match part.locks.get_mut(resource) {
            Some(Held::Exclusive { holder: h, expires }) if h == holder => expires,
            Some(Held::Shared { holders }) => holders.get_mut(holder).ok_or(LockError::Unknown)?,
            _ => return Err(LockError::Unknown),
        };
        if *slot <= now {
            return Err(LockError::Unknown);
        }
        *slot = expires;
        Ok(expires - now)
    }

    /// Ends `holder`'s lease on `resource`; whether it held one.
    pub fn release(&mut self, resource: &str, holder: &str) -> bool {
        let part = &mut self.parts[partition_of(resource)];
        match part.locks.get_mut(resource) {
            Some(Held::Exclusive { holder: h, .. }) if h == holder => {
                part.locks.remove(resource);
                true
            }
            Some(Held::Shared { holders }) => {
                let had = holders.remove(holder).is_some();
                if holders.is_empty() {
                    part.locks.remove(resource);
                }
                had
            }
            _ => false,
        }
    }
}

/// The partitions' owners for the nodes `live` (raft ids, the others are
/// down) given the current assignment: a live owner keeps its partitions;
/// the partitions of nodes that are down (or of no node yet) go to the live
/// nodes with the fewest, lowest id first. `None` when nothing changes or
/// no node is live.
pub fn assign_partitions(current: &[u64], live: &[u64]) -> Option<Vec<u64>> {
    if live.is_empty() {
        return None;
    }
    let mut owners: Vec<u64> = if current.len() == PARTITIONS {
        current.to_vec()
    } else {
        vec![0; PARTITIONS]
    };
    let mut count: HashMap<u64, usize> = live.iter().map(|n| (*n, 0)).collect();
    for o in &owners {
        if let Some(c) = count.get_mut(o) {
            *c += 1;
        }
    }
    let mut changed = false;
    for o in owners.iter_mut() {
        if !count.contains_key(o) {
            let (&n, _) = count
                .iter()
                .min_by_key(|(n, c)| (**c, **n))
                .expect("live is not empty");
            *o = n;
            *count.get_mut(&n).expect("a live node") += 1;
            changed = true;
        }
    }
    changed.then_some(owners)
}

/// Moves partitions from the live nodes that own the most to those in
/// `live` that own the fewest, until no two differ by more than one (a
/// node back from an outage gets its share again). Every partition must
/// already have a live owner ([`assign_partitions`] first). A moved
/// partition's new owner waits out the hand-over before granting, as for
/// any change of owner. `None` when already balanced.
pub fn balance_partitions(current: &[u64], live: &[u64]) -> Option<Vec<u64>> {
    if current.len() != PARTITIONS || live.is_empty() {
        return None;
    }
    let mut owners = current.to_vec();
    let mut count: HashMap<u64, usize> = live.iter().map(|n| (*n, 0)).collect();
    for o in &owners {
        if let Some(c) = count.get_mut(o) {
            *c += 1;
        }
    }
    let mut changed = false;
    loop {
        let (&most, &hi) = count
            .iter()
            .max_by_key(|(n, c)| (**c, std::cmp::Reverse(**n)))
            .expect("live is not empty");
        let (&fewest, &lo) = count
            .iter()
            .min_by_key(|(n, c)| (**c, **n))
            .expect("live is not empty");
        if hi <= lo + 1 {
            break;
        }
        // The highest-numbered partition of the busiest owner moves, so
        // the same inputs always give the same assignment.
        let Some(p) = (0..PARTITIONS).rev().find(|p| owners[*p] == most) else {
            break;
        };
        owners[p] = fewest;
        *count.get_mut(&most).expect("a live node") -= 1;
        *count.get_mut(&fewest).expect("a live node") += 1;
        changed = true;
    }
    changed.then_some(owners)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> LockConfig {
        LockConfig {
            owner_lease_ms: 1000,
            max_drift_ppm: 10_000,
            margin_ms: 10,
        }
    }

    /// A table of node 1 owning every partition, confirmed at 0.
    fn owning() -> LockTable {
        let mut t = LockTable::new(1, cfg());
        t.assign(1, &[1; PARTITIONS], 0);
        t.confirm(1, 1100);
        t
    }

    #[test]
    fn handover_waits_and_ownership_must_be_confirmed() {
        let mut t = LockTable::new(1, cfg());
        assert_eq!(
            t.acquire("a", Mode::Exclusive, "h", 100, 0),
            Err(LockError::NotOwner(None))
        );
        t.assign(1, &[1; PARTITIONS], 0);
        assert_eq!(cfg().handover_ms(), 1021);
        assert!(matches!(
            t.acquire("a", Mode::Exclusive, "h", 100, 500),
            Err(LockError::NotReady(_))
        ));
        // Ready but not confirmed.
        assert!(matches!(
            t.acquire("a", Mode::Exclusive, "h", 100, 1100),
            Err(LockError::NotReady(_))
        ));
        t.confirm(1, 1050);
        let l = t.acquire("a", Mode::Exclusive, "h", 5000, 1100).unwrap();
        // The lease ends with the ownership (1050 + 1000).
        assert_eq!(l.ttl_ms, 950);
        // A confirmation of an older epoch extends nothing.
        t.confirm(0, 5000);
        assert!(matches!(
            t.acquire("b", Mode::Exclusive, "h", 100, 2050),
            Err(LockError::NotReady(_))
        ));
    }

    #[test]
    fn modes_conflict_as_they_should_and_fences_grow() {
        let mut t = owning();
        let a = t.acquire("r", Mode::Shared, "x", 100, 1100).unwrap();
        let b = t.acquire("r", Mode::Shared, "y", 100, 1101).unwrap();
        assert!(b.fence > a.fence);
        assert_eq!(
            t.acquire("r", Mode::Exclusive, "z", 100, 1102),
            Err(LockError::Busy)
        );
        assert!(t.release("r", "x"));
        assert!(t.release("r", "y"));
        let w = t.acquire("r", Mode::Exclusive, "z", 100, 1103).unwrap();
        assert!(w.fence > b.fence);
        assert_eq!(
            t.acquire("r", Mode::Shared, "x", 100, 1104),
            Err(LockError::Busy)
        );
        assert_eq!(t.refresh("r", "z", 200, 1150), Ok(200));
        assert_eq!(t.refresh("r", "x", 200, 1150), Err(LockError::Unknown));
        // Expired: another holder gets it.
        assert!(t.acquire("r", Mode::Exclusive, "q", 100, 1400).is_ok());
        assert!(!t.release("r", "z"));
        assert_eq!(t.held(), 1);
    }

    #[test]
    fn losing_a_partition_drops_its_leases_and_regaining_waits() {
        let mut t = owning();
        t.acquire("r", Mode::Exclusive, "z", 100, 1100).unwrap();
        let mut owners = [1u64; PARTITIONS];
        owners[partition_of("r")] = 2;
        t.assign(2, &owners, 1200);
        assert_eq!(
            t.acquire("r", Mode::Exclusive, "z", 100, 1201),
            Err(LockError::NotOwner(Some(2)))
        );
        assert_eq!(t.held(), 0);
        t.assign(3, &[1; PARTITIONS], 1300);
        t.confirm(3, 1300);
        assert!(matches!(
            t.acquire("r", Mode::Exclusive, "z", 100, 1301),
            Err(LockError::NotReady(_))
        ));
        // Partitions kept across the epoch stay usable after confirmation.
        let other = (0..1000)
            .map(|i| format!("k{i}"))
            .find(|k| partition_of(k) != partition_of("r"))
            .unwrap();
        assert!(t.acquire(&other, Mode::Exclusive, "z", 100, 1301).is_ok());
    }

    #[test]
    fn assignments_keep_live_owners_and_balance_the_rest() {
        let first = assign_partitions(&[], &[1, 2, 3, 4]).unwrap();
        for n in 1..=4 {
            assert_eq!(first.iter().filter(|o| **o == n).count(), 16);
        }
        assert_eq!(assign_partitions(&first, &[1, 2, 3, 4]), None);
        let without3 = assign_partitions(&first, &[1, 2, 4]).unwrap();
        for (a, b) in first.iter().zip(&without3) {
            if *a != 3 {
                assert_eq!(a, b);
            } else {
                assert_ne!(*b, 3);
            }
        }
        let counts: Vec<usize> = [1, 2, 4]
            .iter()
            .map(|n| without3.iter().filter(|o| *o == n).count())
            .collect();
        assert!(
            counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1,
            "{counts:?}"
        );
        assert_eq!(assign_partitions(&first, &[]), None);
    }

    #[test]
    fn a_returning_node_gets_its_share_back() {
        let first = assign_partitions(&[], &[1, 2, 3, 4]).unwrap();
        let without3 = assign_partitions(&first, &[1, 2, 4]).unwrap();
        assert_eq!(balance_partitions(&without3, &[1, 2, 4]), None);
        let back = balance_partitions(&without3, &[1, 2, 3, 4]).unwrap();
        for n in 1..=4 {
            assert_eq!(back.iter().filter(|o| **o == n).count(), 16, "{back:?}");
        }
        // Only partitions that move to the returning node change hands.
        let moved = without3.iter().zip(&back).filter(|(a, b)| a != b).count();
        assert_eq!(moved, 16);
        assert!(without3.iter().zip(&back).all(|(a, b)| a == b || *b == 3));
        assert_eq!(balance_partitions(&back, &[1, 2, 3, 4]), None);
        // 64 over 3 nodes: 22, 21, 21 is balanced.
        let three = assign_partitions(&[], &[1, 2, 3]).unwrap();
        assert_eq!(balance_partitions(&three, &[1, 2, 3]), None);
        assert_eq!(balance_partitions(&three, &[]), None);
    }
}

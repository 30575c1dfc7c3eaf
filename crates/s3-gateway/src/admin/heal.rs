//! MinIO's background heal status (`POST
//! /minio/admin/v3/background-heal/status`, what `mc admin heal ALIAS`
//! shows), in madmin-go's field names: every drive by set, with the heal
//! of each drive replaced by an empty one while it runs (the versions and
//! bytes rebuilt onto it, from the object layer's
//! [`HealStatus`](object::layer::HealStatus)); per server, the versions its
//! heal journal made whole (madmin's `mrf`: MinIO's queue of writes that
//! missed drives); the parity of each storage class.

use std::collections::BTreeMap;
use std::time::UNIX_EPOCH;

use object::layer::ObjectLayer;
use serde::{Deserialize, Serialize};

use super::info::DriveInfo;

/// What one server's heal journal made whole (madmin's `MRFStatus`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MrfStatus {
    pub bytes_healed: u64,
    pub items_healed: u64,
}

/// The heal of a drive replaced by an empty one (madmin's `HealingDisk`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealingDisk {
    /// The drive's id.
    pub id: String,
    pub heal_id: String,
    pub pool_index: usize,
    pub set_index: usize,
    pub disk_index: usize,
    pub endpoint: String,
    pub path: String,
    /// When the drive was formatted into its place (RFC 3339).
    pub started: String,
    /// When a version was last healed onto it.
    pub last_update: String,
    pub retry_attempts: u64,
    /// Not counted: the heal walks the namespace without totalling it.
    pub objects_total_count: u64,
    pub objects_total_size: u64,
    pub items_healed: u64,
    pub items_failed: u64,
    pub items_skipped: u64,
    pub bytes_done: u64,
    pub bytes_failed: u64,
    pub bytes_skipped: u64,
    #[serde(rename = "current_bucket")]
    pub bucket: String,
    #[serde(rename = "current_object")]
    pub object: String,
    pub queued_buckets: Vec<String>,
    pub healed_buckets: Vec<String>,
    pub finished: bool,
    /// 0: a fresh (replaced) drive.
    pub reason: u8,
}

/// One erasure set and its drives (madmin's `SetStatus`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetStatus {
    pub id: String,
    pub pool_index: usize,
    pub set_index: usize,
    pub heal_status: String,
    pub heal_priority: String,
    pub total_objects: usize,
    pub disks: Vec<DriveInfo>,
}

/// The background heal status (madmin's `BgHealState`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BgHealState {
    /// Servers that did not answer.
    pub offline_nodes: Vec<String>,
    /// Versions the scanners checked.
    #[serde(rename = "ScannedItemsCount")]
    pub scanned_items_count: u64,
    /// Endpoints of the drives being healed.
    #[serde(rename = "HealDisks")]
    pub heal_disks: Vec<String>,
    pub sets: Vec<SetStatus>,
    /// Per server, what its heal journal made whole.
    pub mrf: BTreeMap<String, MrfStatus>,
    /// Parity per storage class (`STANDARD`, `REDUCED_REDUNDANCY`).
    pub sc_parity: BTreeMap<String, usize>,
}

/// What one server knows of healing: the heals of replaced drives its
/// layer ran, its journal's heals, the versions its scanner checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerHeal {
    pub drives: Vec<HealingDisk>,
    pub mrf: MrfStatus,
    pub scanned: u64,
}

impl ServerHeal {
    /// What `layer` has healed. A drive's place (pool, set within the
    /// pool, position) comes from the layer's pools; its endpoint and path
    /// are its label.
    pub fn of(layer: &ObjectLayer) -> ServerHeal {
        let status = layer.heal_status();
        // Global set index -> (pool, set within the pool).
        let mut places = Vec::new();
        for pool in 0..layer.pool_count() {
            for set in 0..layer.pool_sets(pool).len() {
                places.push((pool, set));
            }
        }
        let drives = status
            .drives
            .iter()
            .filter_map(|d| {
                let &(pool, set) = places.get(d.set)?;
                let id = layer
                    .pool_sets(pool)
                    .get(set)
                    .and_then(|s| s.drives().get(d.disk))
                    .and_then(|drive| drive.id())
                    .map(|u| u.to_string())
                    .unwrap_or_default();
                Some(HealingDisk {
                    heal_id: id.clone(),
                    id,
                    pool_index: pool,
                    set_index: set,
                    disk_index: d.disk,
                    endpoint: d.label.clone(),
                    path: d.label.clone(),
                    started: rfc3339(d.started),
                    last_update: rfc3339(d.last_update),
                    retry_attempts: 0,
                    objects_total_count: 0,
                    objects_total_size: 0,
                    items_healed: d.items_healed,
                    items_failed: d.items_failed,
                    items_skipped: 0,
                    bytes_done: d.bytes_done,
                    bytes_failed: d.bytes_failed,
                    bytes_skipped: 0,
                    bucket: String::new(),
                    object: String::new(),
                    queued_buckets: Vec::new(),
                    healed_buckets: Vec::new(),
                    finished: d.finished,
                    reason: 0,
                })
            })
            .collect();
        ServerHeal {
            drives,
            mrf: MrfStatus {
                bytes_healed: status.journal_bytes_healed,
                items_healed: status.journal_items_healed,
            },
            scanned: status.scanned,
        }
    }
}

impl BgHealState {
    /// The status of a deployment: `drives` are every drive of every
    /// server (offline ones included), `servers` what each server that
    /// answered knows of healing (by server name), `offline` the servers
    /// that did not answer. A drive healed by several servers' layers
    /// shows the heal that got furthest.
    pub fn new(
        drives: Vec<DriveInfo>,
        servers: Vec<(String, ServerHeal)>,
        offline: Vec<String>,
        standard_parity: usize,
        rrs_parity: usize,
    ) -> BgHealState {
        let mut heals: BTreeMap<(usize, usize, usize), HealingDisk> = BTreeMap::new();
        let mut mrf = BTreeMap::new();
        let mut scanned = 0;
        for (name, s) in servers {
            for h in s.drives {
                let key = (h.pool_index, h.set_index, h.disk_index);
                let further = heals.get(&key).is_none_or(|o| {
                    (h.items_healed + h.items_failed, h.finished)
                        > (o.items_healed + o.items_failed, o.finished)
                });
                if further {
                    heals.insert(key, h);
                }
            }
            mrf.insert(name, s.mrf);
            scanned += s.scanned;
        }
        let mut sets: BTreeMap<(usize, usize), Vec<DriveInfo>> = BTreeMap::new();
        let mut heal_disks = Vec::new();
        for mut d in drives {
            if let Some(h) = heals.remove(&(d.pool_index, d.set_index, d.disk_index)) {
                d.healing = !h.finished;
                if d.healing {
                    heal_disks.push(d.endpoint.clone());
                }
                let mut h = h;
                // The drive's own endpoint and path, as the info shows them.
                h.endpoint.clone_from(&d.endpoint);
                h.path.clone_from(&d.path);
                d.heal_info = Some(h);
            }
            sets.entry((d.pool_index, d.set_index)).or_default().push(d);
        }
        let sets = sets
            .into_iter()
            .map(|((pool, set), mut disks)| {
                disks.sort_by_key(|d| d.disk_index);
                SetStatus {
                    id: format!("{pool}-{set}"),
                    pool_index: pool,
                    set_index: set,
                    heal_status: String::new(),
                    heal_priority: String::new(),
                    total_objects: 0,
                    disks,
                }
            })
            .collect();
        BgHealState {
            offline_nodes: offline,
            scanned_items_count: scanned,
            heal_disks,
            sets,
            mrf,
            sc_parity: BTreeMap::from([
                ("STANDARD".to_owned(), standard_parity),
                ("REDUCED_REDUNDANCY".to_owned(), rrs_parity),
            ]),
        }
    }

    /// The JSON madmin-go decodes.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// A time as RFC 3339 in UTC with milliseconds (what Go's `time.Time`
/// decodes).
fn rfc3339(t: std::time::SystemTime) -> String {
    let nanos = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    crate::time::iso8601(nanos)
}

//! The heal journal: writes that reached a quorum but missed drives (a
//! drive offline, a node of a cluster down) are remembered on disk until
//! the missed drives have them.
//!
//! A commit that succeeded on fewer than all of its set's drives writes a
//! small entry (bucket, key, version) to `.minio.sys/tessera/heal/` on one
//! drive that took the write, durably, before the write is acknowledged:
//! a crash right after the acknowledgement does not lose it, and unlike an
//! in-memory queue, nothing is dropped when many writes miss a drive for a
//! long time. The healer keeps the entries it knows in memory (at most
//! [`MAX_PENDING`]; more wait on disk) and reads the journal of every
//! drive at start and every [`SWEEP_EVERY`], so entries written by another
//! process serving the same drives (another node of a cluster, a previous
//! run) are healed too. Every [`RETRY_EVERY`] it heals the entries whose
//! drives are all back (an offline drive is poked, which starts its probe),
//! and removes an entry once its heal succeeded or its object is gone.
//! The scanner hands the healer the versions its pass could not make
//! whole too (a node that just started, a drive still unreachable), in
//! memory only: its next pass finds them anyway, the healer sooner.
//! MinIO keeps no such journal (its queue of partial writes lives in
//! memory and drops entries when full): the scanner's full pass is the
//! last resort there, and here behind the journal.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use drive::format::META_VOLUME;
use drive::{Drive, DriveState};
use uuid::Uuid;

use super::*;

/// Where the entries live, under `.minio.sys` of a drive.
pub(crate) const JOURNAL_DIR: &str = "tessera/heal";
/// Entries kept in memory at most; beyond, they wait on disk for a sweep.
pub const MAX_PENDING: usize = 100_000;
/// How often the healer retries the entries it knows.
pub const RETRY_EVERY: Duration = Duration::from_secs(2);
/// How often it reads the journals of all drives.
pub const SWEEP_EVERY: Duration = Duration::from_secs(30);
/// Largest entry file read.
const MAX_ENTRY: u64 = 4096;
/// Entries listed per drive in one sweep at most.
const SWEEP_BATCH: usize = 10_000;
const MAGIC: &str = "tessera-heal-1";

/// One remembered write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub bucket: String,
    pub key: String,
    /// The version written; all zeros for the null version.
    pub version: [u8; 16],
}

impl Entry {
    fn encode(&self) -> Vec<u8> {
        format!(
            "{MAGIC}\0{}\0{}\0{}",
            self.bucket,
            self.key,
            Uuid::from_bytes(self.version)
        )
        .into_bytes()
    }

    fn decode(b: &[u8]) -> Option<Entry> {
        let s = std::str::from_utf8(b).ok()?;
        let mut parts = s.split('\0');
        if parts.next()? != MAGIC {
            return None;
        }
        let bucket = parts.next()?.to_owned();
        let key = parts.next()?.to_owned();
        let version = Uuid::parse_str(parts.next()?).ok()?.into_bytes();
        parts.next().is_none().then_some(Entry {
            bucket,
            key,
            version,
        })
    }

    fn version_sel(&self) -> VersionSel {
        if self.version == [0; 16] {
            VersionSel::Null
        } else {
            VersionSel::Id(Uuid::from_bytes(self.version))
        }
    }
}

/// Writes `entry` to the first drive of `written` (set positions of the
/// drives that took the write) that accepts it; returns the entry's name,
/// or `None` when none did (the scanner's pass is then the only record).
pub(crate) async fn record(
    drives: &[Arc<dyn Drive>],
    written: &[usize],
    entry: &Entry,
) -> Option<(usize, String)> {
    let name = Uuid::new_v4().to_string();
    let path = format!("{JOURNAL_DIR}/{name}");
    for &d in written {
        match drives[d]
            .write_all(META_VOLUME, &path, entry.encode())
            .await
        {
            Ok(()) => return Some((d, name)),
            Err(e) => tracing::debug!(drive = %drives[d].label(), "heal journal: {e}"),
        }
    }
    tracing::warn!(
        bucket = %entry.bucket,
        key = %entry.key,
        "a write missed drives and no drive took its heal journal entry; the scanner heals it"
    );
    None
}

/// An entry the healer knows: where it lives and what it says.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub set: usize,
    /// The drive whose journal holds it; `None` for a version the scanner
    /// could not heal, which it finds again on its next pass anyway.
    pub drive: Option<usize>,
    pub name: String,
    pub entry: Entry,
    pub attempts: u32,
}

/// What the healer knows of the journal.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    /// Entry name -> entry.
    pending: Mutex<HashMap<String, Pending>>,
}

/// Counts of the journal, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JournalStats {
    /// Entries known and not healed yet.
    pub pending: usize,
}

impl Journal {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds an entry just written (or found by a sweep), if there is room.
    pub(crate) fn add(&self, p: Pending) {
        let mut map = self.lock();
        if map.len() < MAX_PENDING {
            map.entry(p.name.clone()).or_insert(p);
        }
    }

    /// Adds a version to heal that has no entry on disk (the scanner could
    /// not make it whole), unless it is known already.
    pub(crate) fn add_unrecorded(&self, entry: Entry) {
        let name = format!(
            "scan:{}/{}/{}",
            entry.bucket,
            entry.key,
            Uuid::from_bytes(entry.version)
        );
        self.add(Pending {
            set: usize::MAX,
            drive: None,
            name,
            entry,
            attempts: 0,
        });
    }

    pub(crate) fn stats(&self) -> JournalStats {
        JournalStats {
            pending: self.lock().len(),
        }
    }
}

impl ObjectLayer {
    /// Entries of the heal journal known and not healed yet.
    pub fn heal_journal_stats(&self) -> JournalStats {
        self.journal.stats()
    }

    /// Reads the journal of every drive, adding the entries not known yet.
    pub(crate) async fn sweep_journal(&self) {
        for (s, set) in self.sets.iter().enumerate() {
            for (d, drive) in set.drives().iter().enumerate() {
                if drive.health().state == DriveState::Offline {
                    continue;
                }
                let Ok(names) = drive.list_dir(META_VOLUME, JOURNAL_DIR, SWEEP_BATCH).await else {
                    continue;
                };
                for name in names {
                    if name.ends_with('/') || self.journal.lock().contains_key(&name) {
                        continue;
                    }
                    let path = format!("{JOURNAL_DIR}/{name}");
                    let Ok(bytes) = drive.read_all(META_VOLUME, &path, MAX_ENTRY).await else {
                        continue;
                    };
                    match Entry::decode(&bytes) {
                        Some(entry) => self.journal.add(Pending {
                            set: s,
                            drive: Some(d),
                            name,
                            entry,
                            attempts: 0,
                        }),
                        None => {
                            tracing::warn!(drive = %drive.label(), %name, "a heal journal entry does not decode; removed");
                            let _ = drive.delete(META_VOLUME, &path, false).await;
                        }
                    }
                }
            }
        }
    }

    /// Heals the known entries whose set's drives are all back; returns how
    /// many were healed (and removed).
    pub(crate) async fn retry_journal(&self, pacer: &mut heal::Pacer) -> usize {
        let pending: Vec<Pending> = self.journal.lock().values().cloned().collect();
        let mut healed = 0;
        for p in pending {
            // A scanner entry does not know its set: every drive is checked.
            let drives: Vec<&Arc<dyn Drive>> = match self.sets.get(p.set) {
                Some(set) => set.drives().iter().collect(),
                None => self.drives().collect(),
            };
            let offline: Vec<&Arc<dyn Drive>> = drives
                .into_iter()
                .filter(|d| d.health().state == DriveState::Offline)
                .collect();
            if !offline.is_empty() {
                // Any operation on an offline drive starts its probe: it
                // comes back as soon as it answers.
                for d in offline {
                    let _ = d.disk_info().await;
                }
                continue;
            }
            let e = &p.entry;
            let r = self
                .heal_object(&e.bucket, &e.key, Some(e.version_sel()))
                .await;
            let done = match &r {
                // Whole only when no drive it needed failed.
                Ok(h) if h.failed_drives.is_empty() => {
                    // Bytes count only what was rewritten.
                    let bytes = if h.healed_drives.is_empty() {
                        0
                    } else {
                        h.bytes
                    };
                    self.heal_track.journal_healed(bytes);
                    true
                }
                Ok(_) => false,
                // Deleted (or overwritten, unversioned) since: nothing to heal.
                Err(err) => err.is_not_found(),
            };
            if done {
                if let (Some(set), Some(d)) = (self.sets.get(p.set), p.drive) {
                    let _ = set.drives()[d]
                        .delete(META_VOLUME, &format!("{JOURNAL_DIR}/{}", p.name), false)
                        .await;
                }
                self.journal.lock().remove(&p.name);
                healed += 1;
            } else if let Some(q) = self.journal.lock().get_mut(&p.name) {
                q.attempts += 1;
                if q.attempts % 30 == 1 {
                    tracing::info!(bucket = %e.bucket, key = %e.key, attempts = q.attempts, "heal of a write that missed drives: {r:?}");
                }
            }
            pacer.tick().await;
        }
        healed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_junk_is_refused() {
        let e = Entry {
            bucket: "b".into(),
            key: "a/b c.txt".into(),
            version: *Uuid::new_v4().as_bytes(),
        };
        assert_eq!(Entry::decode(&e.encode()), Some(e.clone()));
        let null = Entry {
            version: [0; 16],
            ..e
        };
        assert_eq!(
            Entry::decode(&null.encode()).unwrap().version_sel(),
            VersionSel::Null
        );
        assert_eq!(Entry::decode(b"tessera-heal-1\0b\0k"), None);
        assert_eq!(Entry::decode(b"other\0b\0k\0x"), None);
        assert_eq!(Entry::decode(&[0xff, 0xfe]), None);
    }
}

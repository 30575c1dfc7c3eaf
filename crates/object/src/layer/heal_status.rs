//! What healing has done, for status reports (MinIO's background heal
//! status, which `mc admin heal` shows): per drive formatted into its place
//! when the layer opened (a replaced drive), the versions healed onto it
//! and their bytes until the first full scanner pass after it ends; the
//! versions the heal journal made whole; and the versions the scanner
//! checked.

use std::sync::Mutex;
use std::time::SystemTime;

use super::*;

/// The heal of one drive formatted into its place at open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriveHeal {
    /// The drive's set, by index among all sets of all pools.
    pub set: usize,
    /// Its position in the set.
    pub disk: usize,
    /// Its label ([`Drive::label`]).
    pub label: String,
    /// When it was formatted.
    pub started: SystemTime,
    /// When a version was last healed onto it (or the heal ended).
    pub last_update: SystemTime,
    /// Versions rebuilt onto it.
    pub items_healed: u64,
    /// Versions that needed it and could not be written to it.
    pub items_failed: u64,
    /// Bytes of the versions rebuilt onto it (object sizes).
    pub bytes_done: u64,
    /// Bytes of the versions that failed.
    pub bytes_failed: u64,
    /// A full scanner pass that started after the drive was formatted has
    /// ended: every version has been checked, and healed where it could be.
    pub finished: bool,
}

/// A snapshot of what healing has done since the layer opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealStatus {
    /// The drives formatted into their places at open, healed or healing.
    pub drives: Vec<DriveHeal>,
    /// Versions the heal journal's healer made whole.
    pub journal_items_healed: u64,
    /// Their bytes (object sizes).
    pub journal_bytes_healed: u64,
    /// Journal entries not healed yet.
    pub journal_pending: usize,
    /// Versions the scanner checked (full passes and the heal queue).
    pub scanned: u64,
}

/// The counters behind [`HealStatus`].
#[derive(Debug, Default)]
pub(crate) struct HealTrack {
    inner: Mutex<HealStatus>,
}

impl HealTrack {
    fn lock(&self) -> std::sync::MutexGuard<'_, HealStatus> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts tracking a drive formatted into its place.
    pub(crate) fn fresh(&self, set: usize, disk: usize, label: String) {
        let now = SystemTime::now();
        self.lock().drives.push(DriveHeal {
            set,
            disk,
            label,
            started: now,
            last_update: now,
            items_healed: 0,
            items_failed: 0,
            bytes_done: 0,
            bytes_failed: 0,
            finished: false,
        });
    }

    /// Counts heal `r` of a version in set `set` on the tracked drives.
    pub(crate) fn healed(&self, set: usize, r: &HealResult) {
        let mut s = self.lock();
        if s.drives.is_empty() {
            return;
        }
        let now = SystemTime::now();
        for d in s.drives.iter_mut().filter(|d| d.set == set && !d.finished) {
            if r.healed_drives.contains(&d.disk) {
                d.items_healed += 1;
                d.bytes_done += r.bytes;
                d.last_update = now;
            } else if r.failed_drives.contains(&d.disk) {
                d.items_failed += 1;
                d.bytes_failed += r.bytes;
                d.last_update = now;
            }
        }
    }

    /// Counts a version the journal's healer made whole.
    pub(crate) fn journal_healed(&self, bytes: u64) {
        let mut s = self.lock();
        s.journal_items_healed += 1;
        s.journal_bytes_healed += bytes;
    }

    /// Counts a version the scanner checked.
    pub(crate) fn scanned(&self) {
        self.lock().scanned += 1;
    }

    /// A full scanner pass that began at `began` has ended: the drives
    /// formatted before it are healed as far as they can be.
    pub(crate) fn pass_ended(&self, began: SystemTime) {
        let now = SystemTime::now();
        for d in self.lock().drives.iter_mut() {
            if !d.finished && d.started <= began {
                d.finished = true;
                d.last_update = now;
            }
        }
    }

    pub(crate) fn snapshot(&self) -> HealStatus {
        self.lock().clone()
    }
}

impl ObjectLayer {
    /// What healing has done since the layer opened ([`HealStatus`]).
    pub fn heal_status(&self) -> HealStatus {
        let mut s = self.heal_track.snapshot();
        s.journal_pending = self.journal.stats().pending;
        s
    }

    /// Tracks the heal of `drive`, one of this layer's drives, formatted
    /// into its place before the layer opened (a cluster formats a
    /// replaced node's drives first), as a drive the open formatted is
    /// tracked. Call before the scanner starts. Returns whether the drive
    /// is one of the layer's.
    pub fn track_replaced(&self, drive: &Arc<dyn Drive>) -> bool {
        for (s, set) in self.sets.iter().enumerate() {
            if let Some(d) = set.drives().iter().position(|x| Arc::ptr_eq(x, drive)) {
                self.heal_track.fresh(s, d, drive.label());
                return true;
            }
        }
        false
    }

    /// The index among all sets of `set`, a set of this layer.
    pub(crate) fn set_number(&self, set: &ErasureSet) -> usize {
        self.sets
            .iter()
            .position(|s| std::ptr::eq(s, set))
            .unwrap_or(usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(healed: &[usize], failed: &[usize], bytes: u64) -> HealResult {
        HealResult {
            healed_drives: healed.to_vec(),
            failed_drives: failed.to_vec(),
            bytes,
            ..HealResult::default()
        }
    }

    #[test]
    fn a_fresh_drive_counts_its_heals_until_a_pass_after_it_ends() {
        let t = HealTrack::default();
        let before = SystemTime::now() - std::time::Duration::from_secs(1);
        t.fresh(1, 2, "d6".into());
        // Heals in other sets, or onto other drives, are not its own.
        t.healed(0, &result(&[2], &[], 100));
        t.healed(1, &result(&[0, 2], &[], 1000));
        t.healed(1, &result(&[0], &[2], 50));
        t.healed(1, &result(&[3], &[], 7));
        let s = t.snapshot();
        let d = &s.drives[0];
        assert_eq!((d.items_healed, d.bytes_done), (1, 1000));
        assert_eq!((d.items_failed, d.bytes_failed), (1, 50));
        // A pass that began before the drive was formatted does not end
        // its heal; one that began after does.
        t.pass_ended(before);
        assert!(!t.snapshot().drives[0].finished);
        t.pass_ended(SystemTime::now());
        assert!(t.snapshot().drives[0].finished);
        // Finished: later heals are not counted on it.
        t.healed(1, &result(&[2], &[], 1000));
        assert_eq!(t.snapshot().drives[0].items_healed, 1);
        t.journal_healed(10);
        t.journal_healed(5);
        t.scanned();
        let s = t.snapshot();
        assert_eq!(
            (s.journal_items_healed, s.journal_bytes_healed, s.scanned),
            (2, 15, 1)
        );
    }
}

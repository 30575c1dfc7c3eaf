//! An in-memory [`LogStore`]: for tests, the simulation and single-process
//! use. "Durable" here means surviving a rebuilt [`crate::Replica`] (clones
//! share the data), not a process exit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use raft::eraftpb::{Entry, HardState, Snapshot};
use raft::prelude::ConfState;
use raft::storage::MemStorage;
use raft::{GetEntriesContext, RaftState, Storage};

use crate::replica::LogStore;

/// raft-rs's `MemStorage` plus the index of the stored conf state and the
/// latest snapshot with its data (`MemStorage` keeps only its metadata).
#[derive(Clone, Default)]
pub struct MemLog {
    inner: MemStorage,
    conf_index: Arc<AtomicU64>,
    snap: Arc<Mutex<Snapshot>>,
}

impl MemLog {
    /// A fresh log bootstrapped with the initial configuration `cs`.
    pub fn new(cs: ConfState) -> MemLog {
        MemLog {
            inner: MemStorage::new_with_conf_state(cs),
            conf_index: Arc::default(),
            snap: Arc::default(),
        }
    }
    /// Whether `e` continues (or overwrites a suffix of) this log, which
    /// raft-rs's append requires and would otherwise panic on.
    pub fn continues(&self, e: &Entry) -> bool {
        match (self.inner.first_index(), self.inner.last_index()) {
            (Ok(first), Ok(last)) => e.index >= first && e.index <= last + 1,
            _ => false,
        }
    }
    /// Hard state, conf state and the conf state's index, for persisting.
    pub fn state(&self) -> (HardState, ConfState, u64) {
        let rs = self.inner.rl();
        let hs = rs.hard_state().clone();
        drop(rs);
        let cs = self
            .inner
            .initial_state()
            .map(|s| s.conf_state)
            .unwrap_or_default();
        (hs, cs, self.conf_state_index())
    }
    /// Restore persisted hard state and conf state.
    pub fn restore_state(&self, hs: HardState, cs: ConfState, conf_index: u64) {
        let mut core = self.inner.wl();
        core.set_hardstate(hs);
        core.set_conf_state(cs);
        drop(core);
        self.conf_index.store(conf_index, Ordering::SeqCst);
    }
    /// The hard state stored.
    pub fn hard_state(&self) -> HardState {
        self.inner.rl().hard_state().clone()
    }
    /// The latest snapshot (empty before the first).
    pub fn latest_snapshot(&self) -> Snapshot {
        self.snap.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    /// Installs a snapshot the store already holds (on open): the log
    /// starts after it.
    pub fn load_snapshot(&self, snap: Snapshot) -> raft::Result<()> {
        self.inner.wl().apply_snapshot(snap.clone())?;
        *self.snap.lock().unwrap_or_else(|e| e.into_inner()) = snap;
        Ok(())
    }
    /// The entries after `index` (for rewriting a compacted log).
    pub fn entries_after(&self, index: u64) -> raft::Result<Vec<Entry>> {
        let last = self.inner.last_index()?;
        if index >= last {
            return Ok(Vec::new());
        }
        self.inner
            .entries(index + 1, last + 1, None, GetEntriesContext::empty(false))
    }
}

impl Storage for MemLog {
    fn initial_state(&self) -> raft::Result<RaftState> {
        self.inner.initial_state()
    }
    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        self.inner.entries(low, high, max_size, context)
    }
    fn term(&self, idx: u64) -> raft::Result<u64> {
        self.inner.term(idx)
    }
    fn first_index(&self) -> raft::Result<u64> {
        self.inner.first_index()
    }
    fn last_index(&self) -> raft::Result<u64> {
        self.inner.last_index()
    }
    fn snapshot(&self, _request_index: u64, _to: u64) -> raft::Result<Snapshot> {
        // The latest snapshot taken (with the state machine's data); raft
        // asks for one only for a follower behind the compacted log, which
        // this one covers.
        Ok(self.latest_snapshot())
    }
}

impl LogStore for MemLog {
    fn append(&self, entries: &[Entry]) -> raft::Result<()> {
        self.inner.wl().append(entries)
    }
    fn set_hard_state(&self, hs: HardState) -> raft::Result<()> {
        self.inner.wl().set_hardstate(hs);
        Ok(())
    }
    fn set_commit(&self, commit: u64) -> raft::Result<()> {
        self.inner.wl().mut_hard_state().set_commit(commit);
        Ok(())
    }
    fn set_conf_state(&self, cs: ConfState, index: u64) -> raft::Result<()> {
        self.inner.wl().set_conf_state(cs);
        self.conf_index.store(index, Ordering::SeqCst);
        Ok(())
    }
    fn conf_state_index(&self) -> u64 {
        self.conf_index.load(Ordering::SeqCst)
    }
    fn apply_snapshot(&self, snap: Snapshot) -> raft::Result<()> {
        let index = snap.get_metadata().index;
        self.inner.wl().apply_snapshot(snap.clone())?;
        *self.snap.lock().unwrap_or_else(|e| e.into_inner()) = snap;
        self.conf_index.store(index, Ordering::SeqCst);
        Ok(())
    }
    fn compact(&self, snap: Snapshot) -> raft::Result<()> {
        let index = snap.get_metadata().index;
        if index <= self.latest_snapshot().get_metadata().index {
            return Ok(());
        }
        // MemStorage's own compaction forgets the term of the last entry
        // it drops, which raft needs: install the snapshot (which records
        // it), then put back what follows it, the hard state and the
        // current configuration.
        let keep = self.entries_after(index)?;
        let (hs, cs, conf_index) = self.state();
        let mut core = self.inner.wl();
        core.apply_snapshot(snap.clone())?;
        core.set_hardstate(hs);
        core.set_conf_state(cs);
        core.append(&keep)?;
        drop(core);
        self.conf_index.store(conf_index, Ordering::SeqCst);
        *self.snap.lock().unwrap_or_else(|e| e.into_inner()) = snap;
        Ok(())
    }
}

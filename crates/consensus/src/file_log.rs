//! A durable [`LogStore`] over files in one directory:
//!
//! - `log`: append-only records `[len u32 LE][crc32 u32 LE][Entry protobuf]`.
//!   A record whose first entry overlaps the log replaces the conflicting
//!   suffix on replay, exactly as raft's append does. Every append is
//!   fsynced before it returns.
//! - `state`: `[crc32][len hs][HardState][len cs][ConfState][conf index]`,
//!   replaced by write-temp, fsync, rename, fsync of the directory.
//!
//! - `snapshot`: `[crc32][Snapshot protobuf]` (metadata and the state
//!   machine's data), replaced like `state`. Compaction writes it, then
//!   rewrites `log` with the entries after it (write-temp, fsync, rename);
//!   a crash between the two leaves entries the snapshot covers, which the
//!   replay skips.
//!
//! On open the snapshot is loaded and the log replayed; a torn or corrupt
//! tail (short record, bad CRC, an entry that does not continue the log)
//! ends the log there and the file is truncated to the last whole record.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use protobuf::Message as _;
use raft::eraftpb::{Entry, HardState, Snapshot};
use raft::prelude::ConfState;
use raft::{GetEntriesContext, RaftState, Storage};

use crate::mem::MemLog;
use crate::replica::LogStore;

/// The largest record accepted on replay (a raft message batch is bounded by
/// `max_size_per_msg`; anything larger is corruption).
const MAX_RECORD: usize = 64 * 1024 * 1024;

/// Errors opening a [`FileLog`].
#[derive(Debug, thiserror::Error)]
pub enum FileLogError {
    /// The file system failed.
    #[error("raft log {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The state file is damaged (it is replaced atomically, so this is not
    /// a torn write).
    #[error("raft state file {path} is corrupt: {why}")]
    CorruptState {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: &'static str,
    },
}

/// The durable log: an in-memory mirror for raft's reads, and files.
pub struct FileLog {
    mem: MemLog,
    dir: PathBuf,
    log: Mutex<File>,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> FileLogError + '_ {
    move |source| FileLogError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl FileLog {
    /// Open (or create) the log in `dir`. A new directory starts from
    /// `initial` (the bootstrap configuration); an existing one from its
    /// files.
    pub fn open(dir: &Path, initial: ConfState) -> Result<FileLog, FileLogError> {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let state_path = dir.join("state");
        let mem = MemLog::new(initial);
        let snap_path = dir.join("snapshot");
        match std::fs::read(&snap_path) {
            Ok(bytes) => {
                let snap = decode_snapshot(&bytes).ok_or(FileLogError::CorruptState {
                    path: snap_path.clone(),
                    why: "bad snapshot record",
                })?;
                mem.load_snapshot(snap)
                    .map_err(|_| FileLogError::CorruptState {
                        path: snap_path.clone(),
                        why: "the snapshot does not install",
                    })?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&snap_path)(e)),
        }
        match std::fs::read(&state_path) {
            Ok(bytes) => {
                let (hs, cs, idx) = decode_state(&bytes).ok_or(FileLogError::CorruptState {
                    path: state_path.clone(),
                    why: "bad record",
                })?;
                mem.restore_state(hs, cs, idx);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&state_path)(e)),
        }
        // A crash between installing a leader's snapshot and writing the
        // state leaves a state older than the snapshot: the snapshot's
        // commit and configuration stand.
        let meta = mem.latest_snapshot().get_metadata().clone();
        let (mut hs, _, _) = mem.state();
        if hs.commit < meta.index {
            hs.commit = meta.index;
            hs.term = hs.term.max(meta.term);
            mem.restore_state(hs, meta.get_conf_state().clone(), meta.index);
        }
        let log_path = dir.join("log");
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&log_path)
            .map_err(io_err(&log_path))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_err(&log_path))?;
        let good = replay(&bytes, &mem);
        if good < bytes.len() {
            tracing::warn!(
                path = %log_path.display(),
                kept = good,
                dropped = bytes.len() - good,
                "raft log: truncating a torn or corrupt tail"
            );
            file.set_len(good as u64).map_err(io_err(&log_path))?;
            file.sync_all().map_err(io_err(&log_path))?;
        }
        // The commit index is persisted only after the entries it covers, so
        // a torn tail never holds committed entries; a commit beyond the log
        // means damage in the middle, which raft must not start on.
        let (hs, _, _) = mem.state();
        let last = mem.last_index().unwrap_or(0);
        if hs.commit > last {
            return Err(FileLogError::CorruptState {
                path: log_path,
                why: "the commit index is beyond the log's last whole record",
            });
        }
        Ok(FileLog {
            mem,
            dir: dir.to_path_buf(),
            log: Mutex::new(file),
        })
    }

    fn write_state(&self) -> std::io::Result<()> {
        let (hs, cs, idx) = self.mem.state();
        let bytes = encode_state(&hs, &cs, idx)?;
        self.replace("state", &bytes)
    }

    /// Replaces file `name` with `bytes`: write-temp, fsync, rename, fsync
    /// of the directory.
    fn replace(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let tmp = self.dir.join(format!("{name}.tmp"));
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, self.dir.join(name))?;
        File::open(&self.dir)?.sync_all()
    }

    /// Writes `snap` durably, then replaces the log with `entries` (those
    /// after the snapshot) and appends to the new file from then on.
    fn write_snapshot(&self, snap: &Snapshot, entries: &[Entry]) -> std::io::Result<()> {
        let body = snap.write_to_bytes().map_err(std::io::Error::other)?;
        let mut rec = crc32fast::hash(&body).to_le_bytes().to_vec();
        rec.extend_from_slice(&body);
        self.replace("snapshot", &rec)?;
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        self.replace("log", &records(entries)?)?;
        let log_path = self.dir.join("log");
        *log = OpenOptions::new().read(true).append(true).open(&log_path)?;
        Ok(())
    }
}

/// Entries as log records.
fn records(entries: &[Entry]) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    for e in entries {
        let body = e.write_to_bytes().map_err(std::io::Error::other)?;
        buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
        buf.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        buf.extend_from_slice(&body);
    }
    Ok(buf)
}

fn decode_snapshot(bytes: &[u8]) -> Option<Snapshot> {
    let (crc, body) = bytes.split_at_checked(4)?;
    if crc32fast::hash(body).to_le_bytes() != crc {
        return None;
    }
    Snapshot::parse_from_bytes(body).ok()
}

/// Replay records into `mem`; returns the length of the valid prefix.
fn replay(bytes: &[u8], mem: &MemLog) -> usize {
    let mut at = 0;
    while bytes.len() - at >= 8 {
        let len =
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
        let crc = u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]]);
        if len > MAX_RECORD || bytes.len() - at - 8 < len {
            break;
        }
        let body = &bytes[at + 8..at + 8 + len];
        if crc32fast::hash(body) != crc {
            break;
        }
        let Ok(entry) = Entry::parse_from_bytes(body) else {
            break;
        };
        // Entries a snapshot covers (left by a crash between writing the
        // snapshot and rewriting the log) are skipped.
        if mem.first_index().is_ok_and(|first| entry.index < first) {
            at += 8 + len;
            continue;
        }
        if !mem.continues(&entry) || mem.append(std::slice::from_ref(&entry)).is_err() {
            break;
        }
        at += 8 + len;
    }
    at
}

fn encode_state(hs: &HardState, cs: &ConfState, idx: u64) -> std::io::Result<Vec<u8>> {
    let hs = hs.write_to_bytes().map_err(std::io::Error::other)?;
    let cs = cs.write_to_bytes().map_err(std::io::Error::other)?;
    let mut body = Vec::with_capacity(hs.len() + cs.len() + 16);
    body.extend_from_slice(&(hs.len() as u32).to_le_bytes());
    body.extend_from_slice(&hs);
    body.extend_from_slice(&(cs.len() as u32).to_le_bytes());
    body.extend_from_slice(&cs);
    body.extend_from_slice(&idx.to_le_bytes());
    let mut out = crc32fast::hash(&body).to_le_bytes().to_vec();
    out.extend_from_slice(&body);
    Ok(out)
}

fn decode_state(bytes: &[u8]) -> Option<(HardState, ConfState, u64)> {
    let (crc, body) = bytes.split_at_checked(4)?;
    if crc32fast::hash(body).to_le_bytes() != crc {
        return None;
    }
    let take = |b: &'_ [u8]| -> Option<(Vec<u8>, usize)> {
        let (l, rest) = b.split_at_checked(4)?;
        let l = u32::from_le_bytes(l.try_into().ok()?) as usize;
        Some((rest.get(..l)?.to_vec(), 4 + l))
    };
    let (hs, n) = take(body)?;
    let (cs, m) = take(body.get(n..)?)?;
    let idx = body.get(n + m..n + m + 8)?;
    let idx = u64::from_le_bytes(idx.try_into().ok()?);
    Some((
        HardState::parse_from_bytes(&hs).ok()?,
        ConfState::parse_from_bytes(&cs).ok()?,
        idx,
    ))
}

impl Storage for FileLog {
    fn initial_state(&self) -> raft::Result<RaftState> {
        self.mem.initial_state()
    }
    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        self.mem.entries(low, high, max_size, context)
    }
    fn term(&self, idx: u64) -> raft::Result<u64> {
        self.mem.term(idx)
    }
    fn first_index(&self) -> raft::Result<u64> {
        self.mem.first_index()
    }
    fn last_index(&self) -> raft::Result<u64> {
        self.mem.last_index()
    }
    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        self.mem.snapshot(request_index, to)
    }
}

impl LogStore for FileLog {
    fn append(&self, entries: &[Entry]) -> raft::Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let buf = records(entries)?;
        {
            let mut f = self.log.lock().unwrap_or_else(|p| p.into_inner());
            f.write_all(&buf)?;
            f.sync_data()?;
        }
        self.mem.append(entries)
    }
    fn set_hard_state(&self, hs: HardState) -> raft::Result<()> {
        self.mem.set_hard_state(hs)?;
        Ok(self.write_state()?)
    }
    fn set_commit(&self, commit: u64) -> raft::Result<()> {
        self.mem.set_commit(commit)?;
        Ok(self.write_state()?)
    }
    fn set_conf_state(&self, cs: ConfState, index: u64) -> raft::Result<()> {
        self.mem.set_conf_state(cs, index)?;
        Ok(self.write_state()?)
    }
    fn conf_state_index(&self) -> u64 {
        self.mem.conf_state_index()
    }
    fn apply_snapshot(&self, snap: Snapshot) -> raft::Result<()> {
        // A leader's snapshot replaces the whole log.
        self.write_snapshot(&snap, &[])?;
        self.mem.apply_snapshot(snap)?;
        Ok(self.write_state()?)
    }
    fn compact(&self, snap: Snapshot) -> raft::Result<()> {
        let index = snap.get_metadata().index;
        if index <= self.mem.latest_snapshot().get_metadata().index {
            return Ok(());
        }
        let keep = self.mem.entries_after(index)?;
        self.write_snapshot(&snap, &keep)?;
        self.mem.compact(snap)
    }
}

//! [`WalkFs`] with direct system calls, for a walk run whole inside one
//! blocking task: per object, `openat` + `read` (+ `fstat` only when the
//! head buffer fills) + `close` of its `xl.meta`, relative to a descriptor
//! of its parent directory, and one `statx` of its directory instead of a
//! listing when the link count says it has no subdirectory.
//!
//! Large directories are kept in a per-drive cache of their sorted walk
//! candidates ([`Namespace`]), so the pages of one listing do not each read
//! the whole directory again. An entry is used only while nothing changed:
//! every primitive that creates, renames or removes a name on the drive
//! bumps a generation (when it starts and when it ends, even if its future
//! is dropped), and the directory's inode, size, link count and change and
//! modification times must be those seen when it was read (which catches
//! changes made by another process, to the file system's timestamp
//! granularity; Linux 6.13 and later make a change after a `stat` show a
//! new time on ext4, XFS, btrfs and tmpfs).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use rustix::fs::{AtFlags, Mode, OFlags, StatxFlags};

use crate::error::{Ctx, DriveError, Result, map_io};
use crate::path::{self, check_volume};
use crate::walk::{Cands, DirEntry, META_FILE, WalkFs, WalkOptions, WalkPage};

impl super::Inner {
    /// A page of the walk, whole inside one blocking task.
    pub(super) async fn walk(&self, opts: &WalkOptions) -> Result<WalkPage> {
        let opts = opts.clone();
        let max_entries = self.cfg.max_list_entries;
        let label = self.root.clone();
        let ns = Arc::clone(&self.io.blocking.ns);
        self.io
            .blocking
            .run(move |root| {
                let mut fs = SyncFs::new(root, &ns, max_entries, &label);
                run_ready(crate::walk::walk(&mut fs, &opts))
            })
            .await
            .map_err(|e| map_io("walk", Ctx::Read, e))?
    }
}

/// Directories with fewer candidates are read again each time (cheap).
const CACHE_MIN_CANDIDATES: usize = 1024;
/// Most bytes of candidates kept per drive.
const CACHE_MAX_BYTES: usize = 16 << 20;

/// What identifies one state of a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: i64,
    nlink: u64,
    mtime: (i64, u64),
    ctime: (i64, u64),
}

impl Stamp {
    // The nanosecond fields are not the same type on every architecture.
    #[allow(clippy::unnecessary_cast)]
    fn of(st: &rustix::fs::Stat) -> Stamp {
        Stamp {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size,
            nlink: st.st_nlink,
            mtime: (st.st_mtime, st.st_mtime_nsec as u64),
            ctime: (st.st_ctime, st.st_ctime_nsec as u64),
        }
    }
}

struct Cached {
    generation: u64,
    stamp: Stamp,
    cands: Arc<Cands>,
    used: u64,
}

#[derive(Default)]
struct Dirs {
    map: HashMap<String, Cached>,
    bytes: usize,
    tick: u64,
}

/// A drive's namespace generation and the walk's directory cache.
#[derive(Default)]
pub(crate) struct Namespace {
    generation: AtomicU64,
    dirs: Mutex<Dirs>,
}

/// Marks a change to the drive's names: the generation moves when the
/// change starts and again when it is over (or abandoned).
pub(crate) struct Change<'a>(&'a Namespace);

impl Drop for Change<'_> {
    fn drop(&mut self) {
        self.0.generation.fetch_add(1, Ordering::SeqCst);
    }
}

impl Namespace {
    /// A change begins; it ends when the returned guard drops.
    pub(crate) fn change(&self) -> Change<'_> {
        self.generation.fetch_add(1, Ordering::SeqCst);
        Change(self)
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The cached candidates of `rel`, if read at `generation` (nothing
    /// changed since) and the directory is as it was.
    fn get(&self, rel: &str, generation: u64, stamp: &Stamp) -> Option<Arc<Cands>> {
        let mut dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        dirs.tick += 1;
        let tick = dirs.tick;
        let hit = dirs
            .map
            .get_mut(rel)
            .filter(|c| c.generation == generation && c.stamp == *stamp)
            .map(|c| {
                c.used = tick;
                Arc::clone(&c.cands)
            });
        if hit.is_none()
            && let Some(old) = dirs.map.remove(rel)
        {
            dirs.bytes -= old.cands.bytes();
        }
        hit
    }

    /// Keeps the candidates of `rel` as read at `generation`, evicting the
    /// least recently used directories beyond the budget.
    fn put(&self, rel: &str, generation: u64, stamp: Stamp, cands: Arc<Cands>) {
        let size = cands.bytes();
        if cands.len() < CACHE_MIN_CANDIDATES || size > CACHE_MAX_BYTES / 2 {
            return;
        }
        let mut dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        dirs.tick += 1;
        let used = dirs.tick;
        if let Some(old) = dirs.map.insert(
            rel.to_owned(),
            Cached {
                generation,
                stamp,
                cands,
                used,
            },
        ) {
            dirs.bytes -= old.cands.bytes();
        }
        dirs.bytes += size;
        while dirs.bytes > CACHE_MAX_BYTES {
            let Some(oldest) = dirs
                .map
                .iter()
                .min_by_key(|(_, c)| c.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(old) = dirs.map.remove(&oldest) {
                dirs.bytes -= old.cands.bytes();
            }
        }
    }

    /// Directories cached (for tests).
    #[cfg(test)]
    fn cached(&self) -> usize {
        self.dirs.lock().map(|d| d.map.len()).unwrap_or(0)
    }
}

/// Largest head read of a metadata file (a caller asking more gets this).
const MAX_HEAD: usize = 1 << 20;

/// Runs a future whose every step is synchronous: it must be ready at its
/// first poll (the [`SyncFs`] methods return ready futures).
pub(super) fn run_ready<T>(fut: impl Future<Output = T>) -> io::Result<T> {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(v) => Ok(v),
        Poll::Pending => Err(io::Error::other("synchronous walk step was pending")),
    }
}

/// The file system under a drive root, with blocking system calls.
pub(super) struct SyncFs<'r> {
    root: &'r OwnedFd,
    ns: &'r Namespace,
    /// Most names read from one directory (the smallest are kept).
    max_entries: usize,
    /// Reused buffer for metadata heads.
    buf: Vec<u8>,
    /// The last parent directory of an object opened (root-relative path,
    /// `O_PATH` descriptor): the objects of a page mostly share it.
    parent: Option<(String, OwnedFd)>,
    label: &'r Path,
}

impl<'r> SyncFs<'r> {
    pub(super) fn new(
        root: &'r OwnedFd,
        ns: &'r Namespace,
        max_entries: usize,
        label: &'r Path,
    ) -> Self {
        SyncFs {
            root,
            ns,
            max_entries: max_entries.max(1),
            buf: Vec::new(),
            parent: None,
            label,
        }
    }

    /// A descriptor of the parent of the object directory `dir` of
    /// `volume` and the path of `leaf` under it (`None`: the parent does
    /// not exist).
    fn at_parent(
        &mut self,
        volume: &str,
        dir: &str,
        leaf: &str,
    ) -> Result<Option<(&OwnedFd, String)>> {
        let (parent, name) = match dir.rfind('/') {
            Some(i) => (path::join(volume, &dir[..i])?, &dir[i + 1..]),
            None => {
                check_volume(volume)?;
                (volume.to_owned(), dir)
            }
        };
        // Validates the whole path as every drive operation does.
        path::join(volume, dir)?;
        let sub = if leaf.is_empty() {
            name.to_owned()
        } else {
            format!("{name}/{leaf}")
        };
        if self.parent.as_ref().is_none_or(|(p, _)| *p != parent) {
            self.parent = None;
            match rustix::fs::openat(
                self.root,
                parent.as_str(),
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => self.parent = Some((parent, fd)),
                Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => return Ok(None),
                Err(e) => return Err(map_io("openat", Ctx::Read, e.into())),
            }
        }
        Ok(self.parent.as_ref().map(|(_, fd)| (fd, sub)))
    }

    fn rel(volume: &str, dir: &str) -> Result<String> {
        if dir.is_empty() {
            check_volume(volume)?;
            Ok(volume.to_owned())
        } else {
            path::join(volume, dir)
        }
    }

    fn read_dir_now(&mut self, volume: &str, dir: &str) -> Result<Arc<Cands>> {
        let rel = Self::rel(volume, dir)?;
        // Read before the directory: a change from now on invalidates
        // what is read.
        let generation = self.ns.generation();
        let fd = match rustix::fs::openat(
            self.root,
            rel.as_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {
                return Err(if dir.is_empty() {
                    DriveError::VolumeNotFound
                } else {
                    DriveError::FileNotFound
                });
            }
            Err(e) => return Err(map_io("readdir", Ctx::Read, e.into())),
        };
        let stamp =
            Stamp::of(&rustix::fs::fstat(&fd).map_err(|e| map_io("fstat", Ctx::Read, e.into()))?);
        if let Some(cands) = self.ns.get(&rel, generation, &stamp) {
            return Ok(cands);
        }
        let entries = self.read_entries(fd, &rel)?;
        let cands = Arc::new(Cands::build(entries));
        self.ns.put(&rel, generation, stamp, Arc::clone(&cands));
        Ok(cands)
    }

    fn read_entries(&mut self, fd: OwnedFd, rel: &str) -> Result<Vec<DirEntry>> {
        let mut d = rustix::fs::Dir::new(fd).map_err(|e| map_io("readdir", Ctx::Read, e.into()))?;
        let mut out: Vec<DirEntry> = Vec::new();
        let mut skipped = 0usize;
        while let Some(entry) = d.read() {
            let entry = entry.map_err(|e| map_io("readdir", Ctx::Read, e.into()))?;
            let raw = entry.file_name();
            let bytes = raw.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let Ok(name) = std::str::from_utf8(bytes) else {
                skipped += 1;
                continue;
            };
            let is_dir = match entry.file_type() {
                rustix::fs::FileType::Directory => true,
                rustix::fs::FileType::Symlink | rustix::fs::FileType::Unknown => {
                    let fd = d.fd().map_err(|e| map_io("readdir", Ctx::Read, e.into()))?;
                    rustix::fs::statx(fd, raw, AtFlags::empty(), StatxFlags::TYPE)
                        .is_ok_and(|st| u32::from(st.stx_mode) & libc::S_IFMT == libc::S_IFDIR)
                }
                _ => false,
            };
            out.push((name.to_owned(), is_dir));
            // Keep memory bounded: the smallest `max_entries` names, as
            // `list_dir` keeps them.
            if out.len() >= self.max_entries.saturating_mul(2) {
                out.sort_unstable();
                out.truncate(self.max_entries);
            }
        }
        if out.len() > self.max_entries {
            out.sort_unstable();
            out.truncate(self.max_entries);
        }
        if skipped > 0 {
            tracing::warn!(root = %self.label.display(), dir = %rel, skipped, "skipped non-UTF-8 names");
        }
        Ok(out)
    }

    fn read_meta_now(
        &mut self,
        volume: &str,
        dir: &str,
        head: usize,
    ) -> Result<Option<(Vec<u8>, bool)>> {
        let Some((parent, sub)) = self.at_parent(volume, dir, META_FILE)? else {
            return Ok(None);
        };
        let fd = match rustix::fs::openat(
            parent,
            sub.as_str(),
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {
                return Ok(None);
            }
            Err(e) => return Err(map_io("openat", Ctx::Read, e.into())),
        };
        let head = head.clamp(1, MAX_HEAD);
        if self.buf.len() < head {
            self.buf.resize(head, 0);
        }
        let mut filled = 0usize;
        let mut retries = 0usize;
        while filled < head {
            match rustix::io::read(&fd, &mut self.buf[filled..head]) {
                Ok(0) => break,
                Ok(n) => {
                    filled += n;
                    // Linux returns fewer bytes of a regular file than
                    // asked only at its end: no read to see 0 bytes.
                    if filled < head {
                        break;
                    }
                }
                Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) if retries < 16 => {
                    retries += 1;
                }
                Err(e) => return Err(map_io("read", Ctx::Read, e.into())),
            }
        }
        // A full head may be all of the file or only its start.
        let complete = filled < head
            || rustix::fs::fstat(&fd)
                .map_err(|e| map_io("fstat", Ctx::Read, e.into()))?
                .st_size as u64
                <= head as u64;
        Ok(Some((self.buf[..filled].to_vec(), complete)))
    }

    fn may_have_subdirs_now(&mut self, volume: &str, dir: &str) -> Result<bool> {
        let Some((parent, sub)) = self.at_parent(volume, dir, "")? else {
            return Ok(false);
        };
        match rustix::fs::statx(
            parent,
            sub.as_str(),
            AtFlags::empty(),
            StatxFlags::TYPE | StatxFlags::NLINK,
        ) {
            Ok(st) => {
                if u32::from(st.stx_mode) & libc::S_IFMT != libc::S_IFDIR {
                    return Ok(false);
                }
                // A directory's link count is 2 + its subdirectories on
                // the file systems that count them (ext4, XFS, tmpfs);
                // those that do not (btrfs, overlayfs) report 1.
                Ok(st.stx_mask & StatxFlags::NLINK.bits() == 0 || st.stx_nlink != 2)
            }
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Ok(false),
            Err(e) => Err(map_io("statx", Ctx::Read, e.into())),
        }
    }
}

impl WalkFs for SyncFs<'_> {
    fn read_dir(
        &mut self,
        volume: &str,
        dir: &str,
    ) -> impl Future<Output = Result<Arc<Cands>>> + Send {
        std::future::ready(self.read_dir_now(volume, dir))
    }

    fn read_meta(
        &mut self,
        volume: &str,
        dir: &str,
        head: usize,
        _limit: u64,
    ) -> impl Future<Output = Result<Option<(Vec<u8>, bool)>>> + Send {
        std::future::ready(self.read_meta_now(volume, dir, head))
    }

    fn may_have_subdirs(
        &mut self,
        volume: &str,
        dir: &str,
    ) -> impl Future<Output = Result<bool>> + Send {
        std::future::ready(self.may_have_subdirs_now(volume, dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(ino: u64) -> Stamp {
        Stamp {
            dev: 1,
            ino,
            size: 4096,
            nlink: 2,
            mtime: (5, 6),
            ctime: (7, 8),
        }
    }

    fn big() -> Arc<Cands> {
        let entries = (0..CACHE_MIN_CANDIDATES)
            .map(|i| (format!("k{i:05}"), true))
            .collect();
        Arc::new(Cands::build(entries))
    }

    /// An entry serves only its generation and its stamp; a change that is
    /// under way or over moves the generation; small directories are not
    /// kept; the budget evicts the least recently used.
    #[test]
    fn cache_entries_are_used_only_while_nothing_changed() {
        let ns = Namespace::default();
        let g = ns.generation();
        ns.put("v/a", g, stamp(1), big());
        assert!(ns.get("v/a", g, &stamp(1)).is_some());
        // Another state of the directory (seen by its stamp) misses, and
        // the entry is dropped.
        assert!(ns.get("v/a", g, &stamp(2)).is_none());
        assert_eq!(ns.cached(), 0);
        ns.put("v/a", g, stamp(1), big());
        {
            let _c = ns.change();
            // A change in flight: the generation moved at its start.
            assert!(ns.get("v/a", ns.generation(), &stamp(1)).is_none());
        }
        let g2 = ns.generation();
        assert!(g2 >= g + 2, "a change moves the generation twice");
        ns.put("v/a", g2, stamp(1), big());
        drop(ns.change());
        assert!(ns.get("v/a", ns.generation(), &stamp(1)).is_none());
        // Small directories are read again each time.
        let small = Arc::new(Cands::build(vec![("x".into(), true)]));
        ns.put("v/s", ns.generation(), stamp(3), small);
        assert_eq!(ns.cached(), 0);
        // The budget holds.
        let g = ns.generation();
        let per = big().bytes();
        for i in 0..(CACHE_MAX_BYTES / per + 4) {
            ns.put(&format!("v/d{i}"), g, stamp(i as u64), big());
        }
        let dirs = ns.dirs.lock().unwrap();
        assert!(dirs.bytes <= CACHE_MAX_BYTES);
        assert!(
            !dirs.map.contains_key("v/d0"),
            "least recently used evicted"
        );
        let last = format!("v/d{}", CACHE_MAX_BYTES / per + 3);
        assert!(dirs.map.contains_key(&last));
    }
}

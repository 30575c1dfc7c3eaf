//! [`WalkFs`] with direct system calls, for a walk run whole inside one
//! blocking task: per object, `openat` + `read` (+ `fstat` only when the
//! head buffer fills) + `close` of its `xl.meta`, relative to a descriptor
//! of its parent directory, and one `statx` of its directory instead of a
//! listing when the link count says it has no subdirectory.

use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Instant, SystemTime};

use rustix::fs::{AtFlags, Mode, OFlags, StatxFlags};

use super::Dirs;
use super::ahead::AHEAD_MAX_DIRS;
use super::cache::{MetaEntry, Namespace, STATX_STAMP, Stamp};
use crate::error::{Ctx, DriveError, Result, map_io};
use crate::path::{self, MAX_COMPONENT_BYTES, MAX_PATH_BYTES, check_volume};
use crate::walk::{Cands, DirEntry, META_FILE, WalkFs};

/// What [`path::join`] checks of `volume/dir` beyond its parent: the last
/// component `name` and the whole length.
fn check_leaf(volume: &str, dir: &str, name: &str) -> Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains('\0') {
        return Err(DriveError::InvalidPath(format!("bad component in {dir:?}")));
    }
    if name.len() > MAX_COMPONENT_BYTES || volume.len() + 1 + dir.len() > MAX_PATH_BYTES {
        return Err(DriveError::NameTooLong);
    }
    Ok(())
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
    /// The last parent directory of an object opened (volume, path in the
    /// volume, `O_PATH` descriptor): the objects of a page mostly share it.
    parent: Option<(String, String, OwnedFd)>,
    /// Reused buffer for a path under `parent`.
    sub: String,
    /// Reused buffer for a [`MetaCache`](super::cache::MetaCache) key.
    key: String,
    /// The key of the object directory `statx`ed last, and whether it may
    /// hold subdirectories: the walk asks that next, as it enters it.
    last_dir: (String, bool),
    label: &'r Path,
    /// Directories read, with their stamps (`None` beyond
    /// [`AHEAD_MAX_DIRS`]).
    pub(super) dirs: Dirs,
    /// Stops the walk (with an error) when set: a walk ahead nobody wants.
    pub(super) cancel: Option<Arc<AtomicBool>>,
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
            sub: String::new(),
            key: String::new(),
            last_dir: (String::new(), true),
            label,
            dirs: Some(Vec::new()),
            cancel: None,
        }
    }

    fn cancelled(&self) -> Result<()> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return Err(DriveError::InvalidArgument("walk ahead abandoned".into()));
        }
        Ok(())
    }

    /// A descriptor of the parent of the object directory `dir` of
    /// `volume` and the path of `leaf` under it (`None`: the parent does
    /// not exist). The path is validated as every drive operation validates
    /// it ([`path::join`]): the parent once per parent, the last component
    /// each time.
    fn at_parent(
        &mut self,
        volume: &str,
        dir: &str,
        leaf: &str,
    ) -> Result<Option<(&OwnedFd, &str)>> {
        let (pdir, name, nested) = match dir.rfind('/') {
            Some(i) => (&dir[..i], &dir[i + 1..], true),
            None => ("", dir, false),
        };
        let same = nested != pdir.is_empty()
            && self
                .parent
                .as_ref()
                .is_some_and(|(v, p, _)| v == volume && p == pdir);
        if !same {
            self.parent = None;
            let rel = if !nested {
                check_volume(volume)?;
                volume.to_owned()
            } else {
                path::join(volume, pdir)?
            };
            match rustix::fs::openat(
                self.root,
                rel.as_str(),
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => self.parent = Some((volume.to_owned(), pdir.to_owned(), fd)),
                Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {
                    // Still an error if the path is not valid.
                    check_leaf(volume, dir, name)?;
                    return Ok(None);
                }
                Err(e) => return Err(map_io("openat", Ctx::Read, e.into())),
            }
        }
        check_leaf(volume, dir, name)?;
        self.sub.clear();
        self.sub.push_str(name);
        if !leaf.is_empty() {
            self.sub.push('/');
            self.sub.push_str(leaf);
        }
        Ok(self
            .parent
            .as_ref()
            .map(|(_, _, fd)| (fd, self.sub.as_str())))
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
        self.cancelled()?;
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
        if let Some(dirs) = &mut self.dirs {
            if dirs.len() < AHEAD_MAX_DIRS {
                dirs.push((rel.clone(), stamp));
            } else {
                self.dirs = None;
            }
        }
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
        self.cancelled()?;
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        key.push_str(volume);
        key.push('/');
        key.push_str(dir);
        let r = self.read_meta_keyed(&key, volume, dir, head.clamp(1, MAX_HEAD));
        self.key = key;
        r
    }

    /// [`read_meta_now`](Self::read_meta_now) with the cache key made.
    fn read_meta_keyed(
        &mut self,
        key: &str,
        volume: &str,
        dir: &str,
        head: usize,
    ) -> Result<Option<(Vec<u8>, bool)>> {
        let ns = self.ns;
        // Before the stamp is taken: a change from then on makes what is
        // read stale.
        let generation = ns.generation();
        let Some((parent, name)) = self.at_parent(volume, dir, "")? else {
            ns.meta_forget(key);
            return Ok(None);
        };
        let st = match rustix::fs::statx(parent, name, AtFlags::empty(), STATX_STAMP) {
            Ok(st) => st,
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {
                ns.meta_forget(key);
                return Ok(None);
            }
            Err(e) => return Err(map_io("statx", Ctx::Read, e.into())),
        };
        if u32::from(st.stx_mode) & libc::S_IFMT != libc::S_IFDIR {
            ns.meta_forget(key);
            return Ok(None);
        }
        self.last_dir.0.clear();
        self.last_dir.0.push_str(key);
        self.last_dir.1 = subdirs_possible(&st);
        let stamp = Stamp::of_statx(&st);
        if let Some(stamp) = &stamp
            && let Some(hit) = ns.meta_get(key, generation, stamp, head)
        {
            return Ok(Some(hit));
        }
        // Before the read (only a miss needs it): whether the directory
        // had settled is judged against a time before the head is read.
        let now = SystemTime::now();
        let Some((parent, sub)) = self.at_parent(volume, dir, META_FILE)? else {
            return Ok(None);
        };
        let fd = match rustix::fs::openat(
            parent,
            sub,
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {
                ns.meta_forget(key);
                return Ok(None);
            }
            Err(e) => return Err(map_io("openat", Ctx::Read, e.into())),
        };
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
        drop(fd);
        let bytes = self.buf[..filled].to_vec();
        if let Some(stamp) = stamp {
            ns.meta_put(
                key,
                MetaEntry {
                    generation,
                    stamp,
                    settled: stamp.settled(now),
                    read_at: Instant::now(),
                    head,
                    complete,
                    bytes: bytes.as_slice().into(),
                },
            );
        }
        Ok(Some((bytes, complete)))
    }

    fn may_have_subdirs_now(&mut self, volume: &str, dir: &str) -> Result<bool> {
        // The `statx` of the metadata read just before, most of the time.
        let last = &self.last_dir.0;
        if last.len() == volume.len() + 1 + dir.len()
            && last.starts_with(volume)
            && last.ends_with(dir)
            && last.as_bytes()[volume.len()] == b'/'
        {
            self.last_dir.0.clear();
            return Ok(self.last_dir.1);
        }
        let Some((parent, sub)) = self.at_parent(volume, dir, "")? else {
            return Ok(false);
        };
        match rustix::fs::statx(
            parent,
            sub,
            AtFlags::empty(),
            StatxFlags::TYPE | StatxFlags::NLINK,
        ) {
            Ok(st) => {
                Ok(u32::from(st.stx_mode) & libc::S_IFMT == libc::S_IFDIR && subdirs_possible(&st))
            }
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Ok(false),
            Err(e) => Err(map_io("statx", Ctx::Read, e.into())),
        }
    }
}

/// Whether a directory may hold subdirectories: its link count is 2 + its
/// subdirectories on the file systems that count them (ext4, XFS, tmpfs);
/// those that do not (btrfs, overlayfs) report 1.
fn subdirs_possible(st: &rustix::fs::Statx) -> bool {
    st.stx_mask & StatxFlags::NLINK.bits() == 0 || st.stx_nlink != 2
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

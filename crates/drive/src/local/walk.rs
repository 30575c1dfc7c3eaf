//! [`WalkFs`] with direct system calls, for a walk run whole inside one
//! blocking task: per object, `openat` + `read` (+ `fstat` only when the
//! head buffer fills) + `close` of its `xl.meta`, and one `statx` of its
//! directory instead of a listing when the link count says it has no
//! subdirectory.

use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use rustix::fs::{AtFlags, Mode, OFlags, StatxFlags};

use crate::error::{Ctx, DriveError, Result, map_io};
use crate::path::{self, check_volume};
use crate::walk::{DirEntry, META_FILE, WalkFs, WalkOptions, WalkPage};

impl super::Inner {
    /// A page of the walk, whole inside one blocking task.
    pub(super) async fn walk(&self, opts: &WalkOptions) -> Result<WalkPage> {
        let opts = opts.clone();
        let max_entries = self.cfg.max_list_entries;
        let label = self.root.clone();
        self.io
            .blocking
            .run(move |root| {
                let mut fs = SyncFs::new(root, max_entries, &label);
                run_ready(crate::walk::walk(&mut fs, &opts))
            })
            .await
            .map_err(|e| map_io("walk", Ctx::Read, e))?
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
    /// Most names read from one directory (the smallest are kept).
    max_entries: usize,
    /// Reused buffer for metadata heads.
    buf: Vec<u8>,
    label: &'r Path,
}

impl<'r> SyncFs<'r> {
    pub(super) fn new(root: &'r OwnedFd, max_entries: usize, label: &'r Path) -> Self {
        SyncFs {
            root,
            max_entries: max_entries.max(1),
            buf: Vec::new(),
            label,
        }
    }

    fn rel(volume: &str, dir: &str) -> Result<String> {
        if dir.is_empty() {
            check_volume(volume)?;
            Ok(volume.to_owned())
        } else {
            path::join(volume, dir)
        }
    }

    fn read_dir_now(&mut self, volume: &str, dir: &str) -> Result<Vec<DirEntry>> {
        let rel = Self::rel(volume, dir)?;
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
        let rel = path::join(volume, &format!("{dir}/{META_FILE}"))?;
        let fd = match rustix::fs::openat(
            self.root,
            rel.as_str(),
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
                Ok(n) => filled += n,
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
        let rel = Self::rel(volume, dir)?;
        match rustix::fs::statx(
            self.root,
            rel.as_str(),
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
    ) -> impl Future<Output = Result<Vec<DirEntry>>> + Send {
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

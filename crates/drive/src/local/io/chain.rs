//! Operations of several steps (a small file's read or durable write, a
//! rename with its syncs, an open in new directories), submitted as one
//! io_uring chain where the ring takes chains, and what their step results
//! say; the ring ops they are built from.

use std::io;
use std::mem::MaybeUninit;
use std::sync::Arc;

use rustix::fs::{Mode, RenameFlags};

use super::super::uring::{self, Chain, File, Op, StepResult, Uring};
use super::{
    DIR_MODE, FILE_MODE, Fd, Io, IoBuf, OpenKind, Stat, at_path, cstring, open_flags, ring_result,
};

impl Io {
    /// [`synced`], counting a failed sync.
    fn synced(&self, open: i32, sync: i32) -> Synced {
        let synced = synced(open, sync);
        if matches!(synced, Synced::Failed(_)) {
            self.dir_sync_failed();
        }
        synced
    }

    /// `statx` of path `rel`, as a ring op.
    pub(super) fn statx_op(&self, rel: &str) -> io::Result<Op> {
        Ok(Op::Statx {
            dir: self.root(),
            path: cstring(rel)?,
            flags: 0,
            out: Box::new(MaybeUninit::zeroed()),
        })
    }

    /// `mkdir` of `rel`, as a ring op.
    pub(super) fn mkdir_op(&self, rel: &str) -> io::Result<Op> {
        Ok(Op::MkDirAt {
            dir: self.root(),
            path: cstring(rel)?,
            mode: DIR_MODE,
        })
    }

    /// `renameat2` of `from` onto `to`, as a ring op.
    pub(super) fn rename_op(&self, from: &str, to: &str, flags: RenameFlags) -> io::Result<Op> {
        Ok(Op::RenameAt {
            dir: self.root(),
            from: cstring(from)?,
            to: cstring(to)?,
            flags: flags.bits(),
        })
    }

    /// Open of `rel` into a chain's file slot (not `O_DIRECT`).
    fn open_slot_op(&self, rel: &str, kind: OpenKind) -> io::Result<Op> {
        let creates = matches!(kind, OpenKind::CreateTruncate | OpenKind::CreateExclusive);
        Ok(Op::OpenSlot {
            dir: self.root(),
            path: cstring(rel)?,
            flags: open_flags(kind, false).bits() as i32,
            mode: if creates { FILE_MODE } else { 0 },
        })
    }

    /// The ring, if it takes chains with slot ops.
    pub(super) fn chaining(&self) -> Option<&Uring> {
        self.uring.as_ref().filter(|ring| ring.chains())
    }

    /// Appends open of directory `rel`, its fsync and its close to `chain`.
    /// A failed fsync cancels the close and whatever follows (the ring
    /// thread closes what a chain leaves in its slot).
    pub(super) fn sync_dir_steps(&self, chain: Chain, rel: &str) -> io::Result<Chain> {
        Ok(chain
            .then(self.open_slot_op(rel, OpenKind::Directory)?)
            .then(Op::Fsync {
                file: File::Slot,
                datasync: false,
            })
            .then(Op::CloseSlot))
    }

    /// Reads a small file whole: open, one read of at most `cap` bytes,
    /// close; one submission where the ring chains, which also looks at
    /// `volume` (a `statx` ahead of the open), so that a missing file needs
    /// no second trip to tell a missing volume. A read that returns less
    /// than asked is taken as the end of the file, which holds for regular
    /// files on local file systems (the only files a drive reads this way).
    pub(crate) async fn read_small(
        &self,
        rel: &str,
        cap: usize,
        volume: &str,
    ) -> io::Result<SmallRead> {
        let cap = cap.max(1);
        // One scratch buffer, for the cached read or the backend's.
        let mut scratch = self.scratch.take(cap);
        if let Some(n) = self.read_cached(rel, 0, &mut scratch) {
            return self.small_result(scratch, Ok(n), cap);
        }
        let len = u32::try_from(cap).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let flags = open_flags(OpenKind::Read, false);
        let missing =
            |e: &io::Error| matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR));
        let read = match (&self.uring, self.chaining()) {
            (_, Some(ring)) => {
                let chain = Chain::new()
                    .always(self.statx_op(volume)?)
                    .then(self.open_slot_op(rel, OpenKind::Read)?)
                    // Hard link: a read that ends at end of file is "short"
                    // to the kernel, and the close must run anyway.
                    .always(Op::Read {
                        file: File::Slot,
                        buf: IoBuf::Heap(scratch),
                        offset: 0,
                        start: 0,
                        len,
                    })
                    .then(Op::CloseSlot);
                let mut steps = ring.submit_chain(chain).await?.into_iter();
                let volume = match steps.next() {
                    Some((result, Op::Statx { out, .. })) if result >= 0 => {
                        Some(uring::statx_result(&out).is_dir)
                    }
                    Some((result, _)) if matches!(-result, libc::ENOENT | libc::ENOTDIR) => {
                        Some(false)
                    }
                    _ => None,
                };
                match step_result(steps.next()) {
                    Err(e) if missing(&e) => return Ok(SmallRead::Missing(volume)),
                    other => other?,
                };
                match steps.next() {
                    Some((result, Op::Read { buf, .. })) => (buf.into_vec(), ring_result(result)),
                    _ => return Err(io::Error::other("ring returned another op")),
                }
            }
            (Some(_), None) => {
                let fd = match self.open(rel, OpenKind::Read, false).await {
                    Err(e) if missing(&e) => return Ok(SmallRead::Missing(None)),
                    other => other?,
                };
                let (buf, n) = self.read_at(&fd, IoBuf::Heap(scratch), 0, 0, cap).await?;
                (buf.into_vec(), n)
            }
            (None, None) => {
                let rel = at_path(rel).to_owned();
                let mut buf = scratch;
                let opened = self
                    .blocking
                    .run(move |root| {
                        let fd = match rustix::fs::openat(root, &rel, flags, Mode::empty()) {
                            Ok(fd) => fd,
                            Err(e) => return Ok(Err(io::Error::from(e))),
                        };
                        let n = rustix::io::read(&fd, &mut buf).map_err(io::Error::from);
                        Ok(Ok((buf, n)))
                    })
                    .await?;
                match opened {
                    Err(e) if missing(&e) => return Ok(SmallRead::Missing(None)),
                    other => other?,
                }
            }
        };
        let (buf, n) = read;
        self.small_result(buf, n, cap)
    }

    /// What a read of `n` bytes into the scratch buffer `buf` of `cap`
    /// bytes says of a small file (`buf` goes back to the scratch pool).
    fn small_result(
        &self,
        buf: Vec<u8>,
        n: io::Result<usize>,
        cap: usize,
    ) -> io::Result<SmallRead> {
        let result = match n {
            Ok(n) if n < cap => Ok(SmallRead::Whole(buf[..n].to_vec())),
            Ok(_) => Ok(SmallRead::Longer),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN)) => {
                Ok(SmallRead::Longer)
            }
            Err(e) => Err(e),
        };
        self.scratch.put(buf);
        result
    }

    /// Writes a small file durably into place in one submission where the
    /// ring chains: create `tmp` (exclusive), write `data`, `fdatasync`,
    /// close, with `make_dir` a `mkdir` of `to`'s parent directory `dir`,
    /// rename onto `to`, then open, fsync and close `dir`. The steps of the
    /// unchained path; reports how far the chain got so the caller can
    /// finish (or clean up) the long way, and whether the `mkdir` made
    /// `dir` (whose parent the caller must then sync).
    pub(crate) async fn write_small(
        &self,
        tmp: &str,
        data: Vec<u8>,
        to: &str,
        dir: &str,
        make_dir: bool,
    ) -> (Written, bool) {
        let Some(ring) = self.chaining() else {
            return (Written::NotCreated(data, None), false);
        };
        let Ok(len) = u32::try_from(data.len()) else {
            return (Written::NotCreated(data, None), false);
        };
        let steps = || -> io::Result<(Op, Option<Op>, Op)> {
            let mkdir = if make_dir {
                Some(self.mkdir_op(dir)?)
            } else {
                None
            };
            Ok((
                self.open_slot_op(tmp, OpenKind::CreateExclusive)?,
                mkdir,
                self.rename_op(tmp, to, RenameFlags::empty())?,
            ))
        };
        let (open, mkdir, rename) = match steps() {
            Ok(steps) => steps,
            Err(e) => return (Written::NotCreated(data, Some(e)), false),
        };
        let chain = create_with(open, data, len)
            .then(Op::Fsync {
                file: File::Slot,
                datasync: true,
            })
            .then(Op::CloseSlot);
        // Hard link: EEXIST (the usual answer) must not stop the rename.
        let chain = match mkdir {
            Some(mkdir) => chain.always(mkdir),
            None => chain,
        };
        let chain = chain.then(rename);
        let chain = match self.sync_dir_steps(chain, dir) {
            Ok(chain) => chain,
            Err(e) => return (Written::NotSynced(Some(e)), false),
        };
        let _change = self.blocking.ns.change();
        match ring.submit_chain(chain).await {
            Ok(steps) => written(steps, len, |open, sync| self.synced(open, sync)),
            // The ring stopped: whether the tmp file exists is unknown;
            // the caller removes it and reports the error.
            Err(e) => (Written::Failed("io_uring", Some(e), None), false),
        }
    }

    /// Creates file `tmp` (exclusively) holding `data`, without a sync:
    /// open, write and close in one chain, for a caller that makes it
    /// durable with others ([`LocalDriveConfig::group_commit`]).
    /// `Written::Done` once the file is written and closed; never
    /// `NotRenamed` or `NotSynced`.
    ///
    /// [`LocalDriveConfig::group_commit`]: crate::LocalDriveConfig::group_commit
    pub(crate) async fn stage_small(&self, tmp: &str, data: Vec<u8>) -> Written {
        let Some(ring) = self.chaining() else {
            return Written::NotCreated(data, None);
        };
        let Ok(len) = u32::try_from(data.len()) else {
            return Written::NotCreated(data, None);
        };
        let open = match self.open_slot_op(tmp, OpenKind::CreateExclusive) {
            Ok(op) => op,
            Err(e) => return Written::NotCreated(data, Some(e)),
        };
        let chain = create_with(open, data, len).then(Op::CloseSlot);
        let _change = self.blocking.ns.change();
        let steps = match ring.submit_chain(chain).await {
            Ok(steps) => steps,
            Err(e) => return Written::Failed("io_uring", Some(e), None),
        };
        let results: Vec<i32> = steps.iter().map(|(r, _)| *r).collect();
        let data = steps.into_iter().find_map(|(_, op)| match op {
            Op::Write { buf, .. } => Some(buf.into_vec()),
            _ => None,
        });
        let [open, write, close] = results[..] else {
            let e = io::Error::other("ring returned another chain");
            return Written::Failed("io_uring", Some(e), data);
        };
        match created(open, write, len, data) {
            Err(stopped) => stopped,
            Ok(data) if close < 0 => {
                Written::Failed("close", Some(io::Error::from_raw_os_error(-close)), data)
            }
            Ok(_) => Written::Done,
        }
    }

    /// Renames `from` onto `to` after making `to`'s parent `dir` (whose
    /// `EEXIST` does not stop the rename), in one chain and without a
    /// sync. `None` where the ring does not chain.
    pub(crate) async fn mkdir_rename(
        &self,
        from: &str,
        to: &str,
        dir: &str,
    ) -> Option<io::Result<()>> {
        let ring = self.chaining()?;
        let chain = || -> io::Result<Chain> {
            Ok(Chain::new()
                .always(self.mkdir_op(dir)?)
                .then(self.rename_op(from, to, RenameFlags::empty())?))
        };
        let chain = match chain() {
            Ok(chain) => chain,
            Err(e) => return Some(Err(e)),
        };
        let _change = self.blocking.ns.change();
        let mut steps = match ring.submit_chain(chain).await {
            Ok(steps) => steps.into_iter(),
            Err(e) => return Some(Err(e)),
        };
        let _mkdir = steps.next();
        Some(step_result(steps.next()).map(drop))
    }

    /// A rename and the syncs that make it durable, in one chain: `statx`
    /// of `from`, with `make_parent` a `mkdir` of `to`'s parent `dir`, the
    /// rename, open, fsync and close of `dir`, then the same of `to` (which
    /// only opens if it is a directory). `None` where the ring does not
    /// chain. The `statx` and `mkdir` do not stop the chain (the rename
    /// tells); a failed rename or sync stops it.
    pub(crate) async fn rename_synced(
        &self,
        from: &str,
        to: &str,
        dir: &str,
        make_parent: bool,
    ) -> Option<io::Result<RenameSynced>> {
        let ring = self.chaining()?;
        let chain = || -> io::Result<Chain> {
            let mut chain = Chain::new().always(self.statx_op(from)?);
            if make_parent {
                chain = chain.always(self.mkdir_op(dir)?);
            }
            let chain = chain.then(self.rename_op(from, to, RenameFlags::empty())?);
            let chain = self.sync_dir_steps(chain, dir)?;
            self.sync_dir_steps(chain, to)
        };
        let chain = match chain() {
            Ok(chain) => chain,
            Err(e) => return Some(Err(e)),
        };
        let _change = self.blocking.ns.change();
        let steps = match ring.submit_chain(chain).await {
            Ok(steps) => steps,
            Err(e) => return Some(Err(e)),
        };
        let mut steps = steps.into_iter();
        let src = match steps.next() {
            Some((result, Op::Statx { out, .. })) if result >= 0 => Ok(uring::statx_result(&out)),
            other => Err(step_result(other)
                .err()
                .unwrap_or_else(|| io::Error::other("statx"))),
        };
        let made = make_parent && steps.next().is_some_and(|(result, _)| result == 0);
        let renamed = step_result(steps.next()).map(drop);
        let mut result = || steps.next().map_or(-libc::ECANCELED, |(r, _)| r);
        let (parent_open, parent_sync, _) = (result(), result(), result());
        let (target_open, target_sync) = (result(), result());
        Some(Ok(RenameSynced {
            src,
            made,
            renamed,
            parent_synced: self.synced(parent_open, parent_sync),
            target_synced: self.synced(target_open, target_sync),
        }))
    }

    /// Creates (or truncates) file `rel` for writing after making the
    /// directories `dirs` (outermost first; `EEXIST` is fine), in one
    /// chain. `None` where the ring does not chain, or when the open
    /// failed (the caller takes the long path and reports what it finds).
    pub(crate) async fn open_in_new_dirs(
        &self,
        rel: &str,
        dirs: &[&str],
        direct: bool,
    ) -> Option<Fd> {
        let ring = self.chaining()?;
        if dirs.len() >= uring::MAX_CHAIN {
            return None;
        }
        let mut chain = Chain::new();
        for dir in dirs {
            chain = chain.always(self.mkdir_op(dir).ok()?);
        }
        let chain = chain.then(Op::OpenAt {
            dir: self.root(),
            path: cstring(rel).ok()?,
            flags: open_flags(OpenKind::CreateTruncate, direct).bits() as i32,
            mode: FILE_MODE,
        });
        let _change = self.blocking.ns.change();
        let (raw, _) = ring.submit_chain(chain).await.ok()?.pop()?;
        let fd = uring::owned_fd(u32::try_from(raw).ok()?).ok()?;
        Some(Fd {
            fd: Arc::new(fd),
            direct,
        })
    }
}

/// What [`Io::rename_synced`] did.
pub(crate) struct RenameSynced {
    /// What `statx` said of the source before the rename.
    pub(crate) src: io::Result<Stat>,
    /// Whether the `mkdir` of the target's parent made it.
    pub(crate) made: bool,
    /// The rename (`ECANCELED` when it did not run).
    pub(crate) renamed: io::Result<()>,
    /// The sync of the target's parent.
    pub(crate) parent_synced: Synced,
    /// The sync of the target itself (a directory; `NotRun` for a file).
    pub(crate) target_synced: Synced,
}

/// How a directory sync in a chain went.
pub(crate) enum Synced {
    Yes,
    /// The directory's open failed or the step did not run.
    NotRun,
    /// The fsync failed.
    Failed(io::Error),
}

fn synced(open: i32, sync: i32) -> Synced {
    if open < 0 {
        Synced::NotRun
    } else if sync < 0 {
        Synced::Failed(io::Error::from_raw_os_error(-sync))
    } else {
        Synced::Yes
    }
}

/// What [`Io::read_small`] found.
pub(crate) enum SmallRead {
    /// The whole file.
    Whole(Vec<u8>),
    /// The read filled the buffer (the file may be longer) or was
    /// interrupted: the caller reads it the long way.
    Longer,
    /// No such file (`ENOENT`, `ENOTDIR`); whether its volume exists, when
    /// the chain looked.
    Missing(Option<bool>),
}

/// How far [`Io::write_small`] got.
pub(crate) enum Written {
    /// Nothing was created: chains are not available here (`None`), or
    /// the temporary file's creation failed (the error). The data back.
    NotCreated(Vec<u8>, Option<io::Error>),
    /// The temporary file exists but its write or sync failed (the system
    /// call and its error; `None` for a short write, which the long path
    /// retries), or the ring stopped. The caller removes it; the data back
    /// if the ring gave it.
    Failed(&'static str, Option<io::Error>, Option<Vec<u8>>),
    /// The data is durable in the temporary file; the rename failed (for
    /// instance, more than one level of the target's parents is missing)
    /// or did not run.
    NotRenamed,
    /// Renamed into place; the parent's fsync failed (`Some`) or its open
    /// failed and the sync did not run (`None`).
    NotSynced(Option<io::Error>),
    Done,
}

/// Reads [`Io::write_small`]'s step results: what the chain got done, and
/// whether its `mkdir` made the directory. The directory's sync is read
/// by `dir_synced` (`Io::synced`, which counts a failed one).
fn written(
    steps: Vec<StepResult>,
    len: u32,
    dir_synced: impl FnOnce(i32, i32) -> Synced,
) -> (Written, bool) {
    let mut results: Vec<i32> = steps.iter().map(|(r, _)| *r).collect();
    let mkdir = steps
        .iter()
        .position(|(_, op)| matches!(op, Op::MkDirAt { .. }));
    let made = mkdir.is_some_and(|i| results.remove(i) == 0);
    let data = steps.into_iter().find_map(|(_, op)| match op {
        Op::Write { buf, .. } => Some(buf.into_vec()),
        _ => None,
    });
    let err = |r: i32| io::Error::from_raw_os_error(-r);
    let [
        open,
        write,
        sync,
        _close,
        rename,
        dir_open,
        dir_sync,
        _dir_close,
    ] = results[..]
    else {
        let e = io::Error::other("ring returned another chain");
        return (Written::Failed("io_uring", Some(e), data), made);
    };
    let written = match created(open, write, len, data) {
        Err(stopped) => stopped,
        Ok(data) if sync < 0 => Written::Failed("fdatasync", Some(err(sync)), data),
        // (A failed close of a synced file only cancelled the rename.)
        Ok(_) if rename < 0 => Written::NotRenamed,
        Ok(_) => match dir_synced(dir_open, dir_sync) {
            Synced::Yes => Written::Done,
            Synced::NotRun => Written::NotSynced(None),
            Synced::Failed(e) => Written::NotSynced(Some(e)),
        },
    };
    (written, made)
}

/// A chain's first steps: `open` (a create into the chain's file slot),
/// then one write of `data`, `len` bytes, at offset 0.
fn create_with(open: Op, data: Vec<u8>, len: u32) -> Chain {
    Chain::new().then(open).then(Op::Write {
        file: File::Slot,
        buf: IoBuf::Heap(data),
        offset: 0,
        start: 0,
        len,
    })
}

/// Reads the create and write steps of a chain that makes a file holding
/// `len` bytes of `data`: the data back (as the ring returned it) if both
/// went through, otherwise what stopped them.
fn created(
    open: i32,
    write: i32,
    len: u32,
    data: Option<Vec<u8>>,
) -> Result<Option<Vec<u8>>, Written> {
    let err = |r: i32| io::Error::from_raw_os_error(-r);
    if open < 0 {
        Err(match data {
            Some(data) => Written::NotCreated(data, Some(err(open))),
            None => Written::Failed("openat", Some(err(open)), None),
        })
    } else if write < 0 {
        Err(Written::Failed("write", Some(err(write)), data))
    } else if write.unsigned_abs() != len {
        Err(Written::Failed("write", None, data))
    } else {
        Ok(data)
    }
}

/// A chain step's result as an `io::Result` (`ECANCELED` for a step that
/// did not run, or for a missing step).
pub(super) fn step_result(step: Option<StepResult>) -> io::Result<u32> {
    match step {
        Some((result, _)) if result >= 0 => Ok(result.unsigned_abs()),
        Some((result, _)) => Err(io::Error::from_raw_os_error(-result)),
        None => Err(io::Error::from_raw_os_error(libc::ECANCELED)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::io_on;
    use super::*;

    #[tokio::test]
    async fn only_failed_directory_syncs_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let io = io_on(dir.path(), false);
        io.sync_dir("sub").await.unwrap();
        assert_eq!(io.dir_sync_failures(), 0);
        // A directory that is not there: its open failed, nothing was
        // written back, nothing lost.
        assert!(io.sync_dir("missing").await.is_err());
        assert_eq!(io.dir_sync_failures(), 0);
        // A chain's results: only a failed fsync counts.
        assert!(matches!(io.synced(3, 0), Synced::Yes));
        assert!(matches!(
            io.synced(-libc::ENOENT, -libc::ECANCELED),
            Synced::NotRun
        ));
        assert_eq!(io.dir_sync_failures(), 0);
        assert!(matches!(io.synced(3, -libc::EIO), Synced::Failed(_)));
        assert_eq!(io.dir_sync_failures(), 1);
    }
}

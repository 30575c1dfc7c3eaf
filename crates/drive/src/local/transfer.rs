//! Whole transfers on data files: `O_DIRECT` where wanted and accepted,
//! the switch to buffered I/O where the file system refuses it, and the
//! retries of interrupted reads and writes.

use std::io as stdio;
use std::sync::atomic::Ordering;

use rustix::fs::OFlags;

use super::io::{Fd, IoBuf, OpenKind};
use super::{Inner, errno};
use crate::drive::IoMode;
use crate::error::{Ctx, DriveError, Result};

/// Retries of EINTR/EAGAIN on a read or write.
const TRANSIENT_RETRIES: usize = 16;

impl Inner {
    /// Whether to open shard data with O_DIRECT.
    pub(super) fn want_direct(&self) -> bool {
        self.io.uring.is_some() && self.direct_ok.load(Ordering::Relaxed)
    }

    /// Opens a data file, O_DIRECT when wanted, falling back to buffered I/O
    /// (for this and every later file) if the file system refuses it.
    pub(super) async fn open_data(
        &self,
        rel: &str,
        kind: OpenKind,
        direct: bool,
    ) -> stdio::Result<Fd> {
        if !direct {
            return self.io.open(rel, kind, false).await;
        }
        let attempt = if self.cfg.refuse_direct_io_for_tests {
            Err(stdio::Error::from_raw_os_error(libc::EINVAL))
        } else {
            self.io.open(rel, kind, true).await
        };
        match attempt {
            Err(e) if errno(&e) == libc::EINVAL => {
                if self.direct_ok.swap(false, Ordering::Relaxed) {
                    tracing::info!(root = %self.root.display(), "file system refuses O_DIRECT; using buffered I/O");
                }
                self.io.open(rel, kind, false).await
            }
            other => other,
        }
    }

    /// Reacts to EINVAL on a direct transfer (a file system that accepted
    /// O_DIRECT at open but not our alignment): clears O_DIRECT on the
    /// descriptor so the retry is buffered.
    fn drop_direct(&self, fd: &Fd) -> bool {
        let Ok(flags) = rustix::fs::fcntl_getfl(&*fd.fd) else {
            return false;
        };
        if !flags.contains(OFlags::DIRECT) {
            return false;
        }
        if self.direct_ok.swap(false, Ordering::Relaxed) {
            tracing::warn!(root = %self.root.display(), "O_DIRECT transfer refused; using buffered I/O");
        }
        rustix::fs::fcntl_setfl(&*fd.fd, flags - OFlags::DIRECT).is_ok()
    }

    /// Writes `buf`'s region `start..start + len` at `offset` completely.
    pub(super) async fn write_full(
        &self,
        fd: &Fd,
        mut buf: IoBuf,
        start: usize,
        len: usize,
        offset: u64,
    ) -> Result<IoBuf> {
        let mut done = 0usize;
        let mut retries = 0usize;
        while done < len {
            let (back, result) = self
                .io
                .write_at(fd, buf, offset + done as u64, start + done, len - done)
                .await
                .map_err(|e| self.map("write", Ctx::Write, e))?;
            buf = back;
            match result {
                Ok(0) => {
                    return Err(DriveError::Io {
                        op: "write",
                        source: stdio::ErrorKind::WriteZero.into(),
                    });
                }
                Ok(n) => done += n,
                Err(e)
                    if retries < TRANSIENT_RETRIES
                        && matches!(errno(&e), libc::EINTR | libc::EAGAIN) =>
                {
                    retries += 1;
                }
                Err(e)
                    if retries < TRANSIENT_RETRIES
                        && errno(&e) == libc::EINVAL
                        && self.drop_direct(fd) =>
                {
                    retries += 1;
                }
                Err(e) => return Err(self.map("write", Ctx::Write, e)),
            }
        }
        Ok(buf)
    }

    /// Reads into `buf`'s region `start..start + len` from `offset` until
    /// full or end of file; returns the bytes read.
    pub(super) async fn read_full(
        &self,
        fd: &Fd,
        mut buf: IoBuf,
        start: usize,
        len: usize,
        offset: u64,
    ) -> Result<(IoBuf, usize)> {
        let mut done = 0usize;
        let mut retries = 0usize;
        while done < len {
            let (back, result) = self
                .io
                .read_at(fd, buf, offset + done as u64, start + done, len - done)
                .await
                .map_err(|e| self.map("read", Ctx::Read, e))?;
            buf = back;
            match result {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e)
                    if retries < TRANSIENT_RETRIES
                        && matches!(errno(&e), libc::EINTR | libc::EAGAIN) =>
                {
                    retries += 1;
                }
                Err(e)
                    if retries < TRANSIENT_RETRIES
                        && errno(&e) == libc::EINVAL
                        && self.drop_direct(fd) =>
                {
                    retries += 1;
                }
                Err(e) => return Err(self.map("read", Ctx::Read, e)),
            }
        }
        Ok((buf, done))
    }
}

pub(super) fn io_mode_of(fd: &Fd) -> Result<IoMode> {
    let flags = rustix::fs::fcntl_getfl(&*fd.fd).map_err(|e| DriveError::Io {
        op: "fcntl F_GETFL",
        source: e.into(),
    })?;
    Ok(if flags.contains(OFlags::DIRECT) {
        IoMode::Direct
    } else {
        IoMode::Buffered
    })
}

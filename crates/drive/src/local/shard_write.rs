//! Shard files written as streams ([`ShardWriter`]): the file opened
//! (`O_DIRECT` where it can be) and preallocated, whole blocks written
//! straight from the caller's buffers, unaligned tails staged, the last
//! block padded and cut back, the data synced at `finish`.

use std::io as stdio;
use std::sync::Arc;

#[cfg(doc)]
use super::LocalDrive;
use super::io::{Fd, IoBuf, MAX_IOVECS, OpenKind};
use super::transfer::io_mode_of;
use super::{Inner, RACE_RETRIES, errno};
use crate::buf::{ALIGN, AlignedBuf, align_up};
use crate::drive::{BoxFuture, IoMode, ShardWriter};
use crate::error::{Ctx, DriveError, Result};
use crate::format::TMP_VOLUME;
use crate::path::{self, parent};

impl Inner {
    pub(super) async fn create_file(
        self: &Arc<Self>,
        volume: &str,
        path: &str,
        expected: Option<u64>,
    ) -> Result<LocalWriter> {
        let rel = path::join(volume, path)?;
        if let Some(size) = expected
            && size > self.cfg.max_file_size
        {
            return Err(DriveError::TooLarge {
                size,
                limit: self.cfg.max_file_size,
            });
        }
        let direct = self.want_direct();
        let mut opened = None;
        // A new upload's shard in the temporary area: its directories are
        // made in the same chain as the file's open.
        if volume == TMP_VOLUME {
            let mut dirs: Vec<&str> = std::iter::successors(parent(&rel), |d| parent(d))
                .take_while(|d| *d != TMP_VOLUME)
                .collect();
            dirs.reverse();
            opened = self.io.open_in_new_dirs(&rel, &dirs, direct).await;
        }
        for _ in 0..RACE_RETRIES {
            if opened.is_some() {
                break;
            }
            match self.open_data(&rel, OpenKind::CreateTruncate, direct).await {
                Ok(fd) => {
                    opened = Some(fd);
                    break;
                }
                Err(e) if errno(&e) == libc::ENOENT => match parent(&rel) {
                    Some(dir) => self.mkdir_all(Some(volume), dir).await?,
                    None => return Err(DriveError::VolumeNotFound),
                },
                Err(e) => return Err(self.map("openat", Ctx::Write, e)),
            }
        }
        let fd = opened.ok_or_else(|| DriveError::Io {
            op: "openat",
            source: stdio::Error::other("raced with concurrent deletes"),
        })?;
        if let Some(size) = expected.filter(|&s| s > 0) {
            match self.io.fallocate(&fd, size).await {
                Ok(()) => {}
                Err(e) if matches!(errno(&e), libc::ENOSPC | libc::EDQUOT) => {
                    return Err(DriveError::DriveFull);
                }
                // Preallocation is an optimisation: file systems without it
                // (EOPNOTSUPP, ENOSYS, EINVAL) just write.
                Err(_) => {}
            }
        }
        Ok(LocalWriter {
            inner: Arc::clone(self),
            direct: fd.direct,
            fd: Some(fd),
            file_offset: 0,
            accepted: 0,
            staging: None,
            expected,
            padded: false,
            poisoned: false,
        })
    }
}

/// Streaming writer of a [`LocalDrive`]; see [`ShardWriter`].
pub(super) struct LocalWriter {
    inner: Arc<Inner>,
    fd: Option<Fd>,
    /// Whether the file was opened with O_DIRECT (writes stay aligned).
    direct: bool,
    /// Bytes written to the file so far (a multiple of ALIGN while direct).
    file_offset: u64,
    /// Bytes accepted from the caller (file_offset + staged).
    accepted: u64,
    staging: Option<AlignedBuf>,
    expected: Option<u64>,
    /// The last write went to disk padded to a whole block: the file is
    /// longer than `accepted` until `finish` cuts it back.
    padded: bool,
    poisoned: bool,
}

impl LocalWriter {
    fn fd(&self) -> Result<Fd> {
        self.fd.clone().ok_or(DriveError::Poisoned)
    }

    /// The bytes accepted once `n` more are: refused beyond the announced
    /// size or the drive's file size limit.
    fn check_size(&self, n: u64) -> Result<u64> {
        let total = self.accepted.saturating_add(n);
        if let Some(expected) = self.expected
            && total > expected
        {
            return Err(DriveError::SizeMismatch {
                expected,
                actual: total,
            });
        }
        if total > self.inner.cfg.max_file_size {
            return Err(DriveError::TooLarge {
                size: total,
                limit: self.inner.cfg.max_file_size,
            });
        }
        Ok(total)
    }

    async fn write_impl(&mut self, mut buf: AlignedBuf) -> Result<AlignedBuf> {
        if self.poisoned {
            return Err(DriveError::Poisoned);
        }
        let n = buf.len() as u64;
        let total = self.check_size(n)?;
        if n == 0 {
            return Ok(buf);
        }
        // Cleared only if this call completes: a failure, or the future
        // being dropped half-way, leaves the file in an unknown state.
        self.poisoned = true;
        let fd = self.fd()?;
        let staged = self.staging.as_ref().map_or(0, |s| s.len());
        if !self.direct || (staged == 0 && buf.len().is_multiple_of(ALIGN)) {
            // Zero-copy: straight from the caller's buffer.
            let len = buf.len();
            let back = self
                .inner
                .write_full(&fd, IoBuf::Aligned(buf), 0, len, self.file_offset)
                .await?;
            buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
            self.file_offset += n;
        } else if staged == 0 && self.expected == Some(total) {
            // The file's last bytes, nothing staged: straight from the
            // caller's buffer, padded with zeros to a whole block inside its
            // (aligned) capacity; `finish` cuts the file back to its size.
            let len = buf.len();
            let padded = align_up(len);
            buf.capacity_mut()[len..padded].fill(0);
            let back = self
                .inner
                .write_full(&fd, IoBuf::Aligned(buf), 0, padded, self.file_offset)
                .await?;
            buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
            self.file_offset += n;
            self.padded = padded != len;
        } else if staged == 0 && buf.len() > ALIGN {
            // Nothing staged: the whole blocks go straight from the
            // caller's buffer, only the tail (under one block) is staged.
            let head = buf.len() & !(ALIGN - 1);
            let back = self
                .inner
                .write_full(&fd, IoBuf::Aligned(buf), 0, head, self.file_offset)
                .await?;
            buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
            self.file_offset += head as u64;
            let mut staging = self.inner.staging.get().await?;
            staging.extend_from_slice(&buf[head..]);
            self.staging = Some(staging);
        } else {
            let mut consumed = 0;
            while consumed < buf.len() {
                let mut staging = match self.staging.take() {
                    Some(staging) => staging,
                    None => self.inner.staging.get().await?,
                };
                consumed += staging.extend_from_slice(&buf[consumed..]);
                if staging.remaining() == 0 {
                    let len = staging.len();
                    let back = self
                        .inner
                        .write_full(&fd, IoBuf::Aligned(staging), 0, len, self.file_offset)
                        .await?;
                    staging = back.into_aligned().ok_or(DriveError::BackendStopped)?;
                    self.file_offset += len as u64;
                    staging.clear();
                }
                self.staging = Some(staging);
            }
        }
        self.accepted = total;
        self.poisoned = false;
        buf.clear();
        Ok(buf)
    }

    /// [`write_impl`](Self::write_impl) for each buffer, except that a run
    /// of two or more buffers that can go straight from the caller's memory
    /// (whole blocks while direct, nothing staged) goes in one vectored
    /// write; what that write leaves unwritten goes buffer by buffer.
    async fn write_many_impl(&mut self, bufs: Vec<AlignedBuf>) -> Result<Vec<AlignedBuf>> {
        let staged = self.staging.as_ref().map_or(0, |s| s.len());
        let run = if self.direct && staged != 0 {
            0
        } else {
            bufs.iter()
                .take(MAX_IOVECS)
                .take_while(|b| !self.direct || b.len().is_multiple_of(ALIGN))
                .count()
        };
        let n = bufs.len();
        let mut bufs = bufs.into_iter();
        let mut out = if run >= 2 {
            self.write_vectored(bufs.by_ref().take(run).collect())
                .await?
        } else {
            Vec::with_capacity(n)
        };
        for buf in bufs {
            out.push(self.write_impl(buf).await?);
        }
        Ok(out)
    }

    /// Writes `bufs` (each ready to go from its own memory) back to back
    /// with one `pwritev`, finishing what it leaves with
    /// [`Inner::write_full`] per buffer.
    async fn write_vectored(&mut self, bufs: Vec<AlignedBuf>) -> Result<Vec<AlignedBuf>> {
        if self.poisoned {
            return Err(DriveError::Poisoned);
        }
        let n: u64 = bufs.iter().map(|b| b.len() as u64).sum();
        let total = self.check_size(n)?;
        // Cleared only if this call completes, as in `write_impl`.
        self.poisoned = true;
        let fd = self.fd()?;
        let (bufs, result) = self
            .inner
            .io
            .write_vectored_at(&fd, bufs, self.file_offset)
            .await
            .map_err(|e| self.inner.map("pwritev", Ctx::Write, e))?;
        let mut skip = match result {
            Ok(done) => done,
            // Retried (or, for O_DIRECT refused, made buffered) per buffer.
            Err(e) if matches!(errno(&e), libc::EINTR | libc::EAGAIN | libc::EINVAL) => 0,
            Err(e) => return Err(self.inner.map("pwritev", Ctx::Write, e)),
        };
        let mut out = Vec::with_capacity(bufs.len());
        let mut at = self.file_offset;
        for buf in bufs {
            let len = buf.len();
            let mut buf = if skip >= len {
                skip -= len;
                buf
            } else {
                let back = self
                    .inner
                    .write_full(&fd, IoBuf::Aligned(buf), skip, len - skip, at + skip as u64)
                    .await?;
                skip = 0;
                back.into_aligned().ok_or(DriveError::BackendStopped)?
            };
            at += len as u64;
            buf.clear();
            out.push(buf);
        }
        self.file_offset += n;
        self.accepted = total;
        self.poisoned = false;
        Ok(out)
    }

    async fn finish_impl(mut self) -> Result<u64> {
        if self.poisoned {
            return Err(DriveError::Poisoned);
        }
        self.poisoned = true;
        let fd = self.fd()?;
        if let Some(mut staging) = self.staging.take()
            && !staging.is_empty()
        {
            // O_DIRECT needs whole blocks: write the tail padded with zeros,
            // then cut the file back to its real size.
            let tail = staging.len();
            let padded = align_up(tail);
            staging.capacity_mut()[tail..padded].fill(0);
            self.inner
                .write_full(&fd, IoBuf::Aligned(staging), 0, padded, self.file_offset)
                .await?;
            self.file_offset += tail as u64;
            if padded != tail {
                self.inner
                    .io
                    .truncate(&fd, self.accepted)
                    .await
                    .map_err(|e| self.inner.map("ftruncate", Ctx::Write, e))?;
            }
        }
        if self.padded {
            self.inner
                .io
                .truncate(&fd, self.accepted)
                .await
                .map_err(|e| self.inner.map("ftruncate", Ctx::Write, e))?;
        }
        if let Some(expected) = self.expected
            && expected != self.accepted
        {
            return Err(DriveError::SizeMismatch {
                expected,
                actual: self.accepted,
            });
        }
        self.inner
            .io
            .sync(&fd, true)
            .await
            .map_err(|e| self.inner.map("fdatasync", Ctx::Write, e))?;
        self.fd = None;
        Ok(self.accepted)
    }
}

impl ShardWriter for LocalWriter {
    fn write(&mut self, buf: AlignedBuf) -> BoxFuture<'_, Result<AlignedBuf>> {
        Box::pin(async move {
            let result = self.write_impl(buf).await;
            self.inner.health.record(&result);
            result
        })
    }

    fn write_many(&mut self, bufs: Vec<AlignedBuf>) -> BoxFuture<'_, Result<Vec<AlignedBuf>>> {
        Box::pin(async move {
            let result = self.write_many_impl(bufs).await;
            self.inner.health.record(&result);
            result
        })
    }

    fn finish(self: Box<Self>) -> BoxFuture<'static, Result<u64>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let result = self.finish_impl().await;
            inner.health.record(&result);
            result
        })
    }

    fn written(&self) -> u64 {
        self.accepted
    }

    fn io_mode(&self) -> Result<IoMode> {
        io_mode_of(&self.fd()?)
    }
}

//! Shard files read: positioned reads ([`Drive::read_file_at`], served
//! from the caches on the calling thread where they can be), stream
//! readers with read-ahead ([`ShardReader`]), and files opened once for
//! many reads ([`ShardFile`]) that fill the page cache in huge folios.

use std::collections::VecDeque;
use std::io as stdio;
use std::os::fd::AsFd;
use std::sync::{Arc, OnceLock};

use super::io::{Fd, HUGE_FOLIO, IoBuf, OpenKind};
use super::transfer::io_mode_of;
use super::{Inner, errno};
use crate::buf::{ALIGN, AlignedBuf, align_up};
use crate::drive::{BoxFuture, IoMode, ShardFile, ShardReader};
use crate::error::{Ctx, DriveError, Result};
use crate::path;
use crate::pipe::Pipe;
#[cfg(doc)]
use {
    super::io::Io,
    super::{LocalDrive, LocalDriveConfig},
    crate::drive::Drive,
};

impl Inner {
    /// [`Drive::read_file_at`], and with `piped`,
    /// [`Drive::read_file_at_piped`]'s pipe where the page cache gives one.
    pub(super) async fn read_range(
        &self,
        volume: &str,
        path: &str,
        offset: u64,
        len: usize,
        mut buf: AlignedBuf,
        piped: bool,
    ) -> Result<(AlignedBuf, usize, Option<Pipe>)> {
        let rel = path::join(volume, path)?;
        check_range(offset, len, &buf)?;
        let skip = (offset % ALIGN as u64) as usize;
        let span = align_up(skip + len);
        // O_DIRECT needs the aligned span around the range to fit the buffer.
        let direct = self.want_direct() && self.cfg.direct_read_at && span <= buf.capacity();
        if !direct
            && let Some((n, pipe)) = self.io.read_cached_piped(
                &rel,
                offset,
                &mut buf.capacity_mut()[..len],
                piped.then_some(&self.pipes),
            )
        {
            buf.set_len(n);
            return Ok((buf, n, pipe));
        }
        let fd = self.open_read(&rel, volume, direct).await?;
        if len == 0 {
            buf.clear();
            return Ok((buf, 0, None));
        }
        if !fd.direct {
            let (buf, n) = self.read_buffered(&fd, buf, len, offset).await?;
            return Ok((buf, n, None));
        }
        let (back, got) = self
            .read_full(&fd, IoBuf::Aligned(buf), 0, span, offset - skip as u64)
            .await?;
        buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
        let n = got.saturating_sub(skip).min(len);
        buf.capacity_mut().copy_within(skip..skip + n, 0);
        buf.set_len(n);
        Ok((buf, n, None))
    }

    /// Opens `rel` (in `volume`) to read it, with `O_DIRECT` if `direct`;
    /// a missing file or volume, or a directory, as the drive's errors.
    async fn open_read(&self, rel: &str, volume: &str, direct: bool) -> Result<Fd> {
        match self.open_data(rel, OpenKind::Read, direct).await {
            Ok(fd) => Ok(fd),
            Err(e) if matches!(errno(&e), libc::ENOENT | libc::ENOTDIR) => {
                Err(self.not_found(volume).await)
            }
            Err(e) if errno(&e) == libc::EISDIR => Err(DriveError::IsDirectory),
            Err(e) => Err(self.map("openat", Ctx::Read, e)),
        }
    }

    /// `len` bytes at `offset` of the buffered file `fd` into `buf` (fewer
    /// only at end of file), through the backend.
    async fn read_buffered(
        &self,
        fd: &Fd,
        buf: AlignedBuf,
        len: usize,
        offset: u64,
    ) -> Result<(AlignedBuf, usize)> {
        let (back, got) = self
            .read_full(fd, IoBuf::Aligned(buf), 0, len, offset)
            .await?;
        let mut buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
        buf.set_len(got);
        Ok((buf, got))
    }

    /// Opens `volume/path` for [`ShardFile`] reads: by name from the
    /// dentry cache when it can (no trip to the ring), else through the
    /// backend. `None` where shard data is read with `O_DIRECT`
    /// (`direct_read_at`): those reads go by path, aligned.
    pub(super) async fn open_shard_file(
        self: &Arc<Self>,
        volume: &str,
        path: &str,
    ) -> Result<Option<Arc<dyn ShardFile>>> {
        let rel = path::join(volume, path)?;
        if self.want_direct() && self.cfg.direct_read_at {
            return Ok(None);
        }
        let fd = match self.io.open_cached(&rel) {
            Some(fd) => Fd {
                fd: Arc::new(fd),
                direct: false,
            },
            None => self.open_read(&rel, volume, false).await?,
        };
        Ok(Some(Arc::new(LocalShardFile {
            inner: Arc::clone(self),
            fd,
            huge: OnceLock::new(),
            filled: tokio::sync::Mutex::new(0..0),
        })))
    }

    pub(super) async fn open_reader(
        self: &Arc<Self>,
        volume: &str,
        path: &str,
        offset: u64,
        len: Option<u64>,
    ) -> Result<LocalReader> {
        let rel = path::join(volume, path)?;
        let fd = match self
            .open_data(&rel, OpenKind::Read, self.want_direct())
            .await
        {
            Ok(fd) => fd,
            Err(e) if matches!(errno(&e), libc::ENOENT | libc::ENOTDIR) => {
                return Err(self.not_found(volume).await);
            }
            Err(e) => return Err(self.map("openat", Ctx::Read, e)),
        };
        let st = self
            .io
            .fstat(&fd)
            .await
            .map_err(|e| self.map("statx", Ctx::Read, e))?;
        if st.is_dir {
            return Err(DriveError::IsDirectory);
        }
        let len = len.unwrap_or(st.size.saturating_sub(offset));
        let out_of_range = DriveError::OutOfRange {
            offset,
            len,
            size: st.size,
        };
        let end = offset
            .checked_add(len)
            .ok_or(DriveError::InvalidArgument("offset + len overflows".into()))?;
        if end > st.size {
            return Err(out_of_range);
        }
        Ok(LocalReader {
            inner: Arc::clone(self),
            fd,
            pos: offset,
            end,
            poisoned: false,
            ahead: VecDeque::new(),
            next_fetch: 0,
            current: None,
        })
    }
}

/// Streaming reader of a [`LocalDrive`]; see [`ShardReader`].
pub(super) struct LocalReader {
    inner: Arc<Inner>,
    fd: Fd,
    pos: u64,
    end: u64,
    poisoned: bool,
    /// Read-ahead chunks in flight (O_DIRECT only), in file order.
    ahead: VecDeque<tokio::task::JoinHandle<Result<Fetched>>>,
    /// File offset (aligned) of the next chunk to fetch.
    next_fetch: u64,
    /// The chunk being consumed.
    current: Option<Fetched>,
}

/// A read-ahead chunk: file bytes `start..start + valid` in `buf`.
struct Fetched {
    buf: AlignedBuf,
    start: u64,
    valid: usize,
}

impl Fetched {
    fn end(&self) -> u64 {
        self.start + self.valid as u64
    }
}

impl LocalReader {
    /// Starts chunk reads until `readahead_chunks` are in flight, the range
    /// is covered, or the drive's read-ahead buffers run out.
    fn top_up(&mut self) {
        while self.ahead.len() < self.inner.cfg.readahead_chunks && self.next_fetch < self.end {
            let Some(Ok(chunk)) = self.inner.readahead.try_get() else {
                break;
            };
            let start = self.next_fetch;
            let left = self.end - start;
            let want = if left < chunk.capacity() as u64 {
                align_up(left as usize)
            } else {
                chunk.capacity()
            };
            let inner = Arc::clone(&self.inner);
            let fd = self.fd.clone();
            self.ahead.push_back(tokio::spawn(async move {
                let (back, got) = inner
                    .read_full(&fd, IoBuf::Aligned(chunk), 0, want, start)
                    .await?;
                let buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
                Ok(Fetched {
                    buf,
                    start,
                    valid: got,
                })
            }));
            self.next_fetch = start + want as u64;
        }
    }

    /// Serves the caller from read-ahead chunks. Returns the buffer and
    /// `false` (nothing served) when no chunk is available because the
    /// read-ahead buffers ran out: the caller then reads directly.
    async fn read_ahead(&mut self, mut buf: AlignedBuf) -> Result<(AlignedBuf, bool)> {
        if self.current.as_ref().is_some_and(|c| self.pos >= c.end()) {
            self.current = None;
        }
        if self.current.is_none() && self.ahead.is_empty() {
            self.next_fetch = self.pos - self.pos % ALIGN as u64;
        }
        self.top_up();
        buf.clear();
        while self.pos < self.end && buf.remaining() > 0 {
            if self.current.is_none() {
                let Some(pending) = self.ahead.pop_front() else {
                    break;
                };
                let fetched = pending.await.map_err(|e| DriveError::Io {
                    op: "read-ahead",
                    source: stdio::Error::other(e.to_string()),
                })??;
                if fetched.end() <= self.pos {
                    // The file shrank under us.
                    return Err(DriveError::OutOfRange {
                        offset: self.pos,
                        len: self.end - self.pos,
                        size: fetched.end(),
                    });
                }
                self.current = Some(fetched);
                self.top_up();
            }
            let Some(current) = &self.current else { break };
            let from = (self.pos - current.start) as usize;
            let until = (current.end().min(self.end) - current.start) as usize;
            let taken = buf.extend_from_slice(&current.buf.capacity_slice()[from..until]);
            self.pos += taken as u64;
            if self.pos >= current.end() {
                self.current = None;
            }
        }
        let served = !buf.is_empty();
        Ok((buf, served))
    }

    async fn read_impl(&mut self, mut buf: AlignedBuf) -> Result<AlignedBuf> {
        if self.poisoned {
            return Err(DriveError::Poisoned);
        }
        let remaining = self.end - self.pos;
        if remaining == 0 {
            buf.clear();
            return Ok(buf);
        }
        self.poisoned = true;
        if self.fd.direct && self.inner.cfg.readahead_chunks > 0 {
            let (back, served) = self.read_ahead(buf).await?;
            if served {
                self.poisoned = false;
                return Ok(back);
            }
            buf = back;
        }
        let capacity = buf.capacity();
        let remaining_usize = usize::try_from(remaining).unwrap_or(usize::MAX);
        let n = if self.fd.direct {
            let skip = (self.pos % ALIGN as u64) as usize;
            let span = capacity.min(align_up(skip.saturating_add(remaining_usize)));
            let (back, got) = self
                .inner
                .read_full(
                    &self.fd,
                    IoBuf::Aligned(buf),
                    0,
                    span,
                    self.pos - skip as u64,
                )
                .await?;
            buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
            let n = got.saturating_sub(skip).min(remaining_usize);
            buf.capacity_mut().copy_within(skip..skip + n, 0);
            n
        } else {
            let want = capacity.min(remaining_usize);
            let (back, got) = self
                .inner
                .read_full(&self.fd, IoBuf::Aligned(buf), 0, want, self.pos)
                .await?;
            buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
            got
        };
        if n == 0 {
            // The file shrank under us.
            return Err(DriveError::OutOfRange {
                offset: self.pos,
                len: remaining,
                size: self.pos,
            });
        }
        buf.set_len(n);
        self.pos += n as u64;
        self.poisoned = false;
        Ok(buf)
    }
}

impl ShardReader for LocalReader {
    fn read(&mut self, buf: AlignedBuf) -> BoxFuture<'_, Result<AlignedBuf>> {
        Box::pin(async move {
            let result = self.read_impl(buf).await;
            self.inner.health.record(&result);
            result
        })
    }

    fn remaining(&self) -> u64 {
        self.end - self.pos
    }

    fn io_mode(&self) -> Result<IoMode> {
        io_mode_of(&self.fd)
    }
}

/// Refuses a positioned read of `len` bytes at `offset` into `buf` that
/// `buf` cannot hold or whose end overflows.
fn check_range(offset: u64, len: usize, buf: &AlignedBuf) -> Result<()> {
    if len > buf.capacity() {
        return Err(DriveError::InvalidArgument(format!(
            "read of {len} bytes into a buffer of {} bytes",
            buf.capacity()
        )));
    }
    offset
        .checked_add(len as u64)
        .ok_or_else(|| DriveError::InvalidArgument("offset + len overflows".into()))?;
    Ok(())
}

/// A shard file open for reads at any offset ([`Drive::open_shard_file`]).
struct LocalShardFile {
    inner: Arc<Inner>,
    fd: Fd,
    /// Whether reads fill the page cache in huge folios first
    /// ([`LocalDriveConfig::huge_fill`]), decided at the first read: when
    /// its range was not all cached.
    huge: OnceLock<bool>,
    /// The part of the file the reads through this descriptor filled so
    /// far (whole chunks of [`HUGE_FOLIO`] bytes, cut at the end of the
    /// file). A read inside it goes straight to the cache; the lock makes
    /// concurrent reads of a cold file fill it in turn, each finding what
    /// the one before it brought in.
    filled: tokio::sync::Mutex<std::ops::Range<u64>>,
}

impl LocalShardFile {
    /// Brings the [`HUGE_FOLIO`] chunks holding `offset..end` into the page
    /// cache ([`Io::fill_huge`]), from where the filled range ends if the
    /// read starts inside it. A failed fill is left to the read that
    /// follows, which goes to the disk and reports any error.
    async fn fill(&self, offset: u64, end: u64) {
        let mut filled = self.filled.lock().await;
        if filled.start <= offset && end <= filled.end {
            return;
        }
        let extends = filled.start <= offset && offset < filled.end;
        let from = if extends {
            filled.end
        } else {
            offset - offset % HUGE_FOLIO
        };
        let to = end.div_ceil(HUGE_FOLIO) * HUGE_FOLIO;
        if let Some(reached) = self.inner.io.fill_huge(&self.fd, from, to).await
            && reached > from
        {
            *filled = if extends {
                filled.start..reached
            } else {
                from..reached
            };
        }
    }

    async fn read_impl(
        &self,
        offset: u64,
        len: usize,
        mut buf: AlignedBuf,
    ) -> Result<(AlignedBuf, usize)> {
        check_range(offset, len, &buf)?;
        if len == 0 {
            buf.clear();
            return Ok((buf, 0));
        }
        let huge = *self.huge.get_or_init(|| {
            self.inner
                .io
                .wants_huge_fill(self.fd.fd.as_fd(), offset, len)
        });
        if huge {
            self.fill(offset, offset.saturating_add(len as u64)).await;
        }
        let cached = self.inner.io.read_cached_fd(
            self.fd.fd.as_fd(),
            offset,
            &mut buf.capacity_mut()[..len],
        );
        if let Some(n) = cached {
            buf.set_len(n);
            return Ok((buf, n));
        }
        self.inner.read_buffered(&self.fd, buf, len, offset).await
    }
}

impl ShardFile for LocalShardFile {
    fn read_at(
        &self,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'_, Result<(AlignedBuf, usize)>> {
        Box::pin(async move {
            let result = self.read_impl(offset, len, buf).await;
            self.inner.health.record(&result);
            result
        })
    }
}

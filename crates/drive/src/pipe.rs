//! Pipes that carry bytes read from the page cache on to a socket without
//! copying them again.
//!
//! A read served from the page cache ([`Drive::read_file_at_piped`]) can
//! leave its bytes in a [`Pipe`] as well as in the caller's buffer:
//! `splice` puts references to the file's cached pages into a pipe, and
//! the caller's copy is then read from the page cache. The pipe's
//! references pin those pages, and the kernel removes a page that others
//! hold from a file's cache only when the file itself is changed
//! (truncated, hole-punched, written with `O_DIRECT`, deduplicated, or
//! changed on a network file system's server). Shard files are never
//! changed once written, so the read copies the very pages the pipe holds,
//! and whatever the caller checks of its copy (a bitrot hash) holds of the
//! pipe's bytes too, even if memory pressure would drop the file's pages
//! or the disk would now return something else. (A process that writes
//! into a shard file behind Tessera's back changes the pipe's pages with
//! the cache's, and a write after the check goes out unchecked: so it is
//! for any bytes sent from the page cache by reference.)
//! [`Pipe::splice_to`] then hands them to a socket, which on TCP takes the
//! pages by reference instead of copying them.
//!
//! Pipes are non-blocking, sized to hold a whole shard record, and kept for
//! reuse in a bounded [`PipePool`] once empty; a pipe dropped with bytes
//! still in it is closed.
//!
//! [`Drive::read_file_at_piped`]: crate::Drive::read_file_at_piped

use std::fmt;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustix::io::Errno;
use rustix::pipe::{PipeFlags, SpliceFlags};

/// Capacity asked of every pooled pipe (1 MiB, the default
/// `/proc/sys/fs/pipe-max-size`): 256 page slots, room for a shard record
/// of up to [`MAX_PIPED`] bytes however its start is aligned.
pub const PIPE_BYTES: usize = 1 << 20;

/// Longest read that is piped: a pipe's page slots less the two partial
/// pages at its ends.
pub const MAX_PIPED: usize = PIPE_BYTES - 2 * 4096;

/// Most empty pipes a pool keeps (each is two descriptors).
const MAX_IDLE: usize = 16;

/// Most pipes of one pool out at once: a bound on the descriptors (two
/// each) and pipe capacity (counted against the user's
/// `/proc/sys/fs/pipe-user-pages-soft` unless privileged) that reads in
/// flight hold. Past it, reads go without a pipe.
pub const MAX_OUT: usize = 64;

/// A pipe holding [`len`](Pipe::len) bytes, in order, for one consumer.
pub struct Pipe {
    /// The read and write ends (taken only by `drop`).
    ends: Option<(OwnedFd, OwnedFd)>,
    len: usize,
    pool: Arc<PipePool>,
}

impl fmt::Debug for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipe").field("len", &self.len).finish()
    }
}

impl Pipe {
    /// The read and write ends.
    fn ends(&self) -> &(OwnedFd, OwnedFd) {
        self.ends
            .as_ref()
            .expect("a pipe's ends are taken only by drop")
    }

    fn r(&self) -> BorrowedFd<'_> {
        self.ends().0.as_fd()
    }

    fn w(&self) -> BorrowedFd<'_> {
        self.ends().1.as_fd()
    }

    /// Bytes in the pipe.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the pipe is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `src` into the pipe, after its bytes (for bytes that are in
    /// memory only, such as a test's); fails without room for all of it.
    pub fn fill(&mut self, src: &[u8]) -> io::Result<()> {
        let mut done = 0;
        while done < src.len() {
            match rustix::io::write(self.w(), &src[done..]) {
                Ok(n) => {
                    done += n;
                    self.len += n;
                }
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Drops the first `n` bytes (at most [`len`](Pipe::len)).
    pub fn skip(&mut self, n: usize) -> io::Result<()> {
        let mut left = n.min(self.len);
        let mut scratch = [0u8; 256];
        while left > 0 {
            let want = left.min(scratch.len());
            match rustix::io::read(self.r(), &mut scratch[..want]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(got) => {
                    left -= got;
                    self.len -= got;
                }
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Moves up to `max` of the pipe's first bytes to `out` (a socket or a
    /// pipe) without waiting: how many moved, or `WouldBlock` when `out`
    /// has no room now. A socket whose peer is gone gives `BrokenPipe`,
    /// and, as `splice` sends without `MSG_NOSIGNAL`, raises `SIGPIPE`,
    /// which Rust programs ignore from their start (a program that
    /// restores its default action must not call this).
    pub fn splice_to(&mut self, out: BorrowedFd<'_>, max: usize) -> io::Result<usize> {
        let want = max.min(self.len);
        if want == 0 {
            return Ok(0);
        }
        loop {
            match rustix::pipe::splice(
                self.r(),
                None,
                out,
                None,
                want,
                // No `MORE`: it would hold a response's last bytes back.
                SpliceFlags::NONBLOCK | SpliceFlags::MOVE,
            ) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.len -= n;
                    return Ok(n);
                }
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Reads the pipe's first bytes into `dst`: how many (the pipe's
    /// length at most).
    pub fn read_into(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        let want = dst.len().min(self.len);
        let mut got = 0;
        while got < want {
            match rustix::io::read(self.r(), &mut dst[got..want]) {
                Ok(0) => break,
                Ok(n) => {
                    got += n;
                    self.len -= n;
                }
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(got)
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        if self.len == 0
            && let Some(ends) = self.ends.take()
        {
            self.pool.put(ends);
        }
        self.pool.out.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Empty pipes kept for reuse, and a bound on the pipes out. A pool is
/// turned off for good when the file system cannot splice.
pub struct PipePool {
    idle: Mutex<Vec<(OwnedFd, OwnedFd)>>,
    enabled: AtomicBool,
    /// Pipes handed out and not yet dropped.
    out: AtomicUsize,
}

impl fmt::Debug for PipePool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipePool")
            .field("enabled", &self.enabled())
            .finish()
    }
}

impl PipePool {
    /// An empty pool.
    pub fn new() -> Arc<PipePool> {
        Arc::new(PipePool {
            idle: Mutex::new(Vec::new()),
            enabled: AtomicBool::new(true),
            out: AtomicUsize::new(0),
        })
    }

    /// Whether pipes are handed out (not when turned off by configuration,
    /// or on a kernel or file system without `cachestat` or `splice`).
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Turns the pool off for good.
    pub(crate) fn disable(&self) {
        self.enabled.store(false, Ordering::Relaxed);
    }

    /// Pipes out now.
    pub fn out(&self) -> usize {
        self.out.load(Ordering::Relaxed)
    }

    /// An empty pipe: an idle one, or a new one. `None` when the pool is
    /// off, [`MAX_OUT`] pipes are out, or a pipe of [`PIPE_BYTES`] cannot
    /// be made now (out of descriptors, or over the user's pipe pages).
    pub fn get(self: &Arc<Self>) -> Option<Pipe> {
        if !self.enabled() {
            return None;
        }
        if self.out.fetch_add(1, Ordering::Relaxed) >= MAX_OUT {
            self.out.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let (r, w) = match idle {
            Some(pair) => pair,
            None => match self.make() {
                Ok(pair) => pair,
                Err(_) => {
                    self.out.fetch_sub(1, Ordering::Relaxed);
                    return None;
                }
            },
        };
        Some(Pipe {
            ends: Some((r, w)),
            len: 0,
            pool: Arc::clone(self),
        })
    }

    fn make(&self) -> rustix::io::Result<(OwnedFd, OwnedFd)> {
        let (r, w) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        if rustix::pipe::fcntl_setpipe_size(&w, PIPE_BYTES)? < PIPE_BYTES {
            return Err(Errno::PERM);
        }
        Ok((r, w))
    }

    fn put(&self, ends: (OwnedFd, OwnedFd)) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(ends);
        }
    }
}

impl Pipe {
    /// Appends up to `len` bytes of `file` at `offset` to the pipe as
    /// references to the file's cached pages: how many, fewer than `len`
    /// only at the end of the file. On failure the pipe holds whatever it
    /// got; the caller drops it.
    pub(crate) fn splice_from(
        &mut self,
        file: BorrowedFd<'_>,
        offset: u64,
        len: usize,
    ) -> io::Result<usize> {
        let mut off = offset;
        let mut got = 0;
        while got < len {
            match rustix::pipe::splice(
                file,
                Some(&mut off),
                self.w(),
                None,
                len - got,
                SpliceFlags::NONBLOCK,
            ) {
                Ok(0) => break,
                Ok(n) => {
                    got += n;
                    self.len += n;
                }
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_are_bounded_reused_and_carry_bytes_in_order() {
        let pool = PipePool::new();
        let mut p = pool.get().unwrap();
        assert!(rustix::pipe::fcntl_getpipe_size(p.w()).unwrap() >= PIPE_BYTES);
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        p.fill(&bytes).unwrap();
        assert_eq!(p.len(), bytes.len());
        p.skip(1000).unwrap();
        let mut out = vec![0u8; 5000];
        assert_eq!(p.read_into(&mut out).unwrap(), 5000);
        assert_eq!(out, bytes[1000..6000]);
        // Into another pipe, as into a socket.
        let mut q = pool.get().unwrap();
        let moved = p.splice_to(q.w(), usize::MAX).unwrap();
        q.len += moved;
        assert_eq!(moved, bytes.len() - 6000);
        assert!(p.is_empty());
        let mut rest = vec![0u8; moved];
        assert_eq!(q.read_into(&mut rest).unwrap(), moved);
        assert_eq!(rest, bytes[6000..]);
        assert_eq!(pool.out(), 2);
        drop((p, q));
        assert_eq!(pool.out(), 0);
        assert_eq!(pool.idle.lock().unwrap().len(), 2, "empty pipes are kept");

        // At most MAX_OUT at once; one more once one is back.
        let held: Vec<Pipe> = (0..MAX_OUT).map(|_| pool.get().unwrap()).collect();
        assert!(pool.get().is_none());
        drop(held);
        assert!(pool.get().is_some());
        assert!(pool.idle.lock().unwrap().len() <= MAX_IDLE);

        // Into a socket whose peer is gone: an error, not a signal.
        let (tx, rx) = std::os::unix::net::UnixStream::pair().unwrap();
        drop(rx);
        let mut p = pool.get().unwrap();
        p.fill(b"nobody reads this").unwrap();
        let e = p.splice_to(tx.as_fd(), usize::MAX).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
        drop(p);

        // A pipe dropped holding bytes is closed, not kept.
        let idle = pool.idle.lock().unwrap().len();
        let mut p = pool.get().unwrap();
        p.fill(b"left over").unwrap();
        drop(p);
        assert_eq!(pool.idle.lock().unwrap().len(), idle - 1);
        let p = pool.get().unwrap();
        assert_eq!(p.len(), 0);
        let mut probe = [0u8; 16];
        assert!(
            rustix::io::read(p.r(), &mut probe).is_err(),
            "a reused pipe is empty"
        );
    }
}

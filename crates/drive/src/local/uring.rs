//! The io_uring backend: one dedicated thread per drive owns a ring.
//!
//! # Shape
//!
//! Async callers turn each primitive (open, read, write, fsync, statx,
//! mkdir, rename, unlink, fallocate) into an [`Op`] that *owns* everything the
//! kernel will touch: the buffer, the path as a `CString`, the `statx` output,
//! and an `Arc` of every file descriptor involved. The op goes through a
//! bounded tokio channel to the ring thread together with a oneshot sender.
//!
//! The ring thread loops: drain whatever is queued (up to the free slots of
//! its in-flight table), push one SQE per op, submit them all with one
//! `io_uring_enter`, and reap completions, sending each op back (buffers
//! included) with its result. When it has nothing to submit it sleeps in
//! `io_uring_enter` waiting for a completion; a read on an eventfd is always
//! in flight so that a sender can wake it. Senders only write the eventfd when
//! the thread announced it is about to sleep (a flag checked after a SeqCst
//! fence on both sides, so a wake-up cannot be lost), which keeps the common
//! busy case to zero extra system calls.
//!
//! # Why this is sound when callers give up
//!
//! A caller's future may be dropped at any time (a deadline fired). The op
//! and its buffers then stay in the ring thread's in-flight table until the
//! kernel's completion arrives, and only then are they dropped (pooled
//! buffers return to their pool). File descriptors are `Arc`s held by the op,
//! so a descriptor cannot be closed and reused while the kernel uses it.
//! If `io_uring_enter` ever fails in a way the thread cannot recover from,
//! every in-flight op is leaked on purpose (never freed while the kernel
//! might still write into it) and its caller gets `BackendStopped`.

use std::ffi::CString;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering, fence};

use io_uring::{IoUring, Probe, opcode, squeue, types};
use tokio::sync::{mpsc, oneshot};

use super::io::{IoBuf, Stat};

/// Largest channel bound accepted (larger configured values are clamped).
const MAX_QUEUE_DEPTH: usize = 1 << 16;

/// user_data of the eventfd read that wakes the ring thread.
const WAKE_TOKEN: u64 = u64::MAX;

/// Opcodes the backend relies on; a kernel lacking any of them is refused at
/// start (and `Backend::Auto` falls back to the thread pool).
const REQUIRED_OPCODES: [(u8, &str); 10] = [
    (opcode::Nop::CODE, "NOP"),
    (opcode::Read::CODE, "READ"),
    (opcode::Write::CODE, "WRITE"),
    (opcode::Fsync::CODE, "FSYNC"),
    (opcode::OpenAt::CODE, "OPENAT"),
    (opcode::Statx::CODE, "STATX"),
    (opcode::Fallocate::CODE, "FALLOCATE"),
    (opcode::RenameAt::CODE, "RENAMEAT"),
    (opcode::UnlinkAt::CODE, "UNLINKAT"),
    (opcode::MkDirAt::CODE, "MKDIRAT"),
];

/// An operation and everything the kernel reads or writes while it runs.
pub(crate) enum Op {
    Nop,
    Read {
        fd: Arc<OwnedFd>,
        buf: IoBuf,
        offset: u64,
        start: usize,
        len: u32,
    },
    Write {
        fd: Arc<OwnedFd>,
        buf: IoBuf,
        offset: u64,
        start: usize,
        len: u32,
    },
    Fsync {
        fd: Arc<OwnedFd>,
        datasync: bool,
    },
    Fallocate {
        fd: Arc<OwnedFd>,
        mode: i32,
        len: u64,
    },
    OpenAt {
        dir: Arc<OwnedFd>,
        path: CString,
        flags: i32,
        mode: u32,
    },
    Statx {
        dir: Arc<OwnedFd>,
        path: CString,
        flags: i32,
        out: Box<MaybeUninit<libc::statx>>,
    },
    MkDirAt {
        dir: Arc<OwnedFd>,
        path: CString,
        mode: u32,
    },
    RenameAt {
        dir: Arc<OwnedFd>,
        from: CString,
        to: CString,
        flags: u32,
    },
    UnlinkAt {
        dir: Arc<OwnedFd>,
        path: CString,
        flags: i32,
    },
}

impl Op {
    /// The SQE for this op. Pointers in it point into heap memory owned by
    /// `self` (buffer, CStrings, boxed statx), which does not move when the
    /// op itself is moved into the in-flight table.
    fn entry(&mut self) -> squeue::Entry {
        match self {
            Op::Nop => opcode::Nop::new().build(),
            Op::Read {
                fd,
                buf,
                offset,
                start,
                len,
            } => {
                let ptr = buf.region_ptr().wrapping_add(*start);
                opcode::Read::new(types::Fd(fd.as_raw_fd()), ptr, *len)
                    .offset(*offset)
                    .build()
            }
            Op::Write {
                fd,
                buf,
                offset,
                start,
                len,
            } => {
                let ptr = buf.region_ptr().wrapping_add(*start);
                opcode::Write::new(types::Fd(fd.as_raw_fd()), ptr, *len)
                    .offset(*offset)
                    .build()
            }
            Op::Fsync { fd, datasync } => {
                let flags = if *datasync {
                    types::FsyncFlags::DATASYNC
                } else {
                    types::FsyncFlags::empty()
                };
                opcode::Fsync::new(types::Fd(fd.as_raw_fd()))
                    .flags(flags)
                    .build()
            }
            Op::Fallocate { fd, mode, len } => {
                opcode::Fallocate::new(types::Fd(fd.as_raw_fd()), *len)
                    .mode(*mode)
                    .build()
            }
            Op::OpenAt {
                dir,
                path,
                flags,
                mode,
            } => opcode::OpenAt::new(types::Fd(dir.as_raw_fd()), path.as_ptr())
                .flags(*flags)
                .mode(*mode)
                .build(),
            Op::Statx {
                dir,
                path,
                flags,
                out,
            } => opcode::Statx::new(
                types::Fd(dir.as_raw_fd()),
                path.as_ptr(),
                out.as_mut_ptr().cast::<types::statx>(),
            )
            .flags(*flags)
            .mask(
                libc::STATX_TYPE
                    | libc::STATX_MODE
                    | libc::STATX_SIZE
                    | libc::STATX_MTIME
                    | libc::STATX_BTIME,
            )
            .build(),
            Op::MkDirAt { dir, path, mode } => {
                opcode::MkDirAt::new(types::Fd(dir.as_raw_fd()), path.as_ptr())
                    .mode(*mode)
                    .build()
            }
            Op::RenameAt {
                dir,
                from,
                to,
                flags,
            } => {
                let fd = types::Fd(dir.as_raw_fd());
                opcode::RenameAt::new(fd, from.as_ptr(), fd, to.as_ptr())
                    .flags(*flags)
                    .build()
            }
            Op::UnlinkAt { dir, path, flags } => {
                opcode::UnlinkAt::new(types::Fd(dir.as_raw_fd()), path.as_ptr())
                    .flags(*flags)
                    .build()
            }
        }
    }
}

/// Reply of the ring thread: the kernel's result and the op (with its
/// buffers) back, or `Err` if the ring died with the op in flight.
type Reply = Result<(i32, Op), ()>;

struct Request {
    op: Op,
    reply: oneshot::Sender<Reply>,
}

struct InFlight {
    op: Op,
    reply: oneshot::Sender<Reply>,
}

struct Shared {
    /// Set by the ring thread just before it may block in io_uring_enter.
    sleeping: AtomicBool,
    /// Cleared when the ring thread exits.
    alive: AtomicBool,
    /// Written by senders to wake a sleeping ring thread.
    wake: OwnedFd,
}

/// Handle to a drive's ring thread. Dropping every handle closes the channel;
/// the thread finishes what is in flight and exits.
pub(crate) struct Uring {
    tx: mpsc::Sender<Request>,
    shared: Arc<Shared>,
}

fn stopped() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "io_uring thread stopped")
}

impl Uring {
    /// Starts the ring thread: creates a ring of `entries` SQEs, checks that
    /// the kernel supports every opcode used, and runs one NOP through it.
    pub(crate) async fn start(entries: u32, queue_depth: usize, name: String) -> io::Result<Uring> {
        let entries = entries.clamp(8, 4096);
        let wake = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC)?;
        let shared = Arc::new(Shared {
            sleeping: AtomicBool::new(false),
            alive: AtomicBool::new(true),
            wake,
        });
        let (tx, rx) = mpsc::channel(queue_depth.clamp(1, MAX_QUEUE_DEPTH));
        let (ready_tx, ready_rx) = oneshot::channel::<io::Result<()>>();
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new().name(name).spawn(move || {
            let ring = match setup(entries) {
                Ok(ring) => ring,
                Err(e) => {
                    thread_shared.alive.store(false, Ordering::SeqCst);
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(()));
            run(ring, rx, &thread_shared);
            thread_shared.alive.store(false, Ordering::SeqCst);
        })?;
        ready_rx.await.map_err(|_| stopped())??;
        let uring = Uring { tx, shared };
        let (result, _) = uring.submit(Op::Nop).await?;
        if result < 0 {
            return Err(io::Error::from_raw_os_error(-result));
        }
        Ok(uring)
    }

    /// Whether the ring thread is still running.
    pub(crate) fn is_alive(&self) -> bool {
        self.shared.alive.load(Ordering::SeqCst)
    }

    /// Sends an op to the ring and waits for its completion.
    pub(crate) async fn submit(&self, op: Op) -> io::Result<(i32, Op)> {
        let (reply, done) = oneshot::channel();
        self.tx
            .send(Request { op, reply })
            .await
            .map_err(|_| stopped())?;
        // Pairs with the fence in the ring thread between setting `sleeping`
        // and checking the channel: either it sees our request, or we see
        // its flag and wake it.
        fence(Ordering::SeqCst);
        if self.shared.sleeping.load(Ordering::SeqCst) {
            // An eventfd write only fails if the counter would overflow,
            // which takes 2^64 wake-ups; the thread is awake then anyway.
            let _ = rustix::io::write(&self.shared.wake, &1u64.to_ne_bytes());
        }
        done.await.map_err(|_| stopped())?.map_err(|()| stopped())
    }

    /// Like [`submit`](Self::submit), turning a negative result into an error.
    pub(crate) async fn run_op(&self, op: Op) -> io::Result<(u32, Op)> {
        let (result, op) = self.submit(op).await?;
        if result < 0 {
            Err(io::Error::from_raw_os_error(-result))
        } else {
            Ok((result.unsigned_abs(), op))
        }
    }
}

/// Reads the statx the kernel filled in.
pub(crate) fn statx_result(out: &MaybeUninit<libc::statx>) -> Stat {
    // SAFETY: the buffer was created zeroed (`MaybeUninit::zeroed`) and
    // `libc::statx` is plain integers, for which all-zero bytes are a valid
    // value; the kernel only ever stores valid integers into it.
    let st = unsafe { out.assume_init_ref() };
    Stat::from_parts(
        u32::from(st.stx_mode),
        st.stx_size,
        (st.stx_mask & libc::STATX_MTIME != 0)
            .then_some((st.stx_mtime.tv_sec, st.stx_mtime.tv_nsec)),
        (st.stx_mask & libc::STATX_BTIME != 0)
            .then_some((st.stx_btime.tv_sec, st.stx_btime.tv_nsec)),
    )
}

fn setup(entries: u32) -> io::Result<IoUring> {
    let ring = IoUring::new(entries)?;
    let mut probe = Probe::new();
    ring.submitter().register_probe(&mut probe)?;
    let missing: Vec<&str> = REQUIRED_OPCODES
        .iter()
        .filter(|(code, _)| !probe.is_supported(*code))
        .map(|(_, name)| *name)
        .collect();
    if !missing.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("kernel io_uring lacks opcodes {}", missing.join(", ")),
        ));
    }
    Ok(ring)
}

fn wake_entry(wake: RawFd, buf: &mut [u8; 8]) -> squeue::Entry {
    opcode::Read::new(types::Fd(wake), buf.as_mut_ptr(), 8)
        .build()
        .user_data(WAKE_TOKEN)
}

/// Pushes one SQE. The caller guarantees that every pointer in `entry`
/// stays valid until the matching completion is reaped, and that the SQ has
/// room (in-flight ops never exceed the SQ size).
fn push(ring: &mut IoUring, entry: &squeue::Entry) -> io::Result<()> {
    // SAFETY: see the function comment: the memory the entry points to is
    // owned by the in-flight table (or the thread's wake buffer) until its
    // completion has been reaped.
    unsafe { ring.submission().push(entry) }
        .map_err(|_| io::Error::new(io::ErrorKind::WouldBlock, "submission queue full"))
}

/// The ring thread's loop. Returns when every handle is dropped and nothing
/// is in flight, or after a fatal ring error.
fn run(mut ring: IoUring, mut rx: mpsc::Receiver<Request>, shared: &Shared) {
    let sq_entries = ring.params().sq_entries() as usize;
    // One SQ entry (and CQ slot) stays reserved for the wake-up read; the CQ
    // is twice the SQ, so completions can never overflow it.
    let max_in_flight = sq_entries.saturating_sub(1).max(1);
    let mut slots: Vec<Option<InFlight>> = (0..max_in_flight).map(|_| None).collect();
    let mut free: Vec<usize> = (0..max_in_flight).rev().collect();
    let mut wake_buf = Box::new([0u8; 8]);
    let mut wake_armed = false;
    let mut closed = false;
    let wake_fd = shared.wake.as_raw_fd();

    let fatal = loop {
        if !wake_armed && !closed {
            if let Err(e) = push(&mut ring, &wake_entry(wake_fd, &mut wake_buf)) {
                break e;
            }
            wake_armed = true;
        }
        // Drain what is queued, up to the free slots.
        while let Some(&index) = free.last() {
            match rx.try_recv() {
                Ok(Request { op, reply }) => {
                    let mut in_flight = InFlight { op, reply };
                    let entry = in_flight.op.entry().user_data(index as u64);
                    // Store first: the op's memory must be where it stays
                    // until completion before the kernel can see the SQE.
                    slots[index] = Some(in_flight);
                    free.pop();
                    if let Err(e) = push(&mut ring, &entry) {
                        // Never happens (SQ is sized for every slot); fail the op.
                        if let Some(in_flight) = slots[index].take() {
                            let _ = in_flight.reply.send(Err(()));
                        }
                        free.push(index);
                        tracing::error!(error = %e, "io_uring push failed");
                    }
                }
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    closed = true;
                    break;
                }
            }
        }
        let in_flight = max_in_flight - free.len();
        if closed && in_flight == 0 {
            break io::Error::other("closed");
        }
        shared.sleeping.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let can_take_more = !free.is_empty() && !closed && !rx.is_empty();
        let want = if can_take_more { 0 } else { 1 };
        let submitted = ring.submit_and_wait(want);
        shared.sleeping.store(false, Ordering::SeqCst);
        match submitted {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                ) => {}
            Err(e) => break e,
        }
        for cqe in ring.completion() {
            let token = cqe.user_data();
            if token == WAKE_TOKEN {
                wake_armed = false;
                continue;
            }
            let index = token as usize;
            if let Some(in_flight) = slots.get_mut(index).and_then(Option::take) {
                free.push(index);
                // The caller may have gone (deadline): the op is dropped here,
                // after the kernel is done with it.
                let _ = in_flight.reply.send(Ok((cqe.result(), in_flight.op)));
            }
        }
    };

    let normal_exit = closed && free.len() == max_in_flight;
    if normal_exit {
        // Complete the wake-up read before the ring (and wake_buf) go away.
        if wake_armed {
            let _ = rustix::io::write(&shared.wake, &1u64.to_ne_bytes());
            while wake_armed {
                if let Err(e) = ring.submit_and_wait(1)
                    && !matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                    )
                {
                    // Cannot confirm the read finished: keep its buffer alive.
                    Box::leak(wake_buf);
                    return;
                }
                for cqe in ring.completion() {
                    if cqe.user_data() == WAKE_TOKEN {
                        wake_armed = false;
                    }
                }
            }
        }
        return;
    }

    // Fatal ring error with ops possibly still owned by the kernel: leak
    // their memory rather than free it, and tell their callers.
    tracing::error!(error = %fatal, "io_uring thread failed; drive backend stopped");
    shared.alive.store(false, Ordering::SeqCst);
    Box::leak(wake_buf);
    for slot in &mut slots {
        if let Some(InFlight { op, reply }) = slot.take() {
            std::mem::forget(op);
            let _ = reply.send(Err(()));
        }
    }
    rx.close();
    while let Ok(Request { reply, .. }) = rx.try_recv() {
        // Never submitted: its op is dropped normally.
        let _ = reply.send(Err(()));
    }
    // The ring is dropped last; the kernel cancels whatever was left.
}

/// Takes ownership of a descriptor the kernel returned from an io_uring
/// OPENAT.
pub(crate) fn owned_fd(raw: u32) -> io::Result<OwnedFd> {
    let raw = i32::try_from(raw).map_err(|_| io::Error::other("descriptor out of range"))?;
    // SAFETY: a successful IORING_OP_OPENAT returns a new descriptor that
    // nothing else in the process owns; wrapping it makes it closed exactly
    // once, when the OwnedFd drops.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) })
}

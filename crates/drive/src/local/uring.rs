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
//! A descriptor an open returns is closed unless its caller takes the
//! reply, also when the caller goes after the reply was sent.
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
use crate::AlignedBuf;

/// Largest channel bound accepted (larger configured values are clamped).
const MAX_QUEUE_DEPTH: usize = 1 << 16;

/// user_data of the eventfd read that wakes the ring thread.
const WAKE_TOKEN: u64 = u64::MAX;

/// Opcodes the backend relies on; a kernel lacking any of them is refused at
/// start (and `Backend::Auto` falls back to the thread pool).
const REQUIRED_OPCODES: [(u8, &str); 11] = [
    (opcode::Nop::CODE, "NOP"),
    (opcode::Read::CODE, "READ"),
    (opcode::Write::CODE, "WRITE"),
    (opcode::Writev::CODE, "WRITEV"),
    (opcode::Fsync::CODE, "FSYNC"),
    (opcode::OpenAt::CODE, "OPENAT"),
    (opcode::Statx::CODE, "STATX"),
    (opcode::Fallocate::CODE, "FALLOCATE"),
    (opcode::RenameAt::CODE, "RENAMEAT"),
    (opcode::UnlinkAt::CODE, "UNLINKAT"),
    (opcode::MkDirAt::CODE, "MKDIRAT"),
];

/// The iovec array of a [`Op::Writev`], filled when its SQE is built; it
/// points into the same op's buffers.
#[derive(Default)]
pub(crate) struct IoVecs(Vec<libc::iovec>);

// SAFETY: the raw pointers in the iovecs point into heap buffers owned by the
// same `Op` (they move with it and are never read through by Rust code); only
// the kernel reads them, while the op sits in the ring thread's in-flight
// table. Sending the op to another thread sends its buffers with them.
unsafe impl Send for IoVecs {}

/// The file a read, write or sync works on.
pub(crate) enum File {
    /// A descriptor, kept open by the op while the kernel uses it.
    Fd(Arc<OwnedFd>),
    /// The file open in the chain's fixed file slot (only in a [`Chain`],
    /// after an [`Op::OpenSlot`]).
    Slot,
}

/// Builds an SQE for `file`: `$target` is bound to the descriptor
/// (`types::Fd`) or to the chain's slot (`types::Fixed`), whose types
/// differ, in `$build`.
macro_rules! on_file {
    ($file:expr, $slot:expr, $target:ident => $build:expr) => {
        match $file {
            File::Fd(fd) => {
                let $target = types::Fd(fd.as_raw_fd());
                $build
            }
            File::Slot => {
                let $target = types::Fixed($slot);
                $build
            }
        }
    };
}

/// An operation and everything the kernel reads or writes while it runs.
pub(crate) enum Op {
    Nop,
    Read {
        file: File,
        buf: IoBuf,
        offset: u64,
        start: usize,
        len: u32,
    },
    Write {
        file: File,
        buf: IoBuf,
        offset: u64,
        start: usize,
        len: u32,
    },
    /// One write of several buffers back to back (`pwritev`): each
    /// buffer's `len()` bytes, in order, from `offset`.
    Writev {
        file: File,
        bufs: Vec<AlignedBuf>,
        iov: IoVecs,
        offset: u64,
    },
    /// `fsync`, or `fdatasync` with `datasync`.
    Fsync {
        file: File,
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
    /// Opens into the chain's fixed file slot (a direct descriptor that
    /// the chain's later steps use; only in a [`Chain`]).
    OpenSlot {
        dir: Arc<OwnedFd>,
        path: CString,
        flags: i32,
        mode: u32,
    },
    /// Closes the file open in the chain's slot.
    CloseSlot,
}

fn fsync_flags(datasync: bool) -> types::FsyncFlags {
    if datasync {
        types::FsyncFlags::DATASYNC
    } else {
        types::FsyncFlags::empty()
    }
}

impl Op {
    /// Whether the op works on the chain's fixed file slot.
    fn uses_slot(&self) -> bool {
        matches!(
            self,
            Op::OpenSlot { .. }
                | Op::Read {
                    file: File::Slot,
                    ..
                }
                | Op::Write {
                    file: File::Slot,
                    ..
                }
                | Op::Writev {
                    file: File::Slot,
                    ..
                }
                | Op::Fsync {
                    file: File::Slot,
                    ..
                }
                | Op::CloseSlot
        )
    }

    /// The SQE for this op; `slot` is the chain's fixed file slot (the
    /// ring thread assigns one to every chain with slot ops). Pointers in
    /// the SQE point into heap memory owned by `self` (buffer, CStrings,
    /// boxed statx), which does not move when the op itself is moved into
    /// the in-flight table.
    fn entry(&mut self, slot: u32) -> squeue::Entry {
        match self {
            Op::Nop => opcode::Nop::new().build(),
            Op::Read {
                file,
                buf,
                offset,
                start,
                len,
            } => {
                let ptr = buf.region_ptr().wrapping_add(*start);
                on_file!(file, slot, target => opcode::Read::new(target, ptr, *len)
                    .offset(*offset)
                    .build())
            }
            Op::Write {
                file,
                buf,
                offset,
                start,
                len,
            } => {
                let ptr = buf.region_ptr().wrapping_add(*start);
                on_file!(file, slot, target => opcode::Write::new(target, ptr, *len)
                    .offset(*offset)
                    .build())
            }
            Op::Writev {
                file,
                bufs,
                iov,
                offset,
            } => {
                iov.0 = bufs
                    .iter_mut()
                    .map(|b| libc::iovec {
                        iov_base: b.as_mut_ptr().cast(),
                        iov_len: b.len(),
                    })
                    .collect();
                let n = u32::try_from(iov.0.len()).unwrap_or(u32::MAX);
                on_file!(file, slot, target => opcode::Writev::new(target, iov.0.as_ptr(), n)
                    .offset(*offset)
                    .build())
            }
            Op::Fsync { file, datasync } => {
                on_file!(file, slot, target => opcode::Fsync::new(target)
                .flags(fsync_flags(*datasync))
                .build())
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
            Op::OpenSlot {
                dir,
                path,
                flags,
                mode,
            } => {
                // Slots are below the table size, far from the largest
                // target the kernel accepts (u32::MAX - 2).
                let target = types::DestinationSlot::try_from_slot_target(slot).ok();
                // Direct descriptors are never inherited; the kernel refuses
                // O_CLOEXEC on them.
                opcode::OpenAt::new(types::Fd(dir.as_raw_fd()), path.as_ptr())
                    .flags(*flags & !libc::O_CLOEXEC)
                    .mode(*mode)
                    .file_index(target)
                    .build()
            }
            Op::CloseSlot => opcode::Close::new(types::Fixed(slot)).build(),
        }
    }
}

/// Longest chain accepted (the ring keeps at least this many SQEs).
pub(crate) const MAX_CHAIN: usize = 12;

/// Ops submitted together as one linked io_uring chain: each step starts
/// when the one before it completed, and the whole chain costs the caller
/// one hand-off to the ring thread instead of one per step. A step that
/// fails (or transfers fewer bytes than asked) cancels the steps after it,
/// unless it was added with [`always`](Chain::always). Slot ops
/// ([`Op::OpenSlot`] and friends) share one fixed file slot that the ring
/// thread assigns; a file the chain leaves open in it is closed by the
/// ring thread when the chain completes.
#[derive(Default)]
pub(crate) struct Chain {
    steps: Vec<Op>,
    /// Per step: the next step runs even if this one fails.
    hard: Vec<bool>,
}

impl Chain {
    pub(crate) fn new() -> Chain {
        Chain::default()
    }

    /// Adds a step that runs if every step before it succeeded.
    pub(crate) fn then(mut self, op: Op) -> Chain {
        self.steps.push(op);
        self.hard.push(false);
        self
    }

    /// Adds a step whose failure does not cancel the next one.
    pub(crate) fn always(mut self, op: Op) -> Chain {
        self.steps.push(op);
        self.hard.push(true);
        self
    }
}

/// One step's outcome: the kernel's result, `ECANCELED` for a step that
/// never ran, and the op (with its buffers) back.
pub(crate) type StepResult = (i32, Op);

/// Reply of the ring thread: every step's result and op (with its buffers)
/// back, or `Err` if the ring died with the chain in flight.
type Reply = Result<Delivered, ()>;

/// A completed chain's steps on their way to the caller. Descriptors its
/// plain opens returned are closed if the reply is dropped untaken: the
/// caller gone before the send, or after it but before taking the reply
/// out of the channel.
struct Delivered(Vec<StepResult>);

impl Delivered {
    fn take(mut self) -> Vec<StepResult> {
        std::mem::take(&mut self.0)
    }
}

impl Drop for Delivered {
    fn drop(&mut self) {
        close_unclaimed(&self.0);
    }
}

struct Request {
    chain: Chain,
    reply: oneshot::Sender<Reply>,
}

struct InFlight {
    steps: Vec<StepResult>,
    /// Completions still to come.
    waiting: usize,
    /// The fixed file slot assigned to the chain.
    file: Option<u32>,
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
    /// Chains with slot ops work here: the file table is registered and
    /// the start-up self-test of a linked open, read and close passed.
    chains: bool,
}

fn stopped() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "io_uring thread stopped")
}

/// user_data of a chain's step: the in-flight index and the step's position.
fn token(index: usize, step: usize) -> u64 {
    ((index as u64) << 8) | step as u64
}

impl Uring {
    /// Starts the ring thread: creates a ring of `entries` SQEs, checks that
    /// the kernel supports every opcode used, and runs one NOP through it;
    /// then proves a chain of slot ops (open, read, close of `/dev/null`)
    /// and enables chains only if it gives exactly the expected results.
    pub(crate) async fn start(entries: u32, queue_depth: usize, name: String) -> io::Result<Uring> {
        let entries = entries.clamp(2 * MAX_CHAIN as u32, 4096);
        let wake = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC)?;
        let shared = Arc::new(Shared {
            sleeping: AtomicBool::new(false),
            alive: AtomicBool::new(true),
            wake,
        });
        let (tx, rx) = mpsc::channel(queue_depth.clamp(1, MAX_QUEUE_DEPTH));
        let (ready_tx, ready_rx) = oneshot::channel::<io::Result<bool>>();
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new().name(name).spawn(move || {
            let (ring, files) = match setup(entries) {
                Ok(ring) => ring,
                Err(e) => {
                    thread_shared.alive.store(false, Ordering::SeqCst);
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(files));
            run(ring, files, rx, &thread_shared);
            thread_shared.alive.store(false, Ordering::SeqCst);
        })?;
        let files = ready_rx.await.map_err(|_| stopped())??;
        let mut uring = Uring {
            tx,
            shared,
            chains: false,
        };
        let (result, _) = uring.submit(Op::Nop).await?;
        if result < 0 {
            return Err(io::Error::from_raw_os_error(-result));
        }
        if files {
            match uring.chain_self_test().await {
                Ok(()) => uring.chains = true,
                Err(e) => tracing::warn!(error = %e, "io_uring chains disabled"),
            }
        }
        Ok(uring)
    }

    /// A linked open, read (hard-linked: it ends short at end of file) and
    /// close through the chain's slot must give 0, 0 and 0.
    async fn chain_self_test(&self) -> io::Result<()> {
        let root = rustix::fs::open(
            "/",
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        let chain = Chain::new()
            .then(Op::OpenSlot {
                dir: Arc::new(root),
                path: CString::new("dev/null").map_err(io::Error::other)?,
                flags: libc::O_RDONLY,
                mode: 0,
            })
            .always(Op::Read {
                file: File::Slot,
                buf: IoBuf::Heap(vec![0; 8]),
                offset: 0,
                start: 0,
                len: 8,
            })
            .then(Op::CloseSlot);
        // `send`: `submit_chain` takes slot ops only once this test passed.
        let results: Vec<i32> = self.send(chain).await?.iter().map(|r| r.0).collect();
        if results == [0, 0, 0] {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "linked open, read, close of /dev/null gave {results:?}"
            )))
        }
    }

    /// Whether the ring thread is still running.
    pub(crate) fn is_alive(&self) -> bool {
        self.shared.alive.load(Ordering::SeqCst)
    }

    /// Whether [`submit_chain`](Self::submit_chain) takes chains with slot ops.
    pub(crate) fn chains(&self) -> bool {
        self.chains
    }

    /// Sends an op to the ring and waits for its completion.
    pub(crate) async fn submit(&self, op: Op) -> io::Result<(i32, Op)> {
        if op.uses_slot() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "slot op outside a chain",
            ));
        }
        let mut steps = self.send(Chain::new().then(op)).await?;
        steps.pop().ok_or_else(stopped)
    }

    /// Sends a chain to the ring and waits until every step completed.
    /// Results come back in the chain's order.
    pub(crate) async fn submit_chain(&self, chain: Chain) -> io::Result<Vec<StepResult>> {
        let slots = chain.steps.iter().any(Op::uses_slot);
        if chain.steps.is_empty() || chain.steps.len() > MAX_CHAIN || (slots && !self.chains) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "chain empty, too long, or with slot ops on a ring without a file table",
            ));
        }
        self.send(chain).await
    }

    async fn send(&self, chain: Chain) -> io::Result<Vec<StepResult>> {
        let (reply, done) = oneshot::channel();
        self.tx
            .send(Request { chain, reply })
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
        done.await
            .map_err(|_| stopped())?
            .map(Delivered::take)
            .map_err(|()| stopped())
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

/// The ring, and whether a sparse file table (one slot per in-flight
/// chain) is registered for chains with slot ops.
fn setup(entries: u32) -> io::Result<(IoUring, bool)> {
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
    let table = ring.params().sq_entries();
    let files = probe.is_supported(opcode::Close::CODE)
        && ring.submitter().register_files_sparse(table).is_ok();
    Ok((ring, files))
}

fn wake_entry(wake: RawFd, buf: &mut [u8; 8]) -> squeue::Entry {
    opcode::Read::new(types::Fd(wake), buf.as_mut_ptr(), 8)
        .build()
        .user_data(WAKE_TOKEN)
}

/// Pushes one SQE. The caller guarantees that every pointer in `entry`
/// stays valid until the matching completion is reaped, and that the SQ has
/// room (SQEs in flight never exceed the SQ size).
fn push(ring: &mut IoUring, entry: &squeue::Entry) -> io::Result<()> {
    // SAFETY: see the function comment: the memory the entry points to is
    // owned by the in-flight table (or the thread's wake buffer) until its
    // completion has been reaped.
    unsafe { ring.submission().push(entry) }
        .map_err(|_| io::Error::new(io::ErrorKind::WouldBlock, "submission queue full"))
}

/// Whether a completed chain left a file open in its slot: an open that
/// succeeded with no successful close after it.
fn slot_left_open(steps: &[StepResult]) -> bool {
    let mut open = false;
    for (result, op) in steps {
        match op {
            Op::OpenSlot { .. } if *result >= 0 => open = true,
            Op::CloseSlot if *result == 0 => open = false,
            _ => {}
        }
    }
    open
}

/// The ring thread's loop. Returns when every handle is dropped and nothing
/// is in flight, or after a fatal ring error.
fn run(mut ring: IoUring, files: bool, mut rx: mpsc::Receiver<Request>, shared: &Shared) {
    let sq_entries = ring.params().sq_entries() as usize;
    // One SQ entry (and CQ slot) stays reserved for the wake-up read; the CQ
    // is twice the SQ, so completions can never overflow it.
    let max_sqes = sq_entries.saturating_sub(1).max(1);
    let mut sqes_in_flight = 0usize;
    let mut slots: Vec<Option<InFlight>> = (0..max_sqes).map(|_| None).collect();
    let mut free: Vec<usize> = (0..max_sqes).rev().collect();
    // Fixed file slots (the registered table has sq_entries of them).
    let mut free_files: Vec<u32> = if files {
        (0..sq_entries as u32).rev().collect()
    } else {
        Vec::new()
    };
    // A chain taken from the channel that did not fit yet.
    let mut pending: Option<Request> = None;
    let mut wake_buf = Box::new([0u8; 8]);
    let mut wake_armed = false;
    let mut closed = false;
    let wake_fd = shared.wake.as_raw_fd();

    let fatal = 'ring: loop {
        if !wake_armed && !closed {
            if let Err(e) = push(&mut ring, &wake_entry(wake_fd, &mut wake_buf)) {
                break e;
            }
            wake_armed = true;
        }
        // Drain what is queued, as far as in-flight slots, SQEs and file
        // slots allow.
        while let Some(&index) = free.last() {
            let request = match pending.take() {
                Some(request) => request,
                None => match rx.try_recv() {
                    Ok(request) => request,
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        closed = true;
                        break;
                    }
                },
            };
            let Request { chain, reply } = request;
            let len = chain.steps.len();
            let wants_file = chain.steps.iter().any(Op::uses_slot);
            if wants_file && free_files.is_empty() && (sqes_in_flight == 0 || !files) {
                // Every file slot was lost to failed clean-ups: nothing
                // in flight will free one, so refuse instead of waiting.
                let _ = reply.send(Err(()));
                continue;
            }
            if sqes_in_flight + len > max_sqes || (wants_file && free_files.is_empty()) {
                pending = Some(Request { chain, reply });
                break;
            }
            let file = if wants_file { free_files.pop() } else { None };
            let mut in_flight = InFlight {
                steps: Vec::with_capacity(len),
                waiting: len,
                file,
                reply,
            };
            let mut entries = Vec::with_capacity(len);
            for (step, (mut op, hard)) in chain.steps.into_iter().zip(chain.hard).enumerate() {
                let mut entry = op.entry(file.unwrap_or(0)).user_data(token(index, step));
                if step + 1 < len {
                    entry = entry.flags(if hard {
                        squeue::Flags::IO_HARDLINK
                    } else {
                        squeue::Flags::IO_LINK
                    });
                }
                entries.push(entry);
                in_flight.steps.push((-libc::ECANCELED, op));
            }
            // Store first: the ops' memory must be where it stays until
            // completion before the kernel can see the SQEs. (Moving an op
            // into the vector moves only its handles; the buffers, paths and
            // statx boxes the entries point to stay where they are.)
            slots[index] = Some(in_flight);
            free.pop();
            sqes_in_flight += len;
            for entry in &entries {
                if let Err(e) = push(&mut ring, entry) {
                    // Never happens: the SQ has room for every SQE in
                    // flight. A chain cannot be taken back half pushed.
                    break 'ring e;
                }
            }
        }
        if closed && pending.is_none() && sqes_in_flight == 0 {
            break io::Error::other("closed");
        }
        shared.sleeping.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let can_take_more = pending.is_none() && !free.is_empty() && !closed && !rx.is_empty();
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
        let mut done = Vec::new();
        for cqe in ring.completion() {
            let token = cqe.user_data();
            if token == WAKE_TOKEN {
                wake_armed = false;
                continue;
            }
            let (index, step) = ((token >> 8) as usize, (token & 0xff) as usize);
            if let Some(in_flight) = slots.get_mut(index).and_then(Option::as_mut)
                && let Some(slot) = in_flight.steps.get_mut(step)
            {
                slot.0 = cqe.result();
                in_flight.waiting -= 1;
                sqes_in_flight -= 1;
                if in_flight.waiting == 0 {
                    done.push(index);
                }
            }
        }
        for index in done {
            let Some(in_flight) = slots[index].take() else {
                continue;
            };
            free.push(index);
            if let Some(file) = in_flight.file {
                let cleared = !slot_left_open(&in_flight.steps)
                    || ring.submitter().register_files_update(file, &[-1]).is_ok();
                if cleared {
                    free_files.push(file);
                } else {
                    // The slot keeps a file we could not close: never reuse it.
                    tracing::error!(slot = file, "io_uring file slot could not be cleared");
                }
            }
            // The caller may have gone (deadline): the ops are dropped
            // after the kernel is done with them, and a descriptor an open
            // gave nobody is closed (`Delivered`'s drop, here or in the
            // channel).
            let _ = in_flight.reply.send(Ok(Delivered(in_flight.steps)));
        }
    };

    let normal_exit = closed && free.len() == max_sqes;
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
        if let Some(InFlight { steps, reply, .. }) = slot.take() {
            std::mem::forget(steps);
            let _ = reply.send(Err(()));
        }
    }
    if let Some(Request { reply, .. }) = pending.take() {
        // Never submitted: its ops are dropped normally.
        let _ = reply.send(Err(()));
    }
    rx.close();
    while let Ok(Request { reply, .. }) = rx.try_recv() {
        // Never submitted: its ops are dropped normally.
        let _ = reply.send(Err(()));
    }
    // The ring is dropped last; the kernel cancels whatever was left.
}

/// Closes the descriptors that the chain's plain opens returned to a caller
/// that is gone.
fn close_unclaimed(steps: &[StepResult]) {
    for (result, op) in steps {
        if let (Op::OpenAt { .. }, Ok(raw)) = (op, u32::try_from(*result)) {
            // Dropping the owned descriptor closes it.
            let _ = owned_fd(raw);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A ring with chains, or `None` (said loudly) where the kernel refuses
    /// io_uring or its file table: the drive then runs without chains, and
    /// the drive suite covers that path.
    async fn ring(entries: u32) -> Option<Uring> {
        match Uring::start(entries, 1024, "uring-test".into()).await {
            Ok(ring) if ring.chains() => Some(ring),
            Ok(_) => {
                eprintln!("\n!!!!!!!!!! IO_URING CHAINS REFUSED ON THIS HOST: test skipped\n");
                None
            }
            Err(e) => {
                eprintln!("\n!!!!!!!!!! IO_URING REFUSED ON THIS HOST ({e}): test skipped\n");
                None
            }
        }
    }

    fn dir_fd(path: &std::path::Path) -> Arc<OwnedFd> {
        let flags = rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::DIRECTORY
            | rustix::fs::OFlags::CLOEXEC;
        Arc::new(rustix::fs::open(path, flags, rustix::fs::Mode::empty()).unwrap())
    }

    fn open_slot(dir: &Arc<OwnedFd>, name: &str) -> Op {
        Op::OpenSlot {
            dir: Arc::clone(dir),
            path: CString::new(name).unwrap(),
            flags: libc::O_RDONLY | libc::O_CLOEXEC,
            mode: 0,
        }
    }

    fn read_slot(len: usize) -> Op {
        Op::Read {
            file: File::Slot,
            buf: IoBuf::Heap(vec![0; len]),
            offset: 0,
            start: 0,
            len: len as u32,
        }
    }

    fn results(steps: &[StepResult]) -> Vec<i32> {
        steps.iter().map(|(r, _)| *r).collect()
    }

    fn read_data(steps: &[StepResult]) -> Vec<u8> {
        let (n, op) = &steps[1];
        match op {
            Op::Read { buf, .. } => buf.region()[..*n as usize].to_vec(),
            _ => panic!("not a read"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn chain_links_cancel_after_a_failure_and_hard_links_go_on() {
        let Some(ring) = ring(64).await else { return };
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("f"), b"hello, chain").unwrap();
        let dir = dir_fd(tmp.path());

        // A failed open cancels everything after it, hard link or not.
        let chain = Chain::new()
            .then(open_slot(&dir, "missing"))
            .always(read_slot(64))
            .then(Op::CloseSlot);
        let steps = ring.submit_chain(chain).await.unwrap();
        assert_eq!(
            results(&steps),
            [-libc::ENOENT, -libc::ECANCELED, -libc::ECANCELED]
        );

        // A read that ends at end of file is short; a hard link still runs
        // the close.
        let chain = Chain::new()
            .then(open_slot(&dir, "f"))
            .always(read_slot(64))
            .then(Op::CloseSlot);
        let steps = ring.submit_chain(chain).await.unwrap();
        assert_eq!(results(&steps), [0, 12, 0]);
        assert_eq!(read_data(&steps), b"hello, chain");

        // With a soft link the short read cancels the close, leaving the
        // file in the slot: the ring thread clears it, and the slots keep
        // working for many more chains than the table holds.
        for _ in 0..100 {
            let chain = Chain::new()
                .then(open_slot(&dir, "f"))
                .then(read_slot(64))
                .then(Op::CloseSlot);
            let steps = ring.submit_chain(chain).await.unwrap();
            assert_eq!(results(&steps), [0, 12, -libc::ECANCELED]);
            assert!(slot_left_open(&steps));
        }
        let chain = Chain::new()
            .then(open_slot(&dir, "f"))
            .always(read_slot(5))
            .then(Op::CloseSlot);
        let steps = ring.submit_chain(chain).await.unwrap();
        assert_eq!(results(&steps), [0, 5, 0]);
        assert!(!slot_left_open(&steps));
        assert_eq!(read_data(&steps), b"hello");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn more_chains_in_flight_than_the_ring_holds() {
        // The smallest ring (24 entries asked, 32 given): at most 10
        // three-step chains fit at once, the rest wait for completions (and
        // mix with single ops).
        let Some(ring) = ring(16).await else { return };
        let ring = Arc::new(ring);
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..50 {
            std::fs::write(tmp.path().join(format!("f{i}")), format!("file {i}")).unwrap();
        }
        let dir = dir_fd(tmp.path());
        let mut tasks = Vec::new();
        for i in 0..400usize {
            let (ring, dir) = (Arc::clone(&ring), Arc::clone(&dir));
            tasks.push(tokio::spawn(async move {
                if i % 7 == 0 {
                    let (result, _) = ring.submit(Op::Nop).await.unwrap();
                    assert_eq!(result, 0);
                    return;
                }
                let name = format!("f{}", i % 50);
                let chain = Chain::new()
                    .then(open_slot(&dir, &name))
                    .always(read_slot(64))
                    .then(Op::CloseSlot);
                let steps = ring.submit_chain(chain).await.unwrap();
                let want = format!("file {}", i % 50);
                assert_eq!(results(&steps), [0, want.len() as i32, 0]);
                assert_eq!(read_data(&steps), want.as_bytes());
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    }

    /// Descriptors of this process open on `file` (other tests running
    /// alongside open their own files, never this one).
    fn open_fds(file: &std::path::Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target == file)
            .count()
    }

    /// Opens whose callers give up before the reply (a deadline) leave no
    /// descriptor behind.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn opens_of_callers_that_gave_up_are_closed() {
        let Some(ring) = ring(64).await else { return };
        let ring = Arc::new(ring);
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("f"), b"x").unwrap();
        let dir = dir_fd(tmp.path());
        let open = || Op::OpenAt {
            dir: Arc::clone(&dir),
            path: CString::new("f").unwrap(),
            flags: libc::O_RDONLY | libc::O_CLOEXEC,
            mode: 0,
        };
        let file = tmp.path().join("f").canonicalize().unwrap();
        assert_eq!(open_fds(&file), 0);
        let mut given_up = 0;
        for _ in 0..2000 {
            // Polled once (submitted), then dropped if its reply is not
            // there yet; a descriptor that did come back is closed here.
            let mut submit = Box::pin(ring.submit(open()));
            let polled =
                std::future::poll_fn(|cx| std::task::Poll::Ready(submit.as_mut().poll(cx))).await;
            match polled {
                std::task::Poll::Pending => given_up += 1,
                std::task::Poll::Ready(done) => drop(owned_fd(done.unwrap().0 as u32).unwrap()),
            }
        }
        for _ in 0..4 {
            ring.submit(Op::Nop).await.unwrap();
        }
        assert!(given_up >= 20, "only {given_up} opens were given up");
        // An open the kernel handed to an io-wq worker can complete after
        // a later NOP, so its descriptor is closed when its reply comes:
        // wait for that (a leaked one never goes), up to a bound.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut left = open_fds(&file);
        while left > 0 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
            left = open_fds(&file);
        }
        assert_eq!(
            left, 0,
            "{left} descriptors left by {given_up} abandoned opens"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slot_ops_only_in_chains_of_bounded_length() {
        let Some(ring) = ring(64).await else { return };
        let invalid = |result: io::Result<_>| matches!(result, Err(e) if e.kind() == io::ErrorKind::InvalidInput);
        assert!(invalid(ring.submit(Op::CloseSlot).await.map(drop)));
        let long = (0..=MAX_CHAIN).fold(Chain::new(), |chain, _| chain.then(Op::Nop));
        assert!(invalid(ring.submit_chain(long).await.map(drop)));
        assert!(invalid(ring.submit_chain(Chain::new()).await.map(drop)));
        let most = (0..MAX_CHAIN).fold(Chain::new(), |chain, _| chain.then(Op::Nop));
        let steps = ring.submit_chain(most).await.unwrap();
        assert_eq!(results(&steps), vec![0; MAX_CHAIN]);
    }
}

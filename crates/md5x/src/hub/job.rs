//! A job: a run of whole blocks of one hasher, where its bytes lie, who
//! owns them, and how far the hashing has got (its phase in the queue
//! protocol and the owner to wake).

use std::any::Any;
use std::sync::Mutex;
use std::task::Waker;
use std::thread::Thread;
use std::time::Instant;

use crate::portable::{self, BLOCK};

/// A run of whole blocks of one hasher, and its progress. The blocks lie
/// in one or more contiguous segments (several when the update was made of
/// several buffers).
pub(super) struct Job {
    pub(super) segments: Vec<Segment>,
    pub(super) blocks: usize,
    /// What the segments point into, when the job owns it (the
    /// `update_block` and `update_parts` paths: the caller's buffers and the
    /// blocks glued from the edges of its parts); `None` when the owner's
    /// thread lends the bytes (the `update` path).
    pub(super) owned: Mutex<Option<Owned>>,
    pub(super) inner: Mutex<JobInner>,
}

/// The buffers a job owns: the caller's (given back when the job is done)
/// and the glue blocks.
pub(super) struct Owned {
    pub(super) caller: Box<dyn Any + Send>,
    pub(super) _glue: Vec<u8>,
}

/// `blocks` whole blocks starting at `data`.
pub(super) struct Segment {
    pub(super) data: BlockPtr,
    pub(super) blocks: usize,
}

/// The first byte of a segment's blocks.
pub(super) struct BlockPtr(pub(super) *const u8);

// SAFETY: the pointer is only dereferenced (as a shared `&[u8]`) by a
// combiner that holds the job claimed, while the bytes are kept alive and
// unmodified: borrowed by a synchronous `update` that does not return (nor
// unwind) before the job is done or released, or owned by the job itself.
// Reading the same immutable bytes from any thread is sound.
unsafe impl Send for BlockPtr {}
// SAFETY: as above; the pointer itself is never written after creation.
unsafe impl Sync for BlockPtr {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// In the queue.
    Queued,
    /// In some combiner's lanes (or about to be, for a leader).
    Claimed,
    /// Out of the queue; its owner was woken to run `combine` for it.
    Elected,
    /// All blocks hashed; `state` is final.
    Done,
    /// Abandoned by its owner and let go by its combiner.
    Released,
}

pub(super) struct JobInner {
    pub(super) phase: Phase,
    /// The state after `done_blocks` blocks (valid unless `Claimed`).
    pub(super) state: [u32; 4],
    pub(super) done_blocks: usize,
    pub(super) queued_at: Instant,
    pub(super) abandoned: bool,
    pub(super) waiter: Waiter,
}

pub(super) enum Waiter {
    None,
    Thread(Thread),
    Task(Waker),
}

impl Waiter {
    pub(super) fn wake(self) {
        match self {
            Waiter::None => {}
            Waiter::Thread(t) => t.unpark(),
            Waiter::Task(w) => w.wake(),
        }
    }
}

impl Job {
    pub(super) fn new(segments: Vec<Segment>, state: [u32; 4], owned: Option<Owned>) -> Job {
        Job {
            blocks: segments.iter().map(|s| s.blocks).sum(),
            segments,
            owned: Mutex::new(owned),
            inner: Mutex::new(JobInner {
                phase: Phase::Claimed,
                state,
                done_blocks: 0,
                queued_at: Instant::now(),
                abandoned: false,
                waiter: Waiter::None,
            }),
        }
    }

    /// The segment holding block `from` (`< blocks`) and the index of
    /// `from` in it.
    pub(super) fn locate(&self, from: usize) -> (&Segment, usize) {
        let mut at = from;
        for seg in &self.segments {
            if at < seg.blocks {
                return (seg, at);
            }
            at -= seg.blocks;
        }
        panic!("block {from} past the job's end ({} blocks)", self.blocks);
    }

    /// How many blocks from block `from` (`< blocks`) are contiguous: the
    /// rest of its segment.
    pub(super) fn run_len(&self, from: usize) -> usize {
        let (seg, at) = self.locate(from);
        seg.blocks - at
    }

    /// The contiguous blocks from block `from` (`< blocks`) to the end of
    /// its segment.
    ///
    /// # Safety
    /// The caller holds the job claimed (phase `Claimed`, by itself), or is
    /// its only user (never queued), and drops the slice before making it
    /// `Done`, `Released` or `Queued`.
    pub(super) unsafe fn run(&self, from: usize) -> &[u8] {
        let (seg, at) = self.locate(from);
        // SAFETY: see `BlockPtr`: while claimed, the owner keeps the
        // segment's `blocks * 64` bytes at `data` alive and unmodified.
        let all = unsafe { std::slice::from_raw_parts(seg.data.0, seg.blocks * BLOCK) };
        &all[at * BLOCK..]
    }

    /// Hashes all the job's blocks into `state` on the single-stream code.
    ///
    /// # Safety
    /// As for [`Job::run`].
    pub(super) unsafe fn compress_all(&self, state: &mut [u32; 4]) {
        let mut from = 0;
        while from < self.blocks {
            // SAFETY: the caller's guarantee.
            let run = unsafe { self.run(from) };
            portable::compress(state, run);
            from += run.len() / BLOCK;
        }
    }
}

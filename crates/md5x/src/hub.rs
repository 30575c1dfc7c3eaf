//! The hub: streaming MD5 for many concurrent requests, with the whole
//! blocks of concurrent hashers hashed together in the SIMD lanes.
//!
//! # Model
//!
//! A [`Hasher`] buffers partial blocks itself. When an update brings whole
//! 64-byte blocks (typically a 1 MiB erasure block of an upload), they
//! become a *job*: the hasher's state plus a run of blocks. Jobs are not
//! handed to a thread of the hub (there is none): the callers themselves do
//! the work, by *combining* (flat combining):
//!
//! - A caller whose job arrives while no one is hashing becomes a
//!   *combiner*: it takes its own job into a lane, and at every quantum
//!   (`quantum_blocks` blocks per lane, 16 KiB by default) it takes the
//!   jobs other callers have queued meanwhile into its free lanes and
//!   advances all lanes together with the kernel's lane code. A lane whose
//!   job ends is given back to its owner, who returns.
//! - A caller whose job arrives while a combiner runs queues it and sleeps
//!   (the synchronous [`Hasher::update`] parks its thread; the future of
//!   [`Hasher::update_block`] returns `Pending`). Sleeping costs no CPU:
//!   that is where the saving in CPU-seconds per byte comes from.
//! - A combiner leaves as soon as its own job is done: the unfinished jobs
//!   in its lanes go back to the front of the queue with their progress,
//!   and if no other combiner runs, the owner of the first queued job is
//!   woken to take over (*elected*).
//! - On the async path a combiner also leaves after `async_budget_quanta`
//!   (2 by default)
//!   (its own job first in the queue, so it is elected again at once if no
//!   one else combines) and returns `Pending` having woken itself: the
//!   worker thread then polls the other tasks, whose next blocks join the
//!   lanes, before the combining resumes. Without this, a worker busy
//!   combining starves the very tasks that would fill its lanes (measured:
//!   the bytes per CPU-second improve 1.5x to 1.9x for 4 to 16 tasks on
//!   two workers; `docs/bench-notes/md5.md`).
//!
//! # Bounds
//!
//! - No caller waits for streams that do not exist yet: a combiner never
//!   delays a quantum to fill lanes; it uses what is queued at that moment.
//! - A queued job waits at most `max_queue_wait` (200 us by default)
//!   before someone works on it: a combiner whose lanes are full elects the
//!   owner of a job older than that, and a synchronous owner whose job is
//!   still queued after that long becomes a combiner itself. A caller also
//!   becomes an extra combiner at once when a full lane set of jobs is
//!   queued.
//! - The queue holds at most `max_queued` jobs; a caller that finds it
//!   full hashes alone.
//! - With fewer live hashers than `min_simd_streams` (lanes would stay
//!   mostly empty), nobody queues: every caller hashes its own blocks on the
//!   single-stream path at once, exactly like a plain MD5. So does a hub on
//!   the portable kernel, and any update of fewer than `min_job_bytes`.
//! - Dropping a [`Hasher`] between updates leaves nothing behind. Dropping
//!   an [`update_block`](Hasher::update_block) future mid-flight abandons
//!   its job: a queued job is removed, a claimed one is dropped by its
//!   combiner at the next quantum, an elected owner passes the role on.
//!   The block is owned by the job, so no one reads freed memory.
//!
//! The price of lanes is latency per stream: a 1 MiB job shares the core
//! with up to 15 others, so it finishes later than alone, while the CPU
//! time per byte drops. See `docs/bench-notes/md5.md` for the figures.

use std::any::Any;
use std::collections::VecDeque;
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crate::Kernel;
use crate::portable::{self, BLOCK, INIT};

/// Tuning of an [`Md5Hub`]. [`HubConfig::default`] is what
/// [`Md5Hub::global`] uses.
#[derive(Clone, Copy, Debug)]
pub struct HubConfig {
    /// The kernel whose lanes are filled (default: [`Kernel::detect`]).
    pub kernel: Kernel,
    /// Longest time a queued job waits before someone works on it.
    pub max_queue_wait: Duration,
    /// Blocks each lane advances between two looks at the queue.
    pub quantum_blocks: usize,
    /// Fewest live hashers for which blocks are queued for the lanes, and
    /// fewest jobs in a combiner's lanes for which the lane code runs (with
    /// fewer, the lanes' jobs run one after another on the single-stream
    /// code, which is faster per stream).
    pub min_simd_streams: usize,
    /// Most jobs in the queue.
    pub max_queued: usize,
    /// Updates with fewer whole-block bytes than this are hashed on the
    /// calling thread without the queue.
    pub min_job_bytes: usize,
    /// Quanta a combiner on the async path runs per poll before it gives
    /// its worker thread back to the runtime (at least 1).
    pub async_budget_quanta: usize,
}

impl Default for HubConfig {
    fn default() -> Self {
        HubConfig {
            kernel: Kernel::detect(),
            max_queue_wait: Duration::from_micros(200),
            quantum_blocks: 256,
            min_simd_streams: 2,
            max_queued: 256,
            min_job_bytes: 16 << 10,
            async_budget_quanta: 2,
        }
    }
}

/// Counters of what a hub did, for tests, benchmarks and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HubStats {
    /// Jobs that went through the queue or a combiner.
    pub jobs_combined: u64,
    /// Updates hashed on the caller's thread without the queue.
    pub jobs_alone: u64,
    /// Blocks of those updates (single-stream code).
    pub blocks_alone: u64,
    /// Block-lanes advanced by the lane code (blocks x lanes used).
    pub blocks_in_lanes: u64,
    /// Blocks advanced by the single-stream code inside combiners.
    pub blocks_single: u64,
    /// Kernel calls with more than one lane.
    pub lane_calls: u64,
    /// Steps of those calls (each advances every lane in use by one
    /// block): `blocks_in_lanes / lane_steps` is the mean number of lanes
    /// filled.
    pub lane_steps: u64,
    /// Callers that became combiners (leaders, extra and elected ones).
    pub combiner_runs: u64,
    /// Elections (a waiting owner woken to become a combiner).
    pub elections: u64,
}

#[derive(Default)]
struct Counters {
    jobs_combined: AtomicU64,
    jobs_alone: AtomicU64,
    blocks_alone: AtomicU64,
    blocks_in_lanes: AtomicU64,
    blocks_single: AtomicU64,
    lane_calls: AtomicU64,
    lane_steps: AtomicU64,
    combiner_runs: AtomicU64,
    elections: AtomicU64,
}

fn bump(c: &AtomicU64, by: u64) {
    c.fetch_add(by, Ordering::Relaxed);
}

/// A process's MD5 hub: hands out [`Hasher`]s whose whole blocks are
/// hashed together in the SIMD lanes. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Md5Hub {
    shared: Arc<Shared>,
}

struct Shared {
    config: HubConfig,
    /// Lanes of the kernel (1: no combining).
    width: usize,
    queue: Mutex<Queue>,
    live_hashers: AtomicUsize,
    counters: Counters,
}

struct Queue {
    /// Jobs waiting for a lane, oldest first; all in phase `Queued`.
    jobs: VecDeque<Arc<Job>>,
    /// Callers currently running `combine` (including elected ones that
    /// have not started yet).
    combiners: usize,
}

/// A run of whole blocks of one hasher, and its progress. The blocks lie
/// in one or more contiguous segments (several when the update was made of
/// several buffers).
struct Job {
    segments: Vec<Segment>,
    blocks: usize,
    /// What the segments point into, when the job owns it (the
    /// `update_block` and `update_parts` paths: the caller's buffers and the
    /// blocks glued from the edges of its parts); `None` when the owner's
    /// thread lends the bytes (the `update` path).
    owned: Mutex<Option<Owned>>,
    inner: Mutex<JobInner>,
}

/// The buffers a job owns: the caller's (given back when the job is done)
/// and the glue blocks.
struct Owned {
    caller: Box<dyn Any + Send>,
    _glue: Vec<u8>,
}

/// `blocks` whole blocks starting at `data`.
struct Segment {
    data: BlockPtr,
    blocks: usize,
}

/// The first byte of a segment's blocks.
struct BlockPtr(*const u8);

// SAFETY: the pointer is only dereferenced (as a shared `&[u8]`) by a
// combiner that holds the job claimed, while the bytes are kept alive and
// unmodified: borrowed by a synchronous `update` that does not return (nor
// unwind) before the job is done or released, or owned by the job itself.
// Reading the same immutable bytes from any thread is sound.
unsafe impl Send for BlockPtr {}
// SAFETY: as above; the pointer itself is never written after creation.
unsafe impl Sync for BlockPtr {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
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

struct JobInner {
    phase: Phase,
    /// The state after `done_blocks` blocks (valid unless `Claimed`).
    state: [u32; 4],
    done_blocks: usize,
    queued_at: Instant,
    abandoned: bool,
    waiter: Waiter,
}

enum Waiter {
    None,
    Thread(Thread),
    Task(Waker),
}

impl Waiter {
    fn wake(self) {
        match self {
            Waiter::None => {}
            Waiter::Thread(t) => t.unpark(),
            Waiter::Task(w) => w.wake(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while a lock was held left consistent data behind (every
    // critical section here only moves jobs and flags), so poisoning is
    // ignored rather than spread to every caller.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Job {
    fn new(segments: Vec<Segment>, state: [u32; 4], owned: Option<Owned>) -> Job {
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
    fn locate(&self, from: usize) -> (&Segment, usize) {
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
    fn run_len(&self, from: usize) -> usize {
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
    unsafe fn run(&self, from: usize) -> &[u8] {
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
    unsafe fn compress_all(&self, state: &mut [u32; 4]) {
        let mut from = 0;
        while from < self.blocks {
            // SAFETY: the caller's guarantee.
            let run = unsafe { self.run(from) };
            portable::compress(state, run);
            from += run.len() / BLOCK;
        }
    }
}

impl Md5Hub {
    /// The process-wide hub (created at first use with
    /// [`HubConfig::default`], which runs kernel detection).
    pub fn global() -> &'static Md5Hub {
        static GLOBAL: OnceLock<Md5Hub> = OnceLock::new();
        GLOBAL.get_or_init(|| Md5Hub::new(HubConfig::default()))
    }

    /// A hub with its own queue (for tests and benchmarks; a server wants
    /// [`Md5Hub::global`], so that all its requests share lanes).
    ///
    /// # Panics
    /// If `quantum_blocks` is 0.
    pub fn new(config: HubConfig) -> Md5Hub {
        assert!(config.quantum_blocks > 0, "quantum_blocks must be positive");
        Md5Hub {
            shared: Arc::new(Shared {
                width: config.kernel.lanes(),
                config,
                queue: Mutex::new(Queue {
                    jobs: VecDeque::new(),
                    combiners: 0,
                }),
                live_hashers: AtomicUsize::new(0),
                counters: Counters::default(),
            }),
        }
    }

    /// A new MD5 computation.
    pub fn hasher(&self) -> Hasher {
        self.shared.live_hashers.fetch_add(1, Ordering::Relaxed);
        Hasher {
            shared: self.shared.clone(),
            state: INIT,
            buf: [0; BLOCK],
            buf_len: 0,
            total: 0,
        }
    }

    /// The kernel whose lanes this hub fills.
    pub fn kernel(&self) -> Kernel {
        self.shared.config.kernel
    }

    /// The hub's configuration.
    pub fn config(&self) -> &HubConfig {
        &self.shared.config
    }

    /// What the hub has done so far.
    pub fn stats(&self) -> HubStats {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        HubStats {
            jobs_combined: get(&c.jobs_combined),
            jobs_alone: get(&c.jobs_alone),
            blocks_alone: get(&c.blocks_alone),
            blocks_in_lanes: get(&c.blocks_in_lanes),
            blocks_single: get(&c.blocks_single),
            lane_calls: get(&c.lane_calls),
            lane_steps: get(&c.lane_steps),
            combiner_runs: get(&c.combiner_runs),
            elections: get(&c.elections),
        }
    }

    /// Live hashers and queued jobs (for tests: both 0 when idle).
    pub fn load(&self) -> (usize, usize) {
        let q = lock(&self.shared.queue);
        (
            self.shared.live_hashers.load(Ordering::Relaxed),
            q.jobs.len(),
        )
    }
}

impl std::fmt::Debug for Md5Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Md5Hub")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

/// What a submitter must do with its job.
enum Submit {
    /// Hash it on this thread, alone (the queue is not involved).
    Alone,
    /// Run `combine` for it now (it is claimed).
    Lead,
    /// It is queued: wait.
    Wait,
}

impl Shared {
    /// Counts an update of `blocks` blocks hashed by its caller alone.
    fn count_alone(&self, blocks: usize) {
        bump(&self.counters.jobs_alone, 1);
        bump(&self.counters.blocks_alone, blocks as u64);
    }

    /// Whether a job of `bytes` whole-block bytes should go to the queue.
    fn wants_lanes(&self, bytes: usize) -> bool {
        self.width > 1
            && bytes >= self.config.min_job_bytes.max(BLOCK)
            && self.live_hashers.load(Ordering::Relaxed) >= self.config.min_simd_streams
    }

    fn submit(&self, job: &Arc<Job>, waiter: Waiter) -> Submit {
        let mut q = lock(&self.queue);
        if q.jobs.len() >= self.config.max_queued {
            return Submit::Alone;
        }
        bump(&self.counters.jobs_combined, 1);
        if q.combiners == 0 || q.jobs.len() >= self.width {
            q.combiners += 1;
            return Submit::Lead;
        }
        let mut inner = lock(&job.inner);
        inner.phase = Phase::Queued;
        inner.queued_at = Instant::now();
        inner.waiter = waiter;
        drop(inner);
        q.jobs.push_back(job.clone());
        Submit::Wait
    }

    /// Elects the owner of the first queued job to run a combiner (the
    /// caller has counted it in `combiners`). Returns its waiter to wake
    /// once the queue lock is released.
    fn elect_front(&self, q: &mut Queue) -> Option<Waiter> {
        let job = q.jobs.pop_front()?;
        let mut inner = lock(&job.inner);
        inner.phase = Phase::Elected;
        q.combiners += 1;
        bump(&self.counters.elections, 1);
        Some(std::mem::replace(&mut inner.waiter, Waiter::None))
    }

    /// Gives up a combiner role (`combiners -= 1`); if that leaves queued
    /// jobs with no combiner, elects the first one's owner.
    fn leave(&self, q: &mut Queue) -> Option<Waiter> {
        q.combiners -= 1;
        if q.combiners == 0 {
            self.elect_front(q)
        } else {
            None
        }
    }

    /// The owner gives up `job` before it is done (a dropped future or an
    /// unwinding update). Returns whether a combiner still holds it (the
    /// bytes are still being read).
    fn abandon(&self, job: &Arc<Job>) -> bool {
        let mut q = lock(&self.queue);
        let mut inner = lock(&job.inner);
        let mut wake = None;
        let held = match inner.phase {
            Phase::Queued => {
                if let Some(pos) = q.jobs.iter().position(|j| Arc::ptr_eq(j, job)) {
                    q.jobs.remove(pos);
                }
                inner.phase = Phase::Released;
                false
            }
            Phase::Elected => {
                inner.phase = Phase::Released;
                wake = self.leave(&mut q);
                false
            }
            Phase::Claimed => {
                inner.abandoned = true;
                true
            }
            Phase::Done | Phase::Released => false,
        };
        inner.waiter = Waiter::None;
        drop(inner);
        drop(q);
        if let Some(w) = wake {
            w.wake();
        }
        held
    }

    /// Runs a combiner for `own` (claimed by this caller, counted in
    /// `combiners`) until `own` is done (returns true), or until `budget`
    /// quanta have run (returns false): then every lane, `own` first, goes
    /// back to the queue and the role is left, which elects `own`'s owner
    /// again if no other combiner runs. The async path uses a budget so
    /// that its worker thread gets to run the other tasks (whose next
    /// blocks fill the lanes) between two stretches of combining.
    fn combine(&self, own: &Arc<Job>, budget: Option<usize>) -> bool {
        bump(&self.counters.combiner_runs, 1);
        let start = {
            let inner = lock(&own.inner);
            (inner.state, inner.done_blocks)
        };
        let mut c = Combiner {
            shared: self,
            lanes: vec![Lane {
                job: own.clone(),
                state: start.0,
                done_blocks: start.1,
            }],
            finished: false,
        };
        c.run(own, budget)
    }
}

/// A job in a combiner's lane, with its progress (the job's own `state`
/// is stale while claimed).
struct Lane {
    job: Arc<Job>,
    state: [u32; 4],
    done_blocks: usize,
}

struct Combiner<'a> {
    shared: &'a Shared,
    lanes: Vec<Lane>,
    /// Set on the normal exit; `Drop` hands the lanes back otherwise.
    finished: bool,
}

impl Combiner<'_> {
    fn run(&mut self, own: &Arc<Job>, mut budget: Option<usize>) -> bool {
        let s = self.shared;
        let quantum = s.config.quantum_blocks;
        let mut states: Vec<[u32; 4]> = Vec::with_capacity(s.width);
        loop {
            // Done lanes are retired after each quantum, so the own job is
            // done when it is no longer in a lane.
            let Some(mine) = self.lanes.iter().position(|l| Arc::ptr_eq(&l.job, own)) else {
                self.hand_back();
                return true;
            };
            if budget == Some(0) {
                // `hand_back` pushes the lanes to the front in order: own
                // job first, so the next combiner (or its owner, elected)
                // resumes it before the others.
                self.lanes.swap(0, mine);
                self.hand_back();
                return false;
            }
            budget = budget.map(|b| b - 1);
            self.refill();
            let n = self.lanes.len();
            // Alone in the lanes while other hashers are live: look at the
            // queue again sooner, so that their blocks join before this one
            // has spent much of its job on the single-stream code.
            let quantum = if n == 1 && s.live_hashers.load(Ordering::Relaxed) > 1 {
                (quantum / 8).max(1)
            } else {
                quantum
            };
            let blocks = self
                .lanes
                .iter()
                .map(|l| l.job.run_len(l.done_blocks))
                .min()
                .unwrap_or(0)
                .min(quantum);
            if n >= s.config.min_simd_streams.max(2) {
                states.clear();
                states.extend(self.lanes.iter().map(|l| l.state));
                // SAFETY: every lane's job is claimed by this combiner
                // (phase `Claimed`, set under the queue lock when it was
                // taken), and the slices die before any lane is retired.
                let data: Vec<&[u8]> = self
                    .lanes
                    .iter()
                    .map(|l| unsafe { l.job.run(l.done_blocks) })
                    .collect();
                s.config.kernel.compress_lanes(&mut states, &data, blocks);
                drop(data);
                for (l, st) in self.lanes.iter_mut().zip(&states) {
                    l.state = *st;
                }
                bump(&s.counters.blocks_in_lanes, (blocks * n) as u64);
                bump(&s.counters.lane_calls, 1);
                bump(&s.counters.lane_steps, blocks as u64);
            } else {
                for l in &mut self.lanes {
                    // SAFETY: as above, the job is claimed by this
                    // combiner.
                    let run = unsafe { l.job.run(l.done_blocks) };
                    portable::compress(&mut l.state, &run[..blocks * BLOCK]);
                }
                bump(&s.counters.blocks_single, (blocks * n) as u64);
            }
            for l in &mut self.lanes {
                l.done_blocks += blocks;
            }
            self.retire_done(own);
        }
    }

    /// Takes queued jobs into free lanes, drops abandoned lanes, and elects
    /// an extra combiner for a job that has waited too long.
    fn refill(&mut self) {
        let s = self.shared;
        let mut wake = Vec::new();
        {
            let mut q = lock(&s.queue);
            self.lanes.retain(|l| {
                let mut inner = lock(&l.job.inner);
                if !inner.abandoned {
                    return true;
                }
                inner.phase = Phase::Released;
                wake.push(std::mem::replace(&mut inner.waiter, Waiter::None));
                false
            });
            while self.lanes.len() < s.width {
                let Some(job) = q.jobs.pop_front() else { break };
                let mut inner = lock(&job.inner);
                inner.phase = Phase::Claimed;
                let lane = Lane {
                    job: job.clone(),
                    state: inner.state,
                    done_blocks: inner.done_blocks,
                };
                drop(inner);
                self.lanes.push(lane);
            }
            let overdue = q
                .jobs
                .front()
                .is_some_and(|j| lock(&j.inner).queued_at.elapsed() > s.config.max_queue_wait);
            if overdue && let Some(w) = s.elect_front(&mut q) {
                wake.push(w);
            }
        }
        for w in wake {
            w.wake();
        }
    }

    /// Gives finished jobs back to their owners.
    fn retire_done(&mut self, own: &Arc<Job>) {
        let mut i = 0;
        while i < self.lanes.len() {
            let l = &self.lanes[i];
            if l.done_blocks < l.job.blocks {
                i += 1;
                continue;
            }
            let l = self.lanes.swap_remove(i);
            let mut inner = lock(&l.job.inner);
            inner.state = l.state;
            inner.done_blocks = l.done_blocks;
            inner.phase = Phase::Done;
            let w = std::mem::replace(&mut inner.waiter, Waiter::None);
            drop(inner);
            let mine = Arc::ptr_eq(&l.job, own);
            drop(l);
            if !mine {
                w.wake();
            }
        }
    }

    /// Puts the jobs still in lanes back at the front of the queue (in
    /// their order) and leaves the combiner role.
    fn hand_back(&mut self) {
        let s = self.shared;
        let mut q = lock(&s.queue);
        for l in self.lanes.drain(..).rev() {
            let mut inner = lock(&l.job.inner);
            inner.state = l.state;
            inner.done_blocks = l.done_blocks;
            if inner.abandoned {
                inner.phase = Phase::Released;
                let w = std::mem::replace(&mut inner.waiter, Waiter::None);
                drop(inner);
                // Waking a thread under the queue lock is harmless (unpark
                // only sets a flag); tasks are only woken after.
                w.wake();
                continue;
            }
            inner.phase = Phase::Queued;
            inner.queued_at = Instant::now();
            drop(inner);
            q.jobs.push_front(l.job);
        }
        let wake = s.leave(&mut q);
        self.finished = true;
        drop(q);
        if let Some(w) = wake {
            w.wake();
        }
    }
}

impl Drop for Combiner<'_> {
    fn drop(&mut self) {
        if !self.finished {
            // Unwinding out of a kernel: give every job back (states as of
            // the last completed quantum) so no owner waits for us.
            self.hand_back();
        }
    }
}

/// A streaming MD5 computation of an [`Md5Hub`].
///
/// [`update`](Hasher::update) (synchronous, borrowed bytes) and
/// [`update_block`](Hasher::update_block) (a future, owned buffer) can be
/// mixed. Dropping a hasher at any point between calls is fine.
pub struct Hasher {
    shared: Arc<Shared>,
    state: [u32; 4],
    buf: [u8; BLOCK],
    buf_len: usize,
    total: u64,
}

impl std::fmt::Debug for Hasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hasher")
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

impl Drop for Hasher {
    fn drop(&mut self) {
        self.shared.live_hashers.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Hasher {
    /// Splits `data` into the part that completes the buffered block (hashed
    /// here), the whole blocks (returned as a range) and the tail (left for
    /// the caller to buffer after the whole blocks).
    fn prefix(&mut self, data: &[u8]) -> std::ops::Range<usize> {
        self.total += data.len() as u64;
        let start = self.top_up(data);
        if self.buf_len == BLOCK {
            portable::compress(&mut self.state, &self.buf);
            self.buf_len = 0;
        } else if self.buf_len > 0 {
            return start..start;
        }
        let whole = (data.len() - start) / BLOCK * BLOCK;
        start..start + whole
    }

    /// Moves the head of `data` into the buffered partial block, if there
    /// is one, up to a whole block (which the caller then takes and
    /// clears). Returns how many bytes it took.
    fn top_up(&mut self, data: &[u8]) -> usize {
        if self.buf_len == 0 {
            return 0;
        }
        let take = (BLOCK - self.buf_len).min(data.len());
        self.buf[self.buf_len..self.buf_len + take].copy_from_slice(&data[..take]);
        self.buf_len += take;
        take
    }

    fn buffer_tail(&mut self, tail: &[u8]) {
        debug_assert!(self.buf_len + tail.len() <= BLOCK);
        self.buf[self.buf_len..self.buf_len + tail.len()].copy_from_slice(tail);
        self.buf_len += tail.len();
    }

    /// Feeds `data`. Whole blocks of a large enough update are hashed in
    /// the lanes together with other hashers' blocks when other streams are
    /// live; the call returns when they are hashed (after at most the
    /// bounded waits of the module documentation).
    pub fn update(&mut self, data: &[u8]) {
        let range = self.prefix(data);
        let whole = &data[range.clone()];
        if !whole.is_empty() {
            if self.shared.wants_lanes(whole.len()) {
                self.state = run_sync(&self.shared, self.state, whole);
            } else {
                self.shared.count_alone(whole.len() / BLOCK);
                portable::compress(&mut self.state, whole);
            }
        }
        self.buffer_tail(&data[range.end..]);
    }

    /// Feeds `block` (typically a 1 MiB erasure block) as a future that
    /// gives the hasher and the buffer back. Callers on an async runtime
    /// use this one: while the block waits for a lane, the task yields and
    /// the worker thread runs other tasks (which may submit more blocks).
    /// When it does run, the future may hash a batch of several tasks'
    /// blocks on the polling thread (like a synchronous MD5 would block it
    /// for its own block), bounded by the lanes' current jobs.
    ///
    /// Dropping the future before it completes drops the hasher too (its
    /// state would be unknown).
    ///
    /// ```
    /// // A PUT's loop: one read buffer, handed over and given back.
    /// async fn etag(blocks: &[&[u8]]) -> [u8; 16] {
    ///     let mut h = md5x::Md5Hub::global().hasher();
    ///     let mut buf = Vec::with_capacity(1 << 20);
    ///     for b in blocks {
    ///         buf.clear();
    ///         buf.extend_from_slice(b); // stands for the body read
    ///         (h, buf) = h.update_block(buf).await;
    ///     }
    ///     h.finalize()
    /// }
    /// # let w = std::task::Waker::noop();
    /// # let mut cx = std::task::Context::from_waker(w);
    /// # let mut f = std::pin::pin!(etag(&[b"ab", b"c"]));
    /// # let d = loop {
    /// #     if let std::task::Poll::Ready(d) = f.as_mut().poll(&mut cx) { break d; }
    /// # };
    /// # assert_eq!(d, md5x::digest(b"abc"));
    /// ```
    pub fn update_block(self, block: Vec<u8>) -> BlockUpdate {
        self.update_owned(block, |b: &Vec<u8>| vec![&b[..]])
    }

    /// Feeds the concatenation of `parts` (each a range of a buffer's
    /// [`StableBytes::bytes`]) as a future that gives the hasher and the
    /// buffers back, in order. Like [`update_block`](Hasher::update_block),
    /// but the bytes may lie in several buffers and need not be copied
    /// together first: a PUT reads its body straight into the data shards
    /// of its erasure-coded records and hashes them there. The blocks that
    /// straddle two parts are copied (64 bytes each); everything else is
    /// hashed where it lies.
    ///
    /// # Panics
    /// If a range is out of its buffer's bounds.
    ///
    /// ```
    /// # let w = std::task::Waker::noop();
    /// # let mut cx = std::task::Context::from_waker(w);
    /// let h = md5x::Md5Hub::global().hasher();
    /// let parts = vec![(b"xxab".to_vec(), 2..4), (b"c".to_vec(), 0..1)];
    /// let mut f = std::pin::pin!(h.update_parts(parts));
    /// let (h, bufs) = loop {
    ///     if let std::task::Poll::Ready(r) = f.as_mut().poll(&mut cx) { break r; }
    /// };
    /// assert_eq!(bufs[1], b"c");
    /// assert_eq!(h.finalize(), md5x::digest(b"abc"));
    /// ```
    pub fn update_parts<B: StableBytes>(
        self,
        parts: Vec<(B, Range<usize>)>,
    ) -> BlockUpdate<Vec<B>> {
        let (bufs, ranges): (Vec<B>, Vec<Range<usize>>) = parts.into_iter().unzip();
        for (b, r) in bufs.iter().zip(&ranges) {
            assert!(
                r.start <= r.end && r.end <= b.bytes().len(),
                "update_parts: range {r:?} out of a buffer of {} bytes",
                b.bytes().len()
            );
        }
        self.update_owned(bufs, move |bufs: &Vec<B>| {
            bufs.iter()
                .zip(&ranges)
                .map(|(b, r)| &b.bytes()[r.clone()])
                .collect()
        })
    }

    /// The owned updates: `owner` holds the bytes and `parts` finds them in
    /// it. The slices `parts` returns must not move when `owner` moves
    /// (true of a `Vec<u8>` and of a `Vec` of [`StableBytes`], the only
    /// owners used): the job keeps pointers to them.
    fn update_owned<O, F>(mut self, owner: O, parts: F) -> BlockUpdate<O>
    where
        O: Send + 'static,
        F: for<'a> Fn(&'a O) -> Vec<&'a [u8]>,
    {
        let (pieces, glue) = self.plan(&parts(&owner));
        let whole = pieces.iter().map(Piece::blocks).sum::<usize>() * BLOCK;
        if whole == 0 || !self.shared.wants_lanes(whole) {
            if whole > 0 {
                self.shared.count_alone(whole / BLOCK);
                let slices = parts(&owner);
                for p in &pieces {
                    portable::compress(&mut self.state, p.bytes(&slices, &glue));
                }
            }
            return BlockUpdate {
                stage: Stage::Ready(self, owner),
            };
        }
        let segments = {
            let slices = parts(&owner);
            pieces
                .iter()
                .map(|p| {
                    let b = p.bytes(&slices, &glue);
                    Segment {
                        data: BlockPtr(b.as_ptr()),
                        blocks: b.len() / BLOCK,
                    }
                })
                .collect()
        };
        // Moving `owner` and `glue` into the job does not move the bytes
        // the segments point to (see above; a Vec's heap buffer stays put).
        let owned = Owned {
            caller: Box::new(owner),
            _glue: glue,
        };
        let job = Arc::new(Job::new(segments, self.state, Some(owned)));
        BlockUpdate {
            stage: Stage::New { hasher: self, job },
        }
    }

    /// Splits the bytes `parts` add to the stream into whole blocks: runs
    /// of the parts' own bytes, and glue blocks (copied into the returned
    /// buffer) where a block completes the bytes buffered before or
    /// straddles two parts. The last partial block is buffered in the
    /// hasher, which counts every byte: the hasher is in the state after
    /// the blocks as soon as they are hashed from its current state.
    fn plan(&mut self, parts: &[&[u8]]) -> (Vec<Piece>, Vec<u8>) {
        let mut pieces = Vec::new();
        let mut glue = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            self.total += part.len() as u64;
            let mut at = self.top_up(part);
            if self.buf_len == BLOCK {
                pieces.push(Piece::Glue { start: glue.len() });
                glue.extend_from_slice(&self.buf);
                self.buf_len = 0;
            } else if self.buf_len > 0 {
                continue;
            }
            let blocks = (part.len() - at) / BLOCK;
            if blocks > 0 {
                pieces.push(Piece::Part {
                    part: i,
                    start: at,
                    blocks,
                });
                at += blocks * BLOCK;
            }
            self.buffer_tail(&part[at..]);
        }
        (pieces, glue)
    }

    /// The MD5 of everything fed.
    pub fn finalize(self) -> [u8; 16] {
        portable::finish(&self.state, &self.buf[..self.buf_len], self.total)
    }

    /// Bytes fed so far.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Whether nothing has been fed.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

/// A run of whole blocks of an owned update, found in the caller's parts
/// or in the glue buffer.
enum Piece {
    Part {
        part: usize,
        start: usize,
        blocks: usize,
    },
    Glue {
        start: usize,
    },
}

impl Piece {
    fn blocks(&self) -> usize {
        match self {
            Piece::Part { blocks, .. } => *blocks,
            Piece::Glue { .. } => 1,
        }
    }

    fn bytes<'a>(&self, parts: &[&'a [u8]], glue: &'a [u8]) -> &'a [u8] {
        match *self {
            Piece::Part {
                part,
                start,
                blocks,
            } => &parts[part][start..start + blocks * BLOCK],
            Piece::Glue { start } => &glue[start..start + BLOCK],
        }
    }
}

/// Buffers whose bytes stay where they are when the buffer value moves,
/// so that the hub can hash them in place while it owns them
/// ([`Hasher::update_parts`]).
///
/// # Safety
/// `bytes` returns the same memory (address and length) every time it is
/// called on a value, also after the value has moved, and those bytes do
/// not change while the value is not mutably borrowed (no interior
/// mutability).
pub unsafe trait StableBytes: Send + 'static {
    /// The buffer's bytes.
    fn bytes(&self) -> &[u8];
}

// SAFETY: a Vec's heap buffer does not move when the Vec does, and is only
// changed through `&mut`.
unsafe impl StableBytes for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

// SAFETY: as for Vec: the boxed slice lives on the heap.
unsafe impl StableBytes for Box<[u8]> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// How long a synchronous owner of a claimed job sleeps between looks at
/// it when no wake-up comes (a backstop: combiners wake owners).
const CLAIMED_BACKSTOP: Duration = Duration::from_millis(20);

/// Hashes `whole` (whole blocks borrowed from the caller) from `state`
/// through the hub, synchronously. Does not return or unwind before no
/// combiner reads `whole` any more.
fn run_sync(shared: &Shared, state: [u32; 4], whole: &[u8]) -> [u32; 4] {
    let segment = Segment {
        data: BlockPtr(whole.as_ptr()),
        blocks: whole.len() / BLOCK,
    };
    let job = Arc::new(Job::new(vec![segment], state, None));
    let mut guard = SyncGuard {
        shared,
        job: &job,
        armed: true,
    };
    match shared.submit(&job, Waiter::Thread(std::thread::current())) {
        Submit::Alone => {
            shared.count_alone(whole.len() / BLOCK);
            let mut s = state;
            portable::compress(&mut s, whole);
            guard.armed = false;
            return s;
        }
        Submit::Lead => {
            shared.combine(&job, None);
        }
        Submit::Wait => loop {
            let mut inner = lock(&job.inner);
            match inner.phase {
                Phase::Done => break,
                Phase::Elected => {
                    inner.phase = Phase::Claimed;
                    drop(inner);
                    shared.combine(&job, None);
                    break;
                }
                Phase::Queued if inner.queued_at.elapsed() > shared.config.max_queue_wait => {
                    drop(inner);
                    // Still queued after the bound: work on it ourselves.
                    let mut q = lock(&shared.queue);
                    let mut inner = lock(&job.inner);
                    if inner.phase == Phase::Queued {
                        if let Some(pos) = q.jobs.iter().position(|j| Arc::ptr_eq(j, &job)) {
                            q.jobs.remove(pos);
                        }
                        inner.phase = Phase::Claimed;
                        q.combiners += 1;
                        drop(inner);
                        drop(q);
                        shared.combine(&job, None);
                        break;
                    }
                }
                phase => {
                    // Queued: sleep until the job would be overdue. Claimed:
                    // its combiner wakes us when it is done, or elects us
                    // if it is handed back; the timeout is only a backstop
                    // (waking every few hundred microseconds while a batch
                    // runs would cost CPU time on every waiting thread).
                    let nap = if phase == Phase::Queued {
                        shared
                            .config
                            .max_queue_wait
                            .saturating_sub(inner.queued_at.elapsed())
                            + Duration::from_micros(10)
                    } else {
                        CLAIMED_BACKSTOP
                    };
                    drop(inner);
                    std::thread::park_timeout(nap);
                }
            }
        },
    }
    guard.armed = false;
    let inner = lock(&job.inner);
    debug_assert_eq!(inner.phase, Phase::Done);
    inner.state
}

/// On unwinding out of `run_sync`, withdraws the job and waits until no
/// combiner reads the caller's bytes.
struct SyncGuard<'a> {
    shared: &'a Shared,
    job: &'a Arc<Job>,
    armed: bool,
}

impl Drop for SyncGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if self.shared.abandon(self.job) {
            // A combiner holds it: it lets go at its next quantum.
            lock(&self.job.inner).waiter = Waiter::Thread(std::thread::current());
            loop {
                let phase = lock(&self.job.inner).phase;
                if matches!(phase, Phase::Done | Phase::Released) {
                    break;
                }
                std::thread::park_timeout(Duration::from_millis(1));
            }
        }
    }
}

/// The future of [`Hasher::update_block`] and [`Hasher::update_parts`]:
/// resolves to the hasher and the buffer(s) given (`O`).
#[must_use = "futures do nothing unless polled"]
pub struct BlockUpdate<O = Vec<u8>> {
    stage: Stage<O>,
}

enum Stage<O> {
    /// Not submitted yet.
    New { hasher: Hasher, job: Arc<Job> },
    /// Queued; waiting to be done or elected.
    Waiting { hasher: Hasher, job: Arc<Job> },
    /// Finished (or never needed the hub).
    Ready(Hasher, O),
    /// Output taken.
    Gone,
}

// The future never pins what it holds (the buffers are only moved in and
// out), so it is `Unpin` whatever `O` is.
impl<O> Unpin for BlockUpdate<O> {}

impl<O> std::fmt::Debug for BlockUpdate<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BlockUpdate")
    }
}

/// Completes a finished job: the hasher takes the state (its tail was
/// buffered at submission), the caller's buffers come back.
fn complete<O: 'static>(mut hasher: Hasher, job: &Job) -> (Hasher, O) {
    hasher.state = lock(&job.inner).state;
    let owned = lock(&job.owned)
        .take()
        .expect("an owned update's job owns its buffers");
    let caller = owned
        .caller
        .downcast::<O>()
        .expect("a job's buffers are of its future's type");
    (hasher, *caller)
}

impl<O: Send + 'static> Future for BlockUpdate<O> {
    type Output = (Hasher, O);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = Pin::into_inner(self);
        loop {
            match std::mem::replace(&mut this.stage, Stage::Gone) {
                Stage::New { hasher, job } => {
                    let shared = hasher.shared.clone();
                    match shared.submit(&job, Waiter::Task(cx.waker().clone())) {
                        Submit::Alone => {
                            shared.count_alone(job.blocks);
                            let mut inner = lock(&job.inner);
                            // SAFETY: the job was never queued: this caller
                            // is its only user, and it owns the bytes.
                            unsafe { job.compress_all(&mut inner.state) };
                            inner.phase = Phase::Done;
                            drop(inner);
                            return Poll::Ready(complete(hasher, &job));
                        }
                        Submit::Lead => {
                            lock(&job.inner).waiter = Waiter::Task(cx.waker().clone());
                            if shared.combine(&job, Some(shared.config.async_budget_quanta.max(1)))
                            {
                                return Poll::Ready(complete(hasher, &job));
                            }
                            this.stage = Stage::Waiting { hasher, job };
                            return Poll::Pending;
                        }
                        Submit::Wait => this.stage = Stage::Waiting { hasher, job },
                    }
                }
                Stage::Waiting { hasher, job } => {
                    let mut inner = lock(&job.inner);
                    match inner.phase {
                        Phase::Done => {
                            drop(inner);
                            return Poll::Ready(complete(hasher, &job));
                        }
                        Phase::Elected => {
                            inner.phase = Phase::Claimed;
                            inner.waiter = Waiter::Task(cx.waker().clone());
                            drop(inner);
                            let shared = hasher.shared.clone();
                            if shared.combine(&job, Some(shared.config.async_budget_quanta.max(1)))
                            {
                                return Poll::Ready(complete(hasher, &job));
                            }
                            this.stage = Stage::Waiting { hasher, job };
                            return Poll::Pending;
                        }
                        _ => {
                            inner.waiter = Waiter::Task(cx.waker().clone());
                            drop(inner);
                            this.stage = Stage::Waiting { hasher, job };
                            return Poll::Pending;
                        }
                    }
                }
                Stage::Ready(hasher, owner) => return Poll::Ready((hasher, owner)),
                Stage::Gone => panic!("BlockUpdate polled after completion"),
            }
        }
    }
}

impl<O> Drop for BlockUpdate<O> {
    fn drop(&mut self) {
        if let Stage::Waiting { hasher, job } = &self.stage {
            // The job owns its buffers, so a combiner still holding it
            // reads valid memory; it lets go at its next quantum.
            hasher.shared.abandon(job);
        }
    }
}

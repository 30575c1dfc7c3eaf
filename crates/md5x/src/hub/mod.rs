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
//!   combining starves the very tasks that would fill its lanes (the bytes
//!   per CPU-second improve 1.5x to 1.9x for 4 to 16 tasks on two workers;
//!   `cargo bench -p tessera-benches --bench md5 -- md5-hub-tokio` measures
//!   it, `docs/bench-notes/md5.md` has the figures).
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

mod combiner;
mod future;
mod hasher;
mod job;
mod sync;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use crate::Kernel;

pub use future::BlockUpdate;
pub use hasher::{Hasher, StableBytes};

use job::Job;

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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while a lock was held left consistent data behind (every
    // critical section here only moves jobs and flags), so poisoning is
    // ignored rather than spread to every caller.
    m.lock().unwrap_or_else(PoisonError::into_inner)
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
        Hasher::new(self.shared.clone())
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

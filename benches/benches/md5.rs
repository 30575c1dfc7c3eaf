//! MD5 throughput for S3 ETags: `md5x` kernels and its hub side by side
//! with the `md-5` crate (what `object` uses today).
//!
//! ```text
//! cargo bench -p tessera-benches --bench md5                  # full run
//! cargo bench -p tessera-benches --bench md5 -- --test        # each once
//! cargo bench -p tessera-benches --bench md5 -- 'md5-hub'
//! ```
//!
//! Groups:
//! Every group but the `-wall` ones measures CPU time, not wall time
//! (the bench machine is shared: other processes' load must not count), so
//! their throughputs are bytes per CPU-second. A thread's CPU time is the
//! first field of its `/proc/.../schedstat`.
//!
//! - `md5-cpu/1MiB`: one stream, one-shot: `md-5` against `md5x/portable`
//!   (the single-stream path of every md5x kernel).
//! - `md5-many-cpu/<n>x1MiB` for 4, 8 and 16 streams on one thread: `md-5/loop`
//!   (one after the other) against `md5x-many/<kernel>` (`digest_many`, the
//!   streams in the kernel's lanes) for every usable kernel. Throughput is
//!   aggregate: all `n` MiB.
//! - `md5-hub-cpu/<n>threads` and `md5-hub-wall/<n>threads` for 1, 4, 8
//!   and 16 OS threads, each hashing 4 blocks of 1 MiB through a streaming
//!   hasher: `md-5` (one `Md5` per thread) against `hub-sync`
//!   (`Hasher::update` of a hub with the default configuration). The `cpu`
//!   groups report bytes per CPU-second: the time criterion sees is the sum
//!   of the threads' CPU time (`/proc/thread-self/schedstat`), not wall
//!   time. The `wall` groups report wall-clock throughput.
//! - `md5-hub-tokio-cpu/<n>tasks` and `md5-hub-tokio-wall/<n>tasks`: the
//!   server's shape, a multi-thread tokio runtime with 2 workers and `n`
//!   tasks, each feeding 4 blocks of 1 MiB: `md-5` (inline, as
//!   `feed_writers` does today) against `hub-async`
//!   (`Hasher::update_block(..).await`), `hub-sync-inline`
//!   (`Hasher::update` called in the task, blocking the worker) and
//!   `hub-sync-blocking` (`Hasher::update` in `spawn_blocking`). CPU time
//!   is the sum over the process's threads (`/proc/self/task/*/schedstat`;
//!   the blocking pool's threads stay alive between iterations).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use md5::{Digest, Md5};
use md5x::{HubConfig, Kernel, Md5Hub};

const MIB: usize = 1 << 20;
/// Blocks each stream feeds per iteration in the hub groups.
const BLOCKS_PER_STREAM: usize = 4;

/// Deterministic, incompressible-looking input.
fn input(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// CPU time of the calling thread, in nanoseconds (first field of
/// `/proc/thread-self/schedstat`). The kernel brings a running thread's
/// figure up to date only when it is descheduled (or at a tick), so the
/// thread sleeps for a microsecond first; otherwise up to a tick of CPU
/// time would be missing from every measurement.
fn thread_cpu_ns() -> u64 {
    std::thread::sleep(Duration::from_micros(1));
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat (Linux)");
    s.split_whitespace()
        .next()
        .and_then(|f| f.parse().ok())
        .expect("schedstat run time")
}

/// CPU time of every live thread of the process, in nanoseconds, by
/// thread id (the runtime's workers are parked when this is read, so their
/// figures are current; the calling thread sleeps first for the same
/// reason).
fn process_cpu_ns() -> std::collections::HashMap<std::ffi::OsString, u64> {
    std::thread::sleep(Duration::from_micros(1));
    let mut out = std::collections::HashMap::new();
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let task = task.expect("task entry");
        // A thread may exit between listing and reading.
        if let Ok(s) = std::fs::read_to_string(task.path().join("schedstat")) {
            let ns = s
                .split_whitespace()
                .next()
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0);
            out.insert(task.file_name(), ns);
        }
    }
    out
}

/// CPU time the process spent between two `process_cpu_ns` readings: per
/// thread, so that a thread exiting in between (an idle blocking-pool
/// thread) does not make the sum go backwards.
fn cpu_between(
    before: &std::collections::HashMap<std::ffi::OsString, u64>,
    after: &std::collections::HashMap<std::ffi::OsString, u64>,
) -> Duration {
    let ns = after
        .iter()
        .map(|(tid, &ns)| ns.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum();
    Duration::from_nanos(ns)
}

/// Measures `f` in CPU time of the bench thread instead of wall time, so
/// that other processes on a shared machine do not count against it.
fn iter_cpu<O>(b: &mut criterion::Bencher<'_>, mut f: impl FnMut() -> O) {
    b.iter_custom(|iters| {
        let t0 = thread_cpu_ns();
        for _ in 0..iters {
            black_box(f());
        }
        Duration::from_nanos(thread_cpu_ns() - t0)
    })
}

fn single_stream(c: &mut Criterion) {
    eprintln!("{}", Kernel::detection_report());
    let data = input(MIB, 1);
    let mut g = c.benchmark_group("md5-cpu/1MiB");
    g.throughput(Throughput::Bytes(MIB as u64));
    g.warm_up_time(Duration::from_millis(300));
    g.measurement_time(Duration::from_secs(2));
    g.bench_function(BenchmarkId::new("md-5", "scalar"), |b| {
        iter_cpu(b, || Md5::digest(black_box(&data)))
    });
    g.bench_function(BenchmarkId::new("md5x", "portable"), |b| {
        iter_cpu(b, || md5x::digest(black_box(&data)))
    });
    g.finish();
}

fn many_streams(c: &mut Criterion) {
    let pool = input(16 * MIB + 16 * 64, 2);
    for n in [4usize, 8, 16] {
        // Distinct inputs at odd offsets from each other.
        let inputs: Vec<&[u8]> = (0..n).map(|i| &pool[i * MIB + i * 17..][..MIB]).collect();
        let mut out = vec![[0u8; 16]; n];
        let mut g = c.benchmark_group(format!("md5-many-cpu/{n}x1MiB"));
        g.throughput(Throughput::Bytes((n * MIB) as u64));
        g.warm_up_time(Duration::from_millis(300));
        g.measurement_time(Duration::from_secs(2));
        g.sample_size(20);
        g.bench_function(BenchmarkId::new("md-5", "loop"), |b| {
            iter_cpu(b, || {
                for (o, i) in out.iter_mut().zip(&inputs) {
                    *o = Md5::digest(black_box(i)).into();
                }
                out[0]
            })
        });
        for &k in Kernel::supported() {
            k.digest_many(&inputs, &mut out);
            assert_eq!(out[n - 1], <[u8; 16]>::from(Md5::digest(inputs[n - 1])));
            g.bench_function(BenchmarkId::new("md5x-many", k.name()), |b| {
                iter_cpu(b, || {
                    k.digest_many(black_box(&inputs), &mut out);
                    out[0]
                })
            });
        }
        g.finish();
    }
}

/// One iteration of `threads` OS threads hashing their streams; returns
/// (the sum of the threads' CPU time, wall time).
fn run_threads(threads: usize, blocks: &[Vec<u8>], hub: Option<&Md5Hub>) -> (Duration, Duration) {
    let start = Instant::now();
    let cpu: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let t0 = thread_cpu_ns();
                    let digest: [u8; 16] = match hub {
                        Some(hub) => {
                            let mut h = hub.hasher();
                            for i in 0..BLOCKS_PER_STREAM {
                                h.update(&blocks[(t + i) % blocks.len()]);
                            }
                            h.finalize()
                        }
                        None => {
                            let mut h = Md5::new();
                            for i in 0..BLOCKS_PER_STREAM {
                                h.update(&blocks[(t + i) % blocks.len()]);
                            }
                            h.finalize().into()
                        }
                    };
                    black_box(digest);
                    thread_cpu_ns() - t0
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("bench thread"))
            .sum()
    });
    (Duration::from_nanos(cpu), start.elapsed())
}

fn hub_threads(c: &mut Criterion) {
    let blocks: Vec<Vec<u8>> = (0..8).map(|i| input(MIB, 10 + i)).collect();
    let hub = Md5Hub::new(HubConfig::default());
    // The hub's digests are md-5's (once, outside the timing).
    {
        let mut h = hub.hasher();
        let mut m = Md5::new();
        for b in &blocks {
            h.update(b);
            m.update(b);
        }
        assert_eq!(h.finalize(), <[u8; 16]>::from(m.finalize()));
    }
    for (metric, pick) in [("cpu", 0usize), ("wall", 1)] {
        for threads in [1usize, 4, 8, 16] {
            let mut g = c.benchmark_group(format!("md5-hub-{metric}/{threads}threads"));
            g.throughput(Throughput::Bytes(
                (threads * BLOCKS_PER_STREAM * MIB) as u64,
            ));
            g.warm_up_time(Duration::from_millis(300));
            g.measurement_time(Duration::from_secs(2));
            g.sample_size(10);
            for (name, hub) in [("md-5", None), ("hub-sync", Some(&hub))] {
                g.bench_function(
                    BenchmarkId::new(name, hub.map_or("", |h| h.kernel().name())),
                    |b| {
                        b.iter_custom(|iters| {
                            let mut total = Duration::ZERO;
                            for _ in 0..iters {
                                let (cpu, wall) = run_threads(threads, &blocks, hub);
                                total += if pick == 0 { cpu } else { wall };
                            }
                            total
                        })
                    },
                );
            }
            g.finish();
        }
    }
    eprintln!("hub-sync stats: {:?}", hub.stats());
}

/// How the tokio tasks hash their blocks.
#[derive(Clone, Copy)]
enum Mode {
    /// `md-5` inline in the task (what `feed_writers` does today).
    Md5,
    /// `Hasher::update_block(..).await`.
    HubAsync,
    /// `Hasher::update` inline in the task (blocks the worker thread while
    /// it waits for a lane).
    HubSyncInline,
    /// `Hasher::update` in `spawn_blocking`.
    HubSyncBlocking,
}

/// One iteration of `bufs.len()` tokio tasks hashing their streams on
/// `rt`; returns (process CPU time, wall time). `bufs[t]` are task `t`'s
/// blocks, moved into the task and back (the server hands over its read
/// buffer the same way).
fn run_tasks(
    rt: &tokio::runtime::Runtime,
    bufs: &mut [Vec<Vec<u8>>],
    hub: &Md5Hub,
    mode: Mode,
) -> (Duration, Duration) {
    let cpu0 = process_cpu_ns();
    let start = Instant::now();
    rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for (t, task_bufs) in bufs.iter_mut().enumerate() {
            let mut mine = std::mem::take(task_bufs);
            let hub = hub.clone();
            set.spawn(async move {
                let digest: [u8; 16] = match mode {
                    Mode::Md5 => {
                        let mut h = Md5::new();
                        for buf in &mine {
                            h.update(buf);
                            tokio::task::yield_now().await;
                        }
                        h.finalize().into()
                    }
                    Mode::HubAsync => {
                        let mut h = hub.hasher();
                        for buf in &mut mine {
                            let block = std::mem::take(buf);
                            (h, *buf) = h.update_block(block).await;
                            tokio::task::yield_now().await;
                        }
                        h.finalize()
                    }
                    Mode::HubSyncInline => {
                        let mut h = hub.hasher();
                        for buf in &mine {
                            h.update(buf);
                            tokio::task::yield_now().await;
                        }
                        h.finalize()
                    }
                    Mode::HubSyncBlocking => {
                        let mut h = hub.hasher();
                        for buf in &mut mine {
                            let block = std::mem::take(buf);
                            (h, *buf) = tokio::task::spawn_blocking(move || {
                                h.update(&block);
                                (h, block)
                            })
                            .await
                            .expect("blocking hash");
                        }
                        h.finalize()
                    }
                };
                (t, mine, digest)
            });
        }
        while let Some(r) = set.join_next().await {
            let (t, mine, digest) = r.expect("bench task");
            black_box(digest);
            bufs[t] = mine;
        }
    });
    let wall = start.elapsed();
    (cpu_between(&cpu0, &process_cpu_ns()), wall)
}

fn hub_tokio(c: &mut Criterion) {
    let blocks: Vec<Vec<u8>> = (0..8).map(|i| input(MIB, 30 + i)).collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("tokio runtime");
    let hub = Md5Hub::new(HubConfig::default());
    // The async path's digests are md-5's (once, outside the timing).
    rt.block_on(async {
        let mut h = hub.hasher();
        let mut m = Md5::new();
        for b in blocks.iter() {
            m.update(b);
            let buf;
            (h, buf) = h.update_block(b.clone()).await;
            assert_eq!(&buf, b);
        }
        assert_eq!(h.finalize(), <[u8; 16]>::from(m.finalize()));
    });
    for (metric, pick) in [("cpu", 0usize), ("wall", 1)] {
        for tasks in [1usize, 4, 8, 16] {
            let mut g = c.benchmark_group(format!("md5-hub-tokio-{metric}/{tasks}tasks"));
            g.throughput(Throughput::Bytes((tasks * BLOCKS_PER_STREAM * MIB) as u64));
            g.warm_up_time(Duration::from_millis(300));
            g.measurement_time(Duration::from_secs(2));
            g.sample_size(10);
            let kernel = hub.kernel().name();
            for (name, param, mode) in [
                ("md-5", "", Mode::Md5),
                ("hub-async", kernel, Mode::HubAsync),
                ("hub-sync-inline", kernel, Mode::HubSyncInline),
                ("hub-sync-blocking", kernel, Mode::HubSyncBlocking),
            ] {
                let mut bufs: Vec<Vec<Vec<u8>>> = (0..tasks)
                    .map(|t| {
                        (0..BLOCKS_PER_STREAM)
                            .map(|i| blocks[(t + i) % blocks.len()].clone())
                            .collect()
                    })
                    .collect();
                g.bench_function(BenchmarkId::new(name, param), |b| {
                    b.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            let (cpu, wall) = run_tasks(&rt, &mut bufs, &hub, mode);
                            total += if pick == 0 { cpu } else { wall };
                        }
                        total
                    })
                });
            }
            g.finish();
        }
    }
    eprintln!("hub-async stats: {:?}", hub.stats());
}

criterion_group!(benches, single_stream, many_streams, hub_threads, hub_tokio);
criterion_main!(benches);

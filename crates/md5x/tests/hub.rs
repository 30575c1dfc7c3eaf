//! The hub under concurrency: many threads and tasks with random sizes and
//! chunkings, hashers dropped mid-stream and update futures dropped
//! mid-flight; every digest compared with the `md-5` crate, and every test
//! under a watchdog so that a deadlock fails instead of hanging.

use std::future::Future;
use std::pin::pin;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use fastrand::Rng;
use md5::{Digest, Md5};
use md5x::{HubConfig, Kernel, Md5Hub};

fn pool(len: usize) -> Arc<Vec<u8>> {
    let mut v = vec![0; len];
    Rng::with_seed(0xabcdef).fill(&mut v);
    Arc::new(v)
}

fn md5_crate(data: &[u8]) -> [u8; 16] {
    Md5::digest(data).into()
}

/// Runs `f` on a thread and fails if it takes longer than `limit` (a
/// deadlock), instead of hanging the test run.
fn watchdog<F: FnOnce() + Send + 'static>(limit: Duration, f: F) {
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(limit) {
        Ok(()) => h.join().expect("test body"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The body panicked: report its panic.
            h.join().expect("test body");
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("deadlock: not done after {limit:?}"),
    }
}

/// Configurations that exercise the scheduling paths: the default; tiny
/// jobs and quanta (many hand-backs and elections); a tiny wait bound.
fn configs() -> Vec<HubConfig> {
    let mut out = vec![HubConfig::default()];
    for &kernel in Kernel::supported() {
        out.push(HubConfig {
            kernel,
            quantum_blocks: 3,
            min_job_bytes: 64,
            min_simd_streams: 2,
            max_queue_wait: Duration::from_micros(50),
            ..HubConfig::default()
        });
    }
    out.push(HubConfig {
        quantum_blocks: 1,
        min_job_bytes: 1,
        max_queue_wait: Duration::from_nanos(1),
        max_queued: 3,
        ..HubConfig::default()
    });
    out
}

/// Minimal executor: polls `f` on this thread, parking until woken. A lost
/// wake-up hangs it, which the watchdog turns into a failure.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

#[test]
fn one_hasher_matches_md5_crate_at_odd_lengths() {
    let data = pool((1 << 20) + 200);
    for cfg in configs() {
        let hub = Md5Hub::new(cfg);
        for n in [
            0usize,
            1,
            55,
            56,
            63,
            64,
            65,
            119,
            120,
            4096,
            (1 << 20) + 13,
        ] {
            let m = &data[7..7 + n];
            let mut h = hub.hasher();
            h.update(m);
            assert_eq!(h.finalize(), md5_crate(m), "{n} bytes, {cfg:?}");
            // Split at every awkward place.
            for cut in [1usize, 63, 64, 65] {
                let cut = cut.min(n);
                let mut h = hub.hasher();
                h.update(&m[..cut]);
                h.update(&m[cut..]);
                assert_eq!(h.finalize(), md5_crate(m), "{n} bytes cut at {cut}");
            }
        }
        assert_eq!(hub.load(), (0, 0));
    }
}

#[test]
fn many_threads_random_sizes_and_drops() {
    let data = pool(3 << 20);
    watchdog(Duration::from_secs(120), move || {
        for (ci, cfg) in configs().into_iter().enumerate() {
            let hub = Md5Hub::new(cfg);
            let threads = 16;
            let barrier = Arc::new(Barrier::new(threads));
            thread::scope(|s| {
                for t in 0..threads {
                    let (hub, data, barrier) = (&hub, &data, barrier.clone());
                    s.spawn(move || {
                        let mut rng = Rng::with_seed(((ci as u64) << 32) + t as u64 + 1);
                        barrier.wait();
                        for round in 0..6 {
                            let len = match rng.usize(..4) {
                                0 => rng.usize(..200),
                                1 => rng.usize(..70_000),
                                _ => (1 << 20) + rng.usize(..1 << 20),
                            };
                            let off = rng.usize(..data.len() - len);
                            let m = &data[off..off + len];
                            let mut h = hub.hasher();
                            let mut at = 0;
                            let drop_after = (rng.usize(..5) == 0).then(|| rng.usize(..4));
                            let mut pieces = 0;
                            while at < len {
                                let step = match rng.usize(..3) {
                                    0 => rng.usize(..100),
                                    1 => 1 << 20,
                                    _ => rng.usize(..300_000),
                                }
                                .max(1)
                                .min(len - at);
                                h.update(&m[at..at + step]);
                                at += step;
                                pieces += 1;
                                if drop_after == Some(pieces) {
                                    break;
                                }
                            }
                            if at < len {
                                // Dropped mid-stream: nothing must be left
                                // behind for the others to wait on.
                                drop(h);
                                continue;
                            }
                            assert_eq!(
                                h.finalize(),
                                md5_crate(m),
                                "thread {t} round {round}: {len} bytes, config {ci}"
                            );
                        }
                    });
                }
            });
            assert_eq!(hub.load(), (0, 0), "config {ci}: hub not idle");
            eprintln!("config {ci}: {:?}", hub.stats());
        }
    });
}

#[test]
fn concurrent_hashers_share_lanes() {
    let data = pool(8 << 20);
    watchdog(Duration::from_secs(60), move || {
        let kernel = Kernel::detect();
        if kernel.lanes() == 1 {
            eprintln!("*** no SIMD kernel on this machine: lane sharing NOT tested");
            return;
        }
        let hub = Md5Hub::new(HubConfig {
            kernel,
            max_queue_wait: Duration::from_millis(50),
            ..HubConfig::default()
        });
        let threads = 8;
        let barrier = Arc::new(Barrier::new(threads));
        thread::scope(|s| {
            for t in 0..threads {
                let (hub, data, barrier) = (&hub, &data, barrier.clone());
                s.spawn(move || {
                    let m = &data[t * (1 << 20)..][..1 << 20];
                    let mut h = hub.hasher();
                    barrier.wait();
                    for _ in 0..8 {
                        h.update(m);
                    }
                    let want = {
                        let mut r = Md5::new();
                        for _ in 0..8 {
                            r.update(m);
                        }
                        <[u8; 16]>::from(r.finalize())
                    };
                    assert_eq!(h.finalize(), want);
                });
            }
        });
        let st = hub.stats();
        eprintln!("{st:?}");
        assert!(st.lane_calls > 0, "no kernel call used more than one lane");
        assert!(st.blocks_in_lanes > 0);
        // A lane call advances at least two lanes per step and at most the
        // kernel's width.
        assert!(st.lane_steps >= st.lane_calls, "{st:?}");
        assert!(st.blocks_in_lanes >= 2 * st.lane_steps, "{st:?}");
        assert!(
            st.blocks_in_lanes <= hub.kernel().lanes() as u64 * st.lane_steps,
            "{st:?}"
        );
        // Every whole block is counted once, by the code that hashed it.
        assert_eq!(
            st.blocks_in_lanes + st.blocks_single + st.blocks_alone,
            (threads * 8 * (1 << 20) / 64) as u64
        );
        assert_eq!(hub.load(), (0, 0));
    });
}

#[test]
fn async_updates_from_many_threads() {
    let data = pool(3 << 20);
    watchdog(Duration::from_secs(120), move || {
        for (ci, cfg) in configs().into_iter().enumerate() {
            let hub = Md5Hub::new(cfg);
            let threads = 12;
            thread::scope(|s| {
                for t in 0..threads {
                    let (hub, data) = (&hub, &data);
                    s.spawn(move || {
                        let mut rng = Rng::with_seed(0x77 + ((ci as u64) << 20) + t as u64);
                        for _ in 0..4 {
                            let mut h = hub.hasher();
                            let mut whole = Vec::new();
                            let mut reference = Md5::new();
                            let blocks = 1 + rng.usize(..4);
                            for _ in 0..blocks {
                                let len = match rng.usize(..3) {
                                    0 => rng.usize(..1000),
                                    _ => (1 << 20) + rng.usize(..100),
                                };
                                let off = rng.usize(..data.len() - len);
                                let block = data[off..off + len].to_vec();
                                reference.update(&block);
                                whole.extend_from_slice(&block);
                                let back;
                                (h, back) = block_on(h.update_block(block));
                                assert_eq!(back, data[off..off + len], "buffer came back changed");
                                // Mix in the synchronous path now and then.
                                if rng.usize(..3) == 0 {
                                    h.update(&data[..65]);
                                    reference.update(&data[..65]);
                                }
                            }
                            assert_eq!(h.finalize(), <[u8; 16]>::from(reference.finalize()));
                        }
                    });
                }
            });
            assert_eq!(hub.load(), (0, 0), "config {ci}: hub not idle");
        }
    });
}

/// `update_parts` over many threads: a stream cut into parts of random
/// lengths (empty, under a block, odd, a few blocks, about 1 MiB), each part
/// a range inside a larger buffer whose other bytes must not be hashed,
/// mixed with `update_block` and `update`. Blocks straddling parts are
/// glued; the digest must be the md-5 crate's and the buffers must come
/// back unchanged.
#[test]
fn parts_updates_from_many_threads() {
    let data = pool(3 << 20);
    watchdog(Duration::from_secs(120), move || {
        for (ci, cfg) in configs().into_iter().enumerate() {
            let hub = Md5Hub::new(cfg);
            thread::scope(|s| {
                for t in 0..8 {
                    let (hub, data) = (&hub, &data);
                    s.spawn(move || {
                        let mut rng = Rng::with_seed(0x9a7 + ((ci as u64) << 20) + t as u64);
                        for _ in 0..4 {
                            let mut h = hub.hasher();
                            let mut reference = Md5::new();
                            for _ in 0..1 + rng.usize(..3) {
                                let mut parts = Vec::new();
                                let mut want = Vec::new();
                                for _ in 0..1 + rng.usize(..5) {
                                    let len = match rng.usize(..5) {
                                        0 => rng.usize(..64),
                                        1 => rng.usize(..300),
                                        2 => 64 * (1 + rng.usize(..40)),
                                        3 => 64 * (1 + rng.usize(..40)) + 1 + rng.usize(..63),
                                        _ => (512 << 10) + rng.usize(..3) * 21,
                                    };
                                    let (lead, trail) = (rng.usize(..100), rng.usize(..100));
                                    let off = rng.usize(..data.len() - len - lead - trail);
                                    let buf = data[off..off + lead + len + trail].to_vec();
                                    reference.update(&buf[lead..lead + len]);
                                    want.push(buf.clone());
                                    parts.push((buf, lead..lead + len));
                                }
                                let back;
                                (h, back) = block_on(h.update_parts(parts));
                                assert_eq!(back, want, "buffers came back changed");
                                match rng.usize(..3) {
                                    0 => {
                                        h.update(&data[..65]);
                                        reference.update(&data[..65]);
                                    }
                                    1 => {
                                        let block = data[7..7 + 130].to_vec();
                                        reference.update(&block);
                                        (h, _) = block_on(h.update_block(block));
                                    }
                                    _ => {}
                                }
                            }
                            assert_eq!(h.finalize(), <[u8; 16]>::from(reference.finalize()));
                        }
                    });
                }
            });
            assert_eq!(hub.load(), (0, 0), "config {ci}: hub not idle");
        }
    });
}

/// A parts update whose blocks all straddle parts (parts of 1 to 63
/// bytes) and one with no part at all.
#[test]
fn parts_updates_of_tiny_and_no_parts() {
    let data = pool(1 << 16);
    for cfg in configs() {
        let hub = Md5Hub::new(cfg);
        let mut rng = Rng::with_seed(0x51);
        let mut h = hub.hasher();
        let mut reference = Md5::new();
        let mut parts = Vec::new();
        let mut at = 0;
        while at < 40_000 {
            let len = 1 + rng.usize(..63);
            parts.push((data[at..at + len].to_vec(), 0..len));
            reference.update(&data[at..at + len]);
            at += len;
        }
        (h, _) = block_on(h.update_parts(parts));
        (h, _) = block_on(h.update_parts(Vec::<(Vec<u8>, std::ops::Range<usize>)>::new()));
        assert_eq!(h.len(), at as u64);
        assert_eq!(h.finalize(), <[u8; 16]>::from(reference.finalize()));
        assert_eq!(hub.load(), (0, 0));
    }
}

#[test]
fn dropped_update_futures_do_not_block_others() {
    let data = pool(32 << 20);
    watchdog(Duration::from_secs(60), move || {
        let kernel = Kernel::detect();
        let hub = Md5Hub::new(HubConfig {
            kernel,
            min_simd_streams: 2,
            max_queue_wait: Duration::from_secs(5),
            ..HubConfig::default()
        });
        let _keep_combining = hub.hasher();
        // A long synchronous update makes this thread's caller a combiner.
        let started = Arc::new(Barrier::new(2));
        thread::scope(|s| {
            let (hub2, data2, started2) = (&hub, &data, started.clone());
            let busy = s.spawn(move || {
                let mut h = hub2.hasher();
                started2.wait();
                h.update(&data2[..]);
                h.finalize()
            });
            started.wait();
            thread::sleep(Duration::from_millis(5));
            // While it runs, futures are queued (Pending) and dropped, at
            // every stage, some never polled.
            let waker = Waker::noop();
            let mut cx = Context::from_waker(waker);
            for i in 0..20 {
                let block = data[i * 1000..][..(1 << 20) + i].to_vec();
                let mut fut = Box::pin(hub.hasher().update_block(block));
                if i % 4 != 0 {
                    let _ = fut.as_mut().poll(&mut cx);
                }
                if i % 3 == 0 {
                    thread::sleep(Duration::from_micros(300));
                }
                drop(fut);
            }
            // A fresh hasher still completes, correctly.
            let m = &data[..3 << 20];
            let mut h = hub.hasher();
            h.update(m);
            assert_eq!(h.finalize(), md5_crate(m));
            assert_eq!(busy.join().expect("busy thread"), md5_crate(&data));
        });
        drop(_keep_combining);
        assert_eq!(hub.load(), (0, 0));
    });
}

#[test]
fn global_hub_is_shared_and_correct() {
    let a = Md5Hub::global();
    let b = Md5Hub::global();
    assert!(std::ptr::eq(a, b));
    assert_eq!(a.kernel(), Kernel::detect());
    let data = pool(1 << 20);
    let mut h = a.hasher();
    h.update(&data);
    assert_eq!(h.finalize(), md5_crate(&data));
}

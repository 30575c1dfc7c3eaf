//! A quick throughput table for every kernel this machine runs.
//!
//! ```text
//! cargo run --release -p ec-simd --example summary
//! ```
//!
//! Shapes are MinIO's: one 1 MiB block split into `k` data shards of
//! `ceil(1 MiB / k)` bytes plus `m` parity shards. "encode" computes the
//! parity; "reconstruct" rebuilds the data after losing as many data shards as
//! there are parity shards (the worst case). Figures are GB/s (10^9 bytes per
//! second) of data, wall clock on one thread, the median of several timed
//! repetitions: on a busy machine they move by several percent between runs.

use std::time::{Duration, Instant};

use ec_simd::{Kernel, ReedSolomon};

const BLOCK: usize = 1 << 20;
const SHAPES: [(usize, usize); 5] = [(4, 2), (8, 4), (12, 4), (8, 8), (16, 4)];
/// Timed repetitions per figure (the median is printed).
const REPS: usize = 7;
/// Target duration of one repetition.
const REP_TIME: Duration = Duration::from_millis(20);

/// Median GB/s of `op`, which processes `bytes` bytes of data per call.
fn measure(bytes: usize, mut op: impl FnMut()) -> f64 {
    // Warm up and size the batch so one repetition takes about REP_TIME.
    let start = Instant::now();
    op();
    let once = start.elapsed().max(Duration::from_nanos(1));
    let iters = (REP_TIME.as_secs_f64() / once.as_secs_f64()).clamp(1.0, 10_000.0) as usize;
    let mut rates: Vec<f64> = (0..REPS)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                op();
            }
            (bytes * iters) as f64 / t.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[REPS / 2]
}

fn main() {
    let total = Instant::now();
    println!("ec-simd kernel self-test:");
    for r in &Kernel::detection_report().kernels {
        println!("  {:<12} {}", r.name, r.status);
    }
    println!("  detected: {}\n", Kernel::detect());

    println!(
        "Throughput in GB/s of data, 1 MiB block over k data shards (MinIO's layout),\n\
         median of {REPS} x ~{} ms, one thread. reconstruct = min(m, k) data shards lost.\n",
        REP_TIME.as_millis(),
    );
    print!("{:<12} {:<12}", "kernel", "operation");
    for (k, m) in SHAPES {
        print!("{:>8}", format!("{k}+{m}"));
    }
    println!();

    for &kernel in Kernel::supported() {
        let mut rows = [String::new(), String::new()];
        for (k, m) in SHAPES {
            let rs = ReedSolomon::with_kernel(k, m, kernel).expect("valid shape");
            let shard = BLOCK.div_ceil(k);
            let data_bytes = shard * k;
            let mut shards = vec![vec![0u8; shard]; k + m];
            let mut rng = fastrand::Rng::with_seed(0x2545_f491_4f6c_dd1d);
            for s in &mut shards[..k] {
                rng.fill(s);
            }
            let enc = measure(data_bytes, || {
                rs.encode_shards(&mut shards).expect("encode")
            });
            let mut present = vec![true; k + m];
            for p in present.iter_mut().take(m.min(k)) {
                *p = false;
            }
            let rec = measure(data_bytes, || {
                rs.reconstruct(&mut shards, &present).expect("reconstruct")
            });
            rows[0] += &format!("{enc:>8.2}");
            rows[1] += &format!("{rec:>8.2}");
        }
        println!("{:<12} {:<12}{}", kernel.name(), "encode", rows[0]);
        println!("{:<12} {:<12}{}", "", "reconstruct", rows[1]);
    }
    println!("\n(total {:.1} s)", total.elapsed().as_secs_f64());
}

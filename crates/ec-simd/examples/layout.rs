//! Encode and reconstruct time as a function of where the shards sit
//! relative to each other modulo 4 KiB (see `kernel::walk::descending` and
//! the 4K-aliasing notes in `docs/bench-notes/kernels.md`).
//!
//! ```text
//! cargo run --release -p ec-simd --example layout -- KERNEL K M SHARD_BYTES LAYOUT...
//! cargo run --release -p ec-simd --example layout -- avx2 8 4 131072 16 -16 0 1040 d64 vecs
//! ```
//!
//! Layouts: a number `s` carves the shards from one page-aligned buffer with
//! shard `i` starting `i * s` bytes (modulo 4096) into its page (a negative
//! `s` counts from the last shard); `dN` puts every data shard at page
//! offset 0 and every parity shard at offset `N`; `vecs` allocates
//! `vec![vec![0; size]; k + m]` after freeing a set of the same size, like
//! `benches/benches/erasure.rs`. Reconstruct rebuilds the first `min(k, m)`
//! data shards from the rest. Figures are the minimum over 15 samples of 20
//! calls, in microseconds per call: on a busy machine the minimum is far
//! steadier than the mean.

use std::time::Instant;

use ec_simd::{Kernel, ReedSolomon};

const PAGE: usize = 4096;

/// Page offsets of the `n` shards for a numeric or `dN` layout.
fn page_offsets(layout: &str, k: usize, n: usize) -> Option<Vec<usize>> {
    if let Some(d) = layout.strip_prefix('d') {
        let d: isize = d.parse().ok()?;
        let d = d.rem_euclid(PAGE as isize) as usize;
        return Some((0..n).map(|i| if i < k { 0 } else { d }).collect());
    }
    let s: isize = layout.parse().ok()?;
    Some(
        (0..n)
            .map(|i| {
                let rank = if s < 0 { n - 1 - i } else { i };
                (rank as isize * s.abs()).rem_euclid(PAGE as isize) as usize
            })
            .collect(),
    )
}

/// Minimum time of one call of `f`, in microseconds.
fn min_us(mut f: impl FnMut()) -> f64 {
    (0..15)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..20 {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / 20.0
        })
        .fold(f64::INFINITY, f64::min)
}

fn run(rs: &ReedSolomon, shards: &mut [&mut [u8]], k: usize) -> (f64, f64) {
    let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
    for s in shards[..k].iter_mut() {
        rng.fill(s);
    }
    let n = shards.len();
    let lost = k.min(n - k);
    let present: Vec<bool> = (0..n).map(|i| i >= lost).collect();
    rs.encode_shards(shards).expect("encode");
    let encode = min_us(|| {
        rs.encode_shards(std::hint::black_box(&mut *shards))
            .expect("encode")
    });
    let reconstruct = min_us(|| {
        rs.reconstruct_data(std::hint::black_box(&mut *shards), &present)
            .expect("reconstruct");
    });
    (encode, reconstruct)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        eprintln!("usage: layout KERNEL K M SHARD_BYTES LAYOUT...");
        std::process::exit(2);
    }
    let kernel = Kernel::from_name(&args[0]).expect("kernel");
    let (k, m, size): (usize, usize, usize) = (
        args[1].parse().expect("K"),
        args[2].parse().expect("M"),
        args[3].parse().expect("SHARD_BYTES"),
    );
    let rs = ReedSolomon::with_kernel(k, m, kernel).expect("shape");
    let n = k + m;
    for layout in &args[4..] {
        let (encode, reconstruct, offsets) = if layout == "vecs" {
            drop(vec![vec![0u8; size]; n]);
            let mut owned = vec![vec![0u8; size]; n];
            let offsets: Vec<usize> = owned.iter().map(|v| v.as_ptr() as usize % PAGE).collect();
            let mut shards: Vec<&mut [u8]> = owned.iter_mut().map(|v| &mut v[..]).collect();
            let (e, r) = run(&rs, &mut shards, k);
            (e, r, offsets)
        } else {
            let Some(offsets) = page_offsets(layout, k, n) else {
                eprintln!("bad layout {layout}");
                std::process::exit(2);
            };
            let slot = (size + PAGE).next_multiple_of(PAGE);
            let mut buf = vec![0u8; (n + 1) * slot];
            let lead = buf.as_ptr().align_offset(PAGE);
            let mut shards: Vec<&mut [u8]> = Vec::with_capacity(n);
            let mut rest = &mut buf[lead..];
            for &o in &offsets {
                let (this, next) = rest.split_at_mut(slot);
                shards.push(&mut this[o..o + size]);
                rest = next;
            }
            let (e, r) = run(&rs, &mut shards, k);
            (e, r, offsets)
        };
        println!(
            "{kernel} {k}+{m} {size} B layout {layout:>6}: encode {encode:8.1} us  \
             reconstruct {reconstruct:8.1} us  page offsets {:?}",
            &offsets[..n.min(6)]
        );
    }
}

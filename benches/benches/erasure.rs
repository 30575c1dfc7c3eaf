//! Erasure-coding throughput: every ec-simd kernel this host runs, side by
//! side with reed-solomon-simd and reed-solomon-erasure.
//!
//! ```text
//! cargo bench -p tessera-benches --bench erasure                  # full run
//! cargo bench -p tessera-benches --bench erasure -- --test        # each once
//! cargo bench -p tessera-benches --bench erasure -- 'encode/minio/.*/8\+4'
//! ```
//!
//! Groups:
//! - `encode/minio`, `reconstruct/minio`: MinIO's layout, one 1 MiB block
//!   split into `k` data shards of `ceil(1 MiB / k)` bytes;
//! - `encode/1MiB-shards`, `reconstruct/1MiB-shards`: 1 MiB per shard,
//!   and `encode/4MiB-shards`, `reconstruct/4MiB-shards`: 4 MiB per shard,
//!   where the shards outgrow the caches (lighter: 10 samples each).
//!
//! "reconstruct" rebuilds the data after losing `min(m, k)` data shards, the
//! worst case for a read. Throughput is bytes of data (`k x shard size`).
//!
//! Contenders: `ec-simd/<kernel>` for every kernel `Kernel::supported()`
//! lists except `reference` (the byte-at-a-time test oracle);
//! `reed-solomon-erasure` (`galois_8::ReedSolomon`, the same Vandermonde
//! code, with its `simd-accel` C kernels); `reed-solomon-simd` (a different,
//! FFT-based code over GF(2^16), not byte-compatible with MinIO). The latter
//! needs shard sizes that are a multiple of 64 here, so its shards are rounded
//! up (87 382 -> 87 424 bytes for 12 data shards) and its throughput counts
//! its rounded size; it also keeps parity and restored shards in its own
//! buffers, which saves it the copy into the caller's.
//!
//! The matching Go benchmarks of klauspost/reedsolomon are in
//! `benches/go/reedsolomon_test.go`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput, measurement::WallTime};
use ec_simd::{Kernel, ReedSolomon};

const SHAPES: [(usize, usize); 6] = [(4, 2), (8, 4), (12, 4), (8, 8), (16, 4), (16, 16)];
const MIB: usize = 1 << 20;

#[derive(Clone, Copy)]
enum Layout {
    /// One 1 MiB block over `k` data shards.
    Minio,
    /// 1 MiB per shard.
    MibShards,
    /// 4 MiB per shard.
    FourMibShards,
}

impl Layout {
    fn name(self) -> &'static str {
        match self {
            Self::Minio => "minio",
            Self::MibShards => "1MiB-shards",
            Self::FourMibShards => "4MiB-shards",
        }
    }

    fn shard_size(self, k: usize) -> usize {
        match self {
            Self::Minio => MIB.div_ceil(k),
            Self::MibShards => MIB,
            Self::FourMibShards => 4 * MIB,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Encode,
    Reconstruct,
}

/// Deterministic filler: the same shards for the same shape in every run.
fn random_shards(k: usize, m: usize, size: usize) -> Vec<Vec<u8>> {
    let mut rng = fastrand::Rng::with_seed(((k as u64) << 8) ^ m as u64);
    let mut shards = vec![vec![0u8; size]; k + m];
    for s in &mut shards[..k] {
        rng.fill(s);
    }
    shards
}

fn kernels() -> Vec<Kernel> {
    for r in &Kernel::detection_report().kernels {
        eprintln!("ec-simd kernel {:<12} {}", r.name, r.status);
    }
    Kernel::supported()
        .iter()
        .copied()
        .filter(|k| k.name() != "reference")
        .collect()
}

fn bench_ec_simd(
    g: &mut BenchmarkGroup<'_, WallTime>,
    op: Op,
    kernel: Kernel,
    (k, m): (usize, usize),
    size: usize,
) {
    let rs = ReedSolomon::with_kernel(k, m, kernel).expect("valid shape");
    let mut shards = random_shards(k, m, size);
    rs.encode_shards(&mut shards).expect("encode");
    let id = BenchmarkId::new(format!("ec-simd/{}", kernel.name()), format!("{k}+{m}"));
    match op {
        Op::Encode => {
            g.bench_function(id, |b| {
                b.iter(|| rs.encode_shards(black_box(&mut shards)).expect("encode"));
            });
        }
        Op::Reconstruct => {
            let lost = m.min(k);
            let present: Vec<bool> = (0..k + m).map(|i| i >= lost).collect();
            let original = shards.clone();
            for s in &mut shards[..lost] {
                s.fill(0);
            }
            rs.reconstruct_data(&mut shards, &present)
                .expect("reconstruct");
            assert!(shards == original, "ec-simd/{kernel} reconstructed wrongly");
            g.bench_function(id, |b| {
                b.iter(|| {
                    rs.reconstruct_data(black_box(&mut shards), &present)
                        .expect("reconstruct");
                });
            });
        }
    }
}

fn bench_rs_erasure(
    g: &mut BenchmarkGroup<'_, WallTime>,
    op: Op,
    (k, m): (usize, usize),
    size: usize,
) {
    use reed_solomon_erasure::galois_8::ReedSolomon as Rse;
    let rs = Rse::new(k, m).expect("valid shape");
    let mut shards = random_shards(k, m, size);
    rs.encode(&mut shards).expect("encode");
    let id = BenchmarkId::new("reed-solomon-erasure", format!("{k}+{m}"));
    match op {
        Op::Encode => {
            g.bench_function(id, |b| {
                b.iter(|| rs.encode(black_box(&mut shards)).expect("encode"));
            });
        }
        Op::Reconstruct => {
            let lost = m.min(k);
            let original = shards.clone();
            // `false` marks a missing shard; its buffer is reused.
            let mut flagged: Vec<(Vec<u8>, bool)> = shards
                .into_iter()
                .enumerate()
                .map(|(i, mut s)| {
                    if i < lost {
                        s.fill(0);
                    }
                    (s, i >= lost)
                })
                .collect();
            rs.reconstruct_data(&mut flagged).expect("reconstruct");
            assert!(
                flagged.iter().zip(&original).all(|((s, _), o)| s == o),
                "reed-solomon-erasure reconstructed wrongly"
            );
            g.bench_function(id, |b| {
                b.iter(|| {
                    rs.reconstruct_data(black_box(&mut flagged))
                        .expect("reconstruct");
                });
            });
        }
    }
}

fn bench_rs_simd(
    g: &mut BenchmarkGroup<'_, WallTime>,
    op: Op,
    (k, m): (usize, usize),
    size: usize,
) {
    use reed_solomon_simd::{ReedSolomonDecoder, ReedSolomonEncoder};
    // Rounded up to a multiple of 64 (see the module docs).
    let size = size.next_multiple_of(64);
    g.throughput(Throughput::Bytes((k * size) as u64));
    let shards = random_shards(k, m, size);
    let mut encoder = ReedSolomonEncoder::new(k, m, size).expect("valid shape");
    let id = BenchmarkId::new("reed-solomon-simd", format!("{k}+{m}"));
    match op {
        Op::Encode => {
            g.bench_function(id, |b| {
                b.iter(|| {
                    for s in &shards[..k] {
                        encoder.add_original_shard(s).expect("add");
                    }
                    let result = encoder.encode().expect("encode");
                    black_box(result.recovery(0));
                });
            });
        }
        Op::Reconstruct => {
            for s in &shards[..k] {
                encoder.add_original_shard(s).expect("add");
            }
            let recovery: Vec<Vec<u8>> = encoder
                .encode()
                .expect("encode")
                .recovery_iter()
                .map(<[u8]>::to_vec)
                .collect();
            let lost = m.min(k);
            let mut decoder = ReedSolomonDecoder::new(k, m, size).expect("valid shape");
            let round = |decoder: &mut ReedSolomonDecoder, check: bool| {
                for (i, s) in shards[..k].iter().enumerate().skip(lost) {
                    decoder.add_original_shard(i, s).expect("add");
                }
                for (i, r) in recovery.iter().enumerate().take(lost) {
                    decoder.add_recovery_shard(i, r).expect("add");
                }
                let result = decoder.decode().expect("decode");
                if check {
                    for (i, s) in shards[..lost].iter().enumerate() {
                        assert!(
                            result.restored_original(i) == Some(s.as_slice()),
                            "reed-solomon-simd restored shard {i} wrongly"
                        );
                    }
                }
                black_box(result.restored_original(0));
            };
            round(&mut decoder, true);
            g.bench_function(id, |b| b.iter(|| round(&mut decoder, false)));
        }
    }
}

fn run(c: &mut Criterion, op: Op, layout: Layout) {
    let kernels = kernels();
    let op_name = match op {
        Op::Encode => "encode",
        Op::Reconstruct => "reconstruct",
    };
    let mut g = c.benchmark_group(format!("{op_name}/{}", layout.name()));
    match layout {
        Layout::Minio => {
            g.warm_up_time(Duration::from_millis(500));
            g.measurement_time(Duration::from_secs(2));
        }
        Layout::MibShards | Layout::FourMibShards => {
            g.sample_size(10);
            g.warm_up_time(Duration::from_millis(300));
            g.measurement_time(Duration::from_secs(1));
        }
    }
    for shape in SHAPES {
        let size = layout.shard_size(shape.0);
        g.throughput(Throughput::Bytes((shape.0 * size) as u64));
        for &kernel in &kernels {
            bench_ec_simd(&mut g, op, kernel, shape, size);
        }
        bench_rs_erasure(&mut g, op, shape, size);
        bench_rs_simd(&mut g, op, shape, size);
    }
    g.finish();
}

fn erasure(c: &mut Criterion) {
    for layout in [Layout::Minio, Layout::MibShards, Layout::FourMibShards] {
        for op in [Op::Encode, Op::Reconstruct] {
            run(c, op, layout);
        }
    }
}

criterion::criterion_group!(benches, erasure);
criterion::criterion_main!(benches);

//! SHA-256 of streaming-upload chunks: the `sha2` crate (one message after
//! the other, SHA-NI where the CPU has it) against `sha256x`'s
//! `digest_many` (four messages interleaved) on every kernel this machine
//! runs.
//!
//! ```text
//! cargo bench -p tessera-benches --bench sha256
//! cargo bench -p tessera-benches --bench sha256 -- --test     # each once
//! ```
//!
//! Group `sha256-chunks/4x<size>` for four chunks of 64 KiB (minio-go's
//! and mc's) and of 1 MiB: throughput counts all four.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sha2::{Digest, Sha256};
use sha256x::Kernel;

fn input(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0; len];
    fastrand::Rng::with_seed(seed).fill(&mut v);
    v
}

fn chunks(c: &mut Criterion) {
    for (label, len) in [("64KiB", 64 << 10), ("1MiB", 1 << 20)] {
        let inputs: Vec<Vec<u8>> = (0..4).map(|i| input(len, i)).collect();
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let mut g = c.benchmark_group(format!("sha256-chunks/4x{label}"));
        g.throughput(Throughput::Bytes(4 * len as u64));
        g.bench_function("sha2", |bench| {
            bench.iter(|| {
                let mut out = [[0u8; 32]; 4];
                for (o, m) in out.iter_mut().zip(&refs) {
                    *o = Sha256::digest(black_box(m)).into();
                }
                out
            })
        });
        for k in Kernel::supported() {
            g.bench_with_input(BenchmarkId::new("sha256x", k.name()), k, |bench, k| {
                bench.iter(|| {
                    let mut out = [[0u8; 32]; 4];
                    k.digest_many(black_box(&refs), &mut out);
                    out
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, chunks);
criterion_main!(benches);

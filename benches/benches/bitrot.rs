//! Bitrot hashing throughput: every `bitrot` HighwayHash kernel this host
//! runs, side by side with the `highway` crate, BLAKE3 and SHA-256.
//!
//! ```text
//! cargo bench -p tessera-benches --bench bitrot                  # full run
//! cargo bench -p tessera-benches --bench bitrot -- --test        # each once
//! cargo bench -p tessera-benches --bench bitrot -- 'hh256/1MiB'
//! ```
//!
//! Groups:
//! - `hh256/<size>` for 1 MiB, 128 KiB, 64 KiB and 4 KiB: one stream,
//!   one-shot. Contenders: `bitrot/<kernel>` for every kernel
//!   `Kernel::supported()` lists, `bitrot-stream/<best>` (the streaming
//!   hasher fed in one update), `highway/avx2` (`highway::AvxHash`, its
//!   fastest path, when the CPU has AVX2), `highway/portable`
//!   (`highway::PortableHash`), `blake3` (its own SIMD dispatch) and
//!   `sha256` (`sha2`, with its SHA-NI dispatch).
//! - `hh256-many/<n>x<size>` for 4 and 12 streams of 128 KiB and 12 of
//!   4 MiB (from memory): `bitrot-many/<kernel>` hashes the `n` inputs
//!   together (`hash256_many`), `bitrot-loop/<kernel>` hashes them one after
//!   the other with the same kernel (the single-stream baseline). Throughput
//!   counts all `n x size` bytes.
//!
//! The matching Go benchmarks of minio/highwayhash are in
//! `benches/go/highwayhash_test.go`.

use std::hint::black_box;
use std::time::Duration;

use bitrot::{HighwayHasher, Kernel, MAGIC_HIGHWAYHASH256_KEY};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use highway::HighwayHash;

const KEY: [u8; 32] = MAGIC_HIGHWAYHASH256_KEY;

fn highway_key() -> highway::Key {
    let mut k = [0u64; 4];
    for (w, c) in k.iter_mut().zip(KEY.chunks_exact(8)) {
        *w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
    }
    highway::Key(k)
}

/// Deterministic, incompressible-looking input.
fn input(len: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn label(size: usize) -> String {
    if size >= 1 << 20 {
        format!("{}MiB", size >> 20)
    } else {
        format!("{}KiB", size >> 10)
    }
}

fn single_stream(c: &mut Criterion) {
    eprintln!("{} ({})", Kernel::detection_report(), Kernel::tuning());
    let hk = highway_key();
    for size in [1 << 20, 128 << 10, 64 << 10, 4 << 10] {
        let data = input(size);
        let mut g = c.benchmark_group(format!("hh256/{}", label(size)));
        g.throughput(Throughput::Bytes(size as u64));
        g.warm_up_time(Duration::from_millis(500));
        g.measurement_time(Duration::from_secs(2));
        for &k in Kernel::supported() {
            g.bench_with_input(BenchmarkId::new("bitrot", k.name()), &data, |b, d| {
                b.iter(|| k.hash256(&KEY, black_box(d)))
            });
        }
        let best = Kernel::detect();
        g.bench_with_input(
            BenchmarkId::new("bitrot-stream", best.name()),
            &data,
            |b, d| {
                b.iter(|| {
                    let mut h = HighwayHasher::with_kernel(best, &KEY);
                    h.update(black_box(d));
                    h.finalize256()
                })
            },
        );
        if highway::AvxHash::new(hk).is_some() {
            g.bench_with_input(BenchmarkId::new("highway", "avx2"), &data, |b, d| {
                b.iter(|| {
                    highway::AvxHash::new(hk)
                        .expect("AVX2 checked above")
                        .hash256(black_box(d))
                })
            });
        } else {
            eprintln!("*** highway/avx2 skipped: this CPU has no AVX2");
        }
        g.bench_with_input(BenchmarkId::new("highway", "portable"), &data, |b, d| {
            b.iter(|| highway::PortableHash::new(hk).hash256(black_box(d)))
        });
        g.bench_with_input(BenchmarkId::new("blake3", "auto"), &data, |b, d| {
            b.iter(|| blake3::hash(black_box(d)))
        });
        g.bench_with_input(BenchmarkId::new("sha256", "sha2"), &data, |b, d| {
            b.iter(|| {
                use sha2::Digest;
                sha2::Sha256::digest(black_box(d))
            })
        });
        g.finish();
    }
}

fn multi_stream(c: &mut Criterion) {
    // 128 KiB streams stay in L2/L3 (the shard blocks of one erasure block);
    // 12 of 4 MiB (48 MiB) stream from memory.
    for (n, stream) in [(4usize, 128 << 10), (12, 128 << 10), (12, 4 << 20)] {
        let pool = input(n * (stream + 7) + 4096);
        // Distinct, unaligned-relative-to-each-other inputs.
        let inputs: Vec<&[u8]> = (0..n)
            .map(|i| &pool[i * stream + i * 7..][..stream])
            .collect();
        let mut out = vec![[0u8; 32]; n];
        let mut g = c.benchmark_group(format!("hh256-many/{n}x{}", label(stream)));
        g.throughput(Throughput::Bytes((n * stream) as u64));
        g.warm_up_time(Duration::from_millis(500));
        g.measurement_time(Duration::from_secs(2));
        for &k in Kernel::supported() {
            g.bench_function(BenchmarkId::new("bitrot-many", k.name()), |b| {
                b.iter(|| {
                    k.hash256_many(&KEY, black_box(&inputs), &mut out);
                    out[0]
                })
            });
            g.bench_function(BenchmarkId::new("bitrot-loop", k.name()), |b| {
                b.iter(|| {
                    for (o, i) in out.iter_mut().zip(&inputs) {
                        *o = k.hash256(&KEY, black_box(i));
                    }
                    out[0]
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, single_stream, multi_stream);
criterion_main!(benches);

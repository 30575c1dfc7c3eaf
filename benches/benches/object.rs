//! In-process PUT and GET throughput of the erasure object layer on real
//! directories (no HTTP): 4 drives EC 2+2 and 8 drives EC 4+4, objects of
//! 64 KiB, 1 MiB and 16 MiB. Every PUT is durable when it returns (shard
//! files fdatasync'd, xl.meta written atomically), so these figures include
//! the file system's sync cost.
//!
//! ```text
//! cargo bench -p tessera-benches --bench object
//! ```
//!
//! The drives live under the target directory (`CARGO_TARGET_TMPDIR`), on
//! the same file system as a real deployment would use, not on tmpfs.

use std::path::PathBuf;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use object::layer::{GetOptions, LayerOptions, ObjectLayer, PutOptions};

const SIZES: &[(usize, &str)] = &[(64 << 10, "64KiB"), (1 << 20, "1MiB"), (16 << 20, "16MiB")];

fn body(len: usize) -> Vec<u8> {
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

fn object_layer(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    for (drives, parity) in [(4usize, 2usize), (8, 4)] {
        let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
        let dirs: Vec<PathBuf> = (1..=drives)
            .map(|i| root.path().join(format!("d{i}")))
            .collect();
        let layer = rt
            .block_on(ObjectLayer::open_dirs(
                &dirs,
                LayerOptions {
                    parity: Some(parity),
                    ..Default::default()
                },
            ))
            .expect("open");
        rt.block_on(layer.make_bucket("bench")).expect("bucket");
        let shape = format!("{}+{}", drives - parity, parity);
        for &(size, label) in SIZES {
            let data = body(size);
            let mut g = c.benchmark_group(format!("object/{shape}"));
            g.throughput(Throughput::Bytes(size as u64));
            g.sample_size(10);
            let opts = PutOptions {
                size: Some(size as u64),
                ..Default::default()
            };
            g.bench_function(BenchmarkId::new("put", label), |b| {
                b.iter(|| {
                    rt.block_on(layer.put_object("bench", label, &mut &data[..], &opts))
                        .expect("put")
                });
            });
            let mut out = Vec::with_capacity(size);
            g.bench_function(BenchmarkId::new("get", label), |b| {
                b.iter(|| {
                    out.clear();
                    rt.block_on(layer.get_object("bench", label, &GetOptions::default(), &mut out))
                        .expect("get");
                    assert_eq!(out.len(), size);
                });
            });
            g.finish();
        }
    }
}

criterion_group!(benches, object_layer);
criterion_main!(benches);

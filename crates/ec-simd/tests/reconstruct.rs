//! Reconstruction: every loss pattern of small configurations, random
//! patterns of large ones, full and data-only, on every runnable kernel.

mod common;

use common::{Rng, coder, first_diff, kernels, pick};
use ec_simd::ReedSolomon;

fn encoded(rng: &mut Rng, rs: &ReedSolomon, len: usize) -> Vec<Vec<u8>> {
    let k = rs.data_shards();
    let mut shards = vec![vec![0u8; len]; rs.total_shards()];
    for s in &mut shards[..k] {
        rng.fill(s);
    }
    rs.encode_shards(&mut shards).unwrap();
    shards
}

/// Loses `lost`, reconstructs fully and data-only, and checks the results
/// (data-only must leave missing parity buffers untouched).
fn check_pattern(rs: &ReedSolomon, original: &[Vec<u8>], lost: &[usize], ctx: &str) {
    let (k, total) = (rs.data_shards(), rs.total_shards());
    let mut present = vec![true; total];
    for &l in lost {
        present[l] = false;
    }
    let wipe = |shards: &mut Vec<Vec<u8>>| {
        for &l in lost {
            shards[l].fill(0x5a);
        }
    };

    let mut shards = original.to_vec();
    wipe(&mut shards);
    rs.reconstruct(&mut shards, &present).unwrap();
    for i in 0..total {
        assert!(
            shards[i] == original[i],
            "{ctx}: lost {lost:?}: reconstruct: shard {i} differs at byte {:?}",
            first_diff(&shards[i], &original[i])
        );
    }

    let mut shards = original.to_vec();
    wipe(&mut shards);
    rs.reconstruct_data(&mut shards, &present).unwrap();
    for i in 0..total {
        let ok = if i < k || present[i] {
            shards[i] == original[i]
        } else {
            shards[i].iter().all(|&b| b == 0x5a)
        };
        assert!(
            ok,
            "{ctx}: lost {lost:?}: reconstruct_data: shard {i} wrong"
        );
    }
}

#[test]
fn every_loss_pattern_of_small_configurations() {
    let seed = 0xa11_1055;
    let mut rng = Rng::with_seed(seed);
    for kernel in kernels() {
        for (k, m) in [(4, 2), (6, 3), (8, 4), (3, 5)] {
            let total = k + m;
            let rs = coder(k, m, kernel);
            // Odd length: every kernel's tail path is used too.
            let len = 67 + rng.usize(0..=64);
            let original = encoded(&mut rng, &rs, len);
            let ctx = format!("seed {seed:#x} kernel {kernel} {k}+{m} len {len}");
            let mut patterns = 0;
            for mask in 1u32..(1 << total) {
                if mask.count_ones() as usize > m {
                    continue;
                }
                let lost: Vec<usize> = (0..total).filter(|i| mask >> i & 1 == 1).collect();
                check_pattern(&rs, &original, &lost, &ctx);
                patterns += 1;
            }
            let expected: usize = (1..=m).map(|j| binomial(total, j)).sum();
            assert_eq!(patterns, expected);
        }
    }
}

fn binomial(n: usize, k: usize) -> usize {
    (0..k).fold(1, |acc, i| acc * (n - i) / (i + 1))
}

#[test]
fn random_patterns_of_large_configurations() {
    let seed = 0x1a_12_6e;
    let mut rng = Rng::with_seed(seed);
    for kernel in kernels() {
        for (k, m, len) in [
            (32, 32, 300),
            (64, 64, 200),
            (200, 56, 129),
            (16, 16, 4099),
            (12, 4, 100_003),
            // Streams from memory: inputs in two passes (see `kernel::walk`).
            (16, 4, 300_007),
        ] {
            if kernel.name() == "reference" && len > 10_000 {
                continue; // The oracle itself is byte-at-a-time; keep the suite fast.
            }
            let rs = coder(k, m, kernel);
            let original = encoded(&mut rng, &rs, len);
            let ctx = format!("seed {seed:#x} kernel {kernel} {k}+{m} len {len}");
            for round in 0..6 {
                // Maximum data loss first, then random counts and mixes.
                let lost = if round == 0 {
                    (0..m.min(k)).collect()
                } else {
                    let n = rng.usize(1..=m);
                    pick(&mut rng, k + m, n)
                };
                check_pattern(&rs, &original, &lost, &ctx);
            }
        }
    }
}

#[test]
fn reconstruct_with_more_than_enough_shards_and_nothing_lost() {
    let mut rng = Rng::with_seed(0xe70);
    for kernel in kernels() {
        let rs = coder(10, 4, kernel);
        let original = encoded(&mut rng, &rs, 333);
        let mut shards = original.clone();
        rs.reconstruct(&mut shards, &[true; 14]).unwrap();
        assert_eq!(shards, original);
        // Zero-length shards are fine.
        let mut empty = vec![Vec::<u8>::new(); 14];
        let mut present = [true; 14];
        present[0] = false;
        present[13] = false;
        rs.reconstruct(&mut empty, &present).unwrap();
    }
}

#[test]
fn reconstruct_agrees_across_kernels_on_misaligned_buffers() {
    let seed = 0x0ff5e7;
    let mut rng = Rng::with_seed(seed);
    let (k, m, len) = (8, 4, 70_001);
    for kernel in kernels() {
        if kernel.name() == "reference" {
            continue;
        }
        let rs = coder(k, m, kernel);
        let original = encoded(&mut rng, &rs, len);
        // Copy each shard to an odd offset inside its own allocation.
        let mut backing: Vec<Vec<u8>> = Vec::new();
        let mut offsets = Vec::new();
        for s in &original {
            let off = rng.usize(1..=63);
            let mut b = vec![0u8; off + len + 8];
            b[off..off + len].copy_from_slice(s);
            backing.push(b);
            offsets.push(off);
        }
        let lost = [0usize, 3, 5, 9];
        let mut present = [true; 12];
        for &l in &lost {
            present[l] = false;
        }
        let mut views: Vec<&mut [u8]> = backing
            .iter_mut()
            .zip(&offsets)
            .map(|(b, &o)| &mut b[o..o + len])
            .collect();
        for &l in &lost {
            views[l].fill(0);
        }
        rs.reconstruct(&mut views, &present).unwrap();
        for (i, v) in views.iter().enumerate() {
            assert!(
                **v == *original[i],
                "seed {seed:#x} kernel {kernel}: shard {i} at offset {} differs at {:?}",
                offsets[i],
                first_diff(v, &original[i])
            );
        }
    }
}

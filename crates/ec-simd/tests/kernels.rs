//! Every runnable kernel against the reference kernel on random inputs:
//! random shapes up to 32+32 at every length 0..=300, wide shapes, large
//! shards, and shards at misaligned addresses.

mod common;

use common::{Buffers, Rng, coder, first_diff, kernels_under_test, reference};
use ec_simd::Kernel;

/// Encodes random data with `kernel` and with the reference kernel, the
/// shards at random misaligned offsets (or aligned), and compares; also
/// checks that no byte around the output shards was written.
fn check_encode(seed: u64, kernels: &[Kernel], k: usize, m: usize, len: usize, misaligned: bool) {
    let mut rng = Rng::with_seed(seed);
    let mut data = Buffers::new(&mut rng, k, len, misaligned);
    data.fill_random(&mut rng);
    let data_refs = data.refs();

    let mut want = vec![vec![0u8; len]; m];
    coder(k, m, reference())
        .encode(&data_refs, &mut want)
        .unwrap();

    for &kernel in kernels {
        let ctx =
            format!("seed {seed:#x} kernel {kernel} {k}+{m} len {len} misaligned {misaligned}");
        let mut parity = Buffers::new(&mut rng, m, len, misaligned);
        parity.fill_guard(0xc3);
        let rs = coder(k, m, kernel);
        rs.encode(&data_refs, &mut parity.muts()).unwrap();
        for (j, w) in want.iter().enumerate() {
            assert!(
                parity.get(j) == w.as_slice(),
                "{ctx}: parity {j} differs at byte {:?}",
                first_diff(parity.get(j), w)
            );
        }
        // Wrote exactly the shard bytes and nothing around them. (A zero
        // parity byte equal to the guard is fine: only the margins are checked.)
        assert!(
            parity.guard_bytes_intact(0xc3),
            "{ctx}: wrote outside the parity shards"
        );
        assert!(
            rs.verify(&data_refs, &parity.refs()).unwrap(),
            "{ctx}: verify"
        );
    }
}

#[test]
fn every_length_0_to_300_random_shapes_up_to_32_plus_32() {
    let kernels = kernels_under_test();
    let seed = 0x1e6_0300;
    let mut rng = Rng::with_seed(seed);
    for len in 0..=300 {
        // One small shape (a single output group) and two up to 32+32,
        // aligned and misaligned.
        let small = (rng.usize(1..=6), rng.usize(1..=4));
        let big = (rng.usize(1..=32), rng.usize(1..=32));
        let big2 = (rng.usize(1..=32), rng.usize(1..=32));
        for (i, (k, m)) in [small, big, big2].into_iter().enumerate() {
            let misaligned = (len + i) % 2 == 1;
            check_encode(rng.u64(..), &kernels, k, m, len, misaligned);
        }
    }
}

#[test]
fn every_group_size_at_vector_boundary_lengths() {
    // Parity counts 1..=17 hit every group size and split of every kernel;
    // lengths around 32/64/128-byte multiples hit every tail.
    let kernels = kernels_under_test();
    let mut rng = Rng::with_seed(0x9_0ff5);
    for m in 1..=17 {
        for len in [
            31, 32, 33, 63, 64, 65, 127, 128, 129, 191, 192, 193, 255, 256, 257,
        ] {
            let k = rng.usize(1..=12);
            check_encode(rng.u64(..), &kernels, k, m, len, m % 2 == 0);
        }
    }
}

#[test]
fn wide_shapes() {
    let kernels = kernels_under_test();
    let mut rng = Rng::with_seed(0x3de);
    for (k, m, len) in [
        (64, 64, 1000),
        (200, 56, 777),
        (56, 200, 129),
        (255, 1, 4100),
        (1, 255, 300),
        (128, 128, 64),
    ] {
        check_encode(rng.u64(..), &kernels, k, m, len, true);
    }
}

#[test]
fn large_and_streaming_shards() {
    let kernels = kernels_under_test();
    let mut rng = Rng::with_seed(0x1a79e);
    // 64 KiB and 1 MiB, aligned and not, and a parity count that needs several
    // passes over the inputs (cache-blocking windows).
    check_encode(rng.u64(..), &kernels, 8, 4, 64 * 1024, false);
    check_encode(rng.u64(..), &kernels, 12, 4, 64 * 1024 + 3, true);
    check_encode(rng.u64(..), &kernels, 20, 12, 64 * 1024 + 17, true);
    check_encode(rng.u64(..), &kernels, 4, 2, 1 << 20, true);
    check_encode(rng.u64(..), &kernels, 6, 6, (1 << 20) + 1, false);
    // Streaming shards (256 KiB and more): more than 8 inputs are taken in
    // several passes, each adding to the outputs, in windows; uneven passes
    // (9 = 5 + 4, 17 = 6 + 6 + 5) and groups, odd tails, a single output.
    check_encode(rng.u64(..), &kernels, 9, 1, (256 << 10) + 1, true);
    check_encode(rng.u64(..), &kernels, 12, 4, (256 << 10) + 5, true);
    check_encode(rng.u64(..), &kernels, 17, 9, (256 << 10) + 33, false);
    check_encode(rng.u64(..), &kernels, 16, 16, (256 << 10) + 96, true);
}

/// Shards carved from one buffer, shard `i` starting `i * stagger` bytes
/// (modulo 4 KiB) after a page boundary, with guard bytes in between: with
/// a positive stagger every output of an encode lies just above every input
/// modulo 4 KiB and the vector kernels walk the columns downwards (see
/// `kernel::descending`); with a negative one, upwards. Both orders must give
/// the reference result and touch nothing else, for encode and reconstruct.
#[test]
fn both_column_orders() {
    const PAGE: usize = 4096;
    const GUARD: u8 = 0x5a;
    let kernels = kernels_under_test();
    let mut rng = Rng::with_seed(0xd0e5);
    for (k, m) in [(8, 4), (3, 2), (10, 10), (1, 1)] {
        for len in [2048usize, 4096 + 32, 5000, 70_001, 131_072] {
            for stagger in [16isize, 48, -16] {
                let n = k + m;
                let slot = (len + 64).next_multiple_of(PAGE) + PAGE;
                let mut buf = vec![GUARD; (n + 1) * slot];
                let lead = buf.as_ptr().align_offset(PAGE);
                let offs: Vec<usize> = (0..n)
                    .map(|i| {
                        let shift = (i as isize * stagger).rem_euclid(PAGE as isize) as usize;
                        lead + i * slot + shift
                    })
                    .collect();
                // Split the buffer into the shards (and the guard bytes).
                let mut shards: Vec<&mut [u8]> = Vec::with_capacity(n);
                let mut rest = &mut buf[..];
                let mut at = 0;
                for &o in &offs {
                    let (_, tail) = rest.split_at_mut(o - at);
                    let (shard, tail) = tail.split_at_mut(len);
                    shards.push(shard);
                    rest = tail;
                    at = o + len;
                }
                for s in &mut shards[..k] {
                    rng.fill(s);
                }
                let data: Vec<Vec<u8>> = shards[..k].iter().map(|s| s.to_vec()).collect();
                let mut want = vec![vec![0u8; len]; m];
                coder(k, m, reference()).encode(&data, &mut want).unwrap();
                for &kernel in &kernels {
                    let ctx = format!("kernel {kernel} {k}+{m} len {len} stagger {stagger}");
                    let rs = coder(k, m, kernel);
                    for s in &mut shards[k..] {
                        s.fill(GUARD);
                    }
                    rs.encode_shards(&mut shards).unwrap();
                    for (j, w) in want.iter().enumerate() {
                        assert!(*shards[k + j] == **w, "{ctx}: parity {j} differs");
                    }
                    // Lose the first min(k, m) data shards and rebuild them.
                    let lost = k.min(m);
                    let present: Vec<bool> = (0..n).map(|i| i >= lost).collect();
                    for s in &mut shards[..lost] {
                        s.fill(GUARD);
                    }
                    rs.reconstruct_data(&mut shards, &present).unwrap();
                    for (i, d) in data.iter().enumerate().take(lost) {
                        assert!(*shards[i] == **d, "{ctx}: data {i} not rebuilt");
                    }
                }
                drop(shards);
                // Everything outside the shards is still the guard.
                let mut inside = vec![false; buf.len()];
                for &o in &offs {
                    inside[o..o + len].fill(true);
                }
                assert!(
                    buf.iter().zip(&inside).all(|(&b, &i)| i || b == GUARD),
                    "{k}+{m} len {len} stagger {stagger}: wrote outside the shards"
                );
            }
        }
    }
}

#[test]
fn encode_and_encode_shards_agree() {
    let mut rng = Rng::with_seed(0xe5);
    for kernel in kernels_under_test() {
        let (k, m, len) = (5, 3, 1001);
        let rs = coder(k, m, kernel);
        let mut shards = vec![vec![0u8; len]; k + m];
        for s in &mut shards[..k] {
            rng.fill(s);
        }
        let mut parity = vec![vec![0u8; len]; m];
        rs.encode(&shards[..k], &mut parity).unwrap();
        rs.encode_shards(&mut shards).unwrap();
        assert_eq!(&shards[k..], &parity[..], "kernel {kernel}");
    }
}

#[test]
fn verify_detects_any_single_corruption() {
    let mut rng = Rng::with_seed(0x7e51f1);
    for kernel in kernels_under_test() {
        // 4 parity shards: verify works in 4 KiB column chunks, so 10000
        // bytes span three chunks, the last one partial.
        let (k, m, len) = (6, 4, 10_000);
        let rs = coder(k, m, kernel);
        let mut shards = vec![vec![0u8; len]; k + m];
        for s in &mut shards[..k] {
            rng.fill(s);
        }
        rs.encode_shards(&mut shards).unwrap();
        assert!(rs.verify_shards(&shards).unwrap(), "kernel {kernel}");
        for _ in 0..20 {
            let s = rng.usize(..k + m);
            let b = rng.usize(..len);
            let flip = 1 << rng.usize(..8);
            shards[s][b] ^= flip;
            assert!(
                !rs.verify_shards(&shards).unwrap(),
                "kernel {kernel}: corruption of shard {s} byte {b} not detected"
            );
            shards[s][b] ^= flip;
        }
        assert!(rs.verify_shards(&shards).unwrap());
        // Empty shards are trivially consistent.
        let empty = vec![Vec::<u8>::new(); k + m];
        assert!(rs.verify_shards(&empty).unwrap());
    }
}

#[test]
fn names_round_trip() {
    for kernel in Kernel::supported() {
        assert_eq!(Kernel::from_name(kernel.name()).unwrap(), *kernel);
        assert_eq!(kernel.to_string(), kernel.name());
    }
    let names = Kernel::names();
    let report = Kernel::detection_report();
    assert_eq!(report.kernels.len(), names.len());
    for (r, name) in report.kernels.iter().zip(names) {
        assert_eq!(r.name, *name);
    }
    assert_eq!(Kernel::detect(), Kernel::supported()[0]);
}

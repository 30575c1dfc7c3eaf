//! Every kernel against the portable reference and the `md-5` crate: odd
//! lengths around every block boundary, random data at random offsets, and
//! lanes of different lengths that finish at different times.

use fastrand::Rng;
use md5::{Digest, Md5};
use md5x::{BLOCK, Kernel};

/// `n` bytes of seeded test randomness.
fn bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    let mut v = vec![0; n];
    rng.fill(&mut v);
    v
}

fn md5_crate(data: &[u8]) -> [u8; 16] {
    Md5::digest(data).into()
}

const ODD_LENGTHS: &[usize] = &[
    0,
    1,
    2,
    3,
    55,
    56,
    57,
    63,
    64,
    65,
    119,
    120,
    121,
    127,
    128,
    129,
    191,
    192,
    1000,
    4095,
    4096,
    4097,
    65_536 + 7,
    (1 << 20) + 13,
];

fn kernels() -> &'static [Kernel] {
    let ks = Kernel::supported();
    eprintln!("{}", Kernel::detection_report());
    for name in ["avx2", "avx512"] {
        if !ks.iter().any(|k| k.name() == name) {
            eprintln!("*** kernel {name} is not usable on this machine: NOT tested here");
        }
    }
    ks
}

#[test]
fn detection_selects_the_widest_usable_kernel() {
    let ks = kernels();
    assert_eq!(Kernel::detect(), ks[0]);
    assert!(!Kernel::detection_report().any_self_test_failed());
    assert_eq!(ks.last(), Some(&Kernel::portable()));
}

#[test]
fn one_shot_matches_md5_crate_at_odd_lengths() {
    let mut rng = Rng::with_seed(0x1234_5678);
    let data = bytes(&mut rng, (1 << 20) + 64 + 13);
    for &n in ODD_LENGTHS {
        let off = rng.usize(..64);
        let m = &data[off..off + n];
        let want = md5_crate(m);
        assert_eq!(md5x::digest(m), want, "{n} bytes");
        for &k in kernels() {
            assert_eq!(k.digest(m), want, "{k}, {n} bytes");
        }
    }
}

#[test]
fn every_kernel_matches_md5_crate_on_unequal_lanes() {
    let mut rng = Rng::with_seed(0xdead_beef);
    let pool = bytes(&mut rng, 4 << 20);
    for &k in kernels() {
        for round in 0..6 {
            // More inputs than lanes; every odd length once, plus random
            // lengths, at random offsets: lanes end at different times.
            let count = k.lanes() * 2 + round;
            let lens: Vec<usize> = (0..count)
                .map(|i| {
                    if i < ODD_LENGTHS.len() && round % 2 == 0 {
                        ODD_LENGTHS[(i + round) % ODD_LENGTHS.len()]
                    } else {
                        rng.usize(..300_000)
                    }
                })
                .collect();
            let inputs: Vec<&[u8]> = lens
                .iter()
                .map(|&n| {
                    let off = rng.usize(..pool.len() - n);
                    &pool[off..off + n]
                })
                .collect();
            let mut got = vec![[0u8; 16]; inputs.len()];
            k.digest_many(&inputs, &mut got);
            for (i, m) in inputs.iter().enumerate() {
                assert_eq!(got[i], md5_crate(m), "{k}: input {i} of {} bytes", m.len());
            }
        }
    }
}

#[test]
fn compress_lanes_matches_reference_for_every_lane_count() {
    let mut rng = Rng::with_seed(77);
    let pool = bytes(&mut rng, 64 * 40 * 16 + 4096);
    for &k in kernels() {
        for n in 1..=k.lanes() {
            let blocks = 1 + rng.usize(..40);
            let data: Vec<&[u8]> = (0..n)
                .map(|_| {
                    let off = rng.usize(..pool.len() - blocks * BLOCK);
                    &pool[off..off + blocks * BLOCK]
                })
                .collect();
            let start: Vec<[u32; 4]> = (0..n)
                .map(|_| core::array::from_fn(|_| rng.u32(..)))
                .collect();
            let mut got = start.clone();
            k.compress_lanes(&mut got, &data, blocks);
            for i in 0..n {
                let mut want = start[i];
                md5x::compress_portable(&mut want, data[i]);
                assert_eq!(got[i], want, "{k}: lane {i} of {n}, {blocks} blocks");
            }
        }
    }
}

#[test]
fn lanes_may_point_at_the_same_bytes() {
    let data = bytes(&mut Rng::with_seed(5), 64 * 9);
    for &k in kernels() {
        let n = k.lanes();
        let inputs: Vec<&[u8]> = (0..n).map(|_| &data[..]).collect();
        let mut got = vec![[0u8; 16]; n];
        k.digest_many(&inputs, &mut got);
        assert!(got.iter().all(|d| *d == md5_crate(&data)), "{k}");
    }
}

#[test]
#[should_panic(expected = "shorter than its blocks")]
fn short_lane_input_is_refused() {
    let k = Kernel::detect();
    let n = k.lanes().min(2);
    let short = [0u8; 64];
    let long = [0u8; 128];
    let data: Vec<&[u8]> = [&short[..], &long[..]][..n].to_vec();
    let mut st = vec![md5x::INIT; n];
    k.compress_lanes(&mut st, &data, 2);
}

//! Every kernel this machine runs against the `sha2` crate: random
//! messages of odd lengths, singly and in pairs of unequal lengths, and
//! the lanes from arbitrary starting states.

use sha2::{Digest, Sha256};
use sha256x::{BLOCK, Kernel};

fn noise(len: usize, rng: &mut fastrand::Rng) -> Vec<u8> {
    let mut v = vec![0; len];
    rng.fill(&mut v);
    v
}

fn sha2(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

#[test]
fn detection_names_a_kernel_that_passed() {
    let report = Kernel::detection_report();
    assert_eq!(report.selected, Kernel::detect().name());
    assert!(!report.any_self_test_failed(), "{report}");
    if std::arch::is_x86_feature_detected!("sha") {
        assert_eq!(Kernel::detect().name(), "sha-ni");
        assert_eq!(Kernel::detect().lanes(), 4);
    } else {
        eprintln!("NOTE: no SHA extensions here; only the portable kernel was exercised");
    }
}

#[test]
fn digests_match_sha2_on_random_lengths() {
    let mut rng = fastrand::Rng::with_seed(1);
    for k in Kernel::supported()
        .iter()
        .copied()
        .chain([Kernel::portable()])
    {
        for _ in 0..300 {
            let la = match rng.u8(..4) {
                0 => rng.usize(..130),
                1 => rng.usize(..5_000),
                2 => 65_536 + rng.usize(..3) * 64 - 1 + rng.usize(..3),
                _ => rng.usize(..200_000),
            };
            let a = noise(la, &mut rng);
            assert_eq!(k.digest(&a), sha2(&a), "{k} digest of {la} bytes");
            // A group: mostly the same length (chunks of one upload),
            // sometimes not.
            let count = rng.usize(1..=6);
            let messages: Vec<Vec<u8>> = (0..count)
                .map(|_| {
                    let len = if rng.u8(..4) > 0 {
                        la
                    } else {
                        rng.usize(..70_000)
                    };
                    noise(len, &mut rng)
                })
                .collect();
            let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
            let mut got = vec![[0u8; 32]; count];
            k.digest_many(&refs, &mut got);
            for (m, d) in messages.iter().zip(&got) {
                assert_eq!(
                    *d,
                    sha2(m),
                    "{k}: {count} messages, one of {} bytes",
                    m.len()
                );
            }
        }
        assert_eq!(sha256x::digest(b"abc"), sha2(b"abc"));
    }
}

#[test]
fn lanes_match_the_portable_kernel_from_any_state() {
    let mut rng = fastrand::Rng::with_seed(2);
    for k in Kernel::supported() {
        for n in 1..=k.lanes() {
            for blocks in [0, 1, 2, 17] {
                let inputs: Vec<Vec<u8>> = (0..n)
                    .map(|_| noise(blocks * BLOCK + rng.usize(..64), &mut rng))
                    .collect();
                let starts: Vec<[u32; 8]> = (0..n)
                    .map(|_| std::array::from_fn(|_| rng.u32(..)))
                    .collect();
                let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
                let mut got = starts.clone();
                k.compress_lanes(&mut got, &refs, blocks);
                let mut want = starts.clone();
                Kernel::portable().compress_lanes(&mut want[..1], &refs[..1], blocks);
                for l in 1..n {
                    Kernel::portable().compress_lanes(&mut want[l..=l], &refs[l..=l], blocks);
                }
                assert_eq!(got, want, "{k}: {n} lanes, {blocks} blocks");
            }
        }
    }
}

#[test]
#[should_panic(expected = "shorter than its blocks")]
fn short_lane_inputs_are_refused() {
    let mut st = [sha256x::IV];
    Kernel::detect().compress_lanes(&mut st, &[&[0u8; 63]], 1);
}

#[test]
fn nothing_to_hash_is_nothing() {
    for k in Kernel::supported() {
        k.compress_lanes(&mut [], &[], 3);
        k.digest_many(&[], &mut []);
    }
}

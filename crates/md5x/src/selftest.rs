//! The start-up self-test every kernel must pass before it is used.
//!
//! 1. The portable reference against the test suite of RFC 1321
//!    (appendix A.5) and a chained known answer covering every tail length
//!    from 0 to 200 bytes: the MD5 of the concatenated digests of the first
//!    `n` bytes of a fixed pattern, for `n` in 0..=200, must be
//!    [`CHAINED_DIGEST`] (computed with Python's `hashlib`).
//! 2. The kernel's lanes against the reference: `compress_lanes` with every
//!    number of states from 1 to the kernel's width, distinct inputs and
//!    starting states per lane, 1 to 3 blocks.
//! 3. The kernel's multi-message path on messages of unequal lengths (more
//!    messages than lanes, lanes finishing at different times) and on the
//!    RFC messages.

use crate::multi::{self, Compress};
use crate::portable::{self, BLOCK};

/// RFC 1321, appendix A.5: messages and their MD5 in hex.
pub(crate) const RFC1321: &[(&str, &str)] = &[
    ("", "d41d8cd98f00b204e9800998ecf8427e"),
    ("a", "0cc175b9c0f1b6a831c399e269772661"),
    ("abc", "900150983cd24fb0d6963f7d28e17f72"),
    ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
    (
        "abcdefghijklmnopqrstuvwxyz",
        "c3fcd3d76192e4007dfb496cca67e13b",
    ),
    (
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        "d174ab98d277d9f5a5611c2c9f419d9f",
    ),
    (
        "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
        "57edf4a22be3c955ac49da2e2107b67a",
    ),
];

/// The expected digest of the chained check (see the module
/// documentation).
pub(crate) const CHAINED_DIGEST: &str = "c58b618b77d5ffb289037ce4ae66f71e";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The fixed pattern of the chained check: byte `i` is `(131 i + 7) mod 251`.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 131 + 7) % 251) as u8).collect()
}

/// Seeded pseudo-random test data, different from the pattern.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0; len];
    fastrand::Rng::with_seed(seed).fill(&mut v);
    v
}

/// The reference's own checks (1).
fn reference_checks() -> Result<(), String> {
    for (msg, want) in RFC1321 {
        let got = hex(&portable::digest(msg.as_bytes()));
        if got != *want {
            return Err(format!(
                "portable MD5 of RFC 1321 message {msg:?}: got {got}"
            ));
        }
    }
    let p = pattern(200);
    let mut acc = Vec::with_capacity(201 * 16);
    for n in 0..=200 {
        acc.extend_from_slice(&portable::digest(&p[..n]));
    }
    let got = hex(&portable::digest(&acc));
    if got != CHAINED_DIGEST {
        return Err(format!("portable chained known answer: got {got}"));
    }
    Ok(())
}

/// Runs every check of `k` against the portable reference; a description
/// of the first failure.
pub(crate) fn run(k: &dyn Compress) -> Result<(), String> {
    reference_checks()?;

    // 2. Lanes against the reference.
    let width = k.lanes();
    let pool = noise(64 * 3 * 16 + 64 * 17, 0x5eed);
    for n in 1..=width {
        for blocks in 1..=3 {
            let data: Vec<&[u8]> = (0..n)
                .map(|i| &pool[i * (3 * BLOCK + 4) + i % 5..][..blocks * BLOCK])
                .collect();
            let start: Vec<[u32; 4]> = (0..n)
                .map(|i| {
                    let i = i as u32;
                    [
                        0x6745_2301 ^ i.wrapping_mul(0x9e37_79b9),
                        0xefcd_ab89u32.rotate_left(i),
                        0x98ba_dcfe ^ (i << 24),
                        0x1032_5476u32.wrapping_add(i),
                    ]
                })
                .collect();
            let mut got = start.clone();
            k.compress_lanes(&mut got, &data, blocks);
            for i in 0..n {
                let mut want = start[i];
                portable::compress(&mut want, data[i]);
                if got[i] != want {
                    return Err(format!(
                        "lane {i} of {n} ({blocks} blocks) disagrees with the portable reference"
                    ));
                }
            }
        }
    }

    // 3. Whole messages of unequal lengths, more of them than lanes.
    let lens = [
        0usize,
        1,
        55,
        56,
        63,
        64,
        65,
        119,
        120,
        127,
        128,
        129,
        1000,
        4096,
        4109,
        640,
        3,
        2047,
        64 * 7,
        64 * 7 + 1,
        77,
        191,
        192,
        193,
        5000,
        130,
        4096,
        4096,
        250,
        1,
        0,
        64,
        65,
        4000,
        333,
    ];
    let big = noise(5000 + 64, 0xfeed);
    let inputs: Vec<&[u8]> = lens
        .iter()
        .enumerate()
        .map(|(i, &n)| &big[i % 61..][..n])
        .collect();
    let mut got = vec![[0u8; 16]; inputs.len()];
    multi::digest_many(k, &inputs, &mut got);
    for (i, input) in inputs.iter().enumerate() {
        if got[i] != portable::digest(input) {
            return Err(format!(
                "multi-message MD5 of message {i} ({} bytes of {} messages) disagrees with the portable reference",
                input.len(),
                inputs.len()
            ));
        }
    }
    let rfc: Vec<&[u8]> = RFC1321.iter().map(|(m, _)| m.as_bytes()).collect();
    let mut got = vec![[0u8; 16]; rfc.len()];
    multi::digest_many(k, &rfc, &mut got);
    for ((msg, want), got) in RFC1321.iter().zip(&got) {
        if hex(got) != *want {
            return Err(format!("multi-message MD5 of RFC 1321 message {msg:?}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kernel;

    /// A kernel wrong in one lane at one number of states.
    struct Broken {
        inner: Kernel,
        bad_lane: usize,
        at_states: usize,
    }

    impl Compress for Broken {
        fn lanes(&self) -> usize {
            self.inner.lanes()
        }
        fn compress_lanes(&self, states: &mut [[u32; 4]], data: &[&[u8]], blocks: usize) {
            self.inner.compress_lanes(states, data, blocks);
            if states.len() == self.at_states {
                states[self.bad_lane][2] ^= 0x100;
            }
        }
    }

    #[test]
    fn every_usable_kernel_passes() {
        for &k in Kernel::supported() {
            assert_eq!(run(&k), Ok(()), "kernel {k}");
        }
    }

    #[test]
    fn self_test_rejects_broken_kernels() {
        for &k in Kernel::supported() {
            let w = k.lanes();
            for (bad_lane, at_states) in [(0, 1), (w - 1, w), (w / 2, w / 2 + 1), (0, w)] {
                let r = run(&Broken {
                    inner: k,
                    bad_lane,
                    at_states,
                });
                assert!(
                    r.is_err(),
                    "{k}: self-test accepted a kernel wrong in lane {bad_lane} of {at_states}"
                );
            }
        }
    }
}

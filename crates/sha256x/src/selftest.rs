//! The start-up self-test every kernel must pass before it is used.
//!
//! 1. The portable reference against FIPS 180-4's examples and a chained
//!    known answer covering every tail length from 0 to 200 bytes: the
//!    SHA-256 of the concatenated digests of the first `n` bytes of a fixed
//!    pattern, for `n` in 0..=200, must be [`CHAINED_DIGEST`] (computed
//!    with Python's `hashlib`).
//! 2. The kernel's lanes against the reference: `compress_lanes` with one
//!    state and with every lane, distinct inputs and starting states, 1 to
//!    3 blocks.
//! 3. `digest_many` on groups of one to five messages of unequal lengths
//!    (tails of one and two blocks, empty messages, one far longer than
//!    the rest) against the reference.

use crate::Kernel;
use crate::portable::{self, BLOCK};

/// FIPS 180-4 examples (and the empty message): messages and digests.
pub(crate) const KNOWN: &[(&str, &str)] = &[
    (
        "",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ),
    (
        "abc",
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    ),
    (
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    ),
];

/// The expected digest of the chained check (see the module
/// documentation).
pub(crate) const CHAINED_DIGEST: &str =
    "1100f512996f22e6bd568b1bdb84f114355d5aeadf13f0da82a09808722f7afa";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The fixed pattern of the chained check: byte `i` is `(131 i + 7) mod 251`.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 131 + 7) % 251) as u8).collect()
}

/// Seeded pseudo-random test data.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0; len];
    fastrand::Rng::with_seed(seed).fill(&mut v);
    v
}

/// The reference's own checks (1).
fn reference_checks() -> Result<(), String> {
    for (msg, want) in KNOWN {
        let got = hex(&portable::digest(msg.as_bytes()));
        if got != *want {
            return Err(format!("portable SHA-256 of {msg:?}: got {got}"));
        }
    }
    let p = pattern(200);
    let mut acc = Vec::with_capacity(201 * 32);
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
/// of the first mismatch otherwise.
pub(crate) fn run(k: &Kernel) -> Result<(), String> {
    reference_checks()?;
    let name = k.name();
    // (2) Lanes.
    for n in 1..=k.lanes() {
        for blocks in 1..=3 {
            let inputs: Vec<Vec<u8>> = (0..n)
                .map(|l| noise(blocks * BLOCK, (n * 16 + blocks * 4 + l) as u64))
                .collect();
            let starts: Vec<[u32; 8]> = (0..n)
                .map(|l| {
                    let mut rng = fastrand::Rng::with_seed(0x5eed + l as u64);
                    std::array::from_fn(|_| rng.u32(..))
                })
                .collect();
            let mut got = starts.clone();
            let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
            k.compress_lanes(&mut got, &refs, blocks);
            for l in 0..n {
                let mut want = starts[l];
                portable::compress(&mut want, &inputs[l]);
                if got[l] != want {
                    return Err(format!(
                        "{name}: lane {l} of {n}, {blocks} block(s) differs from the reference"
                    ));
                }
            }
        }
    }
    // (3) Groups.
    let long = noise(3 * BLOCK * 7 + 13, 77);
    let lengths = [
        0,
        1,
        55,
        56,
        63,
        64,
        119,
        120,
        200,
        long.len() - 1,
        long.len(),
    ];
    for count in 1..=k.lanes() + 1 {
        for start in 0..lengths.len() {
            let messages: Vec<&[u8]> = (0..count)
                .map(|i| {
                    let len = lengths[(start + i * 3) % lengths.len()];
                    &long[long.len() - len..]
                })
                .collect();
            let mut got = vec![[0u8; 32]; count];
            k.digest_many(&messages, &mut got);
            for (m, d) in messages.iter().zip(&got) {
                if *d != portable::digest(m) {
                    return Err(format!(
                        "{name}: digest_many of {count} messages differs from the reference \
                         for {} bytes",
                        m.len()
                    ));
                }
            }
        }
    }
    Ok(())
}

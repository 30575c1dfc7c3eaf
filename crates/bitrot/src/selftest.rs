//! The start-up self-test every kernel must pass before it is used.
//!
//! Three checks, all through the kernel's public entry points (one-shot,
//! streaming and multi-stream):
//!
//! 1. MinIO's iterated bitrot self-test (MinIO `cmd/bitrot.go`,
//!    `bitrotSelfTest`): starting from an empty message, 32 times hash the
//!    message with the fixed bitrot key and append the 32-byte digest to the
//!    message; the last digest must be [`MINIO_SELFTEST_DIGEST`]. Run both
//!    one-shot and streaming.
//! 2. A chained known answer that also covers every tail length and the
//!    64- and 128-bit outputs (MinIO's messages are all multiples of 32
//!    bytes): for `n` in 0..=130, the 64-bit (little-endian), 128-bit and
//!    256-bit digests of the first `n` bytes of a fixed pattern are
//!    concatenated, and the 256-bit digest of that concatenation must be
//!    [`CHAINED_DIGEST`]. The value was computed with minio/highwayhash
//!    v1.0.3.
//! 3. Agreement with the portable kernel (itself checked by 1 and 2) on more
//!    lengths and another key, streaming with odd split sizes, and the
//!    multi-stream path on streams of unequal lengths.

use crate::MAGIC_HIGHWAYHASH256_KEY;

/// MinIO's expected final digest of its iterated HighwayHash-256 self-test.
pub(crate) const MINIO_SELFTEST_DIGEST: [u8; 32] =
    hex32("39c0407ed3f01b18d22c85db4aeff11e060ca5f43131b0126731ca197cd42313");

/// The expected digest of check 2 (see the module documentation).
pub(crate) const CHAINED_DIGEST: [u8; 32] =
    hex32("35cdd31a0e8bf107886519fe6544a54904876ced6dd078d46c10df5e1cb646a7");

/// What the self-test needs from a kernel; implemented by `Kernel` and, in
/// tests, by deliberately broken kernels.
pub(crate) trait Hashes {
    fn hash64(&self, key: &[u8; 32], data: &[u8]) -> u64;
    fn hash128(&self, key: &[u8; 32], data: &[u8]) -> [u8; 16];
    fn hash256(&self, key: &[u8; 32], data: &[u8]) -> [u8; 32];
    /// Streaming HighwayHash-256 of the concatenation of `parts`.
    fn streaming256(&self, key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32];
    fn many256(&self, key: &[u8; 32], inputs: &[&[u8]], out: &mut [[u8; 32]]);
}

const fn hex32(s: &str) -> [u8; 32] {
    let b = s.as_bytes();
    assert!(b.len() == 64);
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = (nibble(b[2 * i]) << 4) | nibble(b[2 * i + 1]);
        i += 1;
    }
    out
}

const fn nibble(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => panic!("not a lower-case hex digit"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The fixed pattern of check 2: byte `i` is `(131 i + 7) mod 251`.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 131 + 7) % 251) as u8).collect()
}

/// MinIO's iterated self-test. `streaming` selects the streaming path.
pub(crate) fn minio_iterated(h: &dyn Hashes, streaming: bool) -> [u8; 32] {
    const SIZE: usize = 32;
    const BLOCK_SIZE: usize = 32;
    let mut msg: Vec<u8> = Vec::with_capacity(SIZE * BLOCK_SIZE);
    let mut sum = [0u8; 32];
    for _ in 0..BLOCK_SIZE {
        sum = if streaming {
            // Uneven pieces, to exercise the hasher's buffering.
            let cut1 = msg.len() / 3;
            let cut2 = cut1 + (msg.len() - cut1) / 2 + 1;
            let cut2 = cut2.min(msg.len());
            h.streaming256(
                &MAGIC_HIGHWAYHASH256_KEY,
                &[&msg[..cut1], &msg[cut1..cut2], &msg[cut2..]],
            )
        } else {
            h.hash256(&MAGIC_HIGHWAYHASH256_KEY, &msg)
        };
        msg.extend_from_slice(&sum);
    }
    sum
}

/// Check 2's chained digest.
pub(crate) fn chained(h: &dyn Hashes) -> [u8; 32] {
    let msg = pattern(130);
    let mut acc = Vec::with_capacity(131 * 56);
    for n in 0..=130 {
        let m = &msg[..n];
        acc.extend_from_slice(&h.hash64(&MAGIC_HIGHWAYHASH256_KEY, m).to_le_bytes());
        acc.extend_from_slice(&h.hash128(&MAGIC_HIGHWAYHASH256_KEY, m));
        acc.extend_from_slice(&h.hash256(&MAGIC_HIGHWAYHASH256_KEY, m));
    }
    h.hash256(&MAGIC_HIGHWAYHASH256_KEY, &acc)
}

/// Runs all checks of `h` against the reference `reference` (the portable
/// kernel). Returns a description of the first failure.
pub(crate) fn run(h: &dyn Hashes, reference: &dyn Hashes) -> Result<(), String> {
    for streaming in [false, true] {
        let got = minio_iterated(h, streaming);
        if got != MINIO_SELFTEST_DIGEST {
            return Err(format!(
                "MinIO bitrot self-test ({}) mismatch: got {} want {}",
                if streaming { "streaming" } else { "one-shot" },
                hex(&got),
                hex(&MINIO_SELFTEST_DIGEST)
            ));
        }
    }
    let got = chained(h);
    if got != CHAINED_DIGEST {
        return Err(format!(
            "chained known-answer test mismatch: got {} want {}",
            hex(&got),
            hex(&CHAINED_DIGEST)
        ));
    }

    // Check 3: against the reference on other data, key and paths.
    let key: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(29).wrapping_add(101));
    let data: Vec<u8> = (0..5000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let lengths = (0..=200).chain([255, 256, 257, 1000, 1023, 4096, 4099, 5000]);
    for n in lengths {
        let m = &data[..n];
        let want = reference.hash256(&key, m);
        let got = h.hash256(&key, m);
        if got != want {
            return Err(format!(
                "one-shot HighwayHash-256 of {n} bytes disagrees with portable"
            ));
        }
        if h.hash64(&key, m) != reference.hash64(&key, m) {
            return Err(format!(
                "one-shot HighwayHash-64 of {n} bytes disagrees with portable"
            ));
        }
        if h.hash128(&key, m) != reference.hash128(&key, m) {
            return Err(format!(
                "one-shot HighwayHash-128 of {n} bytes disagrees with portable"
            ));
        }
        for step in [1usize, 7, 31, 33, 100] {
            let parts: Vec<&[u8]> = m.chunks(step).collect();
            if h.streaming256(&key, &parts) != want {
                return Err(format!(
                    "streaming HighwayHash-256 of {n} bytes in pieces of {step} disagrees with portable"
                ));
            }
        }
    }

    // Multi-stream: unequal lengths, more streams than any kernel's lanes.
    let lens = [
        0usize, 1, 31, 32, 33, 64, 95, 4096, 4099, 640, 641, 2000, 2048, 3, 5000, 4096, 4096, 77,
        1024,
    ];
    let inputs: Vec<&[u8]> = lens
        .iter()
        .enumerate()
        .map(|(i, &n)| &data[i * 7 % 11..][..n.min(5000 - i * 7 % 11)])
        .collect();
    let mut got = vec![[0u8; 32]; inputs.len()];
    h.many256(&key, &inputs, &mut got);
    for (i, input) in inputs.iter().enumerate() {
        if got[i] != reference.hash256(&key, input) {
            return Err(format!(
                "multi-stream HighwayHash-256 of stream {i} ({} bytes, {} streams) disagrees with portable",
                input.len(),
                inputs.len()
            ));
        }
    }
    // Equal lengths, the erasure-coding case.
    let inputs: Vec<&[u8]> = (0..12).map(|i| &data[i * 100..][..1024 + 5]).collect();
    let mut got = vec![[0u8; 32]; inputs.len()];
    h.many256(&key, &inputs, &mut got);
    for (i, input) in inputs.iter().enumerate() {
        if got[i] != reference.hash256(&key, input) {
            return Err(format!(
                "multi-stream HighwayHash-256 of equal-length stream {i} disagrees with portable"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kernel;

    /// A kernel that passes everything except one input length.
    struct Broken {
        inner: Kernel,
        bad_len: usize,
    }

    impl Hashes for Broken {
        fn hash64(&self, key: &[u8; 32], data: &[u8]) -> u64 {
            self.inner.hash64(key, data)
        }
        fn hash128(&self, key: &[u8; 32], data: &[u8]) -> [u8; 16] {
            self.inner.hash128(key, data)
        }
        fn hash256(&self, key: &[u8; 32], data: &[u8]) -> [u8; 32] {
            let mut h = self.inner.hash256(key, data);
            if data.len() == self.bad_len {
                h[31] ^= 0x80;
            }
            h
        }
        fn streaming256(&self, key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
            let n: usize = parts.iter().map(|p| p.len()).sum();
            let mut h = self.inner.streaming256(key, parts);
            if n == self.bad_len {
                h[0] ^= 1;
            }
            h
        }
        fn many256(&self, key: &[u8; 32], inputs: &[&[u8]], out: &mut [[u8; 32]]) {
            self.inner.many256(key, inputs, out);
            for (o, i) in out.iter_mut().zip(inputs) {
                if i.len() == self.bad_len {
                    o[5] ^= 4;
                }
            }
        }
    }

    #[test]
    fn self_test_rejects_broken_kernels() {
        let p = Kernel::portable();
        assert_eq!(run(&p, &p), Ok(()));
        // 992: MinIO's last message; 17: a tail only the chained KAT and the
        // cross-check see; 4099: only the cross-check (and multi-stream).
        for bad_len in [0, 992, 17, 31, 33, 4099, 1029] {
            let broken = Broken { inner: p, bad_len };
            let r = run(&broken, &p);
            assert!(
                r.is_err(),
                "self-test accepted a kernel wrong at {bad_len} bytes"
            );
            eprintln!("bad_len {bad_len}: {}", r.unwrap_err());
        }
    }
}

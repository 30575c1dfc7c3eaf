//! Helpers shared by the drive's test binaries.

/// Deterministic pseudo-random bytes, different per seed.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut bytes = vec![0; len];
    fastrand::Rng::with_seed(seed).fill(&mut bytes);
    bytes
}

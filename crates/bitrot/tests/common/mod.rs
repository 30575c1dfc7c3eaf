//! Shared test helpers: a tiny seeded PRNG and kernel enumeration.
#![allow(dead_code)]

use bitrot::{KERNEL_NAMES, Kernel};

/// SplitMix64: small, seedable, good enough for test data.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let x = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&x[..chunk.len()]);
        }
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.fill(&mut v);
        v
    }

    pub fn key(&mut self) -> [u8; 32] {
        let mut k = [0; 32];
        self.fill(&mut k);
        k
    }
}

/// Prints the seed if the test panics while it is alive.
pub struct SeedGuard(pub u64);

impl Drop for SeedGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "test failed with seed {:#x}; rerun with BITROT_TEST_SEED={:#x}",
                self.0, self.0
            );
        }
    }
}

/// The test seed: `BITROT_TEST_SEED` (decimal or 0x-hex) if set, otherwise
/// fresh from the clock. Printed, and printed again on failure by the
/// returned guard.
pub fn seed(test: &str) -> (SplitMix64, SeedGuard) {
    let seed = match std::env::var("BITROT_TEST_SEED") {
        Ok(s) => {
            let s = s.trim();
            match s.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).expect("hex seed"),
                None => s.parse().expect("decimal seed"),
            }
        }
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x5eed),
    };
    eprintln!("{test}: seed {seed:#x}");
    (SplitMix64::new(seed), SeedGuard(seed))
}

/// Every kernel usable here; kernels this machine cannot run are reported
/// loudly on stderr (they are not silently passed).
pub fn kernels(test: &str) -> Vec<Kernel> {
    let mut out = Vec::new();
    for name in KERNEL_NAMES {
        match Kernel::from_name(name) {
            Ok(k) => out.push(k),
            Err(e) => eprintln!("*** {test}: SKIPPING kernel `{name}`: {e}"),
        }
    }
    assert!(!out.is_empty());
    out
}

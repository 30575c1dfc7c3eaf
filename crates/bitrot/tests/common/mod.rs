//! Shared test helpers: seeded randomness and kernel enumeration.
#![allow(dead_code)]

use bitrot::Kernel;

/// The seeded test randomness.
pub use fastrand::Rng;

/// What the tests draw besides numbers: messages and keys.
pub trait RngExt {
    /// `n` random bytes.
    fn bytes(&mut self, n: usize) -> Vec<u8>;
    /// A random HighwayHash key.
    fn key(&mut self) -> [u8; 32];
}

impl RngExt for Rng {
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.fill(&mut v);
        v
    }

    fn key(&mut self) -> [u8; 32] {
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
pub fn seed(test: &str) -> (Rng, SeedGuard) {
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
    (Rng::with_seed(seed), SeedGuard(seed))
}

/// Every kernel usable here; kernels this machine cannot run are reported
/// loudly on stderr (they are not silently passed).
pub fn kernels(test: &str) -> Vec<Kernel> {
    let mut out = Vec::new();
    for &name in Kernel::names() {
        match Kernel::from_name(name) {
            Ok(k) => out.push(k),
            Err(e) => eprintln!("*** {test}: SKIPPING kernel `{name}`: {e}"),
        }
    }
    assert!(!out.is_empty());
    out
}

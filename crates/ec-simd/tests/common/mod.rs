//! Helpers shared by the integration tests: seeded randomness, kernel lists,
//! misaligned shard buffers.

#![allow(dead_code)]

use std::io::Write;
use std::sync::Once;

use ec_simd::{Kernel, KernelStatus, ReedSolomon};

/// The seeded test randomness. Every test prints its seed in its assertion
/// messages so a failure can be replayed.
pub use fastrand::Rng;

/// `n` distinct indices out of `0..total`, sorted.
pub fn pick(rng: &mut Rng, total: usize, n: usize) -> Vec<usize> {
    let mut v = rng.choose_multiple(0..total, n);
    v.sort_unstable();
    v
}

/// Every kernel this host runs (reference included). Kernels the host cannot
/// run are reported loudly on stderr, once per test binary, written straight
/// to the stream so that the test harness's output capture does not hide
/// them; a kernel that the host runs but that failed its self-test fails the
/// test.
pub fn kernels() -> Vec<Kernel> {
    static REPORTED: Once = Once::new();
    let report = Kernel::detection_report();
    for r in &report.kernels {
        if let KernelStatus::Failed(why) = &r.status {
            panic!("kernel {} failed its self-test: {why}", r.name);
        }
    }
    REPORTED.call_once(|| {
        let mut err = std::io::stderr().lock();
        for r in &report.kernels {
            if r.status != KernelStatus::Passed {
                let _ = writeln!(
                    err,
                    "ec-simd tests: SKIPPING kernel {:<12} on this host: {}",
                    r.name, r.status
                );
            }
        }
    });
    Kernel::supported().to_vec()
}

/// Every kernel except the reference one (which is the oracle).
pub fn kernels_under_test() -> Vec<Kernel> {
    kernels()
        .into_iter()
        .filter(|k| k.name() != "reference")
        .collect()
}

pub fn reference() -> Kernel {
    Kernel::from_name("reference").expect("the reference kernel always exists")
}

pub fn coder(k: usize, m: usize, kernel: Kernel) -> ReedSolomon {
    ReedSolomon::with_kernel(k, m, kernel).expect("valid shard counts")
}

/// Index of the first differing byte.
pub fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
    if a.len() != b.len() {
        return Some(a.len().min(b.len()));
    }
    a.iter().zip(b).position(|(x, y)| x != y)
}

/// `n` shard buffers of `len` bytes, each starting at its own offset inside
/// a larger allocation so that kernels see every alignment.
pub struct Buffers {
    backing: Vec<Vec<u8>>,
    offsets: Vec<usize>,
    len: usize,
}

impl Buffers {
    /// Offsets are drawn from `1..=63` (never 64-byte aligned) when
    /// `misaligned`, else 0.
    pub fn new(rng: &mut Rng, n: usize, len: usize, misaligned: bool) -> Self {
        let offsets: Vec<usize> = (0..n)
            .map(|_| if misaligned { rng.usize(1..=63) } else { 0 })
            .collect();
        let backing = offsets.iter().map(|&o| vec![0u8; o + len + 64]).collect();
        Self {
            backing,
            offsets,
            len,
        }
    }

    pub fn get(&self, i: usize) -> &[u8] {
        &self.backing[i][self.offsets[i]..self.offsets[i] + self.len]
    }

    pub fn refs(&self) -> Vec<&[u8]> {
        (0..self.backing.len()).map(|i| self.get(i)).collect()
    }

    pub fn muts(&mut self) -> Vec<&mut [u8]> {
        let len = self.len;
        self.backing
            .iter_mut()
            .zip(&self.offsets)
            .map(|(b, &o)| &mut b[o..o + len])
            .collect()
    }

    pub fn fill_random(&mut self, rng: &mut Rng) {
        for s in self.muts() {
            rng.fill(s);
        }
    }

    /// Bytes around the shards must never be touched.
    pub fn guard_bytes_intact(&self, guard: u8) -> bool {
        self.backing.iter().zip(&self.offsets).all(|(b, &o)| {
            b[..o].iter().all(|&x| x == guard) && b[o + self.len..].iter().all(|&x| x == guard)
        })
    }

    pub fn fill_guard(&mut self, guard: u8) {
        for b in &mut self.backing {
            b.fill(guard);
        }
    }
}

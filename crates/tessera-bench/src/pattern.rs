//! Object contents: a deterministic pattern derived from (key, size, run
//! seed), addressable by offset, so a body can be generated in pieces while
//! it is sent and every byte of a GET checked as it arrives, without keeping
//! the object in memory.
//!
//! The object's 64-bit seed is `xxh64(key, run_seed ^ size * K)`; the 8-byte
//! word `w` (little endian) is a bijective mix of `seed ^ w * K`, so the
//! words of one object are all distinct (a shifted, repeated or reordered
//! range never matches) and objects with different keys, sizes or run seeds
//! have unrelated contents. About 1 ns per 8 bytes on one core.

use std::fmt;

use xxhash_rust::xxh64::xxh64;

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
const MIX: u64 = 0xD6E8_FEB8_6659_FD93;

/// The content of one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pattern {
    seed: u64,
}

/// The first wrong byte of a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub offset: u64,
    pub expected: u8,
    pub got: u8,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "byte {} is {:#04x}, expected {:#04x}",
            self.offset, self.got, self.expected
        )
    }
}

impl Pattern {
    pub fn new(key: &str, size: u64, run_seed: u64) -> Pattern {
        Pattern {
            seed: xxh64(key.as_bytes(), run_seed ^ size.wrapping_mul(GOLDEN)),
        }
    }

    #[inline(always)]
    fn word(&self, w: u64) -> u64 {
        let x = (self.seed ^ w.wrapping_mul(GOLDEN)).wrapping_mul(MIX);
        x ^ (x >> 31)
    }

    /// The byte at `offset`.
    pub fn byte(&self, offset: u64) -> u8 {
        self.word(offset / 8).to_le_bytes()[(offset % 8) as usize]
    }

    /// Fills `buf` with the bytes at `offset..offset + buf.len()`.
    pub fn fill(&self, offset: u64, buf: &mut [u8]) {
        let head = ((8 - offset % 8) % 8) as usize;
        let head = head.min(buf.len());
        for (i, b) in buf[..head].iter_mut().enumerate() {
            *b = self.byte(offset + i as u64);
        }
        let start = offset + head as u64;
        let mut w = start / 8;
        let body = &mut buf[head..];
        let mut chunks = body.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.word(w).to_le_bytes());
            w += 1;
        }
        let tail = chunks.into_remainder();
        let word = self.word(w).to_le_bytes();
        let n = tail.len();
        tail.copy_from_slice(&word[..n]);
    }

    /// Checks `data` against the bytes at `offset..offset + data.len()`.
    pub fn verify(&self, offset: u64, data: &[u8]) -> Result<(), Mismatch> {
        let head = (((8 - offset % 8) % 8) as usize).min(data.len());
        for (i, &b) in data[..head].iter().enumerate() {
            self.check_byte(offset + i as u64, b)?;
        }
        let start = offset + head as u64;
        let mut w = start / 8;
        let body = &data[head..];
        let chunks = body.chunks_exact(8);
        let tail = chunks.remainder();
        for c in chunks {
            let got = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            if got != self.word(w) {
                for (i, &b) in c.iter().enumerate() {
                    self.check_byte(w * 8 + i as u64, b)?;
                }
            }
            w += 1;
        }
        for (i, &b) in tail.iter().enumerate() {
            self.check_byte(w * 8 + i as u64, b)?;
        }
        Ok(())
    }

    fn check_byte(&self, offset: u64, got: u8) -> Result<(), Mismatch> {
        let expected = self.byte(offset);
        if got == expected {
            Ok(())
        } else {
            Err(Mismatch {
                offset,
                expected,
                got,
            })
        }
    }
}

/// SplitMix64: a small, fast, seedable generator (workload choices, sizes).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

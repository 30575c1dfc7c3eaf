//! Object contents: a deterministic pattern derived from (key, size, run
//! seed), addressable by offset, so a body can be generated in pieces while
//! it is sent and every byte of a GET checked as it arrives, without keeping
//! the object in memory.
//!
//! The object's 64-bit seed is `xxh64(key, run_seed ^ size * K)`. Its bytes
//! are 8-byte words (little endian) laid out in tiles of 512 words: word `w`
//! is `tile[w % 512] ^ key(w / 512)`, where the 512 tile words and each
//! tile's key are bijective mixes of the seed with the index. Two words at
//! the same place of different tiles always differ (the key is injective in
//! the tile number), any two others differ unless two 64-bit mixes collide,
//! so a shifted, repeated or reordered range does not match; objects with
//! different keys, sizes or run seeds have unrelated contents.
//!
//! The tile is what makes checking cheap: a run of words is compared with a
//! table and one key by XOR and OR, which the compiler turns into vector
//! code: 57 GB/s of checking on a 512 KiB buffer, against 15 GB/s when
//! every word is mixed afresh (two 64-bit multiplies per 8 bytes;
//! `docs/bench-notes/get.md`, "The load generator's share"). The load
//! generator shares the machine with the server it measures, so every
//! cycle it spends here is one the server does not get.

use std::fmt;
use std::sync::Arc;

use xxhash_rust::xxh64::xxh64;

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
const MIX: u64 = 0xD6E8_FEB8_6659_FD93;
/// Salt separating the tile keys' mixes from the tile words'.
const KEY_SALT: u64 = 0x6A09_E667_F3BC_C909;
/// Words per tile (4 KiB): small enough to stay in L1 next to the data.
const TILE_WORDS: usize = 512;

/// The content of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    seed: u64,
    tile: Arc<[u64; TILE_WORDS]>,
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

/// A bijective mix of `seed ^ i * K`: injective in `i` for a fixed seed.
#[inline(always)]
fn mix(seed: u64, i: u64) -> u64 {
    let x = (seed ^ i.wrapping_mul(GOLDEN)).wrapping_mul(MIX);
    x ^ (x >> 31)
}

#[inline(always)]
fn le_word(c: &[u8]) -> u64 {
    u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
}

impl Pattern {
    pub fn new(key: &str, size: u64, run_seed: u64) -> Pattern {
        let seed = xxh64(key.as_bytes(), run_seed ^ size.wrapping_mul(GOLDEN));
        let mut tile = [0u64; TILE_WORDS];
        for (j, t) in tile.iter_mut().enumerate() {
            *t = mix(seed, j as u64);
        }
        Pattern {
            seed,
            tile: Arc::new(tile),
        }
    }

    /// The key XORed into every word of tile `t`.
    #[inline(always)]
    fn tile_key(&self, t: u64) -> u64 {
        mix(self.seed ^ KEY_SALT, t)
    }

    #[inline(always)]
    fn word(&self, w: u64) -> u64 {
        self.tile[(w % TILE_WORDS as u64) as usize] ^ self.tile_key(w / TILE_WORDS as u64)
    }

    /// The byte at `offset`.
    pub fn byte(&self, offset: u64) -> u8 {
        self.word(offset / 8).to_le_bytes()[(offset % 8) as usize]
    }

    /// Walks `len` bytes from `offset`: past the unaligned head (the bytes
    /// before the first whole word), it calls `run(tile words, tile key,
    /// byte range)` for each stretch of whole words within one tile, and
    /// stops early when `run` returns false. Returns the head's length and
    /// where the tail (less than a word) starts, or None if stopped.
    fn runs(
        &self,
        offset: u64,
        len: usize,
        mut run: impl FnMut(&[u64], u64, std::ops::Range<usize>) -> bool,
    ) -> Option<(usize, usize)> {
        let head = (((8 - offset % 8) % 8) as usize).min(len);
        let mut pos = head;
        let mut w = (offset + head as u64) / 8;
        while len - pos >= 8 {
            let j = (w % TILE_WORDS as u64) as usize;
            let n = (TILE_WORDS - j).min((len - pos) / 8);
            if !run(
                &self.tile[j..j + n],
                self.tile_key(w / TILE_WORDS as u64),
                pos..pos + n * 8,
            ) {
                return None;
            }
            pos += n * 8;
            w += n as u64;
        }
        Some((head, pos))
    }

    /// Fills `buf` with the bytes at `offset..offset + buf.len()`.
    pub fn fill(&self, offset: u64, buf: &mut [u8]) {
        let len = buf.len();
        let Some((head, tail)) = self.runs(offset, len, |tile, key, range| {
            for (c, t) in buf[range].chunks_exact_mut(8).zip(tile) {
                c.copy_from_slice(&(t ^ key).to_le_bytes());
            }
            true
        }) else {
            return;
        };
        for i in (0..head).chain(tail..len) {
            buf[i] = self.byte(offset + i as u64);
        }
    }

    /// Whether `data` equals the bytes at `offset..offset + data.len()`.
    fn matches(&self, offset: u64, data: &[u8]) -> bool {
        let Some((head, tail)) = self.runs(offset, data.len(), |tile, key, range| {
            data[range]
                .chunks_exact(8)
                .zip(tile)
                .fold(0u64, |acc, (c, t)| acc | (le_word(c) ^ t ^ key))
                == 0
        }) else {
            return false;
        };
        (0..head)
            .chain(tail..data.len())
            .all(|i| data[i] == self.byte(offset + i as u64))
    }

    /// Checks `data` against the bytes at `offset..offset + data.len()`.
    pub fn verify(&self, offset: u64, data: &[u8]) -> Result<(), Mismatch> {
        if self.matches(offset, data) {
            return Ok(());
        }
        // Only on a mismatch: find the first wrong byte.
        for (i, &got) in data.iter().enumerate() {
            let offset = offset + i as u64;
            let expected = self.byte(offset);
            if got != expected {
                return Err(Mismatch {
                    offset,
                    expected,
                    got,
                });
            }
        }
        Ok(())
    }
}

/// The seeded generator of a run's choices: object sizes, which object a
/// worker reads next, the mixed workload's operations, the SSE-C key.
/// `fastrand`'s generator behind the draws the crate makes. Object
/// contents do not come from it: a body's words must be addressable by
/// offset, which a sequential generator cannot give, so [`Pattern`] keeps
/// its own bijective mix.
#[derive(Debug, Clone)]
pub struct Rng(fastrand::Rng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(fastrand::Rng::with_seed(seed))
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        self.0.f64()
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.u64(..n)
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        self.0.fill(buf);
    }
}

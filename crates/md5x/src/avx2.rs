//! The AVX2 kernel: eight independent MD5 streams, one per 32-bit lane of a
//! ymm register.
//!
//! Every step of MD5 is lane-local 32-bit arithmetic (add, and, or, xor,
//! not, rotate), so one ymm instruction advances eight messages by the same
//! step. AVX2 has no rotate: `rotl(x, s)` is `(x << s) | (x >> (32 - s))`.
//! Each lane reads its own message, so the sixteen message words of a block
//! are brought into lanes by an 8x8 transpose of 32-bit words (two per
//! block: words 0..8 and 8..16), not by gathers, which are slow on many
//! cores and on CPUs with the gather-data-sampling microcode fix.

use core::arch::x86_64::*;

use crate::portable::BLOCK;
use crate::rounds::md5_rounds;

/// Lanes of this kernel.
pub(crate) const LANES: usize = 8;

/// Transposes eight rows of eight 32-bit words: `out[j]` lane `i` is word
/// `j` of `rows[i]`.
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn transpose8(r: [__m256i; 8]) -> [__m256i; 8] {
    let t0 = _mm256_unpacklo_epi32(r[0], r[1]);
    let t1 = _mm256_unpackhi_epi32(r[0], r[1]);
    let t2 = _mm256_unpacklo_epi32(r[2], r[3]);
    let t3 = _mm256_unpackhi_epi32(r[2], r[3]);
    let t4 = _mm256_unpacklo_epi32(r[4], r[5]);
    let t5 = _mm256_unpackhi_epi32(r[4], r[5]);
    let t6 = _mm256_unpacklo_epi32(r[6], r[7]);
    let t7 = _mm256_unpackhi_epi32(r[6], r[7]);
    // u0: words 0 and 4 of rows 0..4; u1: words 1 and 5; and so on.
    let u0 = _mm256_unpacklo_epi64(t0, t2);
    let u1 = _mm256_unpackhi_epi64(t0, t2);
    let u2 = _mm256_unpacklo_epi64(t1, t3);
    let u3 = _mm256_unpackhi_epi64(t1, t3);
    let u4 = _mm256_unpacklo_epi64(t4, t6);
    let u5 = _mm256_unpackhi_epi64(t4, t6);
    let u6 = _mm256_unpacklo_epi64(t5, t7);
    let u7 = _mm256_unpackhi_epi64(t5, t7);
    [
        _mm256_permute2x128_si256::<0x20>(u0, u4),
        _mm256_permute2x128_si256::<0x20>(u1, u5),
        _mm256_permute2x128_si256::<0x20>(u2, u6),
        _mm256_permute2x128_si256::<0x20>(u3, u7),
        _mm256_permute2x128_si256::<0x31>(u0, u4),
        _mm256_permute2x128_si256::<0x31>(u1, u5),
        _mm256_permute2x128_si256::<0x31>(u2, u6),
        _mm256_permute2x128_si256::<0x31>(u3, u7),
    ]
}

/// Loads lane `i` of word `w` of every state into one vector.
#[target_feature(enable = "avx2")]
#[inline]
fn load_word(states: &[[u32; 4]; LANES], w: usize) -> __m256i {
    let v: [u32; LANES] = core::array::from_fn(|i| states[i][w]);
    // SAFETY: `v` is 32 readable bytes; unaligned load.
    unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
}

#[target_feature(enable = "avx2")]
#[inline]
fn store_word(states: &mut [[u32; 4]; LANES], w: usize, x: __m256i) {
    let mut v = [0u32; LANES];
    // SAFETY: `v` is 32 writable bytes; unaligned store.
    unsafe { _mm256_storeu_si256(v.as_mut_ptr().cast(), x) };
    for (s, x) in states.iter_mut().zip(v) {
        s[w] = x;
    }
}

/// Advances eight independent MD5 states by `blocks` 64-byte blocks each:
/// state `i` consumes `data[i][..blocks * 64]`. Lanes may alias (the caller
/// fills unused lanes with a copy of a used one and ignores the result).
///
/// # Panics
/// If some `data[i]` is shorter than `blocks * 64` bytes.
#[target_feature(enable = "avx2")]
pub(crate) fn compress8(states: &mut [[u32; 4]; LANES], data: &[&[u8]; LANES], blocks: usize) {
    let bytes = blocks * BLOCK;
    for d in data {
        assert!(d.len() >= bytes, "lane input shorter than its blocks");
    }
    let ptrs: [*const u8; LANES] = core::array::from_fn(|i| data[i].as_ptr());
    let mut a = load_word(states, 0);
    let mut b = load_word(states, 1);
    let mut c = load_word(states, 2);
    let mut d = load_word(states, 3);
    let ones = _mm256_set1_epi32(-1);

    macro_rules! rotl {
        ($x:expr, $s:expr) => {
            _mm256_or_si256(
                _mm256_slli_epi32::<$s>($x),
                _mm256_srli_epi32::<{ 32 - $s }>($x),
            )
        };
    }
    macro_rules! step {
        ($a:ident, $b:ident, $m:ident, $i:expr, $k:expr, $s:expr, $f:expr) => {
            let k: u32 = $k;
            let t = _mm256_add_epi32($m[$i], _mm256_set1_epi32(k as i32));
            let t = _mm256_add_epi32(_mm256_add_epi32($a, t), $f);
            $a = _mm256_add_epi32($b, rotl!(t, $s));
        };
    }
    // F = d ^ (b & (c ^ d))
    macro_rules! ff {
        ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $i:expr, $k:expr, $s:expr) => {
            step!(
                $a,
                $b,
                $m,
                $i,
                $k,
                $s,
                _mm256_xor_si256($d, _mm256_and_si256($b, _mm256_xor_si256($c, $d)))
            );
        };
    }
    // G = c ^ (d & (b ^ c))
    macro_rules! gg {
        ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $i:expr, $k:expr, $s:expr) => {
            step!(
                $a,
                $b,
                $m,
                $i,
                $k,
                $s,
                _mm256_xor_si256($c, _mm256_and_si256($d, _mm256_xor_si256($b, $c)))
            );
        };
    }
    macro_rules! hh {
        ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $i:expr, $k:expr, $s:expr) => {
            step!(
                $a,
                $b,
                $m,
                $i,
                $k,
                $s,
                _mm256_xor_si256(_mm256_xor_si256($b, $c), $d)
            );
        };
    }
    // I = c ^ (b | !d)
    macro_rules! ii {
        ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $i:expr, $k:expr, $s:expr) => {
            step!(
                $a,
                $b,
                $m,
                $i,
                $k,
                $s,
                _mm256_xor_si256($c, _mm256_or_si256($b, _mm256_xor_si256($d, ones)))
            );
        };
    }

    let mut off = 0;
    while off < bytes {
        // SAFETY: `off + 64 <= bytes <= data[i].len()` for every lane
        // (asserted above), so both 32-byte loads of each lane are in
        // bounds; unaligned loads.
        let (lo, hi) = unsafe {
            (
                core::array::from_fn(|i| _mm256_loadu_si256(ptrs[i].add(off).cast())),
                core::array::from_fn(|i| _mm256_loadu_si256(ptrs[i].add(off + 32).cast())),
            )
        };
        let lo = transpose8(lo);
        let hi = transpose8(hi);
        let m: [__m256i; 16] = core::array::from_fn(|j| if j < 8 { lo[j] } else { hi[j - 8] });
        let (a0, b0, c0, d0) = (a, b, c, d);
        md5_rounds!(ff, gg, hh, ii, a, b, c, d, m);
        a = _mm256_add_epi32(a, a0);
        b = _mm256_add_epi32(b, b0);
        c = _mm256_add_epi32(c, c0);
        d = _mm256_add_epi32(d, d0);
        off += BLOCK;
    }
    store_word(states, 0, a);
    store_word(states, 1, b);
    store_word(states, 2, c);
    store_word(states, 3, d);
}

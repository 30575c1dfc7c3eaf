//! The AVX2 kernel: eight independent MD5 streams, one per 32-bit lane of a
//! ymm register (and four in an xmm register, for when at most four streams
//! are ready: the same instruction count for half the lanes).
//!
//! Every step of MD5 is lane-local 32-bit arithmetic (add, and, or, xor,
//! not, rotate), so one vector instruction advances every lane's message by
//! the same step. AVX2 has no rotate: `rotl(x, s)` is
//! `(x << s) | (x >> (32 - s))`. Each lane reads its own message, so the
//! sixteen message words of a block are brought into lanes by transposes of
//! 32-bit words (8x8 on ymm, 4x4 on xmm), not by gathers, which are slow on
//! many cores and on CPUs with the gather-data-sampling microcode fix.

use core::arch::x86_64::*;

use crate::portable::BLOCK;
use crate::rounds::md5_rounds;

/// Lanes of the ymm kernel.
pub(crate) const LANES: usize = 8;

/// Lanes of the xmm kernel.
pub(crate) const LANES_XMM: usize = 4;

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

/// Transposes four rows of four 32-bit words.
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn transpose4(r: [__m128i; 4]) -> [__m128i; 4] {
    let t0 = _mm_unpacklo_epi32(r[0], r[1]);
    let t1 = _mm_unpackhi_epi32(r[0], r[1]);
    let t2 = _mm_unpacklo_epi32(r[2], r[3]);
    let t3 = _mm_unpackhi_epi32(r[2], r[3]);
    [
        _mm_unpacklo_epi64(t0, t2),
        _mm_unpackhi_epi64(t0, t2),
        _mm_unpacklo_epi64(t1, t3),
        _mm_unpackhi_epi64(t1, t3),
    ]
}

/// The 64 steps with rotates by shift, shift and or; the `$...` are the
/// vector width's intrinsics.
macro_rules! shift_steps {
    ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $add:ident, $set1:ident, $slli:ident, $srli:ident, $or:ident, $and:ident, $xor:ident) => {
        let ones = $set1(-1);
        macro_rules! step {
            ($a_:ident, $b_:ident, $m_:ident, $i:expr, $k:expr, $s:expr, $f:expr) => {
                let k: u32 = $k;
                let t = $add($m_[$i], $set1(k as i32));
                let t = $add($add($a_, t), $f);
                $a_ = $add($b_, $or($slli::<$s>(t), $srli::<{ 32 - $s }>(t)));
            };
        }
        // F = d ^ (b & (c ^ d))
        macro_rules! ff {
            ($a_:ident, $b_:ident, $c_:ident, $d_:ident, $m_:ident, $i:expr, $k:expr, $s:expr) => {
                step!(
                    $a_,
                    $b_,
                    $m_,
                    $i,
                    $k,
                    $s,
                    $xor($d_, $and($b_, $xor($c_, $d_)))
                );
            };
        }
        // G = c ^ (d & (b ^ c))
        macro_rules! gg {
            ($a_:ident, $b_:ident, $c_:ident, $d_:ident, $m_:ident, $i:expr, $k:expr, $s:expr) => {
                step!(
                    $a_,
                    $b_,
                    $m_,
                    $i,
                    $k,
                    $s,
                    $xor($c_, $and($d_, $xor($b_, $c_)))
                );
            };
        }
        macro_rules! hh {
            ($a_:ident, $b_:ident, $c_:ident, $d_:ident, $m_:ident, $i:expr, $k:expr, $s:expr) => {
                step!($a_, $b_, $m_, $i, $k, $s, $xor($xor($b_, $c_), $d_));
            };
        }
        // I = c ^ (b | !d)
        macro_rules! ii {
            ($a_:ident, $b_:ident, $c_:ident, $d_:ident, $m_:ident, $i:expr, $k:expr, $s:expr) => {
                step!(
                    $a_,
                    $b_,
                    $m_,
                    $i,
                    $k,
                    $s,
                    $xor($c_, $or($b_, $xor($d_, ones)))
                );
            };
        }
        md5_rounds!(ff, gg, hh, ii, $a, $b, $c, $d, $m);
    };
}

/// States as four rows of lanes (row `w` lane `i` is word `w` of state
/// `i`), and back.
pub(crate) fn rows_of<const N: usize>(states: &[[u32; 4]; N]) -> [[u32; N]; 4] {
    core::array::from_fn(|w| core::array::from_fn(|i| states[i][w]))
}

pub(crate) fn unrows<const N: usize>(states: &mut [[u32; 4]; N], rows: &[[u32; N]; 4]) {
    for (i, s) in states.iter_mut().enumerate() {
        for (w, row) in rows.iter().enumerate() {
            s[w] = row[i];
        }
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
    let mut rows = rows_of(states);
    // SAFETY: each row is 32 readable bytes; unaligned loads.
    let [mut a, mut b, mut c, mut d] =
        unsafe { core::array::from_fn(|w| _mm256_loadu_si256(rows[w].as_ptr().cast())) };
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
        shift_steps!(
            a,
            b,
            c,
            d,
            m,
            _mm256_add_epi32,
            _mm256_set1_epi32,
            _mm256_slli_epi32,
            _mm256_srli_epi32,
            _mm256_or_si256,
            _mm256_and_si256,
            _mm256_xor_si256
        );
        a = _mm256_add_epi32(a, a0);
        b = _mm256_add_epi32(b, b0);
        c = _mm256_add_epi32(c, c0);
        d = _mm256_add_epi32(d, d0);
        off += BLOCK;
    }
    for (w, v) in [a, b, c, d].into_iter().enumerate() {
        // SAFETY: each row is 32 writable bytes; unaligned store.
        unsafe { _mm256_storeu_si256(rows[w].as_mut_ptr().cast(), v) };
    }
    unrows(states, &rows);
}

/// [`compress8`] for four lanes in xmm registers.
///
/// # Panics
/// If some `data[i]` is shorter than `blocks * 64` bytes.
#[target_feature(enable = "avx2")]
pub(crate) fn compress4(
    states: &mut [[u32; 4]; LANES_XMM],
    data: &[&[u8]; LANES_XMM],
    blocks: usize,
) {
    let bytes = blocks * BLOCK;
    for d in data {
        assert!(d.len() >= bytes, "lane input shorter than its blocks");
    }
    let ptrs: [*const u8; LANES_XMM] = core::array::from_fn(|i| data[i].as_ptr());
    let mut rows = rows_of(states);
    // SAFETY: each row is 16 readable bytes; unaligned loads.
    let [mut a, mut b, mut c, mut d] =
        unsafe { core::array::from_fn(|w| _mm_loadu_si128(rows[w].as_ptr().cast())) };
    let mut off = 0;
    while off < bytes {
        // SAFETY: `off + 64 <= bytes <= data[i].len()` for every lane
        // (asserted above), so the four 16-byte loads of each lane are in
        // bounds; unaligned loads.
        let q: [[__m128i; 4]; 4] = unsafe {
            core::array::from_fn(|part| {
                core::array::from_fn(|i| _mm_loadu_si128(ptrs[i].add(off + 16 * part).cast()))
            })
        };
        let q = q.map(|x| transpose4(x));
        let m: [__m128i; 16] = core::array::from_fn(|j| q[j / 4][j % 4]);
        let (a0, b0, c0, d0) = (a, b, c, d);
        shift_steps!(
            a,
            b,
            c,
            d,
            m,
            _mm_add_epi32,
            _mm_set1_epi32,
            _mm_slli_epi32,
            _mm_srli_epi32,
            _mm_or_si128,
            _mm_and_si128,
            _mm_xor_si128
        );
        a = _mm_add_epi32(a, a0);
        b = _mm_add_epi32(b, b0);
        c = _mm_add_epi32(c, c0);
        d = _mm_add_epi32(d, d0);
        off += BLOCK;
    }
    for (w, v) in [a, b, c, d].into_iter().enumerate() {
        // SAFETY: each row is 16 writable bytes; unaligned store.
        unsafe { _mm_storeu_si128(rows[w].as_mut_ptr().cast(), v) };
    }
    unrows(states, &rows);
}

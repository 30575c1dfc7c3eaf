//! The AVX-512 kernels: sixteen independent MD5 streams in the 32-bit lanes
//! of a zmm register, and eight in a ymm register (AVX-512VL) for when fewer
//! than nine streams are ready.
//!
//! Compared with AVX2, two instructions shorten every step: `vprold` rotates
//! in one instruction instead of shift, shift, or; and `vpternlogd` computes
//! any of the round functions F, G, H and I of three inputs in one
//! instruction (its immediate is the function's truth table). A step is then
//! five instructions: two adds of message word and constant into `a`, the
//! round function, the rotate and the final add of `b`.
//!
//! A zmm register holds a whole 64-byte block, so the message words of
//! sixteen lanes come from one 16x16 transpose of 32-bit words (four
//! shuffle stages) per block.

use core::arch::x86_64::*;

use crate::portable::BLOCK;
use crate::rounds::md5_rounds;

/// Lanes of the zmm kernel.
pub(crate) const LANES: usize = 16;

/// Lanes of the ymm (AVX-512VL) kernel.
pub(crate) const LANES_VL: usize = 8;

/// `vpternlogd` immediates: bit `(x << 2) | (y << 1) | z` of the immediate
/// is the function's value at `(x, y, z)` = `(b, c, d)`.
mod truth {
    /// F(x, y, z) = (x & y) | (!x & z)
    pub(super) const F: i32 = 0xca;
    /// G(x, y, z) = (x & z) | (y & !z)
    pub(super) const G: i32 = 0xe4;
    /// H(x, y, z) = x ^ y ^ z
    pub(super) const H: i32 = 0x96;
    /// I(x, y, z) = y ^ (x | !z)
    pub(super) const I: i32 = 0x39;
}

/// Transposes sixteen rows of sixteen 32-bit words: `out[j]` lane `i` is
/// word `j` of `rows[i]`.
#[target_feature(enable = "avx512f")]
#[inline]
fn transpose16(r: [__m512i; 16]) -> [__m512i; 16] {
    // Stage 1: pairs of rows, 32-bit interleave within each 128-bit block.
    let t: [__m512i; 16] = core::array::from_fn(|i| {
        let (x, y) = (r[i & !1], r[i | 1]);
        if i & 1 == 0 {
            _mm512_unpacklo_epi32(x, y)
        } else {
            _mm512_unpackhi_epi32(x, y)
        }
    });
    // Stage 2: u[4g + j], 128-bit block q, holds word 4q + j of rows
    // 4g..4g + 4.
    let u: [__m512i; 16] = core::array::from_fn(|i| {
        let (g, j) = (i / 4, i % 4);
        let (x, y) = (t[4 * g + (j >> 1)], t[4 * g + 2 + (j >> 1)]);
        if j & 1 == 0 {
            _mm512_unpacklo_epi64(x, y)
        } else {
            _mm512_unpackhi_epi64(x, y)
        }
    });
    // Stages 3 and 4: a 4x4 transpose of 128-bit blocks for each j.
    let mut out = [_mm512_setzero_si512(); 16];
    for j in 0..4 {
        let v0 = _mm512_shuffle_i32x4::<0x44>(u[j], u[4 + j]);
        let v1 = _mm512_shuffle_i32x4::<0xee>(u[j], u[4 + j]);
        let v2 = _mm512_shuffle_i32x4::<0x44>(u[8 + j], u[12 + j]);
        let v3 = _mm512_shuffle_i32x4::<0xee>(u[8 + j], u[12 + j]);
        out[j] = _mm512_shuffle_i32x4::<0x88>(v0, v2);
        out[4 + j] = _mm512_shuffle_i32x4::<0xdd>(v0, v2);
        out[8 + j] = _mm512_shuffle_i32x4::<0x88>(v1, v3);
        out[12 + j] = _mm512_shuffle_i32x4::<0xdd>(v1, v3);
    }
    out
}

/// The 64 steps on zmm registers; `$m` holds the sixteen message vectors.
macro_rules! zmm_steps {
    ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $vadd:ident, $vset1:ident, $vrol:ident, $vtern:ident) => {
        macro_rules! step {
            ($a_:ident, $b_:ident, $c_:ident, $d_:ident, $m_:ident, $i:expr, $k:expr, $s:expr, $f:expr) => {
                let k: u32 = $k;
                let t = $vadd($a_, $vadd($m_[$i], $vset1(k as i32)));
                let t = $vadd(t, $vtern::<$f>($b_, $c_, $d_));
                $a_ = $vadd($b_, $vrol::<$s>(t));
            };
        }
        macro_rules! ff {
            ($a_:ident, $b_:ident, $c_:ident, $d_:ident, $m_:ident, $i:expr, $k:expr, $s:expr) => {
                step!($a_, $b_, $c_, $d_, $m_, $i, $k, $s, { truth::F });
            };
        }
        macro_rules! gg {
            ($a_:ident, $b_:ident, $c_:ident, $d_:ident, $m_:ident, $i:expr, $k:expr, $s:expr) => {
                step!($a_, $b_, $c_, $d_, $m_, $i, $k, $s, { truth::G });
            };
        }
        macro_rules! hh {
            ($a_:ident, $b_:ident, $c_:ident, $d_:ident, $m_:ident, $i:expr, $k:expr, $s:expr) => {
                step!($a_, $b_, $c_, $d_, $m_, $i, $k, $s, { truth::H });
            };
        }
        macro_rules! ii {
            ($a_:ident, $b_:ident, $c_:ident, $d_:ident, $m_:ident, $i:expr, $k:expr, $s:expr) => {
                step!($a_, $b_, $c_, $d_, $m_, $i, $k, $s, { truth::I });
            };
        }
        md5_rounds!(ff, gg, hh, ii, $a, $b, $c, $d, $m);
    };
}

/// Advances sixteen independent MD5 states by `blocks` 64-byte blocks each:
/// state `i` consumes `data[i][..blocks * 64]`. Lanes may alias (the caller
/// fills unused lanes with a copy of a used one and ignores the result).
///
/// # Panics
/// If some `data[i]` is shorter than `blocks * 64` bytes.
#[target_feature(enable = "avx512f")]
pub(crate) fn compress16(states: &mut [[u32; 4]; LANES], data: &[&[u8]; LANES], blocks: usize) {
    let bytes = blocks * BLOCK;
    for d in data {
        assert!(d.len() >= bytes, "lane input shorter than its blocks");
    }
    let ptrs: [*const u8; LANES] = core::array::from_fn(|i| data[i].as_ptr());
    // The states as four rows of sixteen lanes: a transpose of 16 x 4.
    let mut rows = [[0u32; LANES]; 4];
    for (i, s) in states.iter().enumerate() {
        for w in 0..4 {
            rows[w][i] = s[w];
        }
    }
    // SAFETY: each row is 64 readable bytes; unaligned loads.
    let [mut a, mut b, mut c, mut d] =
        unsafe { core::array::from_fn(|w| _mm512_loadu_si512(rows[w].as_ptr().cast())) };

    let mut off = 0;
    while off < bytes {
        // SAFETY: `off + 64 <= bytes <= data[i].len()` for every lane
        // (asserted above); unaligned 64-byte loads.
        let r = unsafe { core::array::from_fn(|i| _mm512_loadu_si512(ptrs[i].add(off).cast())) };
        let m = transpose16(r);
        let (a0, b0, c0, d0) = (a, b, c, d);
        zmm_steps!(
            a,
            b,
            c,
            d,
            m,
            _mm512_add_epi32,
            _mm512_set1_epi32,
            _mm512_rol_epi32,
            _mm512_ternarylogic_epi32
        );
        a = _mm512_add_epi32(a, a0);
        b = _mm512_add_epi32(b, b0);
        c = _mm512_add_epi32(c, c0);
        d = _mm512_add_epi32(d, d0);
        off += BLOCK;
    }
    for (w, v) in [a, b, c, d].into_iter().enumerate() {
        // SAFETY: each row is 64 writable bytes; unaligned store.
        unsafe { _mm512_storeu_si512(rows[w].as_mut_ptr().cast(), v) };
    }
    for (i, s) in states.iter_mut().enumerate() {
        for w in 0..4 {
            s[w] = rows[w][i];
        }
    }
}

/// The ymm form of [`compress16`] for eight lanes (AVX-512VL rotates and
/// ternary logic on 256-bit registers, the AVX2 transpose).
///
/// # Panics
/// If some `data[i]` is shorter than `blocks * 64` bytes.
#[target_feature(enable = "avx512f,avx512vl,avx2")]
pub(crate) fn compress8(
    states: &mut [[u32; 4]; LANES_VL],
    data: &[&[u8]; LANES_VL],
    blocks: usize,
) {
    let bytes = blocks * BLOCK;
    for d in data {
        assert!(d.len() >= bytes, "lane input shorter than its blocks");
    }
    let ptrs: [*const u8; LANES_VL] = core::array::from_fn(|i| data[i].as_ptr());
    let mut rows = [[0u32; LANES_VL]; 4];
    for (i, s) in states.iter().enumerate() {
        for w in 0..4 {
            rows[w][i] = s[w];
        }
    }
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
        let lo = crate::avx2::transpose8(lo);
        let hi = crate::avx2::transpose8(hi);
        let m: [__m256i; 16] = core::array::from_fn(|j| if j < 8 { lo[j] } else { hi[j - 8] });
        let (a0, b0, c0, d0) = (a, b, c, d);
        zmm_steps!(
            a,
            b,
            c,
            d,
            m,
            _mm256_add_epi32,
            _mm256_set1_epi32,
            _mm256_rol_epi32,
            _mm256_ternarylogic_epi32
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
    for (i, s) in states.iter_mut().enumerate() {
        for w in 0..4 {
            s[w] = rows[w][i];
        }
    }
}

/// Lanes of the xmm (AVX-512VL) kernel.
pub(crate) const LANES_XMM: usize = 4;

/// The xmm form of [`compress16`] for four lanes.
///
/// # Panics
/// If some `data[i]` is shorter than `blocks * 64` bytes.
#[target_feature(enable = "avx512f,avx512vl,avx2")]
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
    let mut rows = crate::avx2::rows_of(states);
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
        let q = q.map(|x| crate::avx2::transpose4(x));
        let m: [__m128i; 16] = core::array::from_fn(|j| q[j / 4][j % 4]);
        let (a0, b0, c0, d0) = (a, b, c, d);
        zmm_steps!(
            a,
            b,
            c,
            d,
            m,
            _mm_add_epi32,
            _mm_set1_epi32,
            _mm_rol_epi32,
            _mm_ternarylogic_epi32
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
    crate::avx2::unrows(states, &rows);
}

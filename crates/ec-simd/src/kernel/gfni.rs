//! GFNI kernels: multiplication by a constant as one `vgf2p8affineqb`.
//!
//! In GF(2^8), `x -> c * x` is linear over GF(2), so it is an 8 x 8 bit
//! matrix (see `gf::affine_matrix`), and `vgf2p8affineqb` applies such a
//! matrix to every byte of a vector in one instruction, where the split-nibble
//! kernels need two shuffles, a shift and two masks. Each coefficient's matrix
//! is 8 bytes; it is broadcast to the vector with `vpbroadcastq` from memory
//! (a pure load on Zen 5, unlike `vbroadcasti32x4`) and reused for the `U`
//! vectors of a step.
//!
//! Two forms:
//! - zmm (GFNI + AVX-512F/BW): groups of up to [`GMAX_ZMM`] outputs with
//!   `U` accumulators each (4 for groups of 3-4 outputs, else 2: measured
//!   best on Zen 5); inputs are taken in pairs so one `vpternlogq` adds two
//!   products to an accumulator; the last partial vector is byte-masked.
//! - ymm (GFNI + AVX2, VEX encoded, for CPUs with GFNI but no AVX-512):
//!   groups of up to [`GMAX_YMM`] outputs with two accumulators each; bytes
//!   past the last 32-byte vector go through the portable kernel.
//!
//! Both are usually limited by cache bandwidth rather than by the two
//! GF2P8AFFINEQB pipes once shards exceed the L1 cache. Both walk the columns
//! in the direction [`super::walk::descending`] picks.

use core::arch::x86_64::*;

use super::walk::{down_groups, groups, window};
use super::{Coeffs, checked_len, scalar};

/// Largest output group of the zmm form.
const GMAX_ZMM: usize = 8;
/// Largest output group of the ymm form (16 registers).
const GMAX_YMM: usize = 4;
/// The zmm form walks down (see `super::walk::descending`) only with at most this
/// many inputs: with more, walking down cost it time on Zen 5 even with no
/// aliasing to avoid (19% at 12+4 and 40-65% at 16+4 at MinIO's shape,
/// 1.5-5x at 12+4 with 1 MiB shards), where the ymm form lost nothing.
const ZMM_DOWN_MAX_INPUTS: usize = 8;

/// Reads the 8-byte affine matrix at `p`.
///
/// # Safety
/// `p` must be valid for reading 8 bytes.
#[inline(always)]
unsafe fn matrix(p: *const u8) -> i64 {
    // SAFETY: the caller guarantees 8 readable bytes; no alignment needed.
    unsafe { p.cast::<i64>().read_unaligned() }
}

/// `outputs = M x inputs` with zmm registers, see [`super::Kernel::apply`].
#[target_feature(enable = "gfni,avx512f,avx512bw")]
pub(super) fn apply_zmm(c: &Coeffs, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) {
    let Some(len) = checked_len(c, inputs, outputs) else {
        return;
    };
    if len == 0 {
        return;
    }
    let win = window(c.cols(), c.rows(), GMAX_ZMM, len, 128);
    // Bit n: group n walks down (see `super::walk::descending`). Groups of 3-4
    // outputs take 4 vectors per step, the others 2 (see the match below).
    let downs = down_groups(inputs, outputs, GMAX_ZMM, ZMM_DOWN_MAX_INPUTS, |g| {
        if (3..=4).contains(&g) { 256 } else { 128 }
    });
    let mut start = 0;
    while start < len {
        let end = (start + win).min(len);
        for (n, (o0, g)) in groups(c.rows(), GMAX_ZMM).enumerate() {
            let down = n < 64 && downs >> n & 1 == 1;
            let outs = &mut outputs[o0..o0 + g];
            // SAFETY: `checked_len` proved every input and output holds
            // `len >= end` bytes; `outs` has `g` entries and
            // `o0 + g <= rows`; the table was expanded in affine format for
            // this matrix (`Kernel::apply` checked `c.kernel`).
            unsafe {
                match g {
                    1 => group_zmm::<1, 2>(c, o0, inputs, outs, start, end, down),
                    2 => group_zmm::<2, 2>(c, o0, inputs, outs, start, end, down),
                    3 => group_zmm::<3, 4>(c, o0, inputs, outs, start, end, down),
                    4 => group_zmm::<4, 4>(c, o0, inputs, outs, start, end, down),
                    5 => group_zmm::<5, 2>(c, o0, inputs, outs, start, end, down),
                    6 => group_zmm::<6, 2>(c, o0, inputs, outs, start, end, down),
                    7 => group_zmm::<7, 2>(c, o0, inputs, outs, start, end, down),
                    _ => group_zmm::<8, 2>(c, o0, inputs, outs, start, end, down),
                }
            }
        }
        start = end;
    }
}

/// One group of `G` outputs over bytes `start..end` (any length), zmm form,
/// `U` vectors per output at a time, from the last column to the first if
/// `down` (see [`super::walk::descending`]).
///
/// # Safety
/// - every slice of `inputs` and `outs` is at least `end` bytes long;
/// - `inputs.len() == c.cols() >= 1`, `outs.len() == G`,
///   `o0 + G <= c.rows()`;
/// - `c` holds affine matrices (8 bytes per coefficient).
#[target_feature(enable = "gfni,avx512f,avx512bw")]
unsafe fn group_zmm<const G: usize, const U: usize>(
    c: &Coeffs,
    o0: usize,
    inputs: &[&[u8]],
    outs: &mut [&mut [u8]],
    start: usize,
    end: usize,
    down: bool,
) {
    const V: usize = 64;
    let dst: [*mut u8; G] = core::array::from_fn(|g| outs[g].as_mut_ptr());
    let n = (end - start) / (U * V);
    let full = start + n * U * V;
    if down {
        // SAFETY: `full..end` lies inside `start..end`.
        unsafe { tail_zmm::<G>(c, o0, inputs, &dst, full, end) };
    }
    // One loop for both directions, so the step is inlined once.
    let (mut off, stride) = if down {
        (full.wrapping_sub(U * V), (U * V).wrapping_neg())
    } else {
        (start, U * V)
    };
    for _ in 0..n {
        // SAFETY: the `n` offsets are `start + t * U * 64` for `t < n`, so
        // `off + U * 64 <= full <= end`; the rest is the caller's contract.
        unsafe { step_zmm::<G, U, false>(c, o0, inputs, &dst, off, U * V) };
        off = off.wrapping_add(stride);
    }
    if !down {
        // SAFETY: as above.
        unsafe { tail_zmm::<G>(c, o0, inputs, &dst, full, end) };
    }
}

/// Bytes `from..end` (fewer than `U` vectors, any length) of the `G`
/// outputs at `dst`: whole vectors one at a time, then the partial one,
/// byte-masked.
///
/// # Safety
/// As for [`group_zmm`], with `start <= from <= end`, and `dst` the outputs'
/// pointers.
#[target_feature(enable = "gfni,avx512f,avx512bw")]
#[inline(never)]
unsafe fn tail_zmm<const G: usize>(
    c: &Coeffs,
    o0: usize,
    inputs: &[&[u8]],
    dst: &[*mut u8; G],
    from: usize,
    end: usize,
) {
    const V: usize = 64;
    let mut off = from;
    while off < end {
        let n = (end - off).min(V);
        // SAFETY: `off + n <= end`.
        unsafe { step_zmm::<G, 1, true>(c, o0, inputs, dst, off, n) };
        off += n;
    }
}

/// Bytes `off..off + n` of the `G` outputs at `dst`, where `n <= U * 64`
/// and only the last vector may be partial (`n > (U - 1) * 64`). With
/// `MASKED` every access is byte-masked (needed for a partial vector);
/// without, `n` must be `U * 64` and plain loads and stores are used.
///
/// # Safety
/// As for [`group_zmm`], with `off + n <= end`, and `dst` the outputs'
/// pointers.
#[target_feature(enable = "gfni,avx512f,avx512bw")]
#[inline]
unsafe fn step_zmm<const G: usize, const U: usize, const MASKED: bool>(
    c: &Coeffs,
    o0: usize,
    inputs: &[&[u8]],
    dst: &[*mut u8; G],
    off: usize,
    n: usize,
) {
    const V: usize = 64;
    let tab = c.table_ptr();
    // Byte mask of each vector: all ones but for a partial last vector.
    let masks: [__mmask64; U] = core::array::from_fn(|u| {
        let valid = n.saturating_sub(u * V).min(V);
        if valid == V {
            u64::MAX
        } else {
            (1u64 << valid) - 1
        }
    });
    let load = |src: *const u8, u: usize| {
        // SAFETY: the mask selects bytes `off + u * 64 ..` up to `off + n`,
        // inside the input (`off + n <= end <= len`); masked-off bytes are
        // not accessed.
        unsafe {
            if MASKED {
                _mm512_maskz_loadu_epi8(masks[u], src.add(off + u * V).cast())
            } else {
                _mm512_loadu_si512(src.add(off + u * V).cast())
            }
        }
    };
    // Matrix of entry `(o0 + g, i)`, broadcast to all eight qwords.
    let m = |i: usize, g: usize| {
        // SAFETY: `o0 + g < rows` and `i < cols`, so the 8 bytes lie inside
        // the `rows * cols * 8`-byte table.
        _mm512_set1_epi64(unsafe { matrix(tab.add(c.entry_offset(o0 + g, i, 8))) })
    };
    let mut acc = [[_mm512_setzero_si512(); U]; G];
    let mut pairs = inputs.chunks_exact(2);
    for (p, pair) in pairs.by_ref().enumerate() {
        let a: [__m512i; U] = core::array::from_fn(|u| load(pair[0].as_ptr(), u));
        let b: [__m512i; U] = core::array::from_fn(|u| load(pair[1].as_ptr(), u));
        for (g, acc_g) in acc.iter_mut().enumerate() {
            let (ma, mb) = (m(2 * p, g), m(2 * p + 1, g));
            for u in 0..U {
                acc_g[u] = _mm512_ternarylogic_epi64::<0x96>(
                    acc_g[u],
                    _mm512_gf2p8affine_epi64_epi8::<0>(a[u], ma),
                    _mm512_gf2p8affine_epi64_epi8::<0>(b[u], mb),
                );
            }
        }
    }
    if let [last] = pairs.remainder() {
        let i = inputs.len() - 1;
        let x: [__m512i; U] = core::array::from_fn(|u| load(last.as_ptr(), u));
        for (g, acc_g) in acc.iter_mut().enumerate() {
            let mg = m(i, g);
            for u in 0..U {
                acc_g[u] = _mm512_xor_si512(acc_g[u], _mm512_gf2p8affine_epi64_epi8::<0>(x[u], mg));
            }
        }
    }
    for (g, acc_g) in acc.iter().enumerate() {
        for (u, v) in acc_g.iter().enumerate() {
            // SAFETY: only the masked bytes, inside `off..off + n` of
            // `outs[g]`, are written; `dst[g]` comes from a `&mut` slice that
            // nothing else references.
            unsafe {
                if MASKED {
                    _mm512_mask_storeu_epi8(dst[g].add(off + u * V).cast(), masks[u], *v);
                } else {
                    _mm512_storeu_si512(dst[g].add(off + u * V).cast(), *v);
                }
            }
        }
    }
}

/// `outputs = M x inputs` with ymm registers, see [`super::Kernel::apply`].
#[target_feature(enable = "gfni,avx2")]
pub(super) fn apply_ymm(c: &Coeffs, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) {
    const V: usize = 32;
    let Some(len) = checked_len(c, inputs, outputs) else {
        return;
    };
    let vec_len = len - len % V;
    if vec_len > 0 {
        let win = window(c.cols(), c.rows(), GMAX_YMM, vec_len, 2 * V);
        // Bit n: group n walks down (see `super::walk::descending`).
        let downs = down_groups(inputs, outputs, GMAX_YMM, usize::MAX, |_| 2 * V);
        let mut start = 0;
        while start < vec_len {
            let end = (start + win).min(vec_len);
            for (n, (o0, g)) in groups(c.rows(), GMAX_YMM).enumerate() {
                let down = n < 64 && downs >> n & 1 == 1;
                let outs = &mut outputs[o0..o0 + g];
                // SAFETY: `checked_len` proved every input and output holds
                // `len >= end` bytes; `start..end` is a multiple of 32
                // bytes; `outs` has `g` entries and `o0 + g <= rows`; the
                // table was expanded in affine format for this matrix.
                unsafe {
                    match g {
                        1 => group_ymm::<1>(c, o0, inputs, outs, start, end, down),
                        2 => group_ymm::<2>(c, o0, inputs, outs, start, end, down),
                        3 => group_ymm::<3>(c, o0, inputs, outs, start, end, down),
                        _ => group_ymm::<4>(c, o0, inputs, outs, start, end, down),
                    }
                }
            }
            start = end;
        }
    }
    if vec_len < len {
        scalar::apply_range(c, inputs, outputs, vec_len, len);
    }
}

/// One group of `G` outputs over bytes `start..end`, ymm form, from the
/// last column to the first if `down` (see [`super::walk::descending`]).
///
/// # Safety
/// - every slice of `inputs` and `outs` is at least `end` bytes long and
///   `end - start` is a multiple of 32;
/// - `inputs.len() == c.cols()`, `outs.len() == G`, `o0 + G <= c.rows()`;
/// - `c` holds affine matrices (8 bytes per coefficient).
#[target_feature(enable = "gfni,avx2")]
unsafe fn group_ymm<const G: usize>(
    c: &Coeffs,
    o0: usize,
    inputs: &[&[u8]],
    outs: &mut [&mut [u8]],
    start: usize,
    end: usize,
    down: bool,
) {
    const V: usize = 32;
    let dst: [*mut u8; G] = core::array::from_fn(|g| outs[g].as_mut_ptr());
    let tab = c.table_ptr();
    let m = |i: usize, g: usize| {
        // SAFETY: `o0 + g < rows` and `i < cols`, so the 8 bytes lie inside
        // the `rows * cols * 8`-byte table.
        _mm256_set1_epi64x(unsafe { matrix(tab.add(c.entry_offset(o0 + g, i, 8))) })
    };
    let n = (end - start) / (2 * V);
    let full = start + n * 2 * V;
    if down && full < end {
        // SAFETY: exactly one 32-byte vector, `full..end`, is left.
        unsafe { last_ymm::<G>(c, o0, inputs, &dst, full) };
    }
    // One loop for both directions, so the step is inlined once.
    let (mut off, stride) = if down {
        (full.wrapping_sub(2 * V), (2 * V).wrapping_neg())
    } else {
        (start, 2 * V)
    };
    for _ in 0..n {
        // The `n` offsets are `start + t * 64` for `t < n`, so
        // `off + 64 <= full <= end`.
        let mut acc0 = [_mm256_setzero_si256(); G];
        let mut acc1 = [_mm256_setzero_si256(); G];
        for (i, input) in inputs.iter().enumerate() {
            let src = input.as_ptr();
            // SAFETY: `off + 64 <= full <= input.len()`.
            let (x0, x1) = unsafe {
                (
                    _mm256_loadu_si256(src.add(off).cast()),
                    _mm256_loadu_si256(src.add(off + V).cast()),
                )
            };
            for g in 0..G {
                let mg = m(i, g);
                acc0[g] = _mm256_xor_si256(acc0[g], _mm256_gf2p8affine_epi64_epi8::<0>(x0, mg));
                acc1[g] = _mm256_xor_si256(acc1[g], _mm256_gf2p8affine_epi64_epi8::<0>(x1, mg));
            }
        }
        for g in 0..G {
            // SAFETY: `off + 64 <= full <= outs[g].len()`; `dst[g]` comes
            // from a `&mut` slice that nothing else references.
            unsafe {
                _mm256_storeu_si256(dst[g].add(off).cast(), acc0[g]);
                _mm256_storeu_si256(dst[g].add(off + V).cast(), acc1[g]);
            }
        }
        off = off.wrapping_add(stride);
    }
    if !down && full < end {
        // SAFETY: exactly one 32-byte vector, `full..end`, is left.
        unsafe { last_ymm::<G>(c, o0, inputs, &dst, full) };
    }
}

/// Bytes `off..off + 32` of the `G` outputs at `dst`.
///
/// # Safety
/// As for [`group_ymm`], with `off + 32 <= end`, and `dst` the outputs'
/// pointers.
#[target_feature(enable = "gfni,avx2")]
#[inline(never)]
unsafe fn last_ymm<const G: usize>(
    c: &Coeffs,
    o0: usize,
    inputs: &[&[u8]],
    dst: &[*mut u8; G],
    off: usize,
) {
    let tab = c.table_ptr();
    let m = |i: usize, g: usize| {
        // SAFETY: `o0 + g < rows` and `i < cols`, so the 8 bytes lie inside
        // the `rows * cols * 8`-byte table.
        _mm256_set1_epi64x(unsafe { matrix(tab.add(c.entry_offset(o0 + g, i, 8))) })
    };
    let mut acc = [_mm256_setzero_si256(); G];
    for (i, input) in inputs.iter().enumerate() {
        // SAFETY: `off + 32 <= end <= input.len()`.
        let x = unsafe { _mm256_loadu_si256(input.as_ptr().add(off).cast()) };
        for (g, a) in acc.iter_mut().enumerate() {
            *a = _mm256_xor_si256(*a, _mm256_gf2p8affine_epi64_epi8::<0>(x, m(i, g)));
        }
    }
    for (g, a) in acc.into_iter().enumerate() {
        // SAFETY: `off + 32 <= end <= outs[g].len()`; `dst[g]` comes from a
        // `&mut` slice that nothing else references.
        unsafe { _mm256_storeu_si256(dst[g].add(off).cast(), a) };
    }
}

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
//!   `U` accumulators each (4 for groups of 1-4 outputs, else 2: measured
//!   best on Zen 5, and for 1-2 outputs on Zen 4); inputs are taken in pairs so one `vpternlogq` adds two
//!   products to an accumulator; the last partial vector is byte-masked.
//! - ymm (GFNI + AVX2, VEX encoded, for CPUs with GFNI but no AVX-512):
//!   groups of up to [`GMAX_YMM`] outputs with two accumulators each; bytes
//!   past the last 32-byte vector go through the portable kernel.
//!
//! Both are usually limited by cache bandwidth rather than by the two
//! GF2P8AFFINEQB pipes once shards exceed the L1 cache. Both walk the columns
//! in the direction [`super::walk::descending`] picks.

use core::arch::x86_64::*;

use super::walk::{Entry, Pass, Plan};
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
    // Groups of 1-4 outputs take 4 vectors per step, the others 2 (see
    // `pass_zmm`).
    let plan = Plan::new(
        inputs,
        outputs,
        len,
        GMAX_ZMM,
        256,
        ZMM_DOWN_MAX_INPUTS,
        |g| {
            if g <= 4 { 256 } else { 128 }
        },
    );
    plan.run(inputs, outputs, len, |p, ins, outs| {
        // SAFETY: this function's caller guarantees GFNI and AVX-512F/BW;
        // `checked_len` proved every input and output holds `len` bytes and
        // `Plan::run` passes sub-slices of them with `p.end <= len`; `outs` has
        // `p.g <= GMAX_ZMM` entries and `ins` `p.ni >= 1`, with
        // `p.o0 + p.g <= rows` and `p.i0 + p.ni <= cols`; the table was
        // expanded in affine format for this matrix (`Kernel::apply` checked
        // `c.kernel`).
        unsafe {
            if p.first {
                pass_zmm::<false>(c, p, ins, outs);
            } else {
                pass_zmm::<true>(c, p, ins, outs);
            }
        }
    });
}

/// [`group_zmm`] for the pass's group size.
///
/// # Safety
/// As for [`group_zmm`], with `outs.len() == p.g <= GMAX_ZMM`.
#[target_feature(enable = "gfni,avx512f,avx512bw")]
unsafe fn pass_zmm<const ACC: bool>(c: &Coeffs, p: &Pass, ins: &[&[u8]], outs: &mut [&mut [u8]]) {
    // SAFETY: the caller's contract, with `G == outs.len()`.
    unsafe {
        match p.g {
            1 => group_zmm::<1, 4, ACC>(c, p, ins, outs),
            2 => group_zmm::<2, 4, ACC>(c, p, ins, outs),
            3 => group_zmm::<3, 4, ACC>(c, p, ins, outs),
            4 => group_zmm::<4, 4, ACC>(c, p, ins, outs),
            5 => group_zmm::<5, 2, ACC>(c, p, ins, outs),
            6 => group_zmm::<6, 2, ACC>(c, p, ins, outs),
            7 => group_zmm::<7, 2, ACC>(c, p, ins, outs),
            _ => group_zmm::<8, 2, ACC>(c, p, ins, outs),
        }
    }
}

/// Pass `p` of `G` outputs over the inputs `inputs` (columns `p.i0..`) and
/// bytes `p.start..p.end` (any length), zmm form, `U` vectors per output at
/// a time, from the last column to the first if `p.down` (see
/// [`super::walk::descending`]); with `ACC` the products are added to the
/// outputs instead of overwriting them.
///
/// # Safety
/// - every slice of `inputs` and `outs` is at least `p.end` bytes long;
/// - `inputs.len() >= 1`, `p.i0 + inputs.len() <= c.cols()`,
///   `outs.len() == G`, `p.o0 + G <= c.rows()`;
/// - `c` holds affine matrices (8 bytes per coefficient).
#[target_feature(enable = "gfni,avx512f,avx512bw")]
unsafe fn group_zmm<const G: usize, const U: usize, const ACC: bool>(
    c: &Coeffs,
    p: &Pass,
    inputs: &[&[u8]],
    outs: &mut [&mut [u8]],
) {
    const V: usize = 64;
    let (start, end, down, at) = (p.start, p.end, p.down, p.entry());
    let dst: [*mut u8; G] = core::array::from_fn(|g| outs[g].as_mut_ptr());
    let n = (end - start) / (U * V);
    let full = start + n * U * V;
    if down {
        // SAFETY: `full..end` lies inside `start..end`.
        unsafe { tail_zmm::<G, ACC>(c, at, inputs, &dst, full, end) };
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
        unsafe { step_zmm::<G, U, false, ACC>(c, at, inputs, &dst, off, U * V) };
        off = off.wrapping_add(stride);
    }
    if !down {
        // SAFETY: as above.
        unsafe { tail_zmm::<G, ACC>(c, at, inputs, &dst, full, end) };
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
unsafe fn tail_zmm<const G: usize, const ACC: bool>(
    c: &Coeffs,
    at: Entry,
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
        unsafe { step_zmm::<G, 1, true, ACC>(c, at, inputs, dst, off, n) };
        off += n;
    }
}

/// Bytes `off..off + n` of the `G` outputs at `dst`, where `n <= U * 64`
/// and only the last vector may be partial (`n > (U - 1) * 64`). With
/// `MASKED` every access is byte-masked (needed for a partial vector);
/// without, `n` must be `U * 64` and plain loads and stores are used. With
/// `ACC` the products are added to the outputs instead of overwriting them.
///
/// # Safety
/// As for [`group_zmm`], with `off + n <= end`, and `dst` the outputs'
/// pointers.
#[target_feature(enable = "gfni,avx512f,avx512bw")]
#[inline]
unsafe fn step_zmm<const G: usize, const U: usize, const MASKED: bool, const ACC: bool>(
    c: &Coeffs,
    at: Entry,
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
    // Matrix of entry `(o0 + g, i0 + i)`, broadcast to all eight qwords.
    let m = |i: usize, g: usize| {
        // SAFETY: `o0 + g < rows` and `i0 + i < cols`, so the 8 bytes lie
        // inside the `rows * cols * 8`-byte table.
        _mm512_set1_epi64(unsafe { matrix(tab.add(c.entry_offset(at.o0 + g, at.i0 + i, 8))) })
    };
    let mut acc = [[_mm512_setzero_si512(); U]; G];
    if ACC {
        for (g, acc_g) in acc.iter_mut().enumerate() {
            for (u, a) in acc_g.iter_mut().enumerate() {
                // The output's current bytes, read as `load` reads an input.
                *a = load(dst[g].cast_const(), u);
            }
        }
    }
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
        let plan = Plan::new(
            inputs,
            outputs,
            vec_len,
            GMAX_YMM,
            2 * V,
            usize::MAX,
            |_| 2 * V,
        );
        plan.run(inputs, outputs, vec_len, |p, ins, outs| {
            // SAFETY: this function's caller guarantees GFNI and AVX2;
            // `checked_len` proved every input and output holds
            // `len >= vec_len` bytes and `Plan::run` passes sub-slices of
            // them with `p.end <= vec_len`; its windows are multiples of 64
            // bytes, so
            // `p.start..p.end` is a multiple of 32 bytes; `outs` has
            // `p.g <= GMAX_YMM` entries and `ins` `p.ni >= 1`, with
            // `p.o0 + p.g <= rows` and `p.i0 + p.ni <= cols`; the table was
            // expanded in affine format for this matrix.
            unsafe {
                match (p.g, p.first) {
                    (1, true) => group_ymm::<1, false>(c, p, ins, outs),
                    (2, true) => group_ymm::<2, false>(c, p, ins, outs),
                    (3, true) => group_ymm::<3, false>(c, p, ins, outs),
                    (_, true) => group_ymm::<4, false>(c, p, ins, outs),
                    (1, false) => group_ymm::<1, true>(c, p, ins, outs),
                    (2, false) => group_ymm::<2, true>(c, p, ins, outs),
                    (3, false) => group_ymm::<3, true>(c, p, ins, outs),
                    (_, false) => group_ymm::<4, true>(c, p, ins, outs),
                }
            }
        });
    }
    if vec_len < len {
        scalar::apply_range(c, inputs, outputs, vec_len, len);
    }
}

/// Pass `p` of `G` outputs over the inputs `inputs` (columns `p.i0..`) and
/// bytes `p.start..p.end`, ymm form, from the last column to the first if
/// `p.down` (see [`super::walk::descending`]); with `ACC` the products are
/// added to the outputs instead of overwriting them.
///
/// # Safety
/// - every slice of `inputs` and `outs` is at least `p.end` bytes long and
///   `p.end - p.start` is a multiple of 32;
/// - `inputs.len() >= 1`, `p.i0 + inputs.len() <= c.cols()`,
///   `outs.len() == G`, `p.o0 + G <= c.rows()`;
/// - `c` holds affine matrices (8 bytes per coefficient).
#[target_feature(enable = "gfni,avx2")]
unsafe fn group_ymm<const G: usize, const ACC: bool>(
    c: &Coeffs,
    p: &Pass,
    inputs: &[&[u8]],
    outs: &mut [&mut [u8]],
) {
    const V: usize = 32;
    let (start, end, down, at) = (p.start, p.end, p.down, p.entry());
    let dst: [*mut u8; G] = core::array::from_fn(|g| outs[g].as_mut_ptr());
    let tab = c.table_ptr();
    let m = |i: usize, g: usize| {
        // SAFETY: `o0 + g < rows` and `i0 + i < cols`, so the 8 bytes lie
        // inside the `rows * cols * 8`-byte table.
        _mm256_set1_epi64x(unsafe { matrix(tab.add(c.entry_offset(at.o0 + g, at.i0 + i, 8))) })
    };
    let n = (end - start) / (2 * V);
    let full = start + n * 2 * V;
    if down && full < end {
        // SAFETY: exactly one 32-byte vector, `full..end`, is left.
        unsafe { last_ymm::<G, ACC>(c, at, inputs, &dst, full) };
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
        if ACC {
            for g in 0..G {
                // SAFETY: `off + 64 <= full <= outs[g].len()`.
                unsafe {
                    acc0[g] = _mm256_loadu_si256(dst[g].add(off).cast_const().cast());
                    acc1[g] = _mm256_loadu_si256(dst[g].add(off + V).cast_const().cast());
                }
            }
        }
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
        unsafe { last_ymm::<G, ACC>(c, at, inputs, &dst, full) };
    }
}

/// Bytes `off..off + 32` of the `G` outputs at `dst`.
///
/// # Safety
/// As for [`group_ymm`], with `off + 32 <= end`, and `dst` the outputs'
/// pointers.
#[target_feature(enable = "gfni,avx2")]
#[inline(never)]
unsafe fn last_ymm<const G: usize, const ACC: bool>(
    c: &Coeffs,
    at: Entry,
    inputs: &[&[u8]],
    dst: &[*mut u8; G],
    off: usize,
) {
    let tab = c.table_ptr();
    let m = |i: usize, g: usize| {
        // SAFETY: `o0 + g < rows` and `i0 + i < cols`, so the 8 bytes lie
        // inside the `rows * cols * 8`-byte table.
        _mm256_set1_epi64x(unsafe { matrix(tab.add(c.entry_offset(at.o0 + g, at.i0 + i, 8))) })
    };
    let mut acc = [_mm256_setzero_si256(); G];
    if ACC {
        for (g, a) in acc.iter_mut().enumerate() {
            // SAFETY: `off + 32 <= end <= outs[g].len()`.
            *a = unsafe { _mm256_loadu_si256(dst[g].add(off).cast_const().cast()) };
        }
    }
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

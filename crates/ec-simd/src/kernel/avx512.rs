//! AVX-512BW kernel: split-nibble multiplication with `vpshufb` on zmm.
//!
//! Same scheme as the AVX2 kernel (see `avx2.rs`) at twice the width, with
//! the tables stored pre-broadcast to 64 bytes (see [`tables`]), and two
//! AVX-512 extras: `vpternlogq` folds the two table lookups into the
//! accumulator in one instruction (`acc ^ lo ^ hi`), and the last partial
//! vector of a shard uses byte-masked loads and stores instead of a scalar
//! tail. 32 registers allow groups of up to [`GMAX`] outputs, each with two
//! accumulators. The columns are walked in the direction
//! [`super::walk::descending`] picks.

use core::arch::x86_64::*;

use super::walk::{Entry, Pass, Plan};
use super::{Coeffs, checked_len};

/// Vector width in bytes.
const V: usize = 64;
/// Largest group of outputs kept in registers (2 x GMAX accumulators).
const GMAX: usize = 8;
/// Walks down (see `super::walk::descending`) only with at most this many inputs:
/// with more, walking down cost time on Zen 5 even with no aliasing to avoid
/// (4% at 12+4 and 16+4 at MinIO's shape, 20-27% at 12+4 with 1 MiB shards).
const DOWN_MAX_INPUTS: usize = 8;

/// `outputs = M x inputs`, see [`super::Kernel::apply`].
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn apply(c: &Coeffs, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) {
    let Some(len) = checked_len(c, inputs, outputs) else {
        return;
    };
    if len == 0 {
        return;
    }
    let plan = Plan::new(inputs, outputs, len, GMAX, 2 * V, DOWN_MAX_INPUTS, |_| {
        2 * V
    });
    plan.run(inputs, outputs, len, |p, ins, outs| {
        // SAFETY: this function's caller guarantees AVX-512F/BW;
        // `checked_len` proved every input and output holds `len` bytes and
        // `Plan::run` passes sub-slices of them with `p.end <= len`; `outs` has
        // `p.g <= GMAX` entries and `ins` `p.ni >= 1`, with
        // `p.o0 + p.g <= rows` and `p.i0 + p.ni <= cols`; the table was
        // expanded in `NibbleX4` format for this matrix (`Kernel::apply`
        // checked `c.kernel`).
        unsafe {
            if p.first {
                pass::<false>(c, p, ins, outs);
            } else {
                pass::<true>(c, p, ins, outs);
            }
        }
    });
}

/// [`group`] for the pass's group size.
///
/// # Safety
/// As for [`group`], with `outs.len() == p.g <= GMAX`.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn pass<const ACC: bool>(c: &Coeffs, p: &Pass, ins: &[&[u8]], outs: &mut [&mut [u8]]) {
    // SAFETY: the caller's contract, with `G == outs.len()`.
    unsafe {
        match p.g {
            1 => group::<1, ACC>(c, p, ins, outs),
            2 => group::<2, ACC>(c, p, ins, outs),
            3 => group::<3, ACC>(c, p, ins, outs),
            4 => group::<4, ACC>(c, p, ins, outs),
            5 => group::<5, ACC>(c, p, ins, outs),
            6 => group::<6, ACC>(c, p, ins, outs),
            7 => group::<7, ACC>(c, p, ins, outs),
            _ => group::<8, ACC>(c, p, ins, outs),
        }
    }
}

/// The low- and high-nibble tables of one coefficient, each already
/// repeated in all four 128-bit lanes (table format `NibbleX4`).
///
/// Plain 64-byte loads from the 64-byte aligned table: on Zen 5 a
/// `vbroadcasti32x4` from memory competes with `vpshufb` for the two shuffle
/// pipes, which cost a quarter of the throughput when the tables were stored
/// once and broadcast.
///
/// # Safety
/// `t` must be valid for reading 128 bytes.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn tables(t: *const u8) -> (__m512i, __m512i) {
    // SAFETY: the caller guarantees 128 readable bytes at `t`.
    unsafe {
        (
            _mm512_loadu_si512(t.cast()),
            _mm512_loadu_si512(t.add(64).cast()),
        )
    }
}

/// Pass `p` of `G` outputs over the inputs `inputs` (columns `p.i0..`) and
/// bytes `p.start..p.end` (any length), from the last column to the first
/// if `p.down` (see [`super::walk::descending`]); with `ACC` the products
/// are added to the outputs instead of overwriting them.
///
/// # Safety
/// - every slice of `inputs` and `outs` is at least `p.end` bytes long;
/// - `inputs.len() >= 1`, `p.i0 + inputs.len() <= c.cols()`,
///   `outs.len() == G`, `p.o0 + G <= c.rows()`;
/// - `c` holds `NibbleX4` tables (128 bytes per coefficient).
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn group<const G: usize, const ACC: bool>(
    c: &Coeffs,
    p: &Pass,
    inputs: &[&[u8]],
    outs: &mut [&mut [u8]],
) {
    let (start, end, down, at) = (p.start, p.end, p.down, p.entry());
    let mask = _mm512_set1_epi8(0x0f);
    let dst: [*mut u8; G] = core::array::from_fn(|g| outs[g].as_mut_ptr());
    let tab = c.table_ptr();
    let n = (end - start) / (2 * V);
    let full = start + n * 2 * V;
    if down {
        // SAFETY: `full..end` lies inside `start..end`.
        unsafe { tail::<G, ACC>(c, at, inputs, &dst, full, end) };
    }
    // One loop for both directions, so the step is inlined once.
    let (mut off, stride) = if down {
        (full.wrapping_sub(2 * V), (2 * V).wrapping_neg())
    } else {
        (start, 2 * V)
    };
    for _ in 0..n {
        // The `n` offsets are `start + t * 128` for `t < n`, so
        // `off + 128 <= full <= end`.
        let mut acc0 = [_mm512_setzero_si512(); G];
        let mut acc1 = [_mm512_setzero_si512(); G];
        if ACC {
            for g in 0..G {
                // SAFETY: `off + 128 <= full <= outs[g].len()`.
                unsafe {
                    acc0[g] = _mm512_loadu_si512(dst[g].add(off).cast_const().cast());
                    acc1[g] = _mm512_loadu_si512(dst[g].add(off + V).cast_const().cast());
                }
            }
        }
        for (i, input) in inputs.iter().enumerate() {
            let src = input.as_ptr();
            // SAFETY: `off + 128 <= full <= input.len()`.
            let (x0, x1) = unsafe {
                (
                    _mm512_loadu_si512(src.add(off).cast()),
                    _mm512_loadu_si512(src.add(off + V).cast()),
                )
            };
            let lo0 = _mm512_and_si512(x0, mask);
            let hi0 = _mm512_and_si512(_mm512_srli_epi64::<4>(x0), mask);
            let lo1 = _mm512_and_si512(x1, mask);
            let hi1 = _mm512_and_si512(_mm512_srli_epi64::<4>(x1), mask);
            let first = c.entry_offset(at.o0, at.i0 + i, 128);
            for g in 0..G {
                // SAFETY: entry `(o0 + g, i0 + i)` lies inside the
                // `rows * cols * 128`-byte table.
                let (tl, th) = unsafe { tables(tab.add(first + 128 * g)) };
                acc0[g] = _mm512_xor_si512(
                    acc0[g],
                    _mm512_xor_si512(_mm512_shuffle_epi8(tl, lo0), _mm512_shuffle_epi8(th, hi0)),
                );
                acc1[g] = _mm512_xor_si512(
                    acc1[g],
                    _mm512_xor_si512(_mm512_shuffle_epi8(tl, lo1), _mm512_shuffle_epi8(th, hi1)),
                );
            }
        }
        for g in 0..G {
            // SAFETY: `off + 128 <= full <= outs[g].len()`; `dst[g]` comes
            // from a `&mut` slice that nothing else references.
            unsafe {
                _mm512_storeu_si512(dst[g].add(off).cast(), acc0[g]);
                _mm512_storeu_si512(dst[g].add(off + V).cast(), acc1[g]);
            }
        }
        off = off.wrapping_add(stride);
    }
    if !down {
        // SAFETY: `full..end` lies inside `start..end`.
        unsafe { tail::<G, ACC>(c, at, inputs, &dst, full, end) };
    }
}

/// Bytes `from..end` (fewer than two vectors, any length) of the `G`
/// outputs at `dst`, byte-masked.
///
/// # Safety
/// As for [`group`], with `start <= from <= end`, and `dst` the outputs'
/// pointers.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline(never)]
unsafe fn tail<const G: usize, const ACC: bool>(
    c: &Coeffs,
    at: Entry,
    inputs: &[&[u8]],
    dst: &[*mut u8; G],
    from: usize,
    end: usize,
) {
    let mask = _mm512_set1_epi8(0x0f);
    let tab = c.table_ptr();
    let mut off = from;
    while off < end {
        let n = (end - off).min(V);
        let k: __mmask64 = u64::MAX >> (V - n);
        let mut acc = [_mm512_setzero_si512(); G];
        if ACC {
            for (g, a) in acc.iter_mut().enumerate() {
                // SAFETY: the mask selects bytes `off..off + n` of
                // `outs[g]`, inside it.
                *a = unsafe { _mm512_maskz_loadu_epi8(k, dst[g].add(off).cast_const().cast()) };
            }
        }
        for (i, input) in inputs.iter().enumerate() {
            // SAFETY: the mask selects bytes `off..off + n` with
            // `off + n <= end <= input.len()`; masked-off bytes are not
            // accessed.
            let x = unsafe { _mm512_maskz_loadu_epi8(k, input.as_ptr().add(off).cast()) };
            let lo = _mm512_and_si512(x, mask);
            let hi = _mm512_and_si512(_mm512_srli_epi64::<4>(x), mask);
            let first = c.entry_offset(at.o0, at.i0 + i, 128);
            for (g, a) in acc.iter_mut().enumerate() {
                // SAFETY: as in the main loop.
                let (tl, th) = unsafe { tables(tab.add(first + 128 * g)) };
                *a = _mm512_ternarylogic_epi64::<0x96>(
                    *a,
                    _mm512_shuffle_epi8(tl, lo),
                    _mm512_shuffle_epi8(th, hi),
                );
            }
        }
        for (g, a) in acc.into_iter().enumerate() {
            // SAFETY: only bytes `off..off + n` (inside `outs[g]`) are
            // written; `dst[g]` comes from a `&mut` slice that nothing else
            // references.
            unsafe { _mm512_mask_storeu_epi8(dst[g].add(off).cast(), k, a) };
        }
        off += n;
    }
}

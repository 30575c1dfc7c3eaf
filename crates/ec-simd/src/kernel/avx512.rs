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

use super::walk::{down_groups, groups, window};
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
    let win = window(c.cols(), c.rows(), GMAX, len, 2 * V);
    // Bit n: group n walks down (see `super::walk::descending`).
    let downs = down_groups(inputs, outputs, GMAX, DOWN_MAX_INPUTS, |_| 2 * V);
    let mut start = 0;
    while start < len {
        let end = (start + win).min(len);
        for (n, (o0, g)) in groups(c.rows(), GMAX).enumerate() {
            let down = n < 64 && downs >> n & 1 == 1;
            let outs = &mut outputs[o0..o0 + g];
            // SAFETY: `checked_len` proved every input and output holds
            // `len >= end` bytes; `outs` has `g` entries and
            // `o0 + g <= rows`; the table was expanded in `NibbleX4` format for
            // this matrix (`Kernel::apply` checked `c.kernel`).
            unsafe {
                match g {
                    1 => group::<1>(c, o0, inputs, outs, start, end, down),
                    2 => group::<2>(c, o0, inputs, outs, start, end, down),
                    3 => group::<3>(c, o0, inputs, outs, start, end, down),
                    4 => group::<4>(c, o0, inputs, outs, start, end, down),
                    5 => group::<5>(c, o0, inputs, outs, start, end, down),
                    6 => group::<6>(c, o0, inputs, outs, start, end, down),
                    7 => group::<7>(c, o0, inputs, outs, start, end, down),
                    _ => group::<8>(c, o0, inputs, outs, start, end, down),
                }
            }
        }
        start = end;
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

/// One group of `G` outputs over bytes `start..end` (any length), from the
/// last column to the first if `down` (see [`super::walk::descending`]).
///
/// # Safety
/// - every slice of `inputs` and `outs` is at least `end` bytes long;
/// - `inputs.len() == c.cols()`, `outs.len() == G`, `o0 + G <= c.rows()`;
/// - `c` holds `NibbleX4` tables (128 bytes per coefficient).
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn group<const G: usize>(
    c: &Coeffs,
    o0: usize,
    inputs: &[&[u8]],
    outs: &mut [&mut [u8]],
    start: usize,
    end: usize,
    down: bool,
) {
    let mask = _mm512_set1_epi8(0x0f);
    let dst: [*mut u8; G] = core::array::from_fn(|g| outs[g].as_mut_ptr());
    let tab = c.table_ptr();
    let n = (end - start) / (2 * V);
    let full = start + n * 2 * V;
    if down {
        // SAFETY: `full..end` lies inside `start..end`.
        unsafe { tail::<G>(c, o0, inputs, &dst, full, end) };
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
            let first = c.entry_offset(o0, i, 128);
            for g in 0..G {
                // SAFETY: entry `(o0 + g, i)` lies inside the
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
        unsafe { tail::<G>(c, o0, inputs, &dst, full, end) };
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
unsafe fn tail<const G: usize>(
    c: &Coeffs,
    o0: usize,
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
        for (i, input) in inputs.iter().enumerate() {
            // SAFETY: the mask selects bytes `off..off + n` with
            // `off + n <= end <= input.len()`; masked-off bytes are not
            // accessed.
            let x = unsafe { _mm512_maskz_loadu_epi8(k, input.as_ptr().add(off).cast()) };
            let lo = _mm512_and_si512(x, mask);
            let hi = _mm512_and_si512(_mm512_srli_epi64::<4>(x), mask);
            let first = c.entry_offset(o0, i, 128);
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

//! NEON kernel (aarch64): split-nibble multiplication with `tbl`
//! (`vqtbl1q_u8`), the 16-byte-table lookup, on 128-bit vectors.
//!
//! Same structure as the AVX2 kernel (see `avx2.rs`): groups of up to
//! [`GMAX`] outputs accumulated in registers (two 16-byte vectors each) while
//! each input is loaded and split into nibbles once; column windows when
//! several groups are needed; bytes past the last 16-byte vector go through
//! the portable kernel. `vqtbl1q_u8` returns 0 for indices >= 16, but the
//! nibbles are always < 16, so no masking subtleties arise.

use core::arch::aarch64::*;

use super::walk::{groups, window};
use super::{Coeffs, checked_len, scalar};

/// Vector width in bytes.
const V: usize = 16;
/// Largest group of outputs kept in registers (32 vector registers).
const GMAX: usize = 8;

/// `outputs = M x inputs`, see [`super::Kernel::apply`].
#[target_feature(enable = "neon")]
pub(super) fn apply(c: &Coeffs, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) {
    let Some(len) = checked_len(c, inputs, outputs) else {
        return;
    };
    let vec_len = len - len % V;
    if vec_len > 0 {
        let win = window(c.cols(), c.rows(), GMAX, usize::MAX, vec_len, 2 * V);
        let mut start = 0;
        while start < vec_len {
            let end = (start + win).min(vec_len);
            for (o0, g) in groups(c.rows(), GMAX) {
                let outs = &mut outputs[o0..o0 + g];
                // SAFETY: `checked_len` proved every input and output holds
                // `len >= end` bytes; `start..end` is a multiple of 16 bytes;
                // `outs` has `g` entries and `o0 + g <= rows`; the table was
                // expanded in nibble format for this matrix.
                unsafe {
                    match g {
                        1 => group::<1>(c, o0, inputs, outs, start, end),
                        2 => group::<2>(c, o0, inputs, outs, start, end),
                        3 => group::<3>(c, o0, inputs, outs, start, end),
                        4 => group::<4>(c, o0, inputs, outs, start, end),
                        5 => group::<5>(c, o0, inputs, outs, start, end),
                        6 => group::<6>(c, o0, inputs, outs, start, end),
                        7 => group::<7>(c, o0, inputs, outs, start, end),
                        _ => group::<8>(c, o0, inputs, outs, start, end),
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

/// One group of `G` outputs over bytes `start..end`.
///
/// # Safety
/// - every slice of `inputs` and `outs` is at least `end` bytes long and
///   `end - start` is a multiple of 16;
/// - `inputs.len() == c.cols()`, `outs.len() == G`, `o0 + G <= c.rows()`;
/// - `c` holds nibble tables (32 bytes per coefficient).
#[target_feature(enable = "neon")]
unsafe fn group<const G: usize>(
    c: &Coeffs,
    o0: usize,
    inputs: &[&[u8]],
    outs: &mut [&mut [u8]],
    start: usize,
    end: usize,
) {
    let mask = vdupq_n_u8(0x0f);
    let dst: [*mut u8; G] = core::array::from_fn(|g| outs[g].as_mut_ptr());
    let tab = c.table_ptr();
    let mut off = start;
    while off + 2 * V <= end {
        let mut acc0 = [vdupq_n_u8(0); G];
        let mut acc1 = [vdupq_n_u8(0); G];
        for (i, input) in inputs.iter().enumerate() {
            let src = input.as_ptr();
            // SAFETY: `off + 32 <= end <= input.len()`.
            let (x0, x1) = unsafe { (vld1q_u8(src.add(off)), vld1q_u8(src.add(off + V))) };
            let lo0 = vandq_u8(x0, mask);
            let hi0 = vshrq_n_u8::<4>(x0);
            let lo1 = vandq_u8(x1, mask);
            let hi1 = vshrq_n_u8::<4>(x1);
            let first = c.entry_offset(o0, i, 32);
            for g in 0..G {
                // SAFETY: entry `(o0 + g, i)` lies inside the
                // `rows * cols * 32`-byte table.
                let (tl, th) = unsafe {
                    let t = tab.add(first + 32 * g);
                    (vld1q_u8(t), vld1q_u8(t.add(16)))
                };
                acc0[g] = veorq_u8(acc0[g], veorq_u8(vqtbl1q_u8(tl, lo0), vqtbl1q_u8(th, hi0)));
                acc1[g] = veorq_u8(acc1[g], veorq_u8(vqtbl1q_u8(tl, lo1), vqtbl1q_u8(th, hi1)));
            }
        }
        for g in 0..G {
            // SAFETY: `off + 32 <= end <= outs[g].len()`; `dst[g]` comes from
            // a `&mut` slice that nothing else references.
            unsafe {
                vst1q_u8(dst[g].add(off), acc0[g]);
                vst1q_u8(dst[g].add(off + V), acc1[g]);
            }
        }
        off += 2 * V;
    }
    if off < end {
        // Exactly one 16-byte vector is left.
        let mut acc = [vdupq_n_u8(0); G];
        for (i, input) in inputs.iter().enumerate() {
            // SAFETY: `off + 16 <= end <= input.len()`.
            let x = unsafe { vld1q_u8(input.as_ptr().add(off)) };
            let lo = vandq_u8(x, mask);
            let hi = vshrq_n_u8::<4>(x);
            let first = c.entry_offset(o0, i, 32);
            for (g, a) in acc.iter_mut().enumerate() {
                // SAFETY: as in the main loop.
                let (tl, th) = unsafe {
                    let t = tab.add(first + 32 * g);
                    (vld1q_u8(t), vld1q_u8(t.add(16)))
                };
                *a = veorq_u8(*a, veorq_u8(vqtbl1q_u8(tl, lo), vqtbl1q_u8(th, hi)));
            }
        }
        for (g, a) in acc.into_iter().enumerate() {
            // SAFETY: `off + 16 <= end <= outs[g].len()`, exclusive as above.
            unsafe { vst1q_u8(dst[g].add(off), a) };
        }
    }
}

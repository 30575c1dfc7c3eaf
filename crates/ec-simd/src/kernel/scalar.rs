//! The portable kernel: each coefficient's 256-byte row of the product table
//! turns a multiplication into one lookup. Up to four outputs are accumulated
//! in 64-bit registers while each input word is read once, so inputs are
//! loaded once per four outputs and outputs are written once.
//!
//! Also used by the vector kernels for the few bytes past their last full
//! vector.

use super::{Coeffs, checked_len};
use crate::gf::MUL;

/// Outputs accumulated per pass over the inputs.
const GROUP: usize = 4;

pub(crate) fn apply(c: &Coeffs, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) {
    if let Some(len) = checked_len(c, inputs, outputs) {
        apply_range(c, inputs, outputs, 0, len);
    }
}

/// Computes bytes `start..end` of every output; the rest is left alone.
/// Requires the shapes `checked_len` accepts and `start <= end <= len`
/// (otherwise nothing is written).
pub(crate) fn apply_range(
    c: &Coeffs,
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
    start: usize,
    end: usize,
) {
    if start > end || outputs.iter().any(|o| o.len() < end) || inputs.iter().any(|i| i.len() < end)
    {
        debug_assert!(false, "apply_range out of bounds");
        return;
    }
    let mut o0 = 0;
    for chunk in outputs.chunks_mut(GROUP) {
        match chunk {
            [a, b, c2, d] => group(
                c,
                o0,
                inputs,
                [&mut **a, &mut **b, &mut **c2, &mut **d],
                start,
                end,
            ),
            [a, b, c2] => group(c, o0, inputs, [&mut **a, &mut **b, &mut **c2], start, end),
            [a, b] => group(c, o0, inputs, [&mut **a, &mut **b], start, end),
            [a] => group(c, o0, inputs, [&mut **a], start, end),
            _ => {}
        }
        o0 += chunk.len();
    }
}

#[inline(always)]
fn lookup8(t: &[u8; 256], x: &[u8; 8]) -> u64 {
    u64::from_le_bytes([
        t[x[0] as usize],
        t[x[1] as usize],
        t[x[2] as usize],
        t[x[3] as usize],
        t[x[4] as usize],
        t[x[5] as usize],
        t[x[6] as usize],
        t[x[7] as usize],
    ])
}

fn group<const G: usize>(
    c: &Coeffs,
    o0: usize,
    inputs: &[&[u8]],
    mut outs: [&mut [u8]; G],
    start: usize,
    end: usize,
) {
    let words_end = start + (end - start) / 8 * 8;
    let mut j = start;
    while j < words_end {
        let mut acc = [0u64; G];
        for (i, input) in inputs.iter().enumerate() {
            let Some(x) = input[j..].first_chunk::<8>() else {
                return;
            };
            for (g, a) in acc.iter_mut().enumerate() {
                *a ^= lookup8(&MUL[c.coef(o0 + g, i) as usize], x);
            }
        }
        for (out, a) in outs.iter_mut().zip(acc) {
            out[j..j + 8].copy_from_slice(&a.to_le_bytes());
        }
        j += 8;
    }
    for j in words_end..end {
        let mut acc = [0u8; G];
        for (i, input) in inputs.iter().enumerate() {
            let x = input[j] as usize;
            for (g, a) in acc.iter_mut().enumerate() {
                *a ^= MUL[c.coef(o0 + g, i) as usize][x];
            }
        }
        for (out, a) in outs.iter_mut().zip(acc) {
            out[j] = a;
        }
    }
}

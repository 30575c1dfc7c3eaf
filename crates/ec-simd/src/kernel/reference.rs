//! The reference kernel: the textbook definition, one byte at a time through
//! the logarithm tables. Slow and obviously correct; every other kernel is
//! tested against it.

use super::{Coeffs, checked_len};
use crate::gf;

/// `outputs[o][j] = XOR over i of M[o][i] * inputs[i][j]`.
pub(crate) fn apply(c: &Coeffs, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) {
    let Some(len) = checked_len(c, inputs, outputs) else {
        return;
    };
    for (o, out) in outputs.iter_mut().enumerate() {
        for j in 0..len {
            let mut acc = 0u8;
            for (i, input) in inputs.iter().enumerate() {
                acc ^= gf::mul(c.coef(o, i), input[j]);
            }
            out[j] = acc;
        }
    }
}

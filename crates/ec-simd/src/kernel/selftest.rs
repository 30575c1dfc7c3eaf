//! Start-up self-test: every kernel the CPU supports is run against the
//! reference kernel on fixed pseudo-random inputs (one seed, so every run
//! checks the same bytes) before it may be used.

use fastrand::Rng;

use super::{Coeffs, Kernel, Kind};
use crate::ReedSolomon;

/// `(inputs, outputs, length)`: single and many outputs (one group or several
/// passes), odd lengths that leave every possible kind of tail, and one shape
/// long and wide enough to cross a cache-blocking window.
const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (2, 1, 31),
    (3, 2, 33),
    (4, 4, 100),
    (5, 3, 255),
    (1, 7, 64),
    (10, 4, 1027),
    (17, 9, 131),
    (3, 11, 4099),
    (6, 16, 257),
    (40, 13, 4163),
    // Shards long enough to stream (see `walk::Plan`): the inputs in two
    // passes, the second adding to the outputs, in column windows.
    (9, 3, super::STREAM_LEN + 65),
];

/// Shapes longer than this are checked against the portable kernel, which
/// has no length-dependent path and passed against the reference on the
/// shorter shapes: the byte-at-a-time reference would cost the start-up
/// tens of milliseconds per kernel.
const REFERENCE_MAX_LEN: usize = 16 * 1024;

/// Runs the self-test for `kernel`; `Err` says what disagreed.
pub(super) fn run(kernel: Kernel) -> Result<(), String> {
    check_matrix_products(
        |rows, cols, coefs| kernel.expand(rows, cols, coefs),
        |c, i, o| kernel.apply(c, i, o),
    )?;
    check_coder(kernel)
}

/// Multiplies random matrices (with zero and one coefficients mixed in) by
/// random inputs with the kernel under test and with the reference kernel.
fn check_matrix_products(
    expand: impl Fn(usize, usize, Vec<u8>) -> Coeffs,
    apply: impl Fn(&Coeffs, &[&[u8]], &mut [&mut [u8]]),
) -> Result<(), String> {
    let mut rng = Rng::with_seed(0x5eed_0fec_51bd);
    for &(cols, rows, len) in SHAPES {
        let reference = Kernel {
            kind: if len > REFERENCE_MAX_LEN {
                Kind::Scalar
            } else {
                Kind::Reference
            },
        };
        let mut coefs = vec![0u8; rows * cols];
        rng.fill(&mut coefs);
        // Make sure the special coefficients 0 and 1 appear.
        coefs[0] = 1;
        if coefs.len() > 2 {
            coefs[1] = 0;
        }
        let mut inputs = vec![vec![0u8; len]; cols];
        for s in &mut inputs {
            rng.fill(s);
        }
        let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();

        let mut want = vec![vec![0u8; len]; rows];
        let mut want_refs: Vec<&mut [u8]> = want.iter_mut().map(Vec::as_mut_slice).collect();
        reference.apply(
            &reference.expand(rows, cols, coefs.clone()),
            &ins,
            &mut want_refs,
        );

        // Start from garbage: kernels must overwrite, not accumulate.
        let mut got = vec![vec![0xa5u8; len]; rows];
        let mut got_refs: Vec<&mut [u8]> = got.iter_mut().map(Vec::as_mut_slice).collect();
        apply(&expand(rows, cols, coefs), &ins, &mut got_refs);

        for (o, (g, w)) in got.iter().zip(&want).enumerate() {
            if let Some(pos) = g.iter().zip(w).position(|(a, b)| a != b) {
                return Err(format!(
                    "{cols} inputs x {rows} outputs, {len} bytes: output {o} differs at byte {pos}"
                ));
            }
        }
    }
    Ok(())
}

/// Encodes, then reconstructs all shards and only data shards, through the
/// public coder with this kernel, against the reference coder.
fn check_coder(kernel: Kernel) -> Result<(), String> {
    let reference = Kernel {
        kind: Kind::Reference,
    };
    let (k, m, len) = (6, 3, 333);
    let fail = |what: &str, e: crate::Error| format!("{what}: {e}");
    let rs = ReedSolomon::with_kernel(k, m, kernel).map_err(|e| fail("coder", e))?;
    let oracle = ReedSolomon::with_kernel(k, m, reference).map_err(|e| fail("coder", e))?;

    let mut rng = Rng::with_seed(0xec51_3d00_0000_0001);
    let mut shards = vec![vec![0u8; len]; k + m];
    for s in &mut shards[..k] {
        rng.fill(s);
    }
    let mut expected = shards.clone();
    oracle
        .encode_shards(&mut expected)
        .map_err(|e| fail("reference encode", e))?;
    rs.encode_shards(&mut shards)
        .map_err(|e| fail("encode", e))?;
    if shards != expected {
        return Err(format!("{k}+{m} encode of {len} bytes differs"));
    }
    match rs.verify_shards(&shards) {
        Ok(true) => {}
        Ok(false) => return Err("verify rejected correct parity".into()),
        Err(e) => return Err(fail("verify", e)),
    }

    // Lose two data shards and one parity shard, then all parity's worth of data.
    for lost in [[0usize, 4, 7], [1, 2, 5]] {
        let mut present = [true; 9];
        for &l in &lost {
            present[l] = false;
            shards[l].fill(0x5a);
        }
        rs.reconstruct(&mut shards, &present)
            .map_err(|e| fail("reconstruct", e))?;
        if shards != expected {
            return Err(format!("{k}+{m} reconstruct after losing {lost:?} differs"));
        }
        for &l in &lost {
            shards[l].fill(0x5a);
        }
        rs.reconstruct_data(&mut shards, &present)
            .map_err(|e| fail("reconstruct_data", e))?;
        for (i, s) in shards.iter().enumerate() {
            let ok = if i < k || present[i] {
                *s == expected[i]
            } else {
                s.iter().all(|&b| b == 0x5a)
            };
            if !ok {
                return Err(format!(
                    "{k}+{m} reconstruct_data after losing {lost:?}: shard {i} wrong"
                ));
            }
        }
        shards.clone_from(&expected);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_and_reference_pass() {
        run(Kernel { kind: Kind::Scalar }).unwrap();
        run(Kernel {
            kind: Kind::Reference,
        })
        .unwrap();
    }

    #[test]
    fn a_wrong_kernel_is_caught() {
        let scalar = Kernel { kind: Kind::Scalar };
        // Wrong only in the last byte of odd-length outputs, as a broken
        // tail would be.
        let err = check_matrix_products(
            |r, c, coefs| scalar.expand(r, c, coefs),
            |c, i, o| {
                scalar.apply(c, i, o);
                for out in o.iter_mut() {
                    if out.len() % 2 == 1
                        && let Some(b) = out.last_mut()
                    {
                        *b ^= 1;
                    }
                }
            },
        )
        .unwrap_err();
        assert!(err.contains("differs"), "{err}");
    }
}

//! Arithmetic in GF(2^8) with the field polynomial x^8 + x^4 + x^3 + x^2 + 1
//! (0x11d), the field klauspost/reedsolomon and MinIO use.
//!
//! Everything here is computed at compile time from first principles: the
//! powers of the generator 2 give the exponent and logarithm tables, and the
//! full 256 x 256 product table (used by the portable kernel) is derived from
//! those.

/// The field polynomial, including the x^8 term.
pub(crate) const POLY: u16 = 0x11d;

/// `EXP[i] = 2^i`. Doubled in length (510 entries used) so that
/// `EXP[LOG[a] + LOG[b]]` needs no reduction modulo 255.
pub(crate) static EXP: [u8; 512] = build_exp();

/// `LOG[a]` is the `i` in `0..255` with `2^i = a`; `LOG[0]` is meaningless (0).
pub(crate) static LOG: [u8; 256] = build_log();

/// `MUL[a][b] = a * b`: one 256-byte row per coefficient, indexed by the data
/// byte. 64 KiB, shared by every portable-kernel multiplication.
pub(crate) static MUL: [[u8; 256]; 256] = build_mul();

const fn build_exp() -> [u8; 512] {
    let mut exp = [0u8; 512];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 255 {
        exp[i] = x as u8;
        exp[i + 255] = x as u8;
        x <<= 1;
        if x & 0x100 != 0 {
            x ^= POLY;
        }
        i += 1;
    }
    exp
}

const fn build_log() -> [u8; 256] {
    let exp = build_exp();
    let mut log = [0u8; 256];
    let mut i = 0;
    while i < 255 {
        log[exp[i] as usize] = i as u8;
        i += 1;
    }
    log
}

const fn build_mul() -> [[u8; 256]; 256] {
    let exp = build_exp();
    let log = build_log();
    let mut table = [[0u8; 256]; 256];
    let mut a = 1;
    while a < 256 {
        let la = log[a] as usize;
        let mut b = 1;
        while b < 256 {
            table[a][b] = exp[la + log[b] as usize];
            b += 1;
        }
        a += 1;
    }
    table
}

/// Product of two field elements, through the logarithm tables.
#[inline]
pub(crate) fn mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        0
    } else {
        EXP[LOG[a as usize] as usize + LOG[b as usize] as usize]
    }
}

/// Multiplicative inverse; `None` for zero.
#[inline]
pub(crate) fn inv(a: u8) -> Option<u8> {
    if a == 0 {
        None
    } else {
        Some(EXP[255 - LOG[a as usize] as usize])
    }
}

/// `a` raised to the power `n`, with `0^0 = 1` (the convention that makes
/// the first column of the Vandermonde matrix all ones).
pub(crate) fn pow(a: u8, n: usize) -> u8 {
    if n == 0 {
        return 1;
    }
    if a == 0 {
        return 0;
    }
    EXP[(LOG[a as usize] as usize * n) % 255]
}

/// The split-nibble tables of multiplication by `c`: bytes `0..16` hold
/// `c * n` and bytes `16..32` hold `c * (n << 4)` for `n` in `0..16`, so
/// `c * x = lo[x & 15] ^ hi[x >> 4]` (multiplication distributes over XOR).
pub(crate) fn nibble_tables(c: u8) -> [u8; 32] {
    let row = &MUL[c as usize];
    let mut t = [0u8; 32];
    for n in 0..16 {
        t[n] = row[n];
        t[16 + n] = row[n << 4];
    }
    t
}

/// The 8 x 8 bit matrix of multiplication by `c`, in the operand layout of
/// the x86 `GF2P8AFFINEQB` instruction.
///
/// Multiplication by a constant is linear over GF(2): bit `k` of the input
/// contributes `c * 2^k`. The instruction computes output bit `i` as the
/// parity of `x AND (byte 7 - i of the matrix)`, so byte `7 - i` must have
/// bit `k` set exactly when bit `i` of `c * 2^k` is set.
pub(crate) fn affine_matrix(c: u8) -> u64 {
    let mut m = 0u64;
    for i in 0..8 {
        let mut row = 0u8;
        for k in 0..8 {
            if (mul(c, 1 << k) >> i) & 1 == 1 {
                row |= 1 << k;
            }
        }
        m |= u64::from(row) << (8 * (7 - i));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Carry-less "Russian peasant" multiplication, independent of the tables.
    fn slow_mul(mut a: u8, mut b: u8) -> u8 {
        let mut p = 0u8;
        while b != 0 {
            if b & 1 == 1 {
                p ^= a;
            }
            let carry = a & 0x80 != 0;
            a <<= 1;
            if carry {
                a ^= (POLY & 0xff) as u8;
            }
            b >>= 1;
        }
        p
    }

    #[test]
    fn tables_agree_with_shift_and_add() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                let want = slow_mul(a, b);
                assert_eq!(mul(a, b), want, "{a} * {b}");
                assert_eq!(MUL[a as usize][b as usize], want, "MUL[{a}][{b}]");
            }
        }
    }

    #[test]
    fn generator_has_full_order() {
        let mut seen = [false; 256];
        for &e in &EXP[..255] {
            assert!(!seen[e as usize], "2 is not a generator");
            seen[e as usize] = true;
        }
        assert!(!seen[0]);
    }

    #[test]
    fn inverse_and_pow() {
        assert_eq!(inv(0), None);
        for a in 1..=255u8 {
            assert_eq!(mul(a, inv(a).unwrap()), 1, "inverse of {a}");
        }
        for a in 0..=255u8 {
            let mut acc = 1u8;
            for n in 0..300 {
                assert_eq!(pow(a, n), acc, "{a}^{n}");
                acc = slow_mul(acc, a);
            }
        }
    }

    #[test]
    fn nibble_tables_multiply() {
        for c in 0..=255u8 {
            let t = nibble_tables(c);
            for x in 0..=255u8 {
                let got = t[(x & 15) as usize] ^ t[16 + (x >> 4) as usize];
                assert_eq!(got, slow_mul(c, x), "{c} * {x}");
            }
        }
    }

    /// Software model of GF2P8AFFINEQB with a zero constant.
    fn affine(m: u64, x: u8) -> u8 {
        let mut out = 0u8;
        for i in 0..8 {
            let row = (m >> (8 * (7 - i))) as u8;
            if (row & x).count_ones() % 2 == 1 {
                out |= 1 << i;
            }
        }
        out
    }

    #[test]
    fn affine_matrix_multiplies() {
        for c in 0..=255u8 {
            let m = affine_matrix(c);
            for x in 0..=255u8 {
                assert_eq!(affine(m, x), slow_mul(c, x), "{c} * {x}");
            }
        }
    }
}

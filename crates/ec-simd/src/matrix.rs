//! Small dense matrices over GF(2^8): building the encoding matrix and
//! inverting the square sub-matrices that decoding needs.

use crate::gf;

/// A row-major `rows x cols` matrix of field elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Matrix {
    rows: usize,
    cols: usize,
    data: Vec<u8>,
}

impl Matrix {
    pub(crate) fn zero(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            data: vec![0; rows * cols],
        }
    }

    pub(crate) fn identity(n: usize) -> Self {
        let mut m = Self::zero(n, n);
        for i in 0..n {
            m.set(i, i, 1);
        }
        m
    }

    /// The `rows x cols` Vandermonde matrix with entry `r^c` (and `0^0 = 1`).
    pub(crate) fn vandermonde(rows: usize, cols: usize) -> Self {
        let mut m = Self::zero(rows, cols);
        for r in 0..rows {
            for c in 0..cols {
                // `rows <= 256`, so every row index is a distinct field element.
                m.set(r, c, gf::pow(r as u8, c));
            }
        }
        m
    }

    pub(crate) fn get(&self, r: usize, c: usize) -> u8 {
        self.data[r * self.cols + c]
    }

    pub(crate) fn set(&mut self, r: usize, c: usize, v: u8) {
        self.data[r * self.cols + c] = v;
    }

    pub(crate) fn row(&self, r: usize) -> &[u8] {
        &self.data[r * self.cols..(r + 1) * self.cols]
    }

    /// The row-major entries.
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.data
    }

    /// A new matrix made of the given rows of `self`, in that order.
    pub(crate) fn select_rows(&self, rows: impl IntoIterator<Item = usize>) -> Self {
        let mut data = Vec::new();
        let mut n = 0;
        for r in rows {
            data.extend_from_slice(self.row(r));
            n += 1;
        }
        Self {
            rows: n,
            cols: self.cols,
            data,
        }
    }

    /// Matrix product `self * rhs`; `None` if the shapes do not fit.
    pub(crate) fn mul(&self, rhs: &Self) -> Option<Self> {
        if self.cols != rhs.rows {
            return None;
        }
        let mut out = Self::zero(self.rows, rhs.cols);
        for r in 0..self.rows {
            for k in 0..self.cols {
                let a = self.get(r, k);
                if a == 0 {
                    continue;
                }
                let mul_row = &gf::MUL[a as usize];
                let rhs_row = rhs.row(k);
                let out_row = &mut out.data[r * rhs.cols..(r + 1) * rhs.cols];
                for (o, &b) in out_row.iter_mut().zip(rhs_row) {
                    *o ^= mul_row[b as usize];
                }
            }
        }
        Some(out)
    }

    /// Inverse by Gauss-Jordan elimination; `None` if not square or singular.
    pub(crate) fn invert(&self) -> Option<Self> {
        if self.rows != self.cols {
            return None;
        }
        let n = self.rows;
        let mut a = self.clone();
        let mut inv = Self::identity(n);
        for col in 0..n {
            // Find a pivot at or below the diagonal and move it up.
            let pivot = (col..n).find(|&r| a.get(r, col) != 0)?;
            if pivot != col {
                a.swap_rows(pivot, col);
                inv.swap_rows(pivot, col);
            }
            // Scale the pivot row so the pivot becomes 1.
            let scale = gf::inv(a.get(col, col))?;
            a.scale_row(col, scale);
            inv.scale_row(col, scale);
            // Clear the column everywhere else.
            for r in 0..n {
                if r == col {
                    continue;
                }
                let f = a.get(r, col);
                if f != 0 {
                    a.add_scaled_row(r, col, f);
                    inv.add_scaled_row(r, col, f);
                }
            }
        }
        Some(inv)
    }

    fn swap_rows(&mut self, x: usize, y: usize) {
        for c in 0..self.cols {
            self.data.swap(x * self.cols + c, y * self.cols + c);
        }
    }

    fn scale_row(&mut self, r: usize, f: u8) {
        let t = &gf::MUL[f as usize];
        for v in &mut self.data[r * self.cols..(r + 1) * self.cols] {
            *v = t[*v as usize];
        }
    }

    /// `row[dst] ^= f * row[src]`.
    fn add_scaled_row(&mut self, dst: usize, src: usize, f: u8) {
        let t = &gf::MUL[f as usize];
        for c in 0..self.cols {
            let v = t[self.get(src, c) as usize];
            self.data[dst * self.cols + c] ^= v;
        }
    }
}

/// The systematic encoding matrix of klauspost/reedsolomon's default
/// constructor: the `total x data` Vandermonde matrix times the inverse of its
/// top `data x data` square, so the top rows are the identity.
pub(crate) fn encoding_matrix(data: usize, total: usize) -> Option<Matrix> {
    let v = Matrix::vandermonde(total, data);
    let top = v.select_rows(0..data);
    v.mul(&top.invert()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_square_is_identity() {
        for (k, m) in [(1, 1), (4, 2), (10, 4), (17, 3), (128, 128), (255, 1)] {
            let e = encoding_matrix(k, k + m).unwrap();
            assert_eq!(e.select_rows(0..k), Matrix::identity(k), "{k}+{m}");
        }
    }

    #[test]
    fn known_parity_rows() {
        // klauspost's 4+2 default matrix has parity rows
        // [27 28 18 20] and [28 27 20 18] (as documented by many ports).
        let e = encoding_matrix(4, 6).unwrap();
        assert_eq!(e.row(4), &[27, 28, 18, 20]);
        assert_eq!(e.row(5), &[28, 27, 20, 18]);
    }

    #[test]
    fn inverse_round_trip() {
        let e = encoding_matrix(6, 10).unwrap();
        // Every choice of 6 rows out of 10 must be invertible (MDS).
        for mask in 0u32..1024 {
            if mask.count_ones() != 6 {
                continue;
            }
            let rows: Vec<usize> = (0..10).filter(|r| mask >> r & 1 == 1).collect();
            let s = e.select_rows(rows.iter().copied());
            let inv = s.invert().expect("square subset must be invertible");
            assert_eq!(s.mul(&inv).unwrap(), Matrix::identity(6));
            assert_eq!(inv.mul(&s).unwrap(), Matrix::identity(6));
        }
    }

    #[test]
    fn singular_is_detected() {
        let mut m = Matrix::zero(3, 3);
        m.set(0, 0, 1);
        m.set(1, 1, 1);
        assert!(m.invert().is_none());
        assert!(Matrix::zero(2, 3).invert().is_none());
        assert!(Matrix::zero(2, 3).mul(&Matrix::zero(2, 3)).is_none());
    }
}

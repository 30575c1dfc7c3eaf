//! Kernel handles and dispatch: the coefficient tables each kernel
//! multiplies with, and the call into the kernel a handle names.
//!
//! A kernel computes `outputs = M x inputs` over GF(2^8) for a coefficient
//! matrix `M` (parity rows when encoding, rows of an inverted matrix when
//! reconstructing), one byte column at a time. A [`Kernel`] handle can only be
//! obtained from `detect`, after the CPU was found to support the kernel and
//! the kernel passed its start-up self-test against the reference kernel,
//! which is what makes calling the `#[target_feature]` code sound.

use std::fmt;

use crate::gf;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod detect;
#[cfg(target_arch = "x86_64")]
mod gfni;
#[cfg(target_arch = "aarch64")]
mod neon;
pub(crate) mod reference;
pub(crate) mod scalar;
mod selftest;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod walk;

/// The most shards a GF(2^8) code can have.
pub(crate) const MAX_SHARDS: usize = 256;

/// Shards at least this long do not stay in the core's caches between two
/// calls (one is a quarter of the 1 MiB L2 of current x86 server cores, and
/// a call touches at least three), so the x86 kernels stream them from L3
/// or memory and walk them as `walk::Plan` says.
pub(crate) const STREAM_LEN: usize = 256 * 1024;

/// The kernels this crate knows, whatever the target, best first.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Kind {
    GfniAvx512,
    Avx512,
    GfniAvx2,
    Avx2,
    Neon,
    Scalar,
    Reference,
}

/// How a kernel wants each coefficient expanded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum TableFormat {
    /// Only the coefficient bytes (reference and portable kernels).
    Plain,
    /// 32 bytes per coefficient: the split-nibble product tables.
    Nibble,
    /// 128 bytes per coefficient: the split-nibble tables, each repeated in
    /// four 16-byte lanes so a 512-bit load needs no broadcast.
    NibbleX4,
    /// 8 bytes per coefficient: the GF2P8AFFINEQB bit matrix.
    Affine,
}

impl Kind {
    const fn name(self) -> &'static str {
        match self {
            Self::Reference => "reference",
            Self::Scalar => "scalar",
            Self::Avx2 => "avx2",
            Self::Avx512 => "avx512",
            Self::GfniAvx2 => "gfni-avx2",
            Self::GfniAvx512 => "gfni-avx512",
            Self::Neon => "neon",
        }
    }

    const fn format(self) -> TableFormat {
        match self {
            Self::Reference | Self::Scalar => TableFormat::Plain,
            Self::Avx2 | Self::Neon => TableFormat::Nibble,
            Self::Avx512 => TableFormat::NibbleX4,
            Self::GfniAvx2 | Self::GfniAvx512 => TableFormat::Affine,
        }
    }
}

/// A handle on one multiplication kernel that this host can run.
///
/// The only ways to get one are [`Kernel::detect`], [`Kernel::supported`] and
/// [`Kernel::from_name`], each of which checks the CPU and the kernel's
/// self-test first; [`Kernel::detection_report`] says what they found.
///
/// | name | instructions |
/// |---|---|
/// | `gfni-avx512` | `vgf2p8affineqb` on zmm (GFNI + AVX-512F/BW) |
/// | `avx512` | split-nibble `vpshufb` on zmm (AVX-512F/BW) |
/// | `gfni-avx2` | `vgf2p8affineqb` on ymm (GFNI + AVX2) |
/// | `avx2` | split-nibble `vpshufb` on ymm |
/// | `neon` | split-nibble `tbl` (aarch64) |
/// | `scalar` | portable, 256-entry product table per coefficient |
/// | `reference` | textbook log/exp, byte at a time (the test oracle) |
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kernel {
    kind: Kind,
}

impl Kernel {
    /// The kernel's name, e.g. `"avx2"`.
    pub fn name(self) -> &'static str {
        self.kind.name()
    }

    /// Expands a row-major `rows x cols` coefficient matrix into the tables
    /// this kernel multiplies with.
    pub(crate) fn expand(self, rows: usize, cols: usize, coefs: Vec<u8>) -> Coeffs {
        debug_assert_eq!(coefs.len(), rows * cols);
        let expanded: Vec<u8> = match self.kind.format() {
            TableFormat::Plain => Vec::new(),
            TableFormat::Nibble => {
                let mut t = Vec::with_capacity(rows * cols * 32);
                for i in 0..cols {
                    for o in 0..rows {
                        t.extend_from_slice(&gf::nibble_tables(coefs[o * cols + i]));
                    }
                }
                t
            }
            TableFormat::NibbleX4 => {
                let mut t = Vec::with_capacity(rows * cols * 128);
                for i in 0..cols {
                    for o in 0..rows {
                        let n = gf::nibble_tables(coefs[o * cols + i]);
                        for half in [&n[..16], &n[16..]] {
                            for _ in 0..4 {
                                t.extend_from_slice(half);
                            }
                        }
                    }
                }
                t
            }
            TableFormat::Affine => {
                let mut t = Vec::with_capacity(rows * cols * 8);
                for i in 0..cols {
                    for o in 0..rows {
                        t.extend_from_slice(&gf::affine_matrix(coefs[o * cols + i]).to_le_bytes());
                    }
                }
                t
            }
        };
        let mut lines = vec![Line([0; 64]); expanded.len().div_ceil(64)];
        for (line, chunk) in lines.iter_mut().zip(expanded.chunks(64)) {
            line.0[..chunk.len()].copy_from_slice(chunk);
        }
        Coeffs {
            rows,
            cols,
            coefs: coefs.into_boxed_slice(),
            expanded: lines.into_boxed_slice(),
            kernel: self,
        }
    }

    /// `outputs[o] = sum_i M[o][i] * inputs[i]` for the matrix `c`.
    ///
    /// Callers guarantee `inputs.len() == c.cols`, `outputs.len() == c.rows`
    /// and equal slice lengths; if that is violated nothing is written (and
    /// debug builds panic), so memory safety never depends on it.
    pub(crate) fn apply(self, c: &Coeffs, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) {
        debug_assert_eq!(c.kernel, self, "tables expanded for another kernel");
        if c.kernel != self {
            return;
        }
        match self.kind {
            Kind::Reference => reference::apply(c, inputs, outputs),
            Kind::Scalar => scalar::apply(c, inputs, outputs),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `Kernel` of this kind exists only after
            // `detect` (`Kind::availability`) confirmed the CPU has AVX2.
            Kind::Avx2 => unsafe { avx2::apply(c, inputs, outputs) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, AVX-512F and AVX-512BW were detected.
            Kind::Avx512 => unsafe { avx512::apply(c, inputs, outputs) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, GFNI and AVX2 were detected.
            Kind::GfniAvx2 => unsafe { gfni::apply_ymm(c, inputs, outputs) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, GFNI, AVX-512F and AVX-512BW were detected.
            Kind::GfniAvx512 => unsafe { gfni::apply_zmm(c, inputs, outputs) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: as above, NEON was detected.
            Kind::Neon => unsafe { neon::apply(c, inputs, outputs) },
            // Kinds of another architecture are never constructed here.
            #[allow(unreachable_patterns)]
            _ => scalar::apply(c, inputs, outputs),
        }
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Kernel").field(&self.name()).finish()
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A coefficient matrix together with the tables one kernel needs for it.
pub(crate) struct Coeffs {
    rows: usize,
    cols: usize,
    /// Row-major coefficients.
    coefs: Box<[u8]>,
    /// Kernel-specific expansion, laid out input-major: the entry of
    /// `(row o, column i)` is number `i * rows + o`, so one input's entries
    /// for a group of consecutive outputs are contiguous.
    /// Stored in 64-byte aligned lines so that no table load (up to 64
    /// bytes, at offsets that are multiples of its size) splits a cache line.
    expanded: Box<[Line]>,
    kernel: Kernel,
}

/// One cache line of expanded tables.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

impl Coeffs {
    #[cfg(target_arch = "aarch64")]
    #[inline]
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    #[cfg(target_arch = "aarch64")]
    #[inline]
    pub(crate) fn cols(&self) -> usize {
        self.cols
    }

    #[inline]
    pub(crate) fn coef(&self, row: usize, col: usize) -> u8 {
        self.coefs[row * self.cols + col]
    }

    /// Heap bytes held, for the decode cache's budget.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.coefs.len() + self.expanded.len() * 64
    }

    /// Start of the expanded tables, for the vector kernels' loads.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[inline]
    fn table_ptr(&self) -> *const u8 {
        self.expanded.as_ptr().cast()
    }

    /// Bytes from the start of the expanded table to entry `(row, col)`, for
    /// entries of `size` bytes.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[inline]
    fn entry_offset(&self, row: usize, col: usize, size: usize) -> usize {
        (col * self.rows + row) * size
    }
}

/// The common length of all shards of a kernel call, or `None` if the call
/// breaks the kernel's preconditions (wrong counts, unequal lengths).
#[inline]
pub(crate) fn checked_len(c: &Coeffs, inputs: &[&[u8]], outputs: &[&mut [u8]]) -> Option<usize> {
    if inputs.len() != c.cols || outputs.len() != c.rows || c.cols == 0 {
        debug_assert!(false, "kernel called with wrong shard counts");
        return None;
    }
    let len = inputs[0].len();
    let ok = inputs.iter().all(|s| s.len() == len) && outputs.iter().all(|s| s.len() == len);
    debug_assert!(ok, "kernel called with unequal shard lengths");
    ok.then_some(len)
}

//! Kernels and their selection: the only place in the crate that asks what
//! the CPU can do.
//!
//! A kernel computes `outputs = M x inputs` over GF(2^8) for a coefficient
//! matrix `M` (parity rows when encoding, rows of an inverted matrix when
//! reconstructing), one byte column at a time. A [`Kernel`] handle can only be
//! obtained from this module, after the CPU was found to support the kernel
//! and the kernel passed its start-up self-test against the reference kernel,
//! which is what makes calling the `#[target_feature]` code sound.

use std::fmt;
use std::sync::OnceLock;

use crate::Error;
use crate::gf;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod gfni;
#[cfg(target_arch = "aarch64")]
mod neon;
pub(crate) mod reference;
pub(crate) mod scalar;
mod selftest;

/// The most shards a GF(2^8) code can have.
pub(crate) const MAX_SHARDS: usize = 256;

/// The kernels this crate knows, whatever the target.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Kind {
    Reference,
    Scalar,
    Avx2,
    Avx512,
    GfniAvx2,
    GfniAvx512,
    Neon,
}

/// Every kernel, best first: the order [`Kernel::detect`] tries them in.
const PREFERENCE: [Kind; 7] = [
    Kind::GfniAvx512,
    Kind::Avx512,
    Kind::GfniAvx2,
    Kind::Avx2,
    Kind::Neon,
    Kind::Scalar,
    Kind::Reference,
];

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

    /// `Err` with the reason if the kernel is disabled by a cargo feature or
    /// the host cannot run it. This is the crate's only CPU detection.
    fn availability(self) -> Result<(), KernelStatus> {
        let disabled = match self {
            Self::Avx2 if cfg!(feature = "no_avx2") => Some("disabled by cargo feature no_avx2"),
            Self::GfniAvx2 if cfg!(feature = "no_avx2") => {
                Some("disabled by cargo feature no_avx2")
            }
            Self::GfniAvx2 | Self::GfniAvx512 if cfg!(feature = "no_gfni") => {
                Some("disabled by cargo feature no_gfni")
            }
            Self::Avx512 | Self::GfniAvx512 if cfg!(feature = "no_avx512") => {
                Some("disabled by cargo feature no_avx512")
            }
            Self::Neon if cfg!(feature = "no_neon") => Some("disabled by cargo feature no_neon"),
            _ => None,
        };
        if let Some(why) = disabled {
            return Err(KernelStatus::Disabled(why));
        }
        match self.missing_cpu_feature() {
            None => Ok(()),
            Some(why) => Err(KernelStatus::Unsupported(why)),
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn missing_cpu_feature(self) -> Option<&'static str> {
        use std::arch::is_x86_feature_detected as has;
        let need: &[(&str, bool)] = match self {
            Self::Reference | Self::Scalar => &[],
            Self::Avx2 => &[("avx2", has!("avx2"))],
            Self::Avx512 => &[("avx512f", has!("avx512f")), ("avx512bw", has!("avx512bw"))],
            Self::GfniAvx2 => &[("avx2", has!("avx2")), ("gfni", has!("gfni"))],
            Self::GfniAvx512 => &[
                ("avx512f", has!("avx512f")),
                ("avx512bw", has!("avx512bw")),
                ("gfni", has!("gfni")),
            ],
            Self::Neon => return Some("aarch64 only"),
        };
        need.iter().find(|(_, ok)| !ok).map(|(f, _)| match *f {
            "avx2" => "CPU lacks avx2",
            "avx512f" => "CPU lacks avx512f",
            "avx512bw" => "CPU lacks avx512bw",
            _ => "CPU lacks gfni",
        })
    }

    #[cfg(target_arch = "aarch64")]
    fn missing_cpu_feature(self) -> Option<&'static str> {
        match self {
            Self::Reference | Self::Scalar => None,
            Self::Neon => {
                if std::arch::is_aarch64_feature_detected!("neon") {
                    None
                } else {
                    Some("CPU lacks neon")
                }
            }
            _ => Some("x86_64 only"),
        }
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn missing_cpu_feature(self) -> Option<&'static str> {
        match self {
            Self::Reference | Self::Scalar => None,
            Self::Neon => Some("aarch64 only"),
            _ => Some("x86_64 only"),
        }
    }
}

/// A handle on one multiplication kernel that this host can run.
///
/// The only ways to get one are [`Kernel::detect`], [`Kernel::supported`] and
/// [`Kernel::from_name`], each of which checks the CPU and the kernel's
/// self-test first.
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

/// Outcome of one kernel's start-up check; see [`Kernel::self_test_report`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelStatus {
    /// The host runs it and it agrees with the reference kernel.
    Passed,
    /// The host runs it but it disagreed with the reference kernel; it is
    /// never used. The text says on which input.
    Failed(String),
    /// The host cannot run it (missing CPU feature or other architecture).
    Unsupported(&'static str),
    /// Removed by one of the `no_*` cargo features.
    Disabled(&'static str),
}

impl fmt::Display for KernelStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Passed => f.write_str("passed self-test"),
            Self::Failed(why) => write!(f, "failed self-test: {why}"),
            Self::Unsupported(why) => write!(f, "unsupported: {why}"),
            Self::Disabled(why) => write!(f, "{why}"),
        }
    }
}

/// One line of [`Kernel::self_test_report`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelReport {
    /// The kernel's name, as accepted by [`Kernel::from_name`].
    pub name: &'static str,
    /// Whether it can be used here, and if not why.
    pub status: KernelStatus,
}

struct Detection {
    report: Vec<KernelReport>,
    supported: Vec<Kernel>,
    best: Kernel,
}

static DETECTION: OnceLock<Detection> = OnceLock::new();

fn detection() -> &'static Detection {
    DETECTION.get_or_init(|| {
        let mut report = Vec::with_capacity(PREFERENCE.len());
        let mut supported = Vec::new();
        for kind in PREFERENCE {
            let status = match kind.availability() {
                Err(status) => status,
                // The CPU supports it, so running it for the self-test is sound.
                Ok(()) => match selftest::run(Kernel { kind }) {
                    Ok(()) => {
                        supported.push(Kernel { kind });
                        KernelStatus::Passed
                    }
                    Err(why) => KernelStatus::Failed(why),
                },
            };
            report.push(KernelReport {
                name: kind.name(),
                status,
            });
        }
        let best = choose(&supported);
        Detection {
            report,
            supported,
            best,
        }
    })
}

/// The first passing kernel in preference order (`supported` is already in
/// that order); the reference kernel if, absurdly, none passed.
fn choose(supported: &[Kernel]) -> Kernel {
    supported.first().copied().unwrap_or(Kernel {
        kind: Kind::Reference,
    })
}

impl Kernel {
    /// The fastest kernel this host runs that passed its self-test. The
    /// detection and self-tests run once per process (on first use).
    pub fn detect() -> Kernel {
        detection().best
    }

    /// Every kernel this host can run and that passed its self-test, fastest
    /// first. Always contains `scalar` and `reference`.
    pub fn supported() -> &'static [Kernel] {
        &detection().supported
    }

    /// The kernel called `name` (see the table on [`Kernel`]), if this host
    /// can run it and it passed its self-test.
    ///
    /// This is the hook for a configuration switch; the crate itself never
    /// reads the environment.
    pub fn from_name(name: &str) -> Result<Kernel, Error> {
        let Some(kind) = PREFERENCE.iter().copied().find(|k| k.name() == name) else {
            return Err(Error::UnknownKernel(name.to_owned()));
        };
        let det = detection();
        if let Some(k) = det.supported.iter().find(|k| k.kind == kind) {
            return Ok(*k);
        }
        let reason = det
            .report
            .iter()
            .find(|r| r.name == kind.name())
            .map_or_else(|| "not available".to_owned(), |r| r.status.to_string());
        Err(Error::KernelUnavailable {
            kernel: kind.name(),
            reason,
        })
    }

    /// The names of all kernels this crate knows, best first, whether or not
    /// this host runs them.
    pub fn names() -> [&'static str; 7] {
        PREFERENCE.map(Kind::name)
    }

    /// Why each known kernel is or is not usable here, best first; meant to
    /// be logged once at start-up.
    pub fn self_test_report() -> &'static [KernelReport] {
        &detection().report
    }

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
            // `availability()` confirmed the CPU has AVX2.
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
    #[inline]
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

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

/// Splits `rows` outputs into the fewest groups of at most `gmax`, as evenly
/// as possible: yields `(first row, group size)`.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) fn groups(rows: usize, gmax: usize) -> impl Iterator<Item = (usize, usize)> {
    let n = rows.div_ceil(gmax.max(1));
    let (base, extra) = rows
        .checked_div(n)
        .zip(rows.checked_rem(n))
        .unwrap_or((0, 0));
    (0..n).scan(0usize, move |next, idx| {
        let g = base + usize::from(idx < extra);
        let first = *next;
        *next += g;
        Some((first, g))
    })
}

/// Column window for cache blocking: when the outputs need several passes
/// over the inputs, each pass covers only this many bytes of every input, so
/// the later passes find them in cache. One pass needs no blocking.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) fn window(cols: usize, rows: usize, gmax: usize, len: usize, align: usize) -> usize {
    /// Bytes of input to keep hot across the passes (well inside L2).
    const BUDGET: usize = 128 * 1024;
    if rows <= gmax {
        return len.max(1);
    }
    let w = (BUDGET / cols.max(1)).clamp(2048, 32 * 1024);
    (w - w % align).max(align)
}

/// Whether a kernel should walk the columns from the last to the first.
///
/// x86 cores first compare a load with the older stores still in flight on
/// the low 12 address bits ("4K aliasing"): a load whose bytes share those
/// bits with a pending store waits as if it depended on it. A kernel stores
/// `step` bytes of every output just before it loads the next `step` bytes
/// of every input. Walking up, those loads collide with the stores when an
/// output starts a little *above* an input modulo 4096
/// (`0 < (out - in) mod 4096 < 2 * step`); walking down, when it starts a
/// little below. Shards allocated one after another (parity after data, each
/// allocation a few bytes more than a multiple of 4 KiB) put every parity
/// shard a little above every data shard, so encoding walking up collides on
/// every step while reconstructing the data (outputs below) does not:
/// measured on Zen 5 with 16 bytes between consecutive shards, encode 8+4 at
/// MinIO's shape took 70 us walking up and 63 us walking down, reconstruct
/// the reverse. This counts the (input, output) pairs that would collide
/// either way and picks the direction with fewer; the order of the columns
/// does not change the result.
///
/// Short shards are always walked up: the count is not worth it there.
#[cfg(target_arch = "x86_64")]
pub(crate) fn descending(inputs: &[&[u8]], outputs: &[&mut [u8]], step: usize) -> bool {
    /// Shards shorter than this are walked up without looking.
    const MIN_LEN: usize = 2048;
    if inputs.first().is_none_or(|s| s.len() < MIN_LEN) {
        return false;
    }
    walk_down(
        inputs.iter().map(|s| s.as_ptr() as usize),
        outputs.iter().map(|s| s.as_ptr() as usize),
        step,
    )
}

/// [`descending`] for each output group of [`groups`]`(outputs.len(), gmax)`:
/// bit `n` of the result is set if group `n` should walk down. `step` gives
/// the bytes per step of a group of the given size, `max_inputs` the most
/// inputs with which the kernel may walk down at all.
#[cfg(target_arch = "x86_64")]
pub(crate) fn down_groups(
    inputs: &[&[u8]],
    outputs: &[&mut [u8]],
    gmax: usize,
    max_inputs: usize,
    step: impl Fn(usize) -> usize,
) -> u64 {
    if inputs.len() > max_inputs {
        return 0;
    }
    groups(outputs.len(), gmax)
        .take(64)
        .enumerate()
        .fold(0, |bits, (n, (o0, g))| {
            let down = descending(inputs, &outputs[o0..o0 + g], step(g));
            bits | u64::from(down) << n
        })
}

/// [`descending`] on the shards' start addresses.
#[cfg(target_arch = "x86_64")]
fn walk_down(
    inputs: impl Iterator<Item = usize> + Clone,
    outputs: impl Iterator<Item = usize>,
    step: usize,
) -> bool {
    /// The address bits the early load-store comparison uses.
    const PAGE: usize = 4096;
    let reach = 2 * step;
    let (mut pairs, mut up, mut down) = (0usize, 0usize, 0usize);
    for o in outputs {
        for i in inputs.clone() {
            let d = o.wrapping_sub(i) % PAGE;
            pairs += 1;
            if d != 0 && d < reach {
                up += 1;
            } else if d > PAGE - reach {
                down += 1;
            }
        }
    }
    // Walking down is not free everywhere (see the zmm kernels' input
    // limits) and gained nothing measurable where only a few pairs collide
    // (gfni-avx512 12+4 with a third of the pairs colliding ran 15% slower
    // downwards), so it has to avoid collisions on at least half the pairs.
    2 * up >= pairs && down < up
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn direction_avoids_near_stores() {
        const P: usize = 4096;
        let ins = [10 * P, 13 * P];
        // Outputs just above every input modulo 4 KiB (parity allocated
        // after the data): walk down.
        assert!(walk_down(
            ins.into_iter(),
            [40 * P + 16, 45 * P + 48].into_iter(),
            64
        ));
        // Just below (the reconstruct case): walk up.
        assert!(!walk_down(
            ins.into_iter(),
            [2 * P - 16, 4 * P - 64].into_iter(),
            64
        ));
        // Far apart either way, or at the same page offset: walk up.
        assert!(!walk_down(ins.into_iter(), [40 * P + 1024].into_iter(), 64));
        assert!(!walk_down(ins.into_iter(), [40 * P].into_iter(), 64));
        // Within reach only for a wider step.
        assert!(!walk_down(ins.into_iter(), [40 * P + 200].into_iter(), 64));
        assert!(walk_down(ins.into_iter(), [40 * P + 200].into_iter(), 256));
        // Collisions on fewer than half of the pairs: walk up anyway.
        assert!(!walk_down(
            ins.into_iter(),
            [P + 32, 40 * P + 1024, 41 * P + 1024].into_iter(),
            64
        ));
        // Mixed: down only if it collides less.
        assert!(!walk_down(
            ins.into_iter(),
            [P + 32, 2 * P - 32].into_iter(),
            64
        ));
        assert!(walk_down(
            ins.into_iter(),
            [P + 32, 2 * P + 32, 3 * P - 32].into_iter(),
            64
        ));
        // Short shards: walk up without looking.
        let (a, mut b) = (vec![0u8; 4 * P], vec![0u8; 4 * P]);
        let (a, b) = (&a[..], &mut b[..]);
        let short_in = [&a[..64]];
        assert!(!descending(&short_in, &[&mut b[16..80]], 64));
    }

    #[test]
    fn groups_are_balanced_and_cover() {
        for rows in 0..40 {
            for gmax in 1..10 {
                let gs: Vec<_> = groups(rows, gmax).collect();
                assert_eq!(gs.len(), rows.div_ceil(gmax));
                let mut next = 0;
                for &(first, g) in &gs {
                    assert_eq!(first, next);
                    assert!(g >= 1 && g <= gmax, "rows {rows} gmax {gmax}: {gs:?}");
                    next += g;
                }
                assert_eq!(next, rows);
                let min = gs.iter().map(|g| g.1).min().unwrap_or(0);
                let max = gs.iter().map(|g| g.1).max().unwrap_or(0);
                assert!(max - min <= 1);
            }
        }
    }

    #[test]
    fn choose_falls_back_in_order() {
        let k = |kind| Kernel { kind };
        assert_eq!(choose(&[k(Kind::Avx2), k(Kind::Scalar)]).kind, Kind::Avx2);
        assert_eq!(choose(&[]).kind, Kind::Reference);
    }

    #[test]
    fn detection_is_consistent() {
        let report = Kernel::self_test_report();
        assert_eq!(report.len(), PREFERENCE.len());
        for r in report {
            eprintln!("{:12} {}", r.name, r.status);
            let found = Kernel::from_name(r.name);
            match &r.status {
                KernelStatus::Passed => assert_eq!(found.unwrap().name(), r.name),
                KernelStatus::Failed(why) => {
                    panic!("kernel {} failed its self-test: {why}", r.name)
                }
                _ => assert!(matches!(found, Err(Error::KernelUnavailable { .. }))),
            }
        }
        let supported = Kernel::supported();
        assert!(supported.iter().any(|k| k.name() == "scalar"));
        assert!(supported.iter().any(|k| k.name() == "reference"));
        assert_eq!(Kernel::detect(), supported[0]);
        assert!(matches!(
            Kernel::from_name("sse9"),
            Err(Error::UnknownKernel(_))
        ));
    }
}

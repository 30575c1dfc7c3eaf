//! AVX2 kernel: split-nibble multiplication with `vpshufb`.
//!
//! `c * x = lo_c[x & 15] ^ hi_c[x >> 4]`, where `lo_c` and `hi_c` are the
//! 16-entry product tables of the coefficient; `vpshufb` looks up 32 bytes at
//! once in a 16-byte table repeated in both 128-bit lanes (loaded with
//! `vbroadcasti128`).
//!
//! Loop structure: the outputs are split into groups of at most [`GMAX`];
//! for a group, 64 bytes of every output are accumulated in registers while
//! the inputs are read once (so each input load and nibble split serves the
//! whole group) and then stored once. [`super::walk::Plan`] orders the
//! work: when several groups are needed, or the shards stream from memory
//! and the inputs are taken in several passes (each adding to the outputs),
//! the columns are processed in windows so the later passes find their data
//! in cache. The columns are walked upwards, or downwards when that avoids
//! 4K aliasing between the stores of one step and the loads of the next
//! (see [`super::walk::descending`]). Bytes past the last 32-byte vector go
//! through the portable kernel.
//!
//! Cost per 32-byte vector: per input one load, one shift and two ANDs; per
//! (input, output) pair two table loads (broadcast from 16 bytes, a pure load
//! on current x86 cores), two `vpshufb` and two `vpxor` (the first input
//! initialises the accumulators instead). On a core with two shuffle pipes
//! and four vector ALUs (Zen 4/5) the pairs bound the loop at one cycle per
//! pair and vector: shuffles and XORs saturate the ALUs together. Larger
//! groups with one vector per output (up to 8 fit the registers) were
//! measured: they run out of load bandwidth (two table loads per pair and
//! vector) and were no faster, so groups stay at 4 x 2 vectors. Groups of
//! one and two outputs, where the nibble split of each input weighs more
//! and the loop is bound by moving bytes, take 4 and 3 vectors per step
//! (the most the registers hold): 4+2 with 1 MiB shards encodes 20% faster
//! than with 2 on Zen 4.

use core::arch::x86_64::*;

use super::walk::{Entry, Pass, Plan};
use super::{Coeffs, checked_len, scalar};

/// Vector width in bytes.
const V: usize = 32;
/// Largest group of outputs kept in registers: 2 x GMAX accumulators plus
/// four nibble vectors, the mask and two tables fit the 16 ymm registers.
const GMAX: usize = 4;

/// `outputs = M x inputs`, see [`super::Kernel::apply`].
#[target_feature(enable = "avx2")]
pub(super) fn apply(c: &Coeffs, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) {
    let Some(len) = checked_len(c, inputs, outputs) else {
        return;
    };
    let vec_len = len - len % V;
    if vec_len > 0 {
        let plan = Plan::new(inputs, outputs, vec_len, GMAX, 2 * V, usize::MAX, |_| 2 * V);
        plan.run(inputs, outputs, vec_len, |p, ins, outs| {
            // SAFETY: this function's caller guarantees AVX2; `checked_len`
            // proved every input and output holds `len >= vec_len` bytes and
            // `Plan::run` passes sub-slices of them with `p.end <= vec_len`;
            // its windows are multiples of 64 bytes, so `p.start..p.end` is a multiple of
            // 32 bytes; `outs` has `p.g <= GMAX` entries and `ins`
            // `p.ni >= 1`, with `p.o0 + p.g <= rows` and
            // `p.i0 + p.ni <= cols`; the table was expanded in nibble format
            // for this matrix (`Kernel::apply` checked `c.kernel`).
            unsafe {
                match (p.g, p.first) {
                    (1, true) => group::<1, 4, false>(c, p, ins, outs),
                    (2, true) => group::<2, 3, false>(c, p, ins, outs),
                    (3, true) => group::<3, 2, false>(c, p, ins, outs),
                    (_, true) => group::<4, 2, false>(c, p, ins, outs),
                    (1, false) => group::<1, 4, true>(c, p, ins, outs),
                    (2, false) => group::<2, 3, true>(c, p, ins, outs),
                    (3, false) => group::<3, 2, true>(c, p, ins, outs),
                    (_, false) => group::<4, 2, true>(c, p, ins, outs),
                }
            }
        });
    }
    if vec_len < len {
        scalar::apply_range(c, inputs, outputs, vec_len, len);
    }
}

/// Loads the low- and high-nibble tables of one coefficient, each repeated in
/// both lanes.
///
/// # Safety
/// `t` must be valid for reading 32 bytes.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn tables(t: *const u8) -> (__m256i, __m256i) {
    // SAFETY: the caller guarantees 32 readable bytes at `t`; unaligned
    // loads have no alignment requirement.
    unsafe {
        (
            _mm256_broadcastsi128_si256(_mm_loadu_si128(t.cast())),
            _mm256_broadcastsi128_si256(_mm_loadu_si128(t.add(16).cast())),
        )
    }
}

/// Products of one input vector's nibbles with the tables of entry `t`.
#[target_feature(enable = "avx2")]
#[inline]
fn mul(tl: __m256i, th: __m256i, lo: __m256i, hi: __m256i) -> __m256i {
    _mm256_xor_si256(_mm256_shuffle_epi8(tl, lo), _mm256_shuffle_epi8(th, hi))
}

/// One pass `p` of `G` outputs (`outs`, rows `p.o0..p.o0 + G`) over the
/// inputs `inputs` (columns `p.i0..`) and bytes `p.start..p.end`, `U`
/// vectors per output at a time, from the last column to the first if
/// `p.down` (see [`super::walk::descending`]); with `ACC` the products are
/// added to the outputs instead of overwriting them.
///
/// # Safety
/// - every slice of `inputs` and `outs` is at least `p.end` bytes long and
///   `p.end - p.start` is a multiple of 32;
/// - `inputs.len() >= 1`, `p.i0 + inputs.len() <= c.cols()`,
///   `outs.len() == G`, `p.o0 + G <= c.rows()`;
/// - `c` holds nibble tables (32 bytes per coefficient).
#[target_feature(enable = "avx2")]
unsafe fn group<const G: usize, const U: usize, const ACC: bool>(
    c: &Coeffs,
    p: &Pass,
    inputs: &[&[u8]],
    outs: &mut [&mut [u8]],
) {
    let (start, end, down) = (p.start, p.end, p.down);
    let at = p.entry();
    let dst: [*mut u8; G] = core::array::from_fn(|g| outs[g].as_mut_ptr());
    let n = (end - start) / (U * V);
    let full = start + n * U * V;
    if down {
        // SAFETY: `full..end` is a multiple of 32 inside `start..end`.
        unsafe { tail::<G, ACC>(c, at, inputs, &dst, full, end) };
    }
    // One loop for both directions, so the step is inlined once.
    let (mut off, stride) = if down {
        (full.wrapping_sub(U * V), (U * V).wrapping_neg())
    } else {
        (start, U * V)
    };
    for _ in 0..n {
        // SAFETY: the `n` offsets are `start + t * U * 32` for `t < n`, so
        // `off + U * 32 <= full <= end`; the rest is the caller's contract.
        unsafe { step::<G, U, ACC>(c, at, inputs, &dst, off) };
        off = off.wrapping_add(stride);
    }
    if !down {
        // SAFETY: as above.
        unsafe { tail::<G, ACC>(c, at, inputs, &dst, full, end) };
    }
}

/// Bytes `from..end` (fewer than `U` vectors) of the `G` outputs at `dst`,
/// one vector at a time.
///
/// # Safety
/// As for [`group`], with `start <= from <= end`, `end - from` a multiple of
/// 32, and `dst` the outputs' pointers.
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn tail<const G: usize, const ACC: bool>(
    c: &Coeffs,
    at: Entry,
    inputs: &[&[u8]],
    dst: &[*mut u8; G],
    from: usize,
    end: usize,
) {
    let mut off = from;
    while off < end {
        // SAFETY: `off + 32 <= end` since `end - off` is a multiple of 32.
        unsafe { step::<G, 1, ACC>(c, at, inputs, dst, off) };
        off += V;
    }
}

/// Bytes `off..off + U * 32` of the `G` outputs at `dst`.
///
/// # Safety
/// As for [`group`], with `off + U * 32 <= end`, and `dst` the outputs'
/// pointers.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn step<const G: usize, const U: usize, const ACC: bool>(
    c: &Coeffs,
    at: Entry,
    inputs: &[&[u8]],
    dst: &[*mut u8; G],
    off: usize,
) {
    let mask = _mm256_set1_epi8(0x0f);
    let tab = c.table_ptr();
    let mut acc = [[_mm256_setzero_si256(); U]; G];
    if ACC {
        for (g, a) in acc.iter_mut().enumerate() {
            for (u, v) in a.iter_mut().enumerate() {
                // SAFETY: `off + U * 32 <= outs[g].len()`.
                *v = unsafe { _mm256_loadu_si256(dst[g].add(off + u * V).cast_const().cast()) };
            }
        }
    }
    for (i, input) in inputs.iter().enumerate() {
        let src = input.as_ptr();
        let mut lo = [_mm256_setzero_si256(); U];
        let mut hi = [_mm256_setzero_si256(); U];
        for u in 0..U {
            // SAFETY: `off + U * 32 <= input.len()`.
            let x = unsafe { _mm256_loadu_si256(src.add(off + u * V).cast()) };
            lo[u] = _mm256_and_si256(x, mask);
            hi[u] = _mm256_and_si256(_mm256_srli_epi64::<4>(x), mask);
        }
        let first = c.entry_offset(at.o0, at.i0 + i, 32);
        for (g, a) in acc.iter_mut().enumerate() {
            // SAFETY: entry `(o0 + g, i0 + i)` lies inside the
            // `rows * cols * 32`-byte table since `o0 + g < rows` and
            // `i0 + i < cols`.
            let (tl, th) = unsafe { tables(tab.add(first + 32 * g)) };
            for u in 0..U {
                let p = mul(tl, th, lo[u], hi[u]);
                // The first input of a first pass initialises the
                // accumulators.
                a[u] = if i == 0 && !ACC {
                    p
                } else {
                    _mm256_xor_si256(a[u], p)
                };
            }
        }
    }
    for (g, a) in acc.iter().enumerate() {
        for (u, v) in a.iter().enumerate() {
            // SAFETY: `off + U * 32 <= outs[g].len()`, and `dst[g]` comes
            // from a `&mut` slice that nothing else references.
            unsafe { _mm256_storeu_si256(dst[g].add(off + u * V).cast(), *v) };
        }
    }
}

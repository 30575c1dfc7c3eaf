//! How the vector kernels walk the shards: output rows split into balanced
//! groups, inputs split into passes when the shards stream from memory,
//! column windows for cache blocking, and the walking direction that avoids
//! 4K aliasing between an output's stores and the next inputs' loads. The
//! order never changes the result, only the time.

#[cfg(target_arch = "x86_64")]
use super::STREAM_LEN;
/// Inputs read in one pass over a column window when streaming.
///
/// Each input and each output of a pass is one stream of cache lines from
/// L3 or memory. On Zen 4 (gfni-avx512, 4 MiB shards) one pass over 8
/// inputs into 4 outputs moves about 45 GB/s, over 12 or 16 inputs about
/// 25 and 19 GB/s: beyond a dozen streams the prefetchers no longer keep
/// up. Passes of at most 8 inputs into at most 4 outputs, the later passes
/// over a column window adding to outputs the first left in L1/L2, encode
/// 16+4 1.3x faster there (`examples/layout.rs`).
#[cfg(target_arch = "x86_64")]
pub(crate) const STREAM_INPUTS: usize = 8;
/// Outputs of one group when streaming (see [`STREAM_INPUTS`]).
#[cfg(target_arch = "x86_64")]
pub(crate) const STREAM_OUTPUTS: usize = 4;

/// How one kernel call walks the shards: output groups of at most `gmax`,
/// input passes of at most `imax`, column windows of `win` bytes, and the
/// groups that walk down.
#[cfg(target_arch = "x86_64")]
pub(crate) struct Plan {
    gmax: usize,
    imax: usize,
    win: usize,
    downs: u64,
}

/// One pass of a [`Plan`]: outputs `o0..o0 + g` over inputs `i0..i0 + ni`
/// and bytes `start..end`; `first` if it is the first pass over these outputs
/// and bytes (it overwrites them; later passes add to them).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pass {
    pub(crate) o0: usize,
    pub(crate) g: usize,
    pub(crate) i0: usize,
    pub(crate) ni: usize,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) down: bool,
    pub(crate) first: bool,
}

#[cfg(target_arch = "x86_64")]
impl Pass {
    /// Where the pass's coefficients start.
    pub(crate) fn entry(&self) -> Entry {
        Entry {
            o0: self.o0,
            i0: self.i0,
        }
    }
}

/// Where a pass's coefficients start: output row `o0`, input column `i0`
/// (the pass's first input is column `i0` of the matrix).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub(crate) o0: usize,
    pub(crate) i0: usize,
}

#[cfg(target_arch = "x86_64")]
impl Plan {
    /// The plan for `outputs = M x inputs` over the first `len` bytes, by a
    /// kernel with output groups of at most `gmax` whose windows must be
    /// multiples of `align`; `step(g)` is the bytes per step of a group of
    /// `g` outputs and `down_max_inputs` the most inputs with which it may
    /// walk down (see [`down_groups`]).
    ///
    /// Short shards (in cache): all inputs in one pass, the kernel's groups,
    /// and the direction [`descending`] picks. Streaming shards (at least
    /// [`STREAM_LEN`]): passes of at most [`STREAM_INPUTS`] inputs into groups
    /// of at most [`STREAM_OUTPUTS`] outputs, in column windows, and always
    /// upwards, the direction the hardware prefetchers follow: walking down
    /// there costs up to half the speed (also when only the steps within
    /// 4 KiB tiles walk down), far more than the 4K aliasing it avoids.
    pub(crate) fn new(
        inputs: &[&[u8]],
        outputs: &[&mut [u8]],
        len: usize,
        gmax: usize,
        align: usize,
        down_max_inputs: usize,
        step: impl Fn(usize) -> usize,
    ) -> Self {
        let (cols, rows) = (inputs.len(), outputs.len());
        if len >= STREAM_LEN {
            let gmax = gmax.min(STREAM_OUTPUTS);
            return Self {
                gmax,
                imax: STREAM_INPUTS,
                win: window(cols, rows, gmax, STREAM_INPUTS, len, align),
                downs: 0,
            };
        }
        Self {
            gmax,
            imax: usize::MAX,
            win: window(cols, rows, gmax, usize::MAX, len, align),
            downs: down_groups(inputs, outputs, gmax, down_max_inputs, step),
        }
    }

    /// The passes over bytes `0..len` of `rows` outputs and `cols` inputs,
    /// in order: window by window, group by group, and the input passes of
    /// a group one after the other.
    fn passes(&self, rows: usize, cols: usize, len: usize) -> impl Iterator<Item = Pass> {
        let (gmax, imax, win, downs) = (self.gmax, self.imax, self.win.max(1), self.downs);
        (0..len.div_ceil(win)).flat_map(move |w| {
            let (start, end) = (w * win, ((w + 1) * win).min(len));
            groups(rows, gmax)
                .enumerate()
                .flat_map(move |(n, (o0, g))| {
                    let down = n < 64 && downs >> n & 1 == 1;
                    groups(cols, imax)
                        .enumerate()
                        .map(move |(p, (i0, ni))| Pass {
                            o0,
                            g,
                            i0,
                            ni,
                            start,
                            end,
                            down,
                            first: p == 0,
                        })
                })
        })
    }

    /// Runs every pass over bytes `0..len` of the shards in order:
    /// `kernel(pass, ins, outs)` computes the pass's outputs `outs`
    /// (`pass.g` of them, rows `pass.o0..`) over its inputs `ins`
    /// (`pass.ni`, columns `pass.i0..`) and bytes `pass.start..pass.end`.
    pub(crate) fn run(
        &self,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
        len: usize,
        mut kernel: impl FnMut(&Pass, &[&[u8]], &mut [&mut [u8]]),
    ) {
        let (rows, cols) = (outputs.len(), inputs.len());
        for p in self.passes(rows, cols, len) {
            kernel(
                &p,
                &inputs[p.i0..p.i0 + p.ni],
                &mut outputs[p.o0..p.o0 + p.g],
            );
        }
    }
}

/// Splits `rows` outputs into the fewest groups of at most `gmax`, as evenly
/// as possible: yields `(first row, group size)`.
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

/// Column window for cache blocking: when the outputs need several groups
/// (each a pass over the inputs) or the inputs several passes (each adding
/// to the outputs), each pass covers only this many bytes of every shard,
/// so the later passes find them in cache. One pass needs no blocking.
pub(crate) fn window(
    cols: usize,
    rows: usize,
    gmax: usize,
    imax: usize,
    len: usize,
    align: usize,
) -> usize {
    /// Bytes of input to keep hot across the passes (well inside L2).
    const BUDGET: usize = 128 * 1024;
    if rows <= gmax && cols <= imax {
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
/// on Zen 5 with 16 bytes between consecutive shards, encode 8+4 at MinIO's
/// shape takes 70 us walking up and 63 us walking down, reconstruct the
/// reverse (the `layout` example measures it:
/// `cargo run --release -p ec-simd --example layout -- KERNEL 8 4 131072 16 -16`).
/// This counts the (input, output) pairs that would collide either way and
/// picks the direction with fewer; the order of the columns does not change
/// the result.
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
fn down_groups(
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
    // limits) and gains nothing measurable where only a few pairs collide
    // (gfni-avx512 12+4 with a third of the pairs colliding runs 15% slower
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

    /// Every byte of every output is computed from every input exactly
    /// once: the first pass over an output window overwrites it, the later
    /// ones (the rest of the inputs, in order, right after it) add to it;
    /// windows go up; streaming shapes keep to 8 inputs and 4 outputs a
    /// pass and never walk down.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn passes_cover_every_output_byte_from_every_input_once() {
        let shapes = [(4, 2), (8, 4), (9, 3), (12, 4), (16, 4), (16, 16), (3, 9)];
        for (cols, rows) in shapes {
            for len in [1000, STREAM_LEN - 1, STREAM_LEN, STREAM_LEN + 65] {
                let ins: Vec<Vec<u8>> = (0..cols).map(|_| vec![0u8; len]).collect();
                let mut outs: Vec<Vec<u8>> = (0..rows).map(|_| vec![0u8; len]).collect();
                let ins: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
                let outs: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
                let plan = Plan::new(&ins, &outs, len, 6, 64, 16, |g| 64 * g);
                let streaming = len >= STREAM_LEN;
                // For each output row, each byte: the inputs summed so far.
                let mut seen = vec![vec![0u32; len]; rows];
                let passes: Vec<Pass> = plan.passes(rows, cols, len).collect();
                let mut last_start = 0;
                for (n, p) in passes.iter().enumerate() {
                    let what = format!("{cols}+{rows}, {len} bytes, pass {n}: {p:?}");
                    assert!(p.start < p.end && p.end <= len, "{what}");
                    assert!(p.start >= last_start, "windows go up: {what}");
                    last_start = p.start;
                    assert!(p.g >= 1 && p.o0 + p.g <= rows, "{what}");
                    assert!(p.ni >= 1 && p.i0 + p.ni <= cols, "{what}");
                    assert_eq!(p.first, p.i0 == 0, "{what}");
                    if streaming {
                        assert!(p.ni <= STREAM_INPUTS && p.g <= STREAM_OUTPUTS, "{what}");
                        assert!(!p.down, "{what}");
                    } else {
                        assert_eq!((p.i0, p.ni), (0, cols), "one pass in cache: {what}");
                    }
                    if !p.first {
                        // The group's previous pass is the one just before.
                        let q = passes[n - 1];
                        assert_eq!(
                            (q.o0, q.g, q.start, q.end, q.i0 + q.ni),
                            (p.o0, p.g, p.start, p.end, p.i0),
                            "{what}"
                        );
                    }
                    for row in &mut seen[p.o0..p.o0 + p.g] {
                        for b in &mut row[p.start..p.end] {
                            assert_eq!(*b as usize, p.i0, "{what}");
                            *b += p.ni as u32;
                        }
                    }
                }
                assert!(
                    seen.iter().flatten().all(|&b| b as usize == cols),
                    "{cols}+{rows}, {len} bytes: some byte is not computed from every input once"
                );
            }
        }
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
}

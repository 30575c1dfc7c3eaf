//! The AVX-512 kernel's multi-stream path.
//!
//! One stream's state is four 256-bit vectors, so a zmm register holds the
//! same vector of two independent streams (stream A in the low 256 bits,
//! stream B in the high 256 bits). Every operation of a packet update is
//! lane-local (`vpaddq`, `vpmuludq`, `vpsrlq`, `vpxorq`) or 128-bit-lane
//! local (`vpshufb` for the zipper merge), so a zmm update advances both
//! streams at once with the same instruction count as one ymm update. On top
//! of that, `P` such register sets are interleaved to hide the multiply
//! latency: `2 * P` streams per call.
//!
//! A single stream cannot use the upper half (each packet depends on the
//! previous one, and the update is bound by latency, not width), so the
//! AVX-512 kernel's single-stream entry points are the AVX2 ones.

use core::arch::x86_64::*;

use crate::portable::{PACKET, State, ZIPPER};

/// The state of two streams in registers.
#[derive(Clone, Copy)]
struct Pair {
    v0: __m512i,
    v1: __m512i,
    mul0: __m512i,
    mul1: __m512i,
}

/// Loads the same four-lane vector of two states into one zmm register.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
fn load_pair(a: &[u64; 4], b: &[u64; 4]) -> __m512i {
    // SAFETY: `a` and `b` are 32 readable bytes each; unaligned loads.
    let (lo, hi) = unsafe {
        (
            _mm256_loadu_si256(a.as_ptr().cast()),
            _mm256_loadu_si256(b.as_ptr().cast()),
        )
    };
    _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
}

/// Stores the two halves of a zmm register into two states.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
fn store_pair(a: &mut [u64; 4], b: &mut [u64; 4], v: __m512i) {
    // SAFETY: `a` and `b` are 32 writable bytes each; unaligned stores.
    unsafe {
        _mm256_storeu_si256(a.as_mut_ptr().cast(), _mm512_castsi512_si256(v));
        _mm256_storeu_si256(b.as_mut_ptr().cast(), _mm512_extracti64x4_epi64::<1>(v));
    }
}

impl Pair {
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
    #[inline]
    fn load(a: &State, b: &State) -> Self {
        Pair {
            v0: load_pair(&a.v0, &b.v0),
            v1: load_pair(&a.v1, &b.v1),
            mul0: load_pair(&a.mul0, &b.mul0),
            mul1: load_pair(&a.mul1, &b.mul1),
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
    #[inline]
    fn store(&self, a: &mut State, b: &mut State) {
        store_pair(&mut a.v0, &mut b.v0, self.v0);
        store_pair(&mut a.v1, &mut b.v1, self.v1);
        store_pair(&mut a.mul0, &mut b.mul0, self.mul0);
        store_pair(&mut a.mul1, &mut b.mul1, self.mul1);
    }
}

/// [`avx2::pin`](crate::avx2::pin) for a zmm register.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
fn pin(mut x: __m512i) -> __m512i {
    // SAFETY: the assembly is empty (a comment naming the register): it
    // reads and writes nothing but `x`'s register, touches no memory, stack
    // or flags.
    unsafe {
        core::arch::asm!(
            "/* {0} */",
            inout(zmm_reg) x,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    x
}

/// [`avx2::link`](crate::avx2::link) for zmm registers.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
fn link<const ZIPPER_LAST: bool>(
    v1: __m512i,
    packet: __m512i,
    mul0: __m512i,
    pending: __m512i,
) -> __m512i {
    let t = pin(_mm512_add_epi64(v1, packet));
    if ZIPPER_LAST {
        let t = pin(_mm512_add_epi64(t, mul0));
        pin(_mm512_add_epi64(t, pending))
    } else {
        let t = pin(_mm512_add_epi64(t, pending));
        pin(_mm512_add_epi64(t, mul0))
    }
}

/// The zipper permutation as a `vpshufb` control for all four 128-bit
/// blocks.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
fn zipper_mask() -> __m512i {
    // SAFETY: `ZIPPER` is 16 readable bytes; unaligned load.
    let z = unsafe { _mm_loadu_si128(ZIPPER.as_ptr().cast()) };
    _mm512_broadcast_i32x4(z)
}

/// Advances `2 * P` independent states by `packets` packets each: stream
/// `2j` and `2j + 1` share register set `j`. `states` and `data` must both
/// have `2 * P` entries, and every `data[i]` at least `packets * 32` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
pub(crate) fn lockstep<const P: usize, const ZIPPER_LAST: bool>(
    states: &mut [State],
    data: &[&[u8]],
    packets: usize,
) {
    assert_eq!(states.len(), 2 * P, "lockstep: wrong number of states");
    assert_eq!(data.len(), 2 * P, "lockstep: wrong number of inputs");
    let bytes = packets * PACKET;
    for d in data {
        assert!(d.len() >= bytes, "lockstep input shorter than its packets");
    }
    let zip = zipper_mask();
    let zero = _mm512_setzero_si512();
    let mut regs = [Pair {
        v0: zero,
        v1: zero,
        mul0: zero,
        mul1: zero,
    }; P];
    // Per pair, the `zipper(v0)` term not yet added to `v1` (see
    // `avx2::link`).
    let mut pending = [zero; P];
    let mut ptrs = [[core::ptr::null::<u8>(); 2]; P];
    for j in 0..P {
        regs[j] = Pair::load(&states[2 * j], &states[2 * j + 1]);
        ptrs[j] = [data[2 * j].as_ptr(), data[2 * j + 1].as_ptr()];
    }
    let mut off = 0;
    while off < bytes {
        for ((r, p), z) in regs.iter_mut().zip(ptrs.iter()).zip(pending.iter_mut()) {
            // SAFETY: `off + 32 <= bytes <= data[i].len()` for both streams
            // of the pair (asserted above); unaligned loads.
            let (lo, hi) = unsafe {
                (
                    _mm256_loadu_si256(p[0].add(off).cast()),
                    _mm256_loadu_si256(p[1].add(off).cast()),
                )
            };
            let a = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
            r.v1 = link::<ZIPPER_LAST>(r.v1, a, r.mul0, *z);
            let v0_hi = _mm512_srli_epi64::<32>(r.v0);
            r.mul0 = _mm512_xor_si512(r.mul0, _mm512_mul_epu32(r.v1, v0_hi));
            r.v0 = _mm512_add_epi64(r.v0, r.mul1);
            let v1_hi = _mm512_srli_epi64::<32>(r.v1);
            r.mul1 = _mm512_xor_si512(r.mul1, _mm512_mul_epu32(r.v0, v1_hi));
            r.v0 = _mm512_add_epi64(r.v0, _mm512_shuffle_epi8(r.v1, zip));
            *z = _mm512_shuffle_epi8(r.v0, zip);
        }
        off += PACKET;
    }
    for (j, (r, z)) in regs.iter_mut().zip(pending.iter()).enumerate() {
        r.v1 = _mm512_add_epi64(r.v1, *z);
        let (left, right) = states.split_at_mut(2 * j + 1);
        r.store(&mut left[2 * j], &mut right[0]);
    }
}

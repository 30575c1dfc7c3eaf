//! The AVX2 kernel.
//!
//! Each of the four state vectors (`v0`, `v1`, `mul0`, `mul1`: four 64-bit
//! lanes) lives in one ymm register for the whole input. Per 32-byte packet:
//! the 32x32->64 multiplies are `vpmuludq` (which reads the low half of each
//! lane, so `hi32(x)` is a 64-bit right shift), the zipper merge is one
//! `vpshufb` per vector (the permutation never crosses a 128-bit half, and
//! each 128-bit half holds one lane pair), and the finalisation permutation
//! is one `vpermd`.
//!
//! A single stream is bound by latency, not by width: the chain from one
//! packet's `v1` to the next one's runs through a multiply, a xor and two
//! adds, or through two shuffles and three adds. The packet loop evaluates
//! the sum that links two packets in the order that shortens that chain on
//! the CPU at hand (see [`link`]), pinned against LLVM's re-association; on
//! Zen 5 that is worth about 25% over the order LLVM picks.
//!
//! The multi-stream entry point interleaves independent states (2 or 3; a
//! fourth would not fit in the 16 ymm registers) so that the out-of-order
//! core overlaps their latency chains.
//!
//! Every function here requires AVX2; the dispatcher only calls them with a
//! kernel handle that was issued after runtime detection.

use core::arch::x86_64::*;

use crate::portable::{
    INIT0, INIT1, PACKET, ROUNDS_64, ROUNDS_128, ROUNDS_256, State, ZIPPER, digest64_from,
    digest128_from, digest256_from, tail_packet,
};

/// The state in registers.
#[derive(Clone, Copy)]
pub(crate) struct Regs {
    v0: __m256i,
    v1: __m256i,
    mul0: __m256i,
    mul1: __m256i,
}

/// The zipper permutation as a `vpshufb` control (same table in both
/// 128-bit halves).
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn zipper_mask() -> __m256i {
    let z = ZIPPER.map(|b| b as i8);
    _mm256_setr_epi8(
        z[0], z[1], z[2], z[3], z[4], z[5], z[6], z[7], z[8], z[9], z[10], z[11], z[12], z[13],
        z[14], z[15], z[0], z[1], z[2], z[3], z[4], z[5], z[6], z[7], z[8], z[9], z[10], z[11],
        z[12], z[13], z[14], z[15],
    )
}

/// An optimisation barrier for one register: the value passes through
/// unchanged, but LLVM cannot see through it, so sums computed before and
/// after it are not re-associated. Costs no instruction.
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn pin(mut x: __m256i) -> __m256i {
    // SAFETY: the assembly is empty (a comment naming the register): it
    // reads and writes nothing but `x`'s register, touches no memory, stack
    // or flags.
    unsafe {
        core::arch::asm!(
            "/* {0} */",
            inout(ymm_reg) x,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    x
}

/// The sum that links two packets, `v1 + packet + mul0 + pending` (where
/// `pending` is the last round's `zipper(v0)`), added in a fixed order.
///
/// Relative to `v1`, the packet is ready at once, `mul0` after a multiply and
/// a xor, `pending` after two shuffles and two adds. Which of the last two
/// arrives later depends on the core: with 2-cycle vector adds and shuffles
/// (AMD Zen 5) it is `pending`, so `((v1 + packet) + mul0) + pending`
/// (`ZIPPER_LAST`) is shortest, about 9 cycles per packet instead of 10;
/// with 1-cycle adds and shuffles (Zen 2-4, Intel) it is `mul0`, and
/// `((v1 + packet) + pending) + mul0` is shortest. LLVM re-associates integer
/// adds freely, so each partial sum is pinned with [`pin`]. The kernel
/// handle carries the choice, made once from the CPU model by the
/// detection module.
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn link<const ZIPPER_LAST: bool>(
    v1: __m256i,
    packet: __m256i,
    mul0: __m256i,
    pending: __m256i,
) -> __m256i {
    let t = pin(_mm256_add_epi64(v1, packet));
    if ZIPPER_LAST {
        let t = pin(_mm256_add_epi64(t, mul0));
        pin(_mm256_add_epi64(t, pending))
    } else {
        let t = pin(_mm256_add_epi64(t, pending));
        pin(_mm256_add_epi64(t, mul0))
    }
}

/// Loads four 64-bit lanes.
#[target_feature(enable = "avx2")]
#[inline]
fn load4(lanes: &[u64; 4]) -> __m256i {
    // SAFETY: `lanes` is 32 readable bytes; `loadu` has no alignment
    // requirement.
    unsafe { _mm256_loadu_si256(lanes.as_ptr().cast()) }
}

/// Stores four 64-bit lanes.
#[target_feature(enable = "avx2")]
#[inline]
fn store4(lanes: &mut [u64; 4], v: __m256i) {
    // SAFETY: `lanes` is 32 writable bytes; `storeu` has no alignment
    // requirement.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), v) }
}

impl Regs {
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn load(s: &State) -> Self {
        Regs {
            v0: load4(&s.v0),
            v1: load4(&s.v1),
            mul0: load4(&s.mul0),
            mul1: load4(&s.mul1),
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn store(&self, s: &mut State) {
        store4(&mut s.v0, self.v0);
        store4(&mut s.v1, self.v1);
        store4(&mut s.mul0, self.mul0);
        store4(&mut s.mul1, self.mul1);
    }

    /// The keyed initial state, computed in registers.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn keyed(key: &[u8; 32]) -> Self {
        // SAFETY: `key` is 32 readable bytes; `loadu` has no alignment
        // requirement. x86 is little-endian, so the lanes are the key's
        // little-endian words.
        let k = unsafe { _mm256_loadu_si256(key.as_ptr().cast()) };
        let mul0 = load4(&INIT0);
        let mul1 = load4(&INIT1);
        // Swap the 32-bit halves of every lane: a 32-bit rotation.
        let k_rot = _mm256_shuffle_epi32::<0b10_11_00_01>(k);
        Regs {
            v0: _mm256_xor_si256(mul0, k),
            v1: _mm256_xor_si256(mul1, k_rot),
            mul0,
            mul1,
        }
    }

    /// Mixes one packet `a` into the state.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn round(&mut self, a: __m256i, zip: __m256i) {
        self.v1 = _mm256_add_epi64(self.v1, _mm256_add_epi64(self.mul0, a));
        let v0_hi = _mm256_srli_epi64::<32>(self.v0);
        self.mul0 = _mm256_xor_si256(self.mul0, _mm256_mul_epu32(self.v1, v0_hi));
        self.v0 = _mm256_add_epi64(self.v0, self.mul1);
        let v1_hi = _mm256_srli_epi64::<32>(self.v1);
        self.mul1 = _mm256_xor_si256(self.mul1, _mm256_mul_epu32(self.v0, v1_hi));
        self.v0 = _mm256_add_epi64(self.v0, _mm256_shuffle_epi8(self.v1, zip));
        self.v1 = _mm256_add_epi64(self.v1, _mm256_shuffle_epi8(self.v0, zip));
    }

    /// Mixes all whole packets of `data` (its length must be a multiple of
    /// 32) into the state.
    ///
    /// The loop is [`round`](Self::round) re-associated for latency: the
    /// end of one round (`v1 += zipper(v0)`) and the start of the next
    /// (`v1 += mul0 + packet`) form one sum, evaluated by [`link`] in the
    /// order `ZIPPER_LAST` selects.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn absorb<const ZIPPER_LAST: bool>(&mut self, data: &[u8]) {
        debug_assert_eq!(data.len() % PACKET, 0);
        let zip = zipper_mask();
        let Regs {
            mut v0,
            mut v1,
            mut mul0,
            mut mul1,
        } = *self;
        // `v1` without the pending `zipper(v0)` term of the last round.
        let mut pending = _mm256_setzero_si256();
        for packet in data.chunks_exact(PACKET) {
            // SAFETY: `packet` is 32 readable bytes; unaligned load.
            let a = unsafe { _mm256_loadu_si256(packet.as_ptr().cast()) };
            v1 = link::<ZIPPER_LAST>(v1, a, mul0, pending);
            let v0_hi = _mm256_srli_epi64::<32>(v0);
            mul0 = _mm256_xor_si256(mul0, _mm256_mul_epu32(v1, v0_hi));
            v0 = _mm256_add_epi64(v0, mul1);
            let v1_hi = _mm256_srli_epi64::<32>(v1);
            mul1 = _mm256_xor_si256(mul1, _mm256_mul_epu32(v0, v1_hi));
            v0 = _mm256_add_epi64(v0, _mm256_shuffle_epi8(v1, zip));
            pending = _mm256_shuffle_epi8(v0, zip);
        }
        v1 = _mm256_add_epi64(v1, pending);
        *self = Regs { v0, v1, mul0, mul1 };
    }

    /// Tail (0..=31 bytes) and `rounds` finalisation rounds.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn finish(&mut self, tail: &[u8], rounds: usize) {
        let zip = zipper_mask();
        if !tail.is_empty() {
            let n = tail.len() as i64;
            self.v0 = _mm256_add_epi64(self.v0, _mm256_set1_epi64x((n << 32) + n));
            let left = _mm_cvtsi64_si128(n);
            let right = _mm_cvtsi64_si128(32 - n);
            self.v1 = _mm256_or_si256(
                _mm256_sll_epi32(self.v1, left),
                _mm256_srl_epi32(self.v1, right),
            );
            let p = tail_packet(tail);
            // SAFETY: `p` is 32 readable bytes; unaligned load.
            let a = unsafe { _mm256_loadu_si256(p.as_ptr().cast()) };
            self.round(a, zip);
        }
        // Lane order [2, 3, 0, 1] with the 32-bit halves of each lane
        // swapped, as 32-bit element indices.
        let perm = _mm256_setr_epi32(5, 4, 7, 6, 1, 0, 3, 2);
        for _ in 0..rounds {
            let p = _mm256_permutevar8x32_epi32(self.v0, perm);
            self.round(p, zip);
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn to_state(self) -> State {
        let mut s = State {
            v0: [0; 4],
            v1: [0; 4],
            mul0: [0; 4],
            mul1: [0; 4],
        };
        self.store(&mut s);
        s
    }
}

/// The keyed initial state.
#[target_feature(enable = "avx2")]
pub(crate) fn init(key: &[u8; 32]) -> State {
    Regs::keyed(key).to_state()
}

/// Mixes `data` (a multiple of 32 bytes) into `s`.
#[target_feature(enable = "avx2")]
pub(crate) fn update<const ZIPPER_LAST: bool>(s: &mut State, data: &[u8]) {
    let mut r = Regs::load(s);
    r.absorb::<ZIPPER_LAST>(data);
    r.store(s);
}

/// Tail and finalisation rounds on a copy of `s`.
#[target_feature(enable = "avx2")]
pub(crate) fn finish(s: &State, tail: &[u8], rounds: usize) -> State {
    let mut r = Regs::load(s);
    r.finish(tail, rounds);
    r.to_state()
}

/// One-shot: keyed state, all packets, tail and `rounds`.
#[target_feature(enable = "avx2")]
#[inline]
fn oneshot<const ZIPPER_LAST: bool>(key: &[u8; 32], data: &[u8], rounds: usize) -> State {
    let mut r = Regs::keyed(key);
    let whole = data.len() & !(PACKET - 1);
    r.absorb::<ZIPPER_LAST>(&data[..whole]);
    r.finish(&data[whole..], rounds);
    r.to_state()
}

/// One-shot HighwayHash-64.
#[target_feature(enable = "avx2")]
pub(crate) fn hash64<const ZIPPER_LAST: bool>(key: &[u8; 32], data: &[u8]) -> u64 {
    digest64_from(&oneshot::<ZIPPER_LAST>(key, data, ROUNDS_64))
}

/// One-shot HighwayHash-128.
#[target_feature(enable = "avx2")]
pub(crate) fn hash128<const ZIPPER_LAST: bool>(key: &[u8; 32], data: &[u8]) -> [u64; 2] {
    digest128_from(&oneshot::<ZIPPER_LAST>(key, data, ROUNDS_128))
}

/// One-shot HighwayHash-256.
#[target_feature(enable = "avx2")]
pub(crate) fn hash256<const ZIPPER_LAST: bool>(key: &[u8; 32], data: &[u8]) -> [u64; 4] {
    digest256_from(&oneshot::<ZIPPER_LAST>(key, data, ROUNDS_256))
}

/// Advances `N` independent states by `packets` packets each, interleaved.
/// `states` and `data` must both have `N` entries, and every `data[i]` at
/// least `packets * 32` bytes.
#[target_feature(enable = "avx2")]
pub(crate) fn lockstep<const N: usize, const ZIPPER_LAST: bool>(
    states: &mut [State],
    data: &[&[u8]],
    packets: usize,
) {
    assert_eq!(states.len(), N, "lockstep: wrong number of states");
    assert_eq!(data.len(), N, "lockstep: wrong number of inputs");
    let bytes = packets * PACKET;
    for d in data {
        assert!(d.len() >= bytes, "lockstep input shorter than its packets");
    }
    let zip = zipper_mask();
    let zero = _mm256_setzero_si256();
    let mut regs = [Regs {
        v0: zero,
        v1: zero,
        mul0: zero,
        mul1: zero,
    }; N];
    // Per stream, the `zipper(v0)` term not yet added to `v1` (see
    // `Regs::absorb` for the ordering).
    let mut pending = [zero; N];
    let mut ptrs = [core::ptr::null::<u8>(); N];
    for i in 0..N {
        regs[i] = Regs::load(&states[i]);
        ptrs[i] = data[i].as_ptr();
    }
    let mut off = 0;
    while off < bytes {
        for ((r, p), z) in regs.iter_mut().zip(ptrs.iter()).zip(pending.iter_mut()) {
            // SAFETY: `off + 32 <= bytes <= data[i].len()` (asserted above),
            // so the 32 bytes at `p + off` are readable; unaligned load.
            let a = unsafe { _mm256_loadu_si256(p.add(off).cast()) };
            r.v1 = link::<ZIPPER_LAST>(r.v1, a, r.mul0, *z);
            let v0_hi = _mm256_srli_epi64::<32>(r.v0);
            r.mul0 = _mm256_xor_si256(r.mul0, _mm256_mul_epu32(r.v1, v0_hi));
            r.v0 = _mm256_add_epi64(r.v0, r.mul1);
            let v1_hi = _mm256_srli_epi64::<32>(r.v1);
            r.mul1 = _mm256_xor_si256(r.mul1, _mm256_mul_epu32(r.v0, v1_hi));
            r.v0 = _mm256_add_epi64(r.v0, _mm256_shuffle_epi8(r.v1, zip));
            *z = _mm256_shuffle_epi8(r.v0, zip);
        }
        off += PACKET;
    }
    for ((r, s), z) in regs.iter_mut().zip(states.iter_mut()).zip(pending.iter()) {
        r.v1 = _mm256_add_epi64(r.v1, *z);
        r.store(s);
    }
}

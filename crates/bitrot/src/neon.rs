//! The NEON kernel (aarch64).
//!
//! A state vector of four 64-bit lanes is two q registers (lanes 0-1 and
//! lanes 2-3), so a state is eight registers. Per packet and per half: the
//! multiplies are `umull` on the narrowed halves (`xtn` gives the low 32 bits
//! of each lane, `shrn #32` the high ones), the zipper merge is one `tbl`
//! (the permutation is local to a lane pair, i.e. to one q register), and
//! the finalisation permutation is a register swap plus `rev64`.
//!
//! With 32 q registers, several states can be interleaved for the
//! multi-stream path.

use core::arch::aarch64::*;

use crate::portable::{
    PACKET, ROUNDS_64, ROUNDS_128, ROUNDS_256, State, ZIPPER, digest64_from, digest128_from,
    digest256_from, tail_packet,
};

/// Two q registers: lanes 0-1 and lanes 2-3.
#[derive(Clone, Copy)]
struct V4 {
    lo: uint64x2_t,
    hi: uint64x2_t,
}

/// The state in registers.
#[derive(Clone, Copy)]
struct Regs {
    v0: V4,
    v1: V4,
    mul0: V4,
    mul1: V4,
}

#[target_feature(enable = "neon")]
#[inline]
fn load4(lanes: &[u64; 4]) -> V4 {
    // SAFETY: `lanes` is four readable `u64`s, properly aligned.
    unsafe {
        V4 {
            lo: vld1q_u64(lanes.as_ptr()),
            hi: vld1q_u64(lanes.as_ptr().add(2)),
        }
    }
}

#[target_feature(enable = "neon")]
#[inline]
fn store4(lanes: &mut [u64; 4], v: V4) {
    // SAFETY: `lanes` is four writable `u64`s, properly aligned.
    unsafe {
        vst1q_u64(lanes.as_mut_ptr(), v.lo);
        vst1q_u64(lanes.as_mut_ptr().add(2), v.hi);
    }
}

/// Loads a 32-byte packet as four little-endian lanes (the crate only
/// builds this kernel for little-endian aarch64).
///
/// # Safety
/// `p` must point at 32 readable bytes.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn load_packet(p: *const u8) -> V4 {
    // SAFETY: the caller guarantees 32 readable bytes at `p`; byte loads
    // have no alignment requirement.
    unsafe {
        V4 {
            lo: vreinterpretq_u64_u8(vld1q_u8(p)),
            hi: vreinterpretq_u64_u8(vld1q_u8(p.add(16))),
        }
    }
}

#[target_feature(enable = "neon")]
#[inline]
fn zipper_table() -> uint8x16_t {
    // SAFETY: `ZIPPER` is 16 readable bytes.
    unsafe { vld1q_u8(ZIPPER.as_ptr()) }
}

#[target_feature(enable = "neon")]
#[inline]
fn zip(x: uint64x2_t, table: uint8x16_t) -> uint64x2_t {
    vreinterpretq_u64_u8(vqtbl1q_u8(vreinterpretq_u8_u64(x), table))
}

/// One half (two lanes) of a packet update.
#[target_feature(enable = "neon")]
#[inline]
fn half_round(
    v0: &mut uint64x2_t,
    v1: &mut uint64x2_t,
    mul0: &mut uint64x2_t,
    mul1: &mut uint64x2_t,
    a: uint64x2_t,
    table: uint8x16_t,
) {
    *v1 = vaddq_u64(*v1, vaddq_u64(*mul0, a));
    *mul0 = veorq_u64(*mul0, vmull_u32(vmovn_u64(*v1), vshrn_n_u64::<32>(*v0)));
    *v0 = vaddq_u64(*v0, *mul1);
    *mul1 = veorq_u64(*mul1, vmull_u32(vmovn_u64(*v0), vshrn_n_u64::<32>(*v1)));
    *v0 = vaddq_u64(*v0, zip(*v1, table));
    *v1 = vaddq_u64(*v1, zip(*v0, table));
}

/// Rotates every 32-bit half of both lanes left by `n` (1..=31): `ushl`
/// shifts left for positive counts and right for negative ones.
#[target_feature(enable = "neon")]
#[inline]
fn rotate_halves(x: uint64x2_t, n: i32) -> uint64x2_t {
    let w = vreinterpretq_u32_u64(x);
    let l = vshlq_u32(w, vdupq_n_s32(n));
    let r = vshlq_u32(w, vdupq_n_s32(n - 32));
    vreinterpretq_u64_u32(vorrq_u32(l, r))
}

/// Swaps the 32-bit halves of both lanes.
#[target_feature(enable = "neon")]
#[inline]
fn swap_halves(x: uint64x2_t) -> uint64x2_t {
    vreinterpretq_u64_u32(vrev64q_u32(vreinterpretq_u32_u64(x)))
}

impl Regs {
    #[target_feature(enable = "neon")]
    #[inline]
    fn load(s: &State) -> Self {
        Regs {
            v0: load4(&s.v0),
            v1: load4(&s.v1),
            mul0: load4(&s.mul0),
            mul1: load4(&s.mul1),
        }
    }

    #[target_feature(enable = "neon")]
    #[inline]
    fn store(&self, s: &mut State) {
        store4(&mut s.v0, self.v0);
        store4(&mut s.v1, self.v1);
        store4(&mut s.mul0, self.mul0);
        store4(&mut s.mul1, self.mul1);
    }

    #[target_feature(enable = "neon")]
    #[inline]
    fn round(&mut self, a: V4, table: uint8x16_t) {
        half_round(
            &mut self.v0.lo,
            &mut self.v1.lo,
            &mut self.mul0.lo,
            &mut self.mul1.lo,
            a.lo,
            table,
        );
        half_round(
            &mut self.v0.hi,
            &mut self.v1.hi,
            &mut self.mul0.hi,
            &mut self.mul1.hi,
            a.hi,
            table,
        );
    }

    #[target_feature(enable = "neon")]
    #[inline]
    fn absorb(&mut self, data: &[u8]) {
        debug_assert_eq!(data.len() % PACKET, 0);
        let table = zipper_table();
        for packet in data.chunks_exact(PACKET) {
            // SAFETY: `packet` is 32 readable bytes.
            let a = unsafe { load_packet(packet.as_ptr()) };
            self.round(a, table);
        }
    }

    #[target_feature(enable = "neon")]
    #[inline]
    fn finish(&mut self, tail: &[u8], rounds: usize) {
        let table = zipper_table();
        if !tail.is_empty() {
            let n = tail.len() as u64;
            let add = vdupq_n_u64((n << 32) + n);
            self.v0.lo = vaddq_u64(self.v0.lo, add);
            self.v0.hi = vaddq_u64(self.v0.hi, add);
            // Rotate every 32-bit half of v1 left by n (1..=31): `ushl`
            // shifts left for positive counts and right for negative ones.
            self.v1.lo = rotate_halves(self.v1.lo, n as i32);
            self.v1.hi = rotate_halves(self.v1.hi, n as i32);
            let p = tail_packet(tail);
            // SAFETY: `p` is 32 readable bytes.
            let a = unsafe { load_packet(p.as_ptr()) };
            self.round(a, table);
        }
        for _ in 0..rounds {
            // Lanes [2, 3, 0, 1], each with its 32-bit halves swapped.
            let p = V4 {
                lo: swap_halves(self.v0.hi),
                hi: swap_halves(self.v0.lo),
            };
            self.round(p, table);
        }
    }
}

/// Mixes `data` (a multiple of 32 bytes) into `s`.
#[target_feature(enable = "neon")]
pub(crate) fn update(s: &mut State, data: &[u8]) {
    let mut r = Regs::load(s);
    r.absorb(data);
    r.store(s);
}

/// Tail and finalisation rounds on a copy of `s`.
#[target_feature(enable = "neon")]
pub(crate) fn finish(s: &State, tail: &[u8], rounds: usize) -> State {
    let mut r = Regs::load(s);
    r.finish(tail, rounds);
    let mut out = *s;
    r.store(&mut out);
    out
}

#[target_feature(enable = "neon")]
#[inline]
fn oneshot(key: &[u8; 32], data: &[u8], rounds: usize) -> State {
    let mut s = State::new(key);
    let mut r = Regs::load(&s);
    let whole = data.len() & !(PACKET - 1);
    r.absorb(&data[..whole]);
    r.finish(&data[whole..], rounds);
    r.store(&mut s);
    s
}

/// One-shot HighwayHash-64.
#[target_feature(enable = "neon")]
pub(crate) fn hash64(key: &[u8; 32], data: &[u8]) -> u64 {
    digest64_from(&oneshot(key, data, ROUNDS_64))
}

/// One-shot HighwayHash-128.
#[target_feature(enable = "neon")]
pub(crate) fn hash128(key: &[u8; 32], data: &[u8]) -> [u64; 2] {
    digest128_from(&oneshot(key, data, ROUNDS_128))
}

/// One-shot HighwayHash-256.
#[target_feature(enable = "neon")]
pub(crate) fn hash256(key: &[u8; 32], data: &[u8]) -> [u64; 4] {
    digest256_from(&oneshot(key, data, ROUNDS_256))
}

/// Advances `N` independent states by `packets` packets each, interleaved.
/// `states` and `data` must both have `N` entries, and every `data[i]` at
/// least `packets * 32` bytes.
#[target_feature(enable = "neon")]
pub(crate) fn lockstep<const N: usize>(states: &mut [State], data: &[&[u8]], packets: usize) {
    assert_eq!(states.len(), N, "lockstep: wrong number of states");
    assert_eq!(data.len(), N, "lockstep: wrong number of inputs");
    let bytes = packets * PACKET;
    for d in data {
        assert!(d.len() >= bytes, "lockstep input shorter than its packets");
    }
    let table = zipper_table();
    let zero = vdupq_n_u64(0);
    let z4 = V4 { lo: zero, hi: zero };
    let mut regs = [Regs {
        v0: z4,
        v1: z4,
        mul0: z4,
        mul1: z4,
    }; N];
    let mut ptrs = [core::ptr::null::<u8>(); N];
    for i in 0..N {
        regs[i] = Regs::load(&states[i]);
        ptrs[i] = data[i].as_ptr();
    }
    let mut off = 0;
    while off < bytes {
        for (r, p) in regs.iter_mut().zip(ptrs.iter()) {
            // SAFETY: `off + 32 <= bytes <= data[i].len()` (asserted above),
            // so `p + off` points at 32 readable bytes.
            let a = unsafe { load_packet(p.add(off)) };
            r.round(a, table);
        }
        off += PACKET;
    }
    for (r, s) in regs.iter().zip(states.iter_mut()) {
        r.store(s);
    }
}

//! The HighwayHash state and the portable kernel (plain `u64` arithmetic).
//!
//! HighwayHash keeps four vectors of four 64-bit lanes: `v0`, `v1`, `mul0`
//! and `mul1`. The input is consumed in packets of 32 bytes (four
//! little-endian `u64` lanes). A packet update is, lane by lane:
//!
//! ```text
//! v1   += mul0 + packet
//! mul0 ^= lo32(v1) * hi32(v0)
//! v0   += mul1
//! mul1 ^= lo32(v0) * hi32(v1)
//! v0   += zipper(v1)        (a fixed byte permutation of each lane pair)
//! v1   += zipper(v0)
//! ```
//!
//! A tail of 1..=31 bytes is folded into a padded packet after mixing its
//! length into the state, and the digest is read out after 4 (64-bit), 6
//! (128-bit) or 10 (256-bit) "permute and update" rounds. The SIMD kernels
//! implement exactly these steps on vector registers; this module is both
//! the fallback kernel and the reference the others are checked against.

/// First initialisation constant (also the initial `mul0`).
pub(crate) const INIT0: [u64; 4] = [
    0xdbe6_d5d5_fe4c_ce2f,
    0xa409_3822_299f_31d0,
    0x1319_8a2e_0370_7344,
    0x243f_6a88_85a3_08d3,
];

/// Second initialisation constant (also the initial `mul1`).
pub(crate) const INIT1: [u64; 4] = [
    0x3bd3_9e10_cb0e_f593,
    0xc0ac_f169_b5f1_8a8c,
    0xbe54_66cf_34e9_0c6c,
    0x4528_21e6_38d0_1377,
];

/// Bytes per packet.
pub(crate) const PACKET: usize = 32;

/// The byte permutation applied to each pair of lanes by the zipper merge:
/// output byte `i` of the 16-byte pair (lane `2j` little-endian, then lane
/// `2j+1`) is input byte `ZIPPER[i]`. The SIMD kernels use this table as a
/// byte-shuffle control.
pub(crate) const ZIPPER: [u8; 16] = [3, 12, 2, 5, 14, 1, 15, 0, 11, 4, 10, 13, 9, 6, 8, 7];

/// The complete hash state. `repr(C)` and 64-byte alignment so that the SIMD
/// kernels can load and store it as whole vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct State {
    pub(crate) v0: [u64; 4],
    pub(crate) v1: [u64; 4],
    pub(crate) mul0: [u64; 4],
    pub(crate) mul1: [u64; 4],
}

/// Reads the 32-byte key as four little-endian lanes.
#[inline]
pub(crate) fn key_lanes(key: &[u8; 32]) -> [u64; 4] {
    let mut k = [0u64; 4];
    for (lane, chunk) in k.iter_mut().zip(key.chunks_exact(8)) {
        *lane = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
    }
    k
}

impl State {
    /// The state after keying, before any input.
    #[inline]
    pub(crate) fn new(key: &[u8; 32]) -> Self {
        let k = key_lanes(key);
        let mut s = State {
            v0: [0; 4],
            v1: [0; 4],
            mul0: INIT0,
            mul1: INIT1,
        };
        for i in 0..4 {
            s.v0[i] = INIT0[i] ^ k[i];
            s.v1[i] = INIT1[i] ^ k[i].rotate_left(32);
        }
        s
    }

    /// Mixes one packet (four lanes) into the state.
    #[inline(always)]
    fn update_lanes(&mut self, a: [u64; 4]) {
        for (i, &lane) in a.iter().enumerate() {
            self.v1[i] = self.v1[i].wrapping_add(self.mul0[i].wrapping_add(lane));
            self.mul0[i] ^= (self.v1[i] & 0xffff_ffff).wrapping_mul(self.v0[i] >> 32);
            self.v0[i] = self.v0[i].wrapping_add(self.mul1[i]);
            self.mul1[i] ^= (self.v0[i] & 0xffff_ffff).wrapping_mul(self.v1[i] >> 32);
        }
        for j in [0, 2] {
            let (z0, z1) = zipper(self.v1[j], self.v1[j + 1]);
            self.v0[j] = self.v0[j].wrapping_add(z0);
            self.v0[j + 1] = self.v0[j + 1].wrapping_add(z1);
        }
        for j in [0, 2] {
            let (z0, z1) = zipper(self.v0[j], self.v0[j + 1]);
            self.v1[j] = self.v1[j].wrapping_add(z0);
            self.v1[j + 1] = self.v1[j + 1].wrapping_add(z1);
        }
    }

    /// Mixes one 32-byte packet into the state.
    #[inline(always)]
    pub(crate) fn update_packet(&mut self, packet: &[u8; 32]) {
        let mut a = [0u64; 4];
        for (lane, chunk) in a.iter_mut().zip(packet.chunks_exact(8)) {
            *lane = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
        }
        self.update_lanes(a);
    }

    /// The length-dependent state adjustment that precedes the tail packet:
    /// `v0 += (n << 32) + n` and every 32-bit half of `v1` rotated left by
    /// `n`. Shared by every kernel (it is a handful of scalar operations).
    #[inline]
    pub(crate) fn tail_adjust(&mut self, n: usize) {
        debug_assert!(0 < n && n < PACKET);
        let n64 = n as u64;
        let n32 = n as u32;
        for i in 0..4 {
            self.v0[i] = self.v0[i].wrapping_add((n64 << 32).wrapping_add(n64));
            let lo = (self.v1[i] as u32).rotate_left(n32);
            let hi = ((self.v1[i] >> 32) as u32).rotate_left(n32);
            self.v1[i] = u64::from(lo) | (u64::from(hi) << 32);
        }
    }

    /// Applies the tail (1..=31 bytes) with the portable update.
    #[inline]
    pub(crate) fn update_tail(&mut self, tail: &[u8]) {
        self.tail_adjust(tail.len());
        self.update_packet(&tail_packet(tail));
    }

    /// The lanes fed back into the state by one finalisation round: `v0`
    /// with its two halves swapped and each lane's 32-bit halves swapped.
    #[inline(always)]
    fn permuted_v0(&self) -> [u64; 4] {
        [
            self.v0[2].rotate_left(32),
            self.v0[3].rotate_left(32),
            self.v0[0].rotate_left(32),
            self.v0[1].rotate_left(32),
        ]
    }

    /// `rounds` finalisation rounds.
    #[inline]
    pub(crate) fn permute_rounds(&mut self, rounds: usize) {
        for _ in 0..rounds {
            let p = self.permuted_v0();
            self.update_lanes(p);
        }
    }
}

/// The zipper merge of one lane pair `(lo, hi)`: a byte permutation
/// (see [`ZIPPER`]) written as masks and shifts, one output byte per term.
#[inline(always)]
fn zipper(lo: u64, hi: u64) -> (u64, u64) {
    let out0 = ((lo >> 24) & 0xff)
        | ((hi >> 24) & 0xff00)
        | (lo & 0xff_0000)
        | ((lo >> 16) & 0xff00_0000)
        | ((hi >> 16) & 0xff_0000_0000)
        | ((lo << 32) & 0xff00_0000_0000)
        | ((hi >> 8) & 0xff_0000_0000_0000)
        | (lo << 56);
    let out1 = ((hi >> 24) & 0xff)
        | ((lo >> 24) & 0xff00)
        | (hi & 0xff_0000)
        | ((hi >> 16) & 0xff00_0000)
        | ((hi << 24) & 0xff_0000_0000)
        | ((lo >> 8) & 0xff00_0000_0000)
        | ((hi << 48) & 0xff_0000_0000_0000)
        | (lo & 0xff00_0000_0000_0000);
    (out0, out1)
}

/// Builds the padded packet for a tail of 1..=31 bytes: the whole 4-byte
/// groups are copied to the front; then, if the tail has 16 or more bytes,
/// its last four bytes go to bytes 28..32; otherwise, if 1..=3 bytes are
/// left over after the 4-byte groups, three of them (first, middle, last)
/// go to bytes 16, 17 and 18.
#[inline]
pub(crate) fn tail_packet(tail: &[u8]) -> [u8; 32] {
    let n = tail.len();
    debug_assert!(0 < n && n < PACKET);
    let mut p = [0u8; 32];
    let whole = n & !3;
    p[..whole].copy_from_slice(&tail[..whole]);
    let rest = &tail[whole..];
    if n & 16 != 0 {
        p[28..32].copy_from_slice(&tail[n - 4..]);
    } else if !rest.is_empty() {
        p[16] = rest[0];
        p[17] = rest[rest.len() >> 1];
        p[18] = rest[rest.len() - 1];
    }
    p
}

/// The 256-bit read-out: a reduction of two 128-bit sums modulo a fixed
/// polynomial, as the algorithm specifies.
#[inline]
pub(crate) fn digest256_from(s: &State) -> [u64; 4] {
    let mut h = [0u64; 4];
    for j in [0, 2] {
        let a0 = s.v0[j].wrapping_add(s.mul0[j]);
        let a1 = s.v0[j + 1].wrapping_add(s.mul0[j + 1]);
        let a2 = s.v1[j].wrapping_add(s.mul1[j]);
        let a3 = s.v1[j + 1].wrapping_add(s.mul1[j + 1]) & 0x3fff_ffff_ffff_ffff;
        h[j] = a0 ^ (a2 << 1) ^ (a2 << 2);
        h[j + 1] = a1 ^ ((a3 << 1) | (a2 >> 63)) ^ ((a3 << 2) | (a2 >> 62));
    }
    h
}

/// The 128-bit read-out.
#[inline]
pub(crate) fn digest128_from(s: &State) -> [u64; 2] {
    [
        s.v0[0]
            .wrapping_add(s.mul0[0])
            .wrapping_add(s.v1[2])
            .wrapping_add(s.mul1[2]),
        s.v0[1]
            .wrapping_add(s.mul0[1])
            .wrapping_add(s.v1[3])
            .wrapping_add(s.mul1[3]),
    ]
}

/// The 64-bit read-out.
#[inline]
pub(crate) fn digest64_from(s: &State) -> u64 {
    s.v0[0]
        .wrapping_add(s.v1[0])
        .wrapping_add(s.mul0[0])
        .wrapping_add(s.mul1[0])
}

/// Finalisation rounds per digest width.
pub(crate) const ROUNDS_64: usize = 4;
pub(crate) const ROUNDS_128: usize = 6;
pub(crate) const ROUNDS_256: usize = 10;

// ---------------------------------------------------------------------------
// The portable kernel's entry points (same shape as the SIMD kernels').

/// Mixes `data` (a multiple of 32 bytes) into `s`.
pub(crate) fn update(s: &mut State, data: &[u8]) {
    debug_assert_eq!(data.len() % PACKET, 0);
    for packet in data.chunks_exact(PACKET) {
        s.update_packet(packet.try_into().expect("32-byte packet"));
    }
}

/// Applies the tail (0..=31 bytes) and `rounds` finalisation rounds to a
/// copy of `s`, returning the finished state.
pub(crate) fn finish(s: &State, tail: &[u8], rounds: usize) -> State {
    let mut s = *s;
    if !tail.is_empty() {
        s.update_tail(tail);
    }
    s.permute_rounds(rounds);
    s
}

/// One-shot HighwayHash-256.
pub(crate) fn hash256(key: &[u8; 32], data: &[u8]) -> [u64; 4] {
    let mut s = State::new(key);
    let whole = data.len() & !(PACKET - 1);
    update(&mut s, &data[..whole]);
    digest256_from(&finish(&s, &data[whole..], ROUNDS_256))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shift-and-mask zipper equals the table it is derived from.
    #[test]
    fn zipper_matches_table() {
        let mut rng = fastrand::Rng::with_seed(0x0123_4567_89ab_cdef);
        for _ in 0..1000 {
            let (lo, hi) = (rng.u64(..), rng.u64(..));
            let mut bytes = [0u8; 16];
            bytes[..8].copy_from_slice(&lo.to_le_bytes());
            bytes[8..].copy_from_slice(&hi.to_le_bytes());
            let mut out = [0u8; 16];
            for (o, &idx) in out.iter_mut().zip(ZIPPER.iter()) {
                *o = bytes[idx as usize];
            }
            let (z0, z1) = zipper(lo, hi);
            assert_eq!(z0.to_le_bytes(), out[..8], "lo={lo:#x} hi={hi:#x}");
            assert_eq!(z1.to_le_bytes(), out[8..], "lo={lo:#x} hi={hi:#x}");
        }
    }

    #[test]
    fn zipper_table_is_a_permutation() {
        let mut seen = [false; 16];
        for &i in &ZIPPER {
            assert!(!seen[i as usize]);
            seen[i as usize] = true;
        }
    }
}

//! Kernel handles and dispatch.
//!
//! A [`Kernel`] is only made here and in `detect` (its fields are private):
//! `detect` checks the CPU at runtime and self-tests the kernel before it
//! hands out a SIMD handle, and [`Kernel::portable`] names the kernel that
//! needs nothing. Holding a handle for a SIMD kernel is therefore proof that
//! the CPU has the instructions it needs, which is what makes the `unsafe`
//! calls below sound.

use std::fmt;

use crate::portable::{self, PACKET, State};
use crate::selftest::Hashes;

mod detect;

/// A HighwayHash implementation the CPU can run.
///
/// Obtained from [`Kernel::detect`], [`Kernel::from_name`],
/// [`Kernel::supported`] or [`Kernel::portable`]; there is no other way to
/// make one. Every handle (other than the portable one, which needs nothing)
/// refers to a kernel that passed the start-up self-test on this machine.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kernel {
    imp: Imp,
    /// Tuning of the x86 packet loops (see `avx2::link`): the order of the
    /// sum linking two packets. Chosen from the CPU model by `tuning()`;
    /// both orders compute the same digests.
    zipper_last: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Imp {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
    Neon,
}

impl Imp {
    fn name(self) -> &'static str {
        match self {
            Imp::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 => "avx2",
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 => "avx512",
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            Imp::Neon => "neon",
        }
    }
}

impl Kernel {
    /// The portable kernel (plain 64-bit arithmetic; runs everywhere). This
    /// does not run the self-test.
    pub const fn portable() -> Kernel {
        Kernel {
            imp: Imp::Portable,
            zipper_last: false,
        }
    }

    /// The kernel's name, as accepted by [`Kernel::from_name`].
    pub fn name(self) -> &'static str {
        self.imp.name()
    }

    /// One-shot keyed HighwayHash-64 of `data`.
    pub fn hash64(self, key: &[u8; 32], data: &[u8]) -> u64 {
        match self.imp {
            Imp::Portable => {
                let mut s = State::new(key);
                let whole = data.len() & !(PACKET - 1);
                portable::update(&mut s, &data[..whole]);
                portable::digest64_from(&portable::finish(&s, &data[whole..], portable::ROUNDS_64))
            }
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 or Avx512 handle is only made by `probe_avx2`
            // / `probe_avx512` after `is_x86_feature_detected!("avx2")`.
            Imp::Avx2 | Imp::Avx512 => unsafe {
                if self.zipper_last {
                    crate::avx2::hash64::<true>(key, data)
                } else {
                    crate::avx2::hash64::<false>(key, data)
                }
            },
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            // SAFETY: a Neon handle is only made by `probe_neon` after
            // runtime detection of NEON.
            Imp::Neon => unsafe { crate::neon::hash64(key, data) },
        }
    }

    /// One-shot keyed HighwayHash-128 of `data` (two little-endian words,
    /// as minio/highwayhash's `Sum128`).
    pub fn hash128(self, key: &[u8; 32], data: &[u8]) -> [u8; 16] {
        let h = match self.imp {
            Imp::Portable => {
                let mut s = State::new(key);
                let whole = data.len() & !(PACKET - 1);
                portable::update(&mut s, &data[..whole]);
                portable::digest128_from(&portable::finish(
                    &s,
                    &data[whole..],
                    portable::ROUNDS_128,
                ))
            }
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 or Avx512 handle is only made by `probe_avx2`
            // / `probe_avx512` after `is_x86_feature_detected!("avx2")`.
            Imp::Avx2 | Imp::Avx512 => unsafe {
                if self.zipper_last {
                    crate::avx2::hash128::<true>(key, data)
                } else {
                    crate::avx2::hash128::<false>(key, data)
                }
            },
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            // SAFETY: a Neon handle is only made by `probe_neon` after
            // runtime detection of NEON.
            Imp::Neon => unsafe { crate::neon::hash128(key, data) },
        };
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&h[0].to_le_bytes());
        out[8..].copy_from_slice(&h[1].to_le_bytes());
        out
    }

    /// One-shot keyed HighwayHash-256 of `data` (four little-endian words,
    /// byte-identical to minio/highwayhash's `Sum`).
    pub fn hash256(self, key: &[u8; 32], data: &[u8]) -> [u8; 32] {
        let h = match self.imp {
            Imp::Portable => portable::hash256(key, data),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 or Avx512 handle is only made by `probe_avx2`
            // / `probe_avx512` after `is_x86_feature_detected!("avx2")`.
            Imp::Avx2 | Imp::Avx512 => unsafe {
                if self.zipper_last {
                    crate::avx2::hash256::<true>(key, data)
                } else {
                    crate::avx2::hash256::<false>(key, data)
                }
            },
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            // SAFETY: a Neon handle is only made by `probe_neon` after
            // runtime detection of NEON.
            Imp::Neon => unsafe { crate::neon::hash256(key, data) },
        };
        words_to_bytes(h)
    }

    /// HighwayHash-256 of several independent inputs at once:
    /// `out[i] = self.hash256(key, inputs[i])`, with the streams
    /// interleaved (lengths may differ). This is the shape of bitrot
    /// protection for one erasure block: the k + m shard blocks are hashed
    /// together.
    ///
    /// # Panics
    /// If `inputs.len() != out.len()`.
    pub fn hash256_many(self, key: &[u8; 32], inputs: &[&[u8]], out: &mut [[u8; 32]]) {
        crate::multi::hash256_many(self, key, inputs, out);
    }

    // ----- crate-internal entry points used by the hasher and scheduler.

    /// The keyed initial state, computed the way the kernel's `update` will
    /// load it (vector stores for SIMD kernels, so the loads that follow are
    /// forwarded instead of stalling on scalar stores).
    pub(crate) fn init(self, key: &[u8; 32]) -> State {
        match self.imp {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 or Avx512 handle is only made by `probe_avx2`
            // / `probe_avx512` after `is_x86_feature_detected!("avx2")`.
            Imp::Avx2 | Imp::Avx512 => unsafe { crate::avx2::init(key) },
            _ => State::new(key),
        }
    }

    /// Mixes `data` (a multiple of 32 bytes) into `s`.
    pub(crate) fn update(self, s: &mut State, data: &[u8]) {
        debug_assert_eq!(data.len() % PACKET, 0);
        match self.imp {
            Imp::Portable => portable::update(s, data),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 or Avx512 handle is only made by `probe_avx2`
            // / `probe_avx512` after `is_x86_feature_detected!("avx2")`.
            Imp::Avx2 | Imp::Avx512 => unsafe {
                if self.zipper_last {
                    crate::avx2::update::<true>(s, data)
                } else {
                    crate::avx2::update::<false>(s, data)
                }
            },
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            // SAFETY: a Neon handle is only made by `probe_neon` after
            // runtime detection of NEON.
            Imp::Neon => unsafe { crate::neon::update(s, data) },
        }
    }

    /// Applies the tail (0..=31 bytes) and `rounds` finalisation rounds to
    /// a copy of `s`.
    pub(crate) fn finish(self, s: &State, tail: &[u8], rounds: usize) -> State {
        debug_assert!(tail.len() < PACKET);
        match self.imp {
            Imp::Portable => portable::finish(s, tail, rounds),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 or Avx512 handle is only made by `probe_avx2`
            // / `probe_avx512` after `is_x86_feature_detected!("avx2")`.
            Imp::Avx2 | Imp::Avx512 => unsafe { crate::avx2::finish(s, tail, rounds) },
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            // SAFETY: a Neon handle is only made by `probe_neon` after
            // runtime detection of NEON.
            Imp::Neon => unsafe { crate::neon::finish(s, tail, rounds) },
        }
    }

    /// The numbers of streams the kernel can advance together, widest
    /// first; empty if it has no multi-stream path.
    pub(crate) fn lane_widths(self) -> &'static [usize] {
        match self.imp {
            Imp::Portable => &[],
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 => &[3, 2],
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 => &[8, 4, 2],
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            Imp::Neon => &[2],
        }
    }

    /// Advances `states.len()` (one of `lane_widths()`) states by
    /// `packets` packets each; `data[i]` holds at least `packets * 32`
    /// bytes.
    pub(crate) fn lockstep(self, states: &mut [State], data: &[&[u8]], packets: usize) {
        assert_eq!(states.len(), data.len());
        match (self.imp, states.len(), self.zipper_last) {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 handle is only made by `probe_avx2` after
            // `is_x86_feature_detected!("avx2")`.
            (Imp::Avx2, 2, false) => unsafe {
                crate::avx2::lockstep::<2, false>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx2, 2, true) => unsafe {
                crate::avx2::lockstep::<2, true>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx2, 3, false) => unsafe {
                crate::avx2::lockstep::<3, false>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx2, 3, true) => unsafe {
                crate::avx2::lockstep::<3, true>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx512 handle is only made by `probe_avx512` after
            // detecting avx2, avx512f, avx512bw and avx512vl.
            (Imp::Avx512, 2, false) => unsafe {
                crate::avx512::lockstep::<1, false>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx512, 2, true) => unsafe {
                crate::avx512::lockstep::<1, true>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx512, 4, false) => unsafe {
                crate::avx512::lockstep::<2, false>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx512, 4, true) => unsafe {
                crate::avx512::lockstep::<2, true>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx512, 8, false) => unsafe {
                crate::avx512::lockstep::<4, false>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx512, 8, true) => unsafe {
                crate::avx512::lockstep::<4, true>(states, data, packets)
            },
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            // SAFETY: a Neon handle is only made by `probe_neon` after
            // runtime detection of NEON.
            (Imp::Neon, 2, _) => unsafe { crate::neon::lockstep::<2>(states, data, packets) },
            (imp, n, _) => unreachable!("kernel {} has no {n}-stream path", imp.name()),
        }
    }
}

/// Little-endian serialisation of the digest words.
pub(crate) fn words_to_bytes(h: [u64; 4]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (chunk, w) in out.chunks_exact_mut(8).zip(h) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    out
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kernel({})", self.name())
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Hashes for Kernel {
    fn hash64(&self, key: &[u8; 32], data: &[u8]) -> u64 {
        Kernel::hash64(*self, key, data)
    }
    fn hash128(&self, key: &[u8; 32], data: &[u8]) -> [u8; 16] {
        Kernel::hash128(*self, key, data)
    }
    fn hash256(&self, key: &[u8; 32], data: &[u8]) -> [u8; 32] {
        Kernel::hash256(*self, key, data)
    }
    fn streaming256(&self, key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
        let mut h = crate::HighwayHasher::with_kernel(*self, key);
        for p in parts {
            h.update(p);
        }
        h.finalize256()
    }
    fn many256(&self, key: &[u8; 32], inputs: &[&[u8]], out: &mut [[u8; 32]]) {
        Kernel::hash256_many(*self, key, inputs, out);
    }
}

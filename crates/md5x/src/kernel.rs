//! Kernel handles and dispatch.
//!
//! A [`Kernel`] is only made here and in `detect` (its field is private):
//! `detect` checks the CPU at runtime and self-tests the kernel before it
//! hands out a SIMD handle, and [`Kernel::portable`] names the kernel that
//! needs nothing. Holding a handle for a SIMD kernel is therefore proof that
//! the CPU has the instructions it needs, which is what makes the `unsafe`
//! calls below sound.

use std::fmt;

use crate::portable::{self, BLOCK};

mod detect;

/// An MD5 implementation the CPU can run.
///
/// Obtained from [`Kernel::detect`], [`Kernel::from_name`],
/// [`Kernel::supported`] or [`Kernel::portable`]; there is no other way to
/// make one. Every handle (other than the portable one, which needs
/// nothing) refers to a kernel that passed the start-up self-test on this
/// machine.
///
/// Every kernel hashes a single stream on the portable code (MD5 is one
/// chain of dependent steps); the SIMD kernels differ in how many
/// independent streams they advance at once ([`Kernel::lanes`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kernel {
    imp: Imp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Imp {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Imp {
    fn name(self) -> &'static str {
        match self {
            Imp::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 => "avx2",
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 => "avx512",
        }
    }
}

impl Kernel {
    /// The portable kernel (no SIMD; always available).
    pub const fn portable() -> Kernel {
        Kernel { imp: Imp::Portable }
    }

    /// The kernel's name.
    pub fn name(self) -> &'static str {
        self.imp.name()
    }

    /// How many independent streams one call of this kernel advances (1
    /// for the portable kernel).
    pub fn lanes(self) -> usize {
        match self.imp {
            Imp::Portable => 1,
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 => crate::avx2::LANES,
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 => crate::avx512::LANES,
        }
    }

    /// One-shot MD5 of `data` (single stream: the portable code on every
    /// kernel).
    pub fn digest(self, data: &[u8]) -> [u8; 16] {
        portable::digest(data)
    }

    /// MD5 of several independent inputs at once: `out[i]` is the MD5 of
    /// `inputs[i]`, lengths may differ. The inputs are hashed together in
    /// the kernel's lanes; a lane whose input ends takes the next one.
    ///
    /// # Panics
    /// If `inputs.len() != out.len()`.
    pub fn digest_many(self, inputs: &[&[u8]], out: &mut [[u8; 16]]) {
        crate::multi::digest_many(&self, inputs, out);
    }

    /// Advances `states.len()` (at most [`lanes`](Self::lanes)) independent
    /// MD5 states by `blocks` 64-byte blocks each, state `i` consuming
    /// `data[i][..blocks * 64]`. With one state, or on the portable
    /// kernel, the states are advanced one after the other.
    ///
    /// # Panics
    /// If `states.len() != data.len()`, there are more states than lanes,
    /// or some input is shorter than `blocks * 64` bytes.
    pub fn compress_lanes(self, states: &mut [[u32; 4]], data: &[&[u8]], blocks: usize) {
        assert_eq!(states.len(), data.len(), "one input per state");
        assert!(states.len() <= self.lanes(), "more states than lanes");
        let bytes = blocks * BLOCK;
        for d in data {
            assert!(d.len() >= bytes, "lane input shorter than its blocks");
        }
        let n = states.len();
        match self.imp {
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 if n > crate::avx2::LANES_XMM => {
                let (mut st, dt) = pack::<{ crate::avx2::LANES }>(states, data);
                // SAFETY: an Avx2 handle is only made by `probe_avx2` after
                // `is_x86_feature_detected!("avx2")`.
                unsafe { crate::avx2::compress8(&mut st, &dt, blocks) };
                states.copy_from_slice(&st[..n]);
            }
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 if n > 1 => {
                let (mut st, dt) = pack::<{ crate::avx2::LANES_XMM }>(states, data);
                // SAFETY: as above (avx2 detected).
                unsafe { crate::avx2::compress4(&mut st, &dt, blocks) };
                states.copy_from_slice(&st[..n]);
            }
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 if n > crate::avx512::LANES_VL => {
                let (mut st, dt) = pack::<{ crate::avx512::LANES }>(states, data);
                // SAFETY: an Avx512 handle is only made by `probe_avx512`
                // after detecting avx2, avx512f and avx512vl.
                unsafe { crate::avx512::compress16(&mut st, &dt, blocks) };
                states.copy_from_slice(&st[..n]);
            }
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 if n > crate::avx512::LANES_XMM => {
                let (mut st, dt) = pack::<{ crate::avx512::LANES_VL }>(states, data);
                // SAFETY: as above (avx2, avx512f and avx512vl detected).
                unsafe { crate::avx512::compress8(&mut st, &dt, blocks) };
                states.copy_from_slice(&st[..n]);
            }
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 if n > 1 => {
                let (mut st, dt) = pack::<{ crate::avx512::LANES_XMM }>(states, data);
                // SAFETY: as above (avx2, avx512f and avx512vl detected).
                unsafe { crate::avx512::compress4(&mut st, &dt, blocks) };
                states.copy_from_slice(&st[..n]);
            }
            _ => {
                for (s, d) in states.iter_mut().zip(data).take(n) {
                    portable::compress(s, &d[..bytes]);
                }
            }
        }
    }
}

/// Copies up to `N` states and inputs into full lane arrays; unused lanes
/// repeat lane 0 (their results are dropped).
#[cfg(target_arch = "x86_64")]
fn pack<'a, const N: usize>(
    states: &[[u32; 4]],
    data: &[&'a [u8]],
) -> ([[u32; 4]; N], [&'a [u8]; N]) {
    let st = core::array::from_fn(|i| states.get(i).copied().unwrap_or(states[0]));
    let dt = core::array::from_fn(|i| data.get(i).copied().unwrap_or(data[0]));
    (st, dt)
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

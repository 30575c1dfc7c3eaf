//! Kernel handles and dispatch.
//!
//! A [`Kernel`] is only made here and in `detect` (its field is private):
//! `detect` checks the CPU at runtime and self-tests the kernel before it
//! hands out a SIMD handle, and [`Kernel::portable`] names the kernel that
//! needs nothing. Holding a SHA-NI handle is therefore proof that the CPU
//! has the instructions it needs, which is what makes the `unsafe` calls
//! below sound.

use std::fmt;

use crate::portable::{self, BLOCK, IV};

mod detect;

/// A SHA-256 implementation the CPU can run.
///
/// Obtained from [`Kernel::detect`], [`Kernel::from_name`],
/// [`Kernel::supported`] or [`Kernel::portable`]; there is no other way to
/// make one. Every handle other than the portable one refers to a kernel
/// that passed the start-up self-test on this machine.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kernel {
    imp: Imp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Imp {
    Portable,
    #[cfg(target_arch = "x86_64")]
    ShaNi,
}

impl Kernel {
    /// The portable kernel (no SIMD; always available).
    pub const fn portable() -> Kernel {
        Kernel { imp: Imp::Portable }
    }

    /// The kernel's name.
    pub fn name(self) -> &'static str {
        match self.imp {
            Imp::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Imp::ShaNi => "sha-ni",
        }
    }

    /// How many messages one call advances together (1 for the portable
    /// kernel).
    pub fn lanes(self) -> usize {
        match self.imp {
            Imp::Portable => 1,
            #[cfg(target_arch = "x86_64")]
            Imp::ShaNi => crate::shani::LANES,
        }
    }

    /// Advances `states.len()` (at most [`lanes`](Self::lanes)) states by
    /// `blocks` 64-byte blocks each, state `i` consuming
    /// `data[i][..blocks * 64]`; with one state, or on the portable kernel,
    /// one after the other.
    ///
    /// # Panics
    /// If `states.len() != data.len()`, there are more states than lanes,
    /// or an input is shorter than `blocks * 64` bytes.
    pub fn compress_lanes(self, states: &mut [[u32; 8]], data: &[&[u8]], blocks: usize) {
        assert_eq!(states.len(), data.len(), "one input per state");
        assert!(states.len() <= self.lanes(), "more states than lanes");
        let bytes = blocks * BLOCK;
        for d in data {
            assert!(d.len() >= bytes, "lane input shorter than its blocks");
        }
        match self.imp {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a ShaNi handle is only made by `probe_shani` after
            // detecting sha, sse2, ssse3 and sse4.1; every input holds
            // `blocks * 64` bytes (asserted above).
            Imp::ShaNi => unsafe {
                match states.len() {
                    4 => lanes::<4>(states, data, blocks),
                    3 => lanes::<3>(states, data, blocks),
                    2 => lanes::<2>(states, data, blocks),
                    1 => lanes::<1>(states, data, blocks),
                    _ => {}
                }
            },
            Imp::Portable => {
                for (s, d) in states.iter_mut().zip(data) {
                    portable::compress(s, &d[..bytes]);
                }
            }
        }
    }

    /// One-shot SHA-256 of `data` on this kernel's single-lane path.
    pub fn digest(self, data: &[u8]) -> [u8; 32] {
        let mut st = [IV];
        let whole = data.len() / BLOCK;
        self.compress_lanes(&mut st, &[data], whole);
        let (buf, n) = portable::padded_tail(&data[whole * BLOCK..], data.len() as u64);
        self.compress_lanes(&mut st, &[&buf[..n]], n / BLOCK);
        portable::digest_bytes(&st[0])
    }

    /// The SHA-256 of each of `messages` into `out`, hashed
    /// [`lanes`](Self::lanes) at a time where they have whole blocks in
    /// common (the lengths may differ; equal lengths, the case this is for,
    /// share every block but the padded tail).
    ///
    /// # Panics
    /// If `messages.len() != out.len()`.
    pub fn digest_many(self, messages: &[&[u8]], out: &mut [[u8; 32]]) {
        assert_eq!(messages.len(), out.len(), "one digest per message");
        let width = self.lanes();
        for (group, digests) in messages.chunks(width).zip(out.chunks_mut(width)) {
            let common = group.iter().map(|m| m.len() / BLOCK).min().unwrap_or(0);
            let mut states = [IV; MAX_LANES];
            let states = &mut states[..group.len()];
            self.compress_lanes(states, group, common);
            for ((state, m), digest) in states.iter_mut().zip(group).zip(digests.iter_mut()) {
                // The blocks beyond the common ones, then the padded tail.
                let whole = m.len() / BLOCK;
                let rest = &m[common * BLOCK..];
                self.compress_lanes(std::slice::from_mut(state), &[rest], whole - common);
                let (tail, n) = portable::padded_tail(&m[whole * BLOCK..], m.len() as u64);
                self.compress_lanes(std::slice::from_mut(state), &[&tail[..n]], n / BLOCK);
                *digest = portable::digest_bytes(state);
            }
        }
    }
}

/// The widest kernel's lane count.
const MAX_LANES: usize = 4;
#[cfg(target_arch = "x86_64")]
const _: () = assert!(crate::shani::LANES <= MAX_LANES);

/// Packs the first `N` states and inputs for the SHA-NI kernel and runs it.
///
/// # Safety
/// As [`crate::shani::compress`]: the CPU has sha, sse2, ssse3 and sse4.1,
/// and every input holds `blocks * 64` bytes.
#[cfg(target_arch = "x86_64")]
unsafe fn lanes<const N: usize>(states: &mut [[u32; 8]], data: &[&[u8]], blocks: usize) {
    let mut st: [[u32; 8]; N] = core::array::from_fn(|i| states[i]);
    let dt: [&[u8]; N] = core::array::from_fn(|i| data[i]);
    // SAFETY: the caller's guarantee, passed on.
    unsafe { crate::shani::compress::<N>(&mut st, dt, blocks) };
    states[..N].copy_from_slice(&st);
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

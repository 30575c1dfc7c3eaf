//! MD5 for S3 ETags, built for a server that hashes many uploads at once.
//!
//! MD5 is one chain of dependent steps, so a single stream runs at the
//! speed of the portable code (about 0.6 GB/s). But every step is 32-bit
//! lane-local arithmetic, so independent streams can share a vector
//! register: the AVX2 kernel advances 8 streams per instruction, the
//! AVX-512 kernel 16 (with one-instruction rotates, `vprold`, and round
//! functions, `vpternlogd`). This crate has
//!
//! - [`Kernel`]: the portable, AVX2 and AVX-512 kernels, chosen by runtime
//!   CPU detection, each proven against the portable reference by a
//!   start-up self-test before use ([`Kernel::detection_report`]; the
//!   report and error types are `kernel-report`'s, as in every kernel
//!   crate).
//!   [`Kernel::digest_many`] hashes several whole messages together.
//! - [`Md5Hub`] and [`Hasher`]: streaming MD5 for many concurrent requests.
//!   The whole 64-byte blocks that concurrent hashers submit are hashed
//!   together in the SIMD lanes by whichever caller is running; a hasher
//!   alone runs on the single-stream path without waiting. See the `hub`
//!   module documentation for the scheduling rules and their bounds.
//!
//! Cargo features `no_avx2` and `no_avx512` remove those kernels from
//! detection. Non-x86 targets build the portable kernel only.
//!
//! ```
//! // One-shot.
//! let d = md5x::digest(b"abc");
//! assert_eq!(d[..4], [0x90, 0x01, 0x50, 0x98]);
//!
//! // Streaming through the process-wide hub (concurrent hashers share lanes).
//! let mut h = md5x::Md5Hub::global().hasher();
//! h.update(b"a");
//! h.update(b"bc");
//! assert_eq!(h.finalize(), d);
//!
//! // Several messages at once.
//! let mut out = [[0u8; 16]; 2];
//! md5x::Kernel::detect().digest_many(&[b"abc", b""], &mut out);
//! assert_eq!(out[0], d);
//! ```

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod hub;
mod kernel;
mod multi;
mod portable;
mod rounds;
mod selftest;

pub use hub::{BlockUpdate, Hasher, HubConfig, HubStats, Md5Hub, StableBytes};
pub use kernel::Kernel;
pub use kernel_report::{DetectionReport, KernelError, KernelReport, KernelStatus};
pub use portable::BLOCK;

/// One-shot MD5 of `data` (single stream).
pub fn digest(data: &[u8]) -> [u8; 16] {
    portable::digest(data)
}

/// The portable MD5 compression function: mixes whole 64-byte `blocks`
/// into `state`. Exposed as the reference for tests and benchmarks.
///
/// # Panics
/// If `blocks.len()` is not a multiple of 64.
pub fn compress_portable(state: &mut [u32; 4], blocks: &[u8]) {
    assert_eq!(blocks.len() % BLOCK, 0, "whole blocks only");
    portable::compress(state, blocks);
}

/// The MD5 initial state.
pub const INIT: [u32; 4] = portable::INIT;

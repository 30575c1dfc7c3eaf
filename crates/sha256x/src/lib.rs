//! SHA-256 of several messages at once, for the chunk signatures of
//! streaming uploads (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD`: every 64 KiB
//! chunk is its own message, hashed to check its signature).
//!
//! One message keeps the SHA unit waiting: each `sha256rnds2` needs the
//! result of the one before, so a single stream runs at the unit's latency
//! (about 1.8 GB/s on Zen 4 with OpenSSL or the `sha2` crate). Independent
//! messages interleaved in one loop run at its throughput instead. This
//! crate has
//!
//! - [`Kernel`]: the portable kernel (the reference, plain Rust) and the
//!   SHA-NI kernel, which advances up to four messages together,
//!   chosen by runtime CPU detection and proven against the reference by a
//!   start-up self-test before use ([`Kernel::detection_report`]).
//! - [`Kernel::digest_many`]: the digests of several messages, hashed
//!   [`Kernel::lanes`] at a time where they have whole blocks in common.
//!
//! The Cargo feature `no_sha` removes the SHA-NI kernel from detection.
//!
//! ```
//! let k = sha256x::Kernel::detect();
//! let mut out = [[0u8; 32]; 2];
//! k.digest_many(&[b"abc", b""], &mut out);
//! assert_eq!(out[0][..4], [0xba, 0x78, 0x16, 0xbf]);
//! assert_eq!(out[1][..4], [0xe3, 0xb0, 0xc4, 0x42]);
//! ```

mod kernel;
mod portable;
mod selftest;
#[cfg(target_arch = "x86_64")]
mod shani;

pub use kernel::Kernel;
pub use kernel_report::{DetectionReport, KernelError, KernelReport, KernelStatus};
pub use portable::{BLOCK, IV};

/// One-shot SHA-256 of `data` on the portable reference.
pub fn digest(data: &[u8]) -> [u8; 32] {
    portable::digest(data)
}

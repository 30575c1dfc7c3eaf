//! Systematic Reed-Solomon erasure coding over GF(2^8), byte-compatible with
//! klauspost/reedsolomon's default coder (the one MinIO uses), with AVX2,
//! AVX-512, GFNI and NEON kernels.
//!
//! A [`ReedSolomon`] coder for `k` data and `m` parity shards computes `m`
//! parity shards from `k` equally long data shards, and rebuilds any lost
//! shards from any `k` survivors. The field uses the polynomial 0x11d and the
//! encoding matrix is klauspost's: the `(k + m) x k` Vandermonde matrix with
//! entries `r^c`, multiplied by the inverse of its top `k x k` square so that
//! the data shards are stored unchanged. Parity is therefore identical, byte
//! for byte, to what MinIO writes.
//!
//! The multiplication kernel is chosen once per process by [`Kernel::detect`]
//! (after a self-test against the reference kernel) and can be overridden by
//! name with [`Kernel::from_name`] and [`ReedSolomon::with_kernel`]. The crate
//! never reads environment variables and never logs;
//! [`Kernel::detection_report`] tells the caller what was detected and why.
//! Detection has the shape of every kernel crate's (`bitrot`, `md5x`): the
//! report and error types are `kernel-report`'s.
//!
//! # Example
//!
//! ```
//! use ec_simd::{Error, ReedSolomon};
//!
//! # fn main() -> Result<(), Error> {
//! let rs = ReedSolomon::new(4, 2)?;
//!
//! // Four data shards followed by two parity buffers, all of one length.
//! let mut shards: Vec<Vec<u8>> = vec![
//!     b"Tess".to_vec(),
//!     b"era ".to_vec(),
//!     b"stor".to_vec(),
//!     b"es!!".to_vec(),
//!     vec![0; 4],
//!     vec![0; 4],
//! ];
//! rs.encode_shards(&mut shards)?;
//! assert!(rs.verify_shards(&shards)?);
//!
//! // Lose any two shards ...
//! let original = shards.clone();
//! shards[1].fill(0);
//! shards[4].fill(0);
//! let present = [true, false, true, true, false, true];
//!
//! // ... and get them back.
//! rs.reconstruct(&mut shards, &present)?;
//! assert_eq!(shards, original);
//!
//! // Too many losses is an error, not a panic.
//! let err = rs.reconstruct(&mut shards, &[false, false, false, true, true, true]);
//! assert_eq!(err, Err(Error::TooFewShards { needed: 4, present: 3 }));
//!
//! println!("encoded with the {} kernel", rs.kernel().name());
//! # Ok(())
//! # }
//! ```
//!
//! # Cargo features
//!
//! `no_avx512`, `no_gfni`, `no_avx2` and `no_neon` remove the corresponding
//! kernels from detection (they still compile), so that every fallback path
//! can be exercised on one machine, e.g.
//! `cargo test -p ec-simd --features no_avx512,no_gfni`.

#![warn(missing_docs)]

mod cache;
mod coder;
mod error;
mod gf;
mod kernel;
mod matrix;

pub use coder::ReedSolomon;
pub use error::Error;
pub use kernel::Kernel;
pub use kernel_report::{DetectionReport, KernelError, KernelReport, KernelStatus};

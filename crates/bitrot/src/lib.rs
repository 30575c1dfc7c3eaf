//! Bitrot protection for Tessera shard files: keyed HighwayHash
//! (byte-identical to minio/highwayhash) and MinIO's streaming bitrot shard
//! frame.
//!
//! # Hashing
//!
//! [`hash256`], [`hash128`], [`hash64`] and [`HighwayHasher`] (streaming)
//! compute keyed HighwayHash on the fastest [`Kernel`] the CPU supports;
//! [`hash256_many`] hashes several independent inputs together (the k + m
//! shard blocks of an erasure block), interleaving them to hide the
//! multiply latency that bounds a single stream. Kernels: portable (`u64`
//! arithmetic), AVX2, AVX-512 (two streams per zmm register for the
//! multi-stream path) and NEON. Each is self-tested at start-up (MinIO's
//! iterated bitrot self-test, a chained known answer and agreement with the
//! portable kernel) and never used if it fails; see
//! [`Kernel::detection_report`]. Detection has the shape of every kernel
//! crate's (`ec-simd`, `md5x`): the report and error types are
//! `kernel-report`'s.
//!
//! Cargo features `no_avx2`, `no_avx512` and `no_neon` remove those kernels
//! from detection (they still compile). The crate reads no environment
//! variables: a daemon that wants to force a kernel calls
//! [`Kernel::from_name`].
//!
//! # Shard frame
//!
//! [`ShardLayout`] and [`ShardFrame`] are the sans-IO core of MinIO's
//! `part.N` format (`[32-byte digest][block]` records); [`FrameWriter`] and
//! [`FrameReader`] are thin `std::io` adapters. Nothing here is async: the
//! object layer drives the sans-IO core from its own tasks.
//!
//! ```
//! use std::io::{Cursor, Read, Seek, SeekFrom, Write};
//! use bitrot::{Bitrot, FrameReader, FrameWriter, ShardFrame, ShardLayout};
//!
//! // Hashing, one-shot and for the k + m shard blocks of an erasure block.
//! let digest = bitrot::hash256(&bitrot::MAGIC_HIGHWAYHASH256_KEY, b"hello");
//! let blocks: [&[u8]; 3] = [b"data 0", b"data 1", b"parity"];
//! let mut digests = [[0u8; 32]; 3];
//! bitrot::hash256_many(&bitrot::MAGIC_HIGHWAYHASH256_KEY, &blocks, &mut digests);
//! assert_eq!(digests[0], bitrot::hash256(&bitrot::MAGIC_HIGHWAYHASH256_KEY, b"data 0"));
//! # let _ = digest;
//!
//! // A shard file with 4 KiB blocks, written and read back from offset 5000.
//! let data = vec![7u8; 10_000];
//! let mut w = FrameWriter::new(Vec::new(), Bitrot::minio(), 4096);
//! w.write_all(&data)?;
//! let file = w.finish()?;
//! let layout = ShardLayout::new(4096, data.len() as u64).unwrap();
//! assert_eq!(file.len() as u64, layout.file_size()); // 3 * 32 + 10 000
//! let mut r = FrameReader::new(Cursor::new(file), ShardFrame::minio(layout));
//! r.seek(SeekFrom::Start(5000))?;
//! let mut tail = Vec::new();
//! r.read_to_end(&mut tail)?; // every record verified before use
//! assert_eq!(tail, data[5000..]);
//! # Ok::<(), std::io::Error>(())
//! ```

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod frame;
#[doc(hidden)]
pub mod fuzzing;
mod hasher;
mod io;
mod kernel;
mod multi;
#[cfg(all(target_arch = "aarch64", target_endian = "little"))]
mod neon;
mod portable;
mod selftest;

pub use frame::{
    Bitrot, FrameError, HASH_LEN, LayoutError, ShardFrame, ShardLayout, shard_file_size,
};
pub use hasher::HighwayHasher;
pub use io::{FrameReader, FrameWriter};
pub use kernel::Kernel;
pub use kernel_report::{DetectionReport, KernelError, KernelReport, KernelStatus};

/// MinIO's fixed bitrot key (`magicHighwayHash256Key` in MinIO's
/// `cmd/bitrot.go`): the HighwayHash-256, with an all-zero key, of the first
/// 100 decimals of pi. Every `part.N` digest is keyed with it.
pub const MAGIC_HIGHWAYHASH256_KEY: [u8; 32] = [
    0x4b, 0xe7, 0x34, 0xfa, 0x8e, 0x23, 0x8a, 0xcd, 0x26, 0x3e, 0x83, 0xe6, 0xbb, 0x96, 0x85, 0x52,
    0x04, 0x0f, 0x93, 0x5d, 0xa3, 0x9f, 0x44, 0x14, 0x97, 0xe0, 0x9d, 0x13, 0x22, 0xde, 0x36, 0xa0,
];

/// Keyed HighwayHash-256 of `data` on the detected kernel; equal to
/// minio/highwayhash's `Sum(data, key)`.
pub fn hash256(key: &[u8; 32], data: &[u8]) -> [u8; 32] {
    Kernel::detect().hash256(key, data)
}

/// Keyed HighwayHash-128 of `data` on the detected kernel; equal to
/// minio/highwayhash's `Sum128(data, key)`.
pub fn hash128(key: &[u8; 32], data: &[u8]) -> [u8; 16] {
    Kernel::detect().hash128(key, data)
}

/// Keyed HighwayHash-64 of `data` on the detected kernel; equal to
/// minio/highwayhash's `Sum64(data, key)`.
pub fn hash64(key: &[u8; 32], data: &[u8]) -> u64 {
    Kernel::detect().hash64(key, data)
}

/// `out[i] = hash256(key, inputs[i])` for every input, on the detected
/// kernel, with the streams interleaved.
///
/// # Panics
/// If `inputs.len() != out.len()`.
pub fn hash256_many(key: &[u8; 32], inputs: &[&[u8]], out: &mut [[u8; 32]]) {
    Kernel::detect().hash256_many(key, inputs, out);
}

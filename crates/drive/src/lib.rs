//! The drive layer of Tessera: a [`Drive`] trait over one disk, the local
//! implementation [`LocalDrive`] with an io_uring backend and a thread-pool
//! fallback, a [`DeadlineDrive`] wrapper that bounds every operation in time
//! and takes hung drives offline, aligned buffers, and MinIO's `format.json`.
//!
//! The on-disk layout is MinIO's, so Tessera can serve MinIO drives in place:
//!
//! ```text
//! <root>/.minio.sys/format.json            deployment id, set layout, this drive
//! <root>/.minio.sys/tmp/                   staging of files in flight
//! <root>/.minio.sys/tmp/.trash/            deferred deletion (emptied in the background)
//! <root>/.minio.sys/tmp/.spread/NN/        staging of small files (write_all)
//! <root>/.minio.sys/multipart/             uploads in flight
//! <root>/.minio.sys/buckets/               bucket metadata
//! <root>/<bucket>/<key>/xl.meta            object metadata
//! <root>/<bucket>/<key>/<data-dir>/part.N  shard data
//! ```
//!
//! # Example
//!
//! ```
//! use drive::{AlignedBuf, Backend, Drive, LocalDrive, LocalDriveConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
//! runtime.block_on(async {
//!     let dir = tempfile::tempdir()?;
//!     let drive = LocalDrive::open(dir.path(), LocalDriveConfig::with_backend(Backend::Auto)).await?;
//!
//!     // Small files: atomic, durable replacement.
//!     drive.make_volume("bucket").await?;
//!     drive.write_all("bucket", "photo.jpg/xl.meta", b"metadata".to_vec()).await?;
//!     assert_eq!(drive.read_all("bucket", "photo.jpg/xl.meta", 1 << 20).await?, b"metadata");
//!
//!     // Shard data: staged in tmp, streamed, fdatasync'ed, renamed into place.
//!     let mut writer = drive.create_file(".minio.sys/tmp", "upload-1/data-dir/part.1", Some(5000)).await?;
//!     let mut block = AlignedBuf::with_capacity(5000)?;
//!     block.extend_from_slice(&[7u8; 5000]);
//!     writer.write(block).await?;
//!     assert_eq!(writer.finish().await?, 5000);
//!     drive.rename(".minio.sys/tmp", "upload-1/data-dir", "bucket", "photo.jpg/data-dir").await?;
//!
//!     let (bytes, n) = drive
//!         .read_file_at("bucket", "photo.jpg/data-dir/part.1", 4090, 10, AlignedBuf::with_capacity(8192)?)
//!         .await?;
//!     assert_eq!((n, &bytes[..]), (10, &[7u8; 10][..]));
//!     assert_eq!(drive.list_dir("bucket", "photo.jpg", 100).await?, ["data-dir/", "xl.meta"]);
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # Ok(())
//! # }
//! ```
//!
//! # Backends
//!
//! [`LocalDrive::open`] takes a [`Backend`]: `Auto` creates a ring, checks
//! with `IORING_REGISTER_PROBE` that the kernel has every opcode used, runs a
//! NOP and a `statx` of the root through it, and falls back to the thread
//! pool if any step fails (old kernels, seccomp profiles such as Docker's,
//! `io_uring_disabled`), logging the choice with `tracing`.
//!
//! **io_uring.** One thread per drive owns one ring, fed by a bounded channel
//! (`queue_depth`). Each request is one primitive operation that owns its
//! buffer, path and descriptors, plus a oneshot for the completion; the thread
//! drains the channel, pushes one SQE per request, submits the batch with one
//! `io_uring_enter`, reaps completions and returns each op, buffers included.
//! An eventfd read kept in flight lets senders wake the thread when it sleeps
//! (and only then). Everything that touches files goes through the ring:
//! `openat`, `read`, `write`, `fsync`/`fdatasync`, `fallocate`, `statx`,
//! `mkdirat`, `renameat2` (with `RENAME_EXCHANGE`) and `unlinkat`. Directory
//! listing, `statvfs`, `ftruncate` and recursive trash removal have no
//! opcode on the kernels we target and use the blocking pool in both
//! backends. One exception, in both backends: a read that the caches can
//! serve whole (an `xl.meta` by [`Drive::read_all`], a shard record by
//! [`Drive::read_file_at`]), and the `statx` of a path whose names are
//! cached, run on the calling thread, with `openat2(RESOLVE_CACHED)` and
//! `preadv2(RWF_NOWAIT)`, which fail rather than wait for the disk; any
//! failure sends the call through the backend
//! (`LocalDriveConfig::cached_reads`).
//!
//! Shard files are opened with `O_DIRECT`, transfers use
//! [`AlignedBuf`]s (4096-byte aligned address, offset and length): a writer
//! writes aligned chunks straight from the caller's buffer, copies unaligned
//! chunks into an aligned staging buffer, and writes the final partial block
//! padded with zeros then `ftruncate`s the file to its real length. Reads at
//! unaligned offsets read the aligned span around the range and shift it
//! into place. As `O_DIRECT` bypasses the kernel's readahead, stream readers
//! keep `readahead_chunks` chunk reads in flight ahead of the caller (from a
//! bounded per-drive pool; a reader that finds it empty reads directly). A file system that refuses `O_DIRECT` (`EINVAL` at open, or on
//! a transfer) switches the drive to buffered I/O, logged once. A caller that
//! gives up on an operation (deadline) cannot cause a use-after-free: the op
//! and its buffers stay owned by the ring thread until the kernel completes
//! it.
//!
//! **Thread pool.** The same primitives as blocking system calls (through
//! `rustix`, relative to a descriptor of the drive root) on tokio's blocking
//! pool, at most `max_blocking` at a time per drive, with buffered I/O. The
//! drive logic above the primitives is shared, so both backends have the
//! same semantics, and the whole test suite runs against each.
//!
//! # Durability (fsync) policy
//!
//! An operation that returns `Ok` is durable when the policy below says so;
//! the object layer acknowledges a PUT only after its data files are
//! finished and its data directory and `xl.meta` are in place.
//!
//! * [`Drive::write_all`]: data written to `.minio.sys/tmp/<uuid>`,
//!   `fdatasync`ed, renamed over the target, then the target's parent
//!   directory is `fsync`ed. Directories created on the way are made durable
//!   by `fsync`ing each one's parent.
//! * [`ShardWriter::finish`]: the file's data and size are `fdatasync`ed.
//!   Its directory entry is *not* synced here (it lives in the staging area
//!   and becomes durable when [`Drive::rename`] moves it into place).
//! * [`Drive::rename`]: after the rename, the destination's parent directory
//!   is `fsync`ed, and when a directory was moved, that directory too (which
//!   makes the entries created inside it while staging durable: one level,
//!   as a data directory holds only part files). Directories created for the
//!   destination are synced as for `write_all`.
//! * [`Drive::make_volume`] and [`Drive::delete_volume`] (non-forced) sync
//!   the parent directory.
//! * Deletes ([`Drive::delete`], [`Drive::move_to_trash`], forced volume
//!   deletion, parent cleanup, [`Drive::empty_trash`]) are not synced: after
//!   a power loss a deleted entry may reappear, which the object layer treats
//!   like any stale version (its `xl.meta` decides).
//!
//! # Deadlines and health
//!
//! [`DeadlineDrive`] wraps any drive: every operation (and every write,
//! read and finish of its streams) runs under `op_timeout`; a timeout or an
//! I/O error counts as a fault ([`DriveError::is_fault`]); after
//! `max_consecutive_failures` faults in a row the drive goes offline and
//! operations fail at once with [`DriveError::Offline`], until a background
//! probe (write, read back and delete a file in `.minio.sys/tmp`, started
//! lazily by an operation at most every `probe_interval`) succeeds.

#![warn(missing_docs)]

mod buf;
mod deadline;
mod drive;
mod error;
#[cfg(feature = "fault-injection")]
mod fault;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
mod health;
mod hugepage;
mod local;
pub mod path;
pub mod pipe;
pub mod walk;

pub use buf::{ALIGN, AlignedBuf, BufferPool, MAX_BUF_BYTES, PoolClasses, align_up};
pub use deadline::{DeadlineConfig, DeadlineDrive};
pub use drive::{
    BackendKind, BoxFuture, DirEntryName, DiskInfo, Drive, DriveState, FileInfo, HealthReport,
    IoMode, ShardFile, ShardReader, ShardWriter, VolumeInfo,
};
pub use error::{DriveError, Result};
pub use format::{
    DrivePosition, FormatErasureV3, FormatError, build_formats, check_format, load_format,
    save_format, verify_format,
};
pub use hugepage::{free_page_reporting, huge_page_region_bytes, huge_pages, set_huge_pages};
pub use local::fssync::group_commit_syncs_total;
pub use local::{Backend, LocalDrive, LocalDriveConfig};
pub use walk::{WalkEntry, WalkOptions, WalkPage};

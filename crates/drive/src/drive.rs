//! The [`Drive`] trait: what the erasure object layer needs from one drive.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use uuid::Uuid;

use crate::buf::AlignedBuf;
use crate::error::Result;
use crate::pipe::Pipe;
use crate::walk::{WalkOptions, WalkPage};

/// A boxed, `Send` future: what every asynchronous [`Drive`] method returns,
/// so that the trait can be used as `Arc<dyn Drive>`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A volume (top-level directory of the drive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeInfo {
    /// Volume name.
    pub name: String,
    /// Creation time when the file system records it, else modification time.
    pub created: Option<SystemTime>,
}

/// Kind and size of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    /// Size in bytes (for directories: whatever the file system reports).
    pub size: u64,
    /// Last modification.
    pub modified: Option<SystemTime>,
    /// Whether the path is a directory.
    pub is_dir: bool,
}

/// Space on the drive's file system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskInfo {
    /// Size of the file system, bytes.
    pub total: u64,
    /// Bytes available to this process (`f_bavail`).
    pub free: u64,
    /// Bytes in use (`f_blocks - f_bfree`).
    pub used: u64,
    /// Inodes in total (0 where the file system does not say).
    pub files_total: u64,
    /// Inodes free.
    pub files_free: u64,
    /// File system type (`"ext4"`, `"xfs"`, `"tmpfs"`, ...) when known.
    pub fs_type: Option<String>,
    /// Which I/O backend serves the drive.
    pub backend: BackendKind,
}

/// The I/O backend in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// io_uring on a dedicated ring thread.
    IoUring,
    /// Blocking system calls on tokio's blocking thread pool.
    ThreadPool,
    /// Not a local drive (test doubles, remote drives).
    Other,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::IoUring => "io_uring",
            BackendKind::ThreadPool => "thread-pool",
            BackendKind::Other => "other",
        })
    }
}

/// Health of a drive as last observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriveState {
    /// Working normally.
    Online,
    /// Recent operations failed with drive faults, below the threshold at
    /// which the drive is taken offline.
    Faulty,
    /// Taken out of service: operations fail fast until a probe succeeds.
    Offline,
}

/// Health report of a drive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthReport {
    /// Current state.
    pub state: DriveState,
    /// Drive faults in a row since the last success.
    pub consecutive_failures: u32,
    /// The last drive fault, with when it happened.
    pub last_error: Option<(SystemTime, String)>,
}

impl HealthReport {
    /// A drive with no recorded fault.
    pub fn online() -> Self {
        HealthReport {
            state: DriveState::Online,
            consecutive_failures: 0,
            last_error: None,
        }
    }
}

/// Whether a file descriptor bypasses the page cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoMode {
    /// `O_DIRECT` is set on the descriptor.
    Direct,
    /// Ordinary buffered I/O.
    Buffered,
}

/// One entry of [`Drive::list_dir`].
pub type DirEntryName = String;

/// A file being written as a stream of owned buffers.
///
/// Buffers are taken by value (so the io_uring backend can hand them to the
/// kernel without a copy) and given back for reuse. When nothing is staged,
/// the whole [`ALIGN`](crate::ALIGN) blocks of a write go to disk straight
/// from the caller's buffer and only its tail (under one block) is copied
/// into an internal aligned staging buffer; the write that completes the
/// size announced to [`Drive::create_file`] goes entirely from the caller's
/// buffer (padded with zeros inside its capacity, the file cut back by
/// `finish`). A write that follows a staged tail is copied behind it, so any
/// chunking is accepted, and a caller that keeps its writes aligned (carrying
/// its own tail into the next buffer) is never copied.
///
/// Call [`finish`](Self::finish) to flush and `fdatasync` the file. A writer
/// dropped without `finish` leaves a partial file behind for the caller to
/// delete. After a failed or cancelled (timed out) `write` the writer is
/// poisoned and every further call fails with
/// [`DriveError::Poisoned`](crate::DriveError::Poisoned).
pub trait ShardWriter: Send {
    /// Appends `buf[..]` to the file; returns the buffer (emptied) for
    /// reuse, or, from a writer that keeps `buf` until its bytes are sent
    /// (a drive on another node), [`AlignedBuf::empty`] in its place: a
    /// caller that refills what comes back checks its capacity.
    fn write(&mut self, buf: AlignedBuf) -> BoxFuture<'_, Result<AlignedBuf>>;
    /// Appends every buffer of `bufs`, in order, as calls of
    /// [`write`](Self::write) one after the other would (same checks, same
    /// poisoning); returns the buffers given back (emptied; fewer, or none,
    /// from a writer that keeps them as `write` says). A writer may need fewer
    /// system calls for it: the local drive writes whole blocks of several
    /// buffers with one `pwritev`.
    fn write_many(&mut self, bufs: Vec<AlignedBuf>) -> BoxFuture<'_, Result<Vec<AlignedBuf>>> {
        Box::pin(async move {
            let mut out = Vec::with_capacity(bufs.len());
            for buf in bufs {
                out.push(self.write(buf).await?);
            }
            Ok(out)
        })
    }
    /// Writes what is staged, `fdatasync`s and closes the file, and checks
    /// the size announced to [`Drive::create_file`]. Returns the file size.
    fn finish(self: Box<Self>) -> BoxFuture<'static, Result<u64>>;
    /// Bytes accepted so far.
    fn written(&self) -> u64;
    /// Whether the descriptor really has `O_DIRECT` set, as reported by
    /// `fcntl(F_GETFL)`.
    fn io_mode(&self) -> Result<IoMode>;
}

/// A sequential reader over a range of a file.
pub trait ShardReader: Send {
    /// Reads the next bytes of the range into `buf` (up to its capacity),
    /// setting `buf.len()`; a returned length of 0 means the range is done.
    fn read(&mut self, buf: AlignedBuf) -> BoxFuture<'_, Result<AlignedBuf>>;
    /// Bytes of the range not yet read.
    fn remaining(&self) -> u64;
    /// Whether the descriptor has `O_DIRECT` set.
    fn io_mode(&self) -> Result<IoMode>;
}

/// A file opened for reading at any offset, so that a caller reading many
/// ranges of it (a GET reading a shard file record by record) opens it once
/// instead of once per range, and reads it through one descriptor (whose
/// readahead state then sees the reads in order).
pub trait ShardFile: Send + Sync {
    /// As [`Drive::read_file_at`] on the open file: up to `len` bytes at
    /// `offset` into `buf` (capacity at least `len`), fewer only at end of
    /// file.
    fn read_at(
        &self,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'_, Result<(AlignedBuf, usize)>>;
}

/// One drive, as the erasure object layer sees it.
///
/// Volumes are directories under the drive root (buckets, and MinIO's
/// `.minio.sys/...` meta volumes); paths are `/`-separated and relative to a
/// volume. Every volume and path is validated (see [`crate::path`]): empty,
/// `.`, `..`, absolute or NUL-containing components are refused with
/// [`DriveError::InvalidPath`](crate::DriveError::InvalidPath) before any
/// system call.
pub trait Drive: Send + Sync + fmt::Debug {
    /// The drive's uuid (`this` in its `format.json`) once the format was
    /// loaded and checked, else `None`.
    fn id(&self) -> Option<Uuid>;
    /// Records the drive's uuid (done by [`verify_format`](crate::verify_format)
    /// and [`save_format`](crate::save_format)).
    fn set_id(&self, id: Option<Uuid>);
    /// A human-readable name for logs (the root path, or an endpoint).
    fn label(&self) -> String;
    /// Whether the drive is attached to this process's machine (the
    /// default), not reached over the network: a reader that needs only
    /// some of a set's drives prefers these.
    fn is_local(&self) -> bool {
        true
    }
    /// Current health.
    fn health(&self) -> HealthReport;
    /// Space on the drive's file system.
    fn disk_info(&self) -> BoxFuture<'_, Result<DiskInfo>>;

    /// Creates a volume; `VolumeExists` if it is there. Multi-component
    /// volumes (`.minio.sys/tmp`) get their missing parents created.
    fn make_volume<'a>(&'a self, volume: &'a str) -> BoxFuture<'a, Result<()>>;
    /// Top-level directories except `.minio.sys`, sorted by name.
    fn list_volumes(&self) -> BoxFuture<'_, Result<Vec<VolumeInfo>>>;
    /// A volume's information; `VolumeNotFound` if missing or not a directory.
    fn stat_volume<'a>(&'a self, volume: &'a str) -> BoxFuture<'a, Result<VolumeInfo>>;
    /// Removes an empty volume; `VolumeNotEmpty` otherwise, unless `force`,
    /// which moves the whole volume to the trash. `.minio.sys` itself is
    /// refused.
    fn delete_volume<'a>(&'a self, volume: &'a str, force: bool) -> BoxFuture<'a, Result<()>>;

    /// Reads a whole small file (xl.meta, format.json). Files larger than
    /// `limit` (or the drive's own cap) fail with `TooLarge` without being
    /// read.
    fn read_all<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        limit: u64,
    ) -> BoxFuture<'a, Result<Vec<u8>>>;
    /// Replaces a small file atomically and durably: the data goes to a
    /// temporary file in `.minio.sys/tmp`, is `fdatasync`ed, renamed over
    /// `path` (parents created), and the parent directory is `fsync`ed. A
    /// reader sees the old content or the new one, never a mixture. The
    /// volume must exist.
    fn write_all<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        data: Vec<u8>,
    ) -> BoxFuture<'a, Result<()>>;

    /// Creates (or truncates) `path` for streaming, creating parents. With
    /// `expected_size`, space is preallocated where supported, the file
    /// taking that size at once (bytes not yet written read as zeros; a
    /// writer dropped before [`ShardWriter::finish`] leaves it so), and
    /// `finish` fails unless exactly that many bytes arrived (writing more
    /// fails at once).
    fn create_file<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        expected_size: Option<u64>,
    ) -> BoxFuture<'a, Result<Box<dyn ShardWriter>>>;
    /// Reads up to `len` bytes at `offset` into `buf` (whose capacity must be
    /// at least `len`); returns the buffer, with `len()` set, and the bytes
    /// read, fewer than `len` only at end of file.
    fn read_file_at<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'a, Result<(AlignedBuf, usize)>>;
    /// [`read_file_at`](Drive::read_file_at), and when the bytes came from
    /// the page cache, a [`Pipe`] holding them as well, so that the caller
    /// can send them on without copying them again (see [`crate::pipe`]).
    /// Drives that cannot give one (the default) never do.
    fn read_file_at_piped<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'a, Result<(AlignedBuf, usize, Option<Pipe>)>> {
        Box::pin(async move {
            let (buf, n) = self.read_file_at(volume, path, offset, len, buf).await?;
            Ok((buf, n, None))
        })
    }
    /// Opens a file for [`ShardFile::read_at`]s, or `None` where the drive
    /// reads by path only (the default): the caller then uses
    /// [`read_file_at`](Drive::read_file_at). Fails as `read_file_at` would
    /// for a missing file or volume.
    fn open_shard_file<'a>(
        &'a self,
        _volume: &'a str,
        _path: &'a str,
    ) -> BoxFuture<'a, Result<Option<Arc<dyn ShardFile>>>> {
        Box::pin(async { Ok(None) })
    }
    /// Opens a sequential reader over `offset..offset + len` (`len` `None`:
    /// to the end). Fails with `OutOfRange` if the range passes the end of
    /// the file.
    fn open_reader<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        offset: u64,
        len: Option<u64>,
    ) -> BoxFuture<'a, Result<Box<dyn ShardReader>>>;

    /// Renames a file or directory atomically, creating missing parents of
    /// the destination. A file replaces a file; a directory replaces an empty
    /// directory, and a non-empty one by an atomic exchange (`renameat2`
    /// `RENAME_EXCHANGE`) after which the old directory goes to the trash.
    /// The destination's parent (and a renamed directory itself) is
    /// `fsync`ed.
    fn rename<'a>(
        &'a self,
        src_volume: &'a str,
        src_path: &'a str,
        dst_volume: &'a str,
        dst_path: &'a str,
    ) -> BoxFuture<'a, Result<()>>;
    /// Deletes a file, or a directory: an empty one, or with `recursive` any
    /// (moved to the trash, removed later by [`empty_trash`](Self::empty_trash)).
    /// Then removes the parents that became empty, up to (not including) the
    /// volume. A missing path is not an error. A non-empty directory without
    /// `recursive` is `DirectoryNotEmpty`.
    fn delete<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        recursive: bool,
    ) -> BoxFuture<'a, Result<()>>;
    /// Moves `path` (file or directory) to `.minio.sys/tmp/.trash` without
    /// touching its parents; a missing path is not an error.
    fn move_to_trash<'a>(&'a self, volume: &'a str, path: &'a str) -> BoxFuture<'a, Result<()>>;
    /// Permanently removes up to `max_entries` entries of the trash; returns
    /// how many were removed. Meant to run in the background.
    fn empty_trash(&self, max_entries: usize) -> BoxFuture<'_, Result<usize>>;

    /// Lists a directory: at most `limit` names, the smallest in byte order,
    /// sorted, directories with a trailing `/`. `dir_path` empty lists the
    /// volume itself.
    fn list_dir<'a>(
        &'a self,
        volume: &'a str,
        dir_path: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<DirEntryName>>>;
    /// Kind, size and modification time of a path.
    fn stat_file<'a>(&'a self, volume: &'a str, path: &'a str) -> BoxFuture<'a, Result<FileInfo>>;

    /// One page of `opts.volume` walked in object-key order: objects with
    /// (the head of) their `xl.meta`, and common prefixes; see
    /// [`crate::walk`]. The default method walks with
    /// [`list_dir`](Self::list_dir) and [`read_all`](Self::read_all) (so a
    /// wrapper that forwards only those keeps its behaviour); a local drive
    /// does the whole page in one blocking task.
    fn walk<'a>(&'a self, opts: &'a WalkOptions) -> BoxFuture<'a, Result<WalkPage>> {
        Box::pin(async move { crate::walk::walk(&mut crate::walk::DriveFs(self), opts).await })
    }
}

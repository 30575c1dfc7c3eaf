//! The configuration of a [`LocalDrive`]: the backend,
//! the features that can be turned off, and a bound for every queue, pool
//! and size.

#[cfg(doc)]
use super::LocalDrive;
#[cfg(doc)]
use crate::{Drive, DriveError, ShardFile};

/// Which I/O backend a [`LocalDrive`] uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// io_uring if the kernel allows it (a ring is created, its opcodes
    /// probed and a NOP and a `statx` run through it), else the thread pool.
    /// The choice is logged.
    #[default]
    Auto,
    /// io_uring or fail with [`DriveError::BackendUnavailable`].
    IoUring,
    /// Blocking system calls on tokio's blocking pool.
    ThreadPool,
}

/// Configuration of a [`LocalDrive`]. Every queue and size has a bound.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LocalDriveConfig {
    /// Backend selection.
    pub backend: Backend,
    /// Submission queue entries of the ring (8..=4096): the most operations
    /// in flight in the kernel at once.
    pub ring_entries: u32,
    /// Bound of the channel feeding the ring thread (1..=65536); senders
    /// wait when it is full.
    pub queue_depth: usize,
    /// Most blocking system calls in flight at once for this drive (the
    /// whole thread-pool backend, and listing/statvfs/truncate for io_uring).
    pub max_blocking: usize,
    /// Use `O_DIRECT` for shard files (io_uring backend) where the file
    /// system accepts it.
    pub direct_io: bool,
    /// Use `O_DIRECT` for [`Drive::read_file_at`] too (with `direct_io`).
    /// Off by default: positioned reads (a GET's shard records) go through
    /// the page cache, as MinIO's shard reads do, so an object read again
    /// is served from memory instead of the device every time.
    pub direct_read_at: bool,
    /// Serve reads that need no disk I/O on the calling thread: small-file
    /// reads ([`Drive::read_all`], an `xl.meta`) and positioned reads
    /// without `O_DIRECT` ([`Drive::read_file_at`], a GET's shard records)
    /// first try `openat2(RESOLVE_CACHED)` and `preadv2(RWF_NOWAIT)`, which
    /// succeed only from the dentry and page caches, and go through the
    /// backend when that fails. The `statx` of a path (a volume's check,
    /// [`Drive::stat_file`]) is made the same way, on an `O_PATH`
    /// descriptor, and a name the dentry cache holds as missing answers
    /// `ENOENT` at once. On by default; turned off for good on a kernel or
    /// file system without those flags.
    pub cached_reads: bool,
    /// With `cached_reads`, [`Drive::read_file_at_piped`] leaves the bytes
    /// of a read served from the page cache in a [`Pipe`](crate::pipe::Pipe)
    /// too (`splice`, then a read of the pages it pinned), so that they can
    /// be sent without another copy. Off by default: whether that beats a
    /// plain copy depends on the machine (a pipe holds one buffer per 4 KiB
    /// page, each looked up, confirmed and released on its own). Measured
    /// over loopback with GETs of 16 MiB: 1.1x the MiB per CPU-second on a
    /// 2-vCPU EPYC with AVX2 only, 0.86x on a Zen 5 EPYC, where copies are
    /// cheap (docs/bench-notes/send-paths.md). When on, it is turned off for good
    /// where pipes of [`PIPE_BYTES`](crate::pipe::PIPE_BYTES) cannot be
    /// made or the file system cannot splice.
    pub piped_reads: bool,
    /// Fill the page cache in huge folios when a [`ShardFile`] read misses
    /// it: the first read through a shard file checks whether its range is
    /// cached (`cachestat`), and if not, that read and the later ones
    /// through the same descriptor first bring the 2 MiB-aligned chunks
    /// they touch into the page cache through a transient mapping marked
    /// `MADV_HUGEPAGE` (`MADV_POPULATE_READ`, on the blocking pool), then
    /// read from the cache. The kernel's read-ahead for `read(2)`
    /// fills a file read in several places at once with 4-64 KiB folios,
    /// and every later read of those pages pays per folio: served from
    /// 2 MiB folios, hot 16 MiB GETs gave 1.10x-1.12x the MiB per
    /// CPU-second (`TESSERA_HUGE_FILL=on` against `off` in one binary,
    /// `tessera-bench compare --op get --obj-size 16MiB --concurrent 8`;
    /// docs/bench-notes/get.md). On by default here; turned off
    /// for good on a kernel or file system without `cachestat` (Linux
    /// 6.5), `MADV_POPULATE_READ` (5.14) or `mmap`. File systems without
    /// large folios fill in small ones. Where free memory is
    /// reported to a hypervisor ([`crate::free_page_reporting`]) huge fills cost
    /// more than they save, and the daemon leaves this off there.
    pub huge_fill: bool,
    /// Hard cap of [`Drive::read_all`] and [`Drive::write_all`] sizes, bytes.
    pub max_small_file: u64,
    /// Hard cap of a streamed file's size, bytes.
    pub max_file_size: u64,
    /// Size of the staging buffer a writer uses for unaligned chunks.
    pub staging_bytes: usize,
    /// Most staging buffers out at once (writers with unaligned chunks wait
    /// beyond that).
    pub max_staging_buffers: usize,
    /// Read-ahead of `O_DIRECT` stream readers: chunks kept in flight ahead
    /// of the caller (0 disables). Buffered readers rely on the kernel's.
    pub readahead_chunks: usize,
    /// Size of one read-ahead chunk, bytes.
    pub readahead_bytes: usize,
    /// Most read-ahead buffers out at once for the drive; a reader that finds
    /// none free reads without read-ahead instead of waiting.
    pub max_readahead_buffers: usize,
    /// Most names [`Drive::list_dir`] returns, whatever the caller asks.
    pub max_list_entries: usize,
    /// Empty the trash (`.minio.sys/tmp/.trash`, where deleted and replaced
    /// data goes) in the background: right after deletions, and once a
    /// minute for what earlier runs or other processes left.
    /// Without it, only [`Drive::empty_trash`] frees that space.
    pub background_trash: bool,
    /// Make [`Drive::write_all`]'s files (every `xl.meta`) durable in
    /// groups: concurrent writers on one file system share one
    /// `syncfs(2)` for their staged files and another for their renames,
    /// instead of each paying an `fdatasync` of its file and an `fsync`
    /// of its directory (each a cache flush of the device). The same
    /// guarantee: nothing is acknowledged before a sync that started
    /// after it finished, and a failed sync fails every write that began
    /// before it ended. On by default. `syncfs` also writes back what
    /// other programs left dirty on the same file system, so on a file
    /// system shared with busy writers a commit waits for their data too;
    /// drives of their own are not affected. Used only while shard files
    /// are written with `O_DIRECT` (the io_uring backend, on a file system
    /// that takes it): with buffered shard writes a `syncfs` would write
    /// back the uploads in flight as well, so each write syncs on its own.
    pub group_commit: bool,
    /// Test hook: behave as if the file system refused `O_DIRECT` at open
    /// (`EINVAL`), to exercise the buffered fallback on any file system.
    #[doc(hidden)]
    pub refuse_direct_io_for_tests: bool,
}

impl Default for LocalDriveConfig {
    fn default() -> Self {
        LocalDriveConfig {
            backend: Backend::Auto,
            ring_entries: 256,
            queue_depth: 1024,
            max_blocking: 64,
            direct_io: true,
            direct_read_at: false,
            cached_reads: true,
            piped_reads: false,
            huge_fill: true,
            max_small_file: 64 << 20,
            max_file_size: 16 << 30,
            staging_bytes: 1 << 20,
            max_staging_buffers: 256,
            readahead_chunks: 2,
            readahead_bytes: 1 << 20,
            max_readahead_buffers: 256,
            max_list_entries: 1_000_000,
            background_trash: true,
            group_commit: true,
            refuse_direct_io_for_tests: false,
        }
    }
}

impl LocalDriveConfig {
    /// The default configuration with the given backend.
    pub fn with_backend(backend: Backend) -> Self {
        LocalDriveConfig {
            backend,
            ..Self::default()
        }
    }
}

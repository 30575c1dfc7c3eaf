//! The drive test suite. Every test function of the modules below takes a
//! backend and is instantiated three times by `suite!`: for io_uring, for
//! io_uring with cached reads off, and for the thread pool. Drives live
//! under Cargo's target tmp dir (a real disk file system, so `O_DIRECT` is
//! exercised), not under /tmp, which may be tmpfs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use drive::format::{
    FORMAT_FILE, META_VOLUME, META_VOLUMES, SPREAD_DIRS, SPREAD_VOLUME, TMP_VOLUME, TRASH_VOLUME,
};
use drive::{
    AlignedBuf, Backend, BackendKind, DeadlineConfig, DeadlineDrive, Drive, DriveError,
    DrivePosition, DriveState, FormatError, IoMode, LocalDrive, LocalDriveConfig, ShardFile,
    build_formats, load_format, save_format, verify_format,
};
use uuid::Uuid;

use crate::common::pattern;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// io_uring, default configuration (reads served from the caches on
    /// the calling thread where they can be).
    Uring,
    /// io_uring with cached reads off, so that every read goes through the
    /// ring.
    UringUncached,
    /// The thread pool, with cached reads off, so that every read goes
    /// through the pool.
    Pool,
}

struct Env {
    dir: tempfile::TempDir,
    drive: LocalDrive,
}

impl Env {
    fn root(&self) -> PathBuf {
        self.dir.path().join("drive")
    }
}

fn test_base() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

async fn open_in(kind: Kind, base: &Path, tweak: impl FnOnce(&mut LocalDriveConfig)) -> Env {
    let dir = tempfile::tempdir_in(base).expect("temp dir");
    let backend = match kind {
        Kind::Uring | Kind::UringUncached => Backend::IoUring,
        Kind::Pool => Backend::ThreadPool,
    };
    let mut cfg = LocalDriveConfig::with_backend(backend);
    cfg.cached_reads = kind == Kind::Uring;
    tweak(&mut cfg);
    let drive = match LocalDrive::open(dir.path().join("drive"), cfg.clone()).await {
        Ok(drive) => drive,
        Err(DriveError::BackendUnavailable(reason)) if kind != Kind::Pool => {
            eprintln!(
                "\n!!!!!!!!!! IO_URING REFUSED ON THIS HOST ({reason}).\n\
                 !!!!!!!!!! This io_uring test runs against the THREAD-POOL fallback instead.\n"
            );
            cfg.backend = Backend::ThreadPool;
            LocalDrive::open(dir.path().join("drive"), cfg)
                .await
                .expect("thread-pool drive")
        }
        Err(e) => panic!("opening drive: {e}"),
    };
    if kind == Kind::Pool {
        assert_eq!(drive.backend(), BackendKind::ThreadPool);
    }
    Env { dir, drive }
}

async fn open(kind: Kind) -> Env {
    open_in(kind, &test_base(), |_| {}).await
}

/// For tests that look into the trash and empty it themselves.
fn no_background_trash(cfg: &mut LocalDriveConfig) {
    cfg.background_trash = false;
}

fn invalid<T>(result: &Result<T, DriveError>) -> bool {
    matches!(result, Err(DriveError::InvalidPath(_)))
}

fn aligned(data: &[u8]) -> AlignedBuf {
    AlignedBuf::from_slice(data).unwrap()
}

/// Streams `data` into `volume/path` in chunks of the given sizes (cycled).
async fn stream_write(
    drive: &dyn Drive,
    volume: &str,
    path: &str,
    data: &[u8],
    chunks: &[usize],
) -> u64 {
    let mut writer = drive
        .create_file(volume, path, Some(data.len() as u64))
        .await
        .unwrap();
    let mut offset = 0;
    let mut index = 0;
    let mut buf = AlignedBuf::with_capacity(chunks.iter().copied().max().unwrap_or(1)).unwrap();
    while offset < data.len() {
        let take = chunks[index % chunks.len()].min(data.len() - offset);
        if buf.capacity() < take {
            buf = AlignedBuf::with_capacity(take).unwrap();
        }
        buf.clear();
        buf.extend_from_slice(&data[offset..offset + take]);
        buf = writer.write(buf).await.unwrap();
        assert!(buf.is_empty(), "writer returns the buffer emptied");
        offset += take;
        index += 1;
    }
    assert_eq!(writer.written(), data.len() as u64);
    writer.finish().await.unwrap()
}

macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod io_uring_backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Kind::Uring).await;
                }
            )*
        }
        mod io_uring_backend_uncached_reads {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Kind::UringUncached).await;
                }
            )*
        }
        mod thread_pool_backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Kind::Pool).await;
                }
            )*
        }
    };
}

mod namespace;
mod shard_read;
mod shard_write;
mod small;
mod whole_drive;

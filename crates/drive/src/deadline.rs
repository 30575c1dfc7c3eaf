//! [`DeadlineDrive`]: bounds every operation of a drive in time and takes a
//! drive that keeps failing out of service, so one hung disk cannot hang a
//! request that only needs a quorum of drives.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::buf::AlignedBuf;
use crate::drive::{
    BoxFuture, DirEntryName, DiskInfo, Drive, DriveState, FileInfo, HealthReport, IoMode,
    ShardFile, ShardReader, ShardWriter, VolumeInfo,
};
use crate::error::{DriveError, Result};
use crate::format::TMP_VOLUME;
use crate::health::HealthTracker;
use crate::pipe::Pipe;
use crate::walk::{WalkOptions, WalkPage};

/// Settings of a [`DeadlineDrive`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DeadlineConfig {
    /// Longest any single operation may take (a stream's `write`, `read` and
    /// `finish` each count as one).
    pub op_timeout: Duration,
    /// Faults (timeouts, I/O errors) in a row that take the drive offline.
    pub max_consecutive_failures: u32,
    /// Least time between two probes of an offline drive.
    pub probe_interval: Duration,
}

impl Default for DeadlineConfig {
    fn default() -> Self {
        DeadlineConfig {
            op_timeout: Duration::from_secs(30),
            max_consecutive_failures: 3,
            probe_interval: Duration::from_secs(5),
        }
    }
}

impl DeadlineConfig {
    /// A configuration with the given timeout, failure threshold and probe
    /// interval.
    pub fn new(
        op_timeout: Duration,
        max_consecutive_failures: u32,
        probe_interval: Duration,
    ) -> Self {
        DeadlineConfig {
            op_timeout,
            max_consecutive_failures: max_consecutive_failures.max(1),
            probe_interval,
        }
    }
}

const PROBE_CONTENT: &[u8] = b"tessera drive probe";

struct Shared {
    cfg: DeadlineConfig,
    label: String,
    health: HealthTracker,
    probing: AtomicBool,
    last_probe: Mutex<Option<Instant>>,
}

impl Shared {
    fn offline_error(&self) -> DriveError {
        let text = self.health.last_error_text();
        // An inner drive that was offline itself (a remote drive whose
        // node is down) says so once.
        match text.strip_prefix("drive offline: ") {
            Some(inner) => DriveError::Offline(inner.to_owned()),
            None => DriveError::Offline(text),
        }
    }

    fn record<T>(&self, result: &Result<T>) {
        let failures = self.health.record(result);
        if failures >= self.cfg.max_consecutive_failures && !self.health.is_offline() {
            self.health.set_offline(true);
            if let Ok(mut last) = self.last_probe.lock() {
                *last = Some(Instant::now());
            }
            tracing::warn!(drive = %self.label, failures, error = %self.health.last_error_text(), "drive taken offline");
        }
    }

    /// Runs `fut` under the deadline, recording the outcome.
    async fn guard<T>(&self, fut: impl Future<Output = Result<T>>) -> Result<T> {
        if self.health.is_offline() {
            return Err(self.offline_error());
        }
        #[cfg(feature = "fault-injection")]
        let fut = async {
            crate::fault::inject(&self.label).await?;
            fut.await
        };
        let result = match tokio::time::timeout(self.cfg.op_timeout, fut).await {
            Ok(result) => result,
            Err(_) => Err(DriveError::Timeout(self.cfg.op_timeout)),
        };
        self.record(&result);
        result
    }
}

/// Wraps a drive so that every operation finishes (or fails with
/// [`DriveError::Timeout`]) within [`DeadlineConfig::op_timeout`].
///
/// After [`DeadlineConfig::max_consecutive_failures`] faults in a row the
/// drive is marked offline: operations fail at once with
/// [`DriveError::Offline`] and [`Drive::health`] says
/// [`DriveState::Offline`]. An operation arriving while the drive is offline
/// starts, at most once per [`DeadlineConfig::probe_interval`], a background
/// probe (space query, then write, read back and delete a small file in
/// `.minio.sys/tmp`, all under the deadline); when it succeeds the drive is
/// online again. [`DeadlineDrive::probe_now`] runs one directly.
///
/// A timed-out operation's future is dropped; the local backends are safe
/// against that (buffers stay with the backend until the kernel is done).
pub struct DeadlineDrive<D: Drive + ?Sized + 'static = dyn Drive> {
    inner: Arc<D>,
    shared: Arc<Shared>,
}

impl<D: Drive + ?Sized + 'static> fmt::Debug for DeadlineDrive<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlineDrive")
            .field("inner", &self.inner)
            .field("op_timeout", &self.shared.cfg.op_timeout)
            .field("offline", &self.shared.health.is_offline())
            .finish()
    }
}

impl<D: Drive + ?Sized + 'static> DeadlineDrive<D> {
    /// Wraps `inner`.
    pub fn new(inner: Arc<D>, cfg: DeadlineConfig) -> Self {
        let label = inner.label();
        DeadlineDrive {
            inner,
            shared: Arc::new(Shared {
                cfg,
                label,
                health: HealthTracker::default(),
                probing: AtomicBool::new(false),
                last_probe: Mutex::new(None),
            }),
        }
    }

    /// The wrapped drive.
    pub fn inner(&self) -> &Arc<D> {
        &self.inner
    }

    /// Whether the drive is marked offline.
    pub fn is_offline(&self) -> bool {
        self.shared.health.is_offline()
    }

    /// Probes the drive now (whether or not it is offline) and brings it
    /// back online if the probe succeeds.
    pub async fn probe_now(&self) -> Result<()> {
        run_probe(&*self.inner, &self.shared).await
    }

    async fn guard<T>(&self, fut: impl Future<Output = Result<T>>) -> Result<T> {
        if self.shared.health.is_offline() {
            self.maybe_probe();
        }
        self.shared.guard(fut).await
    }

    /// Starts a background probe if none runs and the last one is old
    /// enough.
    fn maybe_probe(&self) {
        let due = match self.shared.last_probe.lock() {
            Ok(mut last) => {
                let due = last.is_none_or(|at| at.elapsed() >= self.shared.cfg.probe_interval);
                if due && !self.shared.probing.swap(true, Ordering::SeqCst) {
                    *last = Some(Instant::now());
                    true
                } else {
                    false
                }
            }
            Err(_) => false,
        };
        if !due {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.shared.probing.store(false, Ordering::SeqCst);
            return;
        };
        let inner = Arc::clone(&self.inner);
        let shared = Arc::clone(&self.shared);
        runtime.spawn(async move {
            let _ = run_probe(&*inner, &shared).await;
        });
    }
}

/// Probes the drive, settles its health on the outcome, and then removes
/// the probe's file if a failed probe may have left it behind.
async fn run_probe<D: Drive + ?Sized>(drive: &D, shared: &Shared) -> Result<()> {
    let name = format!("probe-{}", Uuid::new_v4());
    let wrote = AtomicBool::new(false);
    let result = probe(drive, &shared.cfg, &name, &wrote).await;
    settle_probe(shared, &result);
    if result.is_err() && wrote.load(Ordering::SeqCst) {
        // The deadline may have cut the probe short after its write reached
        // the drive (a slow fsync on a busy machine is enough), and a write
        // abandoned mid-flight can still land. Remove the file, allowing a
        // slow drive more time than one operation: health is already
        // settled, so nothing waits on this.
        let bound = shared.cfg.op_timeout.saturating_mul(PROBE_CLEANUP_TIMEOUTS);
        let _ = tokio::time::timeout(bound, drive.delete(TMP_VOLUME, &name, false)).await;
    }
    result
}

/// How many operation timeouts the removal of a failed probe's file may take.
const PROBE_CLEANUP_TIMEOUTS: u32 = 4;

async fn probe<D: Drive + ?Sized>(
    drive: &D,
    cfg: &DeadlineConfig,
    name: &str,
    wrote: &AtomicBool,
) -> Result<()> {
    let attempt = async {
        #[cfg(feature = "fault-injection")]
        crate::fault::inject(&drive.label()).await?;
        drive.disk_info().await?;
        wrote.store(true, Ordering::SeqCst);
        drive
            .write_all(TMP_VOLUME, name, PROBE_CONTENT.to_vec())
            .await?;
        let back = drive
            .read_all(TMP_VOLUME, name, PROBE_CONTENT.len() as u64)
            .await;
        let deleted = drive.delete(TMP_VOLUME, name, false).await;
        if back? != PROBE_CONTENT {
            return Err(DriveError::Io {
                op: "probe",
                source: std::io::Error::other("probe file read back with different content"),
            });
        }
        deleted
    };
    match tokio::time::timeout(cfg.op_timeout, attempt).await {
        Ok(result) => result,
        Err(_) => Err(DriveError::Timeout(cfg.op_timeout)),
    }
}

fn settle_probe(shared: &Shared, result: &Result<()>) {
    match result {
        Ok(()) => {
            if shared.health.is_offline() {
                tracing::info!(drive = %shared.label, "drive back online");
            }
            shared.health.set_offline(false);
        }
        Err(e) => {
            shared.health.fault(e);
            tracing::debug!(drive = %shared.label, error = %e, "drive probe failed");
        }
    }
    shared.probing.store(false, Ordering::SeqCst);
}

impl<D: Drive + ?Sized + 'static> Drive for DeadlineDrive<D> {
    fn id(&self) -> Option<Uuid> {
        self.inner.id()
    }

    fn set_id(&self, id: Option<Uuid>) {
        self.inner.set_id(id);
    }

    fn label(&self) -> String {
        self.shared.label.clone()
    }

    fn is_local(&self) -> bool {
        self.inner.is_local()
    }

    fn health(&self) -> HealthReport {
        let own = self.shared.health.report();
        if own.state != DriveState::Online {
            return own;
        }
        let inner = self.inner.health();
        if inner.state == DriveState::Online
            && own.last_error.is_some()
            && inner.last_error.is_none()
        {
            return HealthReport {
                last_error: own.last_error,
                ..inner
            };
        }
        inner
    }

    fn disk_info(&self) -> BoxFuture<'_, Result<DiskInfo>> {
        Box::pin(self.guard(self.inner.disk_info()))
    }

    fn make_volume<'a>(&'a self, volume: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.guard(self.inner.make_volume(volume)))
    }

    fn list_volumes(&self) -> BoxFuture<'_, Result<Vec<VolumeInfo>>> {
        Box::pin(self.guard(self.inner.list_volumes()))
    }

    fn stat_volume<'a>(&'a self, volume: &'a str) -> BoxFuture<'a, Result<VolumeInfo>> {
        Box::pin(self.guard(self.inner.stat_volume(volume)))
    }

    fn delete_volume<'a>(&'a self, volume: &'a str, force: bool) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.guard(self.inner.delete_volume(volume, force)))
    }

    fn read_all<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        limit: u64,
    ) -> BoxFuture<'a, Result<Vec<u8>>> {
        Box::pin(self.guard(self.inner.read_all(volume, path, limit)))
    }

    fn write_all<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        data: Vec<u8>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.guard(self.inner.write_all(volume, path, data)))
    }

    fn create_file<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        expected_size: Option<u64>,
    ) -> BoxFuture<'a, Result<Box<dyn ShardWriter>>> {
        Box::pin(async move {
            let writer = self
                .guard(self.inner.create_file(volume, path, expected_size))
                .await?;
            Ok(Box::new(DeadlineWriter {
                inner: writer,
                shared: Arc::clone(&self.shared),
            }) as Box<dyn ShardWriter>)
        })
    }

    fn read_file_at_piped<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'a, Result<(AlignedBuf, usize, Option<Pipe>)>> {
        Box::pin(
            self.guard(
                self.inner
                    .read_file_at_piped(volume, path, offset, len, buf),
            ),
        )
    }

    fn read_file_at<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'a, Result<(AlignedBuf, usize)>> {
        Box::pin(self.guard(self.inner.read_file_at(volume, path, offset, len, buf)))
    }

    fn open_shard_file<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<Option<Arc<dyn ShardFile>>>> {
        Box::pin(async move {
            let file = self.guard(self.inner.open_shard_file(volume, path)).await?;
            Ok(file.map(|inner| {
                Arc::new(DeadlineFile {
                    inner,
                    shared: Arc::clone(&self.shared),
                }) as Arc<dyn ShardFile>
            }))
        })
    }

    fn open_reader<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        offset: u64,
        len: Option<u64>,
    ) -> BoxFuture<'a, Result<Box<dyn ShardReader>>> {
        Box::pin(async move {
            let reader = self
                .guard(self.inner.open_reader(volume, path, offset, len))
                .await?;
            Ok(Box::new(DeadlineReader {
                inner: reader,
                shared: Arc::clone(&self.shared),
            }) as Box<dyn ShardReader>)
        })
    }

    fn rename<'a>(
        &'a self,
        src_volume: &'a str,
        src_path: &'a str,
        dst_volume: &'a str,
        dst_path: &'a str,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(
            self.guard(
                self.inner
                    .rename(src_volume, src_path, dst_volume, dst_path),
            ),
        )
    }

    fn delete<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        recursive: bool,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.guard(self.inner.delete(volume, path, recursive)))
    }

    fn move_to_trash<'a>(&'a self, volume: &'a str, path: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.guard(self.inner.move_to_trash(volume, path)))
    }

    fn empty_trash(&self, max_entries: usize) -> BoxFuture<'_, Result<usize>> {
        Box::pin(self.guard(self.inner.empty_trash(max_entries)))
    }

    fn list_dir<'a>(
        &'a self,
        volume: &'a str,
        dir_path: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<DirEntryName>>> {
        Box::pin(self.guard(self.inner.list_dir(volume, dir_path, limit)))
    }

    fn stat_file<'a>(&'a self, volume: &'a str, path: &'a str) -> BoxFuture<'a, Result<FileInfo>> {
        Box::pin(self.guard(self.inner.stat_file(volume, path)))
    }

    fn walk<'a>(&'a self, opts: &'a WalkOptions) -> BoxFuture<'a, Result<WalkPage>> {
        Box::pin(self.guard(self.inner.walk(opts)))
    }
}

/// A stream writer whose every call is bounded by the drive's deadline.
struct DeadlineWriter {
    inner: Box<dyn ShardWriter>,
    shared: Arc<Shared>,
}

impl ShardWriter for DeadlineWriter {
    fn write(&mut self, buf: AlignedBuf) -> BoxFuture<'_, Result<AlignedBuf>> {
        Box::pin(async move { self.shared.guard(self.inner.write(buf)).await })
    }

    fn write_many(&mut self, bufs: Vec<AlignedBuf>) -> BoxFuture<'_, Result<Vec<AlignedBuf>>> {
        Box::pin(async move { self.shared.guard(self.inner.write_many(bufs)).await })
    }

    fn finish(self: Box<Self>) -> BoxFuture<'static, Result<u64>> {
        let DeadlineWriter { inner, shared } = *self;
        Box::pin(async move { shared.guard(inner.finish()).await })
    }

    fn written(&self) -> u64 {
        self.inner.written()
    }

    fn io_mode(&self) -> Result<IoMode> {
        self.inner.io_mode()
    }
}

/// An open file whose every read is bounded by the drive's deadline.
struct DeadlineFile {
    inner: Arc<dyn ShardFile>,
    shared: Arc<Shared>,
}

impl ShardFile for DeadlineFile {
    fn read_at(
        &self,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'_, Result<(AlignedBuf, usize)>> {
        Box::pin(self.shared.guard(self.inner.read_at(offset, len, buf)))
    }
}

/// A stream reader whose every call is bounded by the drive's deadline.
struct DeadlineReader {
    inner: Box<dyn ShardReader>,
    shared: Arc<Shared>,
}

impl ShardReader for DeadlineReader {
    fn read(&mut self, buf: AlignedBuf) -> BoxFuture<'_, Result<AlignedBuf>> {
        Box::pin(async move { self.shared.guard(self.inner.read(buf)).await })
    }

    fn remaining(&self) -> u64 {
        self.inner.remaining()
    }

    fn io_mode(&self) -> Result<IoMode> {
        self.inner.io_mode()
    }
}

//! A drive that fails or hangs on demand ([`FaultyDrive`]), and object
//! layers over such drives.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU64, Ordering};

use drive::{
    AlignedBuf, BoxFuture, DirEntryName, DiskInfo, Drive, DriveError, FileInfo, HealthReport,
    LocalDrive, LocalDriveConfig, ShardReader, ShardWriter, VolumeInfo,
};
use object::layer::{LayerOptions, ObjectLayer};
use uuid::Uuid;

/// An object layer over a [`FaultyDrive`] on each of `ds`, and the drives.
pub async fn faulty_layer(ds: &[PathBuf]) -> (ObjectLayer, Vec<Arc<FaultyDrive>>) {
    faulty_layer_with(ds, LayerOptions::default()).await
}

/// [`faulty_layer`] with `opts`.
pub async fn faulty_layer_with(
    ds: &[PathBuf],
    opts: LayerOptions,
) -> (ObjectLayer, Vec<Arc<FaultyDrive>>) {
    let mut faulty = Vec::new();
    let mut drives: Vec<Arc<dyn Drive>> = Vec::new();
    for d in ds {
        let f = FaultyDrive::open(d).await;
        faulty.push(f.clone());
        drives.push(f);
    }
    let l = ObjectLayer::open(drives, opts).await.unwrap();
    (l, faulty)
}

/// How a [`FaultyDrive`] behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Fault {
    /// Pass every call through.
    None = 0,
    /// Fail every call with `DriveError::Offline`.
    Fail = 1,
    /// Never complete any call.
    Hang = 2,
    /// Fail `write_all` (whole-file writes: `xl.meta` edits) with
    /// `DriveError::Offline`, pass everything else through.
    FailWholeWrites = 3,
}

/// A real drive whose every operation can be made to fail or hang.
#[derive(Debug)]
pub struct FaultyDrive {
    inner: Arc<dyn Drive>,
    fault: AtomicU8,
    /// Shard-writer writes still allowed before every further one fails
    /// (negative: no limit).
    writes_left: Arc<AtomicI64>,
}

impl FaultyDrive {
    /// Wraps a `LocalDrive` on `dir` (created if missing).
    pub async fn open(dir: &Path) -> Arc<FaultyDrive> {
        std::fs::create_dir_all(dir).unwrap();
        let inner: Arc<dyn Drive> = Arc::new(
            LocalDrive::open(dir.to_path_buf(), LocalDriveConfig::default())
                .await
                .unwrap(),
        );
        Arc::new(FaultyDrive {
            inner,
            fault: AtomicU8::new(Fault::None as u8),
            writes_left: Arc::new(AtomicI64::new(-1)),
        })
    }

    /// Sets the behaviour from now on.
    pub fn set(&self, fault: Fault) {
        self.fault.store(fault as u8, Ordering::SeqCst);
    }

    /// From now on, the shard writers of this drive (open or created later)
    /// accept `n` more writes in all; every later write fails with
    /// `DriveError::Offline`. `None` lifts the limit.
    pub fn fail_writes_after(&self, n: Option<u64>) {
        let n = n.map_or(-1, |n| i64::try_from(n).unwrap());
        self.writes_left.store(n, Ordering::SeqCst);
    }

    async fn gate(&self) -> Result<(), DriveError> {
        match self.fault.load(Ordering::SeqCst) {
            1 => Err(DriveError::Offline("test fault".into())),
            2 => std::future::pending().await,
            _ => Ok(()),
        }
    }
}

macro_rules! gated {
    ($self:ident, $call:expr) => {
        Box::pin(async move {
            $self.gate().await?;
            $call.await
        })
    };
}

impl Drive for FaultyDrive {
    fn id(&self) -> Option<Uuid> {
        self.inner.id()
    }
    fn set_id(&self, id: Option<Uuid>) {
        self.inner.set_id(id)
    }
    fn label(&self) -> String {
        self.inner.label()
    }
    fn health(&self) -> HealthReport {
        self.inner.health()
    }
    fn disk_info(&self) -> BoxFuture<'_, drive::Result<DiskInfo>> {
        gated!(self, self.inner.disk_info())
    }
    fn make_volume<'a>(&'a self, v: &'a str) -> BoxFuture<'a, drive::Result<()>> {
        gated!(self, self.inner.make_volume(v))
    }
    fn list_volumes(&self) -> BoxFuture<'_, drive::Result<Vec<VolumeInfo>>> {
        gated!(self, self.inner.list_volumes())
    }
    fn stat_volume<'a>(&'a self, v: &'a str) -> BoxFuture<'a, drive::Result<VolumeInfo>> {
        gated!(self, self.inner.stat_volume(v))
    }
    fn delete_volume<'a>(&'a self, v: &'a str, f: bool) -> BoxFuture<'a, drive::Result<()>> {
        gated!(self, self.inner.delete_volume(v, f))
    }
    fn read_all<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        limit: u64,
    ) -> BoxFuture<'a, drive::Result<Vec<u8>>> {
        gated!(self, self.inner.read_all(v, p, limit))
    }
    fn write_all<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        data: Vec<u8>,
    ) -> BoxFuture<'a, drive::Result<()>> {
        if self.fault.load(Ordering::SeqCst) == Fault::FailWholeWrites as u8 {
            return Box::pin(async { Err(DriveError::Offline("test fault".into())) });
        }
        gated!(self, self.inner.write_all(v, p, data))
    }
    fn create_file<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        size: Option<u64>,
    ) -> BoxFuture<'a, drive::Result<Box<dyn ShardWriter>>> {
        Box::pin(async move {
            self.gate().await?;
            let inner = self.inner.create_file(v, p, size).await?;
            Ok(Box::new(FaultyWriter {
                inner,
                writes_left: Arc::clone(&self.writes_left),
            }) as Box<dyn ShardWriter>)
        })
    }
    fn read_file_at<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'a, drive::Result<(AlignedBuf, usize)>> {
        gated!(self, self.inner.read_file_at(v, p, offset, len, buf))
    }
    fn open_reader<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        offset: u64,
        len: Option<u64>,
    ) -> BoxFuture<'a, drive::Result<Box<dyn ShardReader>>> {
        gated!(self, self.inner.open_reader(v, p, offset, len))
    }
    fn rename<'a>(
        &'a self,
        sv: &'a str,
        sp: &'a str,
        dv: &'a str,
        dp: &'a str,
    ) -> BoxFuture<'a, drive::Result<()>> {
        gated!(self, self.inner.rename(sv, sp, dv, dp))
    }
    fn delete<'a>(&'a self, v: &'a str, p: &'a str, r: bool) -> BoxFuture<'a, drive::Result<()>> {
        gated!(self, self.inner.delete(v, p, r))
    }
    fn move_to_trash<'a>(&'a self, v: &'a str, p: &'a str) -> BoxFuture<'a, drive::Result<()>> {
        gated!(self, self.inner.move_to_trash(v, p))
    }
    fn empty_trash(&self, max: usize) -> BoxFuture<'_, drive::Result<usize>> {
        gated!(self, self.inner.empty_trash(max))
    }
    fn list_dir<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, drive::Result<Vec<DirEntryName>>> {
        gated!(self, self.inner.list_dir(v, p, limit))
    }
    fn stat_file<'a>(&'a self, v: &'a str, p: &'a str) -> BoxFuture<'a, drive::Result<FileInfo>> {
        gated!(self, self.inner.stat_file(v, p))
    }
}

/// A shard writer of a [`FaultyDrive`]: fails once the drive's write
/// allowance is spent.
struct FaultyWriter {
    inner: Box<dyn ShardWriter>,
    writes_left: Arc<AtomicI64>,
}

impl ShardWriter for FaultyWriter {
    fn write(&mut self, buf: AlignedBuf) -> BoxFuture<'_, drive::Result<AlignedBuf>> {
        let allowed = self
            .writes_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| match n {
                n if n < 0 => Some(n),
                0 => None,
                n => Some(n - 1),
            })
            .is_ok();
        if allowed {
            self.inner.write(buf)
        } else {
            Box::pin(async { Err(DriveError::Offline("test write fault".into())) })
        }
    }
    fn finish(self: Box<Self>) -> BoxFuture<'static, drive::Result<u64>> {
        self.inner.finish()
    }
    fn written(&self) -> u64 {
        self.inner.written()
    }
    fn io_mode(&self) -> drive::Result<drive::IoMode> {
        self.inner.io_mode()
    }
}

/// A real drive whose commit steps (`rename` into a bucket, `write_all`
/// into a bucket) fail when armed (shard writes to the temp area still
/// work), and whose free space can be made up (0: the real figure).
#[derive(Debug)]
pub struct CommitFault {
    inner: Arc<dyn Drive>,
    armed: AtomicBool,
    free: AtomicU64,
}

impl CommitFault {
    pub async fn open(dir: &Path) -> Arc<CommitFault> {
        std::fs::create_dir_all(dir).unwrap();
        let inner: Arc<dyn Drive> = Arc::new(
            LocalDrive::open(dir.to_path_buf(), LocalDriveConfig::default())
                .await
                .unwrap(),
        );
        Arc::new(CommitFault {
            inner,
            armed: AtomicBool::new(false),
            free: AtomicU64::new(0),
        })
    }

    /// Makes the commit steps fail (`true`) or pass again.
    pub fn arm(&self, on: bool) {
        self.armed.store(on, Ordering::SeqCst);
    }

    /// Makes the drive report `bytes` free (0: the real figure).
    pub fn set_free(&self, bytes: u64) {
        self.free.store(bytes, Ordering::SeqCst);
    }

    fn fails(&self, volume: &str) -> bool {
        self.armed.load(Ordering::SeqCst) && !volume.starts_with(".minio.sys")
    }
}

impl Drive for CommitFault {
    fn id(&self) -> Option<Uuid> {
        self.inner.id()
    }
    fn set_id(&self, id: Option<Uuid>) {
        self.inner.set_id(id)
    }
    fn label(&self) -> String {
        self.inner.label()
    }
    fn health(&self) -> HealthReport {
        self.inner.health()
    }
    fn disk_info(&self) -> BoxFuture<'_, drive::Result<DiskInfo>> {
        Box::pin(async move {
            let mut info = self.inner.disk_info().await?;
            match self.free.load(Ordering::SeqCst) {
                0 => {}
                f => info.free = f,
            }
            Ok(info)
        })
    }
    fn make_volume<'a>(&'a self, v: &'a str) -> BoxFuture<'a, drive::Result<()>> {
        self.inner.make_volume(v)
    }
    fn list_volumes(&self) -> BoxFuture<'_, drive::Result<Vec<VolumeInfo>>> {
        self.inner.list_volumes()
    }
    fn stat_volume<'a>(&'a self, v: &'a str) -> BoxFuture<'a, drive::Result<VolumeInfo>> {
        self.inner.stat_volume(v)
    }
    fn delete_volume<'a>(&'a self, v: &'a str, f: bool) -> BoxFuture<'a, drive::Result<()>> {
        self.inner.delete_volume(v, f)
    }
    fn read_all<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        limit: u64,
    ) -> BoxFuture<'a, drive::Result<Vec<u8>>> {
        self.inner.read_all(v, p, limit)
    }
    fn write_all<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        data: Vec<u8>,
    ) -> BoxFuture<'a, drive::Result<()>> {
        if self.fails(v) {
            return Box::pin(async { Err(DriveError::Offline("commit fault".into())) });
        }
        self.inner.write_all(v, p, data)
    }
    fn create_file<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        size: Option<u64>,
    ) -> BoxFuture<'a, drive::Result<Box<dyn ShardWriter>>> {
        self.inner.create_file(v, p, size)
    }
    fn read_file_at<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'a, drive::Result<(AlignedBuf, usize)>> {
        self.inner.read_file_at(v, p, offset, len, buf)
    }
    fn open_reader<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        offset: u64,
        len: Option<u64>,
    ) -> BoxFuture<'a, drive::Result<Box<dyn ShardReader>>> {
        self.inner.open_reader(v, p, offset, len)
    }
    fn rename<'a>(
        &'a self,
        sv: &'a str,
        sp: &'a str,
        dv: &'a str,
        dp: &'a str,
    ) -> BoxFuture<'a, drive::Result<()>> {
        if self.fails(dv) {
            return Box::pin(async { Err(DriveError::Offline("commit fault".into())) });
        }
        self.inner.rename(sv, sp, dv, dp)
    }
    fn delete<'a>(&'a self, v: &'a str, p: &'a str, r: bool) -> BoxFuture<'a, drive::Result<()>> {
        self.inner.delete(v, p, r)
    }
    fn move_to_trash<'a>(&'a self, v: &'a str, p: &'a str) -> BoxFuture<'a, drive::Result<()>> {
        self.inner.move_to_trash(v, p)
    }
    fn empty_trash(&self, max: usize) -> BoxFuture<'_, drive::Result<usize>> {
        self.inner.empty_trash(max)
    }
    fn list_dir<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, drive::Result<Vec<DirEntryName>>> {
        self.inner.list_dir(v, p, limit)
    }
    fn stat_file<'a>(&'a self, v: &'a str, p: &'a str) -> BoxFuture<'a, drive::Result<FileInfo>> {
        self.inner.stat_file(v, p)
    }
}

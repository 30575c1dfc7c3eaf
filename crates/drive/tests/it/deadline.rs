//! DeadlineDrive against a test double whose operations hang (or fail) on
//! command: one hung drive must not hold up the others, must be taken
//! offline after repeated faults, fail fast while offline, and come back
//! when a probe succeeds.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use drive::{
    AlignedBuf, Backend, BoxFuture, DeadlineConfig, DeadlineDrive, DirEntryName, DiskInfo, Drive,
    DriveError, DriveState, FileInfo, HealthReport, IoMode, LocalDrive, LocalDriveConfig, Result,
    ShardReader, ShardWriter, VolumeInfo,
};
use tokio::sync::watch;
use uuid::Uuid;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Normal,
    Hang,
    FailIo,
    /// `read_all` hangs; everything else runs normally.
    HangReads,
}

/// Forwards to a real drive, or hangs until the mode changes, or fails
/// with an I/O error, depending on its mode.
#[derive(Debug)]
struct FlakyDrive {
    inner: LocalDrive,
    mode: watch::Sender<Mode>,
    calls: AtomicUsize,
}

async fn wait_mode(mode: &watch::Sender<Mode>) -> Result<()> {
    wait_mode_for(mode, false).await
}

async fn wait_mode_for(mode: &watch::Sender<Mode>, whole_file_read: bool) -> Result<()> {
    let mut changes = mode.subscribe();
    loop {
        let current = *changes.borrow_and_update();
        match current {
            Mode::Normal => return Ok(()),
            Mode::HangReads if !whole_file_read => return Ok(()),
            Mode::FailIo => {
                return Err(DriveError::Io {
                    op: "flaky",
                    source: std::io::Error::from_raw_os_error(EIO),
                });
            }
            Mode::Hang | Mode::HangReads => {
                if changes.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

const EIO: i32 = 5;

impl FlakyDrive {
    fn new(inner: LocalDrive) -> Self {
        FlakyDrive {
            inner,
            mode: watch::Sender::new(Mode::Normal),
            calls: AtomicUsize::new(0),
        }
    }

    fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }

    fn gate<'a, T: Send + 'a>(&'a self, fut: BoxFuture<'a, Result<T>>) -> BoxFuture<'a, Result<T>> {
        self.gate_for(fut, false)
    }

    fn gate_for<'a, T: Send + 'a>(
        &'a self,
        fut: BoxFuture<'a, Result<T>>,
        whole_file_read: bool,
    ) -> BoxFuture<'a, Result<T>> {
        Box::pin(async move {
            // Counted when the operation runs, not when its future is built.
            self.calls.fetch_add(1, Ordering::SeqCst);
            wait_mode_for(&self.mode, whole_file_read).await?;
            fut.await
        })
    }
}

struct FlakyWriter {
    inner: Box<dyn ShardWriter>,
    mode: watch::Sender<Mode>,
}

impl ShardWriter for FlakyWriter {
    fn write(&mut self, buf: AlignedBuf) -> BoxFuture<'_, Result<AlignedBuf>> {
        Box::pin(async move {
            wait_mode(&self.mode).await?;
            self.inner.write(buf).await
        })
    }
    fn finish(self: Box<Self>) -> BoxFuture<'static, Result<u64>> {
        Box::pin(async move {
            wait_mode(&self.mode).await?;
            self.inner.finish().await
        })
    }
    fn written(&self) -> u64 {
        self.inner.written()
    }
    fn io_mode(&self) -> Result<IoMode> {
        self.inner.io_mode()
    }
}

impl Drive for FlakyDrive {
    fn id(&self) -> Option<Uuid> {
        self.inner.id()
    }
    fn set_id(&self, id: Option<Uuid>) {
        self.inner.set_id(id)
    }
    fn label(&self) -> String {
        format!("flaky:{}", self.inner.label())
    }
    fn health(&self) -> HealthReport {
        self.inner.health()
    }
    fn disk_info(&self) -> BoxFuture<'_, Result<DiskInfo>> {
        self.gate(self.inner.disk_info())
    }
    fn make_volume<'a>(&'a self, volume: &'a str) -> BoxFuture<'a, Result<()>> {
        self.gate(self.inner.make_volume(volume))
    }
    fn list_volumes(&self) -> BoxFuture<'_, Result<Vec<VolumeInfo>>> {
        self.gate(self.inner.list_volumes())
    }
    fn stat_volume<'a>(&'a self, volume: &'a str) -> BoxFuture<'a, Result<VolumeInfo>> {
        self.gate(self.inner.stat_volume(volume))
    }
    fn delete_volume<'a>(&'a self, volume: &'a str, force: bool) -> BoxFuture<'a, Result<()>> {
        self.gate(self.inner.delete_volume(volume, force))
    }
    fn read_all<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        limit: u64,
    ) -> BoxFuture<'a, Result<Vec<u8>>> {
        self.gate_for(self.inner.read_all(volume, path, limit), true)
    }
    fn write_all<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        data: Vec<u8>,
    ) -> BoxFuture<'a, Result<()>> {
        self.gate(self.inner.write_all(volume, path, data))
    }
    fn create_file<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        expected_size: Option<u64>,
    ) -> BoxFuture<'a, Result<Box<dyn ShardWriter>>> {
        self.gate(Box::pin(async move {
            let inner = self.inner.create_file(volume, path, expected_size).await?;
            Ok(Box::new(FlakyWriter {
                inner,
                mode: self.mode.clone(),
            }) as Box<dyn ShardWriter>)
        }))
    }
    fn read_file_at<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'a, Result<(AlignedBuf, usize)>> {
        self.gate(self.inner.read_file_at(volume, path, offset, len, buf))
    }
    fn open_reader<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        offset: u64,
        len: Option<u64>,
    ) -> BoxFuture<'a, Result<Box<dyn ShardReader>>> {
        self.gate(self.inner.open_reader(volume, path, offset, len))
    }
    fn rename<'a>(
        &'a self,
        src_volume: &'a str,
        src_path: &'a str,
        dst_volume: &'a str,
        dst_path: &'a str,
    ) -> BoxFuture<'a, Result<()>> {
        self.gate(
            self.inner
                .rename(src_volume, src_path, dst_volume, dst_path),
        )
    }
    fn delete<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        recursive: bool,
    ) -> BoxFuture<'a, Result<()>> {
        self.gate(self.inner.delete(volume, path, recursive))
    }
    fn move_to_trash<'a>(&'a self, volume: &'a str, path: &'a str) -> BoxFuture<'a, Result<()>> {
        self.gate(self.inner.move_to_trash(volume, path))
    }
    fn empty_trash(&self, max_entries: usize) -> BoxFuture<'_, Result<usize>> {
        self.gate(self.inner.empty_trash(max_entries))
    }
    fn list_dir<'a>(
        &'a self,
        volume: &'a str,
        dir_path: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<DirEntryName>>> {
        self.gate(self.inner.list_dir(volume, dir_path, limit))
    }
    fn stat_file<'a>(&'a self, volume: &'a str, path: &'a str) -> BoxFuture<'a, Result<FileInfo>> {
        self.gate(self.inner.stat_file(volume, path))
    }
}

async fn local(dir: &tempfile::TempDir, name: &str) -> LocalDrive {
    let drive = LocalDrive::open(
        dir.path().join(name),
        LocalDriveConfig::with_backend(Backend::Auto),
    )
    .await
    .unwrap();
    drive.make_volume("b").await.unwrap();
    drive
        .write_all("b", "obj/xl.meta", name.as_bytes().to_vec())
        .await
        .unwrap();
    drive
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn cfg(timeout_ms: u64, failures: u32, probe_ms: u64) -> DeadlineConfig {
    DeadlineConfig::new(
        Duration::from_millis(timeout_ms),
        failures,
        Duration::from_millis(probe_ms),
    )
}

/// Generous bound on how long a test waits for an event (a machine shared
/// with builds can stall for seconds); an event that never comes fails the
/// test at this bound instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(30);

/// `fut`'s output, or a failure naming `what` if it takes longer than
/// [`PATIENCE`].
async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(PATIENCE, fut).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: nothing after {PATIENCE:?}"),
    }
}

/// Waits, polling every 20 ms, until `cond` holds; fails after
/// [`PATIENCE`].
async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    within(what, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_drive_does_not_hold_up_the_others() {
    let dir = tempdir();
    let mut drives: Vec<Arc<dyn Drive>> = Vec::new();
    for i in 0..3 {
        let healthy = local(&dir, &format!("d{i}")).await;
        drives.push(Arc::new(DeadlineDrive::new(
            Arc::new(healthy),
            cfg(60_000, 3, 1000),
        )));
    }
    let flaky = Arc::new(FlakyDrive::new(local(&dir, "hung").await));
    flaky.set(Mode::Hang);
    // A deadline far beyond the test: this drive stays hung while the
    // others answer.
    drives.push(Arc::new(DeadlineDrive::new(
        Arc::clone(&flaky),
        cfg(60_000, 3, 1000),
    )));

    let mut tasks = Vec::new();
    for drive in &drives {
        let drive = Arc::clone(drive);
        tasks.push(tokio::spawn(async move {
            drive.read_all("b", "obj/xl.meta", 1024).await
        }));
    }
    let hung = tasks.pop().unwrap();
    for (i, task) in tasks.into_iter().enumerate() {
        let result = within("a healthy drive's read", task).await.unwrap();
        assert_eq!(result.unwrap(), format!("d{i}").as_bytes());
    }
    assert!(
        !hung.is_finished(),
        "the hung drive answered: the others were not shown to go on without it"
    );
    assert_eq!(drives[0].health().state, DriveState::Online);
    hung.abort();

    // The same hung drive under a short deadline: cut off with the timeout
    // error, not before the deadline, and marked faulty.
    let short = DeadlineDrive::new(Arc::clone(&flaky), cfg(300, 3, 1000));
    let began = Instant::now();
    let result = within(
        "the hung drive's read",
        short.read_all("b", "obj/xl.meta", 1024),
    )
    .await;
    let took = began.elapsed();
    assert!(matches!(result, Err(DriveError::Timeout(_))), "{result:?}");
    assert!(
        took >= Duration::from_millis(290),
        "cut off after {took:?}, before its deadline"
    );
    assert_eq!(short.health().state, DriveState::Faulty);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_after_repeated_timeouts_then_back_online() {
    let dir = tempdir();
    let flaky = Arc::new(FlakyDrive::new(local(&dir, "d").await));
    let probe_ms = 1000;
    let drive = DeadlineDrive::new(Arc::clone(&flaky), cfg(100, 3, probe_ms));
    flaky.set(Mode::Hang);
    let mut before_offline = Instant::now();
    for attempt in 1..=3u32 {
        before_offline = Instant::now();
        let result = within("a hung stat", drive.stat_file("b", "obj/xl.meta")).await;
        assert!(matches!(result, Err(DriveError::Timeout(_))), "{result:?}");
        let health = drive.health();
        assert_eq!(
            health.consecutive_failures,
            if attempt < 3 { attempt } else { 3 }
        );
    }
    let health = drive.health();
    assert_eq!(health.state, DriveState::Offline);
    assert!(
        health
            .last_error
            .as_ref()
            .is_some_and(|(_, text)| text.contains("timed out")),
        "{health:?}"
    );
    assert!(drive.is_offline());

    // Fails at once while offline, without touching the drive: the
    // answer is `Offline`, not the hung drive's timeout.
    let calls_before = flaky.calls.load(Ordering::SeqCst);
    assert!(matches!(
        drive.read_all("b", "obj/xl.meta", 1024).await,
        Err(DriveError::Offline(_))
    ));
    // No probe is due before the interval is over (checked only while
    // it certainly is not: a stalled machine may already be past it).
    if before_offline.elapsed() < Duration::from_millis(probe_ms) {
        assert_eq!(
            flaky.calls.load(Ordering::SeqCst),
            calls_before,
            "no probe due yet, nothing forwarded"
        );
    }

    // Still hung: once the interval is over, an operation starts a probe,
    // which fails, and the drive stays offline.
    within("a probe to start", async {
        while flaky.calls.load(Ordering::SeqCst) == calls_before {
            assert!(matches!(
                drive.read_all("b", "obj/xl.meta", 1024).await,
                Err(DriveError::Offline(_))
            ));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // The failed probe counts as one more fault.
    wait_until("the probe to fail", || {
        drive.health().consecutive_failures > 3
    })
    .await;
    assert!(
        drive.is_offline(),
        "a probe of a hung drive must not bring it back"
    );

    // The drive recovers; a lazy probe brings it back.
    flaky.set(Mode::Normal);
    within("the drive to come back", async {
        loop {
            match drive.read_all("b", "obj/xl.meta", 1024).await {
                Ok(data) => {
                    assert_eq!(data, b"d");
                    break;
                }
                Err(DriveError::Offline(_)) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("drive did not come back: {e}"),
            }
        }
    })
    .await;
    assert_eq!(drive.health().state, DriveState::Online);
    assert_eq!(drive.health().consecutive_failures, 0);
    // The probes cleaned up after themselves, including one the deadline
    // cut short after its write (which a busy machine can cause), whose
    // removal runs after the probe has settled.
    no_probe_files_left(&flaky.inner).await;
}

/// Waits (up to [`PATIENCE`]) until no probe file is left in the drive's
/// tmp area.
async fn no_probe_files_left(drive: &LocalDrive) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let tmp = drive.list_dir(".minio.sys/tmp", "", 100).await.unwrap();
        if tmp.iter().all(|name| !name.starts_with("probe-")) {
            return;
        }
        assert!(Instant::now() < deadline, "probe files left: {tmp:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_cut_short_after_its_write_removes_its_file() {
    let dir = tempdir();
    let flaky = Arc::new(FlakyDrive::new(local(&dir, "d").await));
    let drive = DeadlineDrive::new(Arc::clone(&flaky), cfg(100, 1, 60_000));
    flaky.set(Mode::FailIo);
    assert!(drive.stat_file("b", "obj/xl.meta").await.is_err());
    assert!(drive.is_offline());
    // The probe's write lands, its read-back hangs past the deadline.
    flaky.set(Mode::HangReads);
    assert!(matches!(
        drive.probe_now().await,
        Err(DriveError::Timeout(_))
    ));
    assert!(drive.is_offline());
    // probe_now returns after the removal: nothing left, no polling needed.
    let tmp = flaky
        .inner
        .list_dir(".minio.sys/tmp", "", 100)
        .await
        .unwrap();
    assert!(
        tmp.iter().all(|name| !name.starts_with("probe-")),
        "{tmp:?}"
    );
    flaky.set(Mode::Normal);
    drive.probe_now().await.unwrap();
    assert!(!drive.is_offline());
    no_probe_files_left(&flaky.inner).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn io_errors_count_and_expected_errors_reset() {
    let dir = tempdir();
    let flaky = Arc::new(FlakyDrive::new(local(&dir, "d").await));
    let drive = DeadlineDrive::new(Arc::clone(&flaky), cfg(1000, 3, 60_000));
    flaky.set(Mode::FailIo);
    for _ in 0..2 {
        assert!(matches!(
            drive.list_volumes().await,
            Err(DriveError::Io { .. })
        ));
    }
    assert_eq!(drive.health().state, DriveState::Faulty);
    assert_eq!(drive.health().consecutive_failures, 2);
    flaky.set(Mode::Normal);
    // A missing file is an answer, not a fault: it resets the count.
    assert!(matches!(
        drive.read_all("b", "missing", 10).await,
        Err(DriveError::FileNotFound)
    ));
    assert_eq!(drive.health().state, DriveState::Online);
    flaky.set(Mode::FailIo);
    for _ in 0..3 {
        assert!(drive.read_all("b", "obj/xl.meta", 10).await.is_err());
    }
    assert!(drive.is_offline());
    assert!(
        drive.probe_now().await.is_err(),
        "probe of a failing drive fails"
    );
    assert!(drive.is_offline());
    flaky.set(Mode::Normal);
    drive.probe_now().await.unwrap();
    assert!(!drive.is_offline());
    assert_eq!(drive.read_all("b", "obj/xl.meta", 10).await.unwrap(), b"d");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_calls_have_deadlines_too() {
    let dir = tempdir();
    let flaky = Arc::new(FlakyDrive::new(local(&dir, "d").await));
    let drive = DeadlineDrive::new(Arc::clone(&flaky), cfg(150, 10, 60_000));
    let mut writer = drive.create_file("b", "part.1", None).await.unwrap();
    writer
        .write(AlignedBuf::from_slice(&[1; 4096]).unwrap())
        .await
        .unwrap();
    flaky.set(Mode::Hang);
    // The drive hangs for good: only the deadline ends these calls.
    let result = within(
        "a hung write",
        writer.write(AlignedBuf::from_slice(&[2; 4096]).unwrap()),
    )
    .await;
    assert!(matches!(result, Err(DriveError::Timeout(_))), "{result:?}");
    let result = within("a hung finish", writer.finish()).await;
    assert!(matches!(result, Err(DriveError::Timeout(_))), "{result:?}");
    assert_eq!(drive.health().consecutive_failures, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wraps_a_real_drive_as_dyn_drive() {
    let dir = tempdir();
    let inner: Arc<dyn Drive> = Arc::new(local(&dir, "d").await);
    let drive: Arc<dyn Drive> = Arc::new(DeadlineDrive::new(inner, DeadlineConfig::default()));
    let mut writer = drive
        .create_file("b", "obj/dd/part.1", Some(5))
        .await
        .unwrap();
    writer
        .write(AlignedBuf::from_slice(b"hello").unwrap())
        .await
        .unwrap();
    assert_eq!(writer.finish().await.unwrap(), 5);
    let mut reader = drive
        .open_reader("b", "obj/dd/part.1", 1, None)
        .await
        .unwrap();
    let buf = reader
        .read(AlignedBuf::with_capacity(4096).unwrap())
        .await
        .unwrap();
    assert_eq!(&buf[..], b"ello");
    assert_eq!(
        drive.list_dir("b", "obj", 10).await.unwrap(),
        ["dd/", "xl.meta"]
    );
    assert_eq!(drive.health().state, DriveState::Online);
}

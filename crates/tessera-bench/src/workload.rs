//! Running one workload: prepare (untimed), the timed phase with N
//! workers, a progress line per second, an untimed read-back check and
//! cleanup; the result.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::client::OpError;
use crate::hist::{Histogram, LatencySummary};
use crate::pattern::Rng;
use crate::procstat::{Probe, Usage};
use crate::s3::{S3, with_timeout};
use crate::units::SizeSpec;

/// Most objects a run may involve.
pub const MAX_OBJECTS: u64 = 10_000_000;
/// Most workers.
pub const MAX_CONCURRENT: usize = 1024;
/// Most objects the mixed workload keeps track of.
pub const MAX_MIXED_POOL: usize = 1_000_000;
/// Most distinct error kinds kept (the rest are counted as "other").
const MAX_ERROR_KINDS: usize = 32;
/// Error messages kept as samples.
const MAX_ERROR_SAMPLES: usize = 5;
/// Most objects the cleanup deletes.
const MAX_CLEANUP: usize = 1_000_000;

/// One kind of request the workloads make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    Put,
    Get,
    Delete,
    Stat,
    List,
    Multipart,
}

impl OpKind {
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Put => "put",
            OpKind::Get => "get",
            OpKind::Delete => "delete",
            OpKind::Stat => "stat",
            OpKind::List => "list",
            OpKind::Multipart => "multipart",
        }
    }
}

/// Shares of the mixed workload (relative weights).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shares {
    pub get: u32,
    pub put: u32,
    pub delete: u32,
    pub stat: u32,
}

impl Shares {
    fn total(&self) -> u64 {
        u64::from(self.get) + u64::from(self.put) + u64::from(self.delete) + u64::from(self.stat)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    Put,
    Get,
    Delete,
    Stat,
    List,
    Multipart,
    Mixed(Shares),
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Workload::Put => f.write_str("put"),
            Workload::Get => f.write_str("get"),
            Workload::Delete => f.write_str("delete"),
            Workload::Stat => f.write_str("stat"),
            Workload::List => f.write_str("list"),
            Workload::Multipart => f.write_str("multipart"),
            Workload::Mixed(s) => write!(
                f,
                "mixed(get {}, put {}, delete {}, stat {})",
                s.get, s.put, s.delete, s.stat
            ),
        }
    }
}

impl Workload {
    /// Whether the timed phase works on prepared objects.
    pub fn needs_prepare(&self) -> bool {
        matches!(
            self,
            Workload::Get | Workload::Stat | Workload::Delete | Workload::List | Workload::Mixed(_)
        )
    }
}

/// Everything a run needs besides the client.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub workload: Workload,
    pub size: SizeSpec,
    pub concurrent: usize,
    /// Length of the timed phase; `None`: until `objects` are done (put,
    /// multipart, delete).
    pub duration: Option<Duration>,
    /// put/multipart: objects to write; get/stat/mixed: objects prepared;
    /// delete: objects prepared and deleted; list: keys listed.
    pub objects: u64,
    pub bucket: String,
    /// Every key of the run starts with it (fresh per run).
    pub prefix: String,
    pub part_size: u64,
    pub part_concurrency: usize,
    pub max_keys: u32,
    pub timeout: Duration,
    /// Delete the run's objects afterwards (untimed).
    pub cleanup: bool,
    /// After put/multipart: objects read back and verified (untimed).
    pub verify: usize,
    pub progress: bool,
    pub label: String,
    /// The objects under `prefix` exist already (list in compare mode).
    pub skip_prepare: bool,
}

/// Figures of one kind of request.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct OpSummary {
    pub ops: u64,
    pub errors: u64,
    pub bytes: u64,
    pub mib_s: f64,
    pub obj_s: f64,
    pub latency: LatencySummary,
}

/// What a server process used during the timed phase.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerUsage {
    pub pid: u32,
    pub cpu_seconds: f64,
    /// Payload MiB per server CPU-second (0 when no bytes move).
    pub mib_per_cpu_s: f64,
    /// Successful operations per server CPU-second.
    pub ops_per_cpu_s: f64,
    pub peak_rss_mib: f64,
}

/// The result of one run (`--json` writes it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    pub label: String,
    pub workload: String,
    pub endpoints: Vec<String>,
    pub bucket: String,
    pub prefix: String,
    pub obj_size: String,
    pub concurrent: usize,
    pub seed: u64,
    pub started_unix: u64,
    pub prepare_s: f64,
    pub elapsed_s: f64,
    /// Successful operations.
    pub ops: u64,
    pub errors: u64,
    /// Payload bytes moved by successful operations.
    pub bytes: u64,
    pub mib_s: f64,
    pub obj_s: f64,
    pub latency: LatencySummary,
    pub errors_by_kind: BTreeMap<String, u64>,
    pub error_samples: Vec<String>,
    pub by_op: BTreeMap<String, OpSummary>,
    /// list: keys seen per complete listing (last one).
    pub keys_per_listing: Option<u64>,
    /// Objects read back and verified after the timed phase.
    pub verified_after: u64,
    pub server: Option<ServerUsage>,
}

/// Why a run stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// Wrong content, or a setup step that makes the run meaningless.
    Fatal(String),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Fatal(m) => f.write_str(m),
        }
    }
}

#[derive(Debug, Default, Clone)]
struct KindStats {
    ops: u64,
    errors: u64,
    bytes: u64,
    hist: Histogram,
}

#[derive(Debug, Default)]
struct WorkerStats {
    kinds: BTreeMap<OpKind, KindStats>,
    errors: BTreeMap<String, u64>,
    samples: Vec<String>,
    keys_per_listing: Option<u64>,
}

impl WorkerStats {
    fn ok(&mut self, kind: OpKind, bytes: u64, micros: u64) {
        let k = self.kinds.entry(kind).or_default();
        k.ops += 1;
        k.bytes += bytes;
        k.hist.record(micros);
    }

    fn err(&mut self, kind: OpKind, e: &OpError, what: &str) {
        self.kinds.entry(kind).or_default().errors += 1;
        add_error(
            &mut self.errors,
            &mut self.samples,
            &e.kind(),
            &format!("{what}: {e}"),
        );
    }

    fn merge(&mut self, o: WorkerStats) {
        for (k, s) in o.kinds {
            let m = self.kinds.entry(k).or_default();
            m.ops += s.ops;
            m.errors += s.errors;
            m.bytes += s.bytes;
            m.hist.merge(&s.hist);
        }
        for (k, n) in o.errors {
            let key = if self.errors.len() >= MAX_ERROR_KINDS && !self.errors.contains_key(&k) {
                "other".to_owned()
            } else {
                k
            };
            *self.errors.entry(key).or_default() += n;
        }
        for s in o.samples {
            if self.samples.len() < MAX_ERROR_SAMPLES {
                self.samples.push(s);
            }
        }
        if o.keys_per_listing.is_some() {
            self.keys_per_listing = o.keys_per_listing;
        }
    }
}

fn add_error(map: &mut BTreeMap<String, u64>, samples: &mut Vec<String>, kind: &str, msg: &str) {
    let key = if map.len() >= MAX_ERROR_KINDS && !map.contains_key(kind) {
        "other".to_owned()
    } else {
        kind.to_owned()
    };
    *map.entry(key).or_default() += 1;
    if samples.len() < MAX_ERROR_SAMPLES {
        samples.push(msg.to_owned());
    }
}

#[derive(Debug, Clone)]
struct Obj {
    key: String,
    size: u64,
    readers: Arc<AtomicU32>,
}

struct Shared {
    stop: AtomicBool,
    ops: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
    next: AtomicU64,
    fatal: Mutex<Option<String>>,
    /// Prepared objects (get, stat, delete) and the mixed pool.
    objects: Mutex<Vec<Obj>>,
    /// Objects written in the timed phase, for the read-back check.
    written: Mutex<Vec<(String, u64)>>,
}

impl Shared {
    fn new() -> Shared {
        Shared {
            stop: AtomicBool::new(false),
            ops: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            next: AtomicU64::new(0),
            fatal: Mutex::new(None),
            objects: Mutex::new(Vec::new()),
            written: Mutex::new(Vec::new()),
        }
    }

    fn set_fatal(&self, msg: String) {
        let mut f = self.fatal.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_none() {
            *f = Some(msg);
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    fn fatal(&self) -> Option<String> {
        self.fatal.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Prints progress lines on stderr once per second until dropped.
struct Progress {
    stop: Arc<AtomicBool>,
    handle: Option<tokio::task::JoinHandle<()>>,
}

impl Progress {
    fn start(
        label: String,
        what: String,
        shared: Arc<Shared>,
        total: Option<u64>,
        on: bool,
    ) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let handle = on.then(|| {
            let stop = stop.clone();
            tokio::spawn(async move {
                let tty = std::io::stderr().is_terminal();
                let t0 = Instant::now();
                let (mut last_ops, mut last_bytes) = (0u64, 0u64);
                let mut tick = tokio::time::interval_at(
                    tokio::time::Instant::now() + Duration::from_secs(1),
                    Duration::from_secs(1),
                );
                loop {
                    tick.tick().await;
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let ops = shared.ops.load(Ordering::Relaxed);
                    let bytes = shared.bytes.load(Ordering::Relaxed);
                    let errors = shared.errors.load(Ordering::Relaxed);
                    let of = total.map_or(String::new(), |t| format!("/{t}"));
                    let line = format!(
                        "{label}{what} {:>4.0}s  {ops}{of} ops  {:.1} ops/s  {:.1} MiB/s  errors {errors}",
                        t0.elapsed().as_secs_f64(),
                        (ops - last_ops) as f64,
                        (bytes - last_bytes) as f64 / (1 << 20) as f64,
                    );
                    last_ops = ops;
                    last_bytes = bytes;
                    let mut e = std::io::stderr().lock();
                    if tty {
                        let _ = write!(e, "\r\x1b[2K{line}");
                    } else {
                        let _ = writeln!(e, "{line}");
                    }
                    let _ = e.flush();
                }
                if tty {
                    let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
                }
            })
        });
        Progress { stop, handle }
    }

    async fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            h.abort();
            let _ = h.await;
            if std::io::stderr().is_terminal() {
                let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
            }
        }
    }
}

fn micros(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

/// Runs one workload against `s3`; `probe` (a server process) is measured
/// over the timed phase only.
pub async fn run(
    s3: Arc<S3>,
    cfg: &RunConfig,
    mut probe: Option<&mut Probe>,
) -> Result<RunResult, RunError> {
    let cfg = Arc::new(cfg.clone());
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let label = if cfg.label.is_empty() {
        String::new()
    } else {
        format!("[{}] ", cfg.label)
    };

    // Bucket.
    with_timeout(cfg.timeout, s3.ensure_bucket(0, &cfg.bucket))
        .await
        .map_err(|e| RunError::Fatal(format!("bucket {}: {e}", cfg.bucket)))?;
    let shared = Arc::new(Shared::new());

    // Prepare.
    let t_prep = Instant::now();
    if cfg.workload.needs_prepare() {
        let objs = if cfg.skip_prepare {
            existing(&s3, &cfg).await?
        } else {
            prepare(&s3, &cfg, &label).await?
        };
        *lock(&shared.objects) = objs;
    }
    let prepare_s = t_prep.elapsed().as_secs_f64();

    // Timed phase.
    let total = match cfg.workload {
        Workload::Put | Workload::Multipart | Workload::Delete if cfg.objects < MAX_OBJECTS => {
            Some(cfg.objects)
        }
        _ => None,
    };
    let progress = Progress::start(
        label.clone(),
        cfg.workload.to_string(),
        shared.clone(),
        total,
        cfg.progress,
    );
    if let Some(p) = probe.as_deref_mut() {
        p.start();
    }
    let t0 = Instant::now();
    let deadline = cfg.duration.map(|d| t0 + d);
    let mut handles = Vec::with_capacity(cfg.concurrent);
    for w in 0..cfg.concurrent {
        let (s3, cfg, shared) = (s3.clone(), cfg.clone(), shared.clone());
        handles.push(tokio::spawn(worker(w, s3, cfg, shared, deadline)));
    }
    let mut stats = WorkerStats::default();
    for h in handles {
        match h.await {
            Ok(s) => stats.merge(s),
            Err(e) => shared.set_fatal(format!("worker panicked: {e}")),
        }
    }
    let elapsed = t0.elapsed();
    let usage: Option<(u32, Usage)> = match probe {
        Some(p) => p.stop().map(|u| (p.pid(), u)),
        None => None,
    };
    progress.finish().await;
    if let Some(f) = shared.fatal() {
        return Err(RunError::Fatal(f));
    }

    // Read back some of what was written (untimed).
    let mut verified_after = 0;
    if matches!(cfg.workload, Workload::Put | Workload::Multipart) && cfg.verify > 0 {
        let written: Vec<(String, u64)> = lock(&shared.written).clone();
        for (key, size) in written.iter().take(cfg.verify) {
            match with_timeout(cfg.timeout, s3.get(0, &cfg.bucket, key, *size)).await {
                Ok(_) => verified_after += 1,
                Err(e) => {
                    return Err(RunError::Fatal(format!(
                        "reading back {key} ({size} bytes), written and acknowledged during the run: {e}"
                    )));
                }
            }
        }
    }

    if cfg.cleanup {
        cleanup(&s3, &cfg, &label).await;
    }

    Ok(result(
        &s3,
        &cfg,
        stats,
        elapsed,
        prepare_s,
        started_unix,
        verified_after,
        usage,
    ))
}

#[allow(clippy::too_many_arguments)]
fn result(
    s3: &S3,
    cfg: &RunConfig,
    stats: WorkerStats,
    elapsed: Duration,
    prepare_s: f64,
    started_unix: u64,
    verified_after: u64,
    usage: Option<(u32, Usage)>,
) -> RunResult {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let mut all = Histogram::new();
    let (mut ops, mut errors, mut bytes) = (0, 0, 0);
    let mut by_op = BTreeMap::new();
    for (k, s) in &stats.kinds {
        all.merge(&s.hist);
        ops += s.ops;
        errors += s.errors;
        bytes += s.bytes;
        by_op.insert(
            k.name().to_owned(),
            OpSummary {
                ops: s.ops,
                errors: s.errors,
                bytes: s.bytes,
                mib_s: s.bytes as f64 / (1 << 20) as f64 / secs,
                obj_s: s.ops as f64 / secs,
                latency: s.hist.summary(),
            },
        );
    }
    // Errors outside the timed kinds (none today) still count.
    errors = errors.max(stats.errors.values().sum());
    let mib = bytes as f64 / (1 << 20) as f64;
    let server = usage.map(|(pid, u)| {
        let cpu = u.cpu_seconds;
        ServerUsage {
            pid,
            cpu_seconds: cpu,
            mib_per_cpu_s: if cpu > 0.0 { mib / cpu } else { 0.0 },
            ops_per_cpu_s: if cpu > 0.0 { ops as f64 / cpu } else { 0.0 },
            peak_rss_mib: u.peak_rss_bytes as f64 / (1 << 20) as f64,
        }
    });
    RunResult {
        label: cfg.label.clone(),
        workload: cfg.workload.to_string(),
        endpoints: s3.pool.endpoints().iter().map(|e| e.url()).collect(),
        bucket: cfg.bucket.clone(),
        prefix: cfg.prefix.clone(),
        obj_size: cfg.size.to_string(),
        concurrent: cfg.concurrent,
        seed: s3.seed,
        started_unix,
        prepare_s,
        elapsed_s: secs,
        ops,
        errors,
        bytes,
        mib_s: mib / secs,
        obj_s: ops as f64 / secs,
        latency: all.summary(),
        errors_by_kind: stats.errors,
        error_samples: stats.samples,
        by_op,
        keys_per_listing: stats.keys_per_listing,
        verified_after,
        server,
    }
}

fn prepared_key(cfg: &RunConfig, i: u64) -> String {
    format!("{}obj-{i:08}", cfg.prefix)
}

/// Uploads the objects the timed phase works on.
async fn prepare(s3: &Arc<S3>, cfg: &Arc<RunConfig>, label: &str) -> Result<Vec<Obj>, RunError> {
    let n = cfg.objects;
    let mut rng = Rng::new(s3.seed ^ 0x7072_6570);
    let objs: Vec<Obj> = (0..n)
        .map(|i| Obj {
            key: prepared_key(cfg, i),
            size: cfg.size.sample(&mut rng),
            readers: Arc::new(AtomicU32::new(0)),
        })
        .collect();
    let shared = Arc::new(Shared::new());
    let list = Arc::new(objs.clone());
    let progress = Progress::start(
        label.to_owned(),
        format!("preparing {n} objects"),
        shared.clone(),
        Some(n),
        cfg.progress,
    );
    let workers = (n.max(1) as usize).min(32);
    let mut handles = Vec::new();
    for w in 0..workers {
        let (s3, cfg, shared, list) = (s3.clone(), cfg.clone(), shared.clone(), list.clone());
        handles.push(tokio::spawn(async move {
            let eps = s3.pool.endpoints().len();
            loop {
                if shared.stop.load(Ordering::Relaxed) {
                    return;
                }
                let i = shared.next.fetch_add(1, Ordering::Relaxed);
                let Some(o) = list.get(i as usize) else {
                    return;
                };
                let mut last = None;
                for attempt in 0..3u64 {
                    let ep = (w + i as usize + attempt as usize) % eps;
                    match with_timeout(cfg.timeout, s3.put(ep, &cfg.bucket, &o.key, o.size)).await {
                        Ok(()) => {
                            last = None;
                            break;
                        }
                        Err(e) => {
                            last = Some(e);
                            tokio::time::sleep(Duration::from_millis(100 * (attempt + 1))).await;
                        }
                    }
                }
                if let Some(e) = last {
                    shared.set_fatal(format!(
                        "prepare: PUT {} ({} bytes) failed 3 times: {e}",
                        o.key, o.size
                    ));
                    return;
                }
                shared.ops.fetch_add(1, Ordering::Relaxed);
                shared.bytes.fetch_add(o.size, Ordering::Relaxed);
            }
        }));
    }
    for h in handles {
        if let Err(e) = h.await {
            shared.set_fatal(format!("prepare worker panicked: {e}"));
        }
    }
    progress.finish().await;
    match shared.fatal() {
        Some(f) => Err(RunError::Fatal(f)),
        None => Ok(objs),
    }
}

/// The objects already under the prefix (a reused list prefix): checks
/// that `cfg.objects` of them are there.
async fn existing(s3: &Arc<S3>, cfg: &Arc<RunConfig>) -> Result<Vec<Obj>, RunError> {
    let mut keys = Vec::new();
    with_timeout(
        cfg.timeout,
        s3.list(
            0,
            &cfg.bucket,
            &cfg.prefix,
            1000,
            Some(&mut keys),
            MAX_OBJECTS as usize,
        ),
    )
    .await
    .map_err(|e| RunError::Fatal(format!("listing the prepared objects: {e}")))?;
    if keys.len() as u64 != cfg.objects {
        return Err(RunError::Fatal(format!(
            "{} keys under {:?}, expected {}",
            keys.len(),
            cfg.prefix,
            cfg.objects
        )));
    }
    Ok(keys
        .into_iter()
        .map(|(key, size)| Obj {
            key,
            size,
            readers: Arc::new(AtomicU32::new(0)),
        })
        .collect())
}

/// Deletes everything under the run's prefix (untimed, best effort).
async fn cleanup(s3: &Arc<S3>, cfg: &Arc<RunConfig>, label: &str) {
    let mut keys = Vec::new();
    if let Err(e) = with_timeout(
        cfg.timeout,
        s3.list(
            0,
            &cfg.bucket,
            &cfg.prefix,
            1000,
            Some(&mut keys),
            MAX_CLEANUP,
        ),
    )
    .await
    {
        eprintln!("{label}cleanup: listing {}: {e}", cfg.prefix);
        return;
    }
    let keys = Arc::new(keys);
    let next = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for _ in 0..cfg.concurrent.clamp(4, 32) {
        let (s3, cfg, keys, next, failed) = (
            s3.clone(),
            cfg.clone(),
            keys.clone(),
            next.clone(),
            failed.clone(),
        );
        handles.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some((k, _)) = keys.get(i) else { return };
                if with_timeout(cfg.timeout, s3.delete(0, &cfg.bucket, k))
                    .await
                    .is_err()
                {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for h in handles {
        let _ = h.await;
    }
    let f = failed.load(Ordering::Relaxed);
    if f > 0 {
        eprintln!("{label}cleanup: {f} of {} deletes failed", keys.len());
    }
}

/// A mixed-workload choice.
enum Pick {
    Read(Obj),
    Delete(Obj),
    Put,
}

async fn worker(
    w: usize,
    s3: Arc<S3>,
    cfg: Arc<RunConfig>,
    shared: Arc<Shared>,
    deadline: Option<Instant>,
) -> WorkerStats {
    let mut stats = WorkerStats::default();
    let mut rng = Rng::new(s3.seed ^ (w as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x776f_726b);
    let eps = s3.pool.endpoints().len();
    let mut ep = w % eps;
    let mut seq = 0u64;
    loop {
        if shared.stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        ep = (ep + 1) % eps;
        let t = Instant::now();
        // (kind, what, result bytes)
        let (kind, what, res): (OpKind, String, Result<u64, OpError>) = match cfg.workload {
            Workload::Put | Workload::Multipart => {
                let i = shared.next.fetch_add(1, Ordering::Relaxed);
                if i >= cfg.objects {
                    break;
                }
                let key = format!("{}w{w:03}-{i:09}", cfg.prefix);
                let size = cfg.size.sample(&mut rng);
                let t = Instant::now();
                let (kind, r) = if cfg.workload == Workload::Put {
                    (
                        OpKind::Put,
                        with_timeout(cfg.timeout, s3.put(ep, &cfg.bucket, &key, size)).await,
                    )
                } else {
                    (
                        OpKind::Multipart,
                        with_timeout(
                            cfg.timeout,
                            s3.multipart(
                                ep,
                                &cfg.bucket,
                                &key,
                                size,
                                cfg.part_size,
                                cfg.part_concurrency,
                            ),
                        )
                        .await,
                    )
                };
                let el = t.elapsed();
                if r.is_ok() {
                    let mut wr = lock(&shared.written);
                    if wr.len() < cfg.verify {
                        wr.push((key.clone(), size));
                    }
                }
                record(
                    &mut stats,
                    &shared,
                    kind,
                    &format!("{} {key}", kind.name()),
                    r.map(|()| size),
                    el,
                );
                continue;
            }
            Workload::Get | Workload::Stat => {
                let o = {
                    let objs = lock(&shared.objects);
                    if objs.is_empty() {
                        shared.set_fatal("no prepared objects".into());
                        break;
                    }
                    objs[rng.below(objs.len() as u64) as usize].clone()
                };
                if cfg.workload == Workload::Get {
                    let r =
                        with_timeout(cfg.timeout, s3.get(ep, &cfg.bucket, &o.key, o.size)).await;
                    (OpKind::Get, format!("get {}", o.key), r)
                } else {
                    let r = with_timeout(cfg.timeout, s3.stat(ep, &cfg.bucket, &o.key, o.size))
                        .await
                        .map(|()| 0);
                    (OpKind::Stat, format!("stat {}", o.key), r)
                }
            }
            Workload::Delete => {
                let i = shared.next.fetch_add(1, Ordering::Relaxed) as usize;
                let o = {
                    let objs = lock(&shared.objects);
                    match objs.get(i) {
                        Some(o) => o.clone(),
                        None => break,
                    }
                };
                let r = with_timeout(cfg.timeout, s3.delete(ep, &cfg.bucket, &o.key))
                    .await
                    .map(|()| 0);
                (OpKind::Delete, format!("delete {}", o.key), r)
            }
            Workload::List => {
                let r = with_timeout(
                    cfg.timeout,
                    s3.list(ep, &cfg.bucket, &cfg.prefix, cfg.max_keys, None, 0),
                )
                .await;
                let r = match r {
                    Ok((keys, _pages)) if keys == cfg.objects => {
                        stats.keys_per_listing = Some(keys);
                        Ok(0)
                    }
                    Ok((keys, _)) => Err(OpError::BadResponse(format!(
                        "listed {keys} keys under {:?}, {} were written",
                        cfg.prefix, cfg.objects
                    ))),
                    Err(e) => Err(e),
                };
                (OpKind::List, format!("list {}", cfg.prefix), r)
            }
            Workload::Mixed(shares) => {
                let pick = mixed_pick(&shares, &shared, &mut rng);
                match pick {
                    Pick::Read(o) => {
                        let is_get = {
                            // get and stat share the reads in their ratio
                            let reads = u64::from(shares.get) + u64::from(shares.stat);
                            rng.below(reads.max(1)) < u64::from(shares.get)
                        };
                        let r = if is_get {
                            with_timeout(cfg.timeout, s3.get(ep, &cfg.bucket, &o.key, o.size)).await
                        } else {
                            with_timeout(cfg.timeout, s3.stat(ep, &cfg.bucket, &o.key, o.size))
                                .await
                                .map(|()| 0)
                        };
                        o.readers.fetch_sub(1, Ordering::AcqRel);
                        if is_get {
                            (OpKind::Get, format!("get {}", o.key), r)
                        } else {
                            (OpKind::Stat, format!("stat {}", o.key), r)
                        }
                    }
                    Pick::Delete(o) => {
                        let r = with_timeout(cfg.timeout, s3.delete(ep, &cfg.bucket, &o.key))
                            .await
                            .map(|()| 0);
                        (OpKind::Delete, format!("delete {}", o.key), r)
                    }
                    Pick::Put => {
                        seq += 1;
                        let key = format!("{}m{w:03}-{seq:09}", cfg.prefix);
                        let size = cfg.size.sample(&mut rng);
                        let t = Instant::now();
                        let r =
                            with_timeout(cfg.timeout, s3.put(ep, &cfg.bucket, &key, size)).await;
                        let el = t.elapsed();
                        if r.is_ok() {
                            let mut objs = lock(&shared.objects);
                            if objs.len() < MAX_MIXED_POOL {
                                objs.push(Obj {
                                    key: key.clone(),
                                    size,
                                    readers: Arc::new(AtomicU32::new(0)),
                                });
                            }
                        }
                        record(
                            &mut stats,
                            &shared,
                            OpKind::Put,
                            &format!("put {key}"),
                            r.map(|()| size),
                            el,
                        );
                        continue;
                    }
                }
            }
        };
        record(&mut stats, &shared, kind, &what, res, t.elapsed());
    }
    stats
}

/// Chooses the next mixed operation. Reads take a reader mark on their
/// object under the pool lock, and a delete only takes an object nobody
/// is reading (removing it from the pool under the same lock), so a GET
/// never races a DELETE of its object. With nothing to read or delete,
/// the slot becomes a PUT.
fn mixed_pick(shares: &Shares, shared: &Shared, rng: &mut Rng) -> Pick {
    let r = rng.below(shares.total().max(1));
    let reads = u64::from(shares.get) + u64::from(shares.stat);
    let put_end = reads + u64::from(shares.put);
    let mut objs = lock(&shared.objects);
    if objs.is_empty() || (r >= reads && r < put_end) {
        return Pick::Put;
    }
    if r < reads {
        let o = objs[rng.below(objs.len() as u64) as usize].clone();
        o.readers.fetch_add(1, Ordering::AcqRel);
        return Pick::Read(o);
    }
    // Delete: a few random tries at an object nobody reads.
    for _ in 0..8 {
        let i = rng.below(objs.len() as u64) as usize;
        if objs[i].readers.load(Ordering::Acquire) == 0 {
            return Pick::Delete(objs.swap_remove(i));
        }
    }
    Pick::Put
}

fn record(
    stats: &mut WorkerStats,
    shared: &Shared,
    kind: OpKind,
    what: &str,
    res: Result<u64, OpError>,
    el: Duration,
) {
    match res {
        Ok(bytes) => {
            stats.ok(kind, bytes, micros(el));
            shared.ops.fetch_add(1, Ordering::Relaxed);
            shared.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        Err(e) => {
            stats.err(kind, &e, what);
            shared.errors.fetch_add(1, Ordering::Relaxed);
            if e.is_fatal() {
                shared.set_fatal(format!("{what}: {e}"));
            }
        }
    }
}

/// Human-readable summary of a run.
pub fn format_result(r: &RunResult) -> String {
    let mut s = String::new();
    let label = if r.label.is_empty() {
        String::new()
    } else {
        format!("[{}] ", r.label)
    };
    s.push_str(&format!(
        "{label}{} {} c={} on {}: {:.2}s (prepare {:.2}s)\n",
        r.workload,
        r.obj_size,
        r.concurrent,
        r.endpoints.join(","),
        r.elapsed_s,
        r.prepare_s
    ));
    s.push_str(&format!(
        "  throughput: {:.1} MiB/s, {:.1} obj/s ({} ok, {} bytes)\n",
        r.mib_s, r.obj_s, r.ops, r.bytes
    ));
    let l = &r.latency;
    s.push_str(&format!(
        "  latency ms: p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}  mean {:.2}\n",
        l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms, l.mean_ms
    ));
    if r.by_op.len() > 1 {
        for (k, o) in &r.by_op {
            s.push_str(&format!(
                "  {k:>9}: {} ok, {} errors, {:.1} MiB/s, {:.1} obj/s, p50 {:.2} p99 {:.2} ms\n",
                o.ops, o.errors, o.mib_s, o.obj_s, o.latency.p50_ms, o.latency.p99_ms
            ));
        }
    }
    if let Some(k) = r.keys_per_listing {
        s.push_str(&format!("  keys per listing: {k}\n"));
    }
    if r.verified_after > 0 {
        s.push_str(&format!(
            "  read back and verified afterwards: {} objects\n",
            r.verified_after
        ));
    }
    if let Some(u) = &r.server {
        s.push_str(&format!(
            "  server pid {}: {:.2} CPU-s, {:.1} MiB/CPU-s, {:.1} ops/CPU-s, peak RSS {:.0} MiB\n",
            u.pid, u.cpu_seconds, u.mib_per_cpu_s, u.ops_per_cpu_s, u.peak_rss_mib
        ));
    }
    if r.errors == 0 {
        s.push_str("  errors: 0\n");
    } else {
        s.push_str(&format!("  errors: {}\n", r.errors));
        for (k, n) in &r.errors_by_kind {
            s.push_str(&format!("    {n:>8}  {k}\n"));
        }
        for e in &r.error_samples {
            s.push_str(&format!("    e.g. {e}\n"));
        }
    }
    s
}

/// The default number of objects of a workload (see `RunConfig::objects`):
/// for reads, enough for every worker to have its own objects, capped so
/// the prepared bytes stay under `prepare_budget`.
pub fn default_objects(
    workload: Workload,
    size: &SizeSpec,
    concurrent: usize,
    prepare_budget: u64,
) -> u64 {
    let mean = size.mean().max(1);
    let cap = (prepare_budget / mean).max(2);
    match workload {
        Workload::Put | Workload::Multipart => u64::MAX,
        Workload::Get | Workload::Stat => ((concurrent as u64) * 2).max(16).min(cap),
        Workload::Mixed(_) => ((concurrent as u64) * 4).max(64).min(cap),
        Workload::Delete => 1000u64.min(cap),
        Workload::List => 1000,
    }
}

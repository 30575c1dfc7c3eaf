//! Health: which drives answer, whether each erasure set has its read and
//! write quorum, and the unauthenticated health endpoints (MinIO's paths
//! and Tessera's own).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use drive::format::{FORMAT_FILE, MAX_FORMAT_BYTES, META_VOLUME};
use drive::{DiskInfo, Drive, DriveState};
use http::{Method, Response, StatusCode};
use object::layer::{ErasureSet, ObjectLayer};
use s3_gateway::ResponseBody;

/// One drive as last probed.
#[derive(Debug, Clone)]
pub struct DriveStatus {
    pub label: String,
    pub pool: usize,
    pub set: usize,
    pub online: bool,
    /// `online`, `faulty` (its last operations failed or ran past the drive
    /// deadline, fewer in a row than take it offline) or `offline`.
    pub state: &'static str,
    /// Space of the drive's file system, when it answered.
    pub space: Option<DiskInfo>,
}

/// One erasure set.
#[derive(Debug, Clone)]
pub struct SetStatus {
    pub pool: usize,
    pub set: usize,
    pub online: usize,
    pub total: usize,
    pub read_quorum: usize,
    pub write_quorum: usize,
}

/// The drives and sets at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub drives: Vec<DriveStatus>,
    pub sets: Vec<SetStatus>,
    taken: Instant,
}

impl Snapshot {
    pub fn online(&self) -> usize {
        self.drives.iter().filter(|d| d.online).count()
    }

    /// Every set can be written.
    pub fn write_quorum(&self) -> bool {
        self.sets.iter().all(|s| s.online >= s.write_quorum)
    }

    /// Every set can be read.
    pub fn read_quorum(&self) -> bool {
        self.sets.iter().all(|s| s.online >= s.read_quorum)
    }

    /// The largest write quorum of any set (MinIO's `X-Minio-Write-Quorum`).
    pub fn max_write_quorum(&self) -> usize {
        self.sets.iter().map(|s| s.write_quorum).max().unwrap_or(0)
    }
}

/// Probes drives (at most once per `max_age`, concurrent callers share the
/// probe) and answers the health endpoints.
pub struct Health {
    layer: Arc<ObjectLayer>,
    cache: tokio::sync::Mutex<Option<Arc<Snapshot>>>,
    max_age: Duration,
    probe_timeout: Duration,
    draining: AtomicBool,
}

/// A drive answers when it is not offline and reads its `format.json`;
/// then its space is asked for too.
async fn probe(d: Arc<dyn Drive>, timeout: Duration) -> (bool, Option<DiskInfo>) {
    if d.health().state == DriveState::Offline {
        return (false, None);
    }
    let answered = tokio::time::timeout(timeout, async {
        d.read_all(META_VOLUME, FORMAT_FILE, MAX_FORMAT_BYTES)
            .await
            .ok()?;
        Some(d.disk_info().await.ok())
    })
    .await;
    match answered {
        Ok(Some(space)) => (true, space),
        _ => (false, None),
    }
}

/// The state a probed drive reports in metrics and health output.
fn drive_state(
    online: bool,
    placed: &[(usize, usize, &ErasureSet)],
    d: &DriveStatus,
) -> &'static str {
    if !online {
        return "offline";
    }
    let faulty = placed
        .iter()
        .filter(|(p, s, _)| *p == d.pool && *s == d.set)
        .flat_map(|(_, _, set)| set.drives())
        .any(|x| x.label() == d.label && x.health().state == DriveState::Faulty);
    if faulty { "faulty" } else { "online" }
}

impl Health {
    pub fn new(layer: Arc<ObjectLayer>) -> Health {
        Health {
            layer,
            cache: tokio::sync::Mutex::new(None),
            max_age: Duration::from_secs(1),
            probe_timeout: Duration::from_secs(5),
            draining: AtomicBool::new(false),
        }
    }

    /// Marks the server as shutting down: readiness and cluster health
    /// answer 503 from now on, so load balancers stop sending requests.
    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// A recent snapshot (probing the drives if the last one is too old).
    pub async fn snapshot(&self) -> Arc<Snapshot> {
        let mut cache = self.cache.lock().await;
        if let Some(s) = cache.as_ref()
            && s.taken.elapsed() < self.max_age
        {
            return s.clone();
        }
        let s = Arc::new(self.probe_all().await);
        *cache = Some(s.clone());
        s
    }

    async fn probe_all(&self) -> Snapshot {
        let mut placed: Vec<(usize, usize, &ErasureSet)> = Vec::new();
        for p in 0..self.layer.pool_count() {
            for (i, s) in self.layer.pool_sets(p).iter().enumerate() {
                placed.push((p, i, s));
            }
        }
        let mut tasks = tokio::task::JoinSet::new();
        let mut drives = Vec::new();
        for (pool, set, s) in &placed {
            for d in s.drives() {
                let idx = drives.len();
                drives.push(DriveStatus {
                    label: d.label(),
                    pool: *pool,
                    set: *set,
                    online: false,
                    state: "offline",
                    space: None,
                });
                let (d, t) = (d.clone(), self.probe_timeout);
                tasks.spawn(async move { (idx, probe(d, t).await) });
            }
        }
        while let Some(r) = tasks.join_next().await {
            if let Ok((idx, (online, space))) = r {
                drives[idx].online = online;
                drives[idx].space = space;
                drives[idx].state = drive_state(online, &placed, &drives[idx]);
            }
        }
        let sets = placed
            .iter()
            .map(|(pool, set, s)| {
                let total = s.drives().len();
                let parity = s.default_parity();
                let data = total - parity;
                SetStatus {
                    pool: *pool,
                    set: *set,
                    online: drives
                        .iter()
                        .filter(|d| d.pool == *pool && d.set == *set && d.online)
                        .count(),
                    total,
                    read_quorum: data,
                    write_quorum: ErasureSet::write_quorum(data, parity),
                }
            })
            .collect();
        Snapshot {
            drives,
            sets,
            taken: Instant::now(),
        }
    }

    /// Answers a health request, or `None` if `path` is not one.
    pub async fn respond(&self, method: &Method, path: &str) -> Option<Response<ResponseBody>> {
        if method != Method::GET && method != Method::HEAD {
            return None;
        }
        let (minio, what) = if let Some(w) = path.strip_prefix("/minio/health/") {
            (true, w)
        } else if let Some(w) = path.strip_prefix("/tessera/health/") {
            (false, w)
        } else {
            return None;
        };
        let what = what.trim_end_matches('/');
        let (ok, snapshot) = match what {
            "live" => (true, None),
            "ready" => {
                let s = self.snapshot().await;
                (!self.draining() && s.read_quorum(), Some(s))
            }
            "cluster" => {
                let s = self.snapshot().await;
                (!self.draining() && s.write_quorum(), Some(s))
            }
            "cluster/read" => {
                let s = self.snapshot().await;
                (!self.draining() && s.read_quorum(), Some(s))
            }
            _ => return None,
        };
        let status = if ok {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        let mut b = Response::builder()
            .status(status)
            .header(http::header::CACHE_CONTROL, "no-store");
        if let Some(s) = &snapshot
            && what.starts_with("cluster")
        {
            b = b.header("x-minio-write-quorum", s.max_write_quorum().to_string());
        }
        if self.draining() {
            b = b.header("x-minio-server-status", "shutting-down");
        }
        let body = if minio || method == Method::HEAD {
            ResponseBody::empty()
        } else {
            b = b.header(http::header::CONTENT_TYPE, "application/json");
            ResponseBody::full(self.json(ok, snapshot.as_deref()))
        };
        Some(b.body(body).unwrap_or_else(|_| {
            let mut r = Response::new(ResponseBody::empty());
            *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            r
        }))
    }

    fn json(&self, ok: bool, s: Option<&Snapshot>) -> String {
        let mut v = serde_json::json!({
            "status": if ok { "ok" } else { "unavailable" },
            "shutting_down": self.draining(),
        });
        if let Some(s) = s {
            v["drives_online"] = s.online().into();
            v["drives_total"] = s.drives.len().into();
            v["sets"] = s
                .sets
                .iter()
                .map(|x| {
                    serde_json::json!({
                        "pool": x.pool, "set": x.set, "online": x.online, "total": x.total,
                        "read_quorum": x.read_quorum, "write_quorum": x.write_quorum,
                    })
                })
                .collect();
            v["offline_drives"] = s
                .drives
                .iter()
                .filter(|d| !d.online)
                .map(|d| serde_json::Value::from(d.label.clone()))
                .collect();
            v["drive_states"] = s
                .drives
                .iter()
                .map(|d| (d.label.clone(), serde_json::Value::from(d.state)))
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        let mut out = v.to_string();
        out.push('\n');
        out
    }
}

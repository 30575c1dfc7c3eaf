//! Prometheus metrics (prometheus-client): S3 requests by API and status,
//! latency histograms and traffic by API, connections, drive states, quorum,
//! the heal queue and the scanner. Served at `/minio/v2/metrics/cluster`
//! (and `/node`), where MinIO's Prometheus jobs look, and `/tessera/metrics`.
//!
//! Authentication as MinIO's default (`jwt`): a bearer token signed with the
//! root credentials (`tessera prometheus-token`, or `mc admin prometheus
//! generate` against MinIO with the same credentials); `public` drops it.

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::{SystemTime, UNIX_EPOCH};

use http::{HeaderMap, Method, Response, StatusCode};
use object::layer::{ObjectLayer, ScanProgress, ScannerHandle};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use s3_gateway::{AdmissionStats, RequestObserver, RequestRecord, ResponseBody};

use crate::health::Health;
use crate::token;

/// The paths the metrics are served at.
pub const PATHS: &[&str] = &[
    "/minio/v2/metrics/cluster",
    "/minio/v2/metrics/node",
    "/tessera/metrics",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiStatus {
    api: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LifecycleAction {
    action: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Api {
    api: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct State {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Md5Path {
    path: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DriveLabel {
    drive: String,
    pool: u64,
    set: u64,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DriveStateLabel {
    drive: String,
    pool: u64,
    set: u64,
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Version {
    version: &'static str,
}

type HistogramFamily = Family<Api, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new([
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
        300.0,
    ])
}

/// Every metric of the process.
pub struct Metrics {
    registry: Registry,
    requests: Family<ApiStatus, Counter>,
    latency: HistogramFamily,
    received: Family<Api, Counter>,
    sent: Family<Api, Counter>,
    pub in_flight: Gauge,
    requests_limit: Gauge,
    requests_active: Gauge,
    requests_waiting: Gauge,
    requests_refused: Counter,
    refused_seen: Mutex<u64>,
    pub connections_open: Gauge,
    /// Client connections served at once at most (0: no bound).
    pub connections_limit: Gauge,
    pub connections: Counter,
    pub tls_handshake_errors: Counter,
    spliced: Counter,
    spliced_seen: Mutex<u64>,
    group_syncs: Counter,
    group_syncs_seen: Mutex<u64>,
    md5_blocks: Family<Md5Path, Counter>,
    md5_lane_steps: Counter,
    huge_page_bytes: Gauge,
    read_cache_hits: Counter,
    read_cache_misses: Counter,
    read_cache_evicted: Counter,
    read_cache_shed: Counter,
    read_cache_seen: Mutex<object::layer::ReadCacheStats>,
    read_cache_bytes: Gauge,
    read_cache_budget: Gauge,
    read_cache_limit: Gauge,
    md5_seen: Mutex<md5x::HubStats>,
    drives: Family<State, Gauge>,
    drive_online: Family<DriveLabel, Gauge>,
    drive_state: Family<DriveStateLabel, Gauge>,
    drive_total_bytes: Family<DriveLabel, Gauge>,
    drive_free_bytes: Family<DriveLabel, Gauge>,
    drive_used_bytes: Family<DriveLabel, Gauge>,
    drive_free_inodes: Family<DriveLabel, Gauge>,
    sets: Gauge,
    write_quorum: Gauge,
    read_quorum: Gauge,
    heal_queue: Gauge,
    journal_healed: Counter,
    journal_healed_seen: Mutex<u64>,
    journal_healed_bytes: Counter,
    journal_healed_bytes_seen: Mutex<u64>,
    replaced_healed: Family<DriveLabel, Gauge>,
    replaced_healed_bytes: Family<DriveLabel, Gauge>,
    replaced_failed: Family<DriveLabel, Gauge>,
    replaced_finished: Family<DriveLabel, Gauge>,
    heal_journal: Gauge,
    scanner_cycles: Counter,
    scanner_checked: Counter,
    scanner_healed: Counter,
    scanner_errors: Counter,
    scanner_seen: Mutex<ScanProgress>,
    scanner_rate: Gauge,
    lifecycle_passes: Counter,
    lifecycle_actions: Family<LifecycleAction, Counter>,
    /// The lifecycle task's running totals, once it runs, and what of
    /// them is counted (by metric).
    lifecycle: std::sync::OnceLock<std::sync::Arc<s3_gateway::lifecycle::LifecycleStats>>,
    lifecycle_seen: Mutex<std::collections::HashMap<&'static str, u64>>,
}

/// Brings `counter` up to `total`, a running total kept elsewhere, of
/// which `seen` is the part already counted.
fn catch_up(counter: &Counter, seen: &Mutex<u64>, total: u64) {
    let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    counter.inc_by(total.saturating_sub(*seen));
    *seen = total.max(*seen);
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("tessera");
        let requests = Family::<ApiStatus, Counter>::default();
        let latency: HistogramFamily = Family::new_with_constructor(latency_histogram);
        let received = Family::<Api, Counter>::default();
        let sent = Family::<Api, Counter>::default();
        let m = Metrics {
            requests,
            latency,
            received,
            sent,
            in_flight: Gauge::default(),
            requests_limit: Gauge::default(),
            requests_active: Gauge::default(),
            requests_waiting: Gauge::default(),
            requests_refused: Counter::default(),
            refused_seen: Mutex::new(0),
            connections_open: Gauge::default(),
            connections_limit: Gauge::default(),
            connections: Counter::default(),
            tls_handshake_errors: Counter::default(),
            spliced: Counter::default(),
            spliced_seen: Mutex::new(0),
            group_syncs: Counter::default(),
            group_syncs_seen: Mutex::new(0),
            md5_blocks: Family::default(),
            md5_lane_steps: Counter::default(),
            huge_page_bytes: Gauge::default(),
            read_cache_hits: Counter::default(),
            read_cache_misses: Counter::default(),
            read_cache_evicted: Counter::default(),
            read_cache_shed: Counter::default(),
            read_cache_seen: Mutex::new(Default::default()),
            read_cache_bytes: Gauge::default(),
            read_cache_budget: Gauge::default(),
            read_cache_limit: Gauge::default(),
            md5_seen: Mutex::new(md5x::HubStats::default()),
            drives: Family::default(),
            drive_online: Family::default(),
            drive_state: Family::default(),
            drive_total_bytes: Family::default(),
            drive_free_bytes: Family::default(),
            drive_used_bytes: Family::default(),
            drive_free_inodes: Family::default(),
            sets: Gauge::default(),
            write_quorum: Gauge::default(),
            read_quorum: Gauge::default(),
            heal_queue: Gauge::default(),
            journal_healed: Counter::default(),
            journal_healed_seen: Mutex::new(0),
            journal_healed_bytes: Counter::default(),
            journal_healed_bytes_seen: Mutex::new(0),
            replaced_healed: Family::default(),
            replaced_healed_bytes: Family::default(),
            replaced_failed: Family::default(),
            replaced_finished: Family::default(),
            heal_journal: Gauge::default(),
            scanner_cycles: Counter::default(),
            scanner_checked: Counter::default(),
            scanner_healed: Counter::default(),
            scanner_errors: Counter::default(),
            scanner_seen: Mutex::new(ScanProgress::default()),
            scanner_rate: Gauge::default(),
            lifecycle_passes: Counter::default(),
            lifecycle_actions: Family::default(),
            lifecycle: std::sync::OnceLock::new(),
            lifecycle_seen: Mutex::default(),
            registry: Registry::default(),
        };
        registry.register(
            "s3_requests",
            "S3 requests answered, by API and HTTP status",
            m.requests.clone(),
        );
        registry.register(
            "s3_request_duration_seconds",
            "Time to the response head of S3 requests, by API",
            m.latency.clone(),
        );
        registry.register(
            "s3_received_bytes",
            "Request body bytes received, by API",
            m.received.clone(),
        );
        registry.register(
            "s3_sent_bytes",
            "Response body bytes sent (announced length), by API",
            m.sent.clone(),
        );
        registry.register(
            "s3_requests_in_flight",
            "Requests being served",
            m.in_flight.clone(),
        );
        registry.register(
            "s3_requests_limit",
            "S3 requests served at once at most (TESSERA_API_REQUESTS_MAX; 0: no bound)",
            m.requests_limit.clone(),
        );
        registry.register(
            "s3_requests_active",
            "S3 requests holding a slot, from their admission to the end of their response body",
            m.requests_active.clone(),
        );
        registry.register(
            "s3_requests_waiting",
            "S3 requests waiting for a slot",
            m.requests_waiting.clone(),
        );
        registry.register(
            "s3_requests_refused",
            "S3 requests refused with SlowDown after waiting for a slot until the deadline",
            m.requests_refused.clone(),
        );
        registry.register(
            "http_spliced_bytes",
            "Response bytes sent with splice from pipes holding page-cache pages (GET of shard records read from the page cache, over HTTP/1.1 without TLS) rather than copied from memory",
            m.spliced.clone(),
        );
        registry.register(
            "drive_group_syncs",
            "syncfs calls that made the xl.meta writes in flight on a drive's file system durable together (TESSERA_GROUP_COMMIT), all file systems; each covers every write waiting when it started",
            m.group_syncs.clone(),
        );
        registry.register(
            "md5_blocks",
            "64-byte blocks of upload bodies hashed for ETags, by the code that hashed them: path=lanes in SIMD lanes beside other uploads' blocks, path=combiner and path=caller on the single-stream code (alone in a combiner's lanes, or without the queue), which costs several times more CPU per byte",
            m.md5_blocks.clone(),
        );
        registry.register(
            "buffer_huge_page_bytes",
            "Bytes mapped in 2 MiB huge-page regions for shard record buffers (TESSERA_HUGE_PAGES): the buffers out and those the pools keep, plus the free room of regions that still have buffers out",
            m.huge_page_bytes.clone(),
        );
        registry.register(
            "read_cache_hits",
            "Erasure blocks of GETs served from the read cache (TESSERA_READ_CACHE): verified data, neither read from the drives nor hashed again",
            m.read_cache_hits.clone(),
        );
        registry.register(
            "read_cache_misses",
            "Erasure blocks of GETs looked up in the read cache and read from the drives",
            m.read_cache_misses.clone(),
        );
        registry.register(
            "read_cache_evicted_bytes",
            "Bytes of blocks the read cache dropped, least recently used first, to make room for blocks of parts read more often (blocks of overwritten or deleted versions not counted)",
            m.read_cache_evicted.clone(),
        );
        registry.register(
            "read_cache_bytes",
            "Bytes of verified blocks the read cache holds",
            m.read_cache_bytes.clone(),
        );
        registry.register(
            "read_cache_budget_bytes",
            "The read cache's budget (TESSERA_READ_CACHE; 0: no cache)",
            m.read_cache_budget.clone(),
        );
        registry.register(
            "read_cache_limit_bytes",
            "What the read cache may hold now: its budget, or, while memory is short, as much as leaves its budget (at most 1 GiB) available to everything else (MemAvailable, or the least headroom of the server's memory cgroups)",
            m.read_cache_limit.clone(),
        );
        registry.register(
            "read_cache_shed_bytes",
            "Bytes of blocks the read cache dropped to give memory back while memory was short",
            m.read_cache_shed.clone(),
        );
        registry.register(
            "md5_lane_steps",
            "Steps of the SIMD lane code, each advancing every lane in use by one 64-byte block: md5_blocks{path=lanes} divided by this is the mean number of uploads hashed side by side",
            m.md5_lane_steps.clone(),
        );
        registry.register(
            "http_connections_open",
            "Client connections open",
            m.connections_open.clone(),
        );
        registry.register(
            "http_connections_limit",
            "Client connections served at once at most (half the open-files limit; 0: no bound)",
            m.connections_limit.clone(),
        );
        registry.register(
            "http_connections",
            "Client connections accepted",
            m.connections.clone(),
        );
        registry.register(
            "tls_handshake_errors",
            "TLS handshakes that failed or timed out",
            m.tls_handshake_errors.clone(),
        );
        registry.register(
            "drives",
            "Drives by state (online: answers and reads its format.json)",
            m.drives.clone(),
        );
        registry.register(
            "drive_online",
            "1 when the drive is online, else 0",
            m.drive_online.clone(),
        );
        registry.register(
            "drive_state",
            "1 for the drive's state (online; faulty: its last operations failed or ran past TESSERA_DRIVE_TIMEOUT; offline: taken out of service until a probe succeeds), 0 for the others",
            m.drive_state.clone(),
        );
        registry.register(
            "drive_total_bytes",
            "Size of the drive's file system",
            m.drive_total_bytes.clone(),
        );
        registry.register(
            "drive_free_bytes",
            "Bytes of the drive's file system available to the server",
            m.drive_free_bytes.clone(),
        );
        registry.register(
            "drive_used_bytes",
            "Bytes in use on the drive's file system",
            m.drive_used_bytes.clone(),
        );
        registry.register(
            "drive_free_inodes",
            "Free inodes of the drive's file system (0 where it does not say)",
            m.drive_free_inodes.clone(),
        );
        registry.register("erasure_sets", "Erasure sets", m.sets.clone());
        registry.register(
            "cluster_write_quorum",
            "1 when every erasure set has its write quorum of drives online",
            m.write_quorum.clone(),
        );
        registry.register(
            "cluster_read_quorum",
            "1 when every erasure set has its read quorum of drives online",
            m.read_quorum.clone(),
        );
        registry.register(
            "heal_queue_length",
            "Objects that reads found damaged, waiting for the healer",
            m.heal_queue.clone(),
        );
        registry.register(
            "heal_journal_pending",
            "Writes that missed drives (an offline drive, a node down), remembered in the heal journal until healed",
            m.heal_journal.clone(),
        );
        registry.register(
            "heal_journal_healed_versions",
            "Versions the heal journal's healer made whole",
            m.journal_healed.clone(),
        );
        registry.register(
            "heal_journal_healed_bytes",
            "Bytes (object sizes) of the versions the heal journal's healer made whole",
            m.journal_healed_bytes.clone(),
        );
        registry.register(
            "replaced_drive_healed_versions",
            "Versions rebuilt onto a drive replaced by an empty one, since this node formatted it",
            m.replaced_healed.clone(),
        );
        registry.register(
            "replaced_drive_healed_bytes",
            "Bytes (object sizes) rebuilt onto a replaced drive",
            m.replaced_healed_bytes.clone(),
        );
        registry.register(
            "replaced_drive_failed_versions",
            "Versions that could not be rebuilt onto a replaced drive",
            m.replaced_failed.clone(),
        );
        registry.register(
            "replaced_drive_heal_finished",
            "1 once the scanner pass after a drive's replacement has ended",
            m.replaced_finished.clone(),
        );
        registry.register(
            "scanner_cycles",
            "Full passes of the background scanner",
            m.scanner_cycles.clone(),
        );
        registry.register(
            "scanner_checked_versions",
            "Object versions the scanner checked",
            m.scanner_checked.clone(),
        );
        registry.register(
            "scanner_healed_versions",
            "Object versions the scanner healed",
            m.scanner_healed.clone(),
        );
        registry.register(
            "scanner_errors",
            "Object versions whose check or heal failed",
            m.scanner_errors.clone(),
        );
        registry.register(
            "scanner_rate",
            "Object versions per second the scanner, the heal journal's healer and heal sequences keep to now (TESSERA_SCANNER_RATE, or the speed set with mc admin config set ALIAS scanner speed=...); 0: unlimited",
            m.scanner_rate.clone(),
        );
        registry.register(
            "lifecycle_passes",
            "Lifecycle passes completed by this node",
            m.lifecycle_passes.clone(),
        );
        registry.register(
            "lifecycle_actions",
            "What lifecycle passes did: expired_current, expired_noncurrent, \
             delete_markers_removed, uploads_aborted, kept_locked (due, protected by object lock), \
             errors, versions_seen",
            m.lifecycle_actions.clone(),
        );
        let build = Family::<Version, Gauge>::default();
        build
            .get_or_create(&Version {
                version: env!("CARGO_PKG_VERSION"),
            })
            .set(1);
        registry.register("build_info", "Version of the tessera binary", build);
        let start: Gauge<f64, AtomicU64> = Gauge::default();
        start.set(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        );
        registry.register(
            "process_start_time_seconds",
            "Start time of the process, Unix seconds",
            start,
        );
        Metrics { registry, ..m }
    }

    /// Reports the lifecycle task's totals from now on.
    pub fn watch_lifecycle(&self, stats: std::sync::Arc<s3_gateway::lifecycle::LifecycleStats>) {
        let _ = self.lifecycle.set(stats);
    }

    /// Brings the gauges up to date and renders the text exposition format.
    pub async fn render(
        &self,
        health: &Health,
        layer: &ObjectLayer,
        scanner: Option<&ScannerHandle>,
        admission: AdmissionStats,
    ) -> String {
        self.requests_limit
            .set(i64::try_from(admission.limit).unwrap_or(i64::MAX));
        self.requests_active
            .set(i64::try_from(admission.active).unwrap_or(i64::MAX));
        self.requests_waiting
            .set(i64::try_from(admission.waiting).unwrap_or(i64::MAX));
        catch_up(
            &self.spliced,
            &self.spliced_seen,
            s3_gateway::splice::spliced_bytes_total(),
        );
        self.huge_page_bytes
            .set(i64::try_from(drive::huge_page_region_bytes()).unwrap_or(i64::MAX));
        catch_up(
            &self.group_syncs,
            &self.group_syncs_seen,
            drive::group_commit_syncs_total(),
        );
        {
            let now = layer.read_cache_stats().unwrap_or_default();
            let mut seen = self
                .read_cache_seen
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            self.read_cache_hits
                .inc_by(now.hits.saturating_sub(seen.hits));
            self.read_cache_misses
                .inc_by(now.misses.saturating_sub(seen.misses));
            self.read_cache_evicted
                .inc_by(now.evicted_bytes.saturating_sub(seen.evicted_bytes));
            self.read_cache_shed
                .inc_by(now.shed_bytes.saturating_sub(seen.shed_bytes));
            let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            self.read_cache_bytes.set(clamp(now.bytes));
            self.read_cache_budget.set(clamp(now.budget));
            self.read_cache_limit.set(clamp(now.limit));
            *seen = now;
        }
        {
            let now = md5x::Md5Hub::global().stats();
            let mut seen = self.md5_seen.lock().unwrap_or_else(|e| e.into_inner());
            for (path, total, before) in [
                ("lanes", now.blocks_in_lanes, seen.blocks_in_lanes),
                ("combiner", now.blocks_single, seen.blocks_single),
                ("caller", now.blocks_alone, seen.blocks_alone),
            ] {
                self.md5_blocks
                    .get_or_create(&Md5Path { path })
                    .inc_by(total.saturating_sub(before));
            }
            self.md5_lane_steps
                .inc_by(now.lane_steps.saturating_sub(seen.lane_steps));
            *seen = now;
        }
        catch_up(
            &self.requests_refused,
            &self.refused_seen,
            admission.refused,
        );
        let s = health.snapshot().await;
        let online = s.online() as i64;
        self.drives
            .get_or_create(&State { state: "online" })
            .set(online);
        self.drives
            .get_or_create(&State { state: "offline" })
            .set(s.drives.len() as i64 - online);
        for d in &s.drives {
            let label = DriveLabel {
                drive: d.label.clone(),
                pool: d.pool as u64,
                set: d.set as u64,
            };
            self.drive_online
                .get_or_create(&label)
                .set(i64::from(d.online));
            for state in ["online", "faulty", "offline"] {
                self.drive_state
                    .get_or_create(&DriveStateLabel {
                        drive: d.label.clone(),
                        pool: d.pool as u64,
                        set: d.set as u64,
                        state,
                    })
                    .set(i64::from(d.state == state));
            }
            // A drive that does not answer keeps its last known space.
            if let Some(space) = &d.space {
                let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
                self.drive_total_bytes
                    .get_or_create(&label)
                    .set(clamp(space.total));
                self.drive_free_bytes
                    .get_or_create(&label)
                    .set(clamp(space.free));
                self.drive_used_bytes
                    .get_or_create(&label)
                    .set(clamp(space.used));
                self.drive_free_inodes
                    .get_or_create(&label)
                    .set(clamp(space.files_free));
            }
        }
        self.sets.set(s.sets.len() as i64);
        self.write_quorum.set(i64::from(s.write_quorum()));
        self.read_quorum.set(i64::from(s.read_quorum()));
        self.heal_queue.set(layer.heal_queue_len() as i64);
        self.heal_journal
            .set(i64::try_from(layer.heal_journal_stats().pending).unwrap_or(i64::MAX));
        let heal = s3_gateway::admin::ServerHeal::of(layer);
        catch_up(
            &self.journal_healed,
            &self.journal_healed_seen,
            heal.mrf.items_healed,
        );
        catch_up(
            &self.journal_healed_bytes,
            &self.journal_healed_bytes_seen,
            heal.mrf.bytes_healed,
        );
        for d in &heal.drives {
            let label = DriveLabel {
                drive: d.endpoint.clone(),
                pool: d.pool_index as u64,
                set: d.set_index as u64,
            };
            let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            self.replaced_healed
                .get_or_create(&label)
                .set(clamp(d.items_healed));
            self.replaced_healed_bytes
                .get_or_create(&label)
                .set(clamp(d.bytes_done));
            self.replaced_failed
                .get_or_create(&label)
                .set(clamp(d.items_failed));
            self.replaced_finished
                .get_or_create(&label)
                .set(i64::from(d.finished));
        }
        self.scanner_rate
            .set(layer.scan_rate().current().map_or(0, i64::from));
        if let Some(scanner) = scanner {
            let p = scanner.progress();
            let mut seen = self.scanner_seen.lock().unwrap_or_else(|e| e.into_inner());
            self.scanner_cycles
                .inc_by(p.cycles.saturating_sub(seen.cycles));
            self.scanner_checked
                .inc_by(p.checked.saturating_sub(seen.checked));
            self.scanner_healed
                .inc_by(p.healed.saturating_sub(seen.healed));
            self.scanner_errors
                .inc_by(p.errors.saturating_sub(seen.errors));
            *seen = p;
        }
        if let Some(l) = self.lifecycle.get() {
            let load =
                |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
            let mut seen = self
                .lifecycle_seen
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let mut bump = |name: &'static str, counter: &Counter, total: u64| {
                let s = seen.entry(name).or_insert(0);
                counter.inc_by(total.saturating_sub(*s));
                *s = total.max(*s);
            };
            bump("passes", &self.lifecycle_passes, load(&l.passes));
            for (action, total) in [
                ("expired_current", load(&l.expired_current)),
                ("expired_noncurrent", load(&l.expired_noncurrent)),
                ("delete_markers_removed", load(&l.delete_markers_removed)),
                ("uploads_aborted", load(&l.uploads_aborted)),
                ("kept_locked", load(&l.locked)),
                ("errors", load(&l.errors)),
                ("versions_seen", load(&l.versions_seen)),
            ] {
                let counter = self
                    .lifecycle_actions
                    .get_or_create(&LifecycleAction { action })
                    .clone();
                bump(action, &counter, total);
            }
        }
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!("encoding metrics: {e}");
        }
        out
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl RequestObserver for Metrics {
    fn observe(&self, r: &RequestRecord<'_>) {
        self.requests
            .get_or_create(&ApiStatus {
                api: r.api,
                status: r.status.as_u16(),
            })
            .inc();
        let api = Api { api: r.api };
        self.latency
            .get_or_create(&api)
            .observe(r.duration.as_secs_f64());
        if r.bytes_in > 0 {
            self.received.get_or_create(&api).inc_by(r.bytes_in);
        }
        if r.bytes_out > 0 {
            self.sent.get_or_create(&api).inc_by(r.bytes_out);
        }
    }
}

/// Who may read the metrics.
pub enum MetricsAuth {
    Public,
    /// Bearer tokens signed with the root secret key.
    Jwt {
        access: String,
        secret: String,
    },
}

impl MetricsAuth {
    /// Bearer tokens of the root user, whatever the metrics' setting (the
    /// cluster's lock endpoint).
    pub fn root(cfg: &crate::config::ServerConfig) -> MetricsAuth {
        MetricsAuth::Jwt {
            access: cfg.credentials.user.clone(),
            secret: cfg.credentials.password.clone(),
        }
    }

    /// The metrics' setting: public, or the root user's bearer tokens.
    pub fn for_metrics(cfg: &crate::config::ServerConfig) -> MetricsAuth {
        if cfg.prometheus_public {
            MetricsAuth::Public
        } else {
            MetricsAuth::root(cfg)
        }
    }

    /// `None` when the request may read the metrics, else the refusal.
    pub fn check(&self, headers: &HeaderMap) -> Option<Response<ResponseBody>> {
        let MetricsAuth::Jwt { access, secret } = self else {
            return None;
        };
        let bearer = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim);
        let Some(t) = bearer else {
            return Some(refusal(
                StatusCode::UNAUTHORIZED,
                "a bearer token is required (tessera prometheus-token), or set \
                 TESSERA_PROMETHEUS_AUTH_TYPE=public",
            ));
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        match token::verify(t, now, |a| (a == access).then(|| secret.clone())) {
            Ok(_) => None,
            Err(e) => Some(refusal(StatusCode::FORBIDDEN, &e.to_string())),
        }
    }
}

fn refusal(status: StatusCode, message: &str) -> Response<ResponseBody> {
    let mut b = Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "text/plain; charset=utf-8");
    if status == StatusCode::UNAUTHORIZED {
        b = b.header(http::header::WWW_AUTHENTICATE, "Bearer");
    }
    b.body(ResponseBody::full(format!("{message}\n")))
        .unwrap_or_else(|_| Response::new(ResponseBody::empty()))
}

/// Whether `method path` asks for the metrics.
pub fn is_metrics_request(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::HEAD) && PATHS.contains(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observed_requests_are_exported() {
        let m = Metrics::new();
        let method = Method::PUT;
        m.observe(&RequestRecord {
            api: "PutObject",
            method: &method,
            status: StatusCode::OK,
            duration: std::time::Duration::from_millis(3),
            bytes_in: 1234,
            bytes_out: 0,
            request_id: "X",
            bucket: Some("b"),
        });
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &m.registry).unwrap();
        assert!(
            out.contains(r#"tessera_s3_requests_total{api="PutObject",status="200"} 1"#),
            "{out}"
        );
        assert!(out.contains(r#"tessera_s3_received_bytes_total{api="PutObject"} 1234"#));
        assert!(out.contains(r#"tessera_s3_request_duration_seconds_count{api="PutObject"} 1"#));
        assert!(out.contains("tessera_build_info"));
    }

    #[test]
    fn bearer_tokens() {
        let auth = MetricsAuth::Jwt {
            access: "admin".into(),
            secret: "secret-key".into(),
        };
        let mut h = HeaderMap::new();
        assert_eq!(
            auth.check(&h).map(|r| r.status()),
            Some(StatusCode::UNAUTHORIZED)
        );
        let t = token::generate("admin", "secret-key", i64::MAX / 2);
        h.insert(
            http::header::AUTHORIZATION,
            format!("Bearer {t}").parse().unwrap(),
        );
        assert!(auth.check(&h).is_none());
        let t = token::generate("admin", "wrong", i64::MAX / 2);
        h.insert(
            http::header::AUTHORIZATION,
            format!("Bearer {t}").parse().unwrap(),
        );
        assert_eq!(
            auth.check(&h).map(|r| r.status()),
            Some(StatusCode::FORBIDDEN)
        );
        assert!(MetricsAuth::Public.check(&HeaderMap::new()).is_none());
    }
}

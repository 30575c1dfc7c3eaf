//! Multi-node mode: the endpoints name other nodes than this one.
//!
//! The node serves the node RPC on its S3 port, checks with every peer that
//! they share the endpoint list, the erasure layout and the format version
//! (a peer that differs, or holds other root credentials, stops this node
//! with the reason), waits for a majority, formats or checks its drives,
//! then runs its raft member (the first five nodes vote, the rest learn)
//! and the lock service. `GET /tessera/cluster` shows this node's view
//! (leader, term, applied index, members, peers and their clocks, lock
//! partitions); `/minio/health/cluster` answers 200 while the node serves
//! S3, a leader is known, a majority of the voters is reachable and every
//! erasure set has its write quorum (`ready` and `cluster/read`: its read
//! quorum); `mc admin info` lists every node's drives.
//!
//! Objects: every node opens the one object layer over all the cluster's
//! drives, in MinIO's layout (its own drives directly, the others' as
//! [`remote_drive::RemoteDrive`]s over the node RPC, each under the drive
//! deadline), with the lock service as its locker, and serves S3 with the
//! same gateway as a single node: any node serves any object. Until the
//! layer is open, S3 requests are answered with 503 `ServiceUnavailable`.

mod admin;
mod bootstrap;
mod buckets;
mod drive_server;
mod format;
mod lock_admin;
mod locker;
mod locks;
mod raft_node;
mod remote_drive;
mod wire;

use std::convert::Infallible;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rpc::{ClusterKey, Connection, Failure, Gate, Peer, PeerConfig, PeerState, RpcBody, full};
use serde_json::json;
use tokio::net::TcpListener;

use self::bootstrap::{Agreement, FORMAT_VERSION};
use self::raft_node::{INBOUND_QUEUE, MAX_BATCH_BYTES, RaftView};
use crate::config::{ClusterNodes, ConfigError, ServerConfig};
use crate::systemd::Notifier;

/// Where a node keeps its raft log: under MinIO's system directory of its
/// first drive, which MinIO serving the same drives neither lists nor
/// touches.
const RAFT_DIR: &str = ".minio.sys/tessera/raft";

/// Everything the cluster's HTTP side needs.
struct Node {
    me: String,
    rpc: rpc::Service,
    peers: Vec<Peer>,
    raft: Arc<Mutex<RaftView>>,
    nodes: Vec<String>,
    started: Instant,
    metrics_auth: crate::metrics::MetricsAuth,
    admin_auth: crate::metrics::MetricsAuth,
    locks: Arc<locks::Locks>,
    /// The object layer's locker over the lock service.
    locker: Arc<locker::ClusterLocker>,
    /// The deployment id of the drives, once checked.
    deployment: Mutex<Option<String>>,
    admin: admin::Admin,
    /// The S3 gateway over the cluster's object layer, once it is open.
    gateway: std::sync::OnceLock<s3_gateway::Gateway>,
    /// What a single node's metrics show (requests, drives, caches, the
    /// scanner and the heal journal), once the layer is open.
    serving: std::sync::OnceLock<Serving>,
    /// Watches every connection until shutdown takes it (`None` then: new
    /// connections are closed at once).
    graceful: Mutex<Option<hyper_util::server::graceful::GracefulShutdown>>,
    /// Set at shutdown: the readiness checks answer 503.
    draining: std::sync::atomic::AtomicBool,
}

impl Node {
    fn view(&self) -> RaftView {
        self.raft.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The name (`host:port`) of raft member `id` (empty when none).
    fn name_of(&self, id: u64) -> String {
        self.nodes
            .get((id as usize).wrapping_sub(1))
            .cloned()
            .unwrap_or_default()
    }

    /// Whether node `id` (raft id) is this one or a peer that answers.
    fn reachable(&self, id: u64) -> bool {
        self.nodes
            .get((id as usize).wrapping_sub(1))
            .is_some_and(|n| {
                *n == self.me
                    || self
                        .peers
                        .iter()
                        .any(|p| p.name() == n && p.state() == PeerState::Up)
            })
    }

    /// A leader is known and answers, and a majority of the voters answers
    /// (this node counts when it votes).
    fn has_quorum(&self, v: &RaftView) -> bool {
        if v.leader == 0 || v.voters.is_empty() || !self.reachable(v.leader) {
            return false;
        }
        let up = v.voters.iter().filter(|id| self.reachable(**id)).count();
        up > v.voters.len() / 2
    }

    /// The cluster's metrics in Prometheus's text format: this node's raft
    /// member and each peer as this node sees it.
    fn metrics(&self) -> String {
        use std::fmt::Write as _;
        let v = self.view();
        let mut out = String::new();
        let mut family = |name: &str, kind: &str, help: &str, samples: &[(String, String)]| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, value) in samples {
                let _ = writeln!(out, "{name}{labels} {value}");
            }
        };
        let one = |x: u64| vec![(String::new(), x.to_string())];
        family(
            "tessera_raft_term",
            "gauge",
            "The raft term this node is in.",
            &one(v.term),
        );
        family(
            "tessera_raft_commit_index",
            "gauge",
            "The raft log index known committed.",
            &one(v.commit),
        );
        family(
            "tessera_raft_applied_index",
            "gauge",
            "The raft log index applied to the cluster state.",
            &one(v.applied),
        );
        let leader = self
            .nodes
            .get((v.leader as usize).wrapping_sub(1))
            .map(|n| vec![(format!("{{node=\"{n}\"}}"), "1".to_owned())])
            .unwrap_or_default();
        family(
            "tessera_raft_leader",
            "gauge",
            "The leader this node follows (1 on its node label).",
            &leader,
        );
        family(
            "tessera_cluster_quorum",
            "gauge",
            "1 while a reachable leader and a majority of voters answer.",
            &one(u64::from(self.has_quorum(&v))),
        );
        family(
            "tessera_cluster_members",
            "gauge",
            "Nodes recorded in the replicated cluster state.",
            &one(v.members.len() as u64),
        );
        let per_peer = |f: &dyn Fn(&rpc::PeerStats) -> String| {
            self.peers
                .iter()
                .map(|p| (format!("{{peer=\"{}\"}}", p.name()), f(&p.stats())))
                .collect::<Vec<_>>()
        };
        family(
            "tessera_peer_up",
            "gauge",
            "1 while the peer answers the node RPC.",
            &per_peer(&|s| u8::from(s.state == PeerState::Up).to_string()),
        );
        family(
            "tessera_peer_calls_total",
            "counter",
            "Node RPC calls made to the peer.",
            &per_peer(&|s| s.calls.to_string()),
        );
        family(
            "tessera_peer_call_failures_total",
            "counter",
            "Node RPC calls to the peer that failed.",
            &per_peer(&|s| s.failures.to_string()),
        );
        family(
            "tessera_peer_call_seconds_sum",
            "counter",
            "Time spent in node RPC calls to the peer that succeeded.",
            &per_peer(&|s| format!("{:.6}", s.latency_us_sum as f64 / 1e6)),
        );
        family(
            "tessera_peer_call_seconds_count",
            "counter",
            "Node RPC calls to the peer that succeeded.",
            &per_peer(&|s| s.completed.to_string()),
        );
        family(
            "tessera_peer_connects_total",
            "counter",
            "Connections opened to the peer.",
            &per_peer(&|s| s.connects.to_string()),
        );
        family(
            "tessera_peer_clock_skew_seconds",
            "gauge",
            "The peer's clock minus this node's at the last connection.",
            &per_peer(&|s| format!("{:.3}", s.skew_ms as f64 / 1e3)),
        );
        out
    }

    fn status(&self) -> serde_json::Value {
        let v = self.view();
        json!({
            "node": self.me,
            "raft_id": v.id,
            "term": v.term,
            "leader": if v.leader == 0 { serde_json::Value::Null } else { json!(self.name_of(v.leader)) },
            "commit_index": v.commit,
            "applied_index": v.applied,
            "quorum": self.has_quorum(&v),
            "voters": v.voters.iter().map(|id| self.name_of(*id)).collect::<Vec<_>>(),
            "learners": v.learners.iter().map(|id| self.name_of(*id)).collect::<Vec<_>>(),
            "members": v.members.iter().map(|(id, info)| json!({
                "id": id,
                "node": self.name_of(*id),
                "endpoint": info.endpoint,
                "state": format!("{:?}", info.state),
            })).collect::<Vec<_>>(),
            "peers": self.peers.iter().map(|p| {
                let s = p.stats();
                json!({
                    "node": p.name(),
                    "state": format!("{:?}", s.state).to_lowercase(),
                    "clock_skew_ms": s.skew_ms,
                    "calls": s.calls,
                    "failures": s.failures,
                    "connects": s.connects,
                })
            }).collect::<Vec<_>>(),
            "deployment_id": self.deployment.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            "layout_version": v.layout_version,
            "lock_epoch": self.locks.epoch(),
            "lock_partitions_owned": self.locks.partitions_owned(),
            "locks_held": self.locks.held(),
            "uptime_s": self.started.elapsed().as_secs(),
        })
    }

    async fn handle(&self, conn: &Connection, req: Request<Incoming>) -> Response<RpcBody> {
        let path = req.uri().path().to_owned();
        if path.starts_with(rpc::PATH_PREFIX) {
            return self.rpc.handle(conn, req).await;
        }
        let method = req.method().clone();
        let respond = |status: StatusCode, ctype: &str, body: String| {
            let mut r = Response::new(full(if method == Method::HEAD {
                String::new()
            } else {
                body
            }));
            *r.status_mut() = status;
            if let Ok(v) = http::HeaderValue::from_str(ctype) {
                r.headers_mut().insert(http::header::CONTENT_TYPE, v);
            }
            r
        };
        if crate::metrics::is_metrics_request(&method, &path) {
            if let Some(refusal) = self.metrics_auth.check(req.headers()) {
                return refusal.map(|b| b.boxed());
            }
            let mut text = self.metrics();
            if let (Some(s), Some(g)) = (self.serving.get(), self.gateway.get()) {
                text += &s
                    .metrics
                    .render(&s.health, &s.layer, Some(&s.scanner), g.admission_stats())
                    .await;
            }
            return respond(
                StatusCode::OK,
                "text/plain; version=0.0.4; charset=utf-8",
                text,
            );
        }
        // The IAM, quota and configuration calls go to the gateway, which
        // serves them for the whole cluster (the documents are on the
        // shared drives, changes are announced through raft), and so do
        // heal sequences (this node's layer heals every node's drives).
        if let Some(call) = s3_gateway::admin::route(&method, &path)
            && !matches!(
                call,
                s3_gateway::admin::AdminCall::Iam(_)
                    | s3_gateway::admin::AdminCall::Quota(_)
                    | s3_gateway::admin::AdminCall::Config(_)
                    | s3_gateway::admin::AdminCall::Heal(_)
            )
        {
            let deployment = self
                .deployment
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            return self.admin.serve(call, req, deployment).await;
        }
        if path == "/tessera/cluster/locks" {
            // Root credentials only, whatever the metrics' setting.
            if let Some(refusal) = self.admin_auth.check(req.headers()) {
                return refusal.map(|b| b.boxed());
            }
            let query = req.uri().query().unwrap_or("").to_owned();
            let (status, body) = self.lock_admin(&method, &query).await;
            return respond(status, "application/json", format!("{body:#}\n"));
        }
        match path.as_str() {
            "/tessera/cluster" => respond(
                StatusCode::OK,
                "application/json",
                format!("{:#}\n", self.status()),
            ),
            "/minio/health/live" | "/tessera/health/live" => {
                respond(StatusCode::OK, "text/plain", String::new())
            }
            p if health_path(p) && (method == Method::GET || method == Method::HEAD) => {
                // Ready means S3 is served: the object layer is open, a
                // leader with a majority of the voters answers, and every
                // set has the quorum the endpoint asks for (the drives as
                // the single-node health probes them).
                let draining = self.draining.load(std::sync::atomic::Ordering::Relaxed);
                match self.serving.get() {
                    Some(s) if !draining && self.has_quorum(&self.view()) => {
                        match s.health.respond(&method, &path).await {
                            Some(r) => r.map(|b| b.boxed()),
                            None => respond(StatusCode::NOT_FOUND, "text/plain", String::new()),
                        }
                    }
                    _ => {
                        let mut r =
                            respond(StatusCode::SERVICE_UNAVAILABLE, "text/plain", String::new());
                        r.headers_mut().insert(
                            http::header::CACHE_CONTROL,
                            http::HeaderValue::from_static("no-store"),
                        );
                        if draining {
                            r.headers_mut().insert(
                                "x-minio-server-status",
                                http::HeaderValue::from_static("shutting-down"),
                            );
                        }
                        r
                    }
                }
            }
            _ => match self.gateway.get() {
                Some(g) => g.handle(req).await.map(|b| b.boxed()),
                None => s3_gateway::error_document(
                    &s3_gateway::S3Error::with_message(
                        "ServiceUnavailable",
                        "The cluster is starting: this node has not opened the object layer \
                         over the cluster's drives yet.",
                    ),
                    &path,
                    method == Method::HEAD,
                )
                .map(|b| b.boxed()),
            },
        }
    }
}

/// The health endpoints that depend on the node serving S3 (all but
/// `live`), under MinIO's prefix and Tessera's.
fn health_path(path: &str) -> bool {
    ["/minio/health/", "/tessera/health/"].iter().any(|prefix| {
        path.strip_prefix(prefix).is_some_and(|what| {
            matches!(
                what.trim_end_matches('/'),
                "ready" | "cluster" | "cluster/read"
            )
        })
    })
}

/// What a serving node keeps for its metrics.
struct Serving {
    metrics: Arc<crate::metrics::Metrics>,
    health: crate::health::Health,
    layer: Arc<object::layer::ObjectLayer>,
    /// The scanner and the heal journal's healer (they stop when dropped).
    scanner: object::layer::ScannerHandle,
    /// The lifecycle passes (one node at a time runs one: each takes the
    /// cluster's lock first).
    _lifecycle: s3_gateway::lifecycle::LifecycleHandle,
}

/// Runs the futures concurrently on the runtime and collects the outputs
/// of those that finish, in order (one that panics is left out).
async fn futures_join_all<F>(futures: Vec<F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        if let Ok(v) = h.await {
            out.push(v);
        }
    }
    out
}

/// Runs this node of the cluster `nodes` until SIGTERM or SIGINT.
pub async fn run(
    cfg: &ServerConfig,
    nodes: ClusterNodes,
    listeners: Vec<TcpListener>,
    tls: Option<Arc<crate::tls::TlsState>>,
    notifier: &Notifier,
) -> Result<ExitCode, ConfigError> {
    // With TLS on the S3 port, the nodes call each other over TLS too,
    // trusting the certificates directory's CAs and this node's own.
    let connector = match &tls {
        Some(t) => Some(tokio_rustls::TlsConnector::from(
            crate::tls::node_client_config(&t.dir)
                .map_err(|e| ConfigError(format!("TLS to the other nodes: {e}")))?,
        )),
        None => None,
    };
    let key = |what| {
        ClusterKey::derive(&cfg.credentials.user, &cfg.credentials.password)
            .map_err(|e| ConfigError(format!("{what}: {e}")))
    };
    let me = nodes.nodes[nodes.me].clone();
    let gate = Gate::new(key("the node RPC")?, me.clone(), cfg.cluster_max_skew);
    let peer_key = Arc::new(key("the node RPC")?);
    let peer_cfg = PeerConfig {
        max_skew: cfg.cluster_max_skew,
        ..PeerConfig::default()
    };
    let mut peer_slots: Vec<Option<Peer>> = Vec::new();
    let mut peers = Vec::new();
    for (i, name) in nodes.nodes.iter().enumerate() {
        if i == nodes.me {
            peer_slots.push(None);
            continue;
        }
        let mut cfg_i = peer_cfg.clone();
        if let Some(c) = &connector {
            let host = name.rsplit_once(':').map_or(name.as_str(), |(h, _)| h);
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let server_name = rustls::pki_types::ServerName::try_from(host.to_owned())
                .map_err(|e| ConfigError(format!("node {name}: not a TLS server name: {e}")))?;
            cfg_i.tls = Some((c.clone(), server_name));
        }
        let p = Peer::new(
            me.clone(),
            name.clone(),
            name.clone(),
            Arc::clone(&peer_key),
            cfg_i,
        );
        p.spawn_monitor();
        peer_slots.push(Some(p.clone()));
        peers.push(p);
    }

    let parity = placement::parity::StorageClassConfig::resolve(
        cfg.standard_parity
            .map(placement::parity::StorageClass::new),
        cfg.rrs_parity.map(placement::parity::StorageClass::new),
        cfg.drives.set_sizes.first().copied().unwrap_or(0),
    )
    .map_err(|e| ConfigError(format!("storage class: {e}")))?;
    let agreement = Agreement {
        endpoints: nodes.endpoints.clone(),
        set_sizes: cfg.drives.set_sizes.clone(),
        parity: cfg.standard_parity,
        format: FORMAT_VERSION,
    };
    let locks = Arc::new(locks::Locks::new(
        nodes.me as u64 + 1,
        consensus::locks::LockConfig::default(),
        peer_slots.clone(),
    ));
    let (inbound_tx, inbound_rx) = std::sync::mpsc::sync_channel(INBOUND_QUEUE);
    // This node's drives: formatted by the first node (format.write), then
    // checked.
    let local_drives = Arc::new(
        format::LocalDrives::open(&nodes)
            .await
            .map_err(|e| ConfigError(format!("opening the drives: {e}")))?,
    );
    // Every local drive under the drive deadline, shared by this node's
    // object layer and the other nodes' calls (a hung disk is taken
    // offline for both).
    let mut local_layer_drives: std::collections::HashMap<usize, Arc<dyn drive::Drive>> =
        std::collections::HashMap::new();
    for (laid, d) in local_drives.laid() {
        if let Some(i) = nodes
            .layout
            .iter()
            .position(|l| l.endpoint == laid.endpoint)
        {
            let d: Arc<dyn drive::Drive> = Arc::new(drive::DeadlineDrive::new(
                Arc::clone(d) as Arc<dyn drive::Drive>,
                cfg.drive_deadline.clone(),
            ));
            local_layer_drives.insert(i, d);
        }
    }
    let mut service = rpc::Service::new(gate);
    let drive_server = Arc::new(drive_server::DriveServer::new(
        local_layer_drives
            .iter()
            .map(|(i, d)| (*i as u32, Arc::clone(d))),
    ));
    drive_server.register(&mut service);
    let ld = Arc::clone(&local_drives);
    service.unary("format.status", move |_, _| {
        let ld = Arc::clone(&ld);
        async move { ld.serve_status().await }
    });
    let ld = Arc::clone(&local_drives);
    service.unary("format.write", move |from, body: Bytes| {
        let ld = Arc::clone(&ld);
        async move {
            tracing::info!(peer = %from, "formatting this node's drives");
            ld.serve_write(&body).await
        }
    });
    let heal_seqs: Arc<s3_gateway::admin::HealSequences> = Arc::default();
    let seqs = Arc::clone(&heal_seqs);
    service.unary("admin.heal_poll", move |_, body: Bytes| {
        let answer = admin::serve_heal_poll(&seqs, &body);
        async move { Ok::<_, Failure>(answer) }
    });
    let started = Instant::now();
    let ld = Arc::clone(&local_drives);
    let opened_layer: Arc<std::sync::OnceLock<Arc<object::layer::ObjectLayer>>> = Arc::default();
    let opened = Arc::clone(&opened_layer);
    service.unary("admin.drives", move |_, _: Bytes| {
        let (ld, opened) = (Arc::clone(&ld), Arc::clone(&opened));
        async move {
            let answer = admin::NodeDrives {
                uptime_s: started.elapsed().as_secs(),
                drives: ld.info().await,
                heal: opened.get().map(|l| s3_gateway::admin::ServerHeal::of(l)),
            };
            Ok::<_, Failure>(Bytes::from(serde_json::to_vec(&answer).unwrap_or_default()))
        }
    });
    let ours = agreement.clone();
    service.unary("bootstrap.check", move |from, body: Bytes| {
        let diff = ours.difference(&body);
        async move {
            match diff {
                None => Ok(Bytes::from_static(b"agreed")),
                Some(d) => {
                    tracing::error!(peer = %from, "node disagrees on the cluster: {d}");
                    Err(Failure {
                        status: 409,
                        message: d,
                    })
                }
            }
        }
    });
    let (forget_tx, forget_rx) = std::sync::mpsc::sync_channel::<u64>(64);
    let names = nodes.nodes.clone();
    service.unary("raft.forget", move |from: String, _: Bytes| {
        // Only the caller's own record: the name is the authenticated one.
        let r = match names.iter().position(|n| *n == from) {
            Some(i) => {
                let _ = forget_tx.try_send(i as u64 + 1);
                Ok(Bytes::new())
            }
            None => Err(Failure {
                status: 404,
                message: format!("{from} is not a member"),
            }),
        };
        async move { r }
    });
    let inbound: raft_node::Inbound = inbound_tx.clone();
    service.unary("raft.step", move |_, body: Bytes| {
        let r = if body.len() > MAX_BATCH_BYTES {
            Err(Failure {
                status: 413,
                message: "raft batch too large".into(),
            })
        } else {
            match raft_node::decode_batch(&body) {
                Ok(msgs) => {
                    for m in msgs {
                        // Full: raft resends what is dropped.
                        let _ = inbound.try_send(raft_node::Input::Step(m));
                    }
                    Ok(Bytes::new())
                }
                Err(e) => Err(Failure {
                    status: 400,
                    message: format!("raft batch: {e}"),
                }),
            }
        };
        async move { r }
    });

    // A node that starts with an empty raft log asks whether the cluster
    // has a history (a replaced node) before it votes.
    let raft_view = Arc::new(Mutex::new(RaftView::default()));
    let rv = Arc::clone(&raft_view);
    service.unary("raft.history", move |_, _: Bytes| {
        let commit = rv.lock().unwrap_or_else(|e| e.into_inner()).commit;
        async move { Ok::<_, Failure>(Bytes::copy_from_slice(&commit.to_be_bytes())) }
    });
    // How far this node applied the log's bucket and IAM events (caches
    // dropped, IAM documents read again): a node that made such a change
    // waits for the others to reach it.
    let events_applied = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let consumed = Arc::clone(&events_applied);
    service.unary("raft.applied", move |_, _: Bytes| {
        let applied = consumed.load(std::sync::atomic::Ordering::SeqCst);
        async move { Ok::<_, Failure>(Bytes::copy_from_slice(&applied.to_be_bytes())) }
    });

    for op in ["acquire", "refresh", "release"] {
        let locks = Arc::clone(&locks);
        service.unary(&format!("lock.{op}"), move |_, body: Bytes| {
            let r = locks.serve(op, &body);
            async move { r }
        });
    }
    let node = Arc::new(Node {
        me: me.clone(),
        rpc: service,
        peers: peers.clone(),
        raft: Arc::clone(&raft_view),
        nodes: nodes.nodes.clone(),
        started,
        locks: Arc::clone(&locks),
        locker: Arc::new(locker::ClusterLocker::new(Arc::clone(&locks), me.clone())),
        deployment: Mutex::new(None),
        admin: admin::Admin {
            auth: s3_gateway::admin::AdminAuth::new(
                &cfg.region,
                &[(
                    cfg.credentials.user.clone(),
                    cfg.credentials.password.clone(),
                )],
            ),
            me: nodes.me,
            nodes: nodes.nodes.clone(),
            peers: peer_slots.clone(),
            layout: nodes.layout.clone(),
            local: Arc::clone(&local_drives),
            scheme: if tls.is_some() { "https" } else { "http" },
            region: cfg.region.clone(),
            standard_parity: parity.standard_parity(),
            rrs_parity: parity.rrs_parity(),
            started,
            layer: Arc::clone(&opened_layer),
            heal_seqs,
        },
        admin_auth: crate::metrics::MetricsAuth::root(cfg),
        metrics_auth: crate::metrics::MetricsAuth::for_metrics(cfg),
        gateway: std::sync::OnceLock::new(),
        serving: std::sync::OnceLock::new(),
        graceful: Mutex::new(Some(hyper_util::server::graceful::GracefulShutdown::new())),
        draining: std::sync::atomic::AtomicBool::new(false),
    });
    let mut accepts = Vec::new();
    for l in listeners {
        let acceptor = tls
            .as_ref()
            .map(|t| tokio_rustls::TlsAcceptor::from(t.config.clone()));
        accepts.push(tokio::spawn(accept_loop(l, Arc::clone(&node), acceptor)));
    }
    tracing::info!(
        node = %me,
        nodes = nodes.nodes.len(),
        "cluster node {} of {}: waiting for the other nodes to agree",
        nodes.me + 1,
        nodes.nodes.len()
    );
    notifier.status("waiting for the other nodes");

    let agreed = tokio::select! {
        r = bootstrap::wait_for_agreement(&agreement, &peers, nodes.nodes.len(), Duration::from_secs(5)) => r,
        _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
    };
    let agreed = agreed.map_err(|r| ConfigError(format!("this node does not join: {}", r.0)))?;
    tracing::info!(agreed = ?agreed, "a majority of nodes agrees");
    notifier.status("formatting or checking the drives");
    let replaced = format::format_or_wait(&nodes, &local_drives, &peers, Duration::from_secs(5))
        .await
        .map_err(|e| ConfigError(format!("formatting the drives: {e}")))?;
    let deployment = local_drives
        .check()
        .await
        .map_err(|e| ConfigError(format!("this node does not join: {e}")))?;
    tracing::info!(%deployment, "the drives belong to the deployment; starting the raft member");
    *node.deployment.lock().unwrap_or_else(|e| e.into_inner()) = Some(deployment.to_string());

    let first = cfg
        .drives
        .pools
        .iter()
        .flatten()
        .next()
        .ok_or_else(|| ConfigError("this node has no drives".into()))?;
    let dir = first.join(RAFT_DIR);
    let live: raft_node::Live = {
        let peers = peers.clone();
        let names = nodes.nodes.clone();
        let me = nodes.me;
        Arc::new(move || {
            names
                .iter()
                .enumerate()
                .filter(|(i, n)| {
                    *i == me
                        || peers
                            .iter()
                            .any(|p| p.name() == n.as_str() && p.state() != PeerState::Down)
                })
                .map(|(i, _)| i as u64 + 1)
                .collect()
        })
    };
    let mut history = false;
    for p in &peers {
        if let Ok(b) = p
            .call("raft.history", Bytes::new(), Some(Duration::from_secs(2)))
            .await
            && let Ok(commit) = <[u8; 8]>::try_from(&b[..])
            && u64::from_be_bytes(commit) > 0
        {
            history = true;
            break;
        }
    }
    let peer_slots_by_node = peer_slots.clone();
    let (applied_tx, applied_rx) = tokio::sync::mpsc::channel(buckets::EVENT_QUEUE);
    let lost_log = raft_node::start(raft_node::Member {
        id: nodes.me as u64 + 1,
        cluster_has_history: history,
        forgotten: forget_rx,
        layout: agreement.to_json(),
        dir,
        nodes: nodes.nodes.clone(),
        peers: peer_slots,
        inbound: inbound_rx,
        applied: applied_tx,
        view: raft_view,
        locks: Arc::clone(&locks),
        live,
    })
    .map_err(ConfigError)?;
    if lost_log {
        // The leader must learn that this member's log is gone, or it
        // ignores the member's refusals of entries it believes it sent.
        // Told until the log arrives: a peer that leads later starts
        // afresh anyway.
        let peers = peers.clone();
        let view = Arc::clone(&node.raft);
        tokio::spawn(async move {
            let until = tokio::time::Instant::now() + Duration::from_secs(120);
            while tokio::time::Instant::now() < until
                && view.lock().unwrap_or_else(|e| e.into_inner()).commit == 0
            {
                for p in &peers {
                    let _ = p
                        .call("raft.forget", Bytes::new(), Some(Duration::from_secs(2)))
                        .await;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
    }
    notifier.status("opening the object layer over the cluster's drives");
    // The other nodes may still be formatting or starting: the layer is
    // opened once the drives it needs answer with the deployment's format.
    // Read (and logged) once: the layer may take many attempts to open.
    let (opts, _, assumed, available) = crate::layer_options(cfg);
    let layer = loop {
        match open_layer(cfg, &opts, &nodes, &local_layer_drives, &peer_slots_by_node).await {
            Ok(l) => break l,
            Err(e) => {
                tracing::warn!("opening the object layer over the cluster's drives: {e}; retrying");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    };
    for (i, laid) in nodes.layout.iter().enumerate() {
        if let (true, Some(d)) = (
            replaced.contains(&laid.endpoint),
            local_layer_drives.get(&i),
        ) {
            layer.track_replaced(d);
        }
    }
    let bucket_events = Arc::new(buckets::BucketEvents::new(
        me.clone(),
        inbound_tx,
        peers.clone(),
        events_applied,
    ));
    let layer = Arc::new(
        layer
            .with_locker(node.locker.clone())
            .with_bucket_hook(bucket_events.hook()),
    );
    tokio::spawn(Arc::clone(&bucket_events).run(Arc::clone(&layer), applied_rx));
    let metrics = Arc::new(crate::metrics::Metrics::new());
    let gateway = s3_gateway::Gateway::new(
        Arc::clone(&layer),
        crate::gateway_config(cfg, tls.is_some(), assumed, available),
    )
    .with_observer(metrics.clone())
    .with_heal_forward(
        Arc::clone(&node.admin.heal_seqs),
        Arc::new(admin::HealRelay {
            me: node.admin.me,
            nodes: node.admin.nodes.clone(),
            peers: node.admin.peers.clone(),
        }),
    );
    if let Err(e) = gateway.load_iam().await {
        tracing::warn!(
            "reading the IAM documents: {e}; only the root user is served until they read"
        );
    }
    // The speed set through the admin API is read beside serving: S3 does
    // not wait for a quorum read of the drives of nodes that may still be
    // starting, and the scanner's tasks read it again until it reads.
    {
        let layer = Arc::clone(&layer);
        tokio::spawn(async move {
            if let Err(e) = layer.load_scan_speed().await {
                tracing::warn!(
                    "reading the scanner speed: {e}; the start rate applies until it reads"
                );
            }
        });
    }
    let _ = node.gateway.set(gateway);
    let _ = node.admin.layer.set(Arc::clone(&layer));
    // Versions another node removes leave this node's read cache with them.
    let weak = Arc::downgrade(&layer);
    drive_server.on_data_dir_removed(Arc::new(move |dir| {
        if let Some(layer) = weak.upgrade() {
            layer.forget_data_dir(dir);
        }
    }));
    let lifecycle = s3_gateway::lifecycle::spawn(Arc::clone(&layer), cfg.lifecycle.clone());
    metrics.watch_lifecycle(Arc::clone(&lifecycle.stats));
    let _ = node.serving.set(Serving {
        _lifecycle: lifecycle,
        metrics,
        health: crate::health::Health::new(Arc::clone(&layer)),
        scanner: layer.spawn_scanner(cfg.scanner.clone()),
        layer: Arc::clone(&layer),
    });
    tracing::info!(
        drives = layer.drives().count(),
        sets = layer.sets().len(),
        "serving S3: any node serves any object"
    );
    notifier.ready("cluster member running, serving S3");

    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| ConfigError(format!("signal handler: {e}")))?;
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    // Drain: no new connections; requests in flight finish (HTTP/2
    // connections, the other nodes' among them, are told to go away,
    // HTTP/1.1 ones close after their current request), within the
    // shutdown timeout.
    notifier.stopping("stopping: draining requests in flight");
    node.draining
        .store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(s) = node.serving.get() {
        s.health.set_draining();
    }
    for a in accepts {
        a.abort();
    }
    let graceful = node
        .graceful
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(g) = graceful {
        tracing::info!(
            connections = g.count(),
            timeout_secs = cfg.shutdown_timeout.as_secs_f64(),
            "shutting down: draining requests in flight"
        );
        if tokio::time::timeout(cfg.shutdown_timeout, g.shutdown())
            .await
            .is_err()
        {
            tracing::warn!(
                "shutdown timeout ({:?}) reached: cut the connections still open",
                cfg.shutdown_timeout
            );
        }
    }
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

async fn accept_loop(
    listener: TcpListener,
    node: Arc<Node>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
) {
    loop {
        let (sock, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = sock.set_nodelay(true);
        let node = Arc::clone(&node);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            match acceptor {
                Some(a) => {
                    match tokio::time::timeout(Duration::from_secs(10), a.accept(sock)).await {
                        Ok(Ok(tls)) => serve(tls, node).await,
                        Ok(Err(e)) => tracing::debug!("cluster TLS handshake: {e}"),
                        Err(_) => tracing::debug!("cluster TLS handshake timed out"),
                    }
                }
                None => serve(sock, node).await,
            }
        });
    }
}

/// Serves one connection (HTTP/1.1 or HTTP/2) until it closes.
async fn serve<I>(io: I, node: Arc<Node>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let watched = Arc::clone(&node);
    let conn = Arc::new(Connection::default());
    let svc = hyper::service::service_fn(move |req| {
        let node = Arc::clone(&node);
        let conn = Arc::clone(&conn);
        async move { Ok::<_, Infallible>(node.handle(&conn, req).await) }
    });
    let mut b = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    b.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30));
    b.http2()
        .timer(TokioTimer::new())
        .initial_stream_window_size(rpc::STREAM_WINDOW)
        .initial_connection_window_size(rpc::CONN_WINDOW)
        .max_frame_size(rpc::MAX_FRAME)
        .max_concurrent_streams(rpc::MAX_STREAMS)
        .keep_alive_interval(Some(Duration::from_secs(5)))
        .keep_alive_timeout(Duration::from_secs(10));
    let watcher = watched
        .graceful
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|g| g.watcher());
    // Shutting down: the connection is closed unserved.
    let Some(watcher) = watcher else { return };
    if let Err(e) = watcher
        .watch(b.serve_connection(TokioIo::new(io), svc))
        .await
    {
        tracing::debug!("cluster connection: {e}");
    }
}

/// The object layer over every drive of the cluster, pool by pool in
/// MinIO's layout order: this node's drives as they are (under the drive
/// deadline), the others' over the node RPC under the same deadline.
async fn open_layer(
    cfg: &ServerConfig,
    opts: &object::layer::LayerOptions,
    nodes: &ClusterNodes,
    local: &std::collections::HashMap<usize, Arc<dyn drive::Drive>>,
    peers: &[Option<Peer>],
) -> Result<object::layer::ObjectLayer, String> {
    let pools = nodes
        .layout
        .iter()
        .map(|d| d.pool)
        .max()
        .map_or(0, |p| p + 1);
    // One batch queue per node, shared by its drives.
    let batches: Vec<Option<Arc<remote_drive::PeerBatch>>> = peers
        .iter()
        .map(|p| p.as_ref().map(|p| remote_drive::PeerBatch::new(p.clone())))
        .collect();
    let mut drives: Vec<Vec<Arc<dyn drive::Drive>>> = vec![Vec::new(); pools];
    for (i, laid) in nodes.layout.iter().enumerate() {
        let d: Arc<dyn drive::Drive> = match local.get(&i) {
            Some(d) => Arc::clone(d),
            None => {
                let batch = batches
                    .get(laid.node)
                    .and_then(Option::as_ref)
                    .ok_or_else(|| format!("no peer for drive {}", laid.endpoint))?;
                let remote = remote_drive::RemoteDrive::new(
                    Arc::clone(batch),
                    i as u32,
                    laid.endpoint.clone(),
                );
                Arc::new(drive::DeadlineDrive::new(
                    Arc::new(remote) as Arc<dyn drive::Drive>,
                    cfg.drive_deadline.clone(),
                ))
            }
        };
        drives[laid.pool].push(d);
    }
    object::layer::ObjectLayer::open_pools(drives, opts.clone())
        .await
        .map_err(|e| e.to_string())
}

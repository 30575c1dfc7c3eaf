//! `tessera`: the Tessera server.
//!
//! `tessera server [FLAGS] ENDPOINTS...` opens the drives, serves S3 over
//! HTTP or HTTPS (HTTP/1.1 and HTTP/2), answers health and Prometheus
//! requests, runs the background scanner, speaks systemd's notification
//! protocol, reloads certificates on SIGHUP and drains requests in flight
//! on SIGTERM or SIGINT. Configuration comes from flags and the
//! environment, MinIO's variable names included (see `cli` and
//! `docs/operations.md`).

mod banner;
mod cli;
mod cluster;
mod config;
mod fdlimit;
mod health;
mod kernels;
mod memory;
mod metrics;
mod send_deadline;
mod server;
mod stream_deadline;
mod systemd;
mod tls;
mod token;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use object::layer::{LayerOptions, ObjectLayer};
use s3_gateway::{Gateway, GatewayConfig, GatewayLimits};
use tokio::signal::unix::{SignalKind, signal};

use crate::cli::{Command, ServerArgs, TokenArgs};
use crate::config::{ConfigError, Env, LocalHost, LogFormat, ServerConfig};
use crate::health::Health;
use crate::metrics::{Metrics, MetricsAuth};
use crate::server::{App, ServeOptions, Server};
use crate::systemd::Notifier;
use crate::tls::TlsSetup;

fn main() -> ExitCode {
    let cli = cli::parse();
    let result = match cli.command {
        Command::Server(args) => server_main(args),
        Command::PrometheusToken(args) => token_main(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tessera: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(cfg: &config::LogConfig) -> Result<(), ConfigError> {
    let filter = tracing_subscriber::EnvFilter::try_new(&cfg.filter)
        .map_err(|e| ConfigError(format!("TESSERA_LOG='{}': {e}", cfg.filter)))?;
    // Colours only on a terminal: journald and log files get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let r = match cfg.format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    r.map_err(|e| ConfigError(format!("installing the logger: {e}")))
}

fn server_main(args: ServerArgs) -> Result<ExitCode, ConfigError> {
    let env = Env::from_process()?;
    let cwd =
        std::env::current_dir().map_err(|e| ConfigError(format!("the working directory: {e}")))?;
    let local = LocalHost::detect();
    let cfg = ServerConfig::resolve(&args, &env, &cwd, &local)?;
    init_logging(&cfg.log)?;
    for w in &cfg.warnings {
        tracing::warn!("{w}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("tessera")
        .build()
        .map_err(|e| ConfigError(format!("starting the runtime: {e}")))?;
    let code = runtime.block_on(run(cfg, env, local))?;
    // Connections cut at the drain deadline may leave tasks behind: do not
    // wait for them.
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(code)
}

fn token_main(args: &TokenArgs) -> Result<ExitCode, ConfigError> {
    let env = Env::from_process()?;
    let mut warnings = Vec::new();
    let creds = config::credentials(&env, &mut warnings)?;
    for w in warnings {
        eprintln!("tessera: warning: {w}");
    }
    let expiry = match &args.expiry {
        Some(e) => config::parse_duration(e).map_err(|e| ConfigError(format!("--expiry {e}")))?,
        None => Duration::from_secs(100 * 365 * 24 * 3600),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let exp = now.saturating_add(expiry.as_secs()).min(i64::MAX as u64) as i64;
    let token = token::generate(&creds.user, &creds.password, exp);
    println!("scrape_configs:");
    println!("- job_name: tessera");
    println!("  bearer_token: {token}");
    println!("  metrics_path: /minio/v2/metrics/cluster");
    println!("  scheme: http");
    println!("  static_configs:");
    println!("  - targets: ['localhost:9000']");
    Ok(ExitCode::SUCCESS)
}

async fn run(cfg: ServerConfig, env: Env, local: LocalHost) -> Result<ExitCode, ConfigError> {
    let (notifier, warning) = Notifier::from_env(env.raw(cli::NOTIFY_SOCKET.name));
    if let Some(w) = warning {
        tracing::warn!("{w}");
    }
    if notifier.enabled() {
        tracing::debug!("notifying systemd through NOTIFY_SOCKET");
    }
    notifier.status("starting");
    kernels::log_kernels();

    let tls = match tls::setup(cfg.certs_dir.as_deref(), cfg.certs_dir_explicit) {
        Ok(TlsSetup::Disabled) => None,
        Ok(TlsSetup::Enabled(t)) => {
            tracing::info!(dir = %t.dir.display(), trusted_cas = t.ca_count, "TLS enabled");
            Some(t)
        }
        Err(e) => return Err(ConfigError(format!("TLS: {e}"))),
    };
    if cfg.drives.https_urls && tls.is_none() {
        return Err(ConfigError(
            "the endpoints are https URLs but no certificate is configured (public.crt and \
             private.key in the certificates directory)"
                .into(),
        ));
    }

    let fds = fdlimit::raise();
    let max_connections = fdlimit::connections_for(fds.now);
    tracing::info!(
        open_files_before = ?fds.before,
        open_files = ?fds.now,
        max_connections,
        "open-files limit (raised to the hard limit); client connections served at once: half of it"
    );

    let listeners = server::bind(&cfg.listen).await.map_err(ConfigError)?;
    let addrs: Vec<_> = listeners
        .iter()
        .filter_map(|l| l.local_addr().ok())
        .collect();

    if let Some(nodes) = cfg.drives.cluster.clone() {
        return cluster::run(&cfg, nodes, listeners, tls.clone(), &notifier).await;
    }

    notifier.status("opening drives");
    #[cfg(feature = "fault-injection")]
    tracing::warn!(
        "fault injection built in (test-only build): drives obey the control files under TESSERA_FAULT_DIR"
    );
    tracing::info!(
        timeout = ?cfg.drive_deadline.op_timeout,
        probe_interval = ?cfg.drive_deadline.probe_interval,
        max_consecutive_failures = cfg.drive_deadline.max_consecutive_failures,
        "every drive operation has a deadline (TESSERA_DRIVE_TIMEOUT, TESSERA_DRIVE_PROBE_INTERVAL)"
    );
    let (opts, read_cache, assumed, available) = layer_options(&cfg);
    let layer = Arc::new(
        ObjectLayer::open_pool_dirs(&cfg.drives.pools, opts)
            .await
            .map_err(|e| ConfigError(format!("opening the drives: {e}")))?,
    );

    if read_cache > 0 {
        // The cache gives memory back while the machine runs short of it.
        tokio::spawn(memory::watch_read_cache(layer.clone(), memory::available));
    }

    let metrics = Arc::new(Metrics::new());
    metrics
        .connections_limit
        .set(i64::try_from(max_connections).unwrap_or(i64::MAX));
    let gateway = Gateway::new(
        layer.clone(),
        gateway_config(&cfg, tls.is_some(), assumed, available),
    )
    .with_observer(metrics.clone());
    if let Err(e) = gateway.load_iam().await {
        tracing::warn!(
            "reading the IAM documents: {e}; only the root user is served until they read"
        );
    }
    // A speed set through the admin API applies from the first request
    // on; drives that do not answer yet leave it to the scanner's retries.
    if let Err(e) = layer.load_scan_speed().await {
        tracing::warn!("reading the scanner speed: {e}; the start rate applies until it reads");
    }
    let scanner = layer.spawn_scanner(cfg.scanner.clone());
    let lifecycle = s3_gateway::lifecycle::spawn(layer.clone(), cfg.lifecycle.clone());
    metrics.watch_lifecycle(lifecycle.stats.clone());
    let app = Arc::new(App {
        gateway,
        health: Health::new(layer.clone()),
        metrics,
        metrics_auth: MetricsAuth::for_metrics(&cfg),
        layer: layer.clone(),
        scanner: Some(scanner),
        _lifecycle: Some(lifecycle),
    });

    // Signals are installed before the server says it is ready.
    let sig = |k: SignalKind| signal(k).map_err(|e| ConfigError(format!("signal handler: {e}")));
    let (mut term, mut int, mut hup) = (
        sig(SignalKind::terminate())?,
        sig(SignalKind::interrupt())?,
        sig(SignalKind::hangup())?,
    );

    let mut server = Server::start(
        listeners,
        app.clone(),
        ServeOptions {
            read_header_timeout: cfg.read_header_timeout,
            tls: tls.clone(),
            max_connections,
            splice: cfg.splice_get,
            send_timeout: cfg.send_timeout,
        },
    );

    let urls = banner::api_urls(&addrs, tls.is_some(), local.hostname());
    let sc = layer.storage_class();
    print!(
        "{}",
        banner::render(
            &cfg,
            &banner::Facts {
                urls: &urls,
                tls_dir: tls.as_ref().map(|t| t.dir.as_path()),
                deployment_id: layer.deployment_id().to_string(),
                drives: layer.drives().count(),
                sets: layer.sets().len(),
                standard_parity: sc.standard_parity(),
                rrs_parity: sc.rrs_parity(),
            },
        )
    );
    if cfg.credentials.is_default() {
        tracing::warn!(
            "default credentials minioadmin:minioadmin in use; set TESSERA_ROOT_USER and \
             TESSERA_ROOT_PASSWORD"
        );
    }
    let snapshot = app.health.snapshot().await;
    let status = format!(
        "serving S3 on {} ({}/{} drives online)",
        urls.join(" "),
        snapshot.online(),
        snapshot.drives.len()
    );
    tracing::info!(addresses = %urls.join(" "), "{status}");
    notifier.ready(&status);
    let watchdog = systemd::watchdog_interval(env.raw("WATCHDOG_USEC"), env.raw("WATCHDOG_PID"))
        .map(|period| {
            let n = Notifier::from_env(env.raw(cli::NOTIFY_SOCKET.name)).0;
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(period / 2);
                loop {
                    tick.tick().await;
                    n.notify("WATCHDOG=1");
                }
            })
        });

    let reason = loop {
        tokio::select! {
            _ = term.recv() => break "SIGTERM",
            _ = int.recv() => break "SIGINT",
            _ = hup.recv() => match &tls {
                Some(t) => match t.reload() {
                    Ok(()) => {
                        tracing::info!(dir = %t.dir.display(), "certificates reloaded");
                        notifier.status(&format!("{status}; certificates reloaded"));
                    }
                    Err(e) => tracing::error!("certificate reload failed, keeping the current ones: {e}"),
                },
                None => tracing::info!("SIGHUP: TLS is off, nothing to reload"),
            },
        }
    };

    tracing::info!(
        signal = reason,
        timeout_secs = cfg.shutdown_timeout.as_secs_f64(),
        "shutting down: no new connections, draining requests in flight"
    );
    app.health.set_draining();
    server.stop_accepting().await;
    // The listeners are closed: tell systemd (and anyone waiting) we are going.
    notifier.stopping("stopping: draining requests in flight");
    let drain = server.drain(cfg.shutdown_timeout);
    tokio::pin!(drain);
    let forced = |notifier: &Notifier| {
        tracing::warn!("second signal: exiting without waiting for requests in flight");
        notifier.stopping("forced stop");
        ExitCode::FAILURE
    };
    let ok = tokio::select! {
        ok = &mut drain => ok,
        _ = term.recv() => return Ok(forced(&notifier)),
        _ = int.recv() => return Ok(forced(&notifier)),
    };
    if let Some(w) = watchdog {
        w.abort();
    }
    if ok {
        tracing::info!("all requests finished; stopped");
    } else {
        tracing::warn!(
            "shutdown timeout ({:?}) reached: cut the connections still open",
            cfg.shutdown_timeout
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The object layer's options from the configuration (the drives' and
/// the read cache's), with the read cache's size and the memory figures
/// that sized it: (options, read cache bytes, memory assumed available,
/// memory found available).
pub(crate) fn layer_options(cfg: &ServerConfig) -> (LayerOptions, u64, u64, Option<u64>) {
    let mut drive_cfg = drive::LocalDriveConfig::default();
    drive_cfg.piped_reads = cfg.splice_get;
    drive_cfg.group_commit = cfg.group_commit;
    drive_cfg.huge_fill = match cfg.huge_fill {
        Some(on) => on,
        None => !drive::free_page_reporting(),
    };
    tracing::info!(
        huge_fill = drive_cfg.huge_fill,
        set = cfg.huge_fill.is_some(),
        "GETs fill the page cache in huge folios (TESSERA_HUGE_FILL; auto: off where the kernel reports free pages to a hypervisor)"
    );
    drive::set_huge_pages(cfg.huge_pages);
    tracing::info!(
        huge_pages = drive::huge_pages(),
        "shard buffers in transparent huge pages (TESSERA_HUGE_PAGES)"
    );
    // The memory available at start sizes the defaults of the read cache
    // and of the requests served at once (4 GiB assumed where unknown).
    // The requests' bound is a hard one: nodes of the cluster on this
    // machine each take their share of its memory for it. The read cache
    // gives memory back whenever the machine runs short (whoever uses it),
    // so each node sizes it from the whole.
    let here = cfg.drives.cluster.as_ref().map_or(1, |c| c.here.max(1));
    let available = memory::available();
    let machine = available.unwrap_or(4 << 30);
    let assumed = machine / here as u64;
    if here > 1 {
        tracing::info!(
            nodes_here = here,
            share_mib = assumed >> 20,
            "nodes of the cluster on this machine share its memory: the bound of requests \
             served at once is sized from this node's share"
        );
    }
    let read_cache = match cfg.read_cache {
        Some(bytes) => bytes,
        None => memory::read_cache_for(machine),
    };
    tracing::info!(
        read_cache_mib = read_cache >> 20,
        set = cfg.read_cache.is_some(),
        "verified blocks of hot objects kept in memory (TESSERA_READ_CACHE; auto: 1/16 of the memory available, at most 1 GiB)"
    );
    let opts = LayerOptions {
        parity: cfg.standard_parity,
        rrs_parity: cfg.rrs_parity,
        set_drive_count: cfg.drives.set_drive_count,
        drive: Some(drive_cfg),
        deadline: Some(cfg.drive_deadline.clone()),
        put_queue_bytes_per_drive: None,
        read_cache_bytes: Some(usize::try_from(read_cache).unwrap_or(usize::MAX)),
    };
    (opts, read_cache, assumed, available)
}

/// The S3 gateway's configuration: credentials, region, domains,
/// encryption and the request limits (the requests served at once sized
/// from the memory available unless set).
pub(crate) fn gateway_config(
    cfg: &ServerConfig,
    tls: bool,
    assumed: u64,
    available: Option<u64>,
) -> GatewayConfig {
    let max_requests = match cfg.requests_max {
        Some(n) => n,
        None => {
            let n = memory::requests_max_for(assumed);
            tracing::info!(
                available_mib = available.map(|a| a >> 20),
                max_requests = n,
                "S3 requests served at once, from the memory available \
                 (TESSERA_API_REQUESTS_MAX sets it)"
            );
            n
        }
    };
    GatewayConfig {
        region: cfg.region.clone(),
        credentials: vec![(
            cfg.credentials.user.clone(),
            cfg.credentials.password.clone(),
        )],
        domains: cfg.domains.clone(),
        encryption: s3_gateway::EncryptionConfig {
            kms: cfg.kms.clone(),
            auto_encryption: cfg.auto_encryption,
            tls,
            insecure_sse_c: cfg.insecure_sse_c,
        },
        sigv2: cfg.sigv2,
        sts_min_duration_secs: cfg.sts_min_duration_secs,
        openid: cfg.openid.clone(),
        limits: GatewayLimits {
            max_requests,
            request_wait: cfg.requests_deadline,
            max_post_forms: cfg.post_forms_max,
            post_form_idle: cfg.post_form_idle,
            post_form_timeout: cfg.post_form_timeout,
            body_min_rate: cfg.body_min_rate,
            body_grace: cfg.body_grace,
            ..GatewayLimits::default()
        },
        ..GatewayConfig::default()
    }
}

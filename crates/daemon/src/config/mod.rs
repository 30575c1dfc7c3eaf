//! The server configuration, resolved from the command line and the
//! environment (Tessera's names first, then MinIO's), and validated before
//! anything is opened. This file assembles [`ServerConfig`]; each part it
//! reads has a file of its own.

mod address;
mod credentials;
mod drives;
mod env;
#[cfg(test)]
mod tests;
mod units;

use std::path::{Path, PathBuf};
use std::time::Duration;

use object::layer::ScanOptions;
use placement::StorageClass;

use crate::cli::{self, EnvVar, ServerArgs};
use crate::memory::MAX_REQUESTS_CAP;

pub use address::{ListenAddr, LocalHost};
pub use credentials::{CredentialSource, Credentials, credentials};
pub use drives::{ClusterNodes, Drives, LaidDrive};
pub use env::Env;
pub use units::parse_duration;

use address::DEFAULT_PORT;
use drives::drives;
use env::duration_var;
use units::parse_size;

/// Longest wait for a request slot by default (MinIO's).
const REQUESTS_DEADLINE: Duration = Duration::from_secs(10);

/// A configuration problem, reported as is and ending the process with 1.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(msg.into()))
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// Logging configuration.
#[derive(Debug, Clone)]
pub struct LogConfig {
    pub format: LogFormat,
    pub filter: String,
}

/// Everything `tessera server` needs, validated.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: ListenAddr,
    pub drives: Drives,
    pub credentials: Credentials,
    pub region: String,
    pub domains: Vec<String>,
    pub standard_parity: Option<usize>,
    pub rrs_parity: Option<usize>,
    /// The certificates directory, and whether it was named explicitly.
    pub certs_dir: Option<PathBuf>,
    pub certs_dir_explicit: bool,
    pub log: LogConfig,
    pub prometheus_public: bool,
    /// The static KMS key (`NAME:BASE64`), if configured.
    pub kms: Option<std::sync::Arc<dyn sse::kms::Kms>>,
    pub auto_encryption: bool,
    pub insecure_sse_c: bool,
    /// Whether SigV2-signed requests are accepted.
    pub sigv2: bool,
    /// The shortest STS session, seconds (tests set it below MinIO's 900).
    pub sts_min_duration_secs: u64,
    /// The OpenID Connect provider of web identities, if configured.
    pub openid: Option<s3_gateway::oidc::OpenIdConfig>,
    pub scanner: ScanOptions,
    /// The lifecycle passes.
    pub lifecycle: s3_gateway::lifecycle::LifecycleOptions,
    pub shutdown_timeout: Duration,
    /// Deadline of every drive operation and probe interval of offline
    /// drives.
    pub drive_deadline: drive::DeadlineConfig,
    pub read_header_timeout: Duration,
    /// S3 requests served at once (`None`: from the memory available at
    /// start, [`requests_max_for`](crate::memory::requests_max_for)).
    pub requests_max: Option<usize>,
    /// Browser POST forms read at once before authentication (0: a quarter
    /// of the request bound).
    pub post_forms_max: usize,
    /// Longest time for a browser POST form's fields to arrive.
    pub post_form_timeout: Duration,
    /// Longest wait for the next piece of a browser POST form's fields.
    pub post_form_idle: Duration,
    /// The floor rate of request bodies (bytes a second; 0: none) and the
    /// time before it applies.
    pub body_min_rate: u64,
    pub body_grace: Duration,
    /// Longest time a response may go without progress.
    pub send_timeout: Duration,
    /// Largest clock difference between two nodes of a cluster.
    pub cluster_max_skew: Duration,
    /// Longest wait for a request slot before `503 SlowDown`.
    pub requests_deadline: Duration,
    /// Whether GETs send page-cache pages with `splice`
    /// (`LocalDriveConfig::piped_reads`).
    pub splice_get: bool,
    /// Whether GETs fill the page cache in huge folios
    /// (`LocalDriveConfig::huge_fill`); `None`: decided at start, on
    /// unless `drive::free_page_reporting()`.
    pub huge_fill: Option<bool>,
    /// Bytes of the read cache (`LayerOptions::read_cache_bytes`; 0: no
    /// cache); `None`: [`read_cache_for`](crate::memory::read_cache_for) the memory available at start.
    pub read_cache: Option<u64>,
    /// Whether drives make `xl.meta` writes durable in groups
    /// (`LocalDriveConfig::group_commit`).
    pub group_commit: bool,
    /// Whether large buffers are carved from huge-page regions
    /// (`drive::set_huge_pages`).
    pub huge_pages: bool,
    pub quiet: bool,
    pub anonymous: bool,
    /// Things to warn about once logging is up.
    pub warnings: Vec<String>,
}

/// Logging settings alone (read before anything else can fail, so errors
/// are logged in the chosen format).
pub fn log_config(json_flag: bool, env: &Env) -> Result<LogConfig, ConfigError> {
    let format = match env.get(&cli::LOG_FORMAT) {
        _ if json_flag => LogFormat::Json,
        None => LogFormat::Text,
        Some((v, name)) => match v.trim().to_ascii_lowercase().as_str() {
            "text" => LogFormat::Text,
            "json" => LogFormat::Json,
            _ => return err(format!("{name}='{v}': expected text or json")),
        },
    };
    let filter = env
        .get(&cli::LOG)
        .map_or_else(|| "info".to_owned(), |(v, _)| v);
    Ok(LogConfig { format, filter })
}

/// Parses domains for virtual-host-style requests.
fn domains(env: &Env) -> Result<Vec<String>, ConfigError> {
    let Some((v, name)) = env.get(&cli::DOMAIN) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for d in v.split(',') {
        let d = d.trim().trim_end_matches('.').to_ascii_lowercase();
        if d.is_empty() {
            continue;
        }
        let valid = d.len() <= 253
            && d.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if !valid {
            return err(format!("{name}: '{d}' is not a valid domain name"));
        }
        if !out.contains(&d) {
            out.push(d);
        }
    }
    Ok(out)
}

fn region(env: &Env) -> Result<String, ConfigError> {
    let Some((v, name)) = env.get(&cli::REGION) else {
        return Ok("us-east-1".to_owned());
    };
    let v = v.trim().to_owned();
    if v.is_empty()
        || v.len() > 64
        || !v
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return err(format!(
            "{name}='{v}': a region is letters, digits, '-' and '_' (us-east-1)"
        ));
    }
    Ok(v)
}

fn storage_class(env: &Env, var: &EnvVar) -> Result<Option<StorageClass>, ConfigError> {
    match env.get(var) {
        None => Ok(None),
        Some((v, name)) => StorageClass::parse(v.trim())
            .map(Some)
            .map_err(|e| ConfigError(format!("{name}: {e}"))),
    }
}

impl ServerConfig {
    /// Resolves the server configuration.
    pub fn resolve(
        args: &ServerArgs,
        env: &Env,
        cwd: &Path,
        local: &LocalHost,
    ) -> Result<ServerConfig, ConfigError> {
        let mut warnings = Vec::new();
        let log = log_config(args.json, env)?;

        let listen = match (&args.address, env.get(&cli::ADDRESS)) {
            (Some(a), _) => {
                ListenAddr::parse(a).map_err(|e| ConfigError(format!("--address {e}")))?
            }
            (None, Some((a, name))) => {
                ListenAddr::parse(&a).map_err(|e| ConfigError(format!("{name}: {e}")))?
            }
            (None, None) => ListenAddr {
                host: None,
                port: DEFAULT_PORT,
            },
        };
        if let Some(c) = args
            .console_address
            .clone()
            .or_else(|| env.get(&cli::CONSOLE_ADDRESS).map(|(v, _)| v))
        {
            warnings.push(format!(
                "console address {c} ignored: Tessera has no web console"
            ));
        }

        let endpoints: Vec<String> = if args.endpoints.is_empty() {
            match env.get(&cli::VOLUMES) {
                Some((v, _)) => v.split_whitespace().map(str::to_owned).collect(),
                None => Vec::new(),
            }
        } else {
            args.endpoints.clone()
        };
        if endpoints.is_empty() {
            return err(
                "no drives given: pass directories (tessera server /mnt/disk{1...4}) or set \
                 TESSERA_VOLUMES",
            );
        }

        let set_drive_count = match env.get(&cli::ERASURE_SET_DRIVE_COUNT) {
            None => None,
            Some((v, name)) => match v.trim().parse::<usize>() {
                Ok(0) => None,
                Ok(n) => Some(n),
                Err(_) => return err(format!("{name}='{v}' is not a number")),
            },
        };
        let standard = storage_class(env, &cli::STORAGE_CLASS_STANDARD)?;
        let rrs = storage_class(env, &cli::STORAGE_CLASS_RRS)?;
        let drives = drives(
            &endpoints,
            listen.port,
            cwd,
            set_drive_count,
            standard,
            rrs,
            local,
        )?;

        let credentials = credentials(env, &mut warnings)?;

        let (certs_dir, certs_dir_explicit) = match (&args.certs_dir, env.get(&cli::CERTS_DIR)) {
            (Some(d), _) => (Some(cwd.join(d)), true),
            (None, Some((d, _))) => (Some(cwd.join(d)), true),
            (None, None) => match env.raw("HOME") {
                Some(home) => {
                    let tessera = Path::new(home).join(".tessera/certs");
                    let minio = Path::new(home).join(".minio/certs");
                    if !tessera.exists() && minio.join("public.crt").exists() {
                        warnings.push(format!(
                            "using MinIO's certificates directory {}",
                            minio.display()
                        ));
                        (Some(minio), false)
                    } else {
                        (Some(tessera), false)
                    }
                }
                None => (None, false),
            },
        };

        let prometheus_public = match env.get(&cli::PROMETHEUS_AUTH_TYPE) {
            None => false,
            Some((v, name)) => match v.trim().to_ascii_lowercase().as_str() {
                "public" => true,
                "jwt" => false,
                _ => return err(format!("{name}='{v}': expected jwt or public")),
            },
        };

        let kms = credentials::kms(env)?;
        let on_off_or = |var: &cli::EnvVar, default: bool| -> Result<bool, ConfigError> {
            match env.get(var) {
                None => Ok(default),
                Some((v, name)) => match v.trim().to_ascii_lowercase().as_str() {
                    "on" | "true" | "1" | "yes" => Ok(true),
                    "off" | "false" | "0" | "no" | "" => Ok(false),
                    _ => Err(ConfigError(format!("{name}='{v}': expected on or off"))),
                },
            }
        };
        let on_off = |var: &cli::EnvVar| on_off_or(var, false);
        let auto_encryption = on_off(&cli::KMS_AUTO_ENCRYPTION)?;
        if auto_encryption && kms.is_none() {
            return err(
                "TESSERA_KMS_AUTO_ENCRYPTION is on, but no KMS key is configured (TESSERA_KMS_SECRET_KEY)",
            );
        }
        let insecure_sse_c = on_off(&cli::INSECURE_SSE_C)?;
        let sigv2 = on_off_or(&cli::API_SIGV2, true)?;
        let sts_min_duration_secs =
            duration_var(env, &cli::TEST_STS_MIN_DURATION, Duration::from_secs(900))?.as_secs();
        if sts_min_duration_secs == 0 {
            return err("TESSERA_TEST_STS_MIN_DURATION must be at least 1s");
        }
        if sts_min_duration_secs < 900 {
            tracing::warn!(
                secs = sts_min_duration_secs,
                "TESSERA_TEST_STS_MIN_DURATION shortens STS sessions below MinIO's 15 minutes: for tests only"
            );
        }
        let openid = match env.get(&cli::OPENID_CONFIG_URL) {
            None => None,
            Some((url, _)) => {
                let client_id = env
                    .get(&cli::OPENID_CLIENT_ID)
                    .map(|(v, _)| v.trim().to_owned())
                    .unwrap_or_default();
                let claim_name = env
                    .get(&cli::OPENID_CLAIM_NAME)
                    .map(|(v, _)| v.trim().to_owned())
                    .unwrap_or_default();
                // The system's authorities, and those of the certificates
                // directory's CAs/ (as for the cluster's peers).
                let mut ca_files: Vec<PathBuf> = std::env::var_os("SSL_CERT_FILE")
                    .map(PathBuf::from)
                    .into_iter()
                    .chain(
                        [
                            "/etc/ssl/certs/ca-certificates.crt",
                            "/etc/pki/tls/certs/ca-bundle.crt",
                            "/etc/ssl/cert.pem",
                        ]
                        .map(PathBuf::from),
                    )
                    .collect();
                if let Some(dir) = &certs_dir
                    && let Ok(entries) = std::fs::read_dir(dir.join("CAs"))
                {
                    ca_files.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
                }
                let cfg = s3_gateway::oidc::OpenIdConfig {
                    config_url: url.trim().to_owned(),
                    client_id,
                    claim_name,
                    ca_files,
                };
                s3_gateway::oidc::Provider::new(cfg.clone())
                    .map_err(|e| ConfigError(format!("TESSERA_IDENTITY_OPENID_*: {e}")))?;
                Some(cfg)
            }
        };
        let splice_get = on_off(&cli::SPLICE_GET)?;
        let huge_fill = match env.get(&cli::HUGE_FILL) {
            Some((v, _)) if v.trim().eq_ignore_ascii_case("auto") => None,
            Some(_) => Some(on_off(&cli::HUGE_FILL)?),
            None => None,
        };
        let read_cache = match env.get(&cli::READ_CACHE) {
            None => None,
            Some((v, name)) => {
                let v = v.trim();
                if v.eq_ignore_ascii_case("auto") {
                    None
                } else if v.eq_ignore_ascii_case("off") {
                    Some(0)
                } else {
                    Some(parse_size(v).map_err(|e| ConfigError(format!("{name}='{v}': {e}")))?)
                }
            }
        };
        let group_commit = on_off_or(&cli::GROUP_COMMIT, true)?;
        let huge_pages = on_off_or(&cli::HUGE_PAGES, true)?;

        let rate = match env.get(&cli::SCANNER_RATE) {
            None => Some(100),
            Some((v, name)) => match v.trim().parse::<u32>() {
                Ok(0) => None,
                Ok(n) => Some(n),
                Err(_) => {
                    return err(format!(
                        "{name}='{v}': expected versions per second (0: unlimited)"
                    ));
                }
            },
        };
        let interval = duration_var(env, &cli::SCANNER_INTERVAL, Duration::from_secs(3600))?;
        let lifecycle = s3_gateway::lifecycle::LifecycleOptions {
            interval: duration_var(env, &cli::LIFECYCLE_INTERVAL, Duration::from_secs(3600))?,
            actions_per_sec: match env.get(&cli::LIFECYCLE_RATE) {
                None => 100,
                Some((v, name)) => v.trim().parse::<u32>().map_err(|_| {
                    ConfigError(format!("{name}='{v}': expected actions per second (0: unlimited)"))
                })?,
            },
            clock: s3_gateway::lifecycle::Clock {
                offset_file: env.get(&cli::TEST_LIFECYCLE_CLOCK_FILE).map(|(v, _)| {
                    tracing::warn!(
                        "TESSERA_TEST_LIFECYCLE_CLOCK_FILE moves the lifecycle's clock: for tests only"
                    );
                    PathBuf::from(v)
                }),
            },
        };
        let shutdown_timeout = duration_var(env, &cli::SHUTDOWN_TIMEOUT, Duration::from_secs(30))?;
        let drive_timeout = duration_var(env, &cli::DRIVE_TIMEOUT, Duration::from_secs(30))?;
        if drive_timeout.is_zero() {
            return err("the drive timeout must be positive");
        }
        let drive_probe = duration_var(env, &cli::DRIVE_PROBE_INTERVAL, Duration::from_secs(5))?;
        let drive_deadline = drive::DeadlineConfig::new(
            drive_timeout,
            drive::DeadlineConfig::default().max_consecutive_failures,
            drive_probe,
        );
        let read_header_timeout =
            duration_var(env, &cli::READ_HEADER_TIMEOUT, Duration::from_secs(30))?;
        if read_header_timeout.is_zero() {
            return err("the read header timeout must be positive");
        }
        let requests_max = match env.get(&cli::API_REQUESTS_MAX) {
            None => None,
            Some((v, name)) => match v.trim().parse::<usize>() {
                Ok(0) => None,
                Ok(n) if n <= MAX_REQUESTS_CAP => Some(n),
                _ => {
                    return err(format!(
                        "{name}='{v}': expected a number of requests from 1 to {MAX_REQUESTS_CAP} \
                         (0: from the available memory)"
                    ));
                }
            },
        };
        let post_forms_max = match env.get(&cli::API_POST_FORMS_MAX) {
            None => 0,
            Some((v, name)) => match v.trim().parse::<usize>() {
                Ok(n) if n <= MAX_REQUESTS_CAP => n,
                _ => {
                    return err(format!(
                        "{name}='{v}': expected a number of forms from 1 to {MAX_REQUESTS_CAP} \
                         (0: a quarter of the request bound)"
                    ));
                }
            },
        };
        let post_form_timeout =
            duration_var(env, &cli::API_POST_FORM_TIMEOUT, Duration::from_secs(30))?;
        if post_form_timeout.is_zero() {
            return err("the POST form timeout must be positive");
        }
        let post_form_idle = duration_var(
            env,
            &cli::API_POST_FORM_IDLE,
            post_form_timeout.min(Duration::from_secs(10)),
        )?;
        if post_form_idle.is_zero() {
            return err("the POST form idle timeout must be positive");
        }
        let body_min_rate = match env.get(&cli::API_BODY_MIN_RATE) {
            None => 4 * 1024,
            Some((v, name)) => {
                parse_size(&v).map_err(|e| ConfigError(format!("{name}='{v}': {e}")))?
            }
        };
        let body_grace = duration_var(env, &cli::API_BODY_GRACE, Duration::from_secs(30))?;
        let send_timeout = duration_var(env, &cli::API_SEND_TIMEOUT, Duration::from_secs(60))?;
        if send_timeout.is_zero() {
            return err("the send timeout must be positive");
        }
        let cluster_max_skew =
            duration_var(env, &cli::CLUSTER_MAX_CLOCK_SKEW, Duration::from_secs(30))?;
        if cluster_max_skew.is_zero() {
            return err("the cluster's clock skew bound must be positive");
        }
        // Zero is the default, as MinIO reads it; a short wait such as 1ms
        // refuses at once.
        let requests_deadline =
            match duration_var(env, &cli::API_REQUESTS_DEADLINE, REQUESTS_DEADLINE)? {
                d if d.is_zero() => REQUESTS_DEADLINE,
                d => d,
            };

        Ok(ServerConfig {
            listen,
            drives,
            credentials,
            region: region(env)?,
            domains: domains(env)?,
            standard_parity: standard.map(|s| s.parity()),
            rrs_parity: rrs.map(|s| s.parity()),
            certs_dir,
            certs_dir_explicit,
            log,
            prometheus_public,
            kms,
            auto_encryption,
            insecure_sse_c,
            sigv2,
            sts_min_duration_secs,
            openid,
            scanner: ScanOptions {
                versions_per_sec: rate,
                interval,
            },
            lifecycle,
            shutdown_timeout,
            drive_deadline,
            read_header_timeout,
            requests_max,
            post_forms_max,
            post_form_timeout,
            post_form_idle,
            body_min_rate,
            body_grace,
            send_timeout,
            cluster_max_skew,
            requests_deadline,
            splice_get,
            huge_fill,
            read_cache,
            group_commit,
            huge_pages,
            quiet: args.quiet,
            anonymous: args.anonymous,
            warnings,
        })
    }
}

//! The server configuration, resolved from the command line and the
//! environment (Tessera's names first, then MinIO's), and validated before
//! anything is opened.

use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::Duration;

use object::layer::ScanOptions;
use placement::{DeploymentStyle, Endpoint, ParseOptions, StorageClass};

use crate::cli::{self, EnvVar, ServerArgs};

/// The first-try credentials, as MinIO's.
pub const DEFAULT_USER: &str = "minioadmin";
pub const DEFAULT_PASSWORD: &str = "minioadmin";
const DEFAULT_PORT: u16 = 9000;

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

/// The process environment (or a test's), read once.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: HashMap<String, String>,
}

impl Env {
    /// The process environment; variables that are not UTF-8 are kept out
    /// (and refused if they are ones Tessera reads).
    pub fn from_process() -> Result<Env, ConfigError> {
        let mut vars = HashMap::new();
        for (k, v) in std::env::vars_os() {
            let Some(k) = k.to_str() else { continue };
            match v.into_string() {
                Ok(v) => {
                    vars.insert(k.to_owned(), v);
                }
                Err(_) if is_known(k) => return err(format!("{k} is not valid UTF-8")),
                Err(_) => {}
            }
        }
        Ok(Env { vars })
    }

    /// An environment of the given pairs.
    #[cfg(test)]
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Env {
        Env {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }

    /// The value of `var` (Tessera's name first, then the aliases in
    /// order), with the name it came from; empty values count as unset.
    pub fn get(&self, var: &EnvVar) -> Option<(String, &'static str)> {
        std::iter::once(&var.name)
            .chain(var.aliases.iter())
            .find_map(|n| {
                self.vars
                    .get(*n)
                    .filter(|v| !v.is_empty())
                    .map(|v| (v.clone(), *n))
            })
    }

    /// A raw variable (`HOME`, ...).
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

fn is_known(name: &str) -> bool {
    cli::ENV_VARS
        .iter()
        .any(|v| v.name == name || v.aliases.contains(&name))
}

/// Where the server listens: `host` `None` means every interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenAddr {
    pub host: Option<String>,
    pub port: u16,
}

impl ListenAddr {
    /// Parses `HOST:PORT`, `:PORT`, `[V6]:PORT`.
    pub fn parse(s: &str) -> Result<ListenAddr, String> {
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (h, p) = rest
                .split_once("]:")
                .ok_or_else(|| format!("'{s}' is not HOST:PORT"))?;
            (h, p)
        } else {
            s.rsplit_once(':')
                .ok_or_else(|| format!("'{s}' is not HOST:PORT (the port is missing)"))?
        };
        if host.contains(':') && !s.starts_with('[') {
            return Err(format!(
                "'{s}': write IPv6 addresses in brackets, [::1]:9000"
            ));
        }
        let port: u16 = port
            .parse()
            .map_err(|_| format!("'{s}': port '{port}' is not a number in 0..65535"))?;
        if host
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '/')
        {
            return Err(format!("'{s}': invalid host"));
        }
        Ok(ListenAddr {
            host: (!host.is_empty()).then(|| host.to_owned()),
            port,
        })
    }
}

impl std::fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            Some(h) if h.contains(':') => write!(f, "[{h}]:{}", self.port),
            Some(h) => write!(f, "{h}:{}", self.port),
            None => write!(f, ":{}", self.port),
        }
    }
}

/// Where the root credentials came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// Nothing configured: minioadmin:minioadmin.
    Default,
    /// The variables they were read from.
    Env {
        user: &'static str,
        password: &'static str,
        /// The file the password was read from (`*_FILE` variables).
        password_file: Option<PathBuf>,
    },
}

/// The root credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
    pub source: CredentialSource,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Whether these are the well-known first-try credentials.
    pub fn is_default(&self) -> bool {
        self.user == DEFAULT_USER && self.password == DEFAULT_PASSWORD
    }
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

/// The pools of drives to open.
#[derive(Debug, Clone)]
pub struct Drives {
    /// One list of directories per pool, in endpoint order.
    pub pools: Vec<Vec<PathBuf>>,
    /// The argument(s) of each pool, as written.
    pub pool_args: Vec<String>,
    /// Drives per erasure set to ask the object layer for (`None`: its own
    /// choice, which equals MinIO's for these pools).
    pub set_drive_count: Option<usize>,
    /// Drives per set of each pool (for the banner).
    pub set_sizes: Vec<usize>,
    /// Whether the endpoints were written as https URLs.
    pub https_urls: bool,
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
    pub scanner: ScanOptions,
    pub shutdown_timeout: Duration,
    pub read_header_timeout: Duration,
    /// S3 requests served at once (`None`: from the memory available at
    /// start, [`requests_max_for`]).
    pub requests_max: Option<usize>,
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
    /// cache); `None`: [`read_cache_for`] the memory available at start.
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

/// The root credentials from the environment (MinIO's rules: both or
/// neither, user at least 3 characters without `=` or `,`, password at
/// least 8).
pub fn credentials(env: &Env, warnings: &mut Vec<String>) -> Result<Credentials, ConfigError> {
    let user = secret(env, &cli::ROOT_USER, &cli::ROOT_USER_FILE)?;
    let password = secret(env, &cli::ROOT_PASSWORD, &cli::ROOT_PASSWORD_FILE)?;
    let password_file = password.as_ref().and_then(|p| p.2.clone());
    let user = user.map(|(v, n, _)| (v, n));
    let password = password.map(|(v, n, _)| (v, n));
    let (user, password) = match (user, password) {
        (None, None) => {
            return Ok(Credentials {
                user: DEFAULT_USER.to_owned(),
                password: DEFAULT_PASSWORD.to_owned(),
                source: CredentialSource::Default,
            });
        }
        (Some((_, n)), None) => {
            return err(format!(
                "{n} is set but the root password is not: set TESSERA_ROOT_PASSWORD (or \
                 MINIO_ROOT_PASSWORD) too"
            ));
        }
        (None, Some((_, n))) => {
            return err(format!(
                "{n} is set but the root user is not: set TESSERA_ROOT_USER (or \
                 MINIO_ROOT_USER) too"
            ));
        }
        (Some(u), Some(p)) => (u, p),
    };
    for (name, deprecated) in [
        (user.1, "MINIO_ACCESS_KEY"),
        (password.1, "MINIO_SECRET_KEY"),
    ] {
        if name == deprecated {
            warnings.push(format!(
                "{deprecated} is deprecated; use TESSERA_ROOT_USER and TESSERA_ROOT_PASSWORD"
            ));
        }
    }
    if user.0.chars().count() < 3 {
        return err(format!(
            "{}: the root user must be at least 3 characters long",
            user.1
        ));
    }
    if user.0.contains(['=', ',']) {
        return err(format!(
            "{}: the root user must not contain '=' or ','",
            user.1
        ));
    }
    if user
        .0
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '/')
    {
        return err(format!(
            "{}: the root user must not contain spaces, '/' or control characters",
            user.1
        ));
    }
    if password.0.chars().count() < 8 {
        return err(format!(
            "{}: the root password must be at least 8 characters long",
            password.1
        ));
    }
    if password.0.chars().any(char::is_control) {
        return err(format!(
            "{}: the root password must not contain control characters",
            password.1
        ));
    }
    Ok(Credentials {
        user: user.0,
        password: password.0,
        source: CredentialSource::Env {
            user: user.1,
            password: password.1,
            password_file,
        },
    })
}

/// A secret's value, the variable it came from, and the file it was read
/// from (for `*_FILE` variables).
type Secret = (String, &'static str, Option<PathBuf>);

/// A secret from `var` or from the file named by `file_var`, in the order
/// Tessera's name, its file, then each MinIO name and its file. A relative
/// file name is looked up in `/run/secrets` (Docker and Kubernetes secrets)
/// first. Surrounding white space of the file is dropped.
fn secret(env: &Env, var: &EnvVar, file_var: &EnvVar) -> Result<Option<Secret>, ConfigError> {
    let names = std::iter::once(var.name).chain(var.aliases.iter().copied());
    let files = std::iter::once(file_var.name).chain(file_var.aliases.iter().copied());
    for (name, file_name) in names.zip(files) {
        if let Some(v) = env.vars.get(name).filter(|v| !v.is_empty()) {
            return Ok(Some((v.clone(), name, None)));
        }
        let Some(path) = env.vars.get(file_name).filter(|v| !v.is_empty()) else {
            continue;
        };
        let mut p = PathBuf::from(path);
        if p.is_relative() {
            let in_secrets = Path::new("/run/secrets").join(&p);
            if in_secrets.is_file() {
                p = in_secrets;
            }
        }
        let bytes = std::fs::read(&p)
            .map_err(|e| ConfigError(format!("{file_name}={path}: cannot read: {e}")))?;
        if bytes.len() > 4096 {
            return err(format!("{file_name}={path}: more than 4 KiB"));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| ConfigError(format!("{file_name}={path}: not UTF-8 text")))?;
        return Ok(Some((text.trim().to_owned(), file_name, Some(p))));
    }
    Ok(None)
}

/// Parses a Go-style duration: `30s`, `1m30s`, `500ms`, `1h`, or a bare
/// number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("'{s}': missing unit (ms, s, m, h)"))?;
        if num_len == 0 {
            return Err(format!("'{s}' is not a duration (30s, 5m, 1h30m)"));
        }
        let n: f64 = rest[..num_len]
            .parse()
            .map_err(|_| format!("'{s}' is not a duration"))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            u => return Err(format!("'{s}': unknown unit '{u}' (ms, s, m, h)")),
        };
        rest = &rest[unit_len..];
        let secs = n * unit;
        if !secs.is_finite() || secs > 1e12 {
            return Err(format!("'{s}' is too long"));
        }
        total += Duration::from_secs_f64(secs);
    }
    Ok(total)
}

/// Memory one S3 request may hold, for the default bound on concurrent
/// requests: the erasure block a streamed upload reads into (about 1 MiB
/// for any set), or a GET's read-ahead of three blocks, its 512 KiB of
/// queued response frames and up to 2 MiB in hyper's write buffer (a
/// plain-TCP HTTP/1.1 connection's). A GET served from the read cache
/// holds up to 6 MiB of cached blocks queued (4 MiB, and hyper's 2):
/// memory the cache counts, unless it drops those blocks meanwhile.
pub const MEMORY_PER_REQUEST: u64 = 6 << 20;
/// The most requests the bound allows, however much memory there is.
pub const MAX_REQUESTS_CAP: usize = 1 << 16;
/// Longest wait for a request slot by default (MinIO's).
const REQUESTS_DEADLINE: Duration = Duration::from_secs(10);

/// The default bound on concurrent S3 requests for `available` bytes of
/// memory: three quarters of it at [`MEMORY_PER_REQUEST`] each, at least
/// 32 and at most [`MAX_REQUESTS_CAP`].
pub fn requests_max_for(available: u64) -> usize {
    let n = available / 4 * 3 / MEMORY_PER_REQUEST;
    usize::try_from(n)
        .unwrap_or(MAX_REQUESTS_CAP)
        .clamp(32, MAX_REQUESTS_CAP)
}

/// The default read cache for `available` bytes of memory: a sixteenth of
/// it, at most [`READ_CACHE_CAP`].
pub fn read_cache_for(available: u64) -> u64 {
    (available / 16).min(READ_CACHE_CAP)
}

/// The largest default read cache.
pub const READ_CACHE_CAP: u64 = 1 << 30;

/// A size in bytes: a whole number, optionally followed by `B`, `KiB`,
/// `MiB`, `GiB` or `TiB` (any case, spaces allowed between), at most 1 PiB.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "kib" => 10,
        "mib" => 20,
        "gib" => 30,
        "tib" => 40,
        _ => return Err(format!("expected a size such as 512MiB or 2GiB, not '{t}'")),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|&n| n <= 1 << 50)
        .ok_or_else(|| format!("expected a size such as 512MiB or 2GiB (at most 1PiB), not '{t}'"))
}

fn duration_var(env: &Env, var: &EnvVar, default: Duration) -> Result<Duration, ConfigError> {
    match env.get(var) {
        None => Ok(default),
        Some((v, name)) => parse_duration(&v).map_err(|e| ConfigError(format!("{name}: {e}"))),
    }
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

/// This machine, for deciding which endpoints are local.
pub struct LocalHost {
    hostname: Option<String>,
}

impl LocalHost {
    pub fn detect() -> LocalHost {
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty());
        LocalHost { hostname }
    }

    /// The host name, if known.
    pub fn hostname(&self) -> Option<&str> {
        self.hostname.as_deref()
    }

    /// Whether `host` names this machine: `localhost`, this host name, a
    /// loopback address, or an address (or name resolving to one) that a
    /// socket can be bound to here.
    pub fn is_local(&self, host: &str) -> bool {
        let h = host.trim_end_matches('.').to_ascii_lowercase();
        if h == "localhost" || h.ends_with(".localhost") || Some(h.as_str()) == self.hostname() {
            return true;
        }
        let h = h.split('%').next().unwrap_or(&h).to_owned();
        let ips: Vec<IpAddr> = match h.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => match (h.as_str(), 0u16).to_socket_addrs() {
                Ok(a) => a.map(|a| a.ip()).collect(),
                Err(_) => return false,
            },
        };
        ips.iter()
            .any(|ip| ip.is_loopback() || UdpSocket::bind((*ip, 0)).is_ok())
    }
}

/// Parses, checks and lays out the endpoints: only drives of this machine.
pub fn drives(
    args: &[String],
    listen_port: u16,
    cwd: &Path,
    set_drive_count: Option<usize>,
    standard: Option<StorageClass>,
    rrs: Option<StorageClass>,
    local: &LocalHost,
) -> Result<Drives, ConfigError> {
    let options = ParseOptions {
        working_dir: cwd.to_str().map(str::to_owned),
        default_port: Some(listen_port),
        orchestrated: false,
    };
    if options.working_dir.is_none() {
        return err(format!(
            "the working directory {} is not valid UTF-8",
            cwd.display()
        ));
    }
    let topology = placement::parse_endpoints_with(args, &options)
        .map_err(|e| ConfigError(format!("invalid endpoints: {e}")))?;
    let all: Vec<&Endpoint> = topology
        .pools()
        .iter()
        .flat_map(|p| p.drives().iter())
        .collect();
    let is_local = |e: &Endpoint| {
        e.host().is_some_and(|h| local.is_local(h))
            && e.port().or(Some(DEFAULT_PORT)) == Some(listen_port)
    };
    if let Some(remote) = all.iter().find(|e| e.is_url() && !is_local(e)) {
        let which = if remote.host().is_some_and(|h| local.is_local(h)) {
            format!(
                "its port {} is not this server's port {listen_port}",
                remote.port().unwrap_or(DEFAULT_PORT)
            )
        } else {
            format!("{} is not this machine", remote.host().unwrap_or(""))
        };
        return err(format!(
            "endpoint {remote}: {which}. Multi-node deployments are not supported yet: \
             give this node's drives only (local paths, or URLs naming this host and port)"
        ));
    }
    topology
        .check_local(is_local)
        .map_err(|e| ConfigError(format!("invalid endpoints: {e}")))?;
    let layout = topology
        .layout(set_drive_count)
        .map_err(|e| ConfigError(format!("invalid endpoints: {e}")))?;
    layout
        .storage_class_config(standard, rrs)
        .map_err(|e| ConfigError(format!("storage class: {e}")))?;

    let set_sizes: Vec<usize> = layout.pools().iter().map(|p| p.set_drive_count()).collect();
    let pools: Vec<Vec<PathBuf>> = topology
        .pools()
        .iter()
        .map(|p| p.drives().iter().map(|d| PathBuf::from(d.path())).collect())
        .collect();
    // The object layer takes one set size for every fresh pool; without
    // one it picks MinIO's choice for a pool written without ellipses.
    let layer_choice = |n: usize| {
        if n == 1 {
            Some(1)
        } else {
            placement::choose_set_drive_count(n, None, None).ok()
        }
    };
    let set_drive_count = if set_sizes.windows(2).all(|w| w[0] == w[1]) {
        set_sizes.first().copied()
    } else if pools
        .iter()
        .zip(&set_sizes)
        .all(|(p, &s)| layer_choice(p.len()) == Some(s))
    {
        None
    } else {
        return err(format!(
            "the pools need different erasure set sizes ({set_sizes:?}) that the object layer \
             cannot yet be given; set TESSERA_ERASURE_SET_DRIVE_COUNT to a size that divides \
             every pool"
        ));
    };
    if topology.style() == DeploymentStyle::SingleDrive && pools[0].len() != 1 {
        return err("a single-drive deployment has exactly one drive");
    }
    Ok(Drives {
        pools,
        pool_args: topology
            .pools()
            .iter()
            .map(|p| p.cmdline().to_owned())
            .collect(),
        set_drive_count,
        set_sizes,
        https_urls: all
            .iter()
            .any(|e| e.scheme() == Some(placement::Scheme::Https)),
    })
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

        let kms_text = match env.get(&cli::KMS_SECRET_KEY) {
            Some((v, name)) => Some((v, name)),
            None => match env.get(&cli::KMS_SECRET_KEY_FILE) {
                Some((path, name)) => Some((
                    std::fs::read_to_string(path.trim())
                        .map_err(|e| ConfigError(format!("{name}='{path}': {e}")))?
                        .trim()
                        .to_owned(),
                    name,
                )),
                None => None,
            },
        };
        let kms = match kms_text {
            None => None,
            Some((v, name)) => Some(std::sync::Arc::new(
                sse::kms::StaticKms::parse(v.trim()).map_err(|e| {
                    ConfigError(format!("{name}: {e} (expected NAME:BASE64-OF-32-BYTES)"))
                })?,
            ) as std::sync::Arc<dyn sse::kms::Kms>),
        };
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
        let shutdown_timeout = duration_var(env, &cli::SHUTDOWN_TIMEOUT, Duration::from_secs(30))?;
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
            scanner: ScanOptions {
                versions_per_sec: rate,
                interval,
            },
            shutdown_timeout,
            read_header_timeout,
            requests_max,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(endpoints: &[&str]) -> ServerArgs {
        ServerArgs {
            address: None,
            console_address: None,
            certs_dir: None,
            quiet: false,
            anonymous: false,
            json: false,
            endpoints: endpoints.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn resolve(endpoints: &[&str], env: &[(&str, &str)]) -> Result<ServerConfig, ConfigError> {
        ServerConfig::resolve(
            &args(endpoints),
            &Env::from_pairs(env.iter().copied()),
            Path::new("/srv"),
            &LocalHost {
                hostname: Some("node1".into()),
            },
        )
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(
            ListenAddr::parse(":9000").unwrap(),
            ListenAddr {
                host: None,
                port: 9000
            }
        );
        assert_eq!(
            ListenAddr::parse("[::1]:0").unwrap().host.as_deref(),
            Some("::1")
        );
        assert_eq!(ListenAddr::parse("[::1]:0").unwrap().to_string(), "[::1]:0");
        assert!(ListenAddr::parse("9000").is_err());
        assert!(ListenAddr::parse("::1:9000").is_err());
        assert!(ListenAddr::parse("host:99999").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("45").unwrap(), Duration::from_secs(45));
        for bad in ["", "s", "10x", "1.2.3s", "5 m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn credentials_and_aliases() {
        let c = resolve(&["/d"], &[]).unwrap().credentials;
        assert!(c.is_default());
        assert_eq!(c.source, CredentialSource::Default);
        let c = resolve(
            &["/d"],
            &[
                ("MINIO_ROOT_USER", "minio-user"),
                ("MINIO_ROOT_PASSWORD", "minio-secret"),
                ("TESSERA_ROOT_USER", "tessera-user"),
            ],
        )
        .unwrap()
        .credentials;
        assert_eq!(c.user, "tessera-user");
        assert_eq!(c.password, "minio-secret");
        let short = resolve(
            &["/d"],
            &[("MINIO_ROOT_USER", "abc"), ("MINIO_ROOT_PASSWORD", "short")],
        )
        .unwrap_err();
        assert!(short.0.contains("at least 8"), "{short}");
        assert!(resolve(&["/d"], &[("TESSERA_ROOT_USER", "abcd")]).is_err());
        assert!(
            resolve(
                &["/d"],
                &[
                    ("TESSERA_ROOT_USER", "ab"),
                    ("TESSERA_ROOT_PASSWORD", "12345678")
                ]
            )
            .is_err()
        );
        assert!(
            resolve(
                &["/d"],
                &[
                    ("TESSERA_ROOT_USER", "a=b"),
                    ("TESSERA_ROOT_PASSWORD", "12345678")
                ]
            )
            .is_err()
        );
    }

    #[test]
    fn endpoints_and_layout() {
        let c = resolve(&["./data"], &[]).unwrap();
        assert_eq!(c.drives.pools, vec![vec![PathBuf::from("/srv/data")]]);
        assert_eq!(c.drives.set_drive_count, Some(1));

        let c = resolve(&[], &[("MINIO_VOLUMES", "/mnt/d{1...8}")]).unwrap();
        assert_eq!(c.drives.pools[0].len(), 8);
        assert_eq!(c.drives.set_sizes, vec![8]);

        let c = resolve(&["http://localhost:9000/mnt/d{1...4}"], &[]).unwrap();
        assert_eq!(c.drives.pools[0][3], PathBuf::from("/mnt/d4"));
        let c = resolve(&["http://node1/mnt/d{1...4}"], &[]).unwrap();
        assert_eq!(c.drives.pools[0].len(), 4);

        let e = resolve(&["http://node{1...4}:9000/mnt/d{1...4}"], &[]).unwrap_err();
        assert!(e.0.contains("Multi-node"), "{e}");
        let e = resolve(&["http://127.0.0.1:9001/mnt/d{1...4}"], &[]).unwrap_err();
        assert!(e.0.contains("port"), "{e}");

        let e = resolve(&["/a{1...4}"], &[("MINIO_STORAGE_CLASS_STANDARD", "EC:3")]).unwrap_err();
        assert!(e.0.contains("storage class"), "{e}");
        let c = resolve(&["/a{1...4}"], &[("MINIO_STORAGE_CLASS_STANDARD", "EC:1")]).unwrap();
        assert_eq!(c.standard_parity, Some(1));
        assert!(resolve(&["/a{1...4}"], &[("TESSERA_STORAGE_CLASS_RRS", "EC")]).is_err());
        assert!(resolve(&[], &[]).is_err());
    }

    #[test]
    fn other_settings() {
        let c = resolve(
            &["/d"],
            &[
                ("MINIO_DOMAIN", "S3.Example.com, s3.example.org."),
                ("MINIO_REGION", "eu-west-1"),
                ("MINIO_SITE_REGION", "eu-central-1"),
                ("MINIO_PROMETHEUS_AUTH_TYPE", "public"),
                ("TESSERA_ADDRESS", "127.0.0.1:9100"),
                ("MINIO_ADDRESS", ":1"),
                ("TESSERA_SCANNER_RATE", "0"),
            ],
        )
        .unwrap();
        assert_eq!(c.domains, ["s3.example.com", "s3.example.org"]);
        assert_eq!(c.region, "eu-central-1");
        assert!(c.prometheus_public);
        assert_eq!(c.listen.port, 9100);
        assert_eq!(c.scanner.versions_per_sec, None);
        assert!(resolve(&["/d"], &[("TESSERA_DOMAIN", "bad_domain")]).is_err());
        assert!(resolve(&["/d"], &[("TESSERA_LOG_FORMAT", "xml")]).is_err());
        assert!(resolve(&["/d"], &[("TESSERA_SHUTDOWN_TIMEOUT", "soon")]).is_err());
        assert!(resolve(&["/d"], &[("TESSERA_PROMETHEUS_AUTH_TYPE", "none")]).is_err());
    }

    #[test]
    fn request_bound_settings() {
        let c = resolve(&["/d"], &[]).unwrap();
        assert_eq!(c.requests_max, None);
        assert_eq!(c.requests_deadline, Duration::from_secs(10));
        let c = resolve(
            &["/d"],
            &[
                ("MINIO_API_REQUESTS_MAX", "1600"),
                ("MINIO_API_REQUESTS_DEADLINE", "2m"),
            ],
        )
        .unwrap();
        assert_eq!(c.requests_max, Some(1600));
        assert_eq!(c.requests_deadline, Duration::from_secs(120));
        let c = resolve(
            &["/d"],
            &[
                ("TESSERA_API_REQUESTS_MAX", "0"),
                ("MINIO_API_REQUESTS_MAX", "5"),
                ("TESSERA_API_REQUESTS_DEADLINE", "0"),
            ],
        )
        .unwrap();
        assert_eq!(
            c.requests_max, None,
            "the Tessera name wins, 0 is automatic"
        );
        assert_eq!(
            c.requests_deadline,
            Duration::from_secs(10),
            "0 is the default"
        );
        for bad in ["-1", "many", "70000"] {
            assert!(
                resolve(&["/d"], &[("TESSERA_API_REQUESTS_MAX", bad)]).is_err(),
                "{bad}"
            );
        }
        assert!(resolve(&["/d"], &[("TESSERA_API_REQUESTS_DEADLINE", "soon")]).is_err());
    }

    #[test]
    fn huge_pages_are_on_unless_turned_off() {
        assert!(resolve(&["/d"], &[]).unwrap().huge_pages);
        assert!(
            !resolve(&["/d"], &[("TESSERA_HUGE_PAGES", "off")])
                .unwrap()
                .huge_pages
        );
        assert!(resolve(&["/d"], &[("TESSERA_HUGE_PAGES", "sometimes")]).is_err());
    }

    #[test]
    fn group_commit_is_on_unless_turned_off() {
        assert!(resolve(&["/d"], &[]).unwrap().group_commit);
        for off in ["off", "OFF", "false", "0"] {
            assert!(
                !resolve(&["/d"], &[("TESSERA_GROUP_COMMIT", off)])
                    .unwrap()
                    .group_commit,
                "{off}"
            );
        }
        assert!(
            resolve(&["/d"], &[("TESSERA_GROUP_COMMIT", "on")])
                .unwrap()
                .group_commit
        );
        assert!(resolve(&["/d"], &[("TESSERA_GROUP_COMMIT", "later")]).is_err());
    }

    #[test]
    fn read_cache_sizes() {
        assert_eq!(resolve(&["/d"], &[]).unwrap().read_cache, None);
        for (v, want) in [
            ("auto", None),
            ("AUTO", None),
            // An empty value is no value: the default.
            ("", None),
            ("off", Some(0)),
            ("0", Some(0)),
            ("4096", Some(4096)),
            ("512MiB", Some(512 << 20)),
            ("2 gib", Some(2 << 30)),
            ("1TiB", Some(1 << 40)),
            ("7B", Some(7)),
        ] {
            assert_eq!(
                resolve(&["/d"], &[("TESSERA_READ_CACHE", v)])
                    .unwrap()
                    .read_cache,
                want,
                "{v}"
            );
        }
        for bad in [
            "lots",
            "1.5GiB",
            "-1",
            "10MB",
            "2048TiB",
            "99999999999999999999",
        ] {
            let e = resolve(&["/d"], &[("TESSERA_READ_CACHE", bad)]).unwrap_err();
            assert!(e.0.contains("TESSERA_READ_CACHE"), "{bad}: {}", e.0);
        }
        assert_eq!(read_cache_for(24 << 30), READ_CACHE_CAP);
        assert_eq!(read_cache_for(2 << 30), 128 << 20);
        assert_eq!(read_cache_for(0), 0);
    }

    #[test]
    fn huge_fill_is_decided_at_start_unless_set() {
        assert_eq!(resolve(&["/d"], &[]).unwrap().huge_fill, None);
        for (v, want) in [
            ("auto", None),
            ("AUTO", None),
            ("on", Some(true)),
            ("off", Some(false)),
        ] {
            assert_eq!(
                resolve(&["/d"], &[("TESSERA_HUGE_FILL", v)])
                    .unwrap()
                    .huge_fill,
                want,
                "{v}"
            );
        }
        assert!(resolve(&["/d"], &[("TESSERA_HUGE_FILL", "mostly")]).is_err());
    }

    #[test]
    fn splice_get_is_off_unless_asked_for() {
        assert!(!resolve(&["/d"], &[]).unwrap().splice_get);
        for on in ["on", "ON", "true", "1"] {
            assert!(
                resolve(&["/d"], &[("TESSERA_SPLICE_GET", on)])
                    .unwrap()
                    .splice_get,
                "{on}"
            );
        }
        assert!(
            !resolve(&["/d"], &[("TESSERA_SPLICE_GET", "off")])
                .unwrap()
                .splice_get
        );
        assert!(resolve(&["/d"], &[("TESSERA_SPLICE_GET", "sometimes")]).is_err());
    }

    #[test]
    fn request_bound_from_memory() {
        assert_eq!(requests_max_for(0), 32);
        assert_eq!(requests_max_for(1 << 30), 128);
        assert_eq!(requests_max_for(24 << 30), 3072);
        assert_eq!(requests_max_for(u64::MAX), MAX_REQUESTS_CAP);
    }
}

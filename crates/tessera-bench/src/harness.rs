//! The side-by-side harness: starts Tessera and MinIO on loopback over
//! identical fresh directories, runs the standard suite in compare mode and
//! measures each server's CPU and peak memory per phase. The report, its
//! archive in `docs/bench-runs/` and the tables of `docs/benchmarks.md`
//! are `record`'s.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::chunked::PayloadMode;
use crate::client::{Endpoint, Pool};
use crate::compare::{CompareResult, Metric, Side, compare, format_round};
use crate::record::Machine;
use crate::s3::{S3, Sse};
use crate::sign::Signer;
use crate::units::fmt_size;
use crate::workload::{RunConfig, Workload, default_objects};

const USER: &str = "benchadmin";
const PASSWORD: &str = "benchadmin-secret";
/// How long a server may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The suites the harness runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// The five rows the project's targets are set on, each against MinIO
    /// on fresh servers, 7 rounds of 6 s (about 10 minutes).
    Scorecard,
    /// Both layouts, the whole suite (under 15 minutes here).
    Full,
    /// 4 drives, a subset, short rounds (under 3 minutes).
    Quick,
    /// The quickest form, for CI: proves the harness works, measures
    /// nothing worth quoting.
    Smoke,
    /// The scorecard's rows on a 4-node cluster of each (4 drives per
    /// node, one erasure set of 16, the default parity EC:4), the load
    /// spread over all nodes, CPU and peak memory summed over the nodes.
    /// Needs root: MinIO refuses loopback addresses in a container, so both
    /// run on a private address of a veth pair the harness makes.
    Cluster,
}

impl Profile {
    pub const ALL: [Profile; 5] = [
        Profile::Scorecard,
        Profile::Full,
        Profile::Quick,
        Profile::Smoke,
        Profile::Cluster,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Profile::Scorecard => "scorecard",
            Profile::Full => "full",
            Profile::Quick => "quick",
            Profile::Smoke => "smoke",
            Profile::Cluster => "cluster",
        }
    }
}

/// One phase of the suite.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Phase {
    pub name: String,
    #[serde(skip)]
    pub workload: Option<Workload>,
    pub size: u64,
    pub concurrent: usize,
    /// put/multipart: objects per round (else timed); list: keys; get:
    /// objects prepared (default: as many as the profile's budget allows).
    pub objects: Option<u64>,
    pub part_size: u64,
    pub cleanup: bool,
    /// Rounds of this phase, when not the layout's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<usize>,
}

fn phase(workload: Workload, size: u64, concurrent: usize) -> Phase {
    let verb = match workload {
        Workload::Put => "PUT",
        Workload::Get => "GET",
        _ => "?",
    };
    Phase {
        name: format!("{verb} {} c={concurrent}", fmt_size(size)),
        workload: Some(workload),
        size,
        concurrent,
        objects: None,
        part_size: 16 << 20,
        // Large objects are deleted after each round to bound disk use.
        cleanup: size >= 1 << 20,
        rounds: None,
    }
}

fn list_phase(keys: u64, concurrent: usize) -> Phase {
    Phase {
        name: format!("LIST {keys} keys (ListObjectsV2, 1000/page) c={concurrent}"),
        workload: Some(Workload::List),
        size: 1024,
        concurrent,
        objects: Some(keys),
        part_size: 16 << 20,
        cleanup: false,
        rounds: None,
    }
}

fn multipart_phase(size: u64, part: u64) -> Phase {
    Phase {
        name: format!(
            "MULTIPART {} ({} parts, 4 in flight) c=1",
            fmt_size(size),
            fmt_size(part)
        ),
        workload: Some(Workload::Multipart),
        size,
        concurrent: 1,
        objects: Some(1),
        part_size: part,
        cleanup: true,
        rounds: None,
    }
}

/// The phases of a profile.
pub fn suite(profile: Profile) -> Vec<Phase> {
    use Workload::{Get, Put};
    let prepared = |mut p: Phase, objects: u64| {
        p.objects = Some(objects);
        p
    };
    match profile {
        Profile::Scorecard | Profile::Cluster => vec![
            phase(Put, 16 << 20, 8),
            prepared(phase(Get, 16 << 20, 8), 16),
            phase(Put, 4 << 10, 32),
            prepared(phase(Get, 4 << 10, 32), 2000),
            Phase {
                rounds: Some(5),
                ..list_phase(10_000, 8)
            },
        ],
        Profile::Full => {
            let mut v = Vec::new();
            for size in [1u64 << 20, 16 << 20, 64 << 20] {
                for c in [4, 16] {
                    v.push(phase(Put, size, c));
                    v.push(phase(Get, size, c));
                }
            }
            v.push(phase(Put, 4 << 10, 32));
            v.push(phase(Get, 4 << 10, 32));
            v.push(list_phase(10_000, 1));
            v.push(multipart_phase(256 << 20, 16 << 20));
            v
        }
        Profile::Quick => vec![
            phase(Put, 1 << 20, 4),
            phase(Get, 1 << 20, 4),
            phase(Put, 16 << 20, 4),
            phase(Get, 16 << 20, 4),
            phase(Put, 4 << 10, 32),
            phase(Get, 4 << 10, 32),
            list_phase(1000, 1),
            multipart_phase(64 << 20, 16 << 20),
        ],
        Profile::Smoke => vec![
            phase(Put, 1 << 20, 2),
            phase(Get, 1 << 20, 2),
            phase(Put, 4 << 10, 4),
            phase(Get, 4 << 10, 4),
            list_phase(50, 1),
            multipart_phase(12 << 20, 5 << 20),
        ],
    }
}

/// Rounds and seconds per run of a profile, per layout (drives).
fn timing(profile: Profile, drives: usize) -> (usize, Duration) {
    match (profile, drives) {
        (Profile::Scorecard, _) => (7, Duration::from_secs(6)),
        (Profile::Full, 4) => (5, Duration::from_millis(1500)),
        (Profile::Full, _) => (3, Duration::from_secs(1)),
        (Profile::Quick, _) => (3, Duration::from_secs(1)),
        (Profile::Smoke, _) => (2, Duration::from_millis(500)),
        (Profile::Cluster, _) => (5, Duration::from_secs(6)),
    }
}

fn layouts(profile: Profile) -> Vec<usize> {
    match profile {
        Profile::Full => vec![4, 8],
        Profile::Scorecard | Profile::Quick | Profile::Smoke => vec![4],
        Profile::Cluster => vec![CLUSTER_NODES * CLUSTER_DRIVES],
    }
}

/// Options of `tessera-bench harness`.
#[derive(Debug, Clone)]
pub struct Options {
    pub profile: Profile,
    pub tessera: PathBuf,
    /// `None`: Tessera alone (no ratios).
    pub minio: Option<PathBuf>,
    pub rounds: Option<usize>,
    pub time: Option<Duration>,
    pub only: Vec<String>,
    pub drives: Option<Vec<usize>>,
    pub workdir: Option<PathBuf>,
    pub keep: bool,
    pub progress: bool,
    /// How the load generator sends PUT bodies.
    pub payload: PayloadMode,
    pub command_line: String,
}

/// The workspace this binary was built from.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The cargo target directory (`CARGO_TARGET_DIR` or `<workspace>/target`).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => {
            let p = PathBuf::from(d);
            if p.is_absolute() {
                p
            } else {
                workspace_root().join(p)
            }
        }
        _ => workspace_root().join("target"),
    }
}

/// A started server.
pub struct Server {
    pub name: &'static str,
    child: Child,
    pub endpoint: String,
    pub log: PathBuf,
}

impl Server {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn terminate(&self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// SIGTERM to every server, then SIGKILL to those still running after 15 s.
pub fn stop_all(mut servers: Vec<Server>) {
    for s in &servers {
        s.terminate();
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        servers.retain_mut(|s| !matches!(s.child.try_wait(), Ok(Some(_))));
        if servers.is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for s in &servers {
        eprintln!("{} did not stop within 15 s of SIGTERM: killed", s.name);
    }
    // Drop kills and reaps the rest.
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

fn make_drives(root: &Path, n: usize) -> Result<Vec<PathBuf>, String> {
    let mut v = Vec::new();
    for i in 1..=n {
        let d = root.join(format!("d{i}"));
        std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        v.push(d);
    }
    Ok(v)
}

/// A plain GET answering 200?
fn http_ok(addr: &str, path: &str) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut buf = [0u8; 64];
    let mut got = Vec::new();
    while got.len() < 12 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    got.starts_with(b"HTTP/1.1 200") || got.starts_with(b"HTTP/1.0 200")
}

fn wait_ready(server: &mut Server, addr: &str) -> Result<(), String> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(Some(st)) = server.child.try_wait() {
            return Err(format!(
                "{} exited during start-up ({st}); see {}",
                server.name,
                server.log.display()
            ));
        }
        if http_ok(addr, "/minio/health/ready") {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{} not ready after {:?}; see {}",
                server.name,
                START_TIMEOUT,
                server.log.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn base_env(cmd: &mut Command, home: &Path) {
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home);
}

/// Starts `tessera server` and waits for its `API:` line and readiness.
pub fn start_tessera(bin: &Path, root: &Path, drives: usize) -> Result<Server, String> {
    let dirs = make_drives(&root.join("drives"), drives)?;
    let port = free_port()?;
    let log = root.join("tessera.log");
    let mut cmd = Command::new(bin);
    base_env(&mut cmd, root);
    cmd.env("TESSERA_ROOT_USER", USER)
        .env("TESSERA_ROOT_PASSWORD", PASSWORD)
        .env("TESSERA_LOG", "warn");
    if drives == 4 {
        cmd.env("TESSERA_STORAGE_CLASS_STANDARD", "EC:2");
    }
    cmd.arg("server")
        .arg("--address")
        .arg(format!("127.0.0.1:{port}"))
        .args(&dirs)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let logfile = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let logfile = Arc::new(std::sync::Mutex::new(logfile));
    if let Some(out) = child.stdout.take() {
        let lf = logfile.clone();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if !sent && let Some(i) = line.find("API: ") {
                    let url = line[i + 5..]
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .to_owned();
                    let _ = tx.send(url);
                    sent = true;
                }
                if let Ok(mut f) = lf.lock() {
                    let _ = writeln!(f, "{line}");
                }
            }
        });
    }
    if let Some(err) = child.stderr.take() {
        let lf = logfile.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut f) = lf.lock() {
                    let _ = writeln!(f, "{line}");
                }
            }
        });
    }
    let mut server = Server {
        name: "tessera",
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
        log,
    };
    match rx.recv_timeout(START_TIMEOUT) {
        Ok(url) if !url.is_empty() => server.endpoint = url.trim_end_matches('/').to_owned(),
        _ => {
            return Err(format!(
                "tessera printed no `API:` line within {:?}; see {}",
                START_TIMEOUT,
                server.log.display()
            ));
        }
    }
    wait_ready(&mut server, &format!("127.0.0.1:{port}"))?;
    Ok(server)
}

/// Starts `minio server` and waits for /minio/health/ready.
pub fn start_minio(bin: &Path, root: &Path, drives: usize) -> Result<Server, String> {
    let dirs = make_drives(&root.join("drives"), drives)?;
    let port = free_port()?;
    let console = free_port()?;
    let log = root.join("minio.log");
    let logfile = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let logerr = logfile
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let mut cmd = Command::new(bin);
    base_env(&mut cmd, root);
    cmd.env("MINIO_CI_CD", "1")
        .env("MINIO_ROOT_USER", USER)
        .env("MINIO_ROOT_PASSWORD", PASSWORD)
        .env("MINIO_UPDATE", "off");
    if drives == 4 {
        cmd.env("MINIO_STORAGE_CLASS_STANDARD", "EC:2");
    }
    cmd.arg("server")
        .arg("--quiet")
        .arg("--address")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--console-address")
        .arg(format!("127.0.0.1:{console}"))
        .args(&dirs)
        .stdin(Stdio::null())
        .stdout(Stdio::from(logfile))
        .stderr(Stdio::from(logerr));
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let mut server = Server {
        name: "minio",
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
        log,
    };
    wait_ready(&mut server, &format!("127.0.0.1:{port}"))?;
    Ok(server)
}

/// Nodes of the cluster profile, and drives per node.
pub const CLUSTER_NODES: usize = 4;
pub const CLUSTER_DRIVES: usize = 4;

/// A private address on a veth pair made for the cluster profile (MinIO
/// refuses loopback endpoints where it believes it runs in a container);
/// the pair is removed when this is dropped.
pub struct PrivateAddress {
    pub ip: String,
    link: String,
}

impl PrivateAddress {
    pub fn new() -> Result<PrivateAddress, String> {
        let tag = std::process::id() % 10_000;
        let link = format!("tsbh{tag}a");
        let ip = format!("10.79.{}.1", std::process::id() % 250);
        let ip_cmd = |args: &[&str]| -> Result<(), String> {
            let out = Command::new("ip")
                .args(args)
                .output()
                .map_err(|e| format!("`ip` (iproute2) is needed for the cluster profile: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "ip {}: {} (the cluster profile needs root for a veth pair: MinIO refuses \
                     loopback endpoints in a container)",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        };
        let peer = format!("tsbh{tag}b");
        ip_cmd(&["link", "add", &link, "type", "veth", "peer", "name", &peer])?;
        let made = PrivateAddress {
            ip: ip.clone(),
            link: link.clone(),
        };
        ip_cmd(&["addr", "add", &format!("{ip}/24"), "dev", &link])?;
        ip_cmd(&["link", "set", &link, "up"])?;
        ip_cmd(&["link", "set", &peer, "up"])?;
        Ok(made)
    }
}

impl Drop for PrivateAddress {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.link])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn free_port_on(ip: &str) -> Result<u16, String> {
    let l = TcpListener::bind((ip, 0)).map_err(|e| format!("no free port on {ip}: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port on {ip}: {e}"))
}

/// The status of a plain GET (`None`: no answer).
fn http_status(addr: &str, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    while got.len() < 12 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    std::str::from_utf8(got.get(9..12)?).ok()?.parse().ok()
}

/// `nodes` ports on `ip` and the endpoints of their drives under `root`
/// (`root/n<N>/d<D>`, listed explicitly: one pool).
fn cluster_layout(root: &Path, ip: &str) -> Result<(Vec<u16>, Vec<String>), String> {
    let mut ports = Vec::new();
    while ports.len() < CLUSTER_NODES {
        let p = free_port_on(ip)?;
        if !ports.contains(&p) {
            ports.push(p);
        }
    }
    let mut endpoints = Vec::new();
    for (n, port) in ports.iter().enumerate() {
        for d in 1..=CLUSTER_DRIVES {
            let dir = root.join(format!("n{}/d{d}", n + 1));
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            endpoints.push(format!("http://{ip}:{port}{}", dir.display()));
        }
    }
    Ok((ports, endpoints))
}

/// Waits until every node answers `path` with `status`.
fn wait_nodes(
    servers: &mut [Server],
    ip: &str,
    ports: &[u16],
    path: &str,
    status: u16,
) -> Result<(), String> {
    let deadline = Instant::now() + START_TIMEOUT;
    for (s, port) in servers.iter_mut().zip(ports) {
        let addr = format!("{ip}:{port}");
        loop {
            if let Ok(Some(st)) = s.child.try_wait() {
                return Err(format!(
                    "{} exited during start-up ({st}); see {}",
                    s.name,
                    s.log.display()
                ));
            }
            if http_status(&addr, path) == Some(status) {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{} at {addr} did not answer {path} with {status} within {START_TIMEOUT:?}; see {}",
                    s.name,
                    s.log.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(())
}

/// Starts one node of a cluster, its output to `log`.
fn spawn_node(
    name: &'static str,
    mut cmd: Command,
    log: PathBuf,
    ip: &str,
    port: u16,
) -> Result<Server, String> {
    let file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(err))
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    Ok(Server {
        name,
        child,
        endpoint: format!("http://{ip}:{port}"),
        log,
    })
}

/// Starts a cluster of `tessera server` processes on `ip` and waits until
/// every node serves S3 (an unsigned request is refused with 403, not
/// 503 while the node starts).
pub fn start_tessera_cluster(bin: &Path, root: &Path, ip: &str) -> Result<Vec<Server>, String> {
    let (ports, endpoints) = cluster_layout(&root.join("drives"), ip)?;
    let mut servers = Vec::new();
    for (n, port) in ports.iter().enumerate() {
        let mut cmd = Command::new(bin);
        base_env(&mut cmd, root);
        cmd.env("TESSERA_ROOT_USER", USER)
            .env("TESSERA_ROOT_PASSWORD", PASSWORD)
            .env("TESSERA_LOG", "warn")
            .arg("server")
            .arg("--address")
            .arg(format!("{ip}:{port}"))
            .args(&endpoints);
        let log = root.join(format!("tessera{}.log", n + 1));
        servers.push(spawn_node("tessera", cmd, log, ip, *port)?);
    }
    wait_nodes(&mut servers, ip, &ports, "/minio/health/ready", 200)?;
    wait_nodes(&mut servers, ip, &ports, "/", 403)?;
    Ok(servers)
}

/// Starts a cluster of `minio server` processes on `ip` and waits until
/// every node has its write quorum.
pub fn start_minio_cluster(bin: &Path, root: &Path, ip: &str) -> Result<Vec<Server>, String> {
    let (ports, endpoints) = cluster_layout(&root.join("drives"), ip)?;
    let mut servers = Vec::new();
    for (n, port) in ports.iter().enumerate() {
        let console = free_port_on(ip)?;
        let home = root.join(format!("home{}", n + 1));
        std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
        let mut cmd = Command::new(bin);
        base_env(&mut cmd, &home);
        cmd.env("MINIO_CI_CD", "1")
            .env("MINIO_ROOT_USER", USER)
            .env("MINIO_ROOT_PASSWORD", PASSWORD)
            .env("MINIO_UPDATE", "off")
            .env("MINIO_BROWSER", "off")
            .arg("server")
            .arg("--quiet")
            .arg("--address")
            .arg(format!("{ip}:{port}"))
            .arg("--console-address")
            .arg(format!("{ip}:{console}"))
            .args(&endpoints);
        let log = root.join(format!("minio{}.log", n + 1));
        servers.push(spawn_node("minio", cmd, log, ip, *port)?);
    }
    wait_nodes(&mut servers, ip, &ports, "/minio/health/cluster", 200)?;
    // A node connects a peer's drive it missed at start on its next
    // monitor tick; reads before then are refused (503).
    std::thread::sleep(Duration::from_secs(3));
    Ok(servers)
}

/// Free space a phase wants on the drives' filesystem before it starts.
const MIN_FREE: u64 = 6 << 30;

/// Available bytes on the filesystem of `dir` (`df -Pk`).
fn free_bytes(dir: &Path) -> Option<u64> {
    let o = Command::new("df").arg("-Pk").arg(dir).output().ok()?;
    let text = String::from_utf8(o.stdout).ok()?;
    let line = text.lines().nth(1)?;
    let kb: u64 = line.split_whitespace().nth(3)?.parse().ok()?;
    Some(kb * 1024)
}

/// A detached, niced `rm -rf` (unlinking many small files is slow here);
/// false when none could be started and the directory went in place.
fn remove_in_background(dir: &Path) -> bool {
    let spawned = Command::new("nice")
        .args(["-n", "19", "rm", "-rf"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    if spawned.is_err() {
        let _ = std::fs::remove_dir_all(dir);
    }
    spawned.is_ok()
}

fn start_servers(
    opts: &Options,
    root: &Path,
    drives: usize,
    address: Option<&str>,
) -> Result<(Vec<Server>, Option<Vec<Server>>), String> {
    let (tessera, minio) = match address {
        Some(addr) => (
            start_tessera_cluster(&opts.tessera, &root.join("tessera"), addr)?,
            match &opts.minio {
                Some(bin) => Some(start_minio_cluster(bin, &root.join("minio"), addr)?),
                None => None,
            },
        ),
        None => (
            vec![start_tessera(&opts.tessera, &root.join("tessera"), drives)?],
            match &opts.minio {
                Some(bin) => Some(vec![start_minio(bin, &root.join("minio"), drives)?]),
                None => None,
            },
        ),
    };
    if opts.progress {
        for t in &tessera {
            println!("tessera pid {} at {}", t.pid(), t.endpoint);
        }
        for m in minio.iter().flatten() {
            println!("minio pid {} at {}", m.pid(), m.endpoint);
        }
    }
    Ok((tessera, minio))
}

/// A client spreading its requests over every node of `servers`.
fn client_for(servers: &[Server], seed: u64, payload: PayloadMode) -> Result<Arc<S3>, String> {
    let eps = servers
        .iter()
        .map(|s| Endpoint::parse(&s.endpoint, false))
        .collect::<Result<Vec<_>, _>>()?;
    let pool = Pool::new(eps, None, 64)?;
    Ok(Arc::new(S3::new(
        pool,
        Signer::new(USER, PASSWORD, "us-east-1"),
        Sse::None,
        payload,
        seed,
    )))
}

/// The results of one phase.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PhaseResult {
    pub phase: Phase,
    /// `None` when the phase failed.
    pub result: Option<CompareResult>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LayoutResult {
    pub drives: usize,
    pub parity: String,
    pub rounds: usize,
    pub seconds_per_run: f64,
    pub phases: Vec<PhaseResult>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HarnessResult {
    pub profile: Profile,
    pub date: String,
    pub command: String,
    pub machine: String,
    pub tessera: String,
    pub minio: Option<String>,
    pub layouts: Vec<LayoutResult>,
    pub total_s: f64,
    /// Errors over every run of both servers.
    pub errors: u64,
    /// Phases that could not be measured, and why.
    pub failed: Vec<String>,
}

/// Runs the harness.
pub async fn run(opts: &Options) -> Result<HarnessResult, String> {
    let t_all = Instant::now();
    if !opts.tessera.is_file() {
        return Err(format!(
            "no tessera binary at {}: build it with `cargo build --release -p daemon` \
             (or pass --tessera PATH)",
            opts.tessera.display()
        ));
    }
    if let Some(m) = &opts.minio
        && !m.is_file()
    {
        return Err(format!(
            "no minio binary at {}: install it with `cargo xtask tools`, set TESSERA_MINIO, \
             pass --minio PATH, or run Tessera alone with --without-minio",
            m.display()
        ));
    }
    // A fresh directory of our own, even inside a given --workdir: only it
    // is removed afterwards.
    let base = opts.workdir.clone().unwrap_or_else(std::env::temp_dir);
    let work = base.join(format!(
        "tessera-bench-harness-{}-{}",
        std::process::id(),
        unix_now()
    ));
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let result = run_in(opts, &work, t_all).await;
    if opts.keep {
        eprintln!("kept {}", work.display());
    } else {
        // Unlinking the servers' many small files takes minutes on a slow
        // disk (about 300 files a second here): a detached, niced `rm -rf`
        // does it after the measurements, while we print the results.
        if remove_in_background(&work) {
            eprintln!("removing {} in the background", work.display());
        }
    }
    result
}

async fn run_in(opts: &Options, work: &Path, t_all: Instant) -> Result<HarnessResult, String> {
    let phases: Vec<Phase> = suite(opts.profile)
        .into_iter()
        .filter(|p| {
            opts.only.is_empty()
                || opts
                    .only
                    .iter()
                    .any(|o| p.name.to_lowercase().contains(&o.to_lowercase()))
        })
        .collect();
    if phases.is_empty() {
        return Err("--only matches no phase of the suite".into());
    }
    let drives_list = opts.drives.clone().unwrap_or_else(|| layouts(opts.profile));
    let seed = unix_now() ^ u64::from(std::process::id()).rotate_left(32);
    // The cluster profile's private address (removed when dropped).
    let address = if opts.profile == Profile::Cluster {
        Some(PrivateAddress::new()?)
    } else {
        None
    };
    let mut layouts_out = Vec::new();
    let mut errors = 0;
    let mut failed = Vec::new();
    for &drives in &drives_list {
        let (rounds, time) = timing(opts.profile, drives);
        let rounds = opts.rounds.unwrap_or(rounds);
        let time = opts.time.unwrap_or(time);
        let parity = if address.is_some() {
            format!("default, EC:4 (12+4); {CLUSTER_NODES} nodes of {CLUSTER_DRIVES} drives")
        } else if drives == 4 {
            "EC:2 (2+2)".to_owned()
        } else {
            "default".to_owned()
        };
        println!(
            "\n## {drives} drives, parity {parity}: {} phases, {rounds} rounds of {:.1}s per server",
            phases.len(),
            time.as_secs_f64()
        );
        let root = work.join(format!("{drives}drives"));
        let mut out = Vec::new();
        for (i, p) in phases.iter().enumerate() {
            let Some(workload) = p.workload else { continue };
            let t = Instant::now();
            println!("\n### {} ({}/{})", p.name, i + 1, phases.len());
            // Fresh servers on fresh drives for every phase: nothing a
            // phase wrote (or left in a server's trash) weighs on the next,
            // and the disk holds one phase's data at a time.
            let proot = root.join(format!("phase{}", i + 1));
            std::fs::create_dir_all(&proot).map_err(|e| format!("{}: {e}", proot.display()))?;
            if let Some(free) = free_bytes(&proot)
                && free < MIN_FREE
            {
                let e = format!(
                    "{} ({drives} drives): skipped, only {:.1} GiB free on the drives' filesystem \
                     (at least {} GiB wanted)",
                    p.name,
                    free as f64 / (1u64 << 30) as f64,
                    MIN_FREE >> 30
                );
                println!("FAILED: {e}");
                failed.push(e.clone());
                out.push(PhaseResult {
                    phase: p.clone(),
                    result: None,
                    error: Some(e),
                });
                continue;
            }
            let (tessera, minio) = start_servers(
                opts,
                &proot,
                drives,
                address.as_ref().map(|a| a.ip.as_str()),
            )?;
            let a = Side {
                label: "tessera".into(),
                s3: client_for(&tessera, seed, opts.payload)?,
                pids: tessera.iter().map(Server::pid).collect(),
            };
            let b = match &minio {
                Some(m) => Some(Side {
                    label: "minio".into(),
                    s3: client_for(m, seed, opts.payload)?,
                    pids: m.iter().map(Server::pid).collect(),
                }),
                None => None,
            };
            let objects = match workload {
                Workload::Put => u64::MAX,
                Workload::Multipart | Workload::List => p.objects.unwrap_or(1),
                w => p.objects.unwrap_or_else(|| {
                    let budget = if opts.profile == Profile::Full {
                        128 << 20
                    } else {
                        64 << 20
                    };
                    default_objects(
                        w,
                        &crate::units::SizeSpec::Fixed(p.size),
                        p.concurrent,
                        budget,
                    )
                }),
            };
            let rounds = opts.rounds.or(p.rounds).unwrap_or(rounds);
            let cfg = RunConfig {
                workload,
                size: crate::units::SizeSpec::Fixed(p.size),
                concurrent: p.concurrent,
                duration: if workload == Workload::Multipart {
                    None
                } else {
                    Some(time)
                },
                objects,
                bucket: format!("bench-{drives}-{}", i + 1),
                prefix: format!("h{seed:x}/"),
                part_size: p.part_size,
                part_concurrency: 4,
                max_keys: 1000,
                timeout: Duration::from_secs(300),
                cleanup: p.cleanup,
                verify: 1,
                progress: opts.progress,
                label: String::new(),
                skip_prepare: false,
            };
            let metric = Metric::for_workload(&cfg);
            let result = match &b {
                Some(b) => {
                    compare(&a, b, &cfg, rounds, |r| {
                        println!("{}", format_round(r, metric))
                    })
                    .await
                }
                None => {
                    crate::compare::single(&a, &cfg, rounds, |r| {
                        println!(
                            "round {}: {}",
                            r.round,
                            crate::compare::side_line(&r.a, metric)
                        )
                    })
                    .await
                }
            }
            .map_err(|e| format!("{} ({drives} drives): {e}", p.name));
            match result {
                Ok(result) => {
                    errors += result.a.errors + result.b.errors;
                    println!("{}", crate::compare::format_compare(&result));
                    println!("({:.1}s)", t.elapsed().as_secs_f64());
                    out.push(PhaseResult {
                        phase: p.clone(),
                        result: Some(result),
                        error: None,
                    });
                }
                Err(e) => {
                    // One phase failing (a full disk, a server error in a
                    // prepare step) does not throw the others away.
                    println!("FAILED: {e}");
                    failed.push(e.clone());
                    out.push(PhaseResult {
                        phase: p.clone(),
                        result: None,
                        error: Some(e),
                    });
                }
            }
            // Close our keep-alive connections first: a graceful shutdown waits
            // for open connections.
            drop(a);
            drop(b);
            tokio::time::sleep(Duration::from_millis(100)).await;
            let t_stop = Instant::now();
            let mut servers = tessera;
            servers.extend(minio.into_iter().flatten());
            stop_all(servers);
            if t_stop.elapsed() > Duration::from_secs(2) {
                println!("servers stopped in {:.1}s", t_stop.elapsed().as_secs_f64());
            }
            if !opts.keep {
                remove_in_background(&proot);
            }
        }
        layouts_out.push(LayoutResult {
            drives,
            parity,
            rounds,
            seconds_per_run: time.as_secs_f64(),
            phases: out,
        });
    }
    Ok(HarnessResult {
        profile: opts.profile,
        date: utc_date(SystemTime::now()),
        command: opts.command_line.clone(),
        machine: machine(),
        tessera: describe_tessera(&opts.tessera),
        minio: opts.minio.as_deref().map(describe_minio),
        layouts: layouts_out,
        total_s: t_all.elapsed().as_secs_f64(),
        errors,
        failed,
    })
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `YYYY-MM-DD HH:MM UTC`.
pub fn utc_date(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// CPU model, cores, memory.
pub fn machine() -> String {
    let m = Machine::probe();
    let mem = m
        .memory_gib
        .map_or(String::new(), |g| format!(", {g:.0} GiB RAM"));
    format!("{}, {} cores{mem}, Linux", m.cpu, m.cores)
}

/// The output of `git ARGS` in the workspace, trimmed.
fn git(args: &[&str]) -> Option<String> {
    Command::new("git")
        .arg("-C")
        .arg(workspace_root())
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
}

/// The workspace's short commit.
pub fn commit() -> Option<String> {
    git(&["rev-parse", "--short", "HEAD"])
}

fn describe_tessera(bin: &Path) -> String {
    let built = std::fs::metadata(bin)
        .and_then(|m| m.modified())
        .map(utc_date)
        .unwrap_or_default();
    let mut s = format!("{}, built {built}", bin.display());
    if let Some(c) = commit() {
        let dirty =
            git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|o| !o.is_empty());
        s.push_str(&format!(
            "; workspace HEAD {c}{}",
            if dirty {
                ", the tree has uncommitted changes"
            } else {
                ""
            }
        ));
    }
    s
}

fn describe_minio(bin: &Path) -> String {
    let v = Command::new(bin)
        .arg("--version")
        .env("MINIO_CI_CD", "1")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_default();
    if v.is_empty() {
        bin.display().to_string()
    } else {
        format!("{} ({v})", bin.display())
    }
}

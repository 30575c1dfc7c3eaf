//! The real MinIO server and `mc` as test oracles.
//!
//! [`Minio`] runs `minio server` on directories of the test's choosing (a
//! list, or MinIO's own ellipsis syntax) on a free loopback port, with fixed
//! root credentials, `MINIO_CI_CD=1` (MinIO refuses drives on the root disk
//! without it) and a private `HOME`; it waits for `/minio/health/ready`,
//! sends the server's output to a log file that every failure message
//! quotes, and kills the server when dropped. [`Minio::stop`] shuts it down
//! gracefully (SIGTERM), [`Minio::kill`] with SIGKILL, as a crash would.
//!
//! [`Mc`] is the S3 client: the `mc` command line driven through
//! `std::process`, with a private configuration directory. (A Rust S3 SDK
//! would cost minutes of compilation on a 2-core CI machine; `mc` costs
//! nothing to build and is MinIO's own client.)
//!
//! The binaries are found, in this order: `TESSERA_MINIO` / `TESSERA_MC`,
//! the workspace's `target/tools/bin` (where `cargo xtask tools` installs
//! them), then `PATH`. When one is missing the test fails and says to run
//! `cargo xtask tools`: a test of the contract never passes silently.

#![allow(dead_code)]

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Root user of every test server.
pub const ROOT_USER: &str = "tesseraadmin";
/// Root password of every test server.
pub const ROOT_PASSWORD: &str = "tesseraadmin-secret";
/// The `mc` alias [`Mc`] sets up for its server.
pub const ALIAS: &str = "t";

/// How long MinIO may take to become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(90);
/// How long one `mc` command may take.
const MC_TIMEOUT: Duration = Duration::from_secs(180);
/// Tries of an `mc` command that failed with a [`TRANSIENT`] error.
const MC_ATTEMPTS: u64 = 4;
/// Errors of a server that is busy or not fully up yet (a subsystem "not
/// initialized yet", or "please reduce your request rate"), worth another
/// try. Also MinIO refusing mc's own signature: seen once, for `mc tag
/// set`, during a full CI run on a loaded 2-core machine, and not again in
/// five runs of the same test alone. Both ends of that
/// request are the oracle (MinIO and mc), not Tessera, and every command
/// retried here is idempotent.
const TRANSIENT: &[&str] = &[
    "not initialized",
    "reduce your request rate",
    "signature we calculated does not match",
];
/// How long a graceful stop may take before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// Path of a tool: `$env`, else `target/tools/bin/<name>`, else `PATH`;
/// panics with the way to install it.
pub fn tool(env: &str, name: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "{env}={} does not name a file: run `cargo xtask tools`, or fix {env}",
            p.display()
        );
        return p;
    }
    let local = tools_dir().join(name);
    if local.is_file() {
        return local;
    }
    if let Some(found) = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
    {
        return found;
    }
    panic!(
        "`{name}` not found (looked at ${env}, {}, PATH): run `cargo xtask tools` \
         to install the MinIO server and mc, or set {env}",
        local.display()
    );
}

/// `<workspace>/target/tools/bin`.
pub fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tools/bin")
}

/// The MinIO server binary.
pub fn minio_bin() -> PathBuf {
    tool("TESSERA_MINIO", "minio")
}

/// The `mc` binary.
pub fn mc_bin() -> PathBuf {
    tool("TESSERA_MC", "mc")
}

/// A free TCP port on loopback (free when asked; MinIO binds it a moment
/// later, and [`MinioBuilder::start`] retries on a lost race).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind a loopback port")
}

/// How to start a [`Minio`].
#[derive(Debug, Clone)]
pub struct MinioBuilder {
    drives: Vec<OsString>,
    env: Vec<(String, String)>,
    work: PathBuf,
}

impl MinioBuilder {
    /// Adds an environment variable of the server (`MINIO_KMS_SECRET_KEY`,
    /// `MINIO_STORAGE_CLASS_STANDARD`, ...).
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Starts the server and waits until it is ready; panics with its log
    /// when it does not become ready.
    pub fn start(self) -> Minio {
        std::fs::create_dir_all(&self.work).expect("create the MinIO work directory");
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.try_start(attempt) {
                Ok(minio) => return minio,
                // Another process took the port between our probe and
                // MinIO's bind: try other ports.
                Err(log) if attempt < 3 && log.contains("address already in use") => continue,
                Err(log) => panic!("MinIO did not start (attempt {attempt}); its log:\n{log}"),
            }
        }
    }

    fn try_start(&self, attempt: u32) -> Result<Minio, String> {
        let port = free_port();
        let console = free_port();
        let log = self.work.join(format!("minio-{port}-{attempt}.log"));
        let home = self.work.join(format!("home-{port}-{attempt}"));
        std::fs::create_dir_all(&home).expect("create MinIO's HOME");
        let out = File::create(&log).expect("create the MinIO log");
        let err = out.try_clone().expect("clone the log handle");
        let started = Instant::now();
        let child = Command::new(minio_bin())
            .arg("server")
            .arg("--address")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--console-address")
            .arg(format!("127.0.0.1:{console}"))
            .args(&self.drives)
            .env("MINIO_ROOT_USER", ROOT_USER)
            .env("MINIO_ROOT_PASSWORD", ROOT_PASSWORD)
            .env("MINIO_CI_CD", "1")
            .env("MINIO_BROWSER", "off")
            .env("MINIO_UPDATE", "off")
            .env("HOME", &home)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", minio_bin().display()));
        let mut minio = Minio {
            child: Some(child),
            port,
            log,
            home,
            drives: self.drives.clone(),
            started_in: Duration::ZERO,
        };
        let deadline = started + READY_TIMEOUT;
        loop {
            if let Some(status) = minio
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                minio.child = None;
                return Err(format!("(exited: {status})\n{}", minio.log_text()));
            }
            if http_status(port, "/minio/health/ready") == Some(200) {
                minio.started_in = started.elapsed();
                return Ok(minio);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "(not ready after {READY_TIMEOUT:?})\n{}",
                    minio.log_text()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A running MinIO server; killed (SIGKILL) when dropped.
#[derive(Debug)]
pub struct Minio {
    child: Option<Child>,
    port: u16,
    log: PathBuf,
    home: PathBuf,
    drives: Vec<OsString>,
    started_in: Duration,
}

impl Minio {
    /// A server over these drive directories, in this order (MinIO's
    /// endpoint order); logs and `HOME` go under `work`.
    pub fn on(drives: &[PathBuf], work: &Path) -> MinioBuilder {
        MinioBuilder {
            drives: drives.iter().map(|d| d.clone().into_os_string()).collect(),
            env: Vec::new(),
            work: work.to_path_buf(),
        }
    }

    /// A server over endpoint arguments as given to `minio server`, e.g.
    /// `/tmp/x/d{1...8}` in MinIO's ellipsis syntax.
    pub fn on_args(args: &[&str], work: &Path) -> MinioBuilder {
        MinioBuilder {
            drives: args.iter().map(OsString::from).collect(),
            env: Vec::new(),
            work: work.to_path_buf(),
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port of the S3 API.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// How long the server took to become ready.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// The server's output so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_else(|e| format!("(no log: {e})"))
    }

    /// Path of the server's log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// An `mc` client with an alias ([`ALIAS`]) for this server.
    pub fn mc(&self) -> Mc {
        Mc::new(self)
    }

    /// Whether the server process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Graceful shutdown: SIGTERM, then SIGKILL if the server is still up
    /// after a while. Panics if it had died on its own before.
    pub fn stop(mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "MinIO had already exited ({status}); its log:\n{}",
                self.log_text()
            );
        }
        let sent = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        let deadline = Instant::now() + STOP_TIMEOUT;
        while sent && Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// `kill -9`: the server dies at once, as in a crash.
    pub fn kill(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Minio {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Status code of `GET path` on loopback, if the server answers.
fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).ok()?;
    let head = String::from_utf8_lossy(&buf[..n]);
    head.split_whitespace().nth(1)?.parse().ok()
}

/// One entry of `mc ls --recursive --json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LsEntry {
    /// Key relative to the listed prefix.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// ETag, without quotes.
    pub etag: String,
}

/// The `mc` client, bound to one server through the alias [`ALIAS`].
/// Paths are `bucket/key` (the alias is added).
pub struct Mc {
    config: tempfile::TempDir,
    scratch: tempfile::TempDir,
    log: PathBuf,
}

impl Mc {
    fn new(minio: &Minio) -> Mc {
        let mc = Mc {
            config: tempfile::tempdir().expect("mc config dir"),
            scratch: tempfile::tempdir().expect("mc scratch dir"),
            log: minio.log.clone(),
        };
        // `/minio/health/ready` answers before IAM is up; until it is,
        // MinIO refuses requests with "Server not initialized yet".
        let endpoint = minio.endpoint();
        let args = ["alias", "set", ALIAS, &endpoint, ROOT_USER, ROOT_PASSWORD];
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let out = mc.run(&args);
            if out.status.success() {
                return mc;
            }
            let text = String::from_utf8_lossy(&out.stderr).into_owned()
                + &String::from_utf8_lossy(&out.stdout);
            if !text.contains("not initialized") || Instant::now() > deadline {
                panic!(
                    "mc {args:?} failed ({}):\n{text}\nMinIO log:\n{}",
                    out.status,
                    mc.server_log()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn server_log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Runs `mc <args>`, bounded by a timeout; returns whatever happened.
    pub fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new(mc_bin());
        command
            .arg("--config-dir")
            .arg(self.config.path())
            .args(["--no-color", "--disable-pager"])
            .args(args)
            .stdin(Stdio::null());
        let child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", mc_bin().display()));
        let pid = child.id();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(MC_TIMEOUT) {
            Ok(output) => output.expect("wait for mc"),
            Err(_) => {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
                panic!(
                    "mc {args:?} did not finish in {MC_TIMEOUT:?}; MinIO log:\n{}",
                    self.server_log()
                );
            }
        }
    }

    /// Runs `mc <args>` and returns its stdout; panics with both outputs
    /// and the server's log when it fails. A server that is still starting
    /// a subsystem or sheds load (on a busy 2-core machine) is given a few
    /// more tries; every retry is reported in the test's output.
    pub fn ok(&self, args: &[&str]) -> Vec<u8> {
        let mut attempt = 1;
        loop {
            let out = self.run(args);
            if out.status.success() {
                return out.stdout;
            }
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            if attempt < MC_ATTEMPTS && TRANSIENT.iter().any(|t| text.contains(t)) {
                eprintln!("mc {args:?}: attempt {attempt} failed, retrying: {text}");
                std::thread::sleep(Duration::from_secs(attempt));
                attempt += 1;
                continue;
            }
            panic!(
                "mc {args:?} failed ({}, attempt {attempt}):\n{text}\nMinIO log:\n{}",
                out.status,
                self.server_log()
            );
        }
    }

    fn target(path: &str) -> String {
        format!("{ALIAS}/{path}")
    }

    /// `mc mb` with extra flags (`--with-lock`, ...).
    pub fn mb(&self, bucket: &str, flags: &[&str]) {
        let target = Self::target(bucket);
        let mut args = vec!["mb"];
        args.extend_from_slice(flags);
        args.push(&target);
        self.ok(&args);
    }

    /// `mc cp [flags] <file> <path>`.
    pub fn cp_file(&self, file: &Path, path: &str, flags: &[&str]) {
        let target = Self::target(path);
        let file = file.to_str().expect("UTF-8 path");
        let mut args = vec!["cp", "--quiet"];
        args.extend_from_slice(flags);
        args.push(file);
        args.push(&target);
        self.ok(&args);
    }

    /// Uploads `body` to `path` with `mc cp [flags]` (through a scratch
    /// file: `mc` decides single PUT or multipart from the file's size).
    pub fn put(&self, path: &str, body: &[u8], flags: &[&str]) {
        let file = self.scratch.path().join("upload");
        std::fs::write(&file, body).expect("write the upload file");
        self.cp_file(&file, path, flags);
    }

    /// `mc cat <path>`: the object's bytes.
    pub fn cat(&self, path: &str) -> Vec<u8> {
        self.ok(&["cat", &Self::target(path)])
    }

    /// `mc ls --recursive --json <path>`: objects under a bucket or prefix,
    /// sorted by key.
    pub fn ls_recursive(&self, path: &str) -> Vec<LsEntry> {
        let out = self.ok(&["ls", "--recursive", "--json", &Self::target(path)]);
        let mut entries: Vec<LsEntry> = json_lines(&out)
            .into_iter()
            .filter(|v| v.get("type").and_then(|t| t.as_str()) == Some("file"))
            .map(|v| LsEntry {
                key: str_field(&v, "key"),
                size: v.get("size").and_then(|s| s.as_u64()).unwrap_or(u64::MAX),
                etag: str_field(&v, "etag").trim_matches('"').to_string(),
            })
            .collect();
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        entries
    }

    /// `mc stat --json <path>` of one object. (`mc stat` also reports
    /// every object of which `path` is a prefix, one JSON line each: the
    /// line whose name is the key's last segment is the object's.)
    pub fn stat(&self, path: &str) -> serde_json::Value {
        let out = self.ok(&["stat", "--json", &Self::target(path)]);
        let name = path.rsplit('/').next().unwrap_or(path);
        json_lines(&out)
            .into_iter()
            .find(|v| v.get("name").and_then(|n| n.as_str()) == Some(name))
            .unwrap_or_else(|| {
                panic!(
                    "mc stat {path}: no JSON line named {name:?}: {}",
                    String::from_utf8_lossy(&out)
                )
            })
    }

    /// `mc rm <path>`.
    pub fn rm(&self, path: &str) {
        self.ok(&["rm", &Self::target(path)]);
    }

    /// The deployment id MinIO reports (`mc admin info --json`).
    pub fn deployment_id(&self) -> String {
        let out = self.ok(&["admin", "info", "--json", ALIAS]);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap_or_else(|e| {
            panic!(
                "mc admin info: not JSON ({e}): {}",
                String::from_utf8_lossy(&out)
            )
        });
        v.pointer("/info/deploymentID")
            .and_then(|d| d.as_str())
            .unwrap_or_else(|| panic!("no info.deploymentID in mc admin info: {v}"))
            .to_string()
    }
}

/// Every line of `out` that parses as JSON.
pub fn json_lines(out: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn str_field(v: &serde_json::Value, key: &str) -> String {
    v.get(key)
        .and_then(|s| s.as_str())
        .unwrap_or_default()
        .to_string()
}

/// `mc stat --json` fields the contract compares: (size, etag, metadata).
pub fn stat_summary(
    stat: &serde_json::Value,
) -> (
    Option<u64>,
    Option<String>,
    serde_json::Map<String, serde_json::Value>,
) {
    (
        stat.get("size").and_then(|v| v.as_u64()),
        stat.get("etag")
            .and_then(|v| v.as_str())
            .map(|s| s.trim_matches('"').to_string()),
        stat.get("metadata")
            .and_then(|m| m.as_object())
            .cloned()
            .unwrap_or_default(),
    )
}

//! The real `tessera` binary as the tests run it: started with a clean
//! environment (no variable of the developer's leaks in), its stdout
//! collected, signalled, waited for.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_s3::Client;

use super::http::{RawResponse, raw};
use super::s3::s3_client;

/// How long anything may take before a test gives up (generous: the CI
/// machine is small and shared; no assertion depends on it being short).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A `tessera` command with an empty environment apart from `PATH`, a
/// private `HOME` and quiet logs.
pub fn tessera(home: &Path) -> Command {
    clean_command(env!("CARGO_BIN_EXE_tessera"), home)
}

/// `program` with the environment of [`tessera`] (for a wrapper that
/// `exec`s the binary).
pub fn clean_command(program: impl AsRef<std::ffi::OsStr>, home: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TESSERA_LOG", "warn");
    cmd
}

/// Runs a `tessera` command to completion (it must not start serving).
pub fn run(mut cmd: Command) -> Output {
    cmd.stdin(Stdio::null());
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tessera");
    let deadline = Instant::now() + PATIENCE;
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("tessera did not exit: {:?}", child.wait_with_output());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running `tessera server`, killed on drop.
pub struct Daemon {
    child: Option<Child>,
    /// Every stdout line so far.
    pub stdout: Arc<Mutex<Vec<String>>>,
    /// The first URL of the `API:` line.
    pub endpoint: String,
    /// `host:port` of `endpoint`.
    pub addr: String,
}

impl Daemon {
    /// Starts `cmd` (a `tessera server ...` command) and waits for its
    /// `API:` line.
    pub fn start(mut cmd: Command) -> Daemon {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn tessera");
        let out = child.stdout.take().expect("stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = lines.clone();
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
                sink.lock().unwrap().push(line);
            }
        });
        let endpoint = match rx.recv_timeout(PATIENCE) {
            Ok(u) => u,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "tessera printed no API line; exit {:?}, stdout {:?}",
                    child.wait(),
                    lines.lock().unwrap()
                );
            }
        };
        let addr = endpoint
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .trim_end_matches('/')
            .to_owned();
        Daemon {
            child: Some(child),
            stdout: lines,
            endpoint,
            addr,
        }
    }

    /// The stdout lines so far, joined. The banner is printed in one write,
    /// so once the API line is seen the rest follows within moments: wait
    /// until a line containing `until` arrives.
    pub fn stdout_until(&self, until: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = self.stdout.lock().unwrap().join("\n");
            if text.contains(until) || Instant::now() > deadline {
                return text;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Sends a signal (`TERM`, `HUP`, ...).
    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status()
            .expect("kill");
        assert!(st.success(), "kill -{sig}");
    }

    /// Waits for the process to exit.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(st) = child.try_wait().expect("wait") {
                return st;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("tessera did not exit");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A plain HTTP GET (new connection, `Connection: close`).
    pub fn get(&self, path: &str, headers: &[(&str, &str)]) -> RawResponse {
        let mut req = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.addr
        );
        for (n, v) in headers {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        req.push_str("\r\n");
        raw(&self.addr, req.as_bytes())
    }

    /// Sends raw bytes as one HTTP/1.1 request (the caller includes
    /// `Connection: close`) and reads the whole response.
    pub fn raw(&self, request: &[u8]) -> RawResponse {
        raw(&self.addr, request)
    }

    /// Whether the server process is still running.
    pub fn alive(&mut self) -> bool {
        let child = self.child.as_mut().expect("running");
        matches!(child.try_wait(), Ok(None))
    }

    /// An S3 client for this server (plain HTTP).
    pub fn s3(&self, access: &str, secret: &str) -> Client {
        s3_client(&self.endpoint, access, secret)
    }

    /// Polls `path` until it answers `status` (the server reacts to what
    /// the test did asynchronously); panics after [`PATIENCE`].
    pub fn wait_for_status(&self, path: &str, status: u16) -> RawResponse {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let r = self.get(path, &[]);
            if r.status == status {
                return r;
            }
            assert!(
                Instant::now() < deadline,
                "{path} still answers {} ({})",
                r.status,
                r.text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `n` fresh drive directories under `dir`.
pub fn drive_dirs(dir: &Path, n: usize) -> Vec<PathBuf> {
    (1..=n).map(|i| dir.join(format!("d{i}"))).collect()
}

/// Polls until `cond` holds; panics after [`PATIENCE`].
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

//! Shared by the integration tests: the `tessera` binary, a server on
//! fresh drives, the `tessera-bench` binary.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `tessera` binary under test: `$TESSERA_BIN`, else the workspace's
/// debug build, built with `cargo build -p daemon` when it is missing
/// (`cargo test --workspace` builds it before any test runs).
pub fn tessera_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("TESSERA_BIN") {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "TESSERA_BIN={} is not a file: build it (cargo build -p daemon) or unset TESSERA_BIN",
            p.display()
        );
        return p;
    }
    let p = tessera_bench::harness::target_dir()
        .join("debug")
        .join("tessera");
    if !p.is_file() {
        eprintln!(
            "{} is missing: running `cargo build -p daemon --bin tessera`",
            p.display()
        );
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let st = Command::new(cargo)
            .args(["build", "-p", "daemon", "--bin", "tessera"])
            .current_dir(workspace())
            .status()
            .expect("cannot run cargo to build the tessera binary");
        assert!(st.success(), "`cargo build -p daemon` failed");
        assert!(
            p.is_file(),
            "`cargo build -p daemon` succeeded but {} does not exist (set TESSERA_BIN)",
            p.display()
        );
    }
    eprintln!("tessera binary under test: {}", p.display());
    p
}

/// A `tessera server` on four fresh drives, killed on drop.
pub struct Tessera {
    child: Child,
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl Tessera {
    pub fn start() -> Tessera {
        let dir = tempfile::tempdir().expect("tempdir");
        let drives: Vec<PathBuf> = (1..=4)
            .map(|i| {
                let d = dir.path().join(format!("d{i}"));
                std::fs::create_dir_all(&d).unwrap();
                d
            })
            .collect();
        let mut child = Command::new(tessera_bin())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("TESSERA_LOG", "warn")
            .env("TESSERA_ROOT_USER", "benchuser")
            .env("TESSERA_ROOT_PASSWORD", "benchsecret")
            .arg("server")
            .arg("--address")
            .arg("127.0.0.1:0")
            .args(&drives)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start tessera");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if !sent && let Some(i) = line.find("API: ") {
                    let _ = tx.send(
                        line[i + 5..]
                            .split_whitespace()
                            .next()
                            .unwrap_or("")
                            .to_owned(),
                    );
                    sent = true;
                }
            }
        });
        let url: String = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(u) => u,
            Err(_) => {
                let _ = child.kill();
                panic!("tessera printed no API line: {:?}", child.wait());
            }
        };
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        Tessera {
            child,
            addr,
            _dir: dir,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Tessera {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `tessera-bench` with `args` (credentials of [`Tessera`]).
pub fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera-bench"))
        .args(args)
        .env("AWS_ACCESS_KEY_ID", "benchuser")
        .env("AWS_SECRET_ACCESS_KEY", "benchsecret")
        .env_remove("AWS_REGION")
        .stdin(Stdio::null())
        .output()
        .expect("run tessera-bench")
}

pub fn show(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

//! Tessera's build tasks, in the rust-analyzer `xtask` style: plain Rust, no
//! dependencies, run with `cargo xtask <task>`.
//!
//! - `cargo xtask ci`: everything a reviewer needs, in one command (the test
//!   command README.md names and `.ci/run` calls).
//! - `cargo xtask bench [--quick]`: the kernel benchmarks (criterion) and the
//!   Go benchmarks of the libraries MinIO uses, side by side in one run.
//! - `cargo xtask tools`: installs the MinIO server and `mc` (the oracle of
//!   the interoperability tests) into `target/tools/bin` with `go install`.

use std::env;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

/// Crates whose kernels must also build for targets and instruction sets this
/// machine may not run.
const KERNEL_CRATES: &[&str] = &["ec-simd", "bitrot"];

/// x86 features that turn on every kernel at compile time: proves the
/// AVX-512 and GFNI code compiles even where the host cannot run it.
const ALL_X86_FEATURES: &str = "-C target-feature=+avx2,+avx512f,+avx512bw,+avx512vl,+gfni";

const AARCH64: &str = "aarch64-unknown-linux-gnu";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => bench(args.iter().any(|a| a == "--quick")),
        Some("tools") => tools().map(|_| ()),
        _ => {
            eprintln!(
                "usage: cargo xtask <task>\n\n\
                 tasks:\n  \
                 ci               fmt, clippy, cross-target checks, all tests, benchmarks in test mode\n  \
                 bench [--quick]  criterion kernel benchmarks and the Go (MinIO library) benchmarks\n  \
                 tools            install the MinIO server and mc into target/tools/bin"
            );
            Err("no task given".to_string())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    // xtask/ sits directly under the workspace root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask has a parent directory")
        .to_path_buf()
}

fn cargo() -> Command {
    let mut command = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.current_dir(workspace_root());
    command
}

/// Runs a command to completion, inheriting stdio; an error names the step.
fn run(step: &str, command: &mut Command) -> Result<(), String> {
    eprintln!("\n==> {step}\n    {command:?}");
    let started = Instant::now();
    let status = command
        .status()
        .map_err(|error| format!("{step}: cannot start: {error}"))?;
    eprintln!("    ({step}: {:.1} s)", started.elapsed().as_secs_f64());
    if status.success() {
        Ok(())
    } else {
        Err(format!("{step} failed ({status})"))
    }
}

/// Test counts summed over every `test result:` line a runner printed.
#[derive(Default, Clone, Copy)]
struct Counts {
    passed: u64,
    failed: u64,
}

/// Runs a test command, echoing its output while summing libtest's
/// `test result: ok. N passed; M failed; ...` lines.
fn run_counting(step: &str, command: &mut Command, counts: &mut Counts) -> Result<(), String> {
    eprintln!("\n==> {step}\n    {command:?}");
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|error| format!("{step}: cannot start: {error}"))?;
    let stdout = child.stdout.take().expect("stdout was piped");
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|error| format!("{step}: reading output: {error}"))?;
        println!("{line}");
        if let Some(rest) = line.trim_start().strip_prefix("test result: ") {
            counts.passed += count_before(rest, " passed");
            counts.failed += count_before(rest, " failed");
        }
    }
    let status = child
        .wait()
        .map_err(|error| format!("{step}: waiting: {error}"))?;
    eprintln!("    ({step}: {:.1} s)", started.elapsed().as_secs_f64());
    if status.success() {
        Ok(())
    } else {
        Err(format!("{step} failed ({status})"))
    }
}

/// In `ok. 12 passed; 0 failed; ...`, the number written before `label`.
fn count_before(text: &str, label: &str) -> u64 {
    text.find(label)
        .and_then(|end| {
            text[..end]
                .rsplit(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|digits| digits.parse().ok())
        })
        .unwrap_or(0)
}

fn rustup(args: &[&str]) -> Result<(), String> {
    let mut command = Command::new("rustup");
    command.args(args);
    run(&format!("rustup {}", args.join(" ")), &mut command)
}

fn ci() -> Result<(), String> {
    let started = Instant::now();
    // Everything this task needs beyond a stock rustup toolchain.
    rustup(&["component", "add", "rustfmt", "clippy"])?;
    rustup(&["target", "add", AARCH64])?;

    run("format", cargo().args(["fmt", "--all", "--", "--check"]))?;
    run(
        "clippy",
        cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--features",
            INTEROP_FEATURE,
            "--",
            "-D",
            "warnings",
        ]),
    )?;

    // Kernels this host may not run must still build: once for aarch64
    // (NEON), once with every x86 kernel's features enabled at compile time.
    let mut aarch64 = cargo();
    aarch64.args(["clippy", "--locked", "--target", AARCH64]);
    for krate in KERNEL_CRATES {
        aarch64.args(["-p", krate]);
    }
    aarch64.args(["--", "-D", "warnings"]);
    run("clippy for aarch64 (NEON kernels)", &mut aarch64)?;

    let mut features = cargo();
    features
        .env("RUSTFLAGS", ALL_X86_FEATURES)
        .args(["check", "--locked", "--target-dir"])
        .arg(workspace_root().join("target/x86-all-features"));
    for krate in KERNEL_CRATES {
        features.args(["-p", krate]);
    }
    run("check with AVX-512 and GFNI enabled", &mut features)?;

    // The real MinIO server and mc: the oracle of the interoperability tests.
    let (minio, mc) = tools()?;

    let mut counts = Counts::default();
    run_counting(
        "tests",
        cargo()
            .args([
                "test",
                "--workspace",
                "--locked",
                "--features",
                INTEROP_FEATURE,
            ])
            .env("TESSERA_MINIO", &minio)
            .env("TESSERA_MC", &mc),
        &mut counts,
    )?;

    // Benchmarks in test mode: each benchmark runs once, so they never rot.
    run(
        "benchmarks (test mode)",
        cargo().args(["bench", "--locked", "-p", "tessera-benches", "--", "--test"]),
    )?;
    go_benchmarks(true)?;

    eprintln!(
        "\nxtask ci: every step passed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    println!("{} passed, {} failed", counts.passed, counts.failed);
    Ok(())
}

/// The cargo feature that compiles the tests against the real MinIO.
const INTEROP_FEATURE: &str = "object/minio-interop";

/// Go modules installed by `cargo xtask tools`, and the binary each gives.
const GO_TOOLS: &[(&str, &str)] = &[
    ("github.com/minio/minio@latest", "minio"),
    ("github.com/minio/mc@latest", "mc"),
];

/// Installs MinIO and mc into `target/tools/bin` (kept across runs; delete
/// the directory to update them). Returns their paths.
fn tools() -> Result<(PathBuf, PathBuf), String> {
    let bin = workspace_root().join("target/tools/bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("creating {}: {e}", bin.display()))?;
    for (module, name) in GO_TOOLS {
        if bin.join(name).exists() {
            eprintln!("==> {name}: already installed in {}", bin.display());
            continue;
        }
        let mut go = Command::new("go");
        go.args(["install", module])
            .env("GOBIN", &bin)
            .env("CGO_ENABLED", "0")
            .current_dir(workspace_root());
        run(&format!("go install {module}"), &mut go)?;
    }
    Ok((bin.join("minio"), bin.join("mc")))
}

/// The Go benchmarks of klauspost/reedsolomon and minio/highwayhash, the
/// libraries MinIO uses; `smoke` runs each benchmark once.
fn go_benchmarks(smoke: bool) -> Result<(), String> {
    let mut go = Command::new("go");
    go.current_dir(workspace_root().join("benches/go"))
        .args(["test", "-run", "^$", "-bench", "."]);
    if smoke {
        go.args(["-benchtime", "1x"]);
    } else {
        go.args(["-count", "5"]);
    }
    run("Go benchmarks (MinIO's libraries)", &mut go)
}

fn bench(quick: bool) -> Result<(), String> {
    let mut criterion = cargo();
    criterion.args(["bench", "-p", "tessera-benches"]);
    if quick {
        criterion.args(["--", "--quick"]);
    }
    run("criterion benchmarks", &mut criterion)?;
    go_benchmarks(quick)
}

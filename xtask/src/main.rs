//! Tessera's build tasks, in the rust-analyzer `xtask` style: plain Rust, no
//! dependencies, run with `cargo xtask <task>`.
//!
//! - `cargo xtask ci`: everything a reviewer needs, in one command (the test
//!   command README.md names and `.ci/run` calls).
//! - `cargo xtask bench [--quick]`: the kernel benchmarks (criterion) and the
//!   Go benchmarks of the libraries MinIO uses, side by side in one run.
//! - `cargo xtask bench-server [--quick|--smoke|--scorecard] [--write-doc]`: the
//!   side-by-side server harness (Tessera and MinIO on the same fresh drives,
//!   `tessera-bench harness`), built in release mode; MinIO is installed first
//!   when absent.
//! - `cargo xtask tools [--update]`: installs the MinIO server and `mc` (the
//!   oracle of the interoperability tests) into `target/tools/bin` with
//!   `go install`, reused for 30 days (`TESSERA_TOOLS_MAX_AGE_DAYS`);
//!   `TESSERA_MINIO` and `TESSERA_MC` name binaries to use instead.
//! - `cargo xtask fuzz [--seconds N]`: each fuzz target of `fuzz/` for N
//!   seconds (default 10; needs nightly and cargo-fuzz).
//! - `cargo xtask clients [UNITTEST ARGS]`: the client test suites alone
//!   (boto3, aws-cli and mc against the real `tessera` binary, in
//!   `tests/python`), e.g. `cargo xtask clients -k Multipart`.

use std::env;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

/// Crates whose kernels must also build for targets and instruction sets this
/// machine may not run.
const KERNEL_CRATES: &[&str] = &["ec-simd", "bitrot", "md5x"];

/// x86 features that turn on every kernel at compile time: proves the
/// AVX-512 and GFNI code compiles even where the host cannot run it.
const ALL_X86_FEATURES: &str = "-C target-feature=+avx2,+avx512f,+avx512bw,+avx512vl,+gfni";

const AARCH64: &str = "aarch64-unknown-linux-gnu";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => bench(args.iter().any(|a| a == "--quick")),
        Some("bench-server") => bench_server(&args[1..]),
        Some("tools") => tools(args.iter().any(|a| a == "--update")).map(|_| ()),
        Some("fuzz") => fuzz(
            args.iter()
                .position(|a| a == "--seconds")
                .and_then(|i| args.get(i + 1))
                .and_then(|s| s.parse().ok())
                .unwrap_or(10),
        ),
        Some("clients") => tools(false).and_then(|(minio, mc)| {
            let mut counts = Counts::default();
            client_suites(&minio, &mc, ServerBuild::Daemon, &args[1..], &mut counts)?;
            println!("{} passed, {} failed", counts.passed, counts.failed);
            Ok(())
        }),
        _ => {
            eprintln!(
                "usage: cargo xtask <task>\n\n\
                 tasks:\n  \
                 ci               fmt, clippy, cross-target checks, all tests, benchmarks in test mode\n  \
                 bench [--quick]  criterion kernel benchmarks and the Go (MinIO library) benchmarks\n  \
                 bench-server [--quick|--smoke|--scorecard] [--write-doc]\n                   \
                  Tessera and MinIO side by side (tessera-bench harness)\n  \
                 tools [--update] install the MinIO server and mc into target/tools/bin\n  \
                 clients [ARGS]   the boto3, aws-cli and mc suites against the tessera binary\n                   \
                  (ARGS go to python -m unittest, e.g. -k Multipart)"
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
    // The tree's rules (layering, unsafe, file sizes, docs) first: cheap, and
    // their failures say what to fix in one line each.
    run(
        "tidy",
        cargo().args(["test", "--locked", "-p", "xtask", "--test", "tidy"]),
    )?;
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
    let (minio, mc) = tools(false)?;

    let mut counts = Counts::default();
    run_counting(
        "tests",
        cargo()
            .args(TEST_ARGS)
            .env("TESSERA_MINIO", &minio)
            .env("TESSERA_MC", &mc),
        &mut counts,
    )?;

    // The real clients (boto3, aws-cli, mc) against the real server binary.
    client_suites(&minio, &mc, ServerBuild::SameAsTests, &[], &mut counts)?;

    // Benchmarks in test mode: each benchmark runs once, so they never rot.
    run(
        "benchmarks (test mode)",
        cargo().args(["bench", "--locked", "-p", "tessera-benches", "--", "--test"]),
    )?;
    go_benchmarks(true)?;

    // Last, as it rebuilds the drive stack with the test-only feature: the
    // fault suite with injected hangs and I/O errors, which must not skip.
    fault_suite(&mut counts)?;

    eprintln!(
        "\nxtask ci: every step passed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    println!("{} passed, {} failed", counts.passed, counts.failed);
    Ok(())
}

/// Where the Python client suites live, relative to the workspace root.
const CLIENT_SUITES: &str = "tests/python";

/// How the client suites get the `tessera` binary.
#[derive(Clone, Copy)]
enum ServerBuild {
    /// `cargo build -p daemon` (`cargo xtask clients`).
    Daemon,
    /// The `cargo test` command of `ci` again with `--no-run`: a no-op
    /// right after the tests step, which built `target/debug/tessera` for
    /// the daemon's own tests. A `cargo build` with other features would
    /// rebuild the crates under the daemon (and the next `cargo test`
    /// would rebuild them back).
    SameAsTests,
}

/// The client test suites (`tests/python`: boto3, aws-cli and mc against
/// the `tessera` binary, each test class on its own server): prepares the
/// Python environment ([`python_env`]), builds the daemon and runs
/// `python -m unittest discover`, with `extra` appended (a filter such as
/// `-k Multipart`). Their counts are added to `counts`.
fn client_suites(
    minio: &Path,
    mc: &Path,
    build: ServerBuild,
    extra: &[String],
    counts: &mut Counts,
) -> Result<(), String> {
    let python = python_env()?;
    let mut cargo_build = cargo();
    match build {
        ServerBuild::Daemon => cargo_build.args(["build", "--locked", "-p", "daemon"]),
        ServerBuild::SameAsTests => cargo_build.args(TEST_ARGS).arg("--no-run"),
    };
    run("build the tessera binary", &mut cargo_build)?;
    let tessera = target_dir().join("debug/tessera");
    if !tessera.is_file() {
        return Err(format!("{} was not built", tessera.display()));
    }
    let suites = workspace_root().join(CLIENT_SUITES);
    let mut unittest = Command::new(&python);
    unittest
        .args(["-m", "unittest", "discover", "-s"])
        .arg(&suites)
        .arg("-t")
        .arg(&suites)
        .args(["-p", "test_*.py", "-v"])
        .args(extra)
        .env("TESSERA_BIN", &tessera)
        .env("TESSERA_MC", mc)
        .env("TESSERA_MINIO", minio)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .current_dir(workspace_root());
    run_unittest("client suites (boto3, aws-cli, mc)", &mut unittest, counts)
}

/// The fault suite (`tests/python/test_faults.py`) against a daemon built
/// with the test-only `fault-injection` feature, with its skips turned into
/// failures (`TESSERA_REQUIRE_FAULTS=1`).
fn fault_suite(counts: &mut Counts) -> Result<(), String> {
    let python = python_env()?;
    run(
        "build the tessera binary with fault injection (test-only)",
        cargo().args([
            "build",
            "--locked",
            "-p",
            "daemon",
            "--features",
            "fault-injection",
        ]),
    )?;
    let tessera = target_dir().join("debug/tessera");
    let mut unittest = Command::new(&python);
    unittest
        .args(["-m", "unittest", "test_faults", "-v"])
        .env("TESSERA_BIN", &tessera)
        .env("TESSERA_REQUIRE_FAULTS", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .current_dir(workspace_root().join(CLIENT_SUITES));
    run_unittest(
        "fault suite (injected hangs and EIO)",
        &mut unittest,
        counts,
    )
}

/// The fuzz targets of `fuzz/` (a nightly-only cargo-fuzz workspace), each
/// for `secs` seconds from its seed corpus. New inputs go to a scratch
/// directory, so the committed corpora change only by hand. Needs nightly
/// and cargo-fuzz (`rustup toolchain install nightly`, `cargo install
/// cargo-fuzz --locked`); the corpora themselves run as regression tests
/// in `cargo test` (each crate's `fuzzing` module).
fn fuzz(secs: u64) -> Result<(), String> {
    const TARGETS: &[&str] = &[
        "authorization_header",
        "presigned_query",
        "aws_chunked",
        "s3_xml",
        "s3_documents",
        "range_conditional",
        "post_form",
        "sigv4_verify",
        "xl_meta",
        "format_json",
        "bitrot_frame",
    ];
    let fuzz_dir = workspace_root().join("fuzz");
    for t in TARGETS {
        let scratch = fuzz_dir.join("corpus-new").join(t);
        std::fs::create_dir_all(&scratch)
            .map_err(|e| format!("creating {}: {e}", scratch.display()))?;
        let mut c = Command::new("cargo");
        c.current_dir(&fuzz_dir)
            .args(["+nightly", "fuzz", "run", t])
            .arg(&scratch)
            .arg(format!("corpus/{t}"))
            .args([
                "--",
                &format!("-max_total_time={secs}"),
                "-rss_limit_mb=2048",
                "-max_len=65536",
            ]);
        run(&format!("fuzz {t} for {secs} s"), &mut c)?;
    }
    Ok(())
}

/// The Cargo target directory (`CARGO_TARGET_DIR` or `target/`).
fn target_dir() -> PathBuf {
    match env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => workspace_root().join(dir),
        None => workspace_root().join("target"),
    }
}

/// The Python interpreter of the client suites, with the pinned packages of
/// `tests/python/requirements.txt` importable.
///
/// A virtual environment at `target/pyenv` (created with `python3 -m venv`;
/// `TESSERA_PYTHON` names another interpreter to create it with), reused
/// while the requirements file is unchanged: the file's text is kept in
/// `target/pyenv/requirements.installed` once every package is in, so an
/// interrupted install is redone. Where Python has no working `venv` module
/// the packages go to the user's site directory (`pip install --user`) and
/// the interpreter itself is returned. Nothing system-wide is touched.
fn python_env() -> Result<PathBuf, String> {
    let requirements_path = workspace_root()
        .join(CLIENT_SUITES)
        .join("requirements.txt");
    let requirements = std::fs::read_to_string(&requirements_path)
        .map_err(|e| format!("reading {}: {e}", requirements_path.display()))?;
    let system = env::var_os("TESSERA_PYTHON")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from("python3"), PathBuf::from);
    let venv = target_dir().join("pyenv");
    let python = venv.join("bin/python");
    let stamp = venv.join("requirements.installed");
    if python.is_file() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&*requirements) {
        eprintln!(
            "==> Python environment: {} (requirements unchanged; not installing)",
            venv.display()
        );
        return Ok(python);
    }
    let _ = std::fs::remove_dir_all(&venv);
    let created = run(
        "create the Python environment",
        Command::new(&system).arg("-m").arg("venv").arg(&venv),
    );
    let (python, user) = match created {
        Ok(()) if python.is_file() => (python, false),
        outcome => {
            let why = outcome
                .err()
                .unwrap_or_else(|| "no interpreter in it".into());
            eprintln!(
                "    no virtual environment ({why}); installing with pip --user for {}",
                system.display()
            );
            let _ = std::fs::remove_dir_all(&venv);
            (system, true)
        }
    };
    let mut pip = Command::new(&python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--quiet",
    ]);
    if user {
        pip.arg("--user");
    }
    pip.arg("-r").arg(&requirements_path);
    run("install the Python clients (boto3, aws-cli)", &mut pip).map_err(|e| {
        format!(
            "{e}: the client suites need Python 3 with venv (or pip) and access to PyPI \
             (or set TESSERA_PYTHON to an interpreter that has them)"
        )
    })?;
    if !user {
        std::fs::write(&stamp, &requirements)
            .map_err(|e| format!("writing {}: {e}", stamp.display()))?;
    }
    Ok(python)
}

/// Runs a `python -m unittest` command, echoing its report (unittest writes
/// it to stderr) and adding its `Ran N tests` / `FAILED (...)` counts.
fn run_unittest(step: &str, command: &mut Command, counts: &mut Counts) -> Result<(), String> {
    eprintln!("\n==> {step}\n    {command:?}");
    let started = Instant::now();
    let mut child = command
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("{step}: cannot start: {error}"))?;
    let stderr = child.stderr.take().expect("stderr was piped");
    let (mut ran, mut failed, mut skipped) = (0, 0, 0);
    for line in BufReader::new(stderr).lines() {
        let line = line.map_err(|error| format!("{step}: reading output: {error}"))?;
        eprintln!("{line}");
        if let Some(rest) = line.strip_prefix("Ran ") {
            ran += count_before(rest, " test");
        } else if line.starts_with("OK") || line.starts_with("FAILED") {
            for (name, n) in unittest_outcomes(&line) {
                match name {
                    "failures" | "errors" | "unexpected successes" => failed += n,
                    "skipped" | "expected failures" => skipped += n,
                    _ => {}
                }
            }
        }
    }
    let status = child
        .wait()
        .map_err(|error| format!("{step}: waiting: {error}"))?;
    eprintln!("    ({step}: {:.1} s)", started.elapsed().as_secs_f64());
    counts.passed += ran.saturating_sub(failed + skipped);
    counts.failed += failed;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{step} failed ({status})"))
    }
}

/// The `name=count` pairs of unittest's last line, `OK (skipped=1)` or
/// `FAILED (failures=2, errors=1, expected failures=1)`.
fn unittest_outcomes(line: &str) -> Vec<(&str, u64)> {
    let inner = line
        .split_once('(')
        .and_then(|(_, rest)| rest.rsplit_once(')'))
        .map_or("", |(inner, _)| inner);
    inner
        .split(", ")
        .filter_map(|item| {
            let (name, n) = item.split_once('=')?;
            Some((name.trim(), n.trim().parse().ok()?))
        })
        .collect()
}

/// The cargo features that compile the tests against the real MinIO (the
/// storage engine's format tests and the gateway's SSE interoperability).
const INTEROP_FEATURE: &str = "object/minio-interop,s3-gateway/minio-interop";

/// `cargo` arguments of the tests step of `ci`.
const TEST_ARGS: &[&str] = &[
    "test",
    "--workspace",
    "--locked",
    "--features",
    INTEROP_FEATURE,
];

/// Go modules installed by `cargo xtask tools`: (module, binary, the
/// variable that overrides the installed binary).
const GO_TOOLS: &[(&str, &str, &str)] = &[
    ("github.com/minio/minio@latest", "minio", "TESSERA_MINIO"),
    ("github.com/minio/mc@latest", "mc", "TESSERA_MC"),
];

/// Installed tools older than this many days are installed again
/// (`TESSERA_TOOLS_MAX_AGE_DAYS` overrides; `cargo xtask tools --update`
/// reinstalls now).
const TOOLS_MAX_AGE_DAYS: u64 = 30;

/// The MinIO server and mc, the oracle of the interoperability tests:
/// `$TESSERA_MINIO` / `$TESSERA_MC` when set (nothing is installed then),
/// else `target/tools/bin/{minio,mc}`, installed there with `go install`
/// when missing, older than [`TOOLS_MAX_AGE_DAYS`] or when `update`.
/// Returns their absolute paths, which `ci` exports to the tests.
fn tools(update: bool) -> Result<(PathBuf, PathBuf), String> {
    let bin = workspace_root().join("target/tools/bin");
    let max_age_days = match env::var("TESSERA_TOOLS_MAX_AGE_DAYS") {
        Ok(days) => days
            .parse::<u64>()
            .map_err(|_| format!("TESSERA_TOOLS_MAX_AGE_DAYS={days:?} is not a number of days"))?,
        Err(_) => TOOLS_MAX_AGE_DAYS,
    };
    let mut paths = Vec::new();
    for (module, name, var) in GO_TOOLS {
        if let Some(path) = env::var_os(var).filter(|p| !p.is_empty()) {
            let path =
                std::path::absolute(PathBuf::from(path)).map_err(|e| format!("{var}: {e}"))?;
            if !path.is_file() {
                return Err(format!("{var}={} is not a file", path.display()));
            }
            eprintln!(
                "==> {name}: {} (from {var}; not installing)",
                path.display()
            );
            paths.push(path);
            continue;
        }
        let path = bin.join(name);
        match tool_age_days(&path) {
            Some(age) if !update && age < max_age_days => {
                eprintln!("==> {name}: {} (installed {age} days ago)", path.display());
            }
            age => {
                if let Some(age) = age {
                    eprintln!("==> {name}: installed {age} days ago; installing it again");
                }
                go_install(module, name, &bin)?;
            }
        }
        paths.push(path);
    }
    let mc = paths.pop().expect("two tools");
    let minio = paths.pop().expect("two tools");
    for (path, var) in [(&minio, "TESSERA_MINIO"), (&mc, "TESSERA_MC")] {
        eprintln!("    {var}={}", path.display());
    }
    Ok((minio, mc))
}

/// Days since `path` was last written, `None` if it does not exist.
fn tool_age_days(path: &Path) -> Option<u64> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let age = std::time::SystemTime::now()
        .duration_since(modified)
        .unwrap_or_default();
    Some(age.as_secs() / 86_400)
}

/// `go install module` into a staging directory, then moved into `bin`, so
/// an interrupted install never leaves a partial binary behind. Uses the
/// normal Go module and build caches, so a second install is quick.
fn go_install(module: &str, name: &str, bin: &Path) -> Result<(), String> {
    let staging = bin.with_file_name(format!("staging-{name}"));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging)
        .map_err(|e| format!("creating {}: {e}", staging.display()))?;
    let mut go = Command::new("go");
    go.args(["install", module])
        .env("GOBIN", &staging)
        .env("CGO_ENABLED", "0")
        .current_dir(workspace_root());
    run(&format!("go install {module}"), &mut go).map_err(|e| {
        format!("{e}: Go is needed to install {name} (or set the TESSERA_MINIO and TESSERA_MC variables)")
    })?;
    std::fs::create_dir_all(bin).map_err(|e| format!("creating {}: {e}", bin.display()))?;
    let installed = bin.join(name);
    std::fs::rename(staging.join(name), &installed)
        .map_err(|e| format!("moving {name} into {}: {e}", bin.display()))?;
    let _ = std::fs::remove_dir_all(&staging);
    // Name the exact build in the log: `go version -m` prints the module
    // version the binary was built from.
    if let Ok(out) = Command::new("go")
        .arg("version")
        .arg("-m")
        .arg(&installed)
        .output()
    {
        let text = String::from_utf8_lossy(&out.stdout);
        if let Some(line) = text.lines().find(|l| l.trim_start().starts_with("mod")) {
            eprintln!(
                "    {name}: {}",
                line.split_whitespace().collect::<Vec<_>>().join(" ")
            );
        }
    }
    Ok(())
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

/// `tessera-bench harness` with `extra` appended, against the MinIO of
/// `cargo xtask tools`: release builds of the daemon and the load generator.
fn bench_server(extra: &[String]) -> Result<(), String> {
    let (minio, _) = tools(false)?;
    run(
        "build the release binaries",
        cargo().args([
            "build",
            "--release",
            "--locked",
            "-p",
            "daemon",
            "-p",
            "tessera-bench",
        ]),
    )?;
    let mut harness = Command::new(target_dir().join("release/tessera-bench"));
    harness
        .current_dir(workspace_root())
        .arg("harness")
        .args(extra)
        .env("TESSERA_MINIO", &minio);
    run("tessera-bench harness", &mut harness)
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

//! The command line: flags, their checks and defaults, and running the
//! chosen command. Exit codes: 0 success, 1 wrong content or a failed run
//! (setup, harness), 2 bad command line, 3 the run completed but requests
//! failed (counted by kind in the report).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::chunked::PayloadMode;
use crate::client::{Endpoint, Pool, TlsTrust, tls_config};
use crate::compare::{Metric, Side, compare, format_compare, format_round};
use crate::harness;
use crate::record::{self, RunFile};
use crate::s3::{MAX_PART_SIZE, MAX_PARTS, MIN_PART_SIZE, S3, Sse};
use crate::sign::Signer;
use crate::units::{
    MAX_MULTIPART_SIZE, MAX_PUT_SIZE, SizeSpec, fmt_size, parse_duration, parse_size,
};
use crate::workload::{
    MAX_CONCURRENT, MAX_OBJECTS, RunConfig, Shares, Workload, default_objects, format_result,
};

pub const EXIT_OK: u8 = 0;
pub const EXIT_FAILED: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_ERRORS: u8 = 3;

#[derive(Debug, Parser)]
#[command(
    name = "tessera-bench",
    version,
    about = "S3 load generator with verified reads, compare mode and the Tessera vs MinIO harness",
    after_help = "Exit status: 0 success; 1 wrong content or a failed run; 2 bad command line; \
                  3 finished, but some requests failed.\n\nExamples:\n  \
                  tessera-bench put --host 127.0.0.1:9000 --obj-size 16MiB --concurrent 8 --duration 30s\n  \
                  tessera-bench get --obj-size 4KiB..1MiB --concurrent 32 --json get.json\n  \
                  tessera-bench compare --op put --a 127.0.0.1:9000 --b 127.0.0.1:9100 --rounds 5\n  \
                  cargo run --release -p tessera-bench -- harness --quick"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// PUT objects (until --objects are written or --duration ends).
    Put(OpArgs),
    /// GET prepared objects, checking every byte.
    Get(OpArgs),
    /// GET/PUT/DELETE/STAT in the shares of --get/--put/--delete/--stat over
    /// prepared objects.
    Mixed(OpArgs),
    /// DELETE prepared objects.
    Delete(OpArgs),
    /// HEAD prepared objects.
    Stat(OpArgs),
    /// List all --objects keys of a prefix with ListObjectsV2, repeatedly.
    List(OpArgs),
    /// Multipart uploads (--part-size, --part-concurrency parts in flight).
    Multipart(OpArgs),
    /// The same workload against two endpoints in alternating rounds.
    Compare(CompareArgs),
    /// Start Tessera and MinIO on loopback and run the standard suite.
    Harness(HarnessArgs),
    /// Render the tables of docs/benchmarks.md again from the newest run
    /// file of each profile in docs/bench-runs/.
    Doc(DocArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Op {
    Put,
    Get,
    Mixed,
    Delete,
    Stat,
    List,
    Multipart,
}

#[derive(Debug, Args)]
pub struct OpArgs {
    /// S3 endpoints, HOST:PORT or http(s)://HOST:PORT; several (repeated or
    /// comma separated) are used round-robin.
    #[arg(long, value_delimiter = ',', default_value = "127.0.0.1:9000")]
    pub host: Vec<String>,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub work: WorkArgs,
}

#[derive(Debug, Args)]
pub struct ConnArgs {
    /// Use HTTPS for endpoints given without a scheme.
    #[arg(long)]
    pub tls: bool,
    /// Accept any TLS certificate.
    #[arg(long)]
    pub insecure: bool,
    /// PEM file of the certificates (or CA) to trust for HTTPS.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    #[arg(long, env = "AWS_ACCESS_KEY_ID", default_value = "minioadmin")]
    pub access_key: String,
    #[arg(
        long,
        env = "AWS_SECRET_ACCESS_KEY",
        default_value = "minioadmin",
        hide_env_values = true
    )]
    pub secret_key: String,
    #[arg(long, env = "AWS_REGION", default_value = "us-east-1")]
    pub region: String,
}

#[derive(Debug, Args)]
pub struct WorkArgs {
    /// Bucket (created when missing).
    #[arg(long, default_value = "tessera-bench")]
    pub bucket: String,
    /// Key prefix of the run (default: a fresh one per run).
    #[arg(long)]
    pub prefix: Option<String>,
    /// Object size, SIZE or LO..HI (log-uniform); default 1MiB (list: 1KiB).
    #[arg(long, value_name = "SIZE")]
    pub obj_size: Option<String>,
    /// Requests in flight.
    #[arg(long, short = 'c', default_value_t = 8)]
    pub concurrent: usize,
    /// Length of the timed phase (30s, 2m, 1m30s); default 10s unless
    /// --objects bounds a put, multipart or delete run.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// put/multipart: objects to write; get/stat/mixed: objects prepared
    /// first (untimed); delete: objects prepared, then deleted; list: keys.
    #[arg(long, value_name = "N")]
    pub objects: Option<u64>,
    /// Largest total size of the objects prepared by default.
    #[arg(long, default_value = "1GiB", value_name = "SIZE")]
    pub max_prepare: String,
    /// Multipart part size (5MiB to 5GiB).
    #[arg(long, default_value = "16MiB", value_name = "SIZE")]
    pub part_size: String,
    /// Multipart parts in flight per upload.
    #[arg(long, default_value_t = 4)]
    pub part_concurrency: usize,
    /// ListObjectsV2 page size (1-1000).
    #[arg(long, default_value_t = 1000)]
    pub max_keys: u32,
    /// mixed: share of GETs.
    #[arg(long = "get", default_value_t = 45, value_name = "SHARE")]
    pub get_share: u32,
    /// mixed: share of PUTs.
    #[arg(long = "put", default_value_t = 15, value_name = "SHARE")]
    pub put_share: u32,
    /// mixed: share of DELETEs.
    #[arg(long = "delete", default_value_t = 10, value_name = "SHARE")]
    pub delete_share: u32,
    /// mixed: share of HEADs.
    #[arg(long = "stat", default_value_t = 30, value_name = "SHARE")]
    pub stat_share: u32,
    /// Ask for SSE-S3 (x-amz-server-side-encryption: AES256).
    #[arg(long, conflicts_with = "sse_c")]
    pub sse_s3: bool,
    /// Use SSE-C with a key derived from the seed (MinIO refuses SSE-C
    /// over plain HTTP; refusals are counted as errors).
    #[arg(long)]
    pub sse_c: bool,
    /// How PUT and UploadPart bodies go: `unsigned` (UNSIGNED-PAYLOAD),
    /// `signed` (the body's SHA-256), `streaming` (every 64 KiB chunk
    /// signed), `crc32-trailer` / `crc32c-trailer` (aws-chunked with an
    /// unsigned checksum trailer), `minio-go` (as minio-go and mc send:
    /// streaming over HTTP, unsigned over HTTPS), `aws-sdk` (as the
    /// AWS SDKs send: crc32-trailer).
    #[arg(long, value_enum, default_value_t = PayloadMode::Unsigned)]
    pub payload: PayloadMode,
    /// Same as `--payload signed`.
    #[arg(long, conflicts_with = "payload")]
    pub sign_payload: bool,
    /// Seed of object contents and choices (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Longest time one operation may take.
    #[arg(long, default_value = "2m", value_name = "DURATION")]
    pub timeout: String,
    /// Write the result as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress line on stderr.
    #[arg(long)]
    pub no_progress: bool,
    /// Delete the run's objects afterwards (untimed).
    #[arg(long)]
    pub cleanup: bool,
    /// put/multipart: objects read back and verified after the run.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub verify: usize,
    /// Label printed with the results.
    #[arg(long, default_value = "")]
    pub label: String,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Operation to compare.
    #[arg(long, value_enum)]
    pub op: Op,
    /// Endpoints of side A (comma separated).
    #[arg(long, value_delimiter = ',', required = true)]
    pub a: Vec<String>,
    /// Endpoints of side B.
    #[arg(long, value_delimiter = ',', required = true)]
    pub b: Vec<String>,
    #[arg(long, default_value = "A")]
    pub label_a: String,
    #[arg(long, default_value = "B")]
    pub label_b: String,
    /// Server processes of A (several for a cluster's nodes, comma
    /// separated), for CPU and peak memory figures summed over them.
    #[arg(long, value_delimiter = ',')]
    pub pid_a: Vec<u32>,
    #[arg(long, value_delimiter = ',')]
    pub pid_b: Vec<u32>,
    /// Rounds (each runs A then B).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub work: WorkArgs,
}

#[derive(Debug, Args)]
pub struct HarnessArgs {
    /// The five rows of the project's targets (PUT and GET of 16 MiB at
    /// c=8 and of 4 KiB at c=32, a 10,000-key listing at c=8), 7 rounds
    /// of 6 s, fresh servers per row (about 10 minutes).
    #[arg(long, conflicts_with_all = ["quick", "smoke", "cluster"])]
    pub scorecard: bool,
    /// The scorecard's rows on a 4-node cluster of each (4 drives per
    /// node, EC:4), load over all nodes, CPU and memory summed over them;
    /// 5 rounds of 6 s. Needs root (a veth address: MinIO refuses loopback
    /// in a container).
    #[arg(long, conflicts_with_all = ["quick", "smoke"])]
    pub cluster: bool,
    /// 4 drives and a subset of the suite, short rounds (under 3 minutes).
    #[arg(long, conflicts_with = "smoke")]
    pub quick: bool,
    /// The quickest form (a CI check that the harness works).
    #[arg(long)]
    pub smoke: bool,
    /// The tessera binary (default: <workspace>/target/release/tessera).
    #[arg(long, value_name = "PATH")]
    pub tessera: Option<PathBuf>,
    /// The minio binary (default: <workspace>/target/tools/bin/minio).
    #[arg(long, env = "TESSERA_MINIO", value_name = "PATH")]
    pub minio: Option<PathBuf>,
    /// Run Tessera alone (no ratios); wins over --minio and TESSERA_MINIO.
    #[arg(long)]
    pub without_minio: bool,
    /// Rounds per phase (default by profile).
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Seconds per timed run (default by profile).
    #[arg(long, value_name = "DURATION")]
    pub time: Option<String>,
    /// Only the phases whose name contains one of these (comma separated,
    /// e.g. "PUT 16MiB,LIST").
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Layouts: drive counts (4 uses EC:2; others default parity).
    #[arg(long, value_delimiter = ',')]
    pub drives: Option<Vec<usize>>,
    /// Where the servers' drives and logs go: a fresh subdirectory of it
    /// (default $TMPDIR), removed afterwards unless --keep.
    #[arg(long)]
    pub workdir: Option<PathBuf>,
    /// Keep the work directory.
    #[arg(long)]
    pub keep: bool,
    /// Keep the run as a JSON file in the runs directory
    /// (`<date>-<commit>.json`) and render the profile's table in the
    /// document from the newest run of the profile there.
    #[arg(long)]
    pub write_doc: bool,
    #[command(flatten)]
    pub doc: DocArgs,
    /// Write every figure as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Progress lines of every run on stderr.
    #[arg(long)]
    pub progress: bool,
    /// How PUT bodies go, as for `put --payload` (e.g. `minio-go`: each
    /// 64 KiB chunk signed, as mc sends over HTTP).
    #[arg(long, value_enum, default_value_t = PayloadMode::Unsigned)]
    pub payload: PayloadMode,
}

#[derive(Debug, Args)]
pub struct DocArgs {
    /// The document with the tables (default: <workspace>/docs/benchmarks.md).
    #[arg(long, value_name = "FILE")]
    pub doc: Option<PathBuf>,
    /// The run files (default: bench-runs/ beside the document).
    #[arg(long, value_name = "DIR")]
    pub runs: Option<PathBuf>,
}

impl DocArgs {
    /// The document and the runs directory.
    fn paths(&self) -> (PathBuf, PathBuf) {
        let doc = self
            .doc
            .clone()
            .unwrap_or_else(|| harness::workspace_root().join("docs").join("benchmarks.md"));
        let runs = self
            .runs
            .clone()
            .unwrap_or_else(|| record::runs_dir_of(&doc));
        (doc, runs)
    }
}

fn workload_of(op: Op, w: &WorkArgs) -> Result<Workload, String> {
    Ok(match op {
        Op::Put => Workload::Put,
        Op::Get => Workload::Get,
        Op::Delete => Workload::Delete,
        Op::Stat => Workload::Stat,
        Op::List => Workload::List,
        Op::Multipart => Workload::Multipart,
        Op::Mixed => {
            let s = Shares {
                get: w.get_share,
                put: w.put_share,
                delete: w.delete_share,
                stat: w.stat_share,
            };
            if [s.get, s.put, s.delete, s.stat]
                .iter()
                .any(|&x| x > 1_000_000)
            {
                return Err("a mixed share is above 1000000".into());
            }
            if s.get + s.put + s.delete + s.stat == 0 {
                return Err("mixed: all shares are 0".into());
            }
            Workload::Mixed(s)
        }
    })
}

fn check_bucket(b: &str) -> Result<(), String> {
    let ok = (3..=63).contains(&b.len())
        && b.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.')
        && b.as_bytes()[0].is_ascii_alphanumeric()
        && b.as_bytes()[b.len() - 1].is_ascii_alphanumeric();
    if ok {
        Ok(())
    } else {
        Err(format!(
            "bad bucket name {b:?}: 3-63 lowercase letters, digits, '-' or '.'"
        ))
    }
}

fn default_seed() -> u64 {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ u64::from(std::process::id()).rotate_left(40)
}

/// Checks the workload flags and builds the run's configuration.
pub fn run_config(op: Op, w: &WorkArgs, seed: u64) -> Result<RunConfig, String> {
    let workload = workload_of(op, w)?;
    check_bucket(&w.bucket)?;
    if w.concurrent == 0 || w.concurrent > MAX_CONCURRENT {
        return Err(format!("--concurrent must be 1-{MAX_CONCURRENT}"));
    }
    let size = match &w.obj_size {
        Some(s) => SizeSpec::parse(s).map_err(|e| format!("--obj-size: {e}"))?,
        None if op == Op::List => SizeSpec::Fixed(1024),
        None => SizeSpec::Fixed(1 << 20),
    };
    let limit = if op == Op::Multipart {
        MAX_MULTIPART_SIZE
    } else {
        MAX_PUT_SIZE
    };
    if size.max() > limit {
        return Err(format!(
            "--obj-size {size} is above the {} limit of a {}",
            fmt_size(limit),
            if op == Op::Multipart {
                "multipart upload"
            } else {
                "single PUT"
            }
        ));
    }
    let part_size = parse_size(&w.part_size).map_err(|e| format!("--part-size: {e}"))?;
    if op == Op::Multipart {
        if !(MIN_PART_SIZE..=MAX_PART_SIZE).contains(&part_size) {
            return Err("--part-size must be 5MiB-5GiB (S3's limits)".into());
        }
        if size.max().div_ceil(part_size) > MAX_PARTS {
            return Err(format!(
                "--obj-size {size} in parts of {} is more than {MAX_PARTS} parts",
                fmt_size(part_size)
            ));
        }
    }
    if w.part_concurrency == 0 || w.part_concurrency > 64 {
        return Err("--part-concurrency must be 1-64".into());
    }
    if w.max_keys == 0 || w.max_keys > 1000 {
        return Err("--max-keys must be 1-1000".into());
    }
    let timeout = parse_duration(&w.timeout).map_err(|e| format!("--timeout: {e}"))?;
    if timeout < Duration::from_secs(1) || timeout > Duration::from_secs(3600) {
        return Err("--timeout must be 1s-1h".into());
    }
    let duration = match &w.duration {
        Some(d) => {
            let d = parse_duration(d).map_err(|e| format!("--duration: {e}"))?;
            if d.is_zero() {
                return Err("--duration must be above 0".into());
            }
            Some(d)
        }
        None => None,
    };
    if let Some(n) = w.objects
        && (n == 0 || n > MAX_OBJECTS)
    {
        return Err(format!("--objects must be 1-{MAX_OBJECTS}"));
    }
    let max_prepare = parse_size(&w.max_prepare).map_err(|e| format!("--max-prepare: {e}"))?;
    let bounded_by_count = matches!(
        workload,
        Workload::Put | Workload::Multipart | Workload::Delete
    ) && w.objects.is_some();
    let duration = match duration {
        Some(d) => Some(d),
        None if bounded_by_count => None,
        None => Some(Duration::from_secs(10)),
    };
    let objects = match w.objects {
        Some(n) => n,
        None => default_objects(workload, &size, w.concurrent, max_prepare),
    };
    let prefix = match &w.prefix {
        Some(p) => {
            if p.len() > 512 {
                return Err("--prefix is longer than 512 bytes".into());
            }
            p.clone()
        }
        None => format!("tb-{seed:016x}/"),
    };
    Ok(RunConfig {
        workload,
        size,
        concurrent: w.concurrent,
        duration,
        objects,
        bucket: w.bucket.clone(),
        prefix,
        part_size,
        part_concurrency: w.part_concurrency,
        max_keys: w.max_keys,
        timeout,
        cleanup: w.cleanup,
        verify: w.verify.min(1000),
        progress: !w.no_progress,
        label: w.label.clone(),
        skip_prepare: false,
    })
}

/// Builds the client for `hosts`.
pub fn client(
    hosts: &[String],
    c: &ConnArgs,
    w: &WorkArgs,
    seed: u64,
    concurrent: usize,
) -> Result<Arc<S3>, String> {
    if hosts.is_empty() || hosts.len() > 64 {
        return Err("give 1-64 hosts".into());
    }
    let eps = hosts
        .iter()
        .map(|h| Endpoint::parse(h, c.tls))
        .collect::<Result<Vec<_>, _>>()?;
    let any_tls = eps.iter().any(|e| e.tls);
    let tls = if any_tls {
        let trust = match (&c.cacert, c.insecure) {
            (Some(f), _) => TlsTrust::CaFile(f.clone()),
            (None, true) => TlsTrust::Insecure,
            (None, false) => {
                return Err(
                    "HTTPS needs --cacert FILE or --insecure (no system root store is built in)"
                        .into(),
                );
            }
        };
        Some(tls_config(&trust)?)
    } else {
        None
    };
    if c.access_key.is_empty() || c.secret_key.is_empty() {
        return Err("empty access or secret key".into());
    }
    let pool = Pool::new(eps, tls, concurrent * 2 + 8)?;
    let sse = if w.sse_s3 {
        Sse::S3
    } else if w.sse_c {
        Sse::customer_key(seed)
    } else {
        Sse::None
    };
    Ok(Arc::new(S3::new(
        pool,
        Signer::new(&c.access_key, &c.secret_key, &c.region),
        sse,
        if w.sign_payload {
            PayloadMode::Signed
        } else {
            w.payload
        },
        seed,
    )))
}

fn write_json<T: serde::Serialize>(path: &PathBuf, value: &T) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| format!("JSON: {e}"))?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
}

fn usage(msg: String) -> u8 {
    eprintln!("tessera-bench: error: {msg}");
    EXIT_USAGE
}

fn failed(msg: String) -> u8 {
    eprintln!("tessera-bench: FAILED: {msg}");
    EXIT_FAILED
}

/// Runs a parsed command line; returns the exit status.
pub async fn run(cli: Cli) -> u8 {
    match cli.command {
        Command::Put(a) => op(Op::Put, a).await,
        Command::Get(a) => op(Op::Get, a).await,
        Command::Mixed(a) => op(Op::Mixed, a).await,
        Command::Delete(a) => op(Op::Delete, a).await,
        Command::Stat(a) => op(Op::Stat, a).await,
        Command::List(a) => op(Op::List, a).await,
        Command::Multipart(a) => op(Op::Multipart, a).await,
        Command::Compare(a) => compare_cmd(a).await,
        Command::Harness(a) => harness_cmd(a).await,
        Command::Doc(a) => doc_cmd(&a),
    }
}

async fn op(which: Op, a: OpArgs) -> u8 {
    let seed = a.work.seed.unwrap_or_else(default_seed);
    let cfg = match run_config(which, &a.work, seed) {
        Ok(c) => c,
        Err(e) => return usage(e),
    };
    let s3 = match client(&a.host, &a.conn, &a.work, seed, cfg.concurrent) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let result = match crate::workload::run(s3, &cfg, None).await {
        Ok(r) => r,
        Err(e) => return failed(e.to_string()),
    };
    print!("{}", format_result(&result));
    if let Some(p) = &a.work.json
        && let Err(e) = write_json(p, &result)
    {
        return failed(e);
    }
    if result.errors > 0 {
        EXIT_ERRORS
    } else {
        EXIT_OK
    }
}

async fn compare_cmd(a: CompareArgs) -> u8 {
    let seed = a.work.seed.unwrap_or_else(default_seed);
    if a.rounds == 0 || a.rounds > 100 {
        return usage("--rounds must be 1-100".into());
    }
    let cfg = match run_config(a.op, &a.work, seed) {
        Ok(c) => c,
        Err(e) => return usage(e),
    };
    let (sa, sb) = match (
        client(&a.a, &a.conn, &a.work, seed, cfg.concurrent),
        client(&a.b, &a.conn, &a.work, seed, cfg.concurrent),
    ) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => return usage(e),
    };
    let side_a = Side {
        label: a.label_a.clone(),
        s3: sa,
        pids: a.pid_a.clone(),
    };
    let side_b = Side {
        label: a.label_b.clone(),
        s3: sb,
        pids: a.pid_b.clone(),
    };
    let metric = Metric::for_workload(&cfg);
    let result = match compare(&side_a, &side_b, &cfg, a.rounds, |r| {
        println!("{}", format_round(r, metric));
    })
    .await
    {
        Ok(r) => r,
        Err(e) => return failed(e.to_string()),
    };
    print!("{}", format_compare(&result));
    if let Some(p) = &a.work.json
        && let Err(e) = write_json(p, &result)
    {
        return failed(e);
    }
    if result.a.errors + result.b.errors > 0 {
        EXIT_ERRORS
    } else {
        EXIT_OK
    }
}

async fn harness_cmd(a: HarnessArgs) -> u8 {
    let profile = if a.smoke {
        harness::Profile::Smoke
    } else if a.scorecard {
        harness::Profile::Scorecard
    } else if a.cluster {
        harness::Profile::Cluster
    } else if a.quick {
        harness::Profile::Quick
    } else {
        harness::Profile::Full
    };
    if let Some(r) = a.rounds
        && (r == 0 || r > 100)
    {
        return usage("--rounds must be 1-100".into());
    }
    let time = match &a.time {
        Some(t) => match parse_duration(t) {
            Ok(d) if !d.is_zero() => Some(d),
            Ok(_) => return usage("--time must be above 0".into()),
            Err(e) => return usage(format!("--time: {e}")),
        },
        None => None,
    };
    if let Some(d) = &a.drives
        && d.iter().any(|&n| !(4..=16).contains(&n))
    {
        return usage("--drives: each layout must have 4-16 drives".into());
    }
    let target = harness::target_dir();
    let tessera = a
        .tessera
        .clone()
        .unwrap_or_else(|| target.join("release").join("tessera"));
    let minio = if a.without_minio {
        None
    } else {
        Some(
            a.minio
                .clone()
                .unwrap_or_else(|| target.join("tools").join("bin").join("minio")),
        )
    };
    let command_line = std::env::args()
        .skip(1)
        .fold(String::from("tessera-bench"), |mut s, x| {
            s.push(' ');
            s.push_str(&x);
            s
        });
    let opts = harness::Options {
        profile,
        tessera,
        minio,
        rounds: a.rounds,
        time,
        only: a.only.clone(),
        drives: a.drives.clone(),
        workdir: a.workdir.clone(),
        keep: a.keep,
        progress: a.progress,
        payload: a.payload,
        command_line,
    };
    let result = match harness::run(&opts).await {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    let run = RunFile::of_harness(&result, record::Machine::probe(), harness::commit());
    println!("\n{}", record::markdown(&run, None));
    if let Some(p) = &a.json
        && let Err(e) = write_json(p, &result)
    {
        return failed(e);
    }
    if a.write_doc {
        let (doc, runs) = a.doc.paths();
        let written = record::save(&runs, &run)
            .and_then(|file| record::write_doc(&doc, &runs, &[profile]).map(|()| file));
        match written {
            Ok(file) => println!("wrote {} and {}", file.display(), doc.display()),
            Err(e) => return failed(e),
        }
    }
    if !result.failed.is_empty() {
        for f in &result.failed {
            eprintln!("tessera-bench: FAILED: {f}");
        }
        EXIT_FAILED
    } else if result.errors > 0 {
        eprintln!(
            "tessera-bench: {} requests failed (see the tables)",
            result.errors
        );
        EXIT_ERRORS
    } else {
        EXIT_OK
    }
}

fn doc_cmd(a: &DocArgs) -> u8 {
    let (doc, runs) = a.paths();
    let text = match std::fs::read_to_string(&doc) {
        Ok(t) => t,
        Err(e) => return failed(format!("{}: {e}", doc.display())),
    };
    match record::write_doc(&doc, &runs, &record::blocks_in(&text)) {
        Ok(()) => {
            println!("rendered {} from {}", doc.display(), runs.display());
            EXIT_OK
        }
        Err(e) => failed(e),
    }
}

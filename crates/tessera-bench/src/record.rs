//! The run archive: a harness run kept as a JSON file in `docs/bench-runs/`
//! (the machine, date, commit and command, and for every row its per-round
//! figures, medians and ratios), the markdown table rendered from such a
//! file, and the blocks of `docs/benchmarks.md` generated from the newest
//! file of each profile. A table in the document is only ever rendered
//! from a file, so a regression shows as a diff of both.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::compare::{CompareResult, Metric, SideSummary, range};
use crate::harness::{HarnessResult, Profile};
use crate::workload::RunResult;

/// Format version of a run file.
pub const SCHEMA: u32 = 1;

/// What `source` says of a run the harness measured and wrote itself.
pub const MEASURED: &str = "tessera-bench harness";

/// One run of the harness, as archived.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunFile {
    pub schema: u32,
    /// [`MEASURED`], or where the figures were taken from (a run converted
    /// from a document keeps only what the document held).
    pub source: String,
    pub profile: Profile,
    /// `YYYY-MM-DD HH:MM UTC`, the end of the run.
    pub date: String,
    /// Short commit of the workspace the run started from.
    pub commit: Option<String>,
    pub command: String,
    pub machine: Machine,
    /// The Tessera binary (path, build time, workspace state).
    pub tessera: String,
    /// The MinIO binary; `None` when Tessera ran alone.
    pub minio: Option<String>,
    /// Wall time of the whole run, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_s: Option<f64>,
    /// What a reader of the table needs to know beside the figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub layouts: Vec<LayoutRun>,
}

/// The machine a run measured.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Machine {
    /// `model name` of /proc/cpuinfo.
    pub cpu: String,
    /// `cpu family` of /proc/cpuinfo (26 is AMD Zen 5).
    pub cpu_family: Option<u32>,
    /// The instruction-set extensions the kernels use that the CPU reports,
    /// as /proc/cpuinfo names them.
    pub isa: Vec<String>,
    /// Kernel release.
    pub kernel: String,
    pub cores: usize,
    pub memory_gib: Option<f64>,
}

/// The /proc/cpuinfo flags [`Machine::isa`] keeps, in this order.
const ISA_FLAGS: [&str; 10] = [
    "avx2",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512vbmi",
    "avx512ifma",
    "gfni",
    "vaes",
    "vpclmulqdq",
    "sha_ni",
];

impl Machine {
    /// This machine, from /proc.
    pub fn probe() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            cpuinfo
                .lines()
                .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        };
        let flags = field("flags").unwrap_or_default();
        let flags: Vec<&str> = flags.split_whitespace().collect();
        Machine {
            cpu: field("model name").unwrap_or_else(|| "unknown CPU".into()),
            cpu_family: field("cpu family").and_then(|f| f.parse().ok()),
            isa: ISA_FLAGS
                .iter()
                .filter(|f| flags.contains(f))
                .map(|f| (*f).to_owned())
                .collect(),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_owned())
                .unwrap_or_default(),
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            memory_gib: std::fs::read_to_string("/proc/meminfo")
                .ok()
                .and_then(|s| crate::procstat::parse_status_kb(&s, "MemTotal"))
                .map(|kb| (kb as f64 / (1u64 << 20) as f64).round()),
        }
    }

    /// One line: CPU, cores, memory, kernel, extensions.
    pub fn summary(&self) -> String {
        let mut s = self.cpu.clone();
        if let Some(f) = self.cpu_family {
            s.push_str(&format!(" (CPU family {f})"));
        }
        s.push_str(&format!(", {} cores", self.cores));
        if let Some(m) = self.memory_gib {
            s.push_str(&format!(", {m:.0} GiB RAM"));
        }
        s.push_str(&format!(", Linux {}", self.kernel));
        if !self.isa.is_empty() {
            s.push_str(&format!("; {}", self.isa.join(" ")));
        }
        s
    }
}

/// One layout (drive count) of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LayoutRun {
    pub drives: usize,
    pub parity: String,
    /// Alternating rounds per row, unless a row says otherwise.
    pub rounds: usize,
    pub seconds_per_run: f64,
    pub rows: Vec<Row>,
}

/// One row (phase): Tessera as A, MinIO as B.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Row {
    pub name: String,
    /// `None` when the row failed before measuring anything.
    pub metric: Option<Metric>,
    /// Rounds of this row, when not the layout's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<usize>,
    /// The `tessera-bench compare` arguments of the row, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// Why the row has no figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Medians over the rounds.
    pub tessera: Figures,
    pub minio: Option<Figures>,
    /// Medians and spread of the per-round ratios, Tessera over MinIO.
    pub ratio: Spread,
    pub cpu_ratio: Spread,
    pub p99_ratio: Spread,
    /// Every round; empty for a run converted from a document.
    pub per_round: Vec<RoundRun>,
}

/// One server's figures (a round's, or the medians over the rounds);
/// `None` where not measured or not known.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Figures {
    /// The row's metric (MiB/s, obj/s or lists/s).
    pub metric: Option<f64>,
    /// The metric per second of server CPU.
    pub per_cpu: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub peak_rss_mib: Option<f64>,
    pub errors: Option<u64>,
}

/// A median and the smallest and largest of the values it is taken from.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Spread {
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// One alternating round of a row.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RoundRun {
    pub round: usize,
    pub tessera: Figures,
    pub minio: Option<Figures>,
    pub ratio: Option<f64>,
    pub cpu_ratio: Option<f64>,
    pub p99_ratio: Option<f64>,
}

impl Figures {
    fn of_summary(s: &SideSummary) -> Figures {
        Figures {
            metric: Some(s.metric),
            per_cpu: s.per_cpu,
            p50_ms: Some(s.p50_ms),
            p99_ms: Some(s.p99_ms),
            peak_rss_mib: s.peak_rss_mib,
            errors: Some(s.errors),
        }
    }

    fn of_run(r: &RunResult, metric: Metric) -> Figures {
        Figures {
            metric: Some(metric.of(r)),
            per_cpu: metric.per_cpu(r),
            p50_ms: Some(r.latency.p50_ms),
            p99_ms: Some(r.latency.p99_ms),
            peak_rss_mib: r.server.map(|u| u.peak_rss_mib),
            errors: Some(r.errors),
        }
    }
}

fn spread(median: Option<f64>, values: impl IntoIterator<Item = Option<f64>>) -> Spread {
    let (min, max) = range(values).unzip();
    Spread { median, min, max }
}

fn row_of(name: &str, c: &CompareResult, layout_rounds: usize, with_minio: bool) -> Row {
    let m = c.metric;
    Row {
        name: name.to_owned(),
        metric: Some(m),
        rounds: (c.rounds.len() != layout_rounds).then_some(c.rounds.len()),
        arguments: None,
        error: None,
        tessera: Figures::of_summary(&c.a),
        minio: with_minio.then(|| Figures::of_summary(&c.b)),
        ratio: spread(c.median_ratio, c.rounds.iter().map(|r| r.ratio)),
        cpu_ratio: spread(c.median_cpu_ratio, c.rounds.iter().map(|r| r.cpu_ratio)),
        p99_ratio: spread(c.median_p99_ratio, c.rounds.iter().map(|r| r.p99_ratio)),
        per_round: c
            .rounds
            .iter()
            .map(|r| RoundRun {
                round: r.round,
                tessera: Figures::of_run(&r.a, m),
                minio: r.b.as_ref().map(|b| Figures::of_run(b, m)),
                ratio: r.ratio,
                cpu_ratio: r.cpu_ratio,
                p99_ratio: r.p99_ratio,
            })
            .collect(),
    }
}

impl RunFile {
    /// The archived form of a harness run.
    pub fn of_harness(h: &HarnessResult, machine: Machine, commit: Option<String>) -> RunFile {
        let with_minio = h.minio.is_some();
        RunFile {
            schema: SCHEMA,
            source: MEASURED.into(),
            profile: h.profile,
            date: h.date.clone(),
            commit,
            command: h.command.clone(),
            machine,
            tessera: h.tessera.clone(),
            minio: h.minio.clone(),
            total_s: Some(h.total_s),
            notes: Vec::new(),
            layouts: h
                .layouts
                .iter()
                .map(|l| LayoutRun {
                    drives: l.drives,
                    parity: l.parity.clone(),
                    rounds: l.rounds,
                    seconds_per_run: l.seconds_per_run,
                    rows: l
                        .phases
                        .iter()
                        .map(|p| match &p.result {
                            Some(c) => row_of(&p.phase.name, c, l.rounds, with_minio),
                            None => Row {
                                name: p.phase.name.clone(),
                                metric: None,
                                rounds: None,
                                arguments: None,
                                error: Some(p.error.clone().unwrap_or_else(|| "failed".into())),
                                tessera: Figures::default(),
                                minio: None,
                                ratio: Spread::default(),
                                cpu_ratio: Spread::default(),
                                p99_ratio: Spread::default(),
                                per_round: Vec::new(),
                            },
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// The file name's stem: `<date>-<short commit>`.
    pub fn stem(&self) -> String {
        let day: String = self.date.chars().take(10).collect();
        format!("{day}-{}", self.commit.as_deref().unwrap_or("unknown"))
    }

    /// The file's text: pretty JSON, one trailing newline.
    pub fn to_json(&self) -> Result<String, String> {
        serde_json::to_string_pretty(self)
            .map(|s| s + "\n")
            .map_err(|e| format!("JSON: {e}"))
    }
}

/// Writes `run` into `dir` as `<stem>.json`, or `<stem>-2.json` and so on
/// when a run of the same day and commit is there already.
pub fn save(dir: &Path, run: &RunFile) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let stem = run.stem();
    let path = (1..)
        .map(|n| {
            dir.join(if n == 1 {
                format!("{stem}.json")
            } else {
                format!("{stem}-{n}.json")
            })
        })
        .find(|p| !p.exists())
        .unwrap_or_else(|| dir.join(format!("{stem}.json")));
    std::fs::write(&path, run.to_json()?).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// Every run file of `dir` (`*.json`), by file name; none when `dir` is
/// missing. A file that does not parse is an error naming it.
pub fn load_all(dir: &Path) -> Result<Vec<(PathBuf, RunFile)>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            let run = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?;
            Ok((p, run))
        })
        .collect()
}

/// The newest run of `profile`: the latest date, then the last file name.
pub fn newest(runs: &[(PathBuf, RunFile)], profile: Profile) -> Option<&(PathBuf, RunFile)> {
    runs.iter()
        .filter(|(_, r)| r.profile == profile)
        .max_by(|(pa, a), (pb, b)| a.date.cmp(&b.date).then_with(|| pa.cmp(pb)))
}

fn fmt_metric(v: Option<f64>, m: Metric) -> String {
    match v {
        Some(v) if v >= 100.0 => format!("{v:.0} {}", m.name()),
        Some(v) => format!("{v:.1} {}", m.name()),
        None => "-".into(),
    }
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "-".into(),
    }
}

/// `1.81x`, with the rounds' spread when known: `1.81x (1.61x-1.96x)`.
fn fmt_spread(s: &Spread) -> String {
    match (s.median, s.min, s.max) {
        (Some(m), Some(lo), Some(hi)) if lo < hi => format!("{m:.2}x ({lo:.2}x-{hi:.2}x)"),
        (Some(m), _, _) if m.is_finite() => format!("{m:.2}x"),
        _ => "-".into(),
    }
}

/// `s` as inline code, fenced so that backticks inside it stay text.
fn code(s: &str) -> String {
    if s.contains('`') {
        format!("`` {s} ``")
    } else {
        format!("`{s}`")
    }
}

fn pair(a: String, b: Option<String>) -> String {
    format!("{a} / {}", b.unwrap_or_else(|| "-".into()))
}

/// The markdown table of a run: a heading line per layout, a row per
/// phase. `file` names the run file it was rendered from.
pub fn markdown(run: &RunFile, file: Option<&str>) -> String {
    let mut s = format!("Run {} ({} profile)", run.date, run.profile.name());
    if let Some(c) = &run.commit {
        s.push_str(&format!(" at `{c}`"));
    }
    if let Some(t) = run.total_s {
        s.push_str(&format!(", {t:.0} s in all"));
    }
    s.push_str(".\n\n");
    if let Some(f) = file {
        s.push_str(&format!(
            "Rendered by `tessera-bench doc` from [{f}]({f}): edit the run file, not this table.\n\n"
        ));
    }
    if run.source != MEASURED {
        s.push_str(&format!("Source: {}.\n\n", run.source));
    }
    s.push_str(&format!("Command: {}\n\n", code(&run.command)));
    s.push_str(&format!("Machine: {}\n\n", run.machine.summary()));
    s.push_str(&format!("Tessera: {}\n\n", code(&run.tessera)));
    match &run.minio {
        Some(m) => s.push_str(&format!("MinIO: {}\n\n", code(m))),
        None => s.push_str("MinIO: not run (--without-minio)\n\n"),
    }
    for n in &run.notes {
        s.push_str(&format!("{n}\n\n"));
    }
    for l in &run.layouts {
        s.push_str(&format!(
            "#### {} drives, parity {}: medians of {} alternating rounds ({:.1} s per run)\n\n",
            l.drives, l.parity, l.rounds, l.seconds_per_run
        ));
        s.push_str(
            "| workload | Tessera | MinIO | ratio | Tessera per CPU-s | MinIO per CPU-s | ratio | \
             p50 ms T / M | p99 ms T / M | p99 ratio | peak RSS MiB T / M | errors T / M |\n",
        );
        s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for r in &l.rows {
            let name = match r.rounds {
                Some(n) => format!("{} ({n} rounds)", r.name),
                None => r.name.clone(),
            };
            let (Some(m), None) = (r.metric, &r.error) else {
                let e: String = r
                    .error
                    .as_deref()
                    .unwrap_or("failed")
                    .chars()
                    .take(300)
                    .collect();
                s.push_str(&format!(
                    "| {name} | FAILED: {} | | | | | | | | | | |\n",
                    e.replace('|', "/")
                ));
                continue;
            };
            let (t, b) = (&r.tessera, r.minio.as_ref());
            let side = |f: &dyn Fn(&Figures) -> String| b.map(f);
            s.push_str(&format!(
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                fmt_metric(t.metric, m),
                side(&|x| fmt_metric(x.metric, m)).unwrap_or_else(|| "-".into()),
                fmt_spread(&r.ratio),
                fmt_opt(t.per_cpu, 1),
                side(&|x| fmt_opt(x.per_cpu, 1)).unwrap_or_else(|| "-".into()),
                fmt_spread(&r.cpu_ratio),
                pair(fmt_opt(t.p50_ms, 1), side(&|x| fmt_opt(x.p50_ms, 1))),
                pair(fmt_opt(t.p99_ms, 1), side(&|x| fmt_opt(x.p99_ms, 1))),
                fmt_spread(&r.p99_ratio),
                pair(
                    fmt_opt(t.peak_rss_mib, 0),
                    side(&|x| fmt_opt(x.peak_rss_mib, 0))
                ),
                pair(
                    t.errors.map_or("-".into(), |e| e.to_string()),
                    side(&|x| x.errors.map_or("-".into(), |e| e.to_string()))
                ),
            ));
        }
        s.push('\n');
    }
    s.push_str(
        "Ratios are Tessera over MinIO, medians of the per-round ratios (in brackets the \
         smallest and largest round): above 1 Tessera is faster or does more per CPU-second; \
         for p99 latency below 1 is better. \"per CPU-s\" is the metric's unit per second of \
         server CPU (utime + stime) during the timed part of the run; peak RSS is the largest \
         VmHWM/VmRSS over the rounds; \"-\" is a figure not measured or not recorded.\n",
    );
    s
}

/// The heading of the server section, under which a profile's block goes
/// when the document has no markers for it yet.
pub const SECTION: &str = "## Server: Tessera vs MinIO (tessera-bench)";

fn markers(profile: Profile) -> (String, String) {
    (
        format!("<!-- tessera-bench harness {}: begin -->", profile.name()),
        format!("<!-- tessera-bench harness {}: end -->", profile.name()),
    )
}

/// Whether `doc` has the block of `profile`.
pub fn has_block(doc: &str, profile: Profile) -> bool {
    doc.contains(&markers(profile).0)
}

/// The document with the block of `profile` replaced or added: between its
/// markers, else at the end of the server section (made when missing).
pub fn splice_doc(old: &str, profile: Profile, text: &str) -> String {
    let (begin, end) = markers(profile);
    let block = format!("{begin}\n{}\n{end}", text.trim_end());
    if let (Some(b), Some(e)) = (old.find(&begin), old.find(&end))
        && e > b
    {
        return format!("{}{block}{}", &old[..b], &old[e + end.len()..]);
    }
    match old.find(SECTION) {
        Some(i) => {
            let after = i + SECTION.len();
            let next = old[after..]
                .find("\n## ")
                .map_or(old.len(), |j| after + j + 1);
            let head = old[..next].trim_end();
            let tail = &old[next..];
            if tail.is_empty() {
                format!("{head}\n\n{block}\n")
            } else {
                format!("{head}\n\n{block}\n\n{tail}")
            }
        }
        None if old.trim().is_empty() => format!("{SECTION}\n\n{block}\n"),
        None => format!("{}\n\n{SECTION}\n\n{block}\n", old.trim_end()),
    }
}

/// The document with the block of each of `profiles` rendered from the
/// newest run of that profile in `runs` (`runs_name` is how the document
/// links to the runs' directory, e.g. `bench-runs`). A profile without a
/// run keeps its block as it is.
pub fn regenerate(
    doc: &str,
    runs: &[(PathBuf, RunFile)],
    runs_name: &str,
    profiles: &[Profile],
) -> String {
    profiles
        .iter()
        .fold(doc.to_owned(), |text, &p| match newest(runs, p) {
            Some((path, run)) => {
                let file = path
                    .file_name()
                    .map_or(String::new(), |f| f.to_string_lossy().into_owned());
                splice_doc(
                    &text,
                    p,
                    &markdown(run, Some(&format!("{runs_name}/{file}"))),
                )
            }
            None => text,
        })
}

/// The profiles whose blocks `doc` has.
pub fn blocks_in(doc: &str) -> Vec<Profile> {
    Profile::ALL
        .into_iter()
        .filter(|&p| has_block(doc, p))
        .collect()
}

/// Regenerates the blocks of `profiles` in the document at `doc` (created
/// when missing) from the run files of `runs_dir`.
pub fn write_doc(doc: &Path, runs_dir: &Path, profiles: &[Profile]) -> Result<(), String> {
    let old = match std::fs::read_to_string(doc) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("{}: {e}", doc.display())),
    };
    let runs = load_all(runs_dir)?;
    let name = runs_dir
        .file_name()
        .map_or_else(|| "bench-runs".into(), |n| n.to_string_lossy().into_owned());
    let new = regenerate(&old, &runs, &name, profiles);
    if new != old {
        std::fs::write(doc, new).map_err(|e| format!("{}: {e}", doc.display()))?;
    }
    Ok(())
}

/// Where `--write-doc` keeps run files: `bench-runs/` beside the document.
pub fn runs_dir_of(doc: &Path) -> PathBuf {
    doc.parent().unwrap_or(Path::new(".")).join("bench-runs")
}

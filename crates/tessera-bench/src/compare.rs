//! Compare mode: one workload against two endpoints in alternating rounds
//! (A B, then B A, and so on), fresh object names every round, each
//! round's figures and ratio, and the medians.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::hist::median;
use crate::procstat::Probe;
use crate::s3::S3;
use crate::workload::{RunConfig, RunError, RunResult, Workload, run};

/// One side of a comparison.
pub struct Side {
    pub label: String,
    pub s3: Arc<S3>,
    /// The server's processes (a cluster's nodes), for CPU and memory
    /// figures summed over them; empty: none measured.
    pub pids: Vec<u32>,
}

/// The figure a comparison ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Metric {
    #[serde(rename = "MiB/s")]
    MibS,
    #[serde(rename = "obj/s")]
    ObjS,
    /// Complete listings per second.
    #[serde(rename = "lists/s")]
    ListS,
}

impl Metric {
    /// MiB/s for data workloads of objects of 1 MiB and more, otherwise
    /// operations per second (small objects, stat, delete, list).
    pub fn for_workload(cfg: &RunConfig) -> Metric {
        match cfg.workload {
            Workload::Put | Workload::Get | Workload::Multipart | Workload::Mixed(_)
                if cfg.size.mean() >= 1 << 20 =>
            {
                Metric::MibS
            }
            Workload::List => Metric::ListS,
            _ => Metric::ObjS,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::MibS => "MiB/s",
            Metric::ObjS => "obj/s",
            Metric::ListS => "lists/s",
        }
    }

    pub fn of(self, r: &RunResult) -> f64 {
        match self {
            Metric::MibS => r.mib_s,
            Metric::ObjS | Metric::ListS => r.obj_s,
        }
    }

    /// Per server CPU-second, in the same unit.
    pub fn per_cpu(self, r: &RunResult) -> Option<f64> {
        let u = r.server?;
        if u.cpu_seconds <= 0.0 {
            return None;
        }
        Some(match self {
            Metric::MibS => u.mib_per_cpu_s,
            Metric::ObjS | Metric::ListS => u.ops_per_cpu_s,
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Round {
    pub round: usize,
    pub a: RunResult,
    /// `None` when A runs alone.
    pub b: Option<RunResult>,
    /// A's metric over B's.
    pub ratio: Option<f64>,
    /// A's per-CPU figure over B's.
    pub cpu_ratio: Option<f64>,
    /// A's p99 latency over B's (lower is better for A).
    pub p99_ratio: Option<f64>,
}

/// Medians over the rounds of one side.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SideSummary {
    pub label: String,
    pub metric: f64,
    pub mib_s: f64,
    pub obj_s: f64,
    pub per_cpu: Option<f64>,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Largest peak RSS seen in any round.
    pub peak_rss_mib: Option<f64>,
    pub errors: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompareResult {
    pub workload: String,
    pub obj_size: String,
    pub concurrent: usize,
    pub metric: Metric,
    pub rounds: Vec<Round>,
    pub a: SideSummary,
    pub b: SideSummary,
    /// Median of the per-round ratios (A over B).
    pub median_ratio: Option<f64>,
    pub median_cpu_ratio: Option<f64>,
    pub median_p99_ratio: Option<f64>,
}

fn summarize(label: &str, runs: &[&RunResult], metric: Metric) -> SideSummary {
    let m = |f: &dyn Fn(&RunResult) -> f64| {
        median(&runs.iter().map(|r| f(r)).collect::<Vec<_>>()).unwrap_or(0.0)
    };
    let cpu: Vec<f64> = runs.iter().filter_map(|r| metric.per_cpu(r)).collect();
    let rss = runs
        .iter()
        .filter_map(|r| r.server.map(|s| s.peak_rss_mib))
        .fold(None, |acc: Option<f64>, x| {
            Some(acc.map_or(x, |a| a.max(x)))
        });
    SideSummary {
        label: label.to_owned(),
        metric: m(&|r| metric.of(r)),
        mib_s: m(&|r| r.mib_s),
        obj_s: m(&|r| r.obj_s),
        per_cpu: median(&cpu),
        p50_ms: m(&|r| r.latency.p50_ms),
        p99_ms: m(&|r| r.latency.p99_ms),
        max_ms: runs.iter().map(|r| r.latency.max_ms).fold(0.0, f64::max),
        peak_rss_mib: rss,
        errors: runs.iter().map(|r| r.errors).sum(),
    }
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0 && a.is_finite()).then(|| a / b)
}

/// Whether side A runs before side B in round `round` (from 1).
fn a_goes_first(round: usize) -> bool {
    round % 2 == 1
}

/// Runs `rounds` alternating rounds. Each run gets the prefix
/// `{base}r{round}-{a|b}/`; a list workload prepares its keys once per
/// side (`{base}list-{a|b}/`, first round, untimed) and lists them in every
/// round, since listing does not change them.
pub async fn compare(
    a: &Side,
    b: &Side,
    template: &RunConfig,
    rounds: usize,
    mut on_round: impl FnMut(&Round),
) -> Result<CompareResult, RunError> {
    let metric = Metric::for_workload(template);
    let base = template.prefix.clone();
    let mut out = Vec::with_capacity(rounds);
    let mut probe_a = (!a.pids.is_empty()).then(|| Probe::new(a.pids.clone()));
    let mut probe_b = (!b.pids.is_empty()).then(|| Probe::new(b.pids.clone()));
    for round in 1..=rounds {
        // The side that goes first alternates (A B, B A, A B, ...): a run
        // right after the other side's differs from one after its own. One
        // binary against itself, 16 MiB PUTs with cleanup and A always
        // first, gives the second slot up to 1.12x the MiB/s (`compare`
        // with the same endpoint as A and B shows it).
        let (ra, rb) = if a_goes_first(round) {
            let ra = run_side(a, "a", probe_a.as_mut(), template, &base, (round, rounds)).await?;
            let rb = run_side(b, "b", probe_b.as_mut(), template, &base, (round, rounds)).await?;
            (ra, rb)
        } else {
            let rb = run_side(b, "b", probe_b.as_mut(), template, &base, (round, rounds)).await?;
            let ra = run_side(a, "a", probe_a.as_mut(), template, &base, (round, rounds)).await?;
            (ra, rb)
        };
        let cpu_ratio = match (metric.per_cpu(&ra), metric.per_cpu(&rb)) {
            (Some(x), Some(y)) => ratio(x, y),
            _ => None,
        };
        let r = Round {
            round,
            ratio: ratio(metric.of(&ra), metric.of(&rb)),
            cpu_ratio,
            p99_ratio: ratio(ra.latency.p99_ms, rb.latency.p99_ms),
            a: ra,
            b: Some(rb),
        };
        on_round(&r);
        out.push(r);
    }
    let ra: Vec<&RunResult> = out.iter().map(|r| &r.a).collect();
    let rb: Vec<&RunResult> = out.iter().filter_map(|r| r.b.as_ref()).collect();
    let cpu: Vec<f64> = out.iter().filter_map(|r| r.cpu_ratio).collect();
    let ratios: Vec<f64> = out.iter().filter_map(|r| r.ratio).collect();
    let p99: Vec<f64> = out.iter().filter_map(|r| r.p99_ratio).collect();
    Ok(CompareResult {
        workload: template.workload.to_string(),
        obj_size: template.size.to_string(),
        concurrent: template.concurrent,
        metric,
        a: summarize(&a.label, &ra, metric),
        b: summarize(&b.label, &rb, metric),
        median_ratio: median(&ratios),
        median_cpu_ratio: median(&cpu),
        median_p99_ratio: median(&p99),
        rounds: out,
    })
}

async fn run_side(
    side: &Side,
    tag: &str,
    probe: Option<&mut Probe>,
    template: &RunConfig,
    base: &str,
    (round, rounds): (usize, usize),
) -> Result<RunResult, RunError> {
    let mut cfg = template.clone();
    cfg.label = format!("{} r{round}", side.label);
    if cfg.workload == Workload::List {
        cfg.prefix = format!("{base}list-{tag}/");
        cfg.skip_prepare = round > 1;
        // The keys serve every round: deleted (with --cleanup) after the last.
        cfg.cleanup = template.cleanup && round == rounds;
    } else {
        cfg.prefix = format!("{base}r{round}-{tag}/");
    }
    run(side.s3.clone(), &cfg, probe)
        .await
        .map_err(|RunError::Fatal(m)| RunError::Fatal(format!("{}: {m}", side.label)))
}

pub fn side_line(r: &RunResult, metric: Metric) -> String {
    let mut s = format!(
        "{:>10.1} {}  p50 {:>8.2} ms  p99 {:>8.2} ms  errors {}",
        metric.of(r),
        metric.name(),
        r.latency.p50_ms,
        r.latency.p99_ms,
        r.errors
    );
    if let (Some(u), Some(pc)) = (r.server, metric.per_cpu(r)) {
        s.push_str(&format!(
            "  cpu {:.2}s ({:.1} {}/CPU-s)  rss {:.0} MiB",
            u.cpu_seconds,
            pc,
            metric.name().trim_end_matches("/s"),
            u.peak_rss_mib
        ));
    }
    s
}

/// One round, as printed while the comparison runs.
pub fn format_round(r: &Round, metric: Metric) -> String {
    let mut s = format!(
        "round {}:\n  {:<12} {}",
        r.round,
        r.a.label,
        side_line(&r.a, metric)
    );
    if let Some(b) = &r.b {
        s.push_str(&format!("\n  {:<12} {}", b.label, side_line(b, metric)));
    }
    if let Some(x) = r.ratio {
        s.push_str(&format!("\n  ratio {x:.2}x"));
    }
    if let Some(c) = r.cpu_ratio {
        s.push_str(&format!("  per CPU-s {c:.2}x"));
    }
    if let Some(p) = r.p99_ratio {
        s.push_str(&format!("  p99 {p:.2}x"));
    }
    s
}

/// Runs A alone for `rounds` rounds (no ratios): the harness without
/// MinIO.
pub async fn single(
    a: &Side,
    template: &RunConfig,
    rounds: usize,
    mut on_round: impl FnMut(&Round),
) -> Result<CompareResult, RunError> {
    let metric = Metric::for_workload(template);
    let base = template.prefix.clone();
    let mut probe = (!a.pids.is_empty()).then(|| Probe::new(a.pids.clone()));
    let mut out = Vec::with_capacity(rounds);
    for round in 1..=rounds {
        let ra = run_side(a, "a", probe.as_mut(), template, &base, (round, rounds)).await?;
        let r = Round {
            round,
            a: ra,
            b: None,
            ratio: None,
            cpu_ratio: None,
            p99_ratio: None,
        };
        on_round(&r);
        out.push(r);
    }
    let ra: Vec<&RunResult> = out.iter().map(|r| &r.a).collect();
    Ok(CompareResult {
        workload: template.workload.to_string(),
        obj_size: template.size.to_string(),
        concurrent: template.concurrent,
        metric,
        a: summarize(&a.label, &ra, metric),
        b: SideSummary::default(),
        median_ratio: None,
        median_cpu_ratio: None,
        median_p99_ratio: None,
        rounds: out,
    })
}

/// The final summary.
pub fn format_compare(c: &CompareResult) -> String {
    let m = c.metric.name();
    let mut s = format!(
        "{} {} c={}, {} rounds, medians:\n",
        c.workload,
        c.obj_size,
        c.concurrent,
        c.rounds.len()
    );
    for side in [&c.a, &c.b].into_iter().filter(|s| !s.label.is_empty()) {
        s.push_str(&format!(
            "  {:<12} {:>10.1} {m}  p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms  errors {}",
            side.label, side.metric, side.p50_ms, side.p99_ms, side.max_ms, side.errors
        ));
        if let Some(pc) = side.per_cpu {
            s.push_str(&format!("  {pc:.1} per CPU-s"));
        }
        if let Some(rss) = side.peak_rss_mib {
            s.push_str(&format!("  peak RSS {rss:.0} MiB"));
        }
        s.push('\n');
    }
    if let Some(r) = c.median_ratio {
        s.push_str(&format!(
            "  median ratio {} / {}: {r:.2}x ({m})",
            c.a.label, c.b.label
        ));
        if let Some(r) = c.median_cpu_ratio {
            s.push_str(&format!(", {r:.2}x per server CPU-second"));
        }
        if let Some(r) = c.median_p99_ratio {
            s.push_str(&format!(", p99 latency {r:.2}x"));
        }
        s.push('\n');
    }
    // The spread of the rounds: a median is only as telling as the noise
    // around it.
    if let Some((lo, hi)) = range(c.rounds.iter().map(|r| r.ratio)) {
        s.push_str(&format!("  rounds' ratios: {lo:.2}x-{hi:.2}x ({m})"));
        if let Some((lo, hi)) = range(c.rounds.iter().map(|r| r.cpu_ratio)) {
            s.push_str(&format!(", {lo:.2}x-{hi:.2}x per server CPU-second"));
        }
        s.push('\n');
    }
    s
}

/// The smallest and the largest of the values there are.
pub(crate) fn range(values: impl IntoIterator<Item = Option<f64>>) -> Option<(f64, f64)> {
    values.into_iter().flatten().fold(None, |acc, v| {
        Some(match acc {
            None => (v, v),
            Some((lo, hi)) => (lo.min(v), hi.max(v)),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::{a_goes_first, range};

    #[test]
    fn the_rounds_spread_is_their_smallest_and_largest_ratio() {
        assert_eq!(
            range([Some(1.9), None, Some(2.3), Some(1.7)]),
            Some((1.7, 2.3))
        );
        assert_eq!(range([Some(1.0)]), Some((1.0, 1.0)));
        assert_eq!(range([None, None]), None);
        assert_eq!(range(std::iter::empty()), None);
    }

    #[test]
    fn each_side_goes_first_in_every_other_round() {
        let order: Vec<bool> = (1..=6).map(a_goes_first).collect();
        assert_eq!(order, [true, false, true, false, true, false]);
    }
}

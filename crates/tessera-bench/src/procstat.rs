//! CPU time and resident memory of a server process, from /proc.
//!
//! CPU seconds are `utime + stime` of `/proc/PID/stat` (fields 14 and 15,
//! in clock ticks; `getconf CLK_TCK`, 100 on Linux). Peak RSS: the probe
//! resets the kernel's high-water mark (`echo 5 > /proc/PID/clear_refs`)
//! when the phase starts, samples `VmRSS` every 50 ms and takes the larger
//! of the samples and `VmHWM` at the end; when the reset is refused (not
//! root and not the owner) the samples alone count.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

/// Clock ticks per second.
pub fn clock_ticks() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|t| *t > 0.0)
            .unwrap_or(100.0)
    })
}

/// Parses `utime + stime` (ticks) out of a `/proc/PID/stat` line.
pub fn parse_stat_ticks(stat: &str) -> Option<u64> {
    // The command name (field 2) may hold spaces and parentheses: fields
    // are counted after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); utime is field 14, stime 15.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// CPU seconds used by process `pid` so far.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(parse_stat_ticks(&s)? as f64 / clock_ticks())
}

/// A `kB` field (`VmRSS`, `VmHWM`) of `/proc/PID/status`, in bytes.
pub fn status_bytes(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_status_kb(&s, field).map(|kb| kb * 1024)
}

pub fn parse_status_kb(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let v = l.strip_prefix(field)?.strip_prefix(':')?;
        v.split_whitespace().next()?.parse().ok()
    })
}

/// Resets the peak RSS of `pid`; false when the kernel refused.
pub fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// What a probe measured over one phase.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub cpu_seconds: f64,
    pub peak_rss_bytes: u64,
}

/// Measures a server over a phase, `start` ... `stop`: one process, or
/// the processes of a cluster's nodes, whose CPU seconds and peak RSS are
/// summed (the peaks may fall at different instants: the sum bounds the
/// memory the nodes needed together from above).
pub struct Probe {
    pids: Vec<u32>,
    cpu0: f64,
    reset_ok: Vec<bool>,
    running: Arc<AtomicBool>,
    max_rss: Arc<Vec<AtomicU64>>,
    sampler: Option<JoinHandle<()>>,
}

impl Probe {
    /// A probe of `pids` (at least one).
    pub fn new(pids: Vec<u32>) -> Probe {
        let n = pids.len();
        Probe {
            pids,
            cpu0: 0.0,
            reset_ok: vec![false; n],
            running: Arc::new(AtomicBool::new(false)),
            max_rss: Arc::new((0..n).map(|_| AtomicU64::new(0)).collect()),
            sampler: None,
        }
    }

    /// The first process (the only one of a single server).
    pub fn pid(&self) -> u32 {
        self.pids.first().copied().unwrap_or(0)
    }

    fn cpu_now(&self) -> Option<f64> {
        self.pids.iter().map(|&p| cpu_seconds(p)).sum()
    }

    pub fn start(&mut self) {
        self.stop_sampler();
        self.reset_ok = self.pids.iter().map(|&p| reset_peak(p)).collect();
        self.cpu0 = self.cpu_now().unwrap_or(0.0);
        for (m, &p) in self.max_rss.iter().zip(&self.pids) {
            m.store(status_bytes(p, "VmRSS").unwrap_or(0), Ordering::Relaxed);
        }
        self.running.store(true, Ordering::Relaxed);
        let (pids, running, max_rss) = (
            self.pids.clone(),
            self.running.clone(),
            self.max_rss.clone(),
        );
        self.sampler = Some(std::thread::spawn(move || {
            while running.load(Ordering::Relaxed) {
                for (m, &p) in max_rss.iter().zip(&pids) {
                    if let Some(r) = status_bytes(p, "VmRSS") {
                        m.fetch_max(r, Ordering::Relaxed);
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }));
    }

    fn stop_sampler(&mut self) {
        self.running.store(false, Ordering::Relaxed);
        if let Some(h) = self.sampler.take() {
            let _ = h.join();
        }
    }

    /// Ends the phase; `None` when a process is gone.
    pub fn stop(&mut self) -> Option<Usage> {
        self.stop_sampler();
        let cpu1 = self.cpu_now()?;
        let mut peak = 0;
        for ((m, &p), &reset) in self.max_rss.iter().zip(&self.pids).zip(&self.reset_ok) {
            let mut one = m.load(Ordering::Relaxed);
            if reset && let Some(hwm) = status_bytes(p, "VmHWM") {
                one = one.max(hwm);
            }
            peak += one;
        }
        Some(Usage {
            cpu_seconds: (cpu1 - self.cpu0).max(0.0),
            peak_rss_bytes: peak,
        })
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.stop_sampler();
    }
}

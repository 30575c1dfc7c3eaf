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

/// Measures one process over a phase: `start` ... `stop`.
pub struct Probe {
    pid: u32,
    cpu0: f64,
    reset_ok: bool,
    running: Arc<AtomicBool>,
    max_rss: Arc<AtomicU64>,
    sampler: Option<JoinHandle<()>>,
}

impl Probe {
    pub fn new(pid: u32) -> Probe {
        Probe {
            pid,
            cpu0: 0.0,
            reset_ok: false,
            running: Arc::new(AtomicBool::new(false)),
            max_rss: Arc::new(AtomicU64::new(0)),
            sampler: None,
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn start(&mut self) {
        self.stop_sampler();
        self.reset_ok = reset_peak(self.pid);
        self.cpu0 = cpu_seconds(self.pid).unwrap_or(0.0);
        self.max_rss.store(
            status_bytes(self.pid, "VmRSS").unwrap_or(0),
            Ordering::Relaxed,
        );
        self.running.store(true, Ordering::Relaxed);
        let (pid, running, max_rss) = (self.pid, self.running.clone(), self.max_rss.clone());
        self.sampler = Some(std::thread::spawn(move || {
            while running.load(Ordering::Relaxed) {
                if let Some(r) = status_bytes(pid, "VmRSS") {
                    max_rss.fetch_max(r, Ordering::Relaxed);
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

    /// Ends the phase; `None` when the process is gone.
    pub fn stop(&mut self) -> Option<Usage> {
        self.stop_sampler();
        let cpu1 = cpu_seconds(self.pid)?;
        let mut peak = self.max_rss.load(Ordering::Relaxed);
        if self.reset_ok
            && let Some(hwm) = status_bytes(self.pid, "VmHWM")
        {
            peak = peak.max(hwm);
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

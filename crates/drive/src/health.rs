//! Bookkeeping of drive faults, shared by [`LocalDrive`](crate::LocalDrive)
//! and [`DeadlineDrive`](crate::DeadlineDrive).

use std::sync::Mutex;
use std::time::SystemTime;

use crate::drive::{DriveState, HealthReport};
use crate::error::{DriveError, Result};

#[derive(Default)]
struct Counters {
    consecutive_failures: u32,
    last_error: Option<(SystemTime, String)>,
    offline: bool,
}

/// Consecutive-fault counter with the last fault.
#[derive(Default)]
pub(crate) struct HealthTracker {
    counters: Mutex<Counters>,
}

impl HealthTracker {
    /// Records the outcome of one operation: a fault increments the counter
    /// and returns the new count; anything else (success, or an expected
    /// error such as a missing file, which proves the drive answers) resets
    /// it and returns 0.
    pub(crate) fn record<T>(&self, result: &Result<T>) -> u32 {
        match result {
            Err(e) if e.is_fault() => self.fault(e),
            _ => {
                self.success();
                0
            }
        }
    }

    pub(crate) fn fault(&self, error: &DriveError) -> u32 {
        let Ok(mut c) = self.counters.lock() else {
            return 0;
        };
        c.consecutive_failures = c.consecutive_failures.saturating_add(1);
        c.last_error = Some((SystemTime::now(), error.to_string()));
        c.consecutive_failures
    }

    pub(crate) fn success(&self) {
        if let Ok(mut c) = self.counters.lock() {
            c.consecutive_failures = 0;
        }
    }

    pub(crate) fn set_offline(&self, offline: bool) {
        if let Ok(mut c) = self.counters.lock() {
            c.offline = offline;
            if !offline {
                c.consecutive_failures = 0;
            }
        }
    }

    pub(crate) fn is_offline(&self) -> bool {
        self.counters.lock().map(|c| c.offline).unwrap_or(false)
    }

    pub(crate) fn last_error_text(&self) -> String {
        self.counters
            .lock()
            .ok()
            .and_then(|c| c.last_error.as_ref().map(|(_, text)| text.clone()))
            .unwrap_or_else(|| "no error recorded".to_string())
    }

    pub(crate) fn report(&self) -> HealthReport {
        let Ok(c) = self.counters.lock() else {
            return HealthReport::online();
        };
        let state = if c.offline {
            DriveState::Offline
        } else if c.consecutive_failures > 0 {
            DriveState::Faulty
        } else {
            DriveState::Online
        };
        HealthReport {
            state,
            consecutive_failures: c.consecutive_failures,
            last_error: c.last_error.clone(),
        }
    }
}

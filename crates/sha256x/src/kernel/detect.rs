//! CPU detection and kernel selection: the only place in the crate that
//! asks what the CPU can do, and the only maker of SIMD [`Kernel`] handles.
//!
//! Detection runs once (cached in a `OnceLock`): every kernel the build
//! contains and the CPU supports is put through the start-up self-test (see
//! `selftest.rs`); a kernel that fails is never handed out, and the reason
//! is kept in the [`kernel_report::DetectionReport`] for the daemon to log.

use kernel_report::{Detection, KernelStatus};

#[cfg(target_arch = "x86_64")]
use super::Imp;
use super::Kernel;

/// What the kernels compute, for reports and errors.
const FAMILY: &str = "SHA-256";

/// Every kernel name this crate knows, on any architecture, best first.
const NAMES: [&str; 2] = ["sha-ni", "portable"];

/// The CPU check of each kernel of [`NAMES`], in its order.
const PROBES: [fn() -> Result<Kernel, KernelStatus>; 2] = [probe_shani, probe_portable];

fn probe_portable() -> Result<Kernel, KernelStatus> {
    Ok(Kernel::portable())
}

#[cfg(target_arch = "x86_64")]
fn probe_shani() -> Result<Kernel, KernelStatus> {
    use std::arch::is_x86_feature_detected as has;
    if cfg!(feature = "no_sha") {
        return Err(KernelStatus::Disabled("no_sha"));
    }
    kernel_report::require(&[
        ("sha", has!("sha")),
        ("sse2", has!("sse2")),
        ("ssse3", has!("ssse3")),
        ("sse4.1", has!("sse4.1")),
    ])?;
    Ok(Kernel { imp: Imp::ShaNi })
}

#[cfg(not(target_arch = "x86_64"))]
fn probe_shani() -> Result<Kernel, KernelStatus> {
    Err(KernelStatus::OtherArch("x86_64"))
}

/// Probes every kernel and runs `self_test` on those the CPU supports
/// (injected so that the fallback can be tested with a failing kernel).
fn detect_with(self_test: impl Fn(Kernel) -> Result<(), String>) -> Detection<Kernel> {
    Detection::run(FAMILY, &NAMES, |i| PROBES[i](), self_test)
}

kernel_report::kernel_detection!(Kernel, NAMES, detect_with(|k| crate::selftest::run(&k)));

impl Kernel {
    /// The best kernel that this CPU supports and that passed the start-up
    /// self-test (the portable one if none did). The first call runs
    /// detection and the self-tests.
    pub fn detect() -> Kernel {
        detection().best().unwrap_or_else(Kernel::portable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernel_report::KernelError;

    #[test]
    fn probes_follow_the_names() {
        for (name, probe) in NAMES.iter().zip(PROBES) {
            if let Ok(k) = probe() {
                assert_eq!(k.name(), *name);
            }
        }
    }

    #[test]
    fn failing_kernels_are_never_selected() {
        let d = detect_with(|k: Kernel| {
            if k == Kernel::portable() {
                Ok(())
            } else {
                Err("injected failure".to_owned())
            }
        });
        assert_eq!(d.usable(), &[Kernel::portable()]);
        assert_eq!(d.report().selected, "portable");
    }

    #[test]
    fn from_name_refuses_unknown_names() {
        assert!(matches!(
            Kernel::from_name("sha-nope"),
            Err(KernelError::UnknownName { .. })
        ));
        assert_eq!(Kernel::from_name("portable"), Ok(Kernel::portable()));
    }
}

//! CPU detection and kernel selection: the only place in the crate that
//! asks what the CPU can do, and the only maker of SIMD [`Kernel`] handles.
//!
//! Detection runs once (cached in a `OnceLock`): every kernel the build
//! contains and the CPU supports is put through the start-up self-test (see
//! `selftest.rs`), and [`kernel_report::Detection`] keeps the ones that pass,
//! widest first. A kernel that fails is never handed out, and the reason is
//! kept in the [`DetectionReport`] for the daemon to log. The library never
//! reads the environment: choosing a kernel by name is [`Kernel::from_name`].

use kernel_report::{Detection, KernelStatus};

#[cfg(target_arch = "x86_64")]
use super::Imp;
use super::Kernel;

/// What the kernels compute, for reports and errors.
const FAMILY: &str = "MD5";

/// Every kernel name this crate knows, on any architecture, widest first.
const NAMES: [&str; 3] = ["avx512", "avx2", "portable"];

/// The CPU check of each kernel of [`NAMES`], in its order: a handle if
/// this build and CPU run it (not yet self-tested), else why not.
const PROBES: [fn() -> Result<Kernel, KernelStatus>; 3] =
    [probe_avx512, probe_avx2, probe_portable];

fn probe_portable() -> Result<Kernel, KernelStatus> {
    Ok(Kernel::portable())
}

#[cfg(target_arch = "x86_64")]
fn probe_avx2() -> Result<Kernel, KernelStatus> {
    if cfg!(feature = "no_avx2") {
        return Err(KernelStatus::Disabled("no_avx2"));
    }
    kernel_report::require(&[("avx2", std::arch::is_x86_feature_detected!("avx2"))])?;
    Ok(Kernel { imp: Imp::Avx2 })
}

#[cfg(target_arch = "x86_64")]
fn probe_avx512() -> Result<Kernel, KernelStatus> {
    use std::arch::is_x86_feature_detected as has;
    if cfg!(feature = "no_avx512") {
        return Err(KernelStatus::Disabled("no_avx512"));
    }
    kernel_report::require(&[
        ("avx2", has!("avx2")),
        ("avx512f", has!("avx512f")),
        ("avx512vl", has!("avx512vl")),
    ])?;
    Ok(Kernel { imp: Imp::Avx512 })
}

#[cfg(not(target_arch = "x86_64"))]
fn probe_avx2() -> Result<Kernel, KernelStatus> {
    Err(KernelStatus::OtherArch("x86_64"))
}

#[cfg(not(target_arch = "x86_64"))]
fn probe_avx512() -> Result<Kernel, KernelStatus> {
    Err(KernelStatus::OtherArch("x86_64"))
}

/// Probes every kernel and runs `self_test` on those the CPU supports
/// (injected so that the fallbacks can be tested with failing kernels).
fn detect_with(self_test: impl Fn(Kernel) -> Result<(), String>) -> Detection<Kernel> {
    Detection::run(FAMILY, &NAMES, |i| PROBES[i](), self_test)
}

kernel_report::kernel_detection!(Kernel, NAMES, detect_with(|k| crate::selftest::run(&k)));

impl Kernel {
    /// The widest kernel that this CPU supports and that passed the
    /// start-up self-test (the portable one if none did). The first call
    /// runs detection and the self-tests.
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
        let text = d.report().to_string();
        assert!(text.contains("selected MD5 kernel `portable`"), "{text}");
        if d.report().any_self_test_failed() {
            assert!(
                text.contains("SELF-TEST FAILED: injected failure"),
                "{text}"
            );
        } else {
            eprintln!("NOTE: no SIMD kernel on this machine; only the fallback was exercised");
        }
    }

    #[test]
    fn nothing_usable_is_reported() {
        let d = detect_with(|_| Err("all broken".to_owned()));
        assert!(d.usable().is_empty());
        assert_eq!(d.report().selected, "none");
        assert!(d.report().any_self_test_failed());
    }

    #[test]
    fn from_name_refuses_unknown_names() {
        assert!(matches!(
            Kernel::from_name("sse9"),
            Err(KernelError::UnknownName { .. })
        ));
        assert_eq!(Kernel::from_name("portable"), Ok(Kernel::portable()));
    }
}

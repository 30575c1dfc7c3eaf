//! CPU detection and kernel selection: the only place in the crate that
//! asks what the CPU can do, and the only maker of SIMD [`Kernel`] handles.
//!
//! Detection runs once (cached in a `OnceLock`): every kernel the build
//! contains and the CPU supports is put through the start-up self-test
//! (see `selftest.rs`), and [`kernel_report::Detection`] keeps the ones that
//! pass, fastest first. A kernel that fails is never handed out, and the
//! reason is kept in the [`DetectionReport`] for the daemon to log. The
//! library never reads the environment: choosing a kernel by name is
//! [`Kernel::from_name`], for the daemon to call.

use kernel_report::{Detection, KernelStatus};

use super::{Imp, Kernel};
use crate::selftest;

/// What the kernels compute, for reports and errors.
const FAMILY: &str = "HighwayHash";

/// Every kernel name this crate knows, on any architecture, fastest first.
const NAMES: [&str; 4] = ["avx512", "avx2", "neon", "portable"];

/// The CPU check of each kernel of [`NAMES`], in its order: a handle if
/// this build and CPU run it (not yet self-tested), else why not.
const PROBES: [fn() -> Result<Kernel, KernelStatus>; 4] =
    [probe_avx512, probe_avx2, probe_neon, probe_portable];

fn probe_portable() -> Result<Kernel, KernelStatus> {
    Ok(Kernel::portable())
}

#[cfg(target_arch = "x86_64")]
fn probe_avx2() -> Result<Kernel, KernelStatus> {
    if cfg!(feature = "no_avx2") {
        return Err(KernelStatus::Disabled("no_avx2"));
    }
    kernel_report::require(&[("avx2", std::arch::is_x86_feature_detected!("avx2"))])?;
    Ok(Kernel {
        imp: Imp::Avx2,
        zipper_last: tuning().0,
    })
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
        ("avx512bw", has!("avx512bw")),
        ("avx512vl", has!("avx512vl")),
    ])?;
    Ok(Kernel {
        imp: Imp::Avx512,
        zipper_last: tuning().0,
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn probe_avx2() -> Result<Kernel, KernelStatus> {
    Err(KernelStatus::OtherArch("x86_64"))
}

#[cfg(not(target_arch = "x86_64"))]
fn probe_avx512() -> Result<Kernel, KernelStatus> {
    Err(KernelStatus::OtherArch("x86_64"))
}

#[cfg(all(target_arch = "aarch64", target_endian = "little"))]
fn probe_neon() -> Result<Kernel, KernelStatus> {
    if cfg!(feature = "no_neon") {
        return Err(KernelStatus::Disabled("no_neon"));
    }
    kernel_report::require(&[("neon", std::arch::is_aarch64_feature_detected!("neon"))])?;
    Ok(Kernel {
        imp: Imp::Neon,
        zipper_last: false,
    })
}

#[cfg(not(all(target_arch = "aarch64", target_endian = "little")))]
fn probe_neon() -> Result<Kernel, KernelStatus> {
    Err(KernelStatus::OtherArch("little-endian aarch64"))
}

/// The x86 loop tuning for this CPU: whether the `zipper(v0)` term of the
/// packet-linking sum arrives after the `mul0` term (see `avx2::link`), and
/// why. That is the case on cores with 2-cycle vector integer adds and
/// shuffles: AMD family 1Ah (Zen 5) and, by assumption, its successors.
#[cfg(target_arch = "x86_64")]
fn tuning() -> (bool, &'static str) {
    use std::arch::x86_64::__cpuid;
    let vendor = __cpuid(0);
    let amd = vendor.ebx == u32::from_le_bytes(*b"Auth")
        && vendor.edx == u32::from_le_bytes(*b"enti")
        && vendor.ecx == u32::from_le_bytes(*b"cAMD");
    let eax = __cpuid(1).eax;
    let base = (eax >> 8) & 0xf;
    let family = if base == 0xf {
        base + ((eax >> 20) & 0xff)
    } else {
        base
    };
    if amd && family >= 0x1a {
        (
            true,
            "zipper-last packet loop (AMD family 1Ah+: 2-cycle vector adds)",
        )
    } else {
        (false, "multiply-last packet loop (1-cycle vector adds)")
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn tuning() -> (bool, &'static str) {
    (false, "no x86 loop tuning on this architecture")
}

/// Probes every kernel and runs `self_test` on those the CPU supports
/// (injected so that the fallbacks can be tested with failing kernels).
fn detect_with(self_test: impl Fn(Kernel) -> Result<(), String>) -> Detection<Kernel> {
    Detection::run(FAMILY, &NAMES, |i| PROBES[i](), self_test)
}

fn standard_self_test(k: Kernel) -> Result<(), String> {
    selftest::run(&k, &Kernel::portable())
}

kernel_report::kernel_detection!(Kernel, NAMES, detect_with(standard_self_test));

impl Kernel {
    /// The fastest kernel this CPU supports that passed the start-up
    /// self-test. The first call probes the CPU and runs the self-test of
    /// every candidate (about 2 ms in a release build); later calls are a
    /// load.
    ///
    /// # Panics
    /// If no kernel passes the self-test, not even the portable one (a
    /// miscompiled build): hashing would silently corrupt data.
    pub fn detect() -> Kernel {
        match detection().best() {
            Some(k) => k,
            None => panic!(
                "no HighwayHash kernel passed its self-test: {}",
                detection().report()
            ),
        }
    }

    /// How the x86 kernels' packet loop is tuned for this CPU model (the
    /// digests do not depend on it), for the daemon and benchmarks to print
    /// beside the detection report.
    pub fn tuning() -> &'static str {
        tuning().1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Fail everything but the portable kernel: detection must fall back
        // to it and say why the others were dropped.
        let d = detect_with(|k: Kernel| {
            if k.imp == Imp::Portable {
                Ok(())
            } else {
                Err("injected failure".to_owned())
            }
        });
        assert_eq!(d.usable(), &[Kernel::portable()]);
        assert_eq!(d.report().selected, "portable");
        for r in &d.report().kernels {
            if r.name == "portable" {
                assert_eq!(r.status, KernelStatus::Passed);
            } else {
                assert!(
                    !matches!(r.status, KernelStatus::Passed),
                    "{} usable despite failing",
                    r.name
                );
            }
        }
        let text = d.report().to_string();
        assert!(
            text.contains("selected HighwayHash kernel `portable`"),
            "{text}"
        );
        // On a machine with SIMD kernels the failure is reported by name.
        if d.report().any_self_test_failed() {
            assert!(
                text.contains("SELF-TEST FAILED: injected failure"),
                "{text}"
            );
        } else {
            eprintln!(
                "NOTE: no SIMD kernel on this machine; only the portable fallback was exercised"
            );
        }

        // Fail the fastest candidate only: the next one is chosen.
        let real = detect_with(standard_self_test);
        if real.usable().len() >= 2 {
            let first = real.usable()[0];
            let d = detect_with(|k: Kernel| {
                if k == first {
                    Err("injected".into())
                } else {
                    standard_self_test(k)
                }
            });
            assert_eq!(d.usable()[0], real.usable()[1]);
        }
    }

    /// The packet-loop order is picked from the CPU model; both orders must
    /// be right on every SIMD kernel this machine runs, whichever is picked.
    #[test]
    fn both_loop_orders_pass_the_self_test() {
        let mut simd = 0;
        for &k in Kernel::supported() {
            if k.imp == Imp::Portable {
                continue;
            }
            simd += 1;
            for zipper_last in [false, true] {
                let v = Kernel { zipper_last, ..k };
                assert_eq!(
                    selftest::run(&v, &Kernel::portable()),
                    Ok(()),
                    "kernel {k}, zipper_last {zipper_last}"
                );
            }
        }
        if simd == 0 {
            eprintln!("*** no SIMD kernel on this machine: loop orders NOT tested");
        }
        eprintln!("tuning here: {}", Kernel::tuning());
    }

    #[test]
    fn nothing_usable_is_reported() {
        let d = detect_with(|_| Err("all broken".to_owned()));
        assert!(d.usable().is_empty());
        assert_eq!(d.report().selected, "none");
        assert!(d.report().any_self_test_failed());
    }
}

//! CPU detection and kernel selection: the only place in the crate that
//! asks what the CPU can do, and the only maker of [`Kernel`] handles.
//!
//! Every kernel, best first, is probed (cargo features that remove it, then
//! the CPU's features) and, if the CPU runs it, self-tested against the
//! reference kernel; [`kernel_report::Detection`] keeps the handles that
//! pass. Detection runs once per process, on first use.

use kernel_report::{Detection, KernelStatus, require};

use super::{Kernel, Kind, selftest};

/// What the kernels compute, for reports and errors.
const FAMILY: &str = "erasure-coding";

/// Every kernel, best first: the order [`Kernel::detect`] tries them in.
const PREFERENCE: [Kind; 7] = [
    Kind::GfniAvx512,
    Kind::Avx512,
    Kind::GfniAvx2,
    Kind::Avx2,
    Kind::Neon,
    Kind::Scalar,
    Kind::Reference,
];

/// The names of [`PREFERENCE`], in its order.
const NAMES: [&str; 7] = [
    "gfni-avx512",
    "avx512",
    "gfni-avx2",
    "avx2",
    "neon",
    "scalar",
    "reference",
];

/// The oracle of the self-tests; [`Kernel::detect`] falls back to it if no
/// kernel passed.
const REFERENCE: Kernel = Kernel {
    kind: Kind::Reference,
};

impl Kind {
    /// `Err` with the reason if the kernel is for another architecture, is
    /// disabled by a cargo feature, or the CPU cannot run it (checked in
    /// that order, as in every kernel crate).
    fn availability(self) -> Result<(), KernelStatus> {
        let arch = match self {
            Self::Reference | Self::Scalar => std::env::consts::ARCH,
            Self::Neon => "aarch64",
            _ => "x86_64",
        };
        if arch != std::env::consts::ARCH {
            return Err(KernelStatus::OtherArch(arch));
        }
        let disabled = match self {
            Self::Avx2 | Self::GfniAvx2 if cfg!(feature = "no_avx2") => Some("no_avx2"),
            Self::GfniAvx2 | Self::GfniAvx512 if cfg!(feature = "no_gfni") => Some("no_gfni"),
            Self::Avx512 | Self::GfniAvx512 if cfg!(feature = "no_avx512") => Some("no_avx512"),
            Self::Neon if cfg!(feature = "no_neon") => Some("no_neon"),
            _ => None,
        };
        match disabled {
            Some(feature) => Err(KernelStatus::Disabled(feature)),
            None => self.cpu_support(),
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn cpu_support(self) -> Result<(), KernelStatus> {
        use std::arch::is_x86_feature_detected as has;
        match self {
            Self::Reference | Self::Scalar => Ok(()),
            Self::Avx2 => require(&[("avx2", has!("avx2"))]),
            Self::Avx512 => {
                require(&[("avx512f", has!("avx512f")), ("avx512bw", has!("avx512bw"))])
            }
            Self::GfniAvx2 => require(&[("avx2", has!("avx2")), ("gfni", has!("gfni"))]),
            Self::GfniAvx512 => require(&[
                ("avx512f", has!("avx512f")),
                ("avx512bw", has!("avx512bw")),
                ("gfni", has!("gfni")),
            ]),
            Self::Neon => Err(KernelStatus::OtherArch("aarch64")),
        }
    }

    #[cfg(target_arch = "aarch64")]
    fn cpu_support(self) -> Result<(), KernelStatus> {
        match self {
            Self::Reference | Self::Scalar => Ok(()),
            Self::Neon => require(&[("neon", std::arch::is_aarch64_feature_detected!("neon"))]),
            _ => Err(KernelStatus::OtherArch("x86_64")),
        }
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn cpu_support(self) -> Result<(), KernelStatus> {
        match self {
            Self::Reference | Self::Scalar => Ok(()),
            Self::Neon => Err(KernelStatus::OtherArch("aarch64")),
            _ => Err(KernelStatus::OtherArch("x86_64")),
        }
    }
}

/// Probes every kernel and runs `self_test` on those the CPU supports
/// (injected so that the fallbacks can be tested with failing kernels).
fn detect_with(self_test: impl Fn(Kernel) -> Result<(), String>) -> Detection<Kernel> {
    Detection::run(
        FAMILY,
        &NAMES,
        |i| {
            let kind = PREFERENCE[i];
            kind.availability().map(|()| Kernel { kind })
        },
        self_test,
    )
}

kernel_report::kernel_detection!(Kernel, NAMES, detect_with(selftest::run));

/// The best kernel of `d`; the reference kernel if, absurdly, none passed.
fn best(d: &Detection<Kernel>) -> Kernel {
    d.best().unwrap_or(REFERENCE)
}

impl Kernel {
    /// The fastest kernel this host runs that passed its self-test. The
    /// detection and self-tests run once per process (on first use).
    pub fn detect() -> Kernel {
        best(detection())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernel_report::KernelError;

    #[test]
    fn names_follow_the_preference() {
        assert_eq!(NAMES, PREFERENCE.map(Kind::name));
        assert_eq!(Kernel::names(), &NAMES);
    }

    #[test]
    fn detection_falls_back_in_order() {
        let real = detect_with(selftest::run);
        let first = real.usable()[0];
        let without_first = detect_with(|k| {
            if k == first {
                Err("injected failure".to_owned())
            } else {
                selftest::run(k)
            }
        });
        assert_eq!(best(&without_first), real.usable()[1]);
        assert!(without_first.report().any_self_test_failed());
        assert_eq!(
            without_first.find(first.name()).unwrap_err().to_string(),
            format!(
                "erasure-coding kernel `{first}` is unavailable: SELF-TEST FAILED: injected failure"
            )
        );
        let none = detect_with(|_| Err("all broken".to_owned()));
        assert_eq!(none.report().selected, "none");
        assert_eq!(best(&none).kind, Kind::Reference);
    }

    #[test]
    fn detection_is_consistent() {
        let report = Kernel::detection_report();
        eprintln!("{report}");
        assert_eq!(report.kernels.len(), PREFERENCE.len());
        assert_eq!(report.selected, Kernel::detect().name());
        for r in &report.kernels {
            let found = Kernel::from_name(r.name);
            match &r.status {
                KernelStatus::Passed => assert_eq!(found.unwrap().name(), r.name),
                KernelStatus::Failed(why) => {
                    panic!("kernel {} failed its self-test: {why}", r.name)
                }
                _ => assert!(matches!(found, Err(KernelError::Unavailable { .. }))),
            }
        }
        let supported = Kernel::supported();
        assert!(supported.iter().any(|k| k.name() == "scalar"));
        assert!(supported.iter().any(|k| k.name() == "reference"));
        assert_eq!(Kernel::detect(), supported[0]);
        assert!(matches!(
            Kernel::from_name("sse9"),
            Err(KernelError::UnknownName { .. })
        ));
    }
}

//! The one shape of kernel detection in the kernel crates (`ec-simd`,
//! `bitrot`, `md5x`).
//!
//! Each of those crates has SIMD kernels that a CPU may or may not run. They
//! all choose one the same way, with the types and the loop of this crate:
//!
//! - [`Detection::run`] probes every kernel the crate knows, best first
//!   (the probe is the crate's own CPU check, returning a handle or the
//!   [`KernelStatus`] that says why not), runs the crate's self-test on every
//!   handle the probe returns, and keeps only the handles that pass. That
//!   loop is the only way a kernel crate hands out a kernel handle; the
//!   crate keeps its one `Detection` in a `OnceLock`.
//! - [`DetectionReport`] says which kernel was selected and, for every
//!   known kernel, its [`KernelStatus`], for the daemon to log at start-up.
//! - [`KernelError`] is why a kernel asked for by name
//!   ([`Detection::find`]) cannot be had.
//!
//! Each kernel crate re-exports these types and offers the same associated
//! functions on its `Kernel` handle: `detect` and `name` of its own, and
//! `supported`, `from_name`, `names` and `detection_report` written once,
//! here, by [`kernel_detection!`]. This crate has no dependencies, no
//! `unsafe`, and asks the CPU nothing itself.

#![warn(missing_docs)]

use std::fmt;

/// Whether one kernel can be used on this host, and if not why.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelStatus {
    /// The CPU runs it and it passed its self-test: usable.
    Passed,
    /// The CPU runs it but it failed its self-test, so it is never used
    /// (the build or the CPU is suspect). The text says on which input.
    Failed(String),
    /// The CPU lacks these target features.
    UnsupportedCpu(Vec<&'static str>),
    /// The kernel is for another architecture (named here).
    OtherArch(&'static str),
    /// A test-only cargo feature (named here) removes it from detection.
    Disabled(&'static str),
}

impl fmt::Display for KernelStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Passed => f.write_str("passed self-test"),
            Self::Failed(why) => write!(f, "SELF-TEST FAILED: {why}"),
            Self::UnsupportedCpu(missing) => write!(f, "CPU lacks {}", missing.join(", ")),
            Self::OtherArch(arch) => write!(f, "{arch} only"),
            Self::Disabled(feature) => write!(f, "disabled by cargo feature `{feature}`"),
        }
    }
}

/// `Ok` if every feature is present, else [`KernelStatus::UnsupportedCpu`]
/// naming the missing ones: the body of a kernel crate's CPU probe, e.g.
/// `require(&[("avx2", is_x86_feature_detected!("avx2"))])`.
pub fn require(features: &[(&'static str, bool)]) -> Result<(), KernelStatus> {
    let missing: Vec<&'static str> = features
        .iter()
        .filter(|(_, present)| !present)
        .map(|(name, _)| *name)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(KernelStatus::UnsupportedCpu(missing))
    }
}

/// One kernel's line of a [`DetectionReport`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelReport {
    /// The kernel's name, as its crate's `Kernel::from_name` accepts it.
    pub name: &'static str,
    /// Whether it can be used here, and if not why.
    pub status: KernelStatus,
}

/// What detection found in one kernel crate, for the daemon to log once at
/// start-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetectionReport {
    /// What the kernels compute (`"erasure-coding"`, `"HighwayHash"`,
    /// `"MD5"`).
    pub family: &'static str,
    /// The name of the best kernel that passed its self-test, or `"none"`.
    pub selected: &'static str,
    /// Every kernel the crate knows, best first, with its status.
    pub kernels: Vec<KernelReport>,
}

impl DetectionReport {
    /// Whether some kernel the CPU runs failed its self-test (worth a
    /// warning: the build or the CPU is suspect).
    pub fn any_self_test_failed(&self) -> bool {
        self.kernels
            .iter()
            .any(|k| matches!(k.status, KernelStatus::Failed(_)))
    }

    /// The status of the kernel called `name`, if the crate knows it.
    pub fn status(&self, name: &str) -> Option<&KernelStatus> {
        self.kernels
            .iter()
            .find(|k| k.name == name)
            .map(|k| &k.status)
    }
}

impl fmt::Display for DetectionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "selected {} kernel `{}`", self.family, self.selected)?;
        for k in &self.kernels {
            write!(f, "; {}: {}", k.name, k.status)?;
        }
        Ok(())
    }
}

/// Why a kernel asked for by name cannot be had.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelError {
    /// No kernel of the crate has this name (names are exact).
    UnknownName {
        /// What the crate's kernels compute, as in [`DetectionReport::family`].
        family: &'static str,
        /// The name asked for.
        name: String,
        /// Every name the crate knows, best first.
        known: &'static [&'static str],
    },
    /// A known kernel that cannot be used here.
    Unavailable {
        /// What the crate's kernels compute, as in [`DetectionReport::family`].
        family: &'static str,
        /// The kernel's name.
        name: &'static str,
        /// Why it cannot be used (never [`KernelStatus::Passed`]).
        status: KernelStatus,
    },
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownName {
                family,
                name,
                known,
            } => write!(
                f,
                "unknown {family} kernel {name:?} (known: {})",
                known.join(", ")
            ),
            Self::Unavailable {
                family,
                name,
                status,
            } => write!(f, "{family} kernel `{name}` is unavailable: {status}"),
        }
    }
}

impl std::error::Error for KernelError {}

/// The outcome of probing and self-testing every kernel of one crate: the
/// usable handles, best first, and the report. A kernel crate keeps one in
/// a `OnceLock` and builds its `Kernel` functions on it.
#[derive(Clone, Debug)]
pub struct Detection<K> {
    report: DetectionReport,
    names: &'static [&'static str],
    usable: Vec<K>,
}

impl<K: Copy> Detection<K> {
    /// For every kernel, best first: `probe(i)` returns a handle on the
    /// kernel called `names[i]` if this build and CPU can run it, or the
    /// status that says why not (never [`KernelStatus::Passed`] or
    /// [`KernelStatus::Failed`]); each handle then runs `self_test`, and
    /// only the handles that pass are kept. Nothing is executed on a kernel
    /// whose probe failed.
    pub fn run(
        family: &'static str,
        names: &'static [&'static str],
        probe: impl Fn(usize) -> Result<K, KernelStatus>,
        self_test: impl Fn(K) -> Result<(), String>,
    ) -> Self {
        let mut kernels = Vec::with_capacity(names.len());
        let mut usable = Vec::new();
        let mut selected = "none";
        for (i, &name) in names.iter().enumerate() {
            let status = match probe(i) {
                Ok(kernel) => match self_test(kernel) {
                    Ok(()) => {
                        if usable.is_empty() {
                            selected = name;
                        }
                        usable.push(kernel);
                        KernelStatus::Passed
                    }
                    Err(why) => KernelStatus::Failed(why),
                },
                Err(status) => {
                    debug_assert!(
                        !matches!(status, KernelStatus::Passed | KernelStatus::Failed(_)),
                        "a probe reports only why a kernel cannot run"
                    );
                    status
                }
            };
            kernels.push(KernelReport { name, status });
        }
        Detection {
            report: DetectionReport {
                family,
                selected,
                kernels,
            },
            names,
            usable,
        }
    }

    /// The best kernel that passed its self-test, if any did.
    pub fn best(&self) -> Option<K> {
        self.usable.first().copied()
    }

    /// Every kernel that passed its self-test, best first.
    pub fn usable(&self) -> &[K] {
        &self.usable
    }

    /// What was found.
    pub fn report(&self) -> &DetectionReport {
        &self.report
    }

    /// Every kernel name, best first, whether or not this host runs it.
    pub fn names(&self) -> &'static [&'static str] {
        self.names
    }

    /// The kernel called `name` if it passed its self-test here; otherwise
    /// why not.
    pub fn find(&self, name: &str) -> Result<K, KernelError> {
        let family = self.report.family;
        let Some(&known) = self.names.iter().find(|&&n| n == name) else {
            return Err(KernelError::UnknownName {
                family,
                name: name.to_owned(),
                known: self.names,
            });
        };
        // The usable handles are the passing report lines, in order.
        let passed = self
            .report
            .kernels
            .iter()
            .filter(|k| k.status == KernelStatus::Passed);
        if let Some(i) = passed.clone().position(|k| k.name == known) {
            return Ok(self.usable[i]);
        }
        match self.report.status(known) {
            Some(status) => Err(KernelError::Unavailable {
                family,
                name: known,
                status: status.clone(),
            }),
            // Every known name has a report line; this arm is never taken.
            None => Err(KernelError::UnknownName {
                family,
                name: name.to_owned(),
                known: self.names,
            }),
        }
    }
}

/// Writes a kernel crate's process-wide detection and the functions on its
/// `Kernel` handle that every kernel crate has in common.
///
/// `kernel_detection!(Kernel, NAMES, init)` defines a private
/// `fn detection() -> &'static Detection<Kernel>` that evaluates `init`
/// (a [`Detection`]) once per process, and `Kernel::supported`,
/// `Kernel::from_name`, `Kernel::names` (from `NAMES`, without running
/// detection) and `Kernel::detection_report` on top of it. The crate
/// writes `Kernel::detect` itself (what to do when no kernel passed is its
/// own decision) and `Kernel::name`.
#[macro_export]
macro_rules! kernel_detection {
    ($kernel:ident, $names:expr, $init:expr $(,)?) => {
        /// The process's one detection, run on first use.
        fn detection() -> &'static $crate::Detection<$kernel> {
            static DETECTION: ::std::sync::OnceLock<$crate::Detection<$kernel>> =
                ::std::sync::OnceLock::new();
            DETECTION.get_or_init(|| $init)
        }

        impl $kernel {
            /// Every kernel this host runs that passed its self-test, best
            /// first. Detection and the self-tests run once per process, on
            /// first use.
            pub fn supported() -> &'static [$kernel] {
                detection().usable()
            }

            /// The kernel called `name` (one of [`names`](Self::names)) if
            /// this host runs it and it passed its self-test; otherwise why
            /// not. This is the hook for a configuration switch: the crate
            /// itself never reads the environment.
            pub fn from_name(name: &str) -> Result<$kernel, $crate::KernelError> {
                detection().find(name)
            }

            /// Every kernel name this crate knows, best first, whether or
            /// not this host runs it.
            pub fn names() -> &'static [&'static str] {
                &$names
            }

            /// What detection found: the selected kernel and why each known
            /// kernel is or is not usable here; meant to be logged once at
            /// start-up.
            pub fn detection_report() -> &'static $crate::DetectionReport {
                detection().report()
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &[&str] = &["wide", "narrow", "other-arch", "off", "plain"];

    /// Kernels are numbered by their place in `NAMES`; `fail` lists the
    /// ones whose self-test fails.
    fn detect(fail: &[usize]) -> Detection<usize> {
        Detection::run(
            "test",
            NAMES,
            |i| match NAMES[i] {
                "other-arch" => Err(KernelStatus::OtherArch("aarch64")),
                "off" => Err(KernelStatus::Disabled("no_off")),
                "narrow" => require(&[("narrow", true), ("x", false), ("y", false)]).map(|()| i),
                _ => Ok(i),
            },
            |k| {
                if fail.contains(&k) {
                    Err(format!("kernel {k} is wrong at 17 bytes"))
                } else {
                    Ok(())
                }
            },
        )
    }

    #[test]
    fn the_best_passing_kernel_is_selected() {
        let d = detect(&[]);
        assert_eq!(d.best(), Some(0));
        assert_eq!(d.usable(), &[0, 4]);
        assert_eq!(d.report().selected, "wide");
        assert!(!d.report().any_self_test_failed());
        assert_eq!(
            d.report().to_string(),
            "selected test kernel `wide`; wide: passed self-test; narrow: CPU lacks x, y; \
             other-arch: aarch64 only; off: disabled by cargo feature `no_off`; \
             plain: passed self-test"
        );
        assert_eq!(d.names(), NAMES);
    }

    #[test]
    fn a_failing_kernel_is_never_handed_out() {
        let d = detect(&[0]);
        assert_eq!(d.best(), Some(4));
        assert_eq!(d.usable(), &[4]);
        assert_eq!(d.report().selected, "plain");
        assert!(d.report().any_self_test_failed());
        assert!(
            d.report()
                .to_string()
                .contains("wide: SELF-TEST FAILED: kernel 0 is wrong at 17 bytes"),
            "{}",
            d.report()
        );
        assert_eq!(
            d.find("wide"),
            Err(KernelError::Unavailable {
                family: "test",
                name: "wide",
                status: KernelStatus::Failed("kernel 0 is wrong at 17 bytes".into()),
            })
        );
        assert_eq!(d.find("plain"), Ok(4));
    }

    #[test]
    fn nothing_usable_is_reported() {
        let d = detect(&[0, 4]);
        assert_eq!(d.best(), None);
        assert!(d.usable().is_empty());
        assert_eq!(d.report().selected, "none");
        assert!(d.report().any_self_test_failed());
    }

    #[test]
    fn find_by_name() {
        let d = detect(&[]);
        assert_eq!(d.find("wide"), Ok(0));
        assert_eq!(d.find("plain"), Ok(4));
        let e = d.find("WIDE").unwrap_err();
        assert_eq!(
            e,
            KernelError::UnknownName {
                family: "test",
                name: "WIDE".into(),
                known: NAMES,
            }
        );
        assert_eq!(
            e.to_string(),
            "unknown test kernel \"WIDE\" (known: wide, narrow, other-arch, off, plain)"
        );
        let e = d.find("narrow").unwrap_err();
        assert_eq!(
            e.to_string(),
            "test kernel `narrow` is unavailable: CPU lacks x, y"
        );
        let boxed: Box<dyn std::error::Error> = Box::new(e);
        assert!(!boxed.to_string().is_empty());
        assert_eq!(
            d.report().status("off"),
            Some(&KernelStatus::Disabled("no_off"))
        );
        assert_eq!(d.report().status("sse9"), None);
    }

    #[test]
    fn require_names_every_missing_feature() {
        assert_eq!(require(&[]), Ok(()));
        assert_eq!(require(&[("avx2", true)]), Ok(()));
        assert_eq!(
            require(&[("avx2", true), ("avx512f", false), ("gfni", false)]),
            Err(KernelStatus::UnsupportedCpu(vec!["avx512f", "gfni"]))
        );
    }
}

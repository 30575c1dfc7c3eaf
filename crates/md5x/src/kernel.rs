//! Kernel handles, CPU detection and dispatch.
//!
//! This is the only module that looks at the CPU, and the only place a
//! [`Kernel`] is made: its field is private and every constructor either
//! checks the CPU at runtime or names the portable kernel. Holding a handle
//! for a SIMD kernel is therefore proof that the CPU has the instructions it
//! needs, which is what makes the `unsafe` calls below sound.
//!
//! Detection runs once (cached in a [`OnceLock`]): every kernel the build
//! contains and the CPU supports is put through the start-up self-test (see
//! `selftest.rs`), and the widest one that passes is chosen. A kernel that
//! fails is never handed out, and the reason is kept in the
//! [`DetectionReport`] for the daemon to log. The library never reads the
//! environment: choosing a kernel by name is [`Kernel::from_name`].

use std::fmt;
use std::sync::OnceLock;

use crate::portable::{self, BLOCK};

/// An MD5 implementation the CPU can run.
///
/// Obtained from [`Kernel::detect`], [`Kernel::from_name`],
/// [`Kernel::supported`] or [`Kernel::portable`]; there is no other way to
/// make one. Every handle (other than the portable one, which needs
/// nothing) refers to a kernel that passed the start-up self-test on this
/// machine.
///
/// Every kernel hashes a single stream on the portable code (MD5 is one
/// chain of dependent steps); the SIMD kernels differ in how many
/// independent streams they advance at once ([`Kernel::lanes`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kernel {
    imp: Imp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Imp {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

/// Every kernel name this crate knows, on any architecture, widest first.
pub const KERNEL_NAMES: [&str; 3] = ["avx512", "avx2", "portable"];

impl Imp {
    fn name(self) -> &'static str {
        match self {
            Imp::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 => "avx2",
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 => "avx512",
        }
    }
}

/// Why a kernel is not usable, or that it is.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelStatus {
    /// Usable: supported by the CPU and passed the self-test.
    Usable,
    /// Not built for this target architecture.
    NotBuilt,
    /// Removed from this build by a cargo feature (named here).
    DisabledByFeature(&'static str),
    /// The CPU lacks the instructions (the missing target features).
    UnsupportedCpu(Vec<&'static str>),
    /// Supported by the CPU but failed the start-up self-test: never used.
    SelfTestFailed(String),
}

impl fmt::Display for KernelStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelStatus::Usable => f.write_str("usable (self-test passed)"),
            KernelStatus::NotBuilt => f.write_str("not built for this architecture"),
            KernelStatus::DisabledByFeature(feat) => {
                write!(f, "disabled by cargo feature `{feat}`")
            }
            KernelStatus::UnsupportedCpu(missing) => {
                write!(f, "CPU lacks {}", missing.join(", "))
            }
            KernelStatus::SelfTestFailed(why) => write!(f, "SELF-TEST FAILED: {why}"),
        }
    }
}

/// What detection found, for the daemon to log at start-up.
#[derive(Clone, Debug)]
pub struct DetectionReport {
    /// The kernel [`Kernel::detect`] returns.
    pub selected: &'static str,
    /// Every kernel name in [`KERNEL_NAMES`] order, with its status.
    pub kernels: Vec<(&'static str, KernelStatus)>,
}

impl DetectionReport {
    /// Whether some kernel the CPU supports failed its self-test (worth a
    /// warning: the build or the CPU is suspect).
    pub fn any_self_test_failed(&self) -> bool {
        self.kernels
            .iter()
            .any(|(_, s)| matches!(s, KernelStatus::SelfTestFailed(_)))
    }
}

impl fmt::Display for DetectionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "md5x: selected MD5 kernel `{}`", self.selected)?;
        for (name, status) in &self.kernels {
            write!(f, "; {name}: {status}")?;
        }
        Ok(())
    }
}

/// Why [`Kernel::from_name`] refused a name.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelError {
    /// Not a kernel name this crate knows (see [`KERNEL_NAMES`]).
    UnknownName(String),
    /// A known kernel that cannot be used here, and why.
    Unavailable {
        /// The kernel's name.
        name: &'static str,
        /// Why it cannot be used.
        status: KernelStatus,
    },
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::UnknownName(n) => write!(
                f,
                "unknown MD5 kernel {n:?} (known: {})",
                KERNEL_NAMES.join(", ")
            ),
            KernelError::Unavailable { name, status } => {
                write!(f, "MD5 kernel `{name}` is unavailable: {status}")
            }
        }
    }
}

impl std::error::Error for KernelError {}

struct Detection {
    report: DetectionReport,
    /// Usable kernels, widest first.
    usable: Vec<Kernel>,
}

static DETECTION: OnceLock<Detection> = OnceLock::new();

/// The CPU check for one kernel name: `Ok(Some(kernel))` if supported,
/// `Ok(None)` if not built here, `Err(status)` otherwise.
fn probe(name: &str) -> Result<Option<Kernel>, KernelStatus> {
    match name {
        "portable" => Ok(Some(Kernel::portable())),
        "avx2" => probe_avx2(),
        "avx512" => probe_avx512(),
        _ => Ok(None),
    }
}

#[cfg(target_arch = "x86_64")]
fn probe_avx2() -> Result<Option<Kernel>, KernelStatus> {
    if cfg!(feature = "no_avx2") {
        return Err(KernelStatus::DisabledByFeature("no_avx2"));
    }
    if !std::arch::is_x86_feature_detected!("avx2") {
        return Err(KernelStatus::UnsupportedCpu(vec!["avx2"]));
    }
    Ok(Some(Kernel { imp: Imp::Avx2 }))
}

#[cfg(target_arch = "x86_64")]
fn probe_avx512() -> Result<Option<Kernel>, KernelStatus> {
    if cfg!(feature = "no_avx512") {
        return Err(KernelStatus::DisabledByFeature("no_avx512"));
    }
    let mut missing = Vec::new();
    if !std::arch::is_x86_feature_detected!("avx2") {
        missing.push("avx2");
    }
    if !std::arch::is_x86_feature_detected!("avx512f") {
        missing.push("avx512f");
    }
    if !std::arch::is_x86_feature_detected!("avx512vl") {
        missing.push("avx512vl");
    }
    if !missing.is_empty() {
        return Err(KernelStatus::UnsupportedCpu(missing));
    }
    Ok(Some(Kernel { imp: Imp::Avx512 }))
}

#[cfg(not(target_arch = "x86_64"))]
fn probe_avx2() -> Result<Option<Kernel>, KernelStatus> {
    Ok(None)
}

#[cfg(not(target_arch = "x86_64"))]
fn probe_avx512() -> Result<Option<Kernel>, KernelStatus> {
    Ok(None)
}

/// Probes and self-tests every kernel. `test` is the self-test (injected so
/// that the fallback logic can be tested with failing kernels).
fn detect_with(test: &dyn Fn(Kernel) -> Result<(), String>) -> Detection {
    let mut kernels = Vec::new();
    let mut usable = Vec::new();
    for name in KERNEL_NAMES {
        let status = match probe(name) {
            Ok(Some(k)) => match test(k) {
                Ok(()) => {
                    usable.push(k);
                    KernelStatus::Usable
                }
                Err(why) => KernelStatus::SelfTestFailed(why),
            },
            Ok(None) => KernelStatus::NotBuilt,
            Err(status) => status,
        };
        kernels.push((name, status));
    }
    let selected = usable.first().map_or("none", |k| k.name());
    Detection {
        report: DetectionReport { selected, kernels },
        usable,
    }
}

fn standard_self_test(k: Kernel) -> Result<(), String> {
    crate::selftest::run(&k)
}

fn detection() -> &'static Detection {
    DETECTION.get_or_init(|| detect_with(&standard_self_test))
}

impl Kernel {
    /// The portable kernel (no SIMD; always available).
    pub const fn portable() -> Kernel {
        Kernel { imp: Imp::Portable }
    }

    /// The widest kernel that this CPU supports and that passed the
    /// start-up self-test (the portable one if none did). The first call
    /// runs detection and the self-tests.
    pub fn detect() -> Kernel {
        detection()
            .usable
            .first()
            .copied()
            .unwrap_or_else(Kernel::portable)
    }

    /// Every usable kernel on this machine, widest first.
    pub fn supported() -> &'static [Kernel] {
        &detection().usable
    }

    /// What detection found, for the daemon to log.
    pub fn detection_report() -> &'static DetectionReport {
        &detection().report
    }

    /// The kernel called `name` (see [`KERNEL_NAMES`]) if it is usable
    /// here; the daemon's way to force one.
    pub fn from_name(name: &str) -> Result<Kernel, KernelError> {
        let known = KERNEL_NAMES
            .iter()
            .find(|n| **n == name)
            .ok_or_else(|| KernelError::UnknownName(name.to_owned()))?;
        let d = detection();
        if let Some(k) = d.usable.iter().find(|k| k.name() == *known) {
            return Ok(*k);
        }
        let status = d
            .report
            .kernels
            .iter()
            .find(|(n, _)| n == known)
            .map(|(_, s)| s.clone())
            .unwrap_or(KernelStatus::NotBuilt);
        Err(KernelError::Unavailable {
            name: known,
            status,
        })
    }

    /// The kernel's name.
    pub fn name(self) -> &'static str {
        self.imp.name()
    }

    /// How many independent streams one call of this kernel advances (1
    /// for the portable kernel).
    pub fn lanes(self) -> usize {
        match self.imp {
            Imp::Portable => 1,
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 => crate::avx2::LANES,
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 => crate::avx512::LANES,
        }
    }

    /// One-shot MD5 of `data` (single stream: the portable code on every
    /// kernel).
    pub fn digest(self, data: &[u8]) -> [u8; 16] {
        portable::digest(data)
    }

    /// MD5 of several independent inputs at once: `out[i]` is the MD5 of
    /// `inputs[i]`, lengths may differ. The inputs are hashed together in
    /// the kernel's lanes; a lane whose input ends takes the next one.
    ///
    /// # Panics
    /// If `inputs.len() != out.len()`.
    pub fn digest_many(self, inputs: &[&[u8]], out: &mut [[u8; 16]]) {
        crate::multi::digest_many(&self, inputs, out);
    }

    /// Advances `states.len()` (at most [`lanes`](Self::lanes)) independent
    /// MD5 states by `blocks` 64-byte blocks each, state `i` consuming
    /// `data[i][..blocks * 64]`. With one state, or on the portable
    /// kernel, the states are advanced one after the other.
    ///
    /// # Panics
    /// If `states.len() != data.len()`, there are more states than lanes,
    /// or some input is shorter than `blocks * 64` bytes.
    pub fn compress_lanes(self, states: &mut [[u32; 4]], data: &[&[u8]], blocks: usize) {
        assert_eq!(states.len(), data.len(), "one input per state");
        assert!(states.len() <= self.lanes(), "more states than lanes");
        let bytes = blocks * BLOCK;
        for d in data {
            assert!(d.len() >= bytes, "lane input shorter than its blocks");
        }
        let n = states.len();
        match self.imp {
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 if n > crate::avx2::LANES_XMM => {
                let (mut st, dt) = pack::<{ crate::avx2::LANES }>(states, data);
                // SAFETY: an Avx2 handle is only made by `probe_avx2` after
                // `is_x86_feature_detected!("avx2")`.
                unsafe { crate::avx2::compress8(&mut st, &dt, blocks) };
                states.copy_from_slice(&st[..n]);
            }
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 if n > 1 => {
                let (mut st, dt) = pack::<{ crate::avx2::LANES_XMM }>(states, data);
                // SAFETY: as above (avx2 detected).
                unsafe { crate::avx2::compress4(&mut st, &dt, blocks) };
                states.copy_from_slice(&st[..n]);
            }
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 if n > crate::avx512::LANES_VL => {
                let (mut st, dt) = pack::<{ crate::avx512::LANES }>(states, data);
                // SAFETY: an Avx512 handle is only made by `probe_avx512`
                // after detecting avx2, avx512f and avx512vl.
                unsafe { crate::avx512::compress16(&mut st, &dt, blocks) };
                states.copy_from_slice(&st[..n]);
            }
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 if n > crate::avx512::LANES_XMM => {
                let (mut st, dt) = pack::<{ crate::avx512::LANES_VL }>(states, data);
                // SAFETY: as above (avx2, avx512f and avx512vl detected).
                unsafe { crate::avx512::compress8(&mut st, &dt, blocks) };
                states.copy_from_slice(&st[..n]);
            }
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 if n > 1 => {
                let (mut st, dt) = pack::<{ crate::avx512::LANES_XMM }>(states, data);
                // SAFETY: as above (avx2, avx512f and avx512vl detected).
                unsafe { crate::avx512::compress4(&mut st, &dt, blocks) };
                states.copy_from_slice(&st[..n]);
            }
            _ => {
                for (s, d) in states.iter_mut().zip(data).take(n) {
                    portable::compress(s, &d[..bytes]);
                }
            }
        }
    }
}

/// Copies up to `N` states and inputs into full lane arrays; unused lanes
/// repeat lane 0 (their results are dropped).
#[cfg(target_arch = "x86_64")]
fn pack<'a, const N: usize>(
    states: &[[u32; 4]],
    data: &[&'a [u8]],
) -> ([[u32; 4]; N], [&'a [u8]; N]) {
    let st = core::array::from_fn(|i| states.get(i).copied().unwrap_or(states[0]));
    let dt = core::array::from_fn(|i| data.get(i).copied().unwrap_or(data[0]));
    (st, dt)
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kernel({})", self.name())
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_kernels_are_never_selected() {
        let d = detect_with(&|k: Kernel| {
            if k.imp == Imp::Portable {
                Ok(())
            } else {
                Err("injected failure".to_owned())
            }
        });
        assert_eq!(d.usable, vec![Kernel::portable()]);
        assert_eq!(d.report.selected, "portable");
        let text = d.report.to_string();
        assert!(text.contains("selected MD5 kernel `portable`"), "{text}");
        if d.report.any_self_test_failed() {
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
        let d = detect_with(&|_| Err("all broken".to_owned()));
        assert!(d.usable.is_empty());
        assert_eq!(d.report.selected, "none");
        assert!(d.report.any_self_test_failed());
    }

    #[test]
    fn from_name_refuses_unknown_names() {
        assert!(matches!(
            Kernel::from_name("sse9"),
            Err(KernelError::UnknownName(_))
        ));
        assert_eq!(Kernel::from_name("portable"), Ok(Kernel::portable()));
    }
}

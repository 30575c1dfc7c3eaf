//! Kernel handles, CPU detection and dispatch.
//!
//! This is the only module that looks at the CPU, and the only place a
//! [`Kernel`] is made: its field is private and every constructor either
//! checks the CPU at runtime or names the portable kernel. Holding a handle
//! for a SIMD kernel is therefore proof that the CPU has the instructions
//! it needs, which is what makes the `unsafe` calls below sound.
//!
//! Detection runs once (cached in a [`OnceLock`]): every kernel the build
//! contains and the CPU supports is put through the start-up self-test
//! (see `selftest.rs`), and the fastest one that passes is chosen. A kernel
//! that fails is never handed out, and the reason is kept in the
//! [`DetectionReport`] for the daemon to log. The library never reads the
//! environment: choosing a kernel by name is [`Kernel::from_name`], for the
//! daemon to call.

use std::fmt;
use std::sync::OnceLock;

use crate::portable::{self, PACKET, State};
use crate::selftest::{self, Hashes};

/// A HighwayHash implementation the CPU can run.
///
/// Obtained from [`Kernel::detect`], [`Kernel::from_name`],
/// [`Kernel::supported`] or [`Kernel::portable`]; there is no other way to
/// make one. Every handle (other than the portable one, which needs nothing)
/// refers to a kernel that passed the start-up self-test on this machine.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kernel {
    imp: Imp,
    /// Tuning of the x86 packet loops (see `avx2::link`): the order of the
    /// sum linking two packets. Chosen from the CPU model by `tuning()`;
    /// both orders compute the same digests.
    zipper_last: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Imp {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
    Neon,
}

/// Every kernel name this crate knows, on any architecture, fastest first.
pub const KERNEL_NAMES: [&str; 4] = ["avx512", "avx2", "neon", "portable"];

impl Imp {
    fn name(self) -> &'static str {
        match self {
            Imp::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 => "avx2",
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 => "avx512",
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            Imp::Neon => "neon",
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
    /// How the x86 kernels' packet loop is tuned for this CPU model (the
    /// digests do not depend on it).
    pub tuning: &'static str,
    /// Every kernel name in [`KERNEL_NAMES`] order, with its status.
    pub kernels: Vec<(&'static str, KernelStatus)>,
}

impl DetectionReport {
    /// Whether some kernel the CPU supports failed its self-test (a
    /// condition worth a warning: the build or the CPU is suspect).
    pub fn any_self_test_failed(&self) -> bool {
        self.kernels
            .iter()
            .any(|(_, s)| matches!(s, KernelStatus::SelfTestFailed(_)))
    }
}

impl fmt::Display for DetectionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bitrot: selected HighwayHash kernel `{}` ({})",
            self.selected, self.tuning
        )?;
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
                "unknown HighwayHash kernel {n:?} (known: {})",
                KERNEL_NAMES.join(", ")
            ),
            KernelError::Unavailable { name, status } => {
                write!(f, "HighwayHash kernel `{name}` is unavailable: {status}")
            }
        }
    }
}

impl std::error::Error for KernelError {}

struct Detection {
    report: DetectionReport,
    /// Usable kernels, fastest first (always ends with the portable one if
    /// it passed).
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
        "neon" => probe_neon(),
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
    Ok(Some(Kernel {
        imp: Imp::Avx2,
        zipper_last: tuning().0,
    }))
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
    if !std::arch::is_x86_feature_detected!("avx512bw") {
        missing.push("avx512bw");
    }
    if !std::arch::is_x86_feature_detected!("avx512vl") {
        missing.push("avx512vl");
    }
    if !missing.is_empty() {
        return Err(KernelStatus::UnsupportedCpu(missing));
    }
    Ok(Some(Kernel {
        imp: Imp::Avx512,
        zipper_last: tuning().0,
    }))
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

#[cfg(not(target_arch = "x86_64"))]
fn probe_avx2() -> Result<Option<Kernel>, KernelStatus> {
    Ok(None)
}

#[cfg(not(target_arch = "x86_64"))]
fn probe_avx512() -> Result<Option<Kernel>, KernelStatus> {
    Ok(None)
}

#[cfg(all(target_arch = "aarch64", target_endian = "little"))]
fn probe_neon() -> Result<Option<Kernel>, KernelStatus> {
    if !std::arch::is_aarch64_feature_detected!("neon") {
        return Err(KernelStatus::UnsupportedCpu(vec!["neon"]));
    }
    Ok(Some(Kernel {
        imp: Imp::Neon,
        zipper_last: false,
    }))
}

#[cfg(not(all(target_arch = "aarch64", target_endian = "little")))]
fn probe_neon() -> Result<Option<Kernel>, KernelStatus> {
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
        report: DetectionReport {
            selected,
            tuning: tuning().1,
            kernels,
        },
        usable,
    }
}

fn standard_self_test(k: Kernel) -> Result<(), String> {
    selftest::run(&k, &Kernel::portable())
}

fn detection() -> &'static Detection {
    DETECTION.get_or_init(|| detect_with(&standard_self_test))
}

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
        match detection().usable.first() {
            Some(&k) => k,
            None => panic!(
                "no HighwayHash kernel passed its self-test: {}",
                detection().report
            ),
        }
    }

    /// Every usable kernel (supported by the CPU, enabled in the build and
    /// passing the self-test), fastest first.
    pub fn supported() -> &'static [Kernel] {
        &detection().usable
    }

    /// What detection found: the selected kernel and every kernel's status.
    pub fn detection_report() -> &'static DetectionReport {
        &detection().report
    }

    /// The kernel called `name` (one of [`KERNEL_NAMES`]), if it is usable
    /// here. Meant for the daemon, which may take the name from its
    /// configuration; this crate never reads the environment.
    pub fn from_name(name: &str) -> Result<Kernel, KernelError> {
        let Some(&known) = KERNEL_NAMES.iter().find(|&&n| n == name) else {
            return Err(KernelError::UnknownName(name.to_owned()));
        };
        let d = detection();
        if let Some(&k) = d.usable.iter().find(|k| k.name() == known) {
            return Ok(k);
        }
        let status = d
            .report
            .kernels
            .iter()
            .find(|(n, _)| *n == known)
            .map(|(_, s)| s.clone())
            .unwrap_or(KernelStatus::NotBuilt);
        Err(KernelError::Unavailable {
            name: known,
            status,
        })
    }

    /// The portable kernel (plain 64-bit arithmetic; runs everywhere). This
    /// does not run the self-test.
    pub const fn portable() -> Kernel {
        Kernel {
            imp: Imp::Portable,
            zipper_last: false,
        }
    }

    /// The kernel's name, as accepted by [`Kernel::from_name`].
    pub fn name(self) -> &'static str {
        self.imp.name()
    }

    /// One-shot keyed HighwayHash-64 of `data`.
    pub fn hash64(self, key: &[u8; 32], data: &[u8]) -> u64 {
        match self.imp {
            Imp::Portable => {
                let mut s = State::new(key);
                let whole = data.len() & !(PACKET - 1);
                portable::update(&mut s, &data[..whole]);
                portable::digest64_from(&portable::finish(&s, &data[whole..], portable::ROUNDS_64))
            }
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 or Avx512 handle is only made by `probe_avx2`
            // / `probe_avx512` after `is_x86_feature_detected!("avx2")`.
            Imp::Avx2 | Imp::Avx512 => unsafe {
                if self.zipper_last {
                    crate::avx2::hash64::<true>(key, data)
                } else {
                    crate::avx2::hash64::<false>(key, data)
                }
            },
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            // SAFETY: a Neon handle is only made by `probe_neon` after
            // runtime detection of NEON.
            Imp::Neon => unsafe { crate::neon::hash64(key, data) },
        }
    }

    /// One-shot keyed HighwayHash-128 of `data` (two little-endian words,
    /// as minio/highwayhash's `Sum128`).
    pub fn hash128(self, key: &[u8; 32], data: &[u8]) -> [u8; 16] {
        let h = match self.imp {
            Imp::Portable => {
                let mut s = State::new(key);
                let whole = data.len() & !(PACKET - 1);
                portable::update(&mut s, &data[..whole]);
                portable::digest128_from(&portable::finish(
                    &s,
                    &data[whole..],
                    portable::ROUNDS_128,
                ))
            }
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 or Avx512 handle is only made by `probe_avx2`
            // / `probe_avx512` after `is_x86_feature_detected!("avx2")`.
            Imp::Avx2 | Imp::Avx512 => unsafe {
                if self.zipper_last {
                    crate::avx2::hash128::<true>(key, data)
                } else {
                    crate::avx2::hash128::<false>(key, data)
                }
            },
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            // SAFETY: a Neon handle is only made by `probe_neon` after
            // runtime detection of NEON.
            Imp::Neon => unsafe { crate::neon::hash128(key, data) },
        };
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&h[0].to_le_bytes());
        out[8..].copy_from_slice(&h[1].to_le_bytes());
        out
    }

    /// One-shot keyed HighwayHash-256 of `data` (four little-endian words,
    /// byte-identical to minio/highwayhash's `Sum`).
    pub fn hash256(self, key: &[u8; 32], data: &[u8]) -> [u8; 32] {
        let h = match self.imp {
            Imp::Portable => portable::hash256(key, data),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 or Avx512 handle is only made by `probe_avx2`
            // / `probe_avx512` after `is_x86_feature_detected!("avx2")`.
            Imp::Avx2 | Imp::Avx512 => unsafe {
                if self.zipper_last {
                    crate::avx2::hash256::<true>(key, data)
                } else {
                    crate::avx2::hash256::<false>(key, data)
                }
            },
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            // SAFETY: a Neon handle is only made by `probe_neon` after
            // runtime detection of NEON.
            Imp::Neon => unsafe { crate::neon::hash256(key, data) },
        };
        words_to_bytes(h)
    }

    /// HighwayHash-256 of several independent inputs at once:
    /// `out[i] = self.hash256(key, inputs[i])`, with the streams
    /// interleaved (lengths may differ). This is the shape of bitrot
    /// protection for one erasure block: the k + m shard blocks are hashed
    /// together.
    ///
    /// # Panics
    /// If `inputs.len() != out.len()`.
    pub fn hash256_many(self, key: &[u8; 32], inputs: &[&[u8]], out: &mut [[u8; 32]]) {
        crate::multi::hash256_many(self, key, inputs, out);
    }

    // ----- crate-internal entry points used by the hasher and scheduler.

    /// The keyed initial state, computed the way the kernel's `update` will
    /// load it (vector stores for SIMD kernels, so the loads that follow are
    /// forwarded instead of stalling on scalar stores).
    pub(crate) fn init(self, key: &[u8; 32]) -> State {
        match self.imp {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 or Avx512 handle is only made by `probe_avx2`
            // / `probe_avx512` after `is_x86_feature_detected!("avx2")`.
            Imp::Avx2 | Imp::Avx512 => unsafe { crate::avx2::init(key) },
            _ => State::new(key),
        }
    }

    /// Mixes `data` (a multiple of 32 bytes) into `s`.
    pub(crate) fn update(self, s: &mut State, data: &[u8]) {
        debug_assert_eq!(data.len() % PACKET, 0);
        match self.imp {
            Imp::Portable => portable::update(s, data),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 or Avx512 handle is only made by `probe_avx2`
            // / `probe_avx512` after `is_x86_feature_detected!("avx2")`.
            Imp::Avx2 | Imp::Avx512 => unsafe {
                if self.zipper_last {
                    crate::avx2::update::<true>(s, data)
                } else {
                    crate::avx2::update::<false>(s, data)
                }
            },
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            // SAFETY: a Neon handle is only made by `probe_neon` after
            // runtime detection of NEON.
            Imp::Neon => unsafe { crate::neon::update(s, data) },
        }
    }

    /// Applies the tail (0..=31 bytes) and `rounds` finalisation rounds to
    /// a copy of `s`.
    pub(crate) fn finish(self, s: &State, tail: &[u8], rounds: usize) -> State {
        debug_assert!(tail.len() < PACKET);
        match self.imp {
            Imp::Portable => portable::finish(s, tail, rounds),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 or Avx512 handle is only made by `probe_avx2`
            // / `probe_avx512` after `is_x86_feature_detected!("avx2")`.
            Imp::Avx2 | Imp::Avx512 => unsafe { crate::avx2::finish(s, tail, rounds) },
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            // SAFETY: a Neon handle is only made by `probe_neon` after
            // runtime detection of NEON.
            Imp::Neon => unsafe { crate::neon::finish(s, tail, rounds) },
        }
    }

    /// The numbers of streams the kernel can advance together, widest
    /// first; empty if it has no multi-stream path.
    pub(crate) fn lane_widths(self) -> &'static [usize] {
        match self.imp {
            Imp::Portable => &[],
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 => &[3, 2],
            #[cfg(target_arch = "x86_64")]
            Imp::Avx512 => &[8, 4, 2],
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            Imp::Neon => &[2],
        }
    }

    /// Advances `states.len()` (one of `lane_widths()`) states by
    /// `packets` packets each; `data[i]` holds at least `packets * 32`
    /// bytes.
    pub(crate) fn lockstep(self, states: &mut [State], data: &[&[u8]], packets: usize) {
        assert_eq!(states.len(), data.len());
        match (self.imp, states.len(), self.zipper_last) {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx2 handle is only made by `probe_avx2` after
            // `is_x86_feature_detected!("avx2")`.
            (Imp::Avx2, 2, false) => unsafe {
                crate::avx2::lockstep::<2, false>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx2, 2, true) => unsafe {
                crate::avx2::lockstep::<2, true>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx2, 3, false) => unsafe {
                crate::avx2::lockstep::<3, false>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx2, 3, true) => unsafe {
                crate::avx2::lockstep::<3, true>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Avx512 handle is only made by `probe_avx512` after
            // detecting avx2, avx512f, avx512bw and avx512vl.
            (Imp::Avx512, 2, false) => unsafe {
                crate::avx512::lockstep::<1, false>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx512, 2, true) => unsafe {
                crate::avx512::lockstep::<1, true>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx512, 4, false) => unsafe {
                crate::avx512::lockstep::<2, false>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx512, 4, true) => unsafe {
                crate::avx512::lockstep::<2, true>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx512, 8, false) => unsafe {
                crate::avx512::lockstep::<4, false>(states, data, packets)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Imp::Avx512, 8, true) => unsafe {
                crate::avx512::lockstep::<4, true>(states, data, packets)
            },
            #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
            // SAFETY: a Neon handle is only made by `probe_neon` after
            // runtime detection of NEON.
            (Imp::Neon, 2, _) => unsafe { crate::neon::lockstep::<2>(states, data, packets) },
            (imp, n, _) => unreachable!("kernel {} has no {n}-stream path", imp.name()),
        }
    }
}

/// Little-endian serialisation of the digest words.
pub(crate) fn words_to_bytes(h: [u64; 4]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (chunk, w) in out.chunks_exact_mut(8).zip(h) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    out
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

impl Hashes for Kernel {
    fn hash64(&self, key: &[u8; 32], data: &[u8]) -> u64 {
        Kernel::hash64(*self, key, data)
    }
    fn hash128(&self, key: &[u8; 32], data: &[u8]) -> [u8; 16] {
        Kernel::hash128(*self, key, data)
    }
    fn hash256(&self, key: &[u8; 32], data: &[u8]) -> [u8; 32] {
        Kernel::hash256(*self, key, data)
    }
    fn streaming256(&self, key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
        let mut h = crate::HighwayHasher::with_kernel(*self, key);
        for p in parts {
            h.update(p);
        }
        h.finalize256()
    }
    fn many256(&self, key: &[u8; 32], inputs: &[&[u8]], out: &mut [[u8; 32]]) {
        Kernel::hash256_many(*self, key, inputs, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel that passes everything except one input length.
    struct Broken {
        inner: Kernel,
        bad_len: usize,
    }

    impl Hashes for Broken {
        fn hash64(&self, key: &[u8; 32], data: &[u8]) -> u64 {
            self.inner.hash64(key, data)
        }
        fn hash128(&self, key: &[u8; 32], data: &[u8]) -> [u8; 16] {
            self.inner.hash128(key, data)
        }
        fn hash256(&self, key: &[u8; 32], data: &[u8]) -> [u8; 32] {
            let mut h = self.inner.hash256(key, data);
            if data.len() == self.bad_len {
                h[31] ^= 0x80;
            }
            h
        }
        fn streaming256(&self, key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
            let n: usize = parts.iter().map(|p| p.len()).sum();
            let mut h = self.inner.streaming256(key, parts);
            if n == self.bad_len {
                h[0] ^= 1;
            }
            h
        }
        fn many256(&self, key: &[u8; 32], inputs: &[&[u8]], out: &mut [[u8; 32]]) {
            self.inner.many256(key, inputs, out);
            for (o, i) in out.iter_mut().zip(inputs) {
                if i.len() == self.bad_len {
                    o[5] ^= 4;
                }
            }
        }
    }

    #[test]
    fn self_test_rejects_broken_kernels() {
        let p = Kernel::portable();
        assert_eq!(selftest::run(&p, &p), Ok(()));
        // 992: MinIO's last message; 17: a tail only the chained KAT and the
        // cross-check see; 4099: only the cross-check (and multi-stream).
        for bad_len in [0, 992, 17, 31, 33, 4099, 1029] {
            let broken = Broken { inner: p, bad_len };
            let r = selftest::run(&broken, &p);
            assert!(
                r.is_err(),
                "self-test accepted a kernel wrong at {bad_len} bytes"
            );
            eprintln!("bad_len {bad_len}: {}", r.unwrap_err());
        }
    }

    #[test]
    fn failing_kernels_are_never_selected() {
        // Fail everything but the portable kernel: detection must fall back
        // to it and say why the others were dropped.
        let d = detect_with(&|k: Kernel| {
            if k.imp == Imp::Portable {
                Ok(())
            } else {
                Err("injected failure".to_owned())
            }
        });
        assert_eq!(d.usable, vec![Kernel::portable()]);
        assert_eq!(d.report.selected, "portable");
        for (name, status) in &d.report.kernels {
            if *name == "portable" {
                assert_eq!(*status, KernelStatus::Usable);
            } else {
                assert!(
                    !matches!(status, KernelStatus::Usable),
                    "{name} usable despite failing"
                );
            }
        }
        let text = d.report.to_string();
        assert!(
            text.contains("selected HighwayHash kernel `portable`"),
            "{text}"
        );
        // On a machine with SIMD kernels the failure is reported by name.
        if d.report.any_self_test_failed() {
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
        let real = detect_with(&standard_self_test);
        if real.usable.len() >= 2 {
            let first = real.usable[0];
            let d = detect_with(&|k: Kernel| {
                if k == first {
                    Err("injected".into())
                } else {
                    standard_self_test(k)
                }
            });
            assert_eq!(d.usable[0], real.usable[1]);
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
        eprintln!("tuning here: {}", tuning().1);
    }

    #[test]
    fn nothing_usable_is_reported() {
        let d = detect_with(&|_| Err("all broken".to_owned()));
        assert!(d.usable.is_empty());
        assert_eq!(d.report.selected, "none");
        assert!(d.report.any_self_test_failed());
    }
}

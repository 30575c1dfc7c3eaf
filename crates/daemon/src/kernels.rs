//! The start-up report of the kernel crates: which erasure-coding,
//! HighwayHash, MD5 and SHA-256 kernels CPU detection and the self-tests
//! chose, and a warning for any kernel the CPU runs but that failed its
//! self-test (never used: the build or the CPU is suspect).

/// Logs the kernels chosen, and every detection report with a failed
/// self-test. The four crates report in one shape (`kernel-report`'s
/// `DetectionReport`), so one loop covers them.
pub(crate) fn log_kernels() {
    tracing::info!(
        erasure = ec_simd::Kernel::detect().name(),
        highwayhash = bitrot::Kernel::detect().name(),
        highwayhash_tuning = bitrot::Kernel::tuning(),
        md5 = md5x::Kernel::detect().name(),
        sha256 = sha256x::Kernel::detect().name(),
        "kernels selected after CPU detection and self-tests"
    );
    let reports = [
        ec_simd::Kernel::detection_report(),
        bitrot::Kernel::detection_report(),
        md5x::Kernel::detection_report(),
        sha256x::Kernel::detection_report(),
    ];
    for report in reports {
        if report.any_self_test_failed() {
            tracing::warn!("{report}");
        }
    }
}

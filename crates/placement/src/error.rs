//! The one error type of the crate.

use std::fmt;

/// Everything that can go wrong in this crate.
///
/// Every variant carries what a person needs to fix the input: the offending
/// argument, the numbers involved and, where there is one, the accepted
/// alternative. The `Display` text is meant to be shown as is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// No endpoint argument was given.
    NoArguments,
    /// An argument contains a control character (tab, newline, NUL ...).
    ControlCharacter {
        /// The argument, with control characters escaped.
        arg: String,
    },
    /// An argument uses braces or `...` but is not a valid ellipsis pattern
    /// `{N...M}`.
    InvalidEllipsis {
        /// The argument as given.
        arg: String,
        /// What exactly is wrong.
        reason: String,
    },
    /// An ellipsis range whose start is greater than its end, like `{4...1}`.
    EllipsisRangeReversed {
        /// The argument as given.
        arg: String,
        /// Parsed start of the range.
        start: u64,
        /// Parsed end of the range.
        end: u64,
    },
    /// An argument expands to more drives than this crate accepts.
    TooManyDrives {
        /// The argument as given.
        arg: String,
        /// The limit ([`crate::MAX_DRIVES_PER_ARG`]).
        limit: usize,
    },
    /// Several arguments, some with ellipses and some without: MinIO requires
    /// either all of them to have ellipses (one server pool per argument) or
    /// none (one legacy pool of all arguments).
    MixedEllipsisArgs {
        /// An argument without ellipses.
        plain_arg: String,
    },
    /// The same drive appears twice.
    DuplicateDrive {
        /// The normalized drive (endpoint string) that appears twice.
        drive: String,
        /// The argument that produced the first occurrence.
        first_arg: String,
        /// The argument that produced the second occurrence.
        second_arg: String,
    },
    /// An empty path or the root directory was given as a drive.
    EmptyOrRootPath {
        /// The argument as given.
        arg: String,
    },
    /// A bare IP address (or `ip:port`) was given where a drive is expected.
    MissingScheme {
        /// The argument as given.
        arg: String,
    },
    /// A URL endpoint whose scheme is neither `http` nor `https`.
    UnsupportedScheme {
        /// The argument as given.
        arg: String,
        /// The scheme found.
        scheme: String,
    },
    /// A URL endpoint that is not of the form `http(s)://host[:port]/path`.
    InvalidUrl {
        /// The argument as given.
        arg: String,
        /// What exactly is wrong.
        reason: String,
    },
    /// A URL endpoint with a port that is not a number in 1..=65535.
    InvalidPort {
        /// The argument as given.
        arg: String,
        /// The port text found.
        port: String,
    },
    /// Path endpoints and URL endpoints together.
    MixedStyles {
        /// A path endpoint.
        path_arg: String,
        /// A URL endpoint.
        url_arg: String,
    },
    /// `http` and `https` endpoints together.
    MixedSchemes {
        /// An `http` endpoint.
        http_arg: String,
        /// An `https` endpoint.
        https_arg: String,
    },
    /// Within one pool, the same path on the same host under two ports.
    SamePathOnHost {
        /// The first endpoint.
        first: String,
        /// The second endpoint.
        second: String,
    },
    /// A single drive given as a URL: a single-drive deployment takes a path.
    SingleDriveNotPath {
        /// The argument as given.
        arg: String,
    },
    /// The working directory given in the options is not an absolute path.
    InvalidWorkingDir {
        /// The directory as given.
        dir: String,
    },
    /// A pool has fewer drives than the smallest erasure set (2) or than the
    /// requested set drive count.
    TooFewDrives {
        /// The pool's argument(s).
        pool: String,
        /// Number of drives in the pool.
        drives: usize,
        /// The minimum required.
        minimum: usize,
    },
    /// No supported erasure-set size (2..=16) divides the pool's drive count.
    NotDivisible {
        /// The pool's argument(s).
        pool: String,
        /// Number of drives in the pool.
        drives: usize,
    },
    /// Set sizes divide the drive count, but none spreads the drives evenly
    /// over the first ellipsis of the argument (usually the hosts).
    NoSymmetricDistribution {
        /// The pool's argument(s).
        pool: String,
        /// Number of drives in the pool.
        drives: usize,
        /// Length of the range the set size must agree with.
        symmetry_count: usize,
        /// Set sizes that divide the drive count (none symmetric).
        divisors: Vec<usize>,
    },
    /// A set drive count override that is not acceptable for a pool.
    InvalidSetDriveCount {
        /// The pool's argument(s).
        pool: String,
        /// Number of drives in the pool.
        drives: usize,
        /// The requested set drive count.
        requested: usize,
        /// The acceptable values.
        acceptable: Vec<usize>,
    },
    /// A storage class value that is not `EC:n`.
    InvalidStorageClass {
        /// The value as given.
        value: String,
        /// What exactly is wrong.
        reason: String,
    },
    /// A parity that the erasure sets cannot carry.
    InvalidParity {
        /// What exactly is wrong.
        reason: String,
    },
    /// A distribution algorithm name that is not one MinIO writes in
    /// `format.json`.
    UnknownDistributionAlgo {
        /// The name as given.
        name: String,
    },
    /// A set count of zero.
    ZeroSetCount,
    /// Too few drives of the object's set are online to judge free space.
    NotEnoughOnlineDrives {
        /// How many are needed.
        needed: usize,
        /// How many are online.
        online: usize,
    },
    /// No pool has room for the object.
    StorageFull,
    /// A local-endpoint check failed (see [`crate::Topology::check_local`]).
    LocalEndpoints {
        /// What exactly is wrong.
        reason: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoArguments => write!(
                f,
                "no drive given: pass one or more paths or URLs, e.g. /mnt/disk{{1...4}}"
            ),
            Error::ControlCharacter { arg } => write!(
                f,
                "argument {arg} contains a control character; drive arguments must be printable"
            ),
            Error::InvalidEllipsis { arg, reason } => write!(
                f,
                "invalid ellipsis in '{arg}': {reason}; write ranges as {{N...M}} with three dots, \
                 N <= M, decimal or lowercase hexadecimal (e.g. /mnt/disk{{1...8}})"
            ),
            Error::EllipsisRangeReversed { arg, start, end } => write!(
                f,
                "invalid ellipsis in '{arg}': range start {start} is greater than its end {end}; \
                 write the smaller number first"
            ),
            Error::TooManyDrives { arg, limit } => write!(
                f,
                "'{arg}' expands to more than {limit} drives; check the ranges"
            ),
            Error::MixedEllipsisArgs { plain_arg } => write!(
                f,
                "'{plain_arg}' has no ellipsis while other arguments do: either give every pool \
                 as an ellipsis pattern (one argument per pool) or list every drive without \
                 ellipses (one pool)"
            ),
            Error::DuplicateDrive {
                drive,
                first_arg,
                second_arg,
            } => {
                if first_arg == second_arg {
                    write!(
                        f,
                        "drive {drive} appears twice in '{first_arg}'; remove the repetition"
                    )
                } else {
                    write!(
                        f,
                        "drive {drive} appears twice, from '{first_arg}' and from '{second_arg}'; \
                         each drive may be given once"
                    )
                }
            }
            Error::EmptyOrRootPath { arg } => write!(
                f,
                "'{arg}': an empty path or the root directory cannot be a drive; give a directory \
                 such as /mnt/disk1"
            ),
            Error::MissingScheme { arg } => write!(
                f,
                "'{arg}' looks like an IP address: write it as a URL with a scheme and a path, \
                 e.g. http://{arg}/mnt/disk1"
            ),
            Error::UnsupportedScheme { arg, scheme } => write!(
                f,
                "'{arg}': scheme '{scheme}' is not supported; use http:// or https://"
            ),
            Error::InvalidUrl { arg, reason } => write!(
                f,
                "'{arg}' is not a valid drive URL: {reason}; expected http(s)://host[:port]/path"
            ),
            Error::InvalidPort { arg, port } => write!(
                f,
                "'{arg}': port '{port}' is not a number between 1 and 65535"
            ),
            Error::MixedStyles { path_arg, url_arg } => write!(
                f,
                "'{path_arg}' is a local path but '{url_arg}' is a URL: give all drives as paths \
                 (one server) or all as URLs (distributed)"
            ),
            Error::MixedSchemes {
                http_arg,
                https_arg,
            } => write!(
                f,
                "'{http_arg}' uses http but '{https_arg}' uses https: all drives must use the same \
                 scheme"
            ),
            Error::SamePathOnHost { first, second } => write!(
                f,
                "{first} and {second} are the same path on the same host under different ports; \
                 one directory can serve only one drive"
            ),
            Error::SingleDriveNotPath { arg } => write!(
                f,
                "'{arg}': a single-drive deployment takes a local path, not a URL"
            ),
            Error::InvalidWorkingDir { dir } => {
                write!(f, "working directory '{dir}' must be an absolute path")
            }
            Error::TooFewDrives {
                pool,
                drives,
                minimum,
            } => write!(
                f,
                "pool '{pool}' has {drives} drive(s) but needs at least {minimum}"
            ),
            Error::NotDivisible { pool, drives } => write!(
                f,
                "pool '{pool}' has {drives} drives, which no erasure-set size from 2 to 16 \
                 divides; use a drive count with such a divisor (e.g. a multiple of 4, 8 or 16)"
            ),
            Error::NoSymmetricDistribution {
                pool,
                drives,
                symmetry_count,
                divisors,
            } => write!(
                f,
                "pool '{pool}' has {drives} drives, divisible by set sizes {divisors:?}, but none \
                 of them spreads evenly over the {symmetry_count} values of the first ellipsis; \
                 change the number of hosts or of drives per host"
            ),
            Error::InvalidSetDriveCount {
                pool,
                drives,
                requested,
                acceptable,
            } => write!(
                f,
                "set drive count {requested} does not fit pool '{pool}' of {drives} drives; \
                 acceptable values are {acceptable:?}"
            ),
            Error::InvalidStorageClass { value, reason } => write!(
                f,
                "invalid storage class '{value}': {reason}; expected EC:<parity>, e.g. EC:4"
            ),
            Error::InvalidParity { reason } => write!(f, "invalid parity: {reason}"),
            Error::UnknownDistributionAlgo { name } => write!(
                f,
                "unknown distribution algorithm '{name}'; expected CRCMOD, SIPMOD or SIPMOD+PARITY"
            ),
            Error::ZeroSetCount => write!(f, "the set count must be at least 1"),
            Error::NotEnoughOnlineDrives { needed, online } => write!(
                f,
                "not enough online drives to judge free space: {online} online, {needed} needed"
            ),
            Error::StorageFull => write!(f, "no pool has room for the object"),
            Error::LocalEndpoints { reason } => write!(f, "{reason}"),
        }
    }
}

impl std::error::Error for Error {}

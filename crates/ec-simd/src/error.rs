//! The crate's error type.

use core::fmt;

/// Everything that can go wrong when building a coder or calling it.
///
/// No public function of this crate panics on bad input; it returns one of
/// these instead. A kernel asked for by name that cannot be had is a
/// [`KernelError`](crate::KernelError), the same type in every kernel crate.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The shard counts are outside what GF(2^8) Reed-Solomon supports:
    /// at least one data and one parity shard, at most 256 in total.
    InvalidShardCounts {
        /// Requested data shards.
        data: usize,
        /// Requested parity shards.
        parity: usize,
    },
    /// A list of shards (or of presence flags) has the wrong number of entries.
    WrongShardCount {
        /// What the argument holds (`"data"`, `"parity"`, `"shards"`, `"present"`).
        what: &'static str,
        /// The number of entries the coder needs.
        expected: usize,
        /// The number of entries passed.
        got: usize,
    },
    /// Shards of one call must all have the same length.
    ShardLengthMismatch {
        /// Length of the first shard of the call.
        expected: usize,
        /// Index of the first shard whose length differs (counted over the
        /// coder's shard numbering: data shards first, then parity).
        index: usize,
        /// Its length.
        got: usize,
    },
    /// Fewer shards survive than there are data shards, so nothing can be
    /// reconstructed.
    TooFewShards {
        /// Shards needed (the data shard count).
        needed: usize,
        /// Shards marked present.
        present: usize,
    },
    /// A square sub-matrix of the encoding matrix did not invert. This cannot
    /// happen for the Vandermonde-derived matrix and would indicate a bug.
    SingularMatrix,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidShardCounts { data, parity } => write!(
                f,
                "invalid shard counts {data}+{parity}: need at least 1 data and 1 parity shard and at most 256 in total"
            ),
            Self::WrongShardCount {
                what,
                expected,
                got,
            } => write!(f, "expected {expected} {what} entries, got {got}"),
            Self::ShardLengthMismatch {
                expected,
                index,
                got,
            } => write!(
                f,
                "shard {index} has length {got}, expected {expected} like the first shard"
            ),
            Self::TooFewShards { needed, present } => write!(
                f,
                "too few shards to reconstruct: {present} present, {needed} needed"
            ),
            Self::SingularMatrix => f.write_str("decoding matrix is singular (internal error)"),
        }
    }
}

impl std::error::Error for Error {}

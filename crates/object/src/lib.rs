//! object: work in progress.

//! placement: work in progress.

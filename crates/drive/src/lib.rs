//! drive: work in progress.

//! bitrot: work in progress.

//! The drive's integration tests, in one test binary: each file of `tests/`
//! is a binary of its own, linked on its own, so the tests that can share a
//! process share this one. `tests/group_commit.rs` stays apart: it counts a
//! file system's `syncfs` calls, to which no other test may add.

#[path = "../common/mod.rs"]
mod common;
mod deadline;
mod suite;
mod walk;

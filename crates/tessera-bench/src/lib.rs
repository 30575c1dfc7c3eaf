//! tessera-bench: an S3 load generator (put, get, mixed, delete, stat,
//! list, multipart; verified GETs; its own SigV4 signing over hyper), a
//! compare mode (two endpoints, alternating rounds) and the side-by-side
//! harness that runs Tessera and MinIO on this machine.
//!
//! `docs/benchmarks.md` says how to use it and holds the figures;
//! `docs/bench-runs/` holds every archived run.

pub mod chunked;
pub mod cli;
pub mod client;
pub mod compare;
pub mod harness;
pub mod hist;
pub mod pattern;
pub mod procstat;
pub mod record;
pub mod s3;
pub mod sign;
pub mod units;
pub mod workload;

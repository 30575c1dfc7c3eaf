//! The daemon's integration tests, in one test binary (one link of
//! aws-sdk-s3 and the server's crates rather than one per file): each runs
//! the real `tessera` binary.

mod cli;
mod health_metrics;
mod lifecycle;
mod s3_api;
mod s3_bad_input;
mod support;
mod tls;

//! The object crate's integration tests, in one binary (one link instead of
//! one per file), a module per subject:
//!
//! * `round_trips`, `inline`, `versioning`, `buckets`, `multipart`,
//!   `listing`: the S3 operations end to end on real directories;
//! * `damage`, `commit`, `durability`, `journal`, `quorum`: drives lost,
//!   bitrot, heal, failed commits, a crashed writer, a hung drive, the
//!   journal of writes that missed drives, and what a read answers while
//!   the drives that hold the newest version fail;
//! * `heal_seq`: heals on demand (what each drive held, dry runs, a
//!   bucket or a prefix) and the scanner's speed set while they run;
//! * `locks`, `conditional`, `deployments`: concurrency, conditional writes,
//!   pools, storage classes and the drive backends;
//! * `put_stream`, `get_pipeline`, `read_cache`: the PUT and GET data paths
//!   and the read cache;
//! * `fuzz`, `minio_fixtures`: the codecs against damaged input and files
//!   MinIO wrote;
//! * `minio_format`, `minio_interop`, `minio_xlmeta` (feature
//!   `minio-interop`): the real MinIO as the oracle.
//!
//! `support` holds what they share.

mod support;

mod buckets;
mod commit;
mod conditional;
mod damage;
mod deployments;
mod durability;
mod fuzz;
mod get_pipeline;
mod heal_seq;
mod inline;
mod journal;
mod listing;
mod locks;
mod minio_fixtures;
mod minio_format;
mod minio_interop;
mod minio_xlmeta;
mod multipart;
mod put_stream;
mod quorum;
mod read_cache;
mod round_trips;
mod versioning;

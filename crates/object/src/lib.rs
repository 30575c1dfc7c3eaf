//! object: MinIO's on-disk metadata formats, the foundation of Tessera's
//! erasure object layer.
//!
//! Tessera serves MinIO drives in place and MinIO must be able to read what
//! Tessera writes, so these codecs are byte-compatible with MinIO's:
//!
//! * [`xlmeta`]: `xl.meta`, the per-object, per-drive file holding every
//!   version of an object (the version journal) and the data of small
//!   objects (inline data);
//! * [`bucketmeta`]: `.metadata.bin`, a bucket's configuration (policy,
//!   versioning, lifecycle, quota, …) as MinIO stores it under
//!   `.minio.sys/buckets/<bucket>/`.
//!
//! Both rest on [`msgp`], a MessagePack reader and writer that makes the same
//! encoding choices as the Go `tinylib/msgp` generator MinIO uses (MinIO
//! hashes some of these encodings, so equivalent is not enough).
//!
//! On them stands [`layer`], the erasure object layer: buckets and objects
//! (PUT, ranged GET, HEAD, DELETE with versions and delete markers, copy,
//! multipart uploads, listing, heal and a background scanner) over erasure
//! sets of [`drive::Drive`]s, using `ec-simd` for Reed-Solomon, `bitrot` for
//! the HighwayHash shard frames and `placement` for set choice and shard
//! order. See [`layer`] for an example, and `examples/embed.rs`.

pub mod bucketmeta;
mod civil;
#[doc(hidden)]
pub mod fuzzing;
pub mod layer;
pub mod msgp;
pub mod text;
pub mod xlmeta;

pub use text::{IntoOwned, MetaMap, RawField, Text};

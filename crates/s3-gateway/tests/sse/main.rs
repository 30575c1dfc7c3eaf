//! Server-side encryption through the stock Rust client: the gateway is
//! served over real HTTP in-process (with the encryption settings a test
//! needs), aws-sdk-s3 talks to it. SSE-S3, SSE-KMS and SSE-C round trips,
//! ranges across package boundaries, copies between modes, wrong and
//! missing keys, and the bytes on disk are never the plaintext.
//!
//! - `harness`: the in-process server, clients and helpers.
//! - `objects`: single-part objects in every mode.
//! - `multipart`: multipart uploads and UploadPartCopy.
//! - `minio`: MinIO reads Tessera's encrypted objects and the reverse
//!   (feature `minio-interop`).

mod harness;
#[cfg(feature = "minio-interop")]
mod minio;
mod multipart;
mod objects;

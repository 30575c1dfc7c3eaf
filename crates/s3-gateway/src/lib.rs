//! s3-gateway: Tessera's S3 front end, the only crate that knows HTTP and
//! S3 XML.
//!
//! - [`Gateway`]: the S3 service over an [`object::layer::ObjectLayer`].
//!   [`Gateway::handle`] takes an `http::Request` whose body is any
//!   `http_body::Body` (hyper's `Incoming` in the daemon) and answers with a
//!   streaming [`ResponseBody`]: routing (path-style and virtual-host
//!   style), SigV4 authentication, S3 operations, S3 XML errors. It opens no
//!   socket and reads no environment: the `tessera` daemon does.
//! - [`auth`]: the sans-IO authentication core: AWS Signature Version 4 in
//!   the `Authorization` header and in presigned URLs, the binding of the
//!   body to the signature (`x-amz-content-sha256`, verified while the body
//!   streams), and an incremental decoder of `aws-chunked` bodies (signed
//!   chunks, checksum trailers).
//! - [`admin`]: MinIO's admin info call (`mc admin info`): the document, the
//!   drive probes and the admin authentication, public for servers that
//!   answer it for several nodes.

pub mod admin;
mod admission;
pub mod auth;
mod authz;
mod body;
mod checksum;
mod checksum_mpu;
mod cors;
mod encryption;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod handlers;
pub mod iam;
pub mod lifecycle;
pub mod oidc;
mod rfc2047;
pub mod router;
mod service;
pub mod splice;
mod sts;
mod time;
mod xml;

pub use admission::AdmissionStats;
pub use encryption::EncryptionConfig;
pub use error::S3Error;
pub use service::{
    ConnInfo, Gateway, GatewayConfig, GatewayLimits, RequestObserver, RequestRecord, ResponseBody,
    error_document,
};

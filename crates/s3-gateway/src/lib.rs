//! s3-gateway: Tessera's S3 front end.
//!
//! Today: [`auth`], the sans-IO authentication core: AWS Signature
//! Version 4 in the `Authorization` header and in presigned URLs, checked
//! as S3 checks it (canonical request, credential scope, 15-minute clock
//! skew, constant-time comparison), the binding of the body to the
//! signature (`x-amz-content-sha256`, verified while the body streams),
//! and an incremental decoder of `aws-chunked` bodies (signed chunks,
//! checksum trailers). Errors are typed and carry their S3 code and HTTP
//! status. It works on `http` types (`http::request::Parts`, `HeaderMap`,
//! `Uri`), so the hyper service that comes next plugs it in directly.

pub mod auth;

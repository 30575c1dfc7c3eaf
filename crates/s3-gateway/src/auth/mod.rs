//! Request authentication: AWS Signature Version 4 in the `Authorization`
//! header and in presigned query strings (and Version 2, both forms, for
//! older clients), the binding of the body to the
//! signature (`x-amz-content-sha256`), and the `aws-chunked` body decoder.
//!
//! Sans-IO: [`Verifier::authenticate`] looks at a request head (method,
//! URI, headers) and the current time, which the caller passes in; it
//! reads no clock and does no I/O. What it returns says how the body must
//! be read ([`Payload`]): as is, through a [`PayloadSha256Verifier`], or
//! through a [`ChunkedDecoder`].
//!
//! ```
//! use std::time::{Duration, SystemTime, UNIX_EPOCH};
//! use s3_gateway::auth::{
//!     AuthConfig, Authentication, Credentials, Payload, Principal, StaticCredentials, Verifier,
//! };
//!
//! let creds = StaticCredentials::new().with(
//!     "AKIAIOSFODNN7EXAMPLE",
//!     Credentials::new("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", Principal::new("example")),
//! );
//! let verifier = Verifier::new(AuthConfig::default(), creds);
//!
//! // AWS's published "GET Object" example.
//! let request = http::Request::get("/test.txt")
//!     .header("host", "examplebucket.s3.amazonaws.com")
//!     .header("range", "bytes=0-9")
//!     .header("x-amz-content-sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
//!     .header("x-amz-date", "20130524T000000Z")
//!     .header(
//!         "authorization",
//!         "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,\
//!          SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,\
//!          Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
//!     )
//!     .body(())
//!     .unwrap();
//! let now = UNIX_EPOCH + Duration::from_secs(1_369_353_600); // 2013-05-24T00:00:00Z
//! let Authentication::Signed(verified) = verifier.authenticate((&request).into(), now).unwrap()
//! else { unreachable!() };
//! assert_eq!(verified.principal.name(), "example");
//! let Payload::Sha256(mut body) = verified.payload else { unreachable!() };
//! body.update(b""); // the body as it streams in
//! body.finish().unwrap();
//! ```

mod canonical;
mod chunked;
mod credentials;
mod error;
mod header;
mod payload;
mod presign;
mod signing;
mod sigv2;
mod time;
mod verify;

use std::time::Duration;

pub use canonical::{RequestHead, canonical_request};
pub use chunked::{ChunkLimits, ChunkedDecoder, Decoded, SignatureChain};
pub use credentials::{Credentials, CredentialsProvider, Principal, SecretKey, StaticCredentials};
pub use error::{AccessDenied, AuthError, SignatureMismatch};
pub use header::AuthorizationHeader;
pub use payload::{
    ChecksumAlgorithm, ContentSha256, Payload, PayloadSha256Verifier, STREAMING_PAYLOAD,
    STREAMING_PAYLOAD_TRAILER, STREAMING_UNSIGNED_PAYLOAD_TRAILER, Trailer, Trailers,
    UNSIGNED_PAYLOAD,
};
pub use presign::MAX_PRESIGNED_EXPIRES;
pub use signing::{
    ALGORITHM, CredentialScope, EMPTY_SHA256, SCOPE_TERMINATOR, Signature, SigningKey,
    string_to_sign,
};
pub use verify::{AuthKind, Authentication, Verified, Verifier};

pub(crate) use sigv2::verify as sigv2_verify;
// The query and presigned parsers, for the fuzz entry points.
pub(crate) use canonical::Query;
pub(crate) use presign::PresignedParams;
pub(crate) use time::{civil_from_days as time_civil_from_days, days_from_civil, days_in_month};

/// A time as SigV4 writes it, `YYYYMMDD'T'HHMMSS'Z'` (`x-amz-date`), for
/// clients and tests that sign requests.
pub fn amz_date(time: std::time::SystemTime) -> String {
    time::Timestamp::from_system_time(time).iso8601_basic()
}

/// What the verifier accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthConfig {
    /// The region credential scopes must name (`us-east-1` by default,
    /// as MinIO).
    pub region: String,
    /// The service credential scopes must name (`s3`).
    pub service: String,
    /// The largest difference between the request time and the server
    /// clock (15 minutes, as S3). Presigned URLs are checked against their
    /// expiry instead, and against this skew only for a date in the future.
    pub max_clock_skew: Duration,
    /// Size bounds of what is parsed.
    pub limits: AuthLimits,
    /// Whether Signature Version 2 (`Authorization: AWS key:signature` and
    /// `AWSAccessKeyId`/`Expires`/`Signature` presigned URLs) is accepted;
    /// on by default, as MinIO. Off, such requests get S3's answer to an
    /// unsupported mechanism.
    pub sigv2: bool,
    /// Whether a credential scope that names no region
    /// (`<date>//s3/aws4_request`) is accepted besides one naming
    /// `region`. madmin-go, the library behind `mc admin`, signs so, and
    /// MinIO takes it on its admin API; off by default, so S3 requests
    /// must name the region.
    pub accept_empty_region: bool,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            region: "us-east-1".to_owned(),
            service: "s3".to_owned(),
            max_clock_skew: Duration::from_secs(15 * 60),
            limits: AuthLimits::default(),
            sigv2: true,
            accept_empty_region: false,
        }
    }
}

/// Size bounds of the authentication inputs, checked before anything is
/// allocated in proportion to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthLimits {
    /// Longest `Authorization` header (and `X-Amz-SignedHeaders`
    /// parameter).
    pub max_authorization_len: usize,
    /// Most names in `SignedHeaders`.
    pub max_signed_headers: usize,
    /// Longest query string (the part after `?`).
    pub max_query_len: usize,
    /// Most query parameters.
    pub max_query_params: usize,
    /// Bounds of `aws-chunked` bodies.
    pub chunk: ChunkLimits,
}

impl Default for AuthLimits {
    /// 16 KiB headers and queries, 128 signed headers, 1000 parameters:
    /// far above what SDKs send (a header signing 30 headers is under
    /// 1 KiB; the longest S3 query, a 1024-byte key prefix encoded plus a
    /// continuation token, under 8 KiB).
    fn default() -> Self {
        AuthLimits {
            max_authorization_len: 16 * 1024,
            max_signed_headers: 128,
            max_query_len: 16 * 1024,
            max_query_params: 1000,
            chunk: ChunkLimits::default(),
        }
    }
}

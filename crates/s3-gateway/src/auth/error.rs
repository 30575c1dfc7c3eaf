//! Authentication and integrity errors, each one an S3 error code with its
//! HTTP status, its message and the extra elements S3 puts in the XML body.

use http::StatusCode;

/// Why a request failed authentication or a body failed its integrity check.
///
/// Every variant is an S3 error: [`code`](Self::code) is the `<Code>` of the
/// XML body, [`status`](Self::status) the HTTP status, `Display` the
/// `<Message>` and [`details`](Self::details) the extra elements S3 adds
/// (`<Region>`, `<RequestTime>`, `<StringToSign>`, ...). The gateway renders
/// them; nothing here knows XML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// `AccessDenied` (403): the request is refused for the reason given
    /// (an expired or not yet valid presigned URL, a missing date, headers
    /// that should have been signed).
    #[error("{}", .0.message())]
    AccessDenied(AccessDenied),

    /// `SignatureDoesNotMatch` (403): the signature of the request, of a
    /// chunk or of the trailer is not the one the secret key gives.
    #[error(
        "The request signature we calculated does not match the signature you provided. \
         Check your key and signing method."
    )]
    SignatureDoesNotMatch(Box<SignatureMismatch>),

    /// `InvalidAccessKeyId` (403): no such access key.
    #[error("The AWS Access Key Id you provided does not exist in our records.")]
    InvalidAccessKeyId {
        /// The access key the request named.
        access_key: String,
    },

    /// `RequestTimeTooSkewed` (403): the request time is too far from the
    /// server's clock.
    #[error("The difference between the request time and the current time is too large.")]
    RequestTimeTooSkewed {
        /// The request time, as an HTTP date.
        request_time: String,
        /// The server time, as an HTTP date.
        server_time: String,
        /// The largest difference accepted.
        max_allowed_skew_ms: u64,
    },

    /// `AuthorizationHeaderMalformed` (400): the `Authorization` header does
    /// not parse, or names the wrong region, service or date.
    #[error("The authorization header is malformed; {detail}")]
    AuthorizationHeaderMalformed {
        /// What is wrong.
        detail: String,
        /// The region the server expects, when the region was wrong.
        region: Option<String>,
    },

    /// `AuthorizationQueryParametersError` (400): the `X-Amz-*` query
    /// parameters of a presigned URL do not parse or are inconsistent.
    #[error("{message}")]
    AuthorizationQueryParametersError {
        /// What is wrong, in S3's words.
        message: String,
        /// The region the server expects, when the region was wrong.
        region: Option<String>,
    },

    /// `MissingSecurityHeader` (400): a header the signature depends on is
    /// absent (a signed header, or the session token of temporary
    /// credentials).
    #[error("Your request was missing a required header: {header}.")]
    MissingSecurityHeader {
        /// The header that is missing.
        header: String,
    },

    /// `InvalidToken` (400): the session token does not belong to the
    /// access key.
    #[error("The provided token is malformed or otherwise invalid.")]
    InvalidToken,

    /// `XAmzContentSHA256Mismatch` (400): the body does not hash to the
    /// `x-amz-content-sha256` the client signed.
    #[error("The provided 'x-amz-content-sha256' header does not match what was computed.")]
    ContentSha256Mismatch {
        /// The hash the client declared (hex).
        client_computed: String,
        /// The hash of the body received (hex).
        computed: String,
    },

    /// `InvalidDigest` (400): a checksum value (a trailer) is not the
    /// base64 encoding of a digest of the right size.
    #[error("The Content-MD5 or checksum value that you specified is not valid.")]
    InvalidDigest {
        /// The header or trailer that carried the value.
        header: String,
    },

    /// `IncompleteBody` (400): the body ended early, or its decoded length
    /// is not the declared one.
    #[error("You did not provide the number of bytes specified by the Content-Length HTTP header.")]
    IncompleteBody {
        /// The number of payload bytes declared.
        expected: Option<u64>,
        /// The number of payload bytes received.
        provided: u64,
    },

    /// `MalformedTrailerError` (400): the trailing headers of an
    /// `aws-chunked` body are missing, unknown, repeated or ill-formed.
    #[error(
        "The request contained trailing data that was not well-formed or did not conform \
         to our published schema."
    )]
    MalformedTrailer {
        /// What is wrong.
        detail: String,
    },

    /// `InvalidRequest` (400): an authentication mechanism Tessera does not
    /// support, a missing required header, an unsupported trailer, or an
    /// `aws-chunked` body whose framing is broken.
    #[error("{message}")]
    InvalidRequest {
        /// What is wrong, in S3's words where S3 has words for it.
        message: String,
    },

    /// `InvalidArgument` (400): a header or parameter with a value S3 does
    /// not accept.
    #[error("{message}")]
    InvalidArgument {
        /// What is wrong.
        message: String,
        /// The header or parameter at fault.
        name: String,
        /// Its value, as received.
        value: String,
    },

    /// `InvalidURI` (400): the path or query is not valid percent-encoding,
    /// or is longer than the limits allow.
    #[error("Couldn't parse the specified URI.")]
    InvalidUri,

    /// `MissingContentLength` (411): a streaming upload without
    /// `x-amz-decoded-content-length`.
    #[error("You must provide the Content-Length HTTP header.")]
    MissingContentLength,
}

/// The reason of an [`AuthError::AccessDenied`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AccessDenied {
    /// A presigned URL used after `X-Amz-Date + X-Amz-Expires`.
    Expired {
        /// `X-Amz-Expires` of the URL, in seconds.
        expires_in: u64,
        /// When the URL expired, as an HTTP date.
        expires: String,
        /// The server time, as an HTTP date.
        server_time: String,
    },
    /// A presigned URL used before its `X-Amz-Date` (beyond the clock skew).
    NotYetValid,
    /// A SigV2 presigned URL used after its `Expires` time.
    ExpiredV2 {
        /// `Expires` of the URL, as an HTTP date.
        expires: String,
        /// The server's time.
        server_time: String,
    },
    /// A SigV2 presigned URL without all of `AWSAccessKeyId`, `Signature`
    /// and `Expires`.
    QueryParametersMissing,
    /// A SigV2 `Expires` that is not seconds since the epoch.
    MalformedExpires,
    /// Neither `x-amz-date` nor `Date` holds a valid date.
    MissingDate,
    /// `x-amz-*` headers (or the `date` header that dates the request) were
    /// sent without being signed.
    HeadersNotSigned(Vec<String>),
}

impl AccessDenied {
    /// The `<Message>` S3 gives for this reason.
    pub fn message(&self) -> &'static str {
        match self {
            AccessDenied::Expired { .. } => "Request has expired",
            AccessDenied::NotYetValid => "Request is not valid yet",
            AccessDenied::ExpiredV2 { .. } => "Request has expired",
            AccessDenied::QueryParametersMissing => {
                "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters"
            }
            AccessDenied::MalformedExpires => "Invalid date (should be seconds since epoch)",
            AccessDenied::MissingDate => {
                "AWS authentication requires a valid Date or x-amz-date header"
            }
            AccessDenied::HeadersNotSigned(_) => {
                "There were headers present in the request which were not signed"
            }
        }
    }
}

/// The evidence of an [`AuthError::SignatureDoesNotMatch`], as S3 returns it
/// so that a client can see where its signer and the server disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureMismatch {
    /// The access key that signed.
    pub access_key: String,
    /// The signature the client sent (hex).
    pub signature_provided: String,
    /// The string to sign the server computed.
    pub string_to_sign: String,
    /// The canonical request the server computed (empty for chunk and
    /// trailer signatures, which have none).
    pub canonical_request: String,
}

impl AuthError {
    /// The S3 error code (`<Code>`).
    pub fn code(&self) -> &'static str {
        match self {
            AuthError::AccessDenied(_) => "AccessDenied",
            AuthError::SignatureDoesNotMatch(_) => "SignatureDoesNotMatch",
            AuthError::InvalidAccessKeyId { .. } => "InvalidAccessKeyId",
            AuthError::RequestTimeTooSkewed { .. } => "RequestTimeTooSkewed",
            AuthError::AuthorizationHeaderMalformed { .. } => "AuthorizationHeaderMalformed",
            AuthError::AuthorizationQueryParametersError { .. } => {
                "AuthorizationQueryParametersError"
            }
            AuthError::MissingSecurityHeader { .. } => "MissingSecurityHeader",
            AuthError::InvalidToken => "InvalidToken",
            AuthError::ContentSha256Mismatch { .. } => "XAmzContentSHA256Mismatch",
            AuthError::InvalidDigest { .. } => "InvalidDigest",
            AuthError::IncompleteBody { .. } => "IncompleteBody",
            AuthError::MalformedTrailer { .. } => "MalformedTrailerError",
            AuthError::InvalidRequest { .. } => "InvalidRequest",
            AuthError::InvalidArgument { .. } => "InvalidArgument",
            AuthError::InvalidUri => "InvalidURI",
            AuthError::MissingContentLength => "MissingContentLength",
        }
    }

    /// The HTTP status of the error response.
    pub fn status(&self) -> StatusCode {
        match self {
            AuthError::AccessDenied(_)
            | AuthError::SignatureDoesNotMatch(_)
            | AuthError::InvalidAccessKeyId { .. }
            | AuthError::RequestTimeTooSkewed { .. } => StatusCode::FORBIDDEN,
            AuthError::MissingContentLength => StatusCode::LENGTH_REQUIRED,
            AuthError::AuthorizationHeaderMalformed { .. }
            | AuthError::AuthorizationQueryParametersError { .. }
            | AuthError::MissingSecurityHeader { .. }
            | AuthError::InvalidToken
            | AuthError::ContentSha256Mismatch { .. }
            | AuthError::InvalidDigest { .. }
            | AuthError::IncompleteBody { .. }
            | AuthError::MalformedTrailer { .. }
            | AuthError::InvalidRequest { .. }
            | AuthError::InvalidArgument { .. }
            | AuthError::InvalidUri => StatusCode::BAD_REQUEST,
        }
    }

    /// The extra elements of the S3 error body, as (element name, text)
    /// pairs in the order S3 writes them.
    pub fn details(&self) -> Vec<(&'static str, String)> {
        match self {
            AuthError::AccessDenied(AccessDenied::Expired {
                expires_in,
                expires,
                server_time,
            }) => vec![
                ("X-Amz-Expires", expires_in.to_string()),
                ("Expires", expires.clone()),
                ("ServerTime", server_time.clone()),
            ],
            AuthError::AccessDenied(AccessDenied::ExpiredV2 {
                expires,
                server_time,
            }) => vec![
                ("Expires", expires.clone()),
                ("ServerTime", server_time.clone()),
            ],
            AuthError::AccessDenied(AccessDenied::HeadersNotSigned(headers)) => {
                vec![("HeadersNotSigned", headers.join(", "))]
            }
            AuthError::AccessDenied(_) => Vec::new(),
            AuthError::SignatureDoesNotMatch(m) => {
                let mut out = vec![
                    ("AWSAccessKeyId", m.access_key.clone()),
                    ("StringToSign", m.string_to_sign.clone()),
                    ("SignatureProvided", m.signature_provided.clone()),
                ];
                if !m.canonical_request.is_empty() {
                    out.push(("CanonicalRequest", m.canonical_request.clone()));
                }
                out
            }
            AuthError::InvalidAccessKeyId { access_key } => {
                vec![("AWSAccessKeyId", access_key.clone())]
            }
            AuthError::RequestTimeTooSkewed {
                request_time,
                server_time,
                max_allowed_skew_ms,
            } => vec![
                ("RequestTime", request_time.clone()),
                ("ServerTime", server_time.clone()),
                (
                    "MaxAllowedSkewMilliseconds",
                    max_allowed_skew_ms.to_string(),
                ),
            ],
            AuthError::AuthorizationHeaderMalformed { region, .. }
            | AuthError::AuthorizationQueryParametersError { region, .. } => region
                .iter()
                .map(|region| ("Region", region.clone()))
                .collect(),
            AuthError::ContentSha256Mismatch {
                client_computed,
                computed,
            } => vec![
                ("ClientComputedContentSHA256", client_computed.clone()),
                ("S3ComputedContentSHA256", computed.clone()),
            ],
            AuthError::IncompleteBody { expected, provided } => {
                let mut out = Vec::new();
                if let Some(expected) = expected {
                    out.push(("NumberBytesExpected", expected.to_string()));
                }
                out.push(("NumberBytesProvided", provided.to_string()));
                out
            }
            AuthError::InvalidArgument { name, value, .. } => vec![
                ("ArgumentName", name.clone()),
                ("ArgumentValue", value.clone()),
            ],
            AuthError::MissingSecurityHeader { header } => {
                vec![("MissingHeaderName", header.clone())]
            }
            AuthError::InvalidToken
            | AuthError::InvalidDigest { .. }
            | AuthError::MalformedTrailer { .. }
            | AuthError::InvalidRequest { .. }
            | AuthError::InvalidUri
            | AuthError::MissingContentLength => Vec::new(),
        }
    }

    pub(crate) fn header_malformed(detail: impl Into<String>) -> Self {
        AuthError::AuthorizationHeaderMalformed {
            detail: detail.into(),
            region: None,
        }
    }

    pub(crate) fn query_error(message: impl Into<String>) -> Self {
        AuthError::AuthorizationQueryParametersError {
            message: message.into(),
            region: None,
        }
    }

    pub(crate) fn chunk_malformed(detail: &str) -> Self {
        AuthError::InvalidRequest {
            message: format!("The aws-chunked body is malformed: {detail}."),
        }
    }

    pub(crate) fn trailer_malformed(detail: impl Into<String>) -> Self {
        AuthError::MalformedTrailer {
            detail: detail.into(),
        }
    }

    pub(crate) fn unsupported_mechanism() -> Self {
        AuthError::InvalidRequest {
            message: "The authorization mechanism you have provided is not supported. \
                      Please use AWS4-HMAC-SHA256."
                .to_owned(),
        }
    }
}

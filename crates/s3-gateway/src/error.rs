//! S3 errors: a code, a message and an HTTP status, rendered as S3's XML
//! error document. Every failure of the gateway, of authentication and of
//! the object layer is mapped here, and only here.

use http::StatusCode;
use object::layer::Error as LayerError;

use crate::auth::AuthError;

/// An S3 error response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Error {
    /// S3's error code (`NoSuchKey`, `SignatureDoesNotMatch`, ...).
    pub code: &'static str,
    /// A human-readable message.
    pub message: String,
    /// The HTTP status.
    pub status: StatusCode,
    /// Extra elements of the XML document (`Key`, `BucketName`, ...) and,
    /// for a few codes, response headers (`x-amz-delete-marker`).
    pub details: Vec<(&'static str, String)>,
    /// Response headers that go with the error.
    pub headers: Vec<(&'static str, String)>,
}

impl std::fmt::Display for S3Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.code,
            self.status.as_u16(),
            self.message
        )
    }
}

impl std::error::Error for S3Error {}

impl S3Error {
    /// An error with S3's usual message for `code`.
    pub fn new(code: &'static str) -> S3Error {
        let (status, message) = default_of(code);
        S3Error {
            code,
            message: message.to_owned(),
            status,
            details: Vec::new(),
            headers: Vec::new(),
        }
    }

    /// An error with its own message.
    pub fn with_message(code: &'static str, message: impl Into<String>) -> S3Error {
        let mut e = S3Error::new(code);
        e.message = message.into();
        e
    }

    /// Adds an element to the XML document.
    pub fn detail(mut self, name: &'static str, value: impl Into<String>) -> S3Error {
        self.details.push((name, value.into()));
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> S3Error {
        self.headers.push((name, value.into()));
        self
    }

    /// `InvalidArgument` naming the argument.
    pub fn invalid_argument(message: impl Into<String>, name: &str, value: &str) -> S3Error {
        S3Error::with_message("InvalidArgument", message)
            .detail("ArgumentName", name)
            .detail("ArgumentValue", truncate(value, 256))
    }

    /// `InternalError`, logging the cause.
    pub fn internal(cause: impl std::fmt::Display) -> S3Error {
        tracing::error!(%cause, "internal error");
        S3Error::new("InternalError")
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

/// S3's status and message for each code the gateway uses.
fn default_of(code: &str) -> (StatusCode, &'static str) {
    use StatusCode as S;
    match code {
        "AccessDenied" => (S::FORBIDDEN, "Access Denied."),
        "AuthorizationHeaderMalformed" => (
            S::BAD_REQUEST,
            "The authorization header is malformed; the region is wrong; expecting 'us-east-1'.",
        ),
        "BadDigest" => (
            S::BAD_REQUEST,
            "The Content-Md5 you specified did not match what we received.",
        ),
        "BucketAlreadyExists" => (
            S::CONFLICT,
            "The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again.",
        ),
        "BucketAlreadyOwnedByYou" => (
            S::CONFLICT,
            "Your previous request to create the named bucket succeeded and you already own it.",
        ),
        "BucketNotEmpty" => (S::CONFLICT, "The bucket you tried to delete is not empty"),
        "EntityTooLarge" => (
            S::BAD_REQUEST,
            "Your proposed upload exceeds the maximum allowed object size.",
        ),
        "EntityTooSmall" => (
            S::BAD_REQUEST,
            "Your proposed upload is smaller than the minimum allowed object size.",
        ),
        "IncompleteBody" => (
            S::BAD_REQUEST,
            "You did not provide the number of bytes specified by the Content-Length HTTP header.",
        ),
        "InternalError" => (
            S::INTERNAL_SERVER_ERROR,
            "We encountered an internal error, please try again.",
        ),
        "InvalidArgument" => (S::BAD_REQUEST, "Invalid argument"),
        "InvalidBucketName" => (S::BAD_REQUEST, "The specified bucket is not valid."),
        "InvalidDigest" => (
            S::BAD_REQUEST,
            "The Content-Md5 you specified is not valid.",
        ),
        "InvalidPart" => (
            S::BAD_REQUEST,
            "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
        ),
        "InvalidPartOrder" => (
            S::BAD_REQUEST,
            "The list of parts was not in ascending order. The parts list must be specified in order by part number.",
        ),
        "InvalidPartNumber" => (
            S::RANGE_NOT_SATISFIABLE,
            "The requested partnumber is not satisfiable",
        ),
        "InvalidRange" => (
            S::RANGE_NOT_SATISFIABLE,
            "The requested range is not satisfiable",
        ),
        "InvalidRequest" => (S::BAD_REQUEST, "Invalid Request"),
        "ExpiredToken" => (S::FORBIDDEN, "The provided token has expired."),
        "AccessControlListNotSupported" => (S::BAD_REQUEST, "The bucket does not allow ACLs"),
        "MalformedACLError" => (
            S::BAD_REQUEST,
            "The XML you provided was not well-formed or did not validate against our published schema.",
        ),
        "MissingSecurityHeader" => (S::BAD_REQUEST, "Your request is missing a required header."),
        "MalformedPolicy" => (S::BAD_REQUEST, "Policy has invalid resource."),
        "NoSuchBucketPolicy" => (S::NOT_FOUND, "The bucket policy does not exist"),
        "InvalidStorageClass" => (S::BAD_REQUEST, "Invalid storage class."),
        "InvalidURI" => (S::BAD_REQUEST, "Couldn't parse the specified URI."),
        "KeyTooLongError" => (S::BAD_REQUEST, "Your key is too long"),
        "MalformedXML" => (
            S::BAD_REQUEST,
            "The XML you provided was not well-formed or did not validate against our published schema.",
        ),
        "MaxMessageLengthExceeded" => (S::BAD_REQUEST, "Your request was too big."),
        "MetadataTooLarge" => (
            S::BAD_REQUEST,
            "Your metadata headers exceed the maximum allowed metadata size.",
        ),
        "MethodNotAllowed" => (
            S::METHOD_NOT_ALLOWED,
            "The specified method is not allowed against this resource.",
        ),
        "MissingContentLength" => (
            S::LENGTH_REQUIRED,
            "You must provide the Content-Length HTTP header.",
        ),
        "NoSuchBucket" => (S::NOT_FOUND, "The specified bucket does not exist"),
        "NoSuchKey" => (S::NOT_FOUND, "The specified key does not exist."),
        "NoSuchUpload" => (
            S::NOT_FOUND,
            "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
        ),
        "NoSuchVersion" => (S::NOT_FOUND, "The specified version does not exist."),
        "NoSuchTagSet" => (S::NOT_FOUND, "The TagSet does not exist"),
        "NotImplemented" => (
            S::NOT_IMPLEMENTED,
            "A header you provided implies functionality that is not implemented",
        ),
        "NotModified" => (S::NOT_MODIFIED, "Not Modified"),
        "PreconditionFailed" => (
            S::PRECONDITION_FAILED,
            "At least one of the pre-conditions you specified did not hold",
        ),
        "RequestHeaderSectionTooLarge" => (
            S::BAD_REQUEST,
            "Your request header section exceeds the maximum allowed size.",
        ),
        "SlowDown" => (S::SERVICE_UNAVAILABLE, "Please reduce your request rate."),
        "SignatureDoesNotMatch" => (
            S::FORBIDDEN,
            "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
        ),
        "InvalidAccessKeyId" => (
            S::FORBIDDEN,
            "The Access Key Id you provided does not exist in our records.",
        ),
        "ServiceUnavailable" => (
            S::SERVICE_UNAVAILABLE,
            "The service is unavailable. Please retry.",
        ),
        "XAmzContentSHA256Mismatch" => (
            S::BAD_REQUEST,
            "The provided 'x-amz-content-sha256' header does not match what was computed.",
        ),
        "InvalidTag" => (S::BAD_REQUEST, "The tag provided was not a valid tag."),
        "IllegalVersioningConfigurationException" => (
            S::BAD_REQUEST,
            "The versioning configuration specified in the request is invalid.",
        ),
        "InvalidPolicyDocument" => (
            S::BAD_REQUEST,
            "The content of the form does not meet the conditions specified in the policy document.",
        ),
        "MalformedPOSTRequest" => (
            S::BAD_REQUEST,
            "The body of your POST request is not well-formed multipart/form-data.",
        ),
        "UnexpectedContent" => (S::BAD_REQUEST, "This request does not support content"),
        "InvalidLocationConstraint" => (
            S::BAD_REQUEST,
            "The specified location-constraint is not valid",
        ),
        "IllegalLocationConstraintException" => (
            S::BAD_REQUEST,
            "The unspecified location constraint is incompatible for the region specific endpoint this request was sent to.",
        ),
        "RequestTimeout" => (
            S::BAD_REQUEST,
            "Your socket connection to the server was not read from or written to within the timeout period.",
        ),
        _ => (S::BAD_REQUEST, "The request could not be served."),
    }
}

impl From<AuthError> for S3Error {
    fn from(e: AuthError) -> S3Error {
        let mut out = S3Error::with_message(e.code(), e.to_string());
        out.status = e.status();
        out.details = e.details();
        out
    }
}

impl From<LayerError> for S3Error {
    fn from(e: LayerError) -> S3Error {
        match e {
            LayerError::InvalidBucketName(b) => {
                S3Error::new("InvalidBucketName").detail("BucketName", b)
            }
            LayerError::InvalidObjectName(k, why) => {
                if k.len() > 1024 || why.contains("longer than") {
                    S3Error::new("KeyTooLongError")
                } else {
                    S3Error::with_message(
                        "InvalidArgument",
                        format!("Object name contains unsupported characters: {why}"),
                    )
                    .detail("Key", truncate(&k, 1024))
                }
            }
            LayerError::NoSuchBucket(b) => S3Error::new("NoSuchBucket").detail("BucketName", b),
            LayerError::BucketExists(b) => {
                S3Error::new("BucketAlreadyOwnedByYou").detail("BucketName", b)
            }
            LayerError::BucketNotEmpty(b) => S3Error::new("BucketNotEmpty").detail("BucketName", b),
            LayerError::NoSuchKey {
                key, delete_marker, ..
            } => {
                let e = S3Error::new("NoSuchKey").detail("Key", key);
                if delete_marker {
                    e.header("x-amz-delete-marker", "true")
                } else {
                    e
                }
            }
            LayerError::NoSuchVersion { key, version, .. } => S3Error::new("NoSuchVersion")
                .detail("Key", key)
                .detail("VersionId", version),
            LayerError::InvalidVersionId(v) => {
                S3Error::invalid_argument("Invalid version id specified", "versionId", &v)
            }
            LayerError::MethodNotAllowed => {
                S3Error::new("MethodNotAllowed").header("x-amz-delete-marker", "true")
            }
            LayerError::InvalidRange { size, .. } => {
                S3Error::new("InvalidRange").detail("ActualObjectSize", size.to_string())
            }
            LayerError::EntityTooLarge { size, limit } => S3Error::new("EntityTooLarge")
                .detail("ProposedSize", size.to_string())
                .detail("MaxSizeAllowed", limit.to_string()),
            LayerError::IncompleteBody { .. } => S3Error::new("IncompleteBody"),
            LayerError::InvalidStorageClass(_) => S3Error::new("InvalidStorageClass"),
            LayerError::InvalidMetadata(m) => S3Error::with_message("InvalidArgument", m),
            LayerError::WriteQuorum { .. } | LayerError::ReadQuorum { .. } => {
                tracing::warn!(error = %e, "quorum not reached");
                S3Error::with_message(
                    "SlowDown",
                    "Resource requested is unreadable or unwritable, please reduce your request rate",
                )
            }
            LayerError::PreconditionFailed => S3Error::new("PreconditionFailed"),
            LayerError::ObjectLocked(_) => S3Error::with_message(
                "AccessDenied",
                "Access Denied because object protected by object lock.",
            ),
            LayerError::QuotaExceeded(_) => {
                S3Error::with_message("XMinioAdminBucketQuotaExceeded", "Bucket quota exceeded")
            }
            LayerError::ObjectLockNotEnabled => S3Error::with_message(
                "InvalidRequest",
                "Bucket is missing ObjectLockConfiguration",
            ),
            LayerError::InvalidBucketState(why) => {
                let mut e = S3Error::with_message("InvalidBucketState", why);
                e.status = http::StatusCode::CONFLICT;
                e
            }
            LayerError::NoSuchUpload(u) => S3Error::new("NoSuchUpload").detail("UploadId", u),
            LayerError::InvalidPartNumber(n) => S3Error::invalid_argument(
                "Part number must be an integer between 1 and 10000, inclusive",
                "partNumber",
                &n.to_string(),
            ),
            LayerError::InvalidPart(_) => S3Error::new("InvalidPart"),
            LayerError::InvalidPartOrder => S3Error::new("InvalidPartOrder"),
            LayerError::EntityTooSmall { part, size } => S3Error::new("EntityTooSmall")
                .detail("PartNumber", part.to_string())
                .detail("ProposedSize", size.to_string())
                .detail("MinSizeAllowed", (5u64 << 20).to_string()),
            LayerError::LockTimeout(_) => S3Error::new("SlowDown"),
            LayerError::Body(io) => body_error(io),
            LayerError::Rejected(why) => match why.downcast::<S3Error>() {
                Ok(e) => *e,
                Err(other) => S3Error::internal(other),
            },
            other => S3Error::internal(other),
        }
    }
}

/// The S3 error behind a failed read of the request body: a verification
/// failure carries its own [`S3Error`]; anything else is the client going
/// away or stalling.
pub(crate) fn body_error(io: std::io::Error) -> S3Error {
    let kind = io.kind();
    if let Some(inner) = io.into_inner()
        && let Ok(e) = inner.downcast::<S3Error>()
    {
        return *e;
    }
    if kind == std::io::ErrorKind::TimedOut {
        return S3Error::new("RequestTimeout");
    }
    S3Error::new("IncompleteBody")
}

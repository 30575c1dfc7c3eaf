//! The verifier: from a request head and the current time to an
//! authenticated principal and the way its body must be read.

use std::time::SystemTime;

use http::HeaderValue;
use http::header::{AUTHORIZATION, DATE};

use super::AuthConfig;
use super::canonical::{Query, QueryOrder, RequestHead, build_canonical_request_in};
use super::chunked::{ChunkedDecoder, SignatureChain};
use super::credentials::{Credentials, CredentialsProvider, Principal};
use super::error::{AccessDenied, AuthError, SignatureMismatch};
use super::header::AuthorizationHeader;
use super::payload::{
    ChecksumAlgorithm, ContentSha256, Payload, PayloadSha256Verifier, UNSIGNED_PAYLOAD,
};
use super::presign::{self, PresignedParams};
use super::signing::{CredentialScope, Signature, SigningKey, ct_eq, string_to_sign};
use super::sigv2;
use super::time::Timestamp;

const X_AMZ_DATE: &str = "x-amz-date";
const X_AMZ_CONTENT_SHA256: &str = "x-amz-content-sha256";
const X_AMZ_SECURITY_TOKEN: &str = "x-amz-security-token";
const X_AMZ_DECODED_CONTENT_LENGTH: &str = "x-amz-decoded-content-length";
const X_AMZ_TRAILER: &str = "x-amz-trailer";

/// The outcome of a successful authentication.
#[derive(Debug)]
pub enum Authentication {
    /// The request carries no authentication at all: it may proceed only
    /// where a bucket policy allows anonymous access.
    Anonymous,
    /// The request is signed, and the signature holds.
    Signed(Box<Verified>),
}

/// How a request was signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthKind {
    /// In the `Authorization` header.
    Header,
    /// In the query string (a presigned URL), valid until `expires`.
    Presigned {
        /// When the URL stops being valid.
        expires: SystemTime,
    },
}

/// A request whose signature holds.
#[derive(Debug)]
pub struct Verified {
    /// The access key that signed.
    pub access_key: String,
    /// Who the request acts as.
    pub principal: Principal,
    /// Header or query-string authentication.
    pub kind: AuthKind,
    /// The time the request was signed for (`x-amz-date`, `Date` or
    /// `X-Amz-Date`).
    pub request_time: SystemTime,
    /// The credential scope.
    pub scope: CredentialScope,
    /// The headers the signature covers (lowercase). A header not in this
    /// list (other than `x-amz-*`, which are all signed) was not
    /// authenticated.
    pub signed_headers: Vec<String>,
    /// The session token presented, for temporary credentials.
    pub security_token: Option<String>,
    /// How the body is bound to the signature.
    pub content_sha256: ContentSha256,
    /// How the body must be read; it is authentic only once that reading
    /// has succeeded to the end.
    pub payload: Payload,
}

/// Verifies SigV4 requests against a [`CredentialsProvider`].
#[derive(Debug, Clone)]
pub struct Verifier<P> {
    config: AuthConfig,
    credentials: P,
}

enum Via {
    Header,
    Query,
}

impl<P: CredentialsProvider> Verifier<P> {
    /// A verifier accepting what `config` describes, with the credentials
    /// of `credentials`.
    pub fn new(config: AuthConfig, credentials: P) -> Self {
        Verifier {
            config,
            credentials,
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// Its credentials provider.
    pub fn credentials(&self) -> &P {
        &self.credentials
    }

    /// Authenticates a request: `Authorization` header, presigned query
    /// string, or neither (anonymous). `now` is the server time; nothing
    /// else is read.
    ///
    /// A request with both a header and query authentication is refused,
    /// as is SigV4a; SigV2 is accepted unless
    /// [`AuthConfig::sigv2`](super::AuthConfig::sigv2) is off. The query is parsed (and held to
    /// [`AuthLimits`](super::AuthLimits)) for every request, anonymous ones
    /// included: one over the limits is [`AuthError::InvalidUri`].
    pub fn authenticate(
        &self,
        head: RequestHead<'_>,
        now: SystemTime,
    ) -> Result<Authentication, AuthError> {
        let limits = &self.config.limits;
        let query = Query::parse(
            head.uri.query(),
            limits.max_query_len,
            limits.max_query_params,
        )?;
        let presigned = presign::is_presigned(&query) || presign::is_presigned_v2(&query);
        match (head.headers.get(AUTHORIZATION), presigned) {
            (Some(value), true) => Err(AuthError::InvalidArgument {
                message: "Only one auth mechanism allowed; only the X-Amz-Algorithm query \
                          parameter, Signature query string parameter or the Authorization \
                          header should be specified"
                    .to_owned(),
                name: "Authorization".to_owned(),
                value: String::from_utf8_lossy(value.as_bytes()).into_owned(),
            }),
            (Some(value), false)
                if sigv2::is_v2_header(&String::from_utf8_lossy(value.as_bytes())) =>
            {
                self.verify_v2_header(head, &query, value, now)
            }
            (Some(value), false) => self.verify_header(head, &query, value, now),
            (None, true) if presign::is_presigned(&query) => {
                self.verify_presigned(head, &query, now)
            }
            (None, true) => self.verify_v2_presigned(head, &query, now),
            (None, false) => Ok(Authentication::Anonymous),
        }
    }

    fn verify_header(
        &self,
        head: RequestHead<'_>,
        query: &Query,
        value: &HeaderValue,
        now: SystemTime,
    ) -> Result<Authentication, AuthError> {
        let value = authorization_text(head, value)?;
        let auth = AuthorizationHeader::parse(value, &self.config.limits)?;
        self.check_scope(&auth.scope, Via::Header)?;

        let (time, date_header) = request_time(head)?;
        if !auth.signed_headers.iter().any(|h| h == date_header) {
            return Err(AuthError::AccessDenied(AccessDenied::HeadersNotSigned(
                vec![date_header.to_owned()],
            )));
        }
        if auth.scope.date() != time.date_stamp() {
            return Err(AuthError::header_malformed(format!(
                "Invalid credential date \"{}\". This date is not the same as X-Amz-Date: \"{}\".",
                auth.scope.date(),
                time.date_stamp()
            )));
        }
        self.check_skew(time, now)?;
        if !auth.signed_headers.iter().any(|h| h == "host") {
            return Err(AuthError::header_malformed(
                "the SignedHeaders must include host.",
            ));
        }
        let content_sha256 = match head.headers.get(X_AMZ_CONTENT_SHA256) {
            None => {
                return Err(AuthError::InvalidRequest {
                    message: "Missing required header for this request: x-amz-content-sha256"
                        .to_owned(),
                });
            }
            Some(v) => v.to_str().map_err(|_| AuthError::InvalidArgument {
                message: "x-amz-content-sha256 is not text.".to_owned(),
                name: X_AMZ_CONTENT_SHA256.to_owned(),
                value: String::from_utf8_lossy(v.as_bytes()).into_owned(),
            })?,
        };
        let mode = ContentSha256::parse(content_sha256)?;
        check_amz_headers_signed(head, &auth.signed_headers)?;

        let credentials = self.lookup(&auth.access_key)?;
        let token = header_token(head);
        check_token(&credentials, token.as_deref())?;

        let amz_date = time.iso8601_basic();
        let key = SigningKey::derive(&credentials.secret_key, &auth.scope);
        verify_in_either_order(
            query,
            |order| {
                build_canonical_request_in(
                    &head,
                    query,
                    None,
                    &auth.signed_headers,
                    content_sha256,
                    order,
                )
            },
            |canonical| {
                verify_signature(
                    &key,
                    &amz_date,
                    &auth.scope,
                    canonical,
                    &auth.access_key,
                    auth.signature,
                )
            },
        )?;

        let payload = self.payload(head, mode, || {
            SignatureChain::new(key.clone(), amz_date.clone(), &auth.scope, auth.signature)
        })?;
        Ok(Authentication::Signed(Box::new(Verified {
            access_key: auth.access_key,
            principal: credentials.principal,
            kind: AuthKind::Header,
            request_time: time.to_system_time(),
            scope: auth.scope,
            signed_headers: auth.signed_headers,
            security_token: token,
            content_sha256: mode,
            payload,
        })))
    }

    fn verify_presigned(
        &self,
        head: RequestHead<'_>,
        query: &Query,
        now: SystemTime,
    ) -> Result<Authentication, AuthError> {
        let params = PresignedParams::parse(query, &self.config.limits)?;
        self.check_scope(&params.scope, Via::Query)?;
        if params.scope.date() != params.date.date_stamp() {
            return Err(AuthError::query_error(format!(
                "Error parsing the X-Amz-Credential parameter; Invalid credential date \"{}\". \
                 This date is not the same as X-Amz-Date: \"{}\".",
                params.scope.date(),
                params.date.date_stamp()
            )));
        }
        let now_ts = Timestamp::from_system_time(now);
        if params.date.secs() > now_ts.secs().saturating_add(self.skew_secs()) {
            return Err(AuthError::AccessDenied(AccessDenied::NotYetValid));
        }
        let expires = params.date.plus_secs(params.expires);
        // A URL valid for zero seconds is expired from the moment it is
        // signed, as S3 answers it.
        if params.expires == 0 || now_ts > expires {
            return Err(AuthError::AccessDenied(AccessDenied::Expired {
                expires_in: params.expires,
                expires: expires.http_date(),
                server_time: now_ts.http_date(),
            }));
        }
        if !params.signed_headers.iter().any(|h| h == "host") {
            return Err(AuthError::query_error(
                "Error parsing the X-Amz-SignedHeaders parameter; the signed headers must include host.",
            ));
        }
        let payload_hash = params.content_sha256.as_deref().unwrap_or(UNSIGNED_PAYLOAD);
        let mode = ContentSha256::parse(payload_hash)?;
        if mode.is_streaming() {
            return Err(AuthError::InvalidRequest {
                message: "A presigned request cannot carry a streaming (aws-chunked) payload."
                    .to_owned(),
            });
        }
        check_amz_headers_signed(head, &params.signed_headers)?;

        let credentials = self.lookup(&params.access_key)?;
        check_token(&credentials, params.security_token.as_deref())?;

        let key = SigningKey::derive(&credentials.secret_key, &params.scope);
        verify_in_either_order(
            query,
            |order| {
                build_canonical_request_in(
                    &head,
                    query,
                    Some(presign::X_AMZ_SIGNATURE),
                    &params.signed_headers,
                    payload_hash,
                    order,
                )
            },
            |canonical| {
                verify_signature(
                    &key,
                    &params.amz_date,
                    &params.scope,
                    canonical,
                    &params.access_key,
                    params.signature,
                )
            },
        )?;
        let payload = match mode {
            ContentSha256::Sha256(hash) => Payload::Sha256(PayloadSha256Verifier::new(hash)),
            _ => Payload::Unsigned,
        };
        Ok(Authentication::Signed(Box::new(Verified {
            access_key: params.access_key,
            principal: credentials.principal,
            kind: AuthKind::Presigned {
                expires: expires.to_system_time(),
            },
            request_time: params.date.to_system_time(),
            scope: params.scope,
            signed_headers: params.signed_headers,
            security_token: params.security_token,
            content_sha256: mode,
            payload,
        })))
    }

    /// A request signed with SigV2 in the `Authorization` header.
    fn verify_v2_header(
        &self,
        head: RequestHead<'_>,
        query: &Query,
        value: &HeaderValue,
        now: SystemTime,
    ) -> Result<Authentication, AuthError> {
        if !self.config.sigv2 {
            return Err(AuthError::unsupported_mechanism());
        }
        let value = authorization_text(head, value)?;
        if value.len() > self.config.limits.max_authorization_len {
            return Err(AuthError::header_malformed("the header is too long."));
        }
        let auth = sigv2::parse_header(value)?;
        let (time, date_lines) = sigv2::request_date(head.headers)?;
        self.check_skew(time, now)?;
        let credentials = self.lookup(&auth.access_key)?;
        let token = header_token(head);
        check_token(&credentials, token.as_deref())?;
        sigv2::check(
            &head,
            query,
            &date_lines,
            credentials.secret_key.expose().as_bytes(),
            &auth.access_key,
            &auth.signature,
        )?;
        Ok(self.verified_v2(
            head,
            auth.access_key,
            credentials,
            AuthKind::Header,
            time,
            token,
        ))
    }

    /// A SigV2 presigned URL.
    fn verify_v2_presigned(
        &self,
        head: RequestHead<'_>,
        query: &Query,
        now: SystemTime,
    ) -> Result<Authentication, AuthError> {
        if !self.config.sigv2 {
            return Err(AuthError::unsupported_mechanism());
        }
        let params = sigv2::presigned(query)?;
        let now_ts = Timestamp::from_system_time(now);
        let expires = Timestamp::from_system_time(
            SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(params.expires.unsigned_abs()),
        );
        if now_ts.secs() > params.expires {
            return Err(AuthError::AccessDenied(AccessDenied::ExpiredV2 {
                expires: expires.http_date(),
                server_time: now_ts.http_date(),
            }));
        }
        let credentials = self.lookup(&params.access_key)?;
        sigv2::check(
            &head,
            query,
            std::slice::from_ref(&params.expires_text),
            credentials.secret_key.expose().as_bytes(),
            &params.access_key,
            &params.signature,
        )?;
        let token = query
            .values(X_AMZ_SECURITY_TOKEN)
            .next()
            .map(|v| String::from_utf8_lossy(v).into_owned());
        check_token(&credentials, token.as_deref())?;
        let kind = AuthKind::Presigned {
            expires: expires.to_system_time(),
        };
        Ok(self.verified_v2(head, params.access_key, credentials, kind, now_ts, token))
    }

    /// What a SigV2 signature authenticates: every `x-amz-*` header,
    /// `Content-MD5`, `Content-Type` and the date; the body is not signed
    /// (its `Content-MD5`, when sent, is checked as it streams).
    fn verified_v2(
        &self,
        head: RequestHead<'_>,
        access_key: String,
        credentials: Credentials,
        kind: AuthKind,
        time: Timestamp,
        security_token: Option<String>,
    ) -> Authentication {
        let mut signed_headers: Vec<String> = ["content-md5", "content-type", "date"]
            .into_iter()
            .map(str::to_owned)
            .chain(
                head.headers
                    .keys()
                    .map(|k| k.as_str())
                    .filter(|k| k.starts_with("x-amz-"))
                    .map(str::to_owned),
            )
            .collect();
        signed_headers.sort();
        signed_headers.dedup();
        Authentication::Signed(Box::new(Verified {
            access_key,
            principal: credentials.principal,
            kind,
            request_time: time.to_system_time(),
            scope: CredentialScope::new(
                time.date_stamp(),
                self.config.region.clone(),
                self.config.service.clone(),
            ),
            signed_headers,
            security_token,
            content_sha256: ContentSha256::Unsigned,
            payload: Payload::Unsigned,
        }))
    }

    fn lookup(&self, access_key: &str) -> Result<Credentials, AuthError> {
        self.credentials
            .lookup(access_key)
            .ok_or_else(|| AuthError::InvalidAccessKeyId {
                access_key: access_key.to_owned(),
            })
    }

    fn check_scope(&self, scope: &CredentialScope, via: Via) -> Result<(), AuthError> {
        let (detail, region) = if scope.service() != self.config.service {
            (
                format!(
                    "incorrect service {:?}. This endpoint belongs to {:?}.",
                    scope.service(),
                    self.config.service
                ),
                None,
            )
        } else if scope.region() != self.config.region
            && !(scope.region().is_empty() && self.config.accept_empty_region)
        {
            (
                format!(
                    "the region '{}' is wrong; expecting '{}'",
                    scope.region(),
                    self.config.region
                ),
                Some(self.config.region.clone()),
            )
        } else {
            return Ok(());
        };
        Err(match via {
            Via::Header => AuthError::AuthorizationHeaderMalformed { detail, region },
            Via::Query => AuthError::AuthorizationQueryParametersError {
                message: format!("Error parsing the X-Amz-Credential parameter; {detail}"),
                region,
            },
        })
    }

    fn skew_secs(&self) -> i64 {
        i64::try_from(self.config.max_clock_skew.as_secs()).unwrap_or(i64::MAX)
    }

    fn check_skew(&self, time: Timestamp, now: SystemTime) -> Result<(), AuthError> {
        let now = Timestamp::from_system_time(now);
        if time.secs().abs_diff(now.secs()) > self.config.max_clock_skew.as_secs() {
            return Err(AuthError::RequestTimeTooSkewed {
                request_time: time.http_date(),
                server_time: now.http_date(),
                max_allowed_skew_ms: u64::try_from(self.config.max_clock_skew.as_millis())
                    .unwrap_or(u64::MAX),
            });
        }
        Ok(())
    }

    fn payload(
        &self,
        head: RequestHead<'_>,
        mode: ContentSha256,
        chain: impl FnOnce() -> SignatureChain,
    ) -> Result<Payload, AuthError> {
        let limits = self.config.limits.chunk;
        Ok(match mode {
            ContentSha256::Sha256(hash) => Payload::Sha256(PayloadSha256Verifier::new(hash)),
            ContentSha256::Unsigned => Payload::Unsigned,
            ContentSha256::StreamingSigned => Payload::Chunked(Box::new(ChunkedDecoder::signed(
                chain(),
                Some(decoded_content_length(head)?),
                None,
                limits,
            ))),
            ContentSha256::StreamingSignedTrailer => {
                let length = decoded_content_length(head)?;
                let trailers = declared_trailers(head)?;
                Payload::Chunked(Box::new(ChunkedDecoder::signed(
                    chain(),
                    Some(length),
                    Some(trailers),
                    limits,
                )))
            }
            ContentSha256::StreamingUnsignedTrailer => {
                let length = decoded_content_length(head)?;
                let trailers = declared_trailers(head)?;
                Payload::Chunked(Box::new(ChunkedDecoder::unsigned(
                    Some(length),
                    trailers,
                    limits,
                )))
            }
        })
    }
}

/// The request time from `x-amz-date` or, failing that, `Date`, and the
/// name of the header it came from.
fn request_time(head: RequestHead<'_>) -> Result<(Timestamp, &'static str), AuthError> {
    let missing = || AuthError::AccessDenied(AccessDenied::MissingDate);
    if let Some(value) = head.headers.get(X_AMZ_DATE) {
        let text = value.to_str().map_err(|_| missing())?;
        let time = Timestamp::parse_iso8601_basic(text).ok_or_else(missing)?;
        return Ok((time, X_AMZ_DATE));
    }
    if let Some(value) = head.headers.get(DATE) {
        let text = value.to_str().map_err(|_| missing())?;
        let time = Timestamp::parse_http_date(text).ok_or_else(missing)?;
        return Ok((time, "date"));
    }
    Err(missing())
}

/// S3 refuses `x-amz-*` headers that are not signed: they change what a
/// request does. `x-amz-content-sha256` is exempt: its value is the last
/// line of the canonical request (or, for a presigned URL, ignored).
fn check_amz_headers_signed(head: RequestHead<'_>, signed: &[String]) -> Result<(), AuthError> {
    let mut unsigned: Vec<String> = head
        .headers
        .keys()
        .map(|name| name.as_str())
        .filter(|name| {
            name.starts_with("x-amz-")
                && *name != X_AMZ_CONTENT_SHA256
                && !signed.iter().any(|s| s == name)
        })
        .map(str::to_owned)
        .collect();
    if unsigned.is_empty() {
        return Ok(());
    }
    unsigned.sort();
    Err(AuthError::AccessDenied(AccessDenied::HeadersNotSigned(
        unsigned,
    )))
}

/// The one `Authorization` header's text.
fn authorization_text<'h>(
    head: RequestHead<'_>,
    value: &'h HeaderValue,
) -> Result<&'h str, AuthError> {
    if head.headers.get_all(AUTHORIZATION).iter().count() > 1 {
        return Err(AuthError::header_malformed(
            "the request has more than one Authorization header.",
        ));
    }
    value
        .to_str()
        .map_err(|_| AuthError::header_malformed("the header is not printable ASCII."))
}

/// The session token a header-signed request presents.
fn header_token(head: RequestHead<'_>) -> Option<String> {
    head.headers
        .get(X_AMZ_SECURITY_TOKEN)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// Temporary credentials must present their session token; long-term ones
/// must present none.
fn check_token(credentials: &Credentials, presented: Option<&str>) -> Result<(), AuthError> {
    match (&credentials.session_token, presented) {
        (None, None) => Ok(()),
        (Some(_), None) => Err(AuthError::MissingSecurityHeader {
            header: X_AMZ_SECURITY_TOKEN.to_owned(),
        }),
        (Some(expected), Some(presented)) if ct_eq(expected.as_bytes(), presented.as_bytes()) => {
            Ok(())
        }
        _ => Err(AuthError::InvalidToken),
    }
}

/// Checks the signature over the canonical request `build` makes with the
/// query in SigV4's order and, for a query that repeats a parameter and
/// failed, in the order Go's `url.Values` gives (minio-go, madmin); the
/// first failure is the one reported.
fn verify_in_either_order(
    query: &Query,
    build: impl Fn(QueryOrder) -> Result<Vec<u8>, AuthError>,
    check: impl Fn(&[u8]) -> Result<(), AuthError>,
) -> Result<(), AuthError> {
    let first = check(&build(QueryOrder::NameThenValue)?);
    match first {
        Err(e) if query.has_repeated_names() => check(&build(QueryOrder::NameOnly)?).map_err(|_| e),
        other => other,
    }
}

fn verify_signature(
    key: &SigningKey,
    amz_date: &str,
    scope: &CredentialScope,
    canonical: &[u8],
    access_key: &str,
    provided: Signature,
) -> Result<(), AuthError> {
    let to_sign = string_to_sign(amz_date, scope, canonical);
    if key.sign(to_sign.as_bytes()).ct_eq(&provided) {
        return Ok(());
    }
    Err(AuthError::SignatureDoesNotMatch(Box::new(
        SignatureMismatch {
            access_key: access_key.to_owned(),
            signature_provided: provided.to_hex(),
            string_to_sign: to_sign,
            canonical_request: String::from_utf8_lossy(canonical).into_owned(),
        },
    )))
}

fn decoded_content_length(head: RequestHead<'_>) -> Result<u64, AuthError> {
    let value = head
        .headers
        .get(X_AMZ_DECODED_CONTENT_LENGTH)
        .ok_or(AuthError::MissingContentLength)?;
    let bytes = value.as_bytes();
    if bytes.is_empty() || bytes.len() > 19 || !bytes.iter().all(u8::is_ascii_digit) {
        return Err(AuthError::InvalidArgument {
            message: "x-amz-decoded-content-length is not a number.".to_owned(),
            name: X_AMZ_DECODED_CONTENT_LENGTH.to_owned(),
            value: String::from_utf8_lossy(bytes).into_owned(),
        });
    }
    Ok(bytes
        .iter()
        .fold(0u64, |acc, &b| acc * 10 + u64::from(b - b'0')))
}

/// The checksum trailers `x-amz-trailer` announces (comma-separated, over
/// one or more headers).
fn declared_trailers(head: RequestHead<'_>) -> Result<Vec<ChecksumAlgorithm>, AuthError> {
    let unsupported = || AuthError::InvalidRequest {
        message: "The value specified in the x-amz-trailer header is not supported".to_owned(),
    };
    let mut out = Vec::new();
    for value in head.headers.get_all(X_AMZ_TRAILER) {
        let text = value.to_str().map_err(|_| unsupported())?;
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let algorithm = ChecksumAlgorithm::from_header_name(name).ok_or_else(unsupported)?;
            if out.contains(&algorithm) {
                return Err(unsupported());
            }
            out.push(algorithm);
        }
    }
    Ok(out)
}

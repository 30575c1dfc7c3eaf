//! Helpers shared by the integration tests: a seeded PRNG, the AWS example
//! credentials, and an independent signer (the `aws-sigv4` crate).
#![allow(dead_code)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_credential_types::Credentials as AwsCredentials;
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SignatureLocation,
    SigningSettings, UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use s3_gateway::auth::{
    AuthConfig, AuthError, Authentication, Credentials, Principal, StaticCredentials, Verified,
    Verifier,
};

pub const ACCESS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";
pub const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
pub const TEMP_ACCESS_KEY: &str = "ASIATEMPORARYEXAMPLE";
pub const TEMP_SECRET_KEY: &str = "temporary/secret/key/EXAMPLEKEY";
pub const TEMP_TOKEN: &str = "FwoGZXIvYXdzEXAMPLEtoken//with+odd=chars";

/// 2013-05-24T00:00:00Z, the time of every published S3 example.
pub fn example_time() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_369_353_600)
}

pub fn credentials() -> StaticCredentials {
    StaticCredentials::new()
        .with(
            ACCESS_KEY,
            Credentials::new(SECRET_KEY, Principal::new("example-user")),
        )
        .with(
            TEMP_ACCESS_KEY,
            Credentials::new(TEMP_SECRET_KEY, Principal::new("temporary-user"))
                .with_session_token(TEMP_TOKEN),
        )
}

pub fn verifier() -> Verifier<StaticCredentials> {
    Verifier::new(AuthConfig::default(), credentials())
}

pub fn authenticate<B>(
    verifier: &Verifier<StaticCredentials>,
    request: &http::Request<B>,
    now: SystemTime,
) -> Result<Box<Verified>, AuthError> {
    match verifier.authenticate(request.into(), now)? {
        Authentication::Signed(verified) => Ok(verified),
        Authentication::Anonymous => panic!("request was taken as anonymous"),
    }
}

/// The tests' seeded generator: `fastrand`'s, with the draws they use.
pub struct Rng(fastrand::Rng);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(fastrand::Rng::with_seed(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.u64(..)
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.0.usize(..n)
    }

    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        self.0.usize(lo..=hi)
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }

    /// A string drawn from `alphabet` (chars).
    pub fn string(&mut self, alphabet: &str, lo: usize, hi: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        let n = self.range(lo, hi);
        (0..n).map(|_| *self.pick(&chars)).collect()
    }
}

/// AWS's `UriEncode`, as a client applies it (independent of the crate's).
pub fn aws_encode(text: &str, encode_slash: bool) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) || (b == b'/' && !encode_slash) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub enum Body<'a> {
    Bytes(&'a [u8]),
    Unsigned,
    /// `x-amz-content-sha256` given as is (the streaming modes).
    Precomputed(&'a str),
    StreamingSignedTrailer,
    StreamingUnsignedTrailer,
}

pub struct SignOptions {
    pub access_key: &'static str,
    pub secret_key: &'static str,
    pub token: Option<&'static str>,
    pub region: &'static str,
    pub time: SystemTime,
    /// `Some` for a presigned URL valid that long.
    pub presign: Option<Duration>,
}

impl SignOptions {
    pub fn new(time: SystemTime) -> Self {
        SignOptions {
            access_key: ACCESS_KEY,
            secret_key: SECRET_KEY,
            token: None,
            region: "us-east-1",
            time,
            presign: None,
        }
    }
}

/// Signs `request` in place with the `aws-sigv4` crate, configured as the
/// AWS SDK configures it for S3 (single encoding, no path normalisation,
/// `x-amz-content-sha256`). The request must carry a `host` header.
/// Returns the signature (the seed of a chunked body).
pub fn sign_with_aws_sigv4(
    request: &mut http::Request<()>,
    body: Body<'_>,
    options: &SignOptions,
) -> String {
    let identity: Identity = AwsCredentials::new(
        options.access_key,
        options.secret_key,
        options.token.map(str::to_owned),
        None,
        "tests",
    )
    .into();
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    if let Some(expires) = options.presign {
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(expires);
    }
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(options.region)
        .name("s3")
        .time(options.time)
        .settings(settings)
        .build()
        .unwrap()
        .into();
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap().to_owned()))
        .collect();
    let uri = request.uri().to_string();
    let body = match body {
        Body::Bytes(bytes) => SignableBody::Bytes(bytes),
        Body::Unsigned => SignableBody::UnsignedPayload,
        Body::Precomputed(value) => SignableBody::Precomputed(value.to_owned()),
        Body::StreamingSignedTrailer => SignableBody::StreamingSignedPayloadTrailer,
        Body::StreamingUnsignedTrailer => SignableBody::StreamingUnsignedPayloadTrailer,
    };
    let signable = SignableRequest::new(
        request.method().as_str(),
        uri,
        headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        body,
    )
    .unwrap();
    let (instructions, signature) = sign(signable, &params).unwrap().into_parts();
    instructions.apply_to_request_http1x(request);
    signature
}

/// Runs `f` with aws-sigv4 signing parameters for the example key at
/// `time` (what its chunk and trailer signers take).
pub fn with_chunk_params<R>(
    time: SystemTime,
    f: impl FnOnce(&v4::SigningParams<'_, SigningSettings>) -> R,
) -> R {
    let identity: Identity =
        AwsCredentials::new(ACCESS_KEY, SECRET_KEY, None, None, "tests").into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region("us-east-1")
        .name("s3")
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .unwrap();
    f(&params)
}

/// Standard padded base64 (for checksum values).
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Replaces (or adds) the value of `name` in the query of `request`.
pub fn set_query_param(request: &mut http::Request<()>, name: &str, value: &str) {
    let uri = request.uri().clone();
    let query = uri.query().unwrap_or("");
    let mut parts: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty() && p.split('=').next() != Some(name))
        .map(str::to_owned)
        .collect();
    parts.push(format!("{name}={value}"));
    let target = format!("{}?{}", uri.path(), parts.join("&"));
    *request.uri_mut() = target.parse().unwrap();
}

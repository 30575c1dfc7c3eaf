//! S3 through aws-sdk-s3 (path style, rustls with ring), and what the tests
//! compare its answers with: test data, ETags, error codes, metrics.

use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};

/// An aws-sdk-s3 client with the SDK's default settings (checksums when
/// supported, so uploads are aws-chunked with CRC trailers).
pub fn s3_client(endpoint: &str, access: &str, secret: &str) -> Client {
    s3_client_trusting(endpoint, access, secret, None)
}

/// [`s3_client`] that trusts only `ca` (PEM), if given, for HTTPS servers.
pub fn s3_client_trusting(endpoint: &str, access: &str, secret: &str, ca: Option<&str>) -> Client {
    use aws_smithy_http_client::tls::{TlsContext, TrustStore};
    let mut http = aws_smithy_http_client::Builder::new().tls_provider(
        aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
        ),
    );
    if let Some(pem) = ca {
        http = http.tls_context(
            TlsContext::builder()
                .with_trust_store(TrustStore::empty().with_pem_certificate(pem.as_bytes().to_vec()))
                .build()
                .unwrap(),
        );
    }
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(Credentials::new(access, secret, None, None, "test"))
        .http_client(http.build_https())
        .build();
    Client::from_conf(conf)
}

/// The whole body of `bucket/key`, through `s3`; panics on any error.
pub async fn get_bytes(s3: &Client, bucket: &str, key: &str) -> Vec<u8> {
    s3.get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {bucket}/{key}: {e:?}"))
        .body
        .collect()
        .await
        .unwrap_or_else(|e| panic!("GET {bucket}/{key} body: {e}"))
        .to_vec()
}

/// The S3 error code of an SDK error.
pub fn code<E, R>(e: &aws_sdk_s3::error::SdkError<E, R>) -> String
where
    E: aws_sdk_s3::error::ProvideErrorMetadata + std::fmt::Debug,
    R: std::fmt::Debug,
{
    match e {
        aws_sdk_s3::error::SdkError::ServiceError(s) => s.err().code().unwrap_or("").to_owned(),
        other => format!("not a service error: {other:?}"),
    }
}

/// The HTTP status of an SDK error.
pub fn status<E>(
    e: &aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> u16 {
    e.raw_response().map_or(0, |r| r.status().as_u16())
}

/// `len` pseudo-random bytes, the same for the same `seed`.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut out = vec![0; len];
    fastrand::Rng::with_seed(seed).fill(&mut out);
    out
}

/// Hex MD5.
pub fn md5_hex(data: &[u8]) -> String {
    use md5::Digest as _;
    hex::encode(md5::Md5::digest(data))
}

/// Standard base64 (with padding).
pub fn base64(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// The value of the sample line starting with `name ` (a metric without
/// labels, or `name{labels} `) in a Prometheus exposition.
pub fn metric_value(exposition: &str, name: &str) -> Option<u64> {
    exposition
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

//! SigV4 request signing (header form) with aws-sigv4.
//!
//! Bodies of data (PUT, UploadPart) are sent as `UNSIGNED-PAYLOAD` by
//! default: the payload hash would cost the client a SHA-256 pass over every
//! byte (about 1.5 GB/s per core here) on the same two cores the servers use,
//! and both MinIO and Tessera accept `UNSIGNED-PAYLOAD` over plain HTTP and
//! TLS alike. `--sign-payload` hashes each body first (one extra pattern
//! generation pass plus SHA-256 on the client) and sends the signed hash,
//! which makes the server verify it: that measures the server's
//! signed-payload path. Small bodies (CompleteMultipartUpload XML) are
//! always signed.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

/// What the `x-amz-content-sha256` header says about the body.
#[derive(Debug, Clone)]
pub enum PayloadHash<'a> {
    /// `UNSIGNED-PAYLOAD`.
    Unsigned,
    /// The body itself (hashed here).
    Bytes(&'a [u8]),
    /// A SHA-256 computed by the caller, lowercase hex.
    Precomputed(String),
}

/// Signs requests for one set of credentials and one region.
#[derive(Debug, Clone)]
pub struct Signer {
    identity: Identity,
    region: String,
}

impl Signer {
    pub fn new(access_key: &str, secret_key: &str, region: &str) -> Signer {
        let identity: Identity =
            Credentials::new(access_key, secret_key, None, None, "tessera-bench").into();
        Signer {
            identity,
            region: region.to_owned(),
        }
    }

    /// Signs a request: `path_and_query` already percent-encoded as sent,
    /// `headers` every header to sign (must include `host`). Returns the
    /// headers to add (`authorization`, `x-amz-date`,
    /// `x-amz-content-sha256`).
    pub fn sign(
        &self,
        method: &str,
        path_and_query: &str,
        headers: &[(&str, &str)],
        payload: PayloadHash<'_>,
        time: SystemTime,
    ) -> Result<Vec<(&'static str, String)>, String> {
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
            return Err("cannot sign a request without a host header".into());
        }
        let mut settings = SigningSettings::default();
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        let params: aws_sigv4::http_request::SigningParams<'_> = v4::SigningParams::builder()
            .identity(&self.identity)
            .region(&self.region)
            .name("s3")
            .time(time)
            .settings(settings)
            .build()
            .map_err(|e| format!("signing parameters: {e}"))?
            .into();
        let body = match payload {
            PayloadHash::Unsigned => SignableBody::UnsignedPayload,
            PayloadHash::Bytes(b) => SignableBody::Bytes(b),
            PayloadHash::Precomputed(h) => SignableBody::Precomputed(h),
        };
        let request = SignableRequest::new(method, path_and_query, headers.iter().copied(), body)
            .map_err(|e| format!("cannot sign {method} {path_and_query}: {e}"))?;
        let (instructions, _signature) = sign(request, &params)
            .map_err(|e| format!("cannot sign {method} {path_and_query}: {e}"))?
            .into_parts();
        let (new_headers, _params) = instructions.into_parts();
        Ok(new_headers
            .into_iter()
            .map(|h| (h.name(), h.value().to_owned()))
            .collect())
    }
}

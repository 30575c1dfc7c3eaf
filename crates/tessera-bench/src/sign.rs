//! SigV4 request signing (header form) with aws-sigv4.
//!
//! Bodies of data (PUT, UploadPart) are sent as `UNSIGNED-PAYLOAD` by
//! default: the payload hash would cost the client a SHA-256 pass over every
//! byte (about 1.5 GB/s per core here) on the same two cores the servers use,
//! and both MinIO and Tessera accept `UNSIGNED-PAYLOAD` over plain HTTP and
//! TLS alike. `--payload` sends them as other clients do (`chunked.rs`):
//! `signed` hashes each body first (one extra pattern generation pass plus
//! SHA-256 on the client) and sends the signed hash, `streaming` and
//! `minio-go` sign every 64 KiB chunk, the trailer modes add a CRC. Small
//! bodies (CompleteMultipartUpload XML) are always signed.

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
    secret_key: String,
    region: String,
}

/// The headers a signature adds, and the signature itself (the seed of a
/// streaming body's chunk signatures).
#[derive(Debug, Clone)]
pub struct Signed {
    pub headers: Vec<(&'static str, String)>,
    pub signature: String,
}

impl Signer {
    pub fn new(access_key: &str, secret_key: &str, region: &str) -> Signer {
        let identity: Identity =
            Credentials::new(access_key, secret_key, None, None, "tessera-bench").into();
        Signer {
            identity,
            secret_key: secret_key.to_owned(),
            region: region.to_owned(),
        }
    }

    /// The chain of chunk signatures that follows a request signed at
    /// `amz_date` (its `x-amz-date`) with `seed`.
    pub fn chain(&self, time: SystemTime, amz_date: &str, seed: String) -> crate::chunked::Chain {
        let key = v4::generate_signing_key(&self.secret_key, time, &self.region, "s3");
        let date = amz_date.get(..8).unwrap_or_default();
        crate::chunked::Chain {
            key: key.as_ref().to_vec(),
            amz_date: amz_date.to_owned(),
            scope: format!("{date}/{}/s3/aws4_request", self.region),
            previous: seed,
        }
    }

    /// Signs a request: `path_and_query` already percent-encoded as sent,
    /// `headers` every header to sign (must include `host`). Returns the
    /// headers to add (`authorization`, `x-amz-date`,
    /// `x-amz-content-sha256`) and the signature.
    pub fn sign(
        &self,
        method: &str,
        path_and_query: &str,
        headers: &[(&str, &str)],
        payload: PayloadHash<'_>,
        time: SystemTime,
    ) -> Result<Signed, String> {
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
        let (instructions, signature) = sign(request, &params)
            .map_err(|e| format!("cannot sign {method} {path_and_query}: {e}"))?
            .into_parts();
        let (new_headers, _params) = instructions.into_parts();
        Ok(Signed {
            headers: new_headers
                .into_iter()
                .map(|h| (h.name(), h.value().to_owned()))
                .collect(),
            signature,
        })
    }
}

//! Requests signed as a client would sign them, for what no SDK sends: a
//! SigV4 header-signed raw request, and a browser's POST upload form.

use super::s3::base64;
use super::server::{ACCESS_KEY, SECRET_KEY, Server};

/// `YYYYMMDDTHHMMSSZ` for now.
fn amz_date_now() -> String {
    s3_gateway::auth::amz_date(std::time::SystemTime::now())
}

impl Server {
    /// A raw HTTP/1.1 request signed with SigV4 (header auth, payload
    /// `UNSIGNED-PAYLOAD`), so tests can send bodies no SDK would build.
    /// `path` is already percent-encoded, with its query.
    pub fn signed_raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Vec<u8> {
        use s3_gateway::auth::{
            CredentialScope, SecretKey, SigningKey, canonical_request, string_to_sign,
        };
        let date = amz_date_now();
        let mut b = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.addr)
            .header("x-amz-date", &date)
            .header("x-amz-content-sha256", "UNSIGNED-PAYLOAD");
        for (n, v) in headers {
            b = b.header(*n, *v);
        }
        let req = b.body(()).unwrap();
        // Every x-amz-* header must be signed.
        let mut signed: Vec<String> = req
            .headers()
            .keys()
            .map(|n| n.as_str().to_owned())
            .filter(|n| n == "host" || n.starts_with("x-amz-"))
            .collect();
        signed.sort();
        signed.dedup();
        let creq = canonical_request(&(&req).into(), &signed, "UNSIGNED-PAYLOAD", false).unwrap();
        let scope = CredentialScope::new(&date[..8], "us-east-1", "s3");
        let sts = string_to_sign(&date, &scope, &creq);
        let sig = SigningKey::derive(&SecretKey::new(SECRET_KEY), &scope).sign(sts.as_bytes());
        let mut out = format!("{method} {path} HTTP/1.1\r\n");
        for (n, v) in req.headers() {
            out.push_str(&format!("{n}: {}\r\n", v.to_str().unwrap()));
        }
        out.push_str(&format!(
            "authorization: AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{scope}, SignedHeaders={}, Signature={}\r\n",
            signed.join(";"),
            sig.to_hex()
        ));
        out.push_str(&format!(
            "content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        ));
        let mut out = out.into_bytes();
        out.extend_from_slice(body);
        out
    }
}

impl Server {
    /// A browser-style POST upload form for `bucket`, its policy signed
    /// with `secret`: `(content type, body)`.
    pub fn post_form(
        &self,
        bucket: &str,
        policy_json: &str,
        secret: &str,
        fields: &[(&str, &str)],
        file: &[u8],
    ) -> (String, Vec<u8>) {
        use s3_gateway::auth::{CredentialScope, SecretKey, SigningKey};
        let _ = bucket;
        let date = amz_date_now();
        let scope = CredentialScope::new(&date[..8], "us-east-1", "s3");
        let policy = base64(policy_json.as_bytes());
        let sig = SigningKey::derive(&SecretKey::new(secret), &scope).sign(policy.as_bytes());
        let credential = format!("{ACCESS_KEY}/{scope}");
        let boundary = "----TesseraFormBoundary7MA4YWxk";
        let mut all: Vec<(String, String)> = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        all.push(("x-amz-algorithm".into(), "AWS4-HMAC-SHA256".into()));
        all.push(("x-amz-credential".into(), credential));
        all.push(("x-amz-date".into(), date.clone()));
        all.push(("policy".into(), policy));
        all.push(("x-amz-signature".into(), sig.to_hex()));
        let mut body = Vec::new();
        for (k, v) in &all {
            body.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n"
                )
                .as_bytes(),
            );
        }
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"up.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(file);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        (format!("multipart/form-data; boundary={boundary}"), body)
    }
}

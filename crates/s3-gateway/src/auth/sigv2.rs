//! AWS Signature Version 2, as S3 and MinIO still accept it from older
//! clients and appliances: `Authorization: AWS <key>:<signature>` and
//! presigned `AWSAccessKeyId` / `Expires` / `Signature` query strings,
//! the signature being base64(HMAC-SHA1(secret, StringToSign)).
//!
//! StringToSign is the method, `Content-MD5`, `Content-Type`, the date
//! (`Date`, empty when `x-amz-date` is sent; the `Expires` value of a
//! presigned URL), the `x-amz-*` headers (lowercase, sorted, values
//! trimmed, repeated ones joined by commas), and the resource: the path as
//! sent (preceded by `/bucket` for a virtual-host-style request) and the
//! signed sub-resources in name order, values decoded. The payload is not
//! signed: `Content-MD5`, when sent, is checked as the body streams.

use base64::Engine as _;
use hmac::{KeyInit, Mac};
use http::HeaderMap;
use sha1::Sha1;

use super::canonical::{Query, RequestHead};
use super::error::{AccessDenied, AuthError, SignatureMismatch};
use super::signing::ct_eq;
use super::time::Timestamp;

/// The query parameters that are part of the signed resource (S3's and
/// MinIO's list).
const SUB_RESOURCES: &[&str] = &[
    "accelerate",
    "acl",
    "analytics",
    "cors",
    "delete",
    "encryption",
    "inventory",
    "legal-hold",
    "lifecycle",
    "location",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "partNumber",
    "policy",
    "replication",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "retention",
    "select",
    "select-type",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
];

/// The parts of a SigV2 `Authorization` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderV2 {
    pub(crate) access_key: String,
    pub(crate) signature: String,
}

/// Whether an `Authorization` value is SigV2's.
pub(crate) fn is_v2_header(value: &str) -> bool {
    value.starts_with("AWS ")
}

/// Parses `AWS <access key>:<signature>`.
pub(crate) fn parse_header(value: &str) -> Result<HeaderV2, AuthError> {
    let rest = value
        .strip_prefix("AWS ")
        .ok_or_else(AuthError::unsupported_mechanism)?
        .trim_start_matches(' ');
    let (key, sig) = rest
        .rsplit_once(':')
        .ok_or_else(|| AuthError::InvalidArgument {
            message: "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature"
                .to_owned(),
            name: "Authorization".to_owned(),
            value: value.to_owned(),
        })?;
    if key.is_empty() || sig.is_empty() {
        return Err(AuthError::InvalidArgument {
            message: "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature"
                .to_owned(),
            name: "Authorization".to_owned(),
            value: value.to_owned(),
        });
    }
    Ok(HeaderV2 {
        access_key: key.to_owned(),
        signature: sig.to_owned(),
    })
}

/// The signature of `string_to_sign` under `secret`: base64 of its
/// HMAC-SHA1.
pub(crate) fn sign(secret: &[u8], string_to_sign: &str) -> String {
    let mut mac = <hmac::Hmac<Sha1> as KeyInit>::new_from_slice(secret)
        .expect("HMAC takes keys of any length");
    mac.update(string_to_sign.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether `provided` is the signature of `string_to_sign` under
/// `secret` (compared in constant time).
pub(crate) fn verify(secret: &[u8], string_to_sign: &str, provided: &str) -> bool {
    ct_eq(sign(secret, string_to_sign).as_bytes(), provided.as_bytes())
}

fn header_text<'a>(h: &'a HeaderMap, name: &str) -> &'a str {
    h.get(name)
        .and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
        .unwrap_or("")
}

/// The canonical `x-amz-*` headers, one `name:value\n` each.
fn amz_headers(h: &HeaderMap) -> String {
    let mut names: Vec<&str> = h
        .keys()
        .map(|k| k.as_str())
        .filter(|k| k.starts_with("x-amz-"))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut out = String::new();
    for name in names {
        let values: Vec<String> = h
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_owned())
            .collect();
        out.push_str(name);
        out.push(':');
        out.push_str(&values.join(","));
        out.push('\n');
    }
    out
}

/// The signed sub-resources of the query, `?a&b=c` in name order (values
/// decoded), or empty.
fn sub_resources(query: &Query) -> String {
    let mut found: Vec<(&str, Option<String>)> = Vec::new();
    for name in SUB_RESOURCES {
        for (n, v) in query.pairs() {
            if n == name.as_bytes() {
                let v = (!v.is_empty()).then(|| String::from_utf8_lossy(v).into_owned());
                found.push((name, v));
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = String::new();
    for (i, (n, v)) in found.iter().enumerate() {
        out.push(if i == 0 { '?' } else { '&' });
        out.push_str(n);
        if let Some(v) = v {
            out.push('=');
            out.push_str(v);
        }
    }
    out
}

/// The StringToSign of a request, with `date` in the date line and
/// `bucket_prefix` (`/bucket` of a virtual-host-style request, or empty)
/// before the path.
#[cfg(test)]
fn string_to_sign(
    head: &RequestHead<'_>,
    query: &Query,
    date: &str,
    bucket_prefix: &str,
) -> String {
    string_to_sign_for(head, query, date, bucket_prefix, head.uri.path())
}

fn string_to_sign_for(
    head: &RequestHead<'_>,
    query: &Query,
    date: &str,
    bucket_prefix: &str,
    path: &str,
) -> String {
    let h = head.headers;
    format!(
        "{}\n{}\n{}\n{}\n{}{}{}{}",
        head.method.as_str(),
        header_text(h, "content-md5"),
        header_text(h, "content-type"),
        date,
        amz_headers(h),
        bucket_prefix,
        path,
        sub_resources(query)
    )
}

/// The paths a request's resource may have been signed with: the path as
/// sent, and for a bucket addressed without a trailing slash (`/bucket`)
/// also `/bucket/`, which botocore signs for bucket operations.
fn resource_paths(head: &RequestHead<'_>) -> Vec<String> {
    let path = head.uri.path();
    let mut out = vec![path.to_owned()];
    if path.len() > 1 && !path[1..].contains('/') {
        out.push(format!("{path}/"));
    }
    out
}

/// The `/bucket` prefixes a request's resource may have been signed with:
/// none (path style), and the first label of the host when the host has
/// several labels and is not an address (virtual-host style).
pub(crate) fn bucket_prefixes(head: &RequestHead<'_>) -> Vec<String> {
    let mut out = vec![String::new()];
    let host = head
        .headers
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| head.uri.host())
        .unwrap_or("");
    let host = host.rsplit_once(':').map_or(host, |(h, p)| {
        if p.bytes().all(|c| c.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    let is_ip = host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[');
    if !is_ip && let Some((bucket, _)) = host.split_once('.') {
        out.push(format!("/{bucket}"));
    }
    out
}

/// The signature check shared by both forms: the first resource form and
/// date line that verify win; a mismatch reports the first StringToSign
/// tried (path style).
pub(crate) fn check(
    head: &RequestHead<'_>,
    query: &Query,
    dates: &[String],
    secret: &[u8],
    access_key: &str,
    provided: &str,
) -> Result<(), AuthError> {
    let mut first = None;
    let paths = resource_paths(head);
    for prefix in bucket_prefixes(head) {
        for path in &paths {
            for date in dates {
                let sts = string_to_sign_for(head, query, date, &prefix, path);
                if verify(secret, &sts, provided) {
                    return Ok(());
                }
                first.get_or_insert(sts);
            }
        }
    }
    Err(AuthError::SignatureDoesNotMatch(Box::new(
        SignatureMismatch {
            access_key: access_key.to_owned(),
            signature_provided: provided.to_owned(),
            string_to_sign: first.unwrap_or_default(),
            canonical_request: String::new(),
        },
    )))
}

/// The time a header-signed SigV2 request was made (`x-amz-date`, an HTTP
/// date, or else `Date`), and the date lines it may have been signed with.
/// With `x-amz-date` (which the amz headers carry), AWS documents an empty
/// date line, its own published example signs the `x-amz-date` value
/// there, and botocore signs the `Date` it sets: each is tried.
pub(crate) fn request_date(h: &HeaderMap) -> Result<(Timestamp, Vec<String>), AuthError> {
    let missing = || AuthError::AccessDenied(AccessDenied::MissingDate);
    let date = h
        .get(http::header::DATE)
        .map(|v| v.to_str().map_err(|_| missing()))
        .transpose()?;
    if let Some(v) = h.get("x-amz-date") {
        let text = v.to_str().map_err(|_| missing())?;
        let t = parse_date(text)
            .or_else(|| Timestamp::parse_iso8601_basic(text))
            .ok_or_else(missing)?;
        let mut lines = vec![String::new(), text.to_owned()];
        if let Some(d) = date {
            lines.push(d.to_owned());
        }
        return Ok((t, lines));
    }
    let text = date.ok_or_else(missing)?;
    let t = parse_date(text).ok_or_else(missing)?;
    Ok((t, vec![text.to_owned()]))
}

/// An HTTP date, also with the numeric zone `+0000` that SigV2 clients
/// (and AWS's own examples) write for GMT.
fn parse_date(text: &str) -> Option<Timestamp> {
    Timestamp::parse_http_date(text).or_else(|| {
        let gmt = text.trim().strip_suffix("+0000")?;
        Timestamp::parse_http_date(&format!("{gmt}GMT"))
    })
}

/// The parameters of a SigV2 presigned URL.
pub(crate) struct PresignedV2 {
    pub(crate) access_key: String,
    pub(crate) signature: String,
    /// `Expires`: seconds since the epoch.
    pub(crate) expires: i64,
    /// `Expires` as sent (the date line of the StringToSign).
    pub(crate) expires_text: String,
}

/// Reads `AWSAccessKeyId`, `Signature` and `Expires` from the query.
pub(crate) fn presigned(query: &Query) -> Result<PresignedV2, AuthError> {
    let get = |name: &str| {
        query
            .pairs()
            .find(|(n, _)| *n == name.as_bytes())
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    };
    let missing = || AuthError::AccessDenied(AccessDenied::QueryParametersMissing);
    let access_key = get("AWSAccessKeyId")
        .filter(|v| !v.is_empty())
        .ok_or_else(missing)?;
    let signature = get("Signature")
        .filter(|v| !v.is_empty())
        .ok_or_else(missing)?;
    let expires_text = get("Expires").ok_or_else(missing)?;
    let expires = expires_text
        .parse::<i64>()
        .ok()
        .filter(|e| *e >= 0)
        .ok_or(AuthError::AccessDenied(AccessDenied::MalformedExpires))?;
    Ok(PresignedV2 {
        access_key,
        signature,
        expires,
        expires_text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

    fn head(
        method: &str,
        uri: &str,
        headers: &[(&str, &str)],
    ) -> (http::Method, http::Uri, HeaderMap) {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_str(v).unwrap(),
            );
        }
        (method.parse().unwrap(), uri.parse().unwrap(), h)
    }

    fn sts(method: &str, uri: &str, headers: &[(&str, &str)], date: &str, prefix: &str) -> String {
        let (m, u, h) = head(method, uri, headers);
        let rh = RequestHead {
            method: &m,
            uri: &u,
            headers: &h,
        };
        let q = Query::parse(u.query(), 16 * 1024, 1000).unwrap();
        string_to_sign(&rh, &q, date, prefix)
    }

    /// The examples of AWS's "Signing and authenticating REST requests"
    /// (S3 developer guide), with their published signatures.
    #[test]
    fn aws_documented_examples() {
        // Object GET, virtual-host style.
        let s = sts(
            "GET",
            "/photos/puppy.jpg",
            &[("host", "awsexamplebucket1.us-west-1.s3.amazonaws.com")],
            "Tue, 27 Mar 2007 19:36:42 +0000",
            "/awsexamplebucket1",
        );
        assert_eq!(
            s,
            "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/awsexamplebucket1/photos/puppy.jpg"
        );
        assert_eq!(sign(SECRET, &s), "qgk2+6Sv9/oM7G3qLEjTH1a1l1g=");
        // Object PUT.
        let s = sts(
            "PUT",
            "/photos/puppy.jpg",
            &[("content-type", "image/jpeg"), ("content-length", "94328")],
            "Tue, 27 Mar 2007 21:15:45 +0000",
            "/awsexamplebucket1",
        );
        assert_eq!(sign(SECRET, &s), "iqRzw+ileNPu1fhspnRs8nOjjIA=");
        // List with a query that is not a sub-resource.
        let s = sts(
            "GET",
            "/?prefix=photos&max-keys=50&marker=puppy",
            &[("user-agent", "Mozilla/5.0")],
            "Tue, 27 Mar 2007 19:42:41 +0000",
            "/awsexamplebucket1",
        );
        assert_eq!(
            s,
            "GET\n\n\nTue, 27 Mar 2007 19:42:41 +0000\n/awsexamplebucket1/"
        );
        assert_eq!(sign(SECRET, &s), "m0WP8eCtspQl5Ahe6L1SozdX9YA=");
        // A sub-resource.
        let s = sts(
            "GET",
            "/?acl",
            &[],
            "Tue, 27 Mar 2007 19:44:46 +0000",
            "/awsexamplebucket1",
        );
        assert_eq!(
            s,
            "GET\n\n\nTue, 27 Mar 2007 19:44:46 +0000\n/awsexamplebucket1/?acl"
        );
        assert_eq!(sign(SECRET, &s), "82ZHiFIjc+WbcwFKGUVEQspPn+0=");
        // x-amz-date: the header is among the amz ones; the date line is
        // one of those `request_date` offers.
        let (m, u, h) = head(
            "DELETE",
            "/awsexamplebucket1/photos/puppy.jpg",
            &[
                ("x-amz-date", "Tue, 27 Mar 2007 21:20:26 +0000"),
                ("date", "Tue, 27 Mar 2007 21:20:27 +0000"),
            ],
        );
        let (t, lines) = request_date(&h).unwrap();
        assert_eq!(t.http_date(), "Tue, 27 Mar 2007 21:20:26 GMT");
        assert_eq!(lines.len(), 3);
        let rh = RequestHead {
            method: &m,
            uri: &u,
            headers: &h,
        };
        let q = Query::parse(None, 16, 16).unwrap();
        assert_eq!(
            string_to_sign(&rh, &q, "", ""),
            "DELETE\n\n\n\nx-amz-date:Tue, 27 Mar 2007 21:20:26 +0000\n/awsexamplebucket1/photos/puppy.jpg"
        );
        let good = sign(SECRET, &string_to_sign(&rh, &q, &lines[2], ""));
        assert!(check(&rh, &q, &lines, SECRET, "k", &good).is_ok());
        let err = check(&rh, &q, &lines, SECRET, "k", "XbyTlbQdu9Xw5o8P4iMwPktxQd8=").unwrap_err();
        assert_eq!(err.code(), "SignatureDoesNotMatch");
        // Several amz headers, a repeated one, Content-MD5.
        let s = sts(
            "PUT",
            "/db-backup.dat.gz",
            &[
                ("content-md5", "4gJE4saaMU4BqNR0kLY+lw=="),
                ("content-type", "application/x-download"),
                ("x-amz-acl", "public-read"),
                ("x-amz-meta-reviewedby", "joe@example.com"),
                ("x-amz-meta-reviewedby", "jane@example.com"),
                ("x-amz-meta-filechecksum", "0x02661779"),
                ("x-amz-meta-checksumalgorithm", "crc32"),
            ],
            "Tue, 27 Mar 2007 21:06:08 +0000",
            "/static.example.com",
        );
        assert_eq!(
            s,
            "PUT\n4gJE4saaMU4BqNR0kLY+lw==\napplication/x-download\nTue, 27 Mar 2007 21:06:08 +0000\n\
             x-amz-acl:public-read\nx-amz-meta-checksumalgorithm:crc32\n\
             x-amz-meta-filechecksum:0x02661779\n\
             x-amz-meta-reviewedby:joe@example.com,jane@example.com\n/static.example.com/db-backup.dat.gz"
        );
        assert_eq!(sign(SECRET, &s), "jtBQa0Aq+DkULFI8qrpwIjGEx0E=");
    }

    #[test]
    fn sub_resources_are_sorted_and_decoded() {
        let s = sts(
            "GET",
            "/b/k?versionId=a%2Fb&uploadId=u&prefix=x&response-content-type=text%2Fplain",
            &[],
            "D",
            "",
        );
        assert!(
            s.ends_with("/b/k?response-content-type=text/plain&uploadId=u&versionId=a/b"),
            "{s}"
        );
    }

    #[test]
    fn header_forms() {
        assert_eq!(
            parse_header("AWS AKID:c2ln").unwrap(),
            HeaderV2 {
                access_key: "AKID".into(),
                signature: "c2ln".into()
            }
        );
        for bad in ["AWS AKID", "AWS :sig", "AWS AKID:", "AWS4 x"] {
            assert!(parse_header(bad).is_err(), "{bad}");
        }
        assert!(verify(SECRET, "x", &sign(SECRET, "x")));
        assert!(!verify(SECRET, "x", &sign(SECRET, "y")));
    }
}

//! Browser POST uploads (`POST /bucket` with `multipart/form-data`),
//! authenticated by a SigV4-signed policy document.
//!
//! The form fields before the `file` field are read into memory (bounded);
//! the file is streamed from the body into the object layer, ending at the
//! closing boundary, so an upload of any size uses bounded memory. The
//! policy's conditions are checked before a byte of the file is stored;
//! `content-length-range` is enforced while the file streams.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::SystemTime;

use bytes::{Buf, Bytes, BytesMut};
use http::{Response, StatusCode};
use http_body::Body;
use object::layer::PutOptions;
use tokio::io::{AsyncRead, ReadBuf};

use super::object::{quoted, set};
use super::{empty, xml_response};
use crate::auth::{CredentialScope, CredentialsProvider, Signature, SigningKey};
use crate::body::ResponseBody;
use crate::encryption;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};
use crate::xml::XmlWriter;

/// Bytes of form fields before the file (S3 allows 20 KiB of policy).
const MAX_FIELDS_BYTES: usize = 64 * 1024;
/// Most form fields.
const MAX_FIELDS: usize = 64;

fn malformed(msg: &str) -> S3Error {
    S3Error::with_message("MalformedPOSTRequest", msg)
}

fn denied(msg: &str) -> S3Error {
    S3Error::with_message("AccessDenied", msg)
}

/// The boundary of a `multipart/form-data` content type.
pub(crate) fn boundary(content_type: &str) -> Option<String> {
    let (mime, params) = content_type.split_once(';')?;
    if !mime.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        (k.trim().eq_ignore_ascii_case("boundary"))
            .then(|| v.trim().trim_matches('"').to_owned())
            .filter(|b| !b.is_empty() && b.len() <= 200)
    })
}

/// The request body as a byte source with a pushback buffer.
struct Source<B> {
    body: B,
    buf: BytesMut,
    done: bool,
    raw: u64,
}

impl<B> Source<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    /// Reads one more frame into the buffer; false at the end of the body.
    fn poll_more(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        loop {
            if self.done {
                return Poll::Ready(Ok(false));
            }
            match Pin::new(&mut self.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    self.done = true;
                    return Poll::Ready(Ok(false));
                }
                Poll::Ready(Some(Err(e))) => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        e.to_string(),
                    )));
                }
                Poll::Ready(Some(Ok(f))) => {
                    if let Ok(d) = f.into_data() {
                        self.raw += d.len() as u64;
                        self.buf.extend_from_slice(&d);
                        return Poll::Ready(Ok(true));
                    }
                }
            }
        }
    }

    async fn more(&mut self) -> io::Result<bool> {
        std::future::poll_fn(|cx| self.poll_more(cx)).await
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// One part's headers: its field name, its file name, its content type.
fn part_headers(head: &[u8]) -> Result<(String, Option<String>, Option<String>), S3Error> {
    let head = std::str::from_utf8(head).map_err(|_| malformed("part headers are not UTF-8"))?;
    let mut name = None;
    let mut filename = None;
    let mut ctype = None;
    for line in head.split("\r\n") {
        let Some((h, v)) = line.split_once(':') else {
            continue;
        };
        if h.trim().eq_ignore_ascii_case("content-disposition") {
            for p in v.split(';').skip(1) {
                if let Some((k, val)) = p.split_once('=') {
                    let val = val.trim().trim_matches('"').to_owned();
                    match k.trim() {
                        "name" => name = Some(val),
                        "filename" => filename = Some(val),
                        _ => {}
                    }
                }
            }
        } else if h.trim().eq_ignore_ascii_case("content-type") {
            ctype = Some(v.trim().to_owned());
        }
    }
    Ok((
        name.ok_or_else(|| malformed("a part has no name"))?,
        filename,
        ctype,
    ))
}

/// The file part as an `AsyncRead`: bytes up to the closing delimiter,
/// which must arrive before the body ends.
struct FileReader<'a, B> {
    src: &'a mut Source<B>,
    delim: Vec<u8>,
    total: u64,
    max: u64,
    finished: bool,
}

impl<B> AsyncRead for FileReader<'_, B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.finished {
                return Poll::Ready(Ok(()));
            }
            if let Some(i) = find(&this.src.buf, &this.delim) {
                if i == 0 {
                    this.src.buf.advance(this.delim.len());
                    this.finished = true;
                    return Poll::Ready(Ok(()));
                }
                let n = i.min(out.remaining());
                return this.emit(n, out);
            }
            // Everything but a possible partial delimiter at the end is file.
            let safe = this.src.buf.len().saturating_sub(this.delim.len() - 1);
            if safe > 0 {
                let n = safe.min(out.remaining());
                return this.emit(n, out);
            }
            match this.src.poll_more(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(true)) => {}
                Poll::Ready(Ok(false)) => {
                    return Poll::Ready(Err(io::Error::other(malformed(
                        "the body ended inside the file",
                    ))));
                }
            }
        }
    }
}

impl<B> FileReader<'_, B> {
    fn emit(&mut self, n: usize, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.total += n as u64;
        if self.total > self.max {
            return Poll::Ready(Err(io::Error::other(S3Error::with_message(
                "EntityTooLarge",
                "Your proposed upload exceeds the maximum allowed size",
            ))));
        }
        out.put_slice(&self.src.buf[..n]);
        self.src.buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

/// A parsed and checked policy.
#[derive(Debug)]
struct Policy {
    length: (u64, u64),
}

/// Checks the policy's expiry and conditions against the form.
fn check_policy(
    policy_b64: &str,
    fields: &[(String, String)],
    bucket: &str,
    now: SystemTime,
) -> Result<Policy, S3Error> {
    let raw = crate::checksum::base64_decode(policy_b64)
        .ok_or_else(|| malformed("the policy is not base64"))?;
    let doc: serde_json::Value =
        serde_json::from_slice(&raw).map_err(|_| malformed("the policy is not JSON"))?;
    let exp = doc
        .get("expiration")
        .and_then(|e| e.as_str())
        .ok_or_else(|| malformed("the policy has no expiration"))?;
    let exp = parse_iso8601(exp).ok_or_else(|| malformed("the policy expiration is invalid"))?;
    if now > exp {
        return Err(denied("Invalid according to Policy: Policy expired."));
    }
    let field = |name: &str| -> Option<&str> {
        let name = name.trim_start_matches('$');
        if name.eq_ignore_ascii_case("bucket") {
            return Some(bucket);
        }
        fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let mut length = (0, u64::MAX);
    let fail = |c: &serde_json::Value| {
        denied(&format!(
            "Invalid according to Policy: Policy Condition failed: {c}"
        ))
    };
    let conditions = doc
        .get("conditions")
        .and_then(|c| c.as_array())
        .ok_or_else(|| malformed("the policy has no conditions"))?;
    for c in conditions {
        if let Some(obj) = c.as_object() {
            for (k, v) in obj {
                let want = v
                    .as_str()
                    .ok_or_else(|| malformed("a condition value is not a string"))?;
                if field(k) != Some(want) {
                    return Err(fail(c));
                }
            }
        } else if let Some(arr) = c.as_array() {
            let op = arr.first().and_then(|o| o.as_str()).unwrap_or("");
            match op.to_ascii_lowercase().as_str() {
                "eq" | "starts-with" => {
                    let (Some(name), Some(want)) = (
                        arr.get(1).and_then(|v| v.as_str()),
                        arr.get(2).and_then(|v| v.as_str()),
                    ) else {
                        return Err(malformed("a condition is malformed"));
                    };
                    let got = field(name).unwrap_or("");
                    let ok = if op.eq_ignore_ascii_case("eq") {
                        got == want
                    } else {
                        got.starts_with(want)
                    };
                    if !ok {
                        return Err(fail(c));
                    }
                }
                "content-length-range" => {
                    let num = |i: usize| {
                        arr.get(i).and_then(|v| {
                            v.as_u64()
                                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                        })
                    };
                    let (Some(lo), Some(hi)) = (num(1), num(2)) else {
                        return Err(malformed("content-length-range is malformed"));
                    };
                    length = (lo, hi);
                }
                _ => return Err(malformed("unknown policy condition")),
            }
        } else {
            return Err(malformed("a condition is malformed"));
        }
    }
    Ok(Policy { length })
}

/// `2006-01-02T15:04:05[.000]Z`.
fn parse_iso8601(s: &str) -> Option<SystemTime> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>().ok());
    let (y, m, dd) = (d.next()??, d.next()??, d.next()??);
    let time = time.split('.').next()?;
    let mut t = time.split(':').map(|x| x.parse::<i64>().ok());
    let (h, mi, se) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&dd) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let days = crate::auth::days_from_civil(y, m, dd);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se;
    u64::try_from(secs)
        .ok()
        .map(|s| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s))
}

pub(crate) async fn post_object<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
    boundary: String,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let body = ctx
        .body
        .take()
        .ok_or_else(|| S3Error::internal("request body taken twice"))?;
    let mut src = Source {
        body,
        buf: BytesMut::new(),
        done: false,
        raw: 0,
    };
    let first = format!("--{boundary}\r\n").into_bytes();
    let delim = format!("\r\n--{boundary}").into_bytes();
    // The first boundary.
    while src.buf.len() < first.len() {
        if !src.more().await.map_err(crate::error::body_error)? {
            return Err(malformed("the body ends before the first boundary"));
        }
    }
    if !src.buf.starts_with(&first) {
        return Err(malformed("the body does not start with the boundary"));
    }
    src.buf.advance(first.len());
    // Fields up to the file.
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut used = 0usize;
    let (file_type, filename) = loop {
        let head_end = loop {
            if let Some(i) = find(&src.buf, b"\r\n\r\n") {
                break i;
            }
            if src.buf.len() > MAX_FIELDS_BYTES {
                return Err(malformed("form part headers are too long"));
            }
            if !src.more().await.map_err(crate::error::body_error)? {
                return Err(malformed("the body ends inside a part header"));
            }
        };
        let (name, filename, ctype) = part_headers(&src.buf[..head_end])?;
        src.buf.advance(head_end + 4);
        if name.eq_ignore_ascii_case("file") || filename.is_some() {
            break (ctype, filename.unwrap_or_default());
        }
        let end = loop {
            if let Some(i) = find(&src.buf, &delim) {
                break i;
            }
            if used + src.buf.len() > MAX_FIELDS_BYTES {
                return Err(malformed("form fields are too large"));
            }
            if !src.more().await.map_err(crate::error::body_error)? {
                return Err(malformed("the body ends inside a field"));
            }
        };
        let value = String::from_utf8(src.buf[..end].to_vec())
            .map_err(|_| malformed("a form field is not UTF-8"))?;
        used += name.len() + value.len();
        if used > MAX_FIELDS_BYTES || fields.len() >= MAX_FIELDS {
            return Err(malformed("form fields are too large"));
        }
        src.buf.advance(end + delim.len());
        // After a delimiter: `\r\n` (another part) or `--` (the end).
        while src.buf.len() < 2 {
            if !src.more().await.map_err(crate::error::body_error)? {
                return Err(malformed("the body ends after a boundary"));
            }
        }
        if src.buf.starts_with(b"--") {
            return Err(S3Error::with_message(
                "InvalidArgument",
                "POST requires exactly one file upload per request.",
            ));
        }
        src.buf.advance(2);
        fields.push((name, value));
    };
    let get = |n: &str| {
        fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.clone())
    };

    // Authentication: the policy signed with SigV4.
    let algorithm = get("x-amz-algorithm").unwrap_or_default();
    if algorithm != "AWS4-HMAC-SHA256" {
        return Err(S3Error::with_message(
            "InvalidArgument",
            "Only AWS4-HMAC-SHA256 POST policies are supported",
        ));
    }
    let credential =
        get("x-amz-credential").ok_or_else(|| malformed("x-amz-credential is missing"))?;
    let parts: Vec<&str> = credential.split('/').collect();
    if parts.len() != 5 || parts[4] != "aws4_request" || parts[3] != "s3" {
        return Err(malformed("x-amz-credential is malformed"));
    }
    if parts[2] != gw.config.region {
        return Err(S3Error::new("AuthorizationHeaderMalformed"));
    }
    let creds = gw
        .credentials()
        .lookup(parts[0])
        .ok_or_else(|| S3Error::new("InvalidAccessKeyId"))?;
    ctx.access_key = parts[0].to_owned();
    let policy_b64 = get("policy").ok_or_else(|| malformed("the policy is missing"))?;
    let sig = get("x-amz-signature")
        .and_then(|s| Signature::from_hex(&s))
        .ok_or_else(|| malformed("x-amz-signature is missing or malformed"))?;
    let scope = CredentialScope::new(parts[1], parts[2], parts[3]);
    let want = SigningKey::derive(&creds.secret_key, &scope).sign(policy_b64.as_bytes());
    if !want.ct_eq(&sig) {
        return Err(S3Error::new("SignatureDoesNotMatch"));
    }
    let key_tmpl = get("key").ok_or_else(|| malformed("the key field is missing"))?;
    let key = key_tmpl.replace("${filename}", &filename);
    ctx.key = Some(key.clone());
    let policy = check_policy(&policy_b64, &fields, ctx.bucket(), SystemTime::now())?;

    // The object's metadata from the form.
    let mut headers = http::HeaderMap::new();
    for (k, v) in &fields {
        let lk = k.to_ascii_lowercase();
        let stored = lk.starts_with("x-amz-meta-")
            || matches!(
                lk.as_str(),
                "content-type"
                    | "cache-control"
                    | "content-disposition"
                    | "content-encoding"
                    | "expires"
                    | "x-amz-storage-class"
                    | "x-amz-tagging"
            );
        if stored
            && let (Ok(n), Ok(v)) = (
                http::HeaderName::from_bytes(lk.as_bytes()),
                http::HeaderValue::from_str(v),
            )
        {
            headers.insert(n, v);
        }
    }
    if !headers.contains_key(http::header::CONTENT_TYPE)
        && let Some(t) = file_type.and_then(|t| http::HeaderValue::from_str(&t).ok())
    {
        headers.insert(http::header::CONTENT_TYPE, t);
    }
    let mut opts: PutOptions = super::object::put_options(&headers, None)?;
    // Encryption as a PUT asks it (the form's x-amz-server-side-encryption*
    // fields), or as the bucket's default or the server's auto-encryption
    // says.
    let mut sse_headers = http::HeaderMap::new();
    for (k, v) in &fields {
        let lk = k.to_ascii_lowercase();
        if lk.starts_with("x-amz-server-side-encryption") {
            let n = http::HeaderName::from_bytes(lk.as_bytes())
                .map_err(|_| malformed("an encryption field name is not valid"))?;
            let v = http::HeaderValue::from_str(v)
                .map_err(|_| malformed("an encryption field value is not valid"))?;
            sse_headers.insert(n, v);
        }
    }
    let sse_mode = encryption::write_mode_for(gw, &sse_headers, ctx.bucket()).await?;
    let max = policy.length.1.min(gw.config.limits.max_object_bytes);
    let mut reader = FileReader {
        src: &mut src,
        delim,
        total: 0,
        max,
        finished: false,
    };
    let (res, new_key) = match sse_mode {
        None => {
            let res = gw
                .layer
                .put_object(ctx.bucket(), &key, &mut reader, &opts)
                .await;
            (res, None)
        }
        Some(mode) => {
            // The file's length is not known before its end.
            let (res, nk, _) = encryption::put_encrypted(
                gw,
                (ctx.bucket(), &key),
                &mode,
                (&mut reader, None),
                &mut opts,
                object::layer::TrailingMetadata::default(),
            )
            .await?;
            (res, Some(nk))
        }
    };
    let total = reader.total;
    ctx.bytes_in += src.raw;
    let info = res?;
    if total < policy.length.0 {
        // Too small for the policy: take it back out.
        let _ = gw
            .layer
            .delete_object(
                ctx.bucket(),
                &key,
                info.version_id.map(object::layer::VersionSel::Id),
            )
            .await;
        return Err(S3Error::with_message(
            "EntityTooSmall",
            "Your proposed upload is smaller than the minimum allowed size",
        ));
    }

    if let Some(url) = get("success_action_redirect")
        && !url.is_empty()
    {
        let sep = if url.contains('?') { '&' } else { '?' };
        let loc = format!(
            "{url}{sep}bucket={}&key={}&etag={}",
            ctx.bucket(),
            percent_encoding::utf8_percent_encode(&key, percent_encoding::NON_ALPHANUMERIC),
            percent_encoding::utf8_percent_encode(
                &quoted(&info.etag),
                percent_encoding::NON_ALPHANUMERIC
            )
        );
        let mut r = empty(StatusCode::SEE_OTHER);
        let h = r.headers_mut();
        set(h, "location", &loc);
        set(h, "etag", &quoted(&info.etag));
        if let Some(v) = info.version_id {
            set(h, "x-amz-version-id", &v.to_string());
        }
        if let Some(nk) = &new_key {
            encryption::mode_headers(h, nk);
        }
        return Ok(r);
    }
    let mut r = match get("success_action_status").as_deref() {
        Some("201") => {
            let host = ctx.header("host").unwrap_or("localhost").to_owned();
            let mut w = XmlWriter::new();
            w.open("PostResponse")
                .elem("Location", &format!("http://{host}/{}/{key}", ctx.bucket()))
                .elem("Bucket", ctx.bucket())
                .elem("Key", &key)
                .elem("ETag", &quoted(&info.etag))
                .close("PostResponse");
            xml_response(StatusCode::CREATED, w.finish())
        }
        Some("200") => empty(StatusCode::OK),
        _ => empty(StatusCode::NO_CONTENT),
    };
    let h = r.headers_mut();
    set(h, "etag", &quoted(&info.etag));
    if let Some(v) = info.version_id {
        set(h, "x-amz-version-id", &v.to_string());
    }
    if let Some(nk) = &new_key {
        encryption::mode_headers(h, nk);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries() {
        assert_eq!(
            boundary("multipart/form-data; boundary=----abc").as_deref(),
            Some("----abc")
        );
        assert_eq!(
            boundary("multipart/form-data; charset=utf-8; boundary=\"q r\"").as_deref(),
            Some("q r")
        );
        assert_eq!(boundary("application/xml"), None);
        assert_eq!(boundary("multipart/form-data"), None);
    }

    #[test]
    fn iso_dates() {
        let t = parse_iso8601("2013-05-24T00:00:00.000Z").unwrap();
        assert_eq!(
            t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs(),
            1_369_353_600
        );
        assert!(parse_iso8601("2013-13-24T00:00:00Z").is_none());
        assert!(parse_iso8601("yesterday").is_none());
    }

    #[test]
    fn policy_conditions() {
        let policy = r#"{"expiration":"2100-01-01T00:00:00.000Z","conditions":[{"bucket":"b"},["starts-with","$key","up/"],["eq","$Content-Type","text/plain"],["content-length-range",1,100]]}"#;
        let b64 = crate::checksum::base64_encode(policy.as_bytes());
        let fields = vec![
            ("key".to_owned(), "up/x".to_owned()),
            ("Content-Type".to_owned(), "text/plain".to_owned()),
        ];
        let p = check_policy(&b64, &fields, "b", SystemTime::now()).unwrap();
        assert_eq!(p.length, (1, 100));
        assert_eq!(
            check_policy(&b64, &fields, "other", SystemTime::now())
                .unwrap_err()
                .code,
            "AccessDenied"
        );
        let bad_key = vec![
            ("key".to_owned(), "down/x".to_owned()),
            ("Content-Type".to_owned(), "text/plain".to_owned()),
        ];
        assert!(check_policy(&b64, &bad_key, "b", SystemTime::now()).is_err());
        let expired = crate::checksum::base64_encode(
            br#"{"expiration":"2000-01-01T00:00:00Z","conditions":[]}"#,
        );
        assert_eq!(
            check_policy(&expired, &[], "b", SystemTime::now())
                .unwrap_err()
                .code,
            "AccessDenied"
        );
    }
}

//! Browser POST uploads (`POST /bucket` with `multipart/form-data`),
//! authenticated by a signed policy document (SigV4, or SigV2 as older
//! forms sign it).
//!
//! The form runs before anything is authenticated, so it is held short:
//! it waits for its own small share of the server's request bound, its
//! fields are read under a size bound, an idle and a total deadline
//! (`form.rs`), and nothing is read for a bucket that does not exist. Then
//! the signature and the policy (`policy.rs`) are checked: every field must
//! be covered by a condition, a field sent twice is refused, the key is
//! checked after `${filename}` is substituted. Only then does the upload
//! take a slot of the server's bound, and the file streams into the object
//! layer; `content-length-range` is enforced as it streams, so a file too
//! large or too small fails before anything is committed.

pub(super) mod form;
pub(super) mod policy;

use std::time::SystemTime;

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body::Body;
use object::layer::PutOptions;

use self::form::{FileReader, Form, FormDeadlines, Source, malformed, read_form};
use self::policy::check_policy;
use super::object::{quoted, set};
use super::{empty, xml_response};
use crate::auth::{CredentialScope, CredentialsProvider, Signature, SigningKey};
use crate::body::ResponseBody;
use crate::encryption;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};
use crate::xml::XmlWriter;

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

pub(crate) async fn post_object<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
    boundary: String,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    // Nothing is read of an unauthenticated form for a bucket that is not
    // there.
    gw.layer.head_bucket(ctx.bucket()).await?;
    let body = ctx
        .body
        .take()
        .ok_or_else(|| S3Error::internal("request body taken twice"))?;
    let mut src = Source::new(body);
    let limits = &gw.config.limits;
    let deadlines = FormDeadlines {
        idle: limits.post_form_idle,
        until: tokio::time::Instant::now() + limits.post_form_timeout,
    };
    let read = read_form(&mut src, &boundary, deadlines).await;
    ctx.bytes_in += src.raw;
    let form = read?;

    authenticate(gw, ctx, &form)?;
    let key_tmpl = form
        .get("key")
        .ok_or_else(|| malformed("the key field is missing"))?;
    let key = key_tmpl.replace("${filename}", &form.filename);
    if key.is_empty() {
        return Err(malformed("the key field is empty"));
    }
    ctx.key = Some(key.clone());
    let policy_b64 = form.get("policy").unwrap_or_default();
    let policy = check_policy(policy_b64, &form, ctx.bucket(), &key, SystemTime::now())?;
    super::acl::check_form_acl(form.get("acl"))?;
    let who = crate::authz::requester_of(gw, &ctx.access_key)?;
    let bucket = ctx.bucket().to_owned();
    if !crate::authz::allowed(gw, ctx, &who, "s3:PutObject", &bucket, Some(&key)).await? {
        return Err(S3Error::new("AccessDenied"));
    }
    ctx.requester = who;

    // Authenticated: the upload now counts against the server's bound like
    // any signed request.
    ctx.slot = Some(gw.admit().await?);

    // The object's metadata from the form.
    let mut headers = http::HeaderMap::new();
    for (k, v) in &form.fields {
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
                    | "x-amz-object-lock-mode"
                    | "x-amz-object-lock-retain-until-date"
                    | "x-amz-object-lock-legal-hold"
            );
        // From bytes: a UTF-8 metadata value is stored as a PUT's would be
        // (`put_options` decodes it; standard headers must be ASCII there).
        if stored
            && let (Ok(n), Ok(v)) = (
                http::HeaderName::from_bytes(lk.as_bytes()),
                http::HeaderValue::from_bytes(v.as_bytes()),
            )
        {
            headers.insert(n, v);
        }
    }
    if !headers.contains_key(http::header::CONTENT_TYPE)
        && let Some(t) = form
            .file_type
            .as_deref()
            .and_then(|t| http::HeaderValue::from_str(t).ok())
    {
        headers.insert(http::header::CONTENT_TYPE, t);
    }
    let mut opts: PutOptions = super::object::put_options(&headers, None)?;
    opts.metadata
        .extend(super::lock::write_entries_from(gw, ctx, &headers, &key).await?);
    // Encryption as a PUT asks it (the form's x-amz-server-side-encryption*
    // fields), or as the bucket's default or the server's auto-encryption
    // says.
    let mut sse_headers = http::HeaderMap::new();
    for (k, v) in &form.fields {
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
    let raw_before = src.raw;
    let mut reader = FileReader::new(&mut src, &boundary, (policy.length.0, max));
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
    ctx.bytes_in += src.raw - raw_before;
    let info = res?;
    respond(ctx, &form, &key, &info, new_key.as_ref())
}

/// Checks the form's signature of its policy: SigV4 (`x-amz-algorithm`,
/// `x-amz-credential`, `x-amz-date`, `x-amz-signature`) or SigV2
/// (`AWSAccessKeyId`, `signature`: base64 HMAC-SHA1 of the policy).
fn authenticate<B>(gw: &Gateway, ctx: &mut Ctx<B>, form: &Form) -> Result<(), S3Error> {
    let policy_b64 = form
        .get("policy")
        .ok_or_else(|| malformed("the policy is missing"))?;
    if let Some(access_key) = form.get("AWSAccessKeyId") {
        if !gw.config.sigv2 {
            return Err(S3Error::with_message(
                "InvalidRequest",
                "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.",
            ));
        }
        let creds = gw
            .credentials()
            .lookup(access_key)
            .ok_or_else(|| S3Error::new("InvalidAccessKeyId"))?;
        ctx.access_key = access_key.to_owned();
        let sig = form
            .get("signature")
            .ok_or_else(|| malformed("the signature field is missing"))?;
        if !crate::auth::sigv2_verify(creds.secret_key.expose().as_bytes(), policy_b64, sig) {
            return Err(S3Error::new("SignatureDoesNotMatch"));
        }
        return Ok(());
    }
    let algorithm = form.get("x-amz-algorithm").unwrap_or_default();
    if algorithm != "AWS4-HMAC-SHA256" {
        return Err(S3Error::with_message(
            "InvalidArgument",
            "Only AWS4-HMAC-SHA256 (or SigV2) POST policies are supported",
        ));
    }
    let credential = form
        .get("x-amz-credential")
        .ok_or_else(|| malformed("x-amz-credential is missing"))?;
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
    let sig = form
        .get("x-amz-signature")
        .and_then(Signature::from_hex)
        .ok_or_else(|| S3Error::new("SignatureDoesNotMatch"))?;
    let scope = CredentialScope::new(parts[1], parts[2], parts[3]);
    let want = SigningKey::derive(&creds.secret_key, &scope).sign(policy_b64.as_bytes());
    if !want.ct_eq(&sig) {
        return Err(S3Error::new("SignatureDoesNotMatch"));
    }
    Ok(())
}

/// The answer S3 gives a stored upload: a 303 to `success_action_redirect`
/// (or the older `redirect`) with bucket, key and ETag in its query; else
/// `success_action_status` 200 (empty), 201 (a `PostResponse` document) or
/// 204, which is also the answer to any other value.
fn respond<B>(
    ctx: &Ctx<B>,
    form: &Form,
    key: &str,
    info: &object::layer::ObjectInfo,
    new_key: Option<&encryption::NewKey>,
) -> Result<Response<ResponseBody>, S3Error> {
    const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    let enc = |s: &str| percent_encoding::utf8_percent_encode(s, UNRESERVED).to_string();
    let enc_path = |s: &str| s.split('/').map(enc).collect::<Vec<_>>().join("/");
    let redirect = form
        .get("success_action_redirect")
        .or_else(|| form.get("redirect"))
        .filter(|u| !u.is_empty());
    let mut r = if let Some(url) = redirect {
        let sep = if url.contains('?') { '&' } else { '?' };
        let loc = format!(
            "{url}{sep}bucket={}&key={}&etag={}",
            enc(ctx.bucket()),
            enc(key),
            enc(&quoted(&info.etag))
        );
        let mut r = empty(StatusCode::SEE_OTHER);
        set(r.headers_mut(), "location", &loc);
        r
    } else {
        match form.get("success_action_status") {
            Some("201") => {
                let host = ctx.header("host").unwrap_or("localhost").to_owned();
                let mut w = XmlWriter::new();
                w.open("PostResponse")
                    .elem(
                        "Location",
                        &format!("http://{host}/{}/{}", ctx.bucket(), enc_path(key)),
                    )
                    .elem("Bucket", ctx.bucket())
                    .elem("Key", key)
                    .elem("ETag", &quoted(&info.etag))
                    .close("PostResponse");
                let mut r = xml_response(StatusCode::CREATED, w.finish());
                set(
                    r.headers_mut(),
                    "location",
                    &format!("http://{host}/{}/{}", ctx.bucket(), enc_path(key)),
                );
                r
            }
            Some("200") => empty(StatusCode::OK),
            _ => empty(StatusCode::NO_CONTENT),
        }
    };
    let h = r.headers_mut();
    set(h, "etag", &quoted(&info.etag));
    if let Some(v) = info.version_id {
        set(h, "x-amz-version-id", &v.to_string());
    }
    if let Some(nk) = new_key {
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
}

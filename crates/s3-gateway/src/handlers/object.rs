//! Objects: PUT, GET, HEAD, DELETE, DeleteObjects, CopyObject.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body::Body;
use object::layer::{ObjectInfo, PutOptions, Range, VersionSel, worm};

use super::{body_reader, empty, read_small_body, read_xml, xml_response};
use crate::body::ResponseBody;
use crate::encryption;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};
use crate::splice::SpliceQueue;
use crate::time::{http_date, iso8601};
use crate::xml::{Element, XmlWriter};

/// Standard headers stored with an object and returned on GET/HEAD, with
/// the name they are stored under (Go's canonical form, as MinIO stores
/// them).
const STORED_HEADERS: &[(&str, &str)] = &[
    ("cache-control", "Cache-Control"),
    ("content-disposition", "Content-Disposition"),
    ("content-encoding", "Content-Encoding"),
    ("content-language", "Content-Language"),
    ("expires", "Expires"),
    ("x-amz-storage-class", "X-Amz-Storage-Class"),
    (
        "x-amz-website-redirect-location",
        "X-Amz-Website-Redirect-Location",
    ),
    ("x-amz-tagging", "X-Amz-Tagging"),
];

/// `x-amz-meta-foo-bar` -> `X-Amz-Meta-Foo-Bar` (Go's
/// `http.CanonicalHeaderKey`, the form MinIO stores user metadata in).
fn canonical_header(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        if upper {
            out.extend(c.to_uppercase());
        } else {
            out.extend(c.to_lowercase());
        }
        upper = c == '-';
    }
    out
}

/// The object's stored headers and user metadata from a request.
pub(super) fn put_options(headers: &HeaderMap, size: Option<u64>) -> Result<PutOptions, S3Error> {
    let mut opts = PutOptions {
        size,
        ..PutOptions::default()
    };
    if let Some(ct) = headers.get(http::header::CONTENT_TYPE) {
        let ct = ct
            .to_str()
            .map_err(|_| S3Error::invalid_argument("Invalid Content-Type", "Content-Type", ""))?;
        if !ct.is_empty() {
            opts.content_type = Some(ct.to_owned());
        }
    }
    for (name, value) in headers {
        let n = name.as_str();
        let stored = if let Some(rest) = n.strip_prefix("x-amz-meta-") {
            if rest.is_empty() {
                continue;
            }
            canonical_header(n)
        } else if let Some((_, s)) = STORED_HEADERS.iter().find(|(h, _)| *h == n) {
            (*s).to_owned()
        } else {
            continue;
        };
        // User metadata may be UTF-8 (stored decoded, answered in RFC 2047
        // encoded words, as S3 does); stored headers are ASCII.
        let v = if n.starts_with("x-amz-meta-") {
            std::str::from_utf8(value.as_bytes())
                .ok()
                .map(|v| crate::rfc2047::decode(v).into_owned())
        } else {
            value.to_str().ok().map(str::to_owned)
        };
        let Some(mut v) = v else {
            return Err(S3Error::invalid_argument(
                "Metadata values must be UTF-8 (printable ASCII for standard headers)",
                n,
                "",
            ));
        };
        if n == "content-encoding" {
            // `aws-chunked` describes the transfer, not the object.
            let kept: Vec<&str> = v
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("aws-chunked"))
                .collect();
            if kept.is_empty() {
                continue;
            }
            v = kept.join(",");
        }
        if n == "x-amz-storage-class" && v == "STANDARD" {
            continue;
        }
        if n == "x-amz-tagging" {
            let tags = super::tagging::parse_query(&v)?;
            super::tagging::validate(&tags)?;
            if tags.is_empty() {
                continue;
            }
        }
        opts.metadata.push((stored, v));
    }
    Ok(opts)
}

/// The payload size the client announced: `x-amz-decoded-content-length`
/// for `aws-chunked` bodies, else `Content-Length`.
/// The size of the body a request announces; `None` for a body sent with
/// `Transfer-Encoding: chunked` and no length, which is read to its end
/// under the usual size limit (MinIO accepts it too).
pub(super) fn announced_size<B>(ctx: &Ctx<B>) -> Result<Option<u64>, S3Error> {
    let parse = |v: &str, name: &str| -> Result<u64, S3Error> {
        v.trim()
            .parse::<u64>()
            .map_err(|_| S3Error::invalid_argument("Invalid length", name, v))
    };
    if let Some(v) = ctx.header("x-amz-decoded-content-length") {
        return parse(v, "x-amz-decoded-content-length").map(Some);
    }
    match ctx.header("content-length") {
        Some(v) => parse(v, "Content-Length").map(Some),
        None if ctx.header("transfer-encoding").is_some_and(|te| {
            te.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("chunked"))
        }) =>
        {
            Ok(None)
        }
        None => Err(S3Error::new("MissingContentLength")),
    }
}

/// Sets a header if the value is a valid header value.
pub(super) fn set(h: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        h.insert(name, v);
    }
}

pub(super) fn quoted(etag: &str) -> String {
    format!("\"{etag}\"")
}

pub(super) fn version_param<B>(ctx: &Ctx<B>) -> Result<Option<VersionSel>, S3Error> {
    match ctx.q("versionId") {
        None | Some("") => Ok(None),
        Some(v) => VersionSel::parse(v).map(Some).ok_or_else(|| {
            S3Error::invalid_argument("Invalid version id specified", "versionId", v)
        }),
    }
}

pub(super) async fn put_object<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let size = announced_size(ctx)?;
    let max = gw.config.limits.max_object_bytes;
    if let Some(size) = size
        && size > max
    {
        return Err(S3Error::new("EntityTooLarge")
            .detail("ProposedSize", size.to_string())
            .detail("MaxSizeAllowed", max.to_string()));
    }
    let mut opts = put_options(&ctx.parts.headers, size)?;
    let key = ctx.key().to_owned();
    opts.metadata
        .extend(super::lock::write_entries(gw, ctx, &key).await?);
    opts.precondition = super::conditional::write_precondition(&ctx.parts.headers)?;
    let sse_mode = encryption::write_mode_for(gw, &ctx.parts.headers, ctx.bucket()).await?;
    let mut reader = body_reader(gw, ctx, (max, "EntityTooLarge"))?;
    // The verified checksum is stored with the object (returned in
    // checksum mode), whether it came as a header or as a trailer.
    let trailing = object::layer::TrailingMetadata::default();
    reader.record_checksum_into(trailing.clone());
    opts.trailing_metadata = Some(trailing.clone());
    let (res, new_key) = match sse_mode {
        None => {
            let res = gw
                .layer
                .put_object(ctx.bucket(), ctx.key(), &mut reader, &opts)
                .await;
            (res, None)
        }
        Some(mode) => {
            let (res, nk, back) = encryption::put_encrypted(
                gw,
                (ctx.bucket(), ctx.key()),
                &mode,
                (reader, size),
                &mut opts,
                trailing,
            )
            .await?;
            reader = back;
            (res, Some(nk))
        }
    };
    ctx.bytes_in += reader.raw_len();
    let info = res?;
    let mut r = empty(StatusCode::OK);
    let h = r.headers_mut();
    set(h, "etag", &quoted(&info.etag));
    if let Some(v) = info.version_id {
        set(h, "x-amz-version-id", &v.to_string());
    }
    if let Some((alg, value)) = &reader.verified_checksum {
        set(h, alg.header_name(), value);
    }
    if let Some(nk) = &new_key {
        encryption::mode_headers(h, nk);
    }
    super::lifecycle::expiration_header(gw, &info, r.headers_mut()).await;
    Ok(r)
}

/// HEAD of the object the request names (for sub-resources that only need
/// it to exist).
pub(super) async fn head_only<B>(gw: &Gateway, ctx: &Ctx<B>) -> Result<ObjectInfo, S3Error> {
    Ok(gw
        .layer
        .head_object(ctx.bucket(), ctx.key(), version_param(ctx)?)
        .await?)
}

/// The objects a `Delete` request names: key and version id as sent.
pub(super) type DeleteList = Vec<(String, Option<String>)>;

/// A `Delete` request document: whether it is quiet, and each object's key
/// and version id as sent (1 to [`MAX_DELETE_KEYS`] of them).
pub(super) fn delete_request(doc: &Element) -> Result<(bool, DeleteList), S3Error> {
    if doc.name != "Delete" {
        return Err(S3Error::new("MalformedXML"));
    }
    let quiet = doc
        .child_text("Quiet")
        .is_some_and(|q| q.trim().eq_ignore_ascii_case("true"));
    let objects: Vec<_> = doc
        .children_named("Object")
        .map(|o| {
            (
                o.child_text("Key").unwrap_or("").to_owned(),
                o.child_text("VersionId").map(str::to_owned),
            )
        })
        .collect();
    if objects.is_empty() || objects.len() > MAX_DELETE_KEYS {
        return Err(S3Error::new("MalformedXML"));
    }
    Ok((quiet, objects))
}

/// Parses a `Range` header. `Ok(None)` for a header S3 ignores (several
/// ranges, or not a byte range).
pub(super) fn parse_range(v: &str) -> Option<Range> {
    let spec = v.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.trim().split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    if a.is_empty() {
        return b.parse().ok().map(Range::Suffix);
    }
    let start: u64 = a.parse().ok()?;
    if b.is_empty() {
        return Some(Range::From {
            offset: start,
            length: None,
        });
    }
    let end: u64 = b.parse().ok()?;
    if end < start {
        return None;
    }
    // `bytes=0-18446744073709551615` is a valid range of every object: the
    // length saturates and is cut to the object's size later.
    Some(Range::From {
        offset: start,
        length: Some((end - start).saturating_add(1)),
    })
}

fn etag_matches(list: &str, etag: &str) -> bool {
    list.split(',')
        .map(str::trim)
        .any(|t| t == "*" || t.trim_start_matches("W/").trim_matches('"') == etag)
}

/// S3's conditional request rules for GET and HEAD, and (with `prefix`
/// `x-amz-copy-source-`) for the source of a copy.
pub(super) fn check_conditions(
    h: &HeaderMap,
    info: &ObjectInfo,
    prefix: &str,
) -> Result<(), S3Error> {
    let get = |name: &str| -> Option<&str> {
        h.get(format!("{prefix}{name}").as_str())
            .and_then(|v| v.to_str().ok())
    };
    let modified = info.mod_time();
    // HTTP dates have second precision.
    let secs = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    };
    let if_match = get("if-match");
    if let Some(m) = if_match
        && !etag_matches(m, &info.etag)
    {
        return Err(S3Error::new("PreconditionFailed"));
    }
    if if_match.is_none()
        && let Some(t) = get("if-unmodified-since").and_then(|v| httpdate::parse_http_date(v).ok())
        && secs(modified) > secs(t)
    {
        return Err(S3Error::new("PreconditionFailed"));
    }
    let copy = !prefix.is_empty();
    let if_none_match = get("if-none-match");
    if let Some(m) = if_none_match
        && etag_matches(m, &info.etag)
    {
        return Err(if copy {
            S3Error::new("PreconditionFailed")
        } else {
            not_modified(info)
        });
    }
    if if_none_match.is_none()
        && let Some(t) = get("if-modified-since").and_then(|v| httpdate::parse_http_date(v).ok())
        && secs(modified) <= secs(t)
    {
        return Err(if copy {
            S3Error::new("PreconditionFailed")
        } else {
            not_modified(info)
        });
    }
    Ok(())
}

fn not_modified(info: &ObjectInfo) -> S3Error {
    S3Error::new("NotModified")
        .header("etag", quoted(&info.etag))
        .header("last-modified", http_date(info.mod_time_nanos))
}

/// A copy's options keeping the source's size, content type and
/// metadata (the COPY directive), for a copy that changes some of them.
fn kept_options(info: &ObjectInfo) -> PutOptions {
    PutOptions {
        size: Some(info.size),
        content_type: Some(info.content_type.clone()),
        metadata: info
            .metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        ..PutOptions::default()
    }
}

/// The headers describing an object on GET and HEAD.
fn object_headers(h: &mut HeaderMap, info: &ObjectInfo) {
    set(h, "etag", &quoted(&info.etag));
    set(h, "last-modified", &http_date(info.mod_time_nanos));
    set(h, "content-type", &info.content_type);
    set(h, "accept-ranges", "bytes");
    if let Some(v) = info.version_id {
        set(h, "x-amz-version-id", &v.to_string());
    }
    super::lock::response_headers(h, info);
    for (k, v) in &info.metadata {
        let lower = k.to_ascii_lowercase();
        if lower.starts_with("x-amz-meta-") {
            if let (Ok(n), Ok(v)) = (
                http::HeaderName::from_bytes(lower.as_bytes()),
                HeaderValue::from_str(&crate::rfc2047::encode(v)),
            ) {
                h.insert(n, v);
            }
        } else if lower == "x-amz-tagging" {
            let count = v.split('&').filter(|s| !s.is_empty()).count();
            set(h, "x-amz-tagging-count", &count.to_string());
        } else if let Some((name, _)) = STORED_HEADERS.iter().find(|(n, _)| *n == lower) {
            set(h, name, v);
        }
    }
}

/// `response-*` query parameters override response headers (signed
/// requests only, which every request here is).
const OVERRIDES: &[(&str, &str)] = &[
    ("response-content-type", "content-type"),
    ("response-content-language", "content-language"),
    ("response-expires", "expires"),
    ("response-cache-control", "cache-control"),
    ("response-content-disposition", "content-disposition"),
    ("response-content-encoding", "content-encoding"),
];

pub(super) async fn get_object<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
    head: bool,
) -> Result<Response<ResponseBody>, S3Error> {
    let version = version_param(ctx)?;
    // The version is resolved once, under the object's read lock, which the
    // body's task keeps until the last byte: head and body are one version.
    let opened = gw
        .layer
        .open_object(ctx.bucket(), ctx.key(), version)
        .await?;
    let stored = opened.info().clone();
    // An encrypted object is seen as its plaintext: size, ETag.
    let client_key =
        encryption::client_key(&ctx.parts.headers, encryption::SSEC, &gw.config.encryption)?;
    let existing = encryption::existing_key(&stored, client_key.as_deref(), &gw.config.encryption)?;
    let info = encryption::client_view(&stored, existing.as_ref())?;
    check_conditions(&ctx.parts.headers, &info, "")?;
    // partNumber selects one part's bytes (or the whole of a single-part
    // object for part 1).
    let mut range = None;
    let mut parts_count = None;
    // The part of a multipart object that `partNumber` selects (its index).
    let mut multipart_part = None;
    if let Some(pn) = ctx.q("partNumber") {
        let n: i64 = pn
            .parse()
            .ok()
            .filter(|n| (1..=10_000).contains(n))
            .ok_or_else(|| {
                S3Error::invalid_argument(
                    "Part number must be an integer between 1 and 10000, inclusive",
                    "partNumber",
                    pn,
                )
            })?;
        if ctx.parts.headers.contains_key(http::header::RANGE) {
            return Err(S3Error::with_message(
                "InvalidRequest",
                "Cannot specify both Range header and partNumber query parameter",
            ));
        }
        let idx = usize::try_from(n - 1).unwrap_or(usize::MAX);
        let Some(part) = info.parts.get(idx) else {
            return Err(S3Error::new("InvalidPartNumber"));
        };
        let offset: u64 = info.parts[..idx].iter().map(|p| p.size).sum();
        // A multipart object (even of one part: its stored ETag is
        // `md5-N`) tells its part count, and a part of it is partial
        // content, as S3 answers; a plain object's part 1 is the object.
        if info.parts.len() > 1 || stored.etag.contains('-') {
            parts_count = Some(info.parts.len());
            multipart_part = Some(idx);
        }
        if part.size > 0 {
            range = Some((offset, part.size));
        } else {
            range = Some((0, 0));
        }
    } else if let Some(r) = ctx.header("range").and_then(parse_range) {
        match r.resolve(info.size) {
            Some(x) => range = Some(x),
            None => {
                return Err(S3Error::new("InvalidRange")
                    .detail("ActualObjectSize", info.size.to_string())
                    .header("content-range", format!("bytes */{}", info.size)));
            }
        }
    }

    let by_part = ctx.q("partNumber").is_some();
    let (offset, len, status) = match range {
        // partNumber=1 of a single-part object is the whole object.
        Some((o, l)) if by_part && parts_count.is_none() => (o, l, StatusCode::OK),
        Some((o, l)) => (o, l, StatusCode::PARTIAL_CONTENT),
        None => (0, info.size, StatusCode::OK),
    };
    // An unencrypted range whose every block is in the read cache goes
    // out from there, without a task reading it.
    let cached = match &existing {
        None if !head && len > 0 => gw.layer.cached_object_range(&opened, offset, len),
        _ => None,
    };
    let mut resp = if head || len == 0 {
        let mut r = Response::new(ResponseBody::empty());
        *r.status_mut() = status;
        r
    } else if let Some(blocks) = cached {
        let mut r = Response::new(ResponseBody::blocks(blocks));
        *r.status_mut() = status;
        r
    } else {
        let (body, writer) = ResponseBody::channel(len);
        // A plain TCP connection sends shard records read from the page
        // cache from their pipes (`crate::splice`); decrypted bytes are
        // new, so they go from memory.
        let splice = match &existing {
            None => ctx
                .parts
                .extensions
                .get::<std::sync::Arc<SpliceQueue>>()
                .cloned(),
            Some(_) => None,
        };
        let mut writer = writer.splicing_to(splice);
        let layer = gw.layer.clone();
        let (bucket, key) = (ctx.bucket().to_owned(), ctx.key().to_owned());
        let request_id = ctx.request_id.clone();
        let segments = match &existing {
            Some(ex) => Some(ex.segments(&stored)?),
            None => None,
        };
        tokio::spawn(async move {
            let result = match segments {
                None => layer
                    .read_object_chunks(&opened, offset, len, &mut writer)
                    .await
                    .map_err(|e| (matches!(e, object::layer::Error::Output(_)), e.to_string())),
                Some(segs) => {
                    encryption::read_plain_chunks(
                        &layer,
                        &opened,
                        &segs,
                        (offset, len),
                        &mut writer,
                    )
                    .await
                }
            };
            if let Err((client_gone, e)) = result {
                if !client_gone {
                    tracing::warn!(%request_id, bucket, key, error = %e, "GET failed after the response head");
                }
                writer.abort(e).await;
            }
        });
        let mut r = Response::new(body);
        *r.status_mut() = status;
        r
    };
    super::lifecycle::expiration_header(gw, &info, resp.headers_mut()).await;
    let h = resp.headers_mut();
    object_headers(h, &info);
    if let Some(ex) = &existing {
        ex.headers(h, client_key.as_deref());
    }
    set(h, "content-length", &len.to_string());
    if status == StatusCode::PARTIAL_CONTENT {
        let last = (offset + len).saturating_sub(1);
        set(
            h,
            "content-range",
            &format!("bytes {offset}-{last}/{}", info.size),
        );
    }
    if let Some(n) = parts_count {
        set(h, "x-amz-mp-parts-count", &n.to_string());
    }
    // Checksum mode: the stored checksum of the whole object, or of the
    // part `partNumber` names; a range has no stored checksum.
    let checksum_mode = ctx
        .header("x-amz-checksum-mode")
        .is_some_and(|m| m.eq_ignore_ascii_case("enabled"));
    if checksum_mode && status == StatusCode::OK && !by_part {
        if let Some((alg, value, kind)) = crate::checksum_mpu::stored_checksum(&info) {
            set(h, alg.header_name(), &value);
            set(h, "x-amz-checksum-type", &kind);
        }
    } else if checksum_mode
        && let Some(i) = multipart_part
        && let Some((name, values)) = object::layer::multipart::part_checksums(&info)
        && let Some(alg) = crate::auth::ChecksumAlgorithm::from_header_name(name)
        && let Some(v) = values.get(i)
    {
        set(h, alg.header_name(), v);
        set(h, "x-amz-checksum-type", "COMPOSITE");
    }
    for (q, hname) in OVERRIDES {
        if let Some(v) = ctx.q(q) {
            set(h, hname, v);
        }
    }
    Ok(resp)
}

pub(super) async fn delete_object<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body,
{
    let version = version_param(ctx)?;
    let mut r = empty(StatusCode::NO_CONTENT);
    let key = ctx.key().to_owned();
    let bypass = super::lock::bypass(gw, ctx, &key).await?;
    match gw
        .layer
        .delete_object_with(ctx.bucket(), &key, version, bypass)
        .await
    {
        Ok(res) => {
            let h = r.headers_mut();
            if let Some(v) = res.version_id {
                set(h, "x-amz-version-id", &v.to_string());
            } else if version == Some(VersionSel::Null) {
                set(h, "x-amz-version-id", "null");
            }
            if res.delete_marker {
                set(h, "x-amz-delete-marker", "true");
            }
        }
        // Deleting what is not there succeeds, as in S3.
        Err(
            object::layer::Error::NoSuchKey { .. } | object::layer::Error::NoSuchVersion { .. },
        ) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(r)
}

/// Most keys in one DeleteObjects request (S3's limit).
const MAX_DELETE_KEYS: usize = 1000;

pub(super) async fn delete_objects<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    gw.layer.head_bucket(ctx.bucket()).await?;
    let doc = read_xml(gw, ctx).await?;
    let (quiet, objects) = delete_request(&doc)?;
    let mut w = XmlWriter::new();
    w.root("DeleteResult");
    for (key, vid) in objects {
        let version = match vid.as_deref() {
            None | Some("") => Ok(None),
            Some(v) => VersionSel::parse(v).map(Some).ok_or_else(|| {
                S3Error::invalid_argument("Invalid version id specified", "versionId", v)
            }),
        };
        let result = match version {
            Err(e) => Err(e),
            Ok(_) if key.is_empty() => {
                Err(S3Error::with_message("InvalidArgument", "Key is empty"))
            }
            Ok(version) if !may_delete(gw, ctx, &key, version.is_some()).await? => {
                Err(S3Error::new("AccessDenied"))
            }
            Ok(version) => match gw
                .layer
                .delete_object_with(
                    ctx.bucket(),
                    &key,
                    version,
                    super::lock::bypass(gw, ctx, &key).await?,
                )
                .await
            {
                Ok(r) => Ok(Some(r)),
                Err(
                    object::layer::Error::NoSuchKey { .. }
                    | object::layer::Error::NoSuchVersion { .. },
                ) => Ok(None),
                Err(e) => Err(S3Error::from(e)),
            },
        };
        match result {
            Ok(res) => {
                if quiet {
                    continue;
                }
                w.open("Deleted").elem("Key", &key);
                if let Some(v) = &vid {
                    w.elem("VersionId", v);
                }
                if let Some(r) = res
                    && r.delete_marker
                {
                    w.elem("DeleteMarker", "true");
                    if let Some(mv) = r.version_id {
                        w.elem("DeleteMarkerVersionId", &mv.to_string());
                    }
                }
                w.close("Deleted");
            }
            Err(e) => {
                w.open("Error").elem("Key", &key);
                if let Some(v) = &vid {
                    w.elem("VersionId", v);
                }
                w.elem("Code", e.code)
                    .elem("Message", &e.message)
                    .close("Error");
            }
        }
    }
    w.close("DeleteResult");
    Ok(xml_response(StatusCode::OK, w.finish()))
}

/// Whether the requester may delete `key` of a `DeleteObjects` request
/// (with a version: unless `s3:DeleteObjectVersion` is denied, as MinIO
/// checks it).
async fn may_delete<B>(
    gw: &Gateway,
    ctx: &Ctx<B>,
    key: &str,
    versioned: bool,
) -> Result<bool, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let who = &ctx.requester;
    let bucket = ctx.bucket();
    if !crate::authz::allowed(gw, ctx, who, "s3:DeleteObject", bucket, Some(key)).await? {
        return Ok(false);
    }
    Ok(!(versioned
        && crate::authz::decide(gw, ctx, who, "s3:DeleteObjectVersion", bucket, Some(key)).await?
            == policy::Decision::Deny))
}

/// The plaintext of a stored object as a stream, produced by a task
/// (reading, and decrypting when `enc` is given); the task's result says
/// whether the whole object was produced.
fn plain_source(
    gw: &Gateway,
    bucket: &str,
    key: &str,
    version: Option<VersionSel>,
    stored: &ObjectInfo,
    enc: Option<&encryption::Existing>,
) -> (
    tokio::io::DuplexStream,
    tokio::task::JoinHandle<Result<(), S3Error>>,
) {
    let (rd, mut wr) = tokio::io::duplex(1 << 20);
    let layer = gw.layer.clone();
    let (bucket, key) = (bucket.to_owned(), key.to_owned());
    let segments = enc.map(|e| e.segments(stored));
    let plain_len = encryption::plain_size(stored).unwrap_or(0);
    let task = tokio::spawn(async move {
        let opened = layer.open_object(&bucket, &key, version).await?;
        match segments {
            None => {
                let size = opened.info().size;
                layer.read_object(&opened, 0, size, &mut wr).await?;
                Ok(())
            }
            Some(segs) => encryption::read_plain(&layer, &opened, &segs?, (0, plain_len), &mut wr)
                .await
                .map_err(|(_, e)| S3Error::internal(e)),
        }
    });
    (rd, task)
}

/// Parses `x-amz-copy-source`: `[/]bucket/key[?versionId=v]`,
/// percent-encoded.
pub(crate) fn copy_source(v: &str) -> Result<(String, String, Option<VersionSel>), S3Error> {
    let bad = || {
        S3Error::invalid_argument(
            "Copy Source must mention the source bucket and key: sourcebucket/sourcekey",
            "x-amz-copy-source",
            v,
        )
    };
    let (path, query) = v.split_once('?').unwrap_or((v, ""));
    let path = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .map_err(|_| bad())?;
    let path = path.strip_prefix('/').unwrap_or(&path);
    let (bucket, key) = path.split_once('/').ok_or_else(bad)?;
    if bucket.is_empty() || key.is_empty() {
        return Err(bad());
    }
    let mut version = None;
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        if let Some(v) = kv.strip_prefix("versionId=") {
            version = Some(VersionSel::parse(v).ok_or_else(|| {
                S3Error::invalid_argument("Invalid version id specified", "versionId", v)
            })?);
        }
    }
    Ok((bucket.to_owned(), key.to_owned(), version))
}

pub(super) async fn copy_object<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let src = ctx.header("x-amz-copy-source").unwrap_or("").to_owned();
    let (sb, sk, sv) = copy_source(&src)?;
    let body = read_small_body(gw, ctx).await?;
    if !body.is_empty() {
        return Err(S3Error::new("UnexpectedContent"));
    }
    let replace = match ctx.header("x-amz-metadata-directive") {
        None | Some("COPY") => false,
        Some("REPLACE") => true,
        Some(other) => {
            return Err(S3Error::invalid_argument(
                "Unknown metadata directive.",
                "x-amz-metadata-directive",
                other,
            ));
        }
    };
    let stored = gw.layer.head_object(&sb, &sk, sv).await?;
    let cfg = &gw.config.encryption;
    let src_client = encryption::client_key(&ctx.parts.headers, encryption::SSEC_COPY, cfg)?;
    let src_enc = encryption::existing_key(&stored, src_client.as_deref(), cfg)?;
    let dst_mode = encryption::write_mode_for(gw, &ctx.parts.headers, ctx.bucket()).await?;
    let mut info = stored.clone();
    if let Some(ex) = &src_enc {
        info.etag = ex.etag(&stored.etag);
        info.size = encryption::plain_size(&stored)?;
    }
    check_conditions(&ctx.parts.headers, &info, "x-amz-copy-source-")?;
    let same = sb == ctx.bucket()
        && sk == ctx.key()
        && sv.is_none_or(|v| Some(v) == info.version_id.map(VersionSel::Id));
    // `x-amz-checksum-algorithm` asks for a new checksum of the copy,
    // computed as the bytes stream through the gateway.
    let new_checksum = match ctx.header("x-amz-checksum-algorithm") {
        None => None,
        Some(a) => Some(crate::checksum_mpu::algorithm_of(a.trim()).ok_or_else(|| {
            S3Error::with_message(
                "InvalidRequest",
                "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]",
            )
        })?),
    };
    let encryption_changes = src_enc.is_some() || dst_mode.is_some() || new_checksum.is_some();
    if same
        && !replace
        && !encryption_changes
        && !ctx.parts.headers.contains_key("x-amz-storage-class")
    {
        return Err(S3Error::with_message(
            "InvalidRequest",
            "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
        ));
    }
    let pinned = Some(sv.unwrap_or(info.version_id.map_or(VersionSel::Null, VersionSel::Id)));
    let opts = if replace {
        Some(put_options(&ctx.parts.headers, Some(info.size))?)
    } else if let Some(sc) = ctx.header("x-amz-storage-class") {
        // COPY keeps the metadata; a new storage class still applies.
        let mut o = kept_options(&info);
        o.metadata
            .retain(|(k, _)| !k.eq_ignore_ascii_case("x-amz-storage-class"));
        if sc != "STANDARD" {
            o.metadata
                .push(("X-Amz-Storage-Class".to_owned(), sc.to_owned()));
        }
        Some(o)
    } else {
        None
    };
    // A copy is a new version: its lock is what the request asks for (or
    // the bucket's default), never the source's.
    let key = ctx.key().to_owned();
    let lock = super::lock::write_entries(gw, ctx, &key).await?;
    let source_locked = info.metadata.keys().any(|k| worm::is_lock_key(k));
    let opts = if lock.is_empty() && !source_locked {
        opts
    } else {
        let mut o = opts.unwrap_or_else(|| kept_options(&info));
        o.metadata.retain(|(k, _)| !worm::is_lock_key(k));
        o.metadata.extend(lock);
        Some(o)
    };
    let (dst, dst_key) = if encryption_changes {
        // Through the gateway: decrypt the source if needed, encrypt the
        // copy if asked (a new object key: the sealing binds the path).
        let mut opts = match opts {
            Some(o) => o,
            None => PutOptions {
                content_type: Some(info.content_type.clone()),
                metadata: info
                    .metadata
                    .iter()
                    .filter(|(k, _)| !k.to_ascii_lowercase().starts_with("x-amz-checksum-"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                ..PutOptions::default()
            },
        };
        let (plain, reader_task) = plain_source(gw, &sb, &sk, pinned, &stored, src_enc.as_ref());
        let trailing = object::layer::TrailingMetadata::default();
        // The copy gets the new checksum, not the source's.
        if new_checksum.is_some() {
            opts.metadata.retain(|(k, _)| {
                let k = k.to_ascii_lowercase();
                !k.starts_with("x-amz-checksum-")
            });
            opts.trailing_metadata = Some(trailing.clone());
        }
        let plain = crate::checksum_mpu::ChecksumReader::new(plain, new_checksum, trailing.clone());
        let res = match &dst_mode {
            None => {
                opts.size = Some(info.size);
                let mut plain = plain;
                gw.layer
                    .put_object(ctx.bucket(), ctx.key(), &mut plain, &opts)
                    .await
                    .map(|i| (i, None))
            }
            Some(mode) => {
                let (res, nk, _) = encryption::put_encrypted(
                    gw,
                    (ctx.bucket(), ctx.key()),
                    mode,
                    (plain, Some(info.size)),
                    &mut opts,
                    trailing.clone(),
                )
                .await?;
                res.map(|i| (i, Some(nk)))
            }
        };
        let read = reader_task
            .await
            .map_err(|e| S3Error::internal(format!("copy reader: {e}")))?;
        match (res, read) {
            (Ok(x), Ok(())) => x,
            // The writer stopped because the reader failed: the reader's
            // error is the cause.
            (Err(object::layer::Error::IncompleteBody { .. }), Err(e)) | (Ok(_), Err(e)) => {
                return Err(e);
            }
            (Err(e), _) => return Err(e.into()),
        }
    } else {
        let i = gw
            .layer
            .copy_object(&sb, &sk, pinned, ctx.bucket(), ctx.key(), opts.as_ref())
            .await?;
        (i, None)
    };
    let mut w = XmlWriter::new();
    w.root("CopyObjectResult")
        .elem("LastModified", &iso8601(dst.mod_time_nanos))
        .elem("ETag", &quoted(&dst.etag));
    if new_checksum.is_some()
        && let Some((alg, value, kind)) = crate::checksum_mpu::stored_checksum(&dst)
    {
        w.elem(crate::checksum::part_element(alg), &value)
            .elem("ChecksumType", &kind);
    }
    w.close("CopyObjectResult");
    let mut r = xml_response(StatusCode::OK, w.finish());
    let h = r.headers_mut();
    if let Some(nk) = &dst_key {
        encryption::mode_headers(h, nk);
    }
    if let Some(v) = dst.version_id {
        set(h, "x-amz-version-id", &v.to_string());
    }
    if let Some(v) = info.version_id {
        set(h, "x-amz-copy-source-version-id", &v.to_string());
    }
    super::lifecycle::expiration_header(gw, &dst, r.headers_mut()).await;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_as_s3_reads_them() {
        assert_eq!(
            parse_range("bytes=0-9"),
            Some(Range::From {
                offset: 0,
                length: Some(10)
            })
        );
        assert_eq!(
            parse_range("bytes=5-"),
            Some(Range::From {
                offset: 5,
                length: None
            })
        );
        assert_eq!(parse_range("bytes=-3"), Some(Range::Suffix(3)));
        assert_eq!(
            parse_range("bytes=0-18446744073709551615"),
            Some(Range::From {
                offset: 0,
                length: Some(u64::MAX)
            })
        );
        assert_eq!(
            parse_range("bytes=18446744073709551615-18446744073709551615"),
            Some(Range::From {
                offset: u64::MAX,
                length: Some(1)
            })
        );
        for ignored in [
            "bytes=1-2,4-5",
            "items=0-1",
            "bytes=5-1",
            "bytes=a-b",
            "bytes=-",
        ] {
            assert_eq!(parse_range(ignored), None, "{ignored}");
        }
    }

    #[test]
    fn copy_source_forms() {
        assert_eq!(
            copy_source("/b/k%20x/y").unwrap(),
            ("b".into(), "k x/y".into(), None)
        );
        let (_, _, v) = copy_source("b/k?versionId=null").unwrap();
        assert_eq!(v, Some(VersionSel::Null));
        for bad in ["", "b", "/b/", "b/k?versionId=zz"] {
            assert!(copy_source(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn utf8_user_metadata_is_stored_decoded_and_other_bytes_refused() {
        let mut h = HeaderMap::new();
        h.insert(
            "x-amz-meta-raw",
            HeaderValue::from_bytes("café".as_bytes()).unwrap(),
        );
        h.insert(
            "x-amz-meta-word",
            HeaderValue::from_static("=?UTF-8?Q?na=C3=AFve?="),
        );
        let o = put_options(&h, Some(1)).unwrap();
        let mut m = o.metadata.clone();
        m.sort();
        assert_eq!(
            m,
            vec![
                ("X-Amz-Meta-Raw".to_owned(), "café".to_owned()),
                ("X-Amz-Meta-Word".to_owned(), "naïve".to_owned()),
            ]
        );
        let mut h = HeaderMap::new();
        h.insert(
            "x-amz-meta-bad",
            HeaderValue::from_bytes(b"caf\xe9").unwrap(),
        );
        assert_eq!(
            put_options(&h, Some(1)).unwrap_err().code,
            "InvalidArgument"
        );
        // Standard headers stay ASCII.
        let mut h = HeaderMap::new();
        h.insert(
            "cache-control",
            HeaderValue::from_bytes("é".as_bytes()).unwrap(),
        );
        assert!(put_options(&h, Some(1)).is_err());
    }

    #[test]
    fn user_metadata_is_stored_canonical() {
        let mut h = HeaderMap::new();
        h.insert("x-amz-meta-my-key", HeaderValue::from_static("v"));
        h.insert(
            "content-encoding",
            HeaderValue::from_static("aws-chunked,gzip"),
        );
        h.insert("cache-control", HeaderValue::from_static("no-cache"));
        let o = put_options(&h, Some(1)).unwrap();
        let mut m = o.metadata.clone();
        m.sort();
        assert_eq!(
            m,
            vec![
                ("Cache-Control".to_owned(), "no-cache".to_owned()),
                ("Content-Encoding".to_owned(), "gzip".to_owned()),
                ("X-Amz-Meta-My-Key".to_owned(), "v".to_owned()),
            ]
        );
    }
}

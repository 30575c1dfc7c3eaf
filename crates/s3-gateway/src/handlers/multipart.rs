//! Multipart uploads: create, upload part (and part copy), list parts,
//! complete, abort, list uploads.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body::Body;

use super::object::{announced_size, check_conditions, copy_source, put_options, quoted, set};
use super::{body_reader, empty, read_small_body, read_xml, xml_response};
use crate::auth::ChecksumAlgorithm;
use crate::body::ResponseBody;
use crate::checksum_mpu::{self, CompleteChecksum, META_UPLOAD_CHECKSUM, UploadChecksum};
use crate::encryption;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};
use crate::time::iso8601;
use crate::xml::{Element, XmlWriter};

/// Most parts listed per page, and most parts in an upload.
const MAX_PARTS: usize = 10_000;
/// Default page size of ListParts and ListMultipartUploads.
const PAGE: usize = 1000;

fn upload_id<B>(ctx: &Ctx<B>) -> Result<String, S3Error> {
    match ctx.q("uploadId") {
        Some(u) if !u.is_empty() => Ok(u.to_owned()),
        _ => Err(S3Error::new("NoSuchUpload")),
    }
}

fn part_number<B>(ctx: &Ctx<B>) -> Result<i64, S3Error> {
    let raw = ctx.q("partNumber").unwrap_or("");
    raw.parse::<i64>()
        .ok()
        .filter(|n| (1..=MAX_PARTS as i64).contains(n))
        .ok_or_else(|| {
            S3Error::invalid_argument(
                "Part number must be an integer between 1 and 10000, inclusive",
                "partNumber",
                raw,
            )
        })
}

/// A non-negative page size parameter, capped at `cap`.
fn page_size<B>(ctx: &Ctx<B>, name: &str, cap: usize) -> Result<usize, S3Error> {
    match ctx.q(name) {
        None => Ok(cap),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .map(|n| (n as usize).min(cap))
            .ok_or_else(|| {
                S3Error::invalid_argument(
                    format!("Argument {name} must be an integer between 0 and 2147483647"),
                    name,
                    v,
                )
            }),
    }
}

pub(super) async fn create<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let _ = read_small_body(gw, ctx).await?;
    let mut opts = put_options(&ctx.parts.headers, None)?;
    let key = ctx.key().to_owned();
    opts.metadata
        .extend(super::lock::write_entries(gw, ctx, &key).await?);
    let checksum = UploadChecksum::from_headers(&ctx.parts.headers)?;
    let mode = encryption::write_mode_for(gw, &ctx.parts.headers, ctx.bucket()).await?;
    let new_key = match &mode {
        Some(m) => {
            let nk = encryption::new_key(m, &gw.config.encryption, ctx.bucket(), ctx.key())?;
            opts.internal = nk.internal.clone();
            opts.internal
                .push((encryption::META_MULTIPART.to_owned(), Vec::new()));
            Some(nk)
        }
        None => None,
    };
    if let Some(c) = checksum {
        opts.internal
            .push((META_UPLOAD_CHECKSUM.to_owned(), c.encode()));
    }
    let id = gw
        .layer
        .create_multipart_upload(ctx.bucket(), ctx.key(), &opts)
        .await?;
    let mut w = XmlWriter::new();
    w.root("InitiateMultipartUploadResult")
        .elem("Bucket", ctx.bucket())
        .elem("Key", ctx.key())
        .elem("UploadId", &id)
        .close("InitiateMultipartUploadResult");
    let mut r = xml_response(StatusCode::OK, w.finish());
    if let Some(nk) = &new_key {
        encryption::mode_headers(r.headers_mut(), nk);
    }
    if let Some(c) = checksum {
        c.headers(r.headers_mut());
    }
    Ok(r)
}

/// The checksum algorithm a request's body announces: an
/// `x-amz-checksum-*` header, or the trailer `x-amz-trailer` names.
fn announced_checksum(h: &http::HeaderMap) -> Option<ChecksumAlgorithm> {
    ChecksumAlgorithm::ALL
        .into_iter()
        .find(|a| h.contains_key(a.header_name()))
        .or_else(|| {
            h.get("x-amz-trailer")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| ChecksumAlgorithm::from_header_name(v.trim()))
        })
}

pub(super) async fn upload_part<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let id = upload_id(ctx)?;
    let n = part_number(ctx)?;
    let size = announced_size(ctx)?;
    let max = gw.config.limits.max_part_bytes;
    if let Some(size) = size
        && size > max
    {
        return Err(S3Error::new("EntityTooLarge")
            .detail("ProposedSize", size.to_string())
            .detail("MaxSizeAllowed", max.to_string()));
    }
    // An encrypted upload: each part is its own DARE stream under its part
    // key (the SSE-C key must come with every part).
    let upload = gw.layer.upload_info(ctx.bucket(), ctx.key(), &id).await?;
    let cfg = &gw.config.encryption;
    let client = encryption::client_key(&ctx.parts.headers, encryption::SSEC, cfg)?;
    let existing = encryption::existing_key(&upload, client.as_deref(), cfg)?;
    checksum_mpu::check_part(
        UploadChecksum::of(&upload.internal),
        announced_checksum(&ctx.parts.headers),
    )?;
    let mut reader = body_reader(gw, ctx, (max, "EntityTooLarge"))?;
    // The part's verified checksum is kept with it, for the object's
    // checksum at completion and for ListParts.
    let trailing = object::layer::TrailingMetadata::default();
    reader.record_checksum_into(trailing.clone());
    let res = match &existing {
        None => {
            let opts = object::layer::PartOptions {
                size,
                checksum: Some(trailing),
                ..Default::default()
            };
            gw.layer
                .upload_part_with(ctx.bucket(), ctx.key(), &id, n, &mut reader, &opts)
                .await
        }
        Some(ex) => {
            // An encrypted part's stored size follows from its announced
            // plaintext size.
            let size = size.ok_or_else(|| S3Error::new("MissingContentLength"))?;
            let (mut enc, mut opts) = ex.part_writer(n, reader, size)?;
            opts.checksum = Some(trailing);
            let r = gw
                .layer
                .upload_part_with(ctx.bucket(), ctx.key(), &id, n, &mut enc, &opts)
                .await;
            reader = enc.into_inner();
            r
        }
    };
    ctx.bytes_in += reader.raw_len();
    let part = res?;
    let mut r = empty(StatusCode::OK);
    let h = r.headers_mut();
    if let Some(ex) = &existing {
        ex.headers(h, client.as_deref());
    }
    set(h, "etag", &quoted(&part.etag));
    if let Some((alg, value)) = &reader.verified_checksum {
        set(h, alg.header_name(), value);
    }
    Ok(r)
}

/// `x-amz-copy-source-range: bytes=first-last`.
fn copy_range(v: &str, size: u64) -> Result<(u64, u64), S3Error> {
    let bad = || {
        S3Error::invalid_argument(
            "Range specified is not valid for source object",
            "x-amz-copy-source-range",
            v,
        )
    };
    let spec = v.trim().strip_prefix("bytes=").ok_or_else(bad)?;
    let (a, b) = spec.split_once('-').ok_or_else(bad)?;
    let first: u64 = a.trim().parse().map_err(|_| bad())?;
    let last: u64 = b.trim().parse().map_err(|_| bad())?;
    if last < first {
        return Err(bad());
    }
    if last >= size {
        return Err(S3Error::new("InvalidRange").detail("ActualObjectSize", size.to_string()));
    }
    Ok((first, last - first + 1))
}

/// UploadPartCopy: a range of a stored object (decrypted with its key when
/// it is encrypted: the SSE-C key of the source comes in the
/// `x-amz-copy-source-server-side-encryption-customer-*` headers) becomes
/// a part of the upload, encrypted as the upload says (under its part key;
/// an SSE-C upload's key comes with the request, as for UploadPart).
pub(super) async fn upload_part_copy<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let id = upload_id(ctx)?;
    let n = part_number(ctx)?;
    let _ = read_small_body(gw, ctx).await?;
    let (sb, sk, sv) = copy_source(ctx.header("x-amz-copy-source").unwrap_or(""))?;
    let upload = gw.layer.upload_info(ctx.bucket(), ctx.key(), &id).await?;
    let cfg = &gw.config.encryption;
    let dst_client = encryption::client_key(&ctx.parts.headers, encryption::SSEC, cfg)?;
    let dst_enc = encryption::existing_key(&upload, dst_client.as_deref(), cfg)?;
    let src_client = encryption::client_key(&ctx.parts.headers, encryption::SSEC_COPY, cfg)?;
    // The source version is opened once: its size, its key and the bytes
    // read are of one version.
    let opened = gw.layer.open_object(&sb, &sk, sv).await?;
    let info = opened.info().clone();
    // `x-amz-copy-source-if-*`, as CopyObject checks them.
    check_conditions(&ctx.parts.headers, &info, "x-amz-copy-source-")?;
    let src_enc = encryption::existing_key(&info, src_client.as_deref(), cfg)?;
    let (size, segments) = match &src_enc {
        Some(ex) => (encryption::plain_size(&info)?, Some(ex.segments(&info)?)),
        None => (info.size, None),
    };
    let (offset, len) = match ctx.header("x-amz-copy-source-range") {
        Some(r) => copy_range(r, size)?,
        None => (0, size),
    };
    if len > gw.config.limits.max_part_bytes {
        return Err(S3Error::new("EntityTooLarge"));
    }
    // The source's plaintext streams into the part through a bounded pipe.
    let (rd, mut wr) = tokio::io::duplex(1 << 20);
    let layer = &gw.layer;
    let reader = async {
        let r = match (&segments, len) {
            (_, 0) => Ok(()),
            (None, _) => layer
                .read_object(&opened, offset, len, &mut wr)
                .await
                .map_err(S3Error::from),
            (Some(segs), _) => encryption::read_plain(layer, &opened, segs, (offset, len), &mut wr)
                .await
                .map_err(|(_, e)| S3Error::internal(format!("copy source: {e}"))),
        };
        drop(wr);
        r
    };
    // The part: the plaintext as is, or encrypted under the upload's part
    // key (stored with its ciphertext and plaintext sizes, and the ETag the
    // encryption mode gives clients).
    let (body, opts): (Box<dyn tokio::io::AsyncRead + Unpin + Send>, _) = match &dst_enc {
        None => (
            Box::new(rd),
            object::layer::PartOptions {
                size: Some(len),
                ..Default::default()
            },
        ),
        Some(ex) => {
            let (enc, opts) = ex.part_writer(n, rd, len)?;
            (Box::new(enc), opts)
        }
    };
    let (bucket, key) = (ctx.bucket(), ctx.key());
    let writer = async {
        // The pipe's reading end goes when the part is stored or refused,
        // so a reader still writing stops instead of waiting forever.
        let mut body = body;
        let r = layer
            .upload_part_with(bucket, key, &id, n, &mut body, &opts)
            .await;
        drop(body);
        r
    };
    let (r, w) = tokio::join!(reader, writer);
    let part = match (w, r) {
        (Ok(p), Ok(())) => p,
        // The part stopped short because the source failed: the source's
        // error is the cause.
        (Err(object::layer::Error::IncompleteBody { .. }), Err(e)) | (Ok(_), Err(e)) => {
            return Err(e);
        }
        (Err(e), _) => return Err(e.into()),
    };
    let mut w = XmlWriter::new();
    w.root("CopyPartResult")
        .elem("LastModified", &iso8601(part.mod_time_nanos))
        .elem("ETag", &quoted(&part.etag))
        .close("CopyPartResult");
    let mut r = xml_response(StatusCode::OK, w.finish());
    let h = r.headers_mut();
    if let Some(ex) = &dst_enc {
        ex.headers(h, dst_client.as_deref());
    }
    if let Some(v) = info.version_id {
        set(h, "x-amz-copy-source-version-id", &v.to_string());
    }
    Ok(r)
}

pub(super) async fn list_parts<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    let id = upload_id(ctx)?;
    let max = page_size(ctx, "max-parts", PAGE)?;
    let marker: i64 = match ctx.q("part-number-marker") {
        None | Some("") => 0,
        Some(m) => m.parse().ok().filter(|n| *n >= 0).ok_or_else(|| {
            S3Error::invalid_argument("Invalid part number marker", "part-number-marker", m)
        })?,
    };
    let upload = gw.layer.upload_info(ctx.bucket(), ctx.key(), &id).await?;
    let checksum = UploadChecksum::of(&upload.internal);
    let parts = gw.layer.list_parts(ctx.bucket(), ctx.key(), &id).await?;
    let after: Vec<_> = parts.iter().filter(|p| p.number > marker).collect();
    let page = &after[..after.len().min(max)];
    let truncated = after.len() > page.len();
    let (owner_id, owner_name) = super::owner(&ctx.access_key);
    let mut w = XmlWriter::new();
    w.root("ListPartsResult")
        .elem("Bucket", ctx.bucket())
        .elem("Key", ctx.key())
        .elem("UploadId", &id)
        .open("Initiator")
        .elem("ID", &owner_id)
        .elem("DisplayName", &owner_name)
        .close("Initiator")
        .open("Owner")
        .elem("ID", &owner_id)
        .elem("DisplayName", &owner_name)
        .close("Owner")
        .elem("StorageClass", "STANDARD")
        .elem("PartNumberMarker", &marker.to_string());
    if let Some(last) = page.last() {
        w.elem("NextPartNumberMarker", &last.number.to_string());
    }
    w.elem("MaxParts", &max.to_string())
        .elem("IsTruncated", if truncated { "true" } else { "false" });
    if let Some(c) = checksum {
        w.elem("ChecksumAlgorithm", checksum_mpu::algorithm_name(c.alg))
            .elem("ChecksumType", c.type_name());
    }
    for p in page {
        w.open("Part")
            .elem("PartNumber", &p.number.to_string())
            .elem("LastModified", &iso8601(p.mod_time_nanos))
            .elem("ETag", &quoted(&p.etag))
            .elem("Size", &p.actual_size.to_string());
        if let Some((name, value)) = &p.checksum
            && let Some(alg) = ChecksumAlgorithm::from_header_name(name)
        {
            w.elem(crate::checksum::part_element(alg), value);
        }
        w.close("Part");
    }
    w.close("ListPartsResult");
    Ok(xml_response(StatusCode::OK, w.finish()))
}

pub(super) async fn complete<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let id = upload_id(ctx)?;
    let expected = crate::checksum::take_object_checksum(&mut ctx.parts.headers)?;
    // The checksum the upload was created with; an upload already gone
    // (a retried complete) is answered by the layer.
    let upload = match gw.layer.upload_info(ctx.bucket(), ctx.key(), &id).await {
        Ok(info) => UploadChecksum::of(&info.internal),
        Err(object::layer::Error::NoSuchUpload(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let mut checksum = CompleteChecksum {
        upload,
        expected,
        listed: Vec::new(),
    };
    let alg = checksum.algorithm()?;
    let doc = read_xml(gw, ctx).await?;
    let element = alg.map(crate::checksum::part_element);
    let (parts, listed) = complete_request(&doc, element)?;
    checksum.listed = listed;
    let hook = alg.is_some().then(|| checksum.into_hook());
    let info = super::conditional::complete(gw, ctx, &id, &parts, hook).await?;
    let host = ctx.header("host").unwrap_or("localhost").to_owned();
    let mut w = XmlWriter::new();
    w.root("CompleteMultipartUploadResult")
        .elem(
            "Location",
            &format!("http://{host}/{}/{}", ctx.bucket(), ctx.key()),
        )
        .elem("Bucket", ctx.bucket())
        .elem("Key", ctx.key())
        .elem("ETag", &quoted(&info.etag));
    let stored = checksum_mpu::stored_checksum(&info);
    if let Some((alg, value, kind)) = &stored {
        w.elem(crate::checksum::part_element(*alg), value)
            .elem("ChecksumType", kind);
    }
    w.close("CompleteMultipartUploadResult");
    let mut r = xml_response(StatusCode::OK, w.finish());
    if let Some(v) = info.version_id {
        set(r.headers_mut(), "x-amz-version-id", &v.to_string());
    }
    completed_encryption_headers(r.headers_mut(), &info);
    super::lifecycle::expiration_header(gw, &info, r.headers_mut()).await;
    Ok(r)
}

/// The encryption S3 names in a CompleteMultipartUpload answer: SSE-S3 or
/// SSE-KMS and its key (SSE-C is not named there, as the request carries
/// no key).
fn completed_encryption_headers(h: &mut http::HeaderMap, info: &object::layer::ObjectInfo) {
    match encryption::sealed_of(&info.internal) {
        Ok(Some(sse::meta::Sealed::SseS3 { .. })) => {
            set(h, "x-amz-server-side-encryption", "AES256");
        }
        Ok(Some(sse::meta::Sealed::SseKms { key_id, .. })) => {
            set(h, "x-amz-server-side-encryption", "aws:kms");
            set(
                h,
                "x-amz-server-side-encryption-aws-kms-key-id",
                &format!("arn:aws:kms:{key_id}"),
            );
        }
        _ => {}
    }
}

pub(super) async fn abort<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    let id = upload_id(ctx)?;
    gw.layer
        .abort_multipart_upload(ctx.bucket(), ctx.key(), &id)
        .await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub(super) async fn list_uploads<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    let prefix = ctx.q("prefix").unwrap_or("").to_owned();
    let delimiter = ctx
        .q("delimiter")
        .filter(|d| !d.is_empty())
        .map(str::to_owned);
    let key_marker = ctx.q("key-marker").unwrap_or("").to_owned();
    let id_marker = ctx.q("upload-id-marker").unwrap_or("").to_owned();
    let max = page_size(ctx, "max-uploads", PAGE)?;
    let uploads = gw
        .layer
        .list_multipart_uploads(ctx.bucket(), &prefix)
        .await?;
    let mut entries: Vec<&object::layer::UploadInfo> = Vec::new();
    let mut prefixes: Vec<String> = Vec::new();
    let mut truncated = false;
    let mut next = (String::new(), String::new());
    for u in &uploads {
        let after = if key_marker.is_empty() {
            true
        } else if id_marker.is_empty() {
            u.key.as_str() > key_marker.as_str()
        } else {
            (u.key.as_str(), u.upload_id.as_str()) > (key_marker.as_str(), id_marker.as_str())
                && u.key.as_str() >= key_marker.as_str()
        };
        if !after {
            continue;
        }
        if let Some(d) = &delimiter
            && let Some(i) = u.key[prefix.len()..].find(d.as_str())
        {
            let cp = u.key[..prefix.len() + i + d.len()].to_owned();
            if prefixes.last() != Some(&cp) {
                if entries.len() + prefixes.len() >= max {
                    truncated = true;
                    break;
                }
                next = (cp.clone(), String::new());
                prefixes.push(cp);
            }
            continue;
        }
        if entries.len() + prefixes.len() >= max {
            truncated = true;
            break;
        }
        next = (u.key.clone(), u.upload_id.clone());
        entries.push(u);
    }
    let (owner_id, owner_name) = super::owner(&ctx.access_key);
    let mut w = XmlWriter::new();
    w.root("ListMultipartUploadsResult")
        .elem("Bucket", ctx.bucket())
        .elem("KeyMarker", &key_marker)
        .elem("UploadIdMarker", &id_marker)
        .elem("NextKeyMarker", if truncated { &next.0 } else { "" })
        .elem("NextUploadIdMarker", if truncated { &next.1 } else { "" })
        .elem("Prefix", &prefix);
    if let Some(d) = &delimiter {
        w.elem("Delimiter", d);
    }
    w.elem("MaxUploads", &max.to_string())
        .elem("IsTruncated", if truncated { "true" } else { "false" });
    for u in entries {
        w.open("Upload")
            .elem("Key", &u.key)
            .elem("UploadId", &u.upload_id)
            .open("Initiator")
            .elem("ID", &owner_id)
            .elem("DisplayName", &owner_name)
            .close("Initiator")
            .open("Owner")
            .elem("ID", &owner_id)
            .elem("DisplayName", &owner_name)
            .close("Owner")
            .elem("StorageClass", "STANDARD")
            .elem("Initiated", &iso8601(u.initiated_nanos))
            .close("Upload");
    }
    for p in prefixes {
        w.open("CommonPrefixes")
            .elem("Prefix", &p)
            .close("CommonPrefixes");
    }
    w.close("ListMultipartUploadsResult");
    Ok(xml_response(StatusCode::OK, w.finish()))
}

/// The part checksums a `CompleteMultipartUpload` document lists.
pub(super) type ListedChecksums = Vec<(i64, Option<String>)>;

/// A `CompleteMultipartUpload` document: the parts as (number, ETag), in
/// strictly ascending order, and, when `element` names the checksum
/// element of the upload's algorithm, each part's listed checksum.
pub(super) fn complete_request(
    doc: &Element,
    element: Option<&str>,
) -> Result<(Vec<(i64, String)>, ListedChecksums), S3Error> {
    if doc.name != "CompleteMultipartUpload" {
        return Err(S3Error::new("MalformedXML"));
    }
    let mut parts = Vec::new();
    let mut listed = Vec::new();
    for p in doc.children_named("Part") {
        let n: i64 = p
            .child_text("PartNumber")
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| S3Error::new("MalformedXML"))?;
        if !(1..=MAX_PARTS as i64).contains(&n) {
            return Err(S3Error::new("InvalidPart"));
        }
        let etag = p
            .child_text("ETag")
            .map(|e| e.trim().trim_matches('"').to_owned())
            .ok_or_else(|| S3Error::new("MalformedXML"))?;
        if let Some(element) = element {
            listed.push((n, p.child_text(element).map(str::to_owned)));
        }
        parts.push((n, etag));
    }
    if parts.is_empty() {
        return Err(S3Error::with_message(
            "MalformedXML",
            "You must specify at least one part",
        ));
    }
    if parts.len() > MAX_PARTS {
        return Err(S3Error::new("MalformedXML"));
    }
    if parts.windows(2).any(|w| w[0].0 >= w[1].0) {
        return Err(S3Error::new("InvalidPartOrder"));
    }
    Ok((parts, listed))
}

//! GetObjectAttributes (`GET /bucket/key?attributes`): what HEAD and
//! ListParts tell of one version, in one XML document, as S3 answers it:
//! the ETag (unquoted), the checksum, the parts of a multipart object (with
//! `x-amz-max-parts` / `x-amz-part-number-marker` paging; the part list
//! itself only when the parts have checksums, as S3 gives it), the storage
//! class and the size. An encrypted object is described as its plaintext,
//! an SSE-C object only to a request carrying its key.

use http::{Response, StatusCode};

use super::object::{set, version_param};
use super::xml_response;
use crate::auth::ChecksumAlgorithm;
use crate::body::ResponseBody;
use crate::checksum::part_element;
use crate::checksum_mpu::stored_checksum;
use crate::encryption;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};
use crate::time::http_date;
use crate::xml::XmlWriter;

/// The attributes a request can name.
const NAMES: [&str; 5] = [
    "ETag",
    "Checksum",
    "ObjectParts",
    "StorageClass",
    "ObjectSize",
];

/// Most parts listed in one answer (and the default), as ListParts.
const MAX_PARTS: usize = 1000;

/// The attributes the request names (`x-amz-object-attributes`, one header
/// with a comma-separated list or several headers).
fn wanted<B>(ctx: &Ctx<B>) -> Result<Vec<&'static str>, S3Error> {
    let mut out = Vec::new();
    for v in ctx.parts.headers.get_all("x-amz-object-attributes") {
        let v = v.to_str().map_err(|_| {
            S3Error::with_message("InvalidArgument", "Invalid attribute name specified.")
        })?;
        for name in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let known = NAMES
                .iter()
                .find(|k| k.eq_ignore_ascii_case(name))
                .ok_or_else(|| {
                    S3Error::with_message("InvalidArgument", "Invalid attribute name specified.")
                })?;
            if !out.contains(known) {
                out.push(*known);
            }
        }
    }
    if out.is_empty() {
        return Err(S3Error::with_message(
            "InvalidArgument",
            "x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty",
        ));
    }
    Ok(out)
}

/// A non-negative integer header, or `default` when absent.
fn number_header<B>(ctx: &Ctx<B>, name: &str, default: usize) -> Result<usize, S3Error> {
    match ctx.header(name) {
        None => Ok(default),
        Some(v) => v
            .trim()
            .parse::<usize>()
            .map_err(|_| S3Error::invalid_argument(format!("Invalid value for {name}"), name, v)),
    }
}

pub(super) async fn get_attributes<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    let wanted = wanted(ctx)?;
    let max_parts = number_header(ctx, "x-amz-max-parts", MAX_PARTS)?.min(MAX_PARTS);
    let marker = number_header(ctx, "x-amz-part-number-marker", 0)?;
    let version = version_param(ctx)?;
    let stored = gw
        .layer
        .head_object(ctx.bucket(), ctx.key(), version)
        .await?;
    let client_key =
        encryption::client_key(&ctx.parts.headers, encryption::SSEC, &gw.config.encryption)?;
    let existing = encryption::existing_key(&stored, client_key.as_deref(), &gw.config.encryption)?;
    let info = encryption::client_view(&stored, existing.as_ref())?;
    let multipart = info.etag.contains('-');
    let mut w = XmlWriter::new();
    w.root("GetObjectAttributesResponse");
    for name in &wanted {
        match *name {
            "ETag" => {
                w.elem("ETag", &info.etag);
            }
            "Checksum" => {
                if let Some((alg, value, kind)) = stored_checksum(&info) {
                    w.open("Checksum")
                        .elem(part_element(alg), &value)
                        .elem("ChecksumType", &kind)
                        .close("Checksum");
                }
            }
            "ObjectParts" if multipart => {
                let checksums =
                    object::layer::multipart::part_checksums(&info).and_then(|(name, values)| {
                        ChecksumAlgorithm::from_header_name(name).map(|alg| (alg, values))
                    });
                w.open("ObjectParts")
                    .elem("PartsCount", &info.parts.len().to_string());
                // S3 lists the parts only when they have checksums.
                if let Some((alg, values)) = &checksums {
                    let after: Vec<(usize, &object::layer::PartInfo)> = info
                        .parts
                        .iter()
                        .enumerate()
                        .filter(|(_, p)| p.number > marker as i64)
                        .collect();
                    let page = &after[..after.len().min(max_parts)];
                    let truncated = after.len() > page.len();
                    w.elem("PartNumberMarker", &marker.to_string());
                    if let Some((_, last)) = page.last() {
                        w.elem("NextPartNumberMarker", &last.number.to_string());
                    }
                    w.elem("MaxParts", &max_parts.to_string())
                        .elem("IsTruncated", if truncated { "true" } else { "false" });
                    for (i, p) in page {
                        w.open("Part")
                            .elem("PartNumber", &p.number.to_string())
                            .elem("Size", &p.size.to_string());
                        if let Some(v) = values.get(*i) {
                            w.elem(part_element(*alg), v);
                        }
                        w.close("Part");
                    }
                }
                w.close("ObjectParts");
            }
            "StorageClass" => {
                let class = info
                    .metadata
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("x-amz-storage-class"))
                    .map_or("STANDARD", |(_, v)| v.as_str());
                w.elem("StorageClass", class);
            }
            "ObjectSize" => {
                w.elem("ObjectSize", &info.size.to_string());
            }
            _ => {}
        }
    }
    w.close("GetObjectAttributesResponse");
    let mut r = xml_response(StatusCode::OK, w.finish());
    let h = r.headers_mut();
    set(h, "last-modified", &http_date(info.mod_time_nanos));
    if let Some(v) = info.version_id {
        set(h, "x-amz-version-id", &v.to_string());
    }
    if let Some(ex) = &existing {
        ex.headers(h, client_key.as_deref());
    }
    Ok(r)
}

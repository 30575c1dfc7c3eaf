//! ListObjects (V1 and V2) and ListObjectVersions.

use http::{Response, StatusCode};
use object::layer::ListOptions;

use super::xml_response;
use crate::body::ResponseBody;
use crate::checksum::{base64_decode, base64_encode};
use crate::encryption;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};
use crate::time::iso8601;
use crate::xml::XmlWriter;

/// Keys per page at most (S3's limit and default).
const MAX_KEYS: usize = 1000;

/// `encoding-type=url`: what S3 (and MinIO, with Go's `url.QueryEscape`
/// per path segment) writes: unreserved bytes and `/` as they are, space
/// as `+`, everything else `%XX`.
fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

struct Enc(bool);

impl Enc {
    fn s(&self, v: &str) -> String {
        if self.0 { url_encode(v) } else { v.to_owned() }
    }
}

fn max_keys<B>(ctx: &Ctx<B>) -> Result<usize, S3Error> {
    match ctx.q("max-keys") {
        None => Ok(MAX_KEYS),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .map(|n| (n as usize).min(MAX_KEYS))
            .ok_or_else(|| {
                S3Error::invalid_argument(
                    "Argument maxKeys must be an integer between 0 and 2147483647",
                    "maxKeys",
                    v,
                )
            }),
    }
}

fn encoding<B>(ctx: &Ctx<B>) -> Result<Enc, S3Error> {
    match ctx.q("encoding-type") {
        None => Ok(Enc(false)),
        Some(v) if v.eq_ignore_ascii_case("url") => Ok(Enc(true)),
        Some(v) => Err(S3Error::invalid_argument(
            "Invalid Encoding Method specified in Request",
            "encoding-type",
            v,
        )),
    }
}

/// Continuation tokens are opaque to clients: the base64 of the key to
/// continue after.
fn token_encode(marker: &str) -> String {
    base64_encode(marker.as_bytes())
}

fn token_decode(token: &str) -> Result<String, S3Error> {
    base64_decode(token)
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            S3Error::invalid_argument(
                "The continuation token provided is incorrect",
                "continuation-token",
                token,
            )
        })
}

pub(super) async fn list_objects<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
    v2: bool,
) -> Result<Response<ResponseBody>, S3Error> {
    let enc = encoding(ctx)?;
    let max = max_keys(ctx)?;
    let prefix = ctx.q("prefix").unwrap_or("").to_owned();
    let delimiter = ctx
        .q("delimiter")
        .filter(|d| !d.is_empty())
        .map(str::to_owned);
    let token = if v2 {
        ctx.q("continuation-token").map(str::to_owned)
    } else {
        None
    };
    let start_after = if v2 {
        ctx.q("start-after").unwrap_or("").to_owned()
    } else {
        String::new()
    };
    let v1_marker = if v2 {
        String::new()
    } else {
        ctx.q("marker").unwrap_or("").to_owned()
    };
    let marker = match &token {
        Some(t) => Some(token_decode(t)?),
        None if v2 => Some(start_after.clone()).filter(|s| !s.is_empty()),
        None => Some(v1_marker.clone()).filter(|s| !s.is_empty()),
    };
    let fetch_owner = !v2 || ctx.q("fetch-owner").is_some_and(|v| v == "true");

    let result = if max == 0 {
        gw.layer.head_bucket(ctx.bucket()).await?;
        Default::default()
    } else {
        gw.layer
            .list_objects(
                ctx.bucket(),
                &ListOptions {
                    prefix: prefix.clone(),
                    delimiter: delimiter.clone(),
                    marker,
                    max_keys: max,
                },
            )
            .await?
    };
    let (owner_id, owner_name) = super::owner(&ctx.access_key);
    let mut w = XmlWriter::new();
    w.root("ListBucketResult")
        .elem("Name", ctx.bucket())
        .elem("Prefix", &enc.s(&prefix));
    if v2 {
        if let Some(t) = &token {
            w.elem("ContinuationToken", t);
        }
        if !start_after.is_empty() {
            w.elem("StartAfter", &enc.s(&start_after));
        }
        w.elem(
            "KeyCount",
            &(result.objects.len() + result.prefixes.len()).to_string(),
        );
    } else {
        w.elem("Marker", &enc.s(&v1_marker));
    }
    w.elem("MaxKeys", &max.to_string());
    if let Some(d) = &delimiter {
        w.elem("Delimiter", &enc.s(d));
    }
    if enc.0 {
        w.elem("EncodingType", "url");
    }
    w.elem(
        "IsTruncated",
        if result.is_truncated { "true" } else { "false" },
    );
    if result.is_truncated
        && let Some(next) = &result.next_marker
    {
        if v2 {
            w.elem("NextContinuationToken", &token_encode(next));
        } else {
            w.elem("NextMarker", &enc.s(next));
        }
    }
    for o in &result.objects {
        let (etag, size) = encryption::listed_view(ctx.bucket(), o, &gw.config.encryption);
        w.open("Contents")
            .elem("Key", &enc.s(&o.key))
            .elem("LastModified", &iso8601(o.mod_time_nanos))
            .elem("ETag", &format!("\"{etag}\""))
            .elem("Size", &size.to_string());
        if fetch_owner {
            w.open("Owner")
                .elem("ID", &owner_id)
                .elem("DisplayName", &owner_name)
                .close("Owner");
        }
        w.elem("StorageClass", "STANDARD").close("Contents");
    }
    for p in &result.prefixes {
        w.open("CommonPrefixes")
            .elem("Prefix", &enc.s(p))
            .close("CommonPrefixes");
    }
    w.close("ListBucketResult");
    Ok(xml_response(StatusCode::OK, w.finish()))
}

pub(super) async fn list_versions<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    let enc = encoding(ctx)?;
    let max = max_keys(ctx)?;
    let prefix = ctx.q("prefix").unwrap_or("").to_owned();
    let delimiter = ctx
        .q("delimiter")
        .filter(|d| !d.is_empty())
        .map(str::to_owned);
    let key_marker = ctx.q("key-marker").unwrap_or("").to_owned();
    let version_marker = ctx.q("version-id-marker").unwrap_or("").to_owned();
    if !version_marker.is_empty() && key_marker.is_empty() {
        return Err(S3Error::invalid_argument(
            "A version-id marker cannot be specified without a key marker.",
            "version-id-marker",
            &version_marker,
        ));
    }
    let result = if max == 0 {
        gw.layer.head_bucket(ctx.bucket()).await?;
        Default::default()
    } else {
        gw.layer
            .list_object_versions(
                ctx.bucket(),
                &ListOptions {
                    prefix: prefix.clone(),
                    delimiter: delimiter.clone(),
                    marker: Some(key_marker.clone()).filter(|s| !s.is_empty()),
                    max_keys: max,
                },
                Some(version_marker.as_str()).filter(|s| !s.is_empty()),
            )
            .await?
    };
    let (owner_id, owner_name) = super::owner(&ctx.access_key);
    let mut w = XmlWriter::new();
    w.root("ListVersionsResult")
        .elem("Name", ctx.bucket())
        .elem("Prefix", &enc.s(&prefix))
        .elem("KeyMarker", &enc.s(&key_marker))
        .elem("VersionIdMarker", &version_marker);
    if result.is_truncated {
        w.opt(
            "NextKeyMarker",
            result
                .next_key_marker
                .as_deref()
                .map(|k| enc.s(k))
                .as_deref(),
        )
        .opt("NextVersionIdMarker", result.next_version_marker.as_deref());
    }
    w.elem("MaxKeys", &max.to_string());
    if let Some(d) = &delimiter {
        w.elem("Delimiter", &enc.s(d));
    }
    if enc.0 {
        w.elem("EncodingType", "url");
    }
    w.elem(
        "IsTruncated",
        if result.is_truncated { "true" } else { "false" },
    );
    for v in &result.versions {
        let vid = v
            .version_id
            .map_or_else(|| "null".to_owned(), |u| u.to_string());
        let tag = if v.delete_marker {
            "DeleteMarker"
        } else {
            "Version"
        };
        w.open(tag)
            .elem("Key", &enc.s(&v.key))
            .elem("VersionId", &vid)
            .elem("IsLatest", if v.is_latest { "true" } else { "false" })
            .elem("LastModified", &iso8601(v.mod_time_nanos));
        if !v.delete_marker {
            let (etag, size) = encryption::listed_view(ctx.bucket(), v, &gw.config.encryption);
            w.elem("ETag", &format!("\"{etag}\""))
                .elem("Size", &size.to_string());
        }
        w.open("Owner")
            .elem("ID", &owner_id)
            .elem("DisplayName", &owner_name)
            .close("Owner");
        if !v.delete_marker {
            w.elem("StorageClass", "STANDARD");
        }
        w.close(tag);
    }
    for p in &result.prefixes {
        w.open("CommonPrefixes")
            .elem("Prefix", &enc.s(p))
            .close("CommonPrefixes");
    }
    w.close("ListVersionsResult");
    Ok(xml_response(StatusCode::OK, w.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_encoding_as_s3() {
        assert_eq!(url_encode("a b/c+d&é"), "a+b/c%2Bd%26%C3%A9");
        assert_eq!(token_decode(&token_encode("k/é")).unwrap(), "k/é");
        assert!(token_decode("!!").is_err());
    }
}

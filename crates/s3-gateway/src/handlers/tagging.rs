//! Object tagging: Get/Put/DeleteObjectTagging. Tags live in the object
//! version's user metadata under `X-Amz-Tagging` as a URL query string, as
//! MinIO stores them, and are edited in place (no new version).

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body::Body;
use object::layer::VersionSel;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

use super::object::set;
use super::{empty, read_xml, xml_response};
use crate::body::ResponseBody;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};
use crate::xml::XmlWriter;

/// The metadata key of the tags.
pub(crate) const TAGGING_KEY: &str = "X-Amz-Tagging";
/// S3's limits on object tags.
const MAX_TAGS: usize = 10;
const MAX_KEY_CHARS: usize = 128;
const MAX_VALUE_CHARS: usize = 256;

const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn invalid(msg: impl Into<String>) -> S3Error {
    S3Error::with_message("InvalidTag", msg)
}

/// Checks a tag set against S3's rules.
pub(crate) fn validate(tags: &[(String, String)]) -> Result<(), S3Error> {
    if tags.len() > MAX_TAGS {
        return Err(invalid("Object tags cannot be greater than 10"));
    }
    for (i, (k, v)) in tags.iter().enumerate() {
        if k.is_empty() || k.chars().count() > MAX_KEY_CHARS {
            return Err(invalid("The TagKey you have provided is invalid"));
        }
        if v.chars().count() > MAX_VALUE_CHARS {
            return Err(invalid("The TagValue you have provided is invalid"));
        }
        if tags[..i].iter().any(|(k2, _)| k2 == k) {
            return Err(invalid("Cannot provide multiple Tags with the same key"));
        }
    }
    Ok(())
}

/// Parses the stored (or `x-amz-tagging` header) form `k1=v1&k2=v2`.
pub(crate) fn parse_query(s: &str) -> Result<Vec<(String, String)>, S3Error> {
    let mut out = Vec::new();
    for seg in s.split('&').filter(|x| !x.is_empty()) {
        let (k, v) = seg.split_once('=').unwrap_or((seg, ""));
        let dec = |x: &str| {
            percent_decode_str(&x.replace('+', " "))
                .decode_utf8()
                .map(|c| c.into_owned())
                .map_err(|_| invalid("The tag set is not valid URL encoding"))
        };
        out.push((dec(k)?, dec(v)?));
    }
    Ok(out)
}

fn encode_query(tags: &[(String, String)]) -> String {
    tags.iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                utf8_percent_encode(k, QUERY_VALUE),
                utf8_percent_encode(v, QUERY_VALUE)
            )
        })
        .collect::<Vec<_>>()
        .join("&")
}

fn version_param<B>(ctx: &Ctx<B>) -> Result<Option<VersionSel>, S3Error> {
    match ctx.q("versionId") {
        None | Some("") => Ok(None),
        Some(v) => VersionSel::parse(v).map(Some).ok_or_else(|| {
            S3Error::invalid_argument("Invalid version id specified", "versionId", v)
        }),
    }
}

pub(super) async fn get<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    let info = gw
        .layer
        .head_object(ctx.bucket(), ctx.key(), version_param(ctx)?)
        .await?;
    let tags = info
        .metadata
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(TAGGING_KEY))
        .map(|(_, v)| parse_query(v))
        .transpose()?
        .unwrap_or_default();
    let mut w = XmlWriter::new();
    w.root("Tagging").open("TagSet");
    for (k, v) in &tags {
        w.open("Tag").elem("Key", k).elem("Value", v).close("Tag");
    }
    w.close("TagSet").close("Tagging");
    let mut r = xml_response(StatusCode::OK, w.finish());
    if let Some(v) = info.version_id {
        set(r.headers_mut(), "x-amz-version-id", &v.to_string());
    }
    Ok(r)
}

pub(super) async fn put<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let version = version_param(ctx)?;
    let doc = read_xml(gw, ctx).await?;
    if doc.name != "Tagging" {
        return Err(S3Error::new("MalformedXML"));
    }
    let set_el = doc
        .child("TagSet")
        .ok_or_else(|| S3Error::new("MalformedXML"))?;
    let mut tags = Vec::new();
    for t in set_el.children_named("Tag") {
        let k = t
            .child_text("Key")
            .ok_or_else(|| S3Error::new("MalformedXML"))?;
        let v = t.child_text("Value").unwrap_or("");
        tags.push((k.to_owned(), v.to_owned()));
    }
    validate(&tags)?;
    let stored = encode_query(&tags);
    let info = gw
        .layer
        .update_object_metadata(ctx.bucket(), ctx.key(), version, &move |m| {
            m.remove(TAGGING_KEY);
            if !stored.is_empty() {
                m.insert(TAGGING_KEY, stored.clone().into());
            }
        })
        .await?;
    let mut r = empty(StatusCode::OK);
    if let Some(v) = info.version_id {
        set(r.headers_mut(), "x-amz-version-id", &v.to_string());
    }
    Ok(r)
}

pub(super) async fn delete<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    let version = version_param(ctx)?;
    let info = gw
        .layer
        .update_object_metadata(ctx.bucket(), ctx.key(), version, &|m| {
            m.remove(TAGGING_KEY);
        })
        .await?;
    let mut r = empty(StatusCode::NO_CONTENT);
    if let Some(v) = info.version_id {
        set(r.headers_mut(), "x-amz-version-id", &v.to_string());
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_form_round_trips() {
        let tags = vec![
            ("a b".to_owned(), "c&d=e".to_owned()),
            ("ké".to_owned(), String::new()),
        ];
        let q = encode_query(&tags);
        assert_eq!(parse_query(&q).unwrap(), tags);
        assert_eq!(
            parse_query("x=1&y=two+words").unwrap(),
            vec![("x".into(), "1".into()), ("y".into(), "two words".into())]
        );
    }

    #[test]
    fn limits() {
        let many: Vec<_> = (0..11).map(|i| (format!("k{i}"), "v".to_owned())).collect();
        assert_eq!(validate(&many).unwrap_err().code, "InvalidTag");
        let dup = vec![
            ("k".to_owned(), "1".to_owned()),
            ("k".to_owned(), "2".to_owned()),
        ];
        assert_eq!(validate(&dup).unwrap_err().code, "InvalidTag");
        assert!(validate(&[("k".repeat(129), String::new())]).is_err());
        assert!(validate(&[("k".into(), "v".repeat(257))]).is_err());
        assert!(validate(&[("k".repeat(128), "v".repeat(256))]).is_ok());
    }
}

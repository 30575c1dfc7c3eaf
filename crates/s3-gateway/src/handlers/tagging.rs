//! Tagging. Object tags (Get/Put/DeleteObjectTagging) live in the object
//! version's user metadata under `X-Amz-Tagging` as a URL query string, as
//! MinIO stores them, and are edited in place (no new version). Bucket tags
//! (Get/Put/DeleteBucketTagging) are the `Tagging` XML document in the
//! bucket's `.metadata.bin`, where MinIO keeps them.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body::Body;
use object::layer::{BucketConfig, VersionSel};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

use super::object::set;
use super::{empty, read_xml, xml_response};
use crate::body::ResponseBody;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};
use crate::xml::{Element, XmlWriter};

/// The metadata key of the tags.
pub(crate) const TAGGING_KEY: &str = "X-Amz-Tagging";
/// S3's limits on tags: 10 on an object, 50 on a bucket.
const MAX_OBJECT_TAGS: usize = 10;
const MAX_BUCKET_TAGS: usize = 50;
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

/// Checks an object's tag set against S3's rules.
pub(crate) fn validate(tags: &[(String, String)]) -> Result<(), S3Error> {
    if tags.len() > MAX_OBJECT_TAGS {
        return Err(invalid("Object tags cannot be greater than 10"));
    }
    validate_each(tags)
}

/// Checks a bucket's tag set: up to 50 tags, none in the `aws:` namespace
/// that S3 reserves for its own tags.
pub(super) fn validate_bucket(tags: &[(String, String)]) -> Result<(), S3Error> {
    if tags.len() > MAX_BUCKET_TAGS {
        return Err(invalid("Bucket tag count cannot be greater than 50"));
    }
    if tags
        .iter()
        .any(|(k, _)| k.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("aws:")))
    {
        return Err(invalid("System tags cannot be added/updated by requester"));
    }
    validate_each(tags)
}

fn validate_each(tags: &[(String, String)]) -> Result<(), S3Error> {
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
    let mut r = xml_response(StatusCode::OK, tagging_xml(&tags));
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
    let tags = read_tagging(gw, ctx).await?;
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

/// A `Tagging` request document's tags, in order.
async fn read_tagging<B>(gw: &Gateway, ctx: &mut Ctx<B>) -> Result<Vec<(String, String)>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    tagging_request(&read_xml(gw, ctx).await?)
}

/// A `Tagging` document's tags, in order (not yet validated).
pub(super) fn tagging_request(doc: &Element) -> Result<Vec<(String, String)>, S3Error> {
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
    Ok(tags)
}

/// The `Tagging` document of a tag set (what GET answers, and the form a
/// bucket's tags are stored in).
fn tagging_xml(tags: &[(String, String)]) -> String {
    let mut w = XmlWriter::new();
    w.root("Tagging").open("TagSet");
    for (k, v) in tags {
        w.open("Tag").elem("Key", k).elem("Value", v).close("Tag");
    }
    w.close("TagSet").close("Tagging");
    w.finish()
}

/// GetBucketTagging: the stored document; 404 `NoSuchTagSet` when the
/// bucket has no tags.
pub(super) async fn get_bucket<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    super::bucket::config_document(gw, ctx, BucketConfig::Tagging, S3Error::new("NoSuchTagSet"))
        .await
}

/// PutBucketTagging: replaces the bucket's tags; an empty tag set removes
/// them, as S3 does.
pub(super) async fn put_bucket<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    gw.layer.head_bucket(ctx.bucket()).await?;
    let tags = read_tagging(gw, ctx).await?;
    validate_bucket(&tags)?;
    let doc = (!tags.is_empty()).then(|| tagging_xml(&tags).into_bytes());
    gw.layer
        .set_bucket_config(ctx.bucket(), BucketConfig::Tagging, doc)
        .await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// DeleteBucketTagging: 204 whether or not the bucket had tags.
pub(super) async fn delete_bucket<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    gw.layer
        .set_bucket_config(ctx.bucket(), BucketConfig::Tagging, None)
        .await?;
    Ok(empty(StatusCode::NO_CONTENT))
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

    #[test]
    fn bucket_limits() {
        let fifty: Vec<_> = (0..50).map(|i| (format!("k{i}"), "v".to_owned())).collect();
        assert!(validate_bucket(&fifty).is_ok());
        let many: Vec<_> = (0..51).map(|i| (format!("k{i}"), "v".to_owned())).collect();
        assert_eq!(validate_bucket(&many).unwrap_err().code, "InvalidTag");
        let system = vec![("AWS:CloudFormation".to_owned(), "x".to_owned())];
        assert_eq!(validate_bucket(&system).unwrap_err().code, "InvalidTag");
        assert!(validate_bucket(&[("aw".to_owned(), String::new())]).is_ok());
        // A multi-byte character across the prefix's end is no prefix.
        assert!(validate_bucket(&[("ünï".to_owned(), String::new())]).is_ok());
    }
}

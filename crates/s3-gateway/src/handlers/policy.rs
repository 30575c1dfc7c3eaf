//! Bucket policies: `PUT`, `GET` and `DELETE /bucket?policy` and
//! `GET /bucket?policyStatus`. The document is kept as the client sent
//! it, in the bucket's metadata (`PolicyConfigJSON`, where MinIO keeps
//! it), once it parses and names only this bucket's resources.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body::Body;
use object::layer::BucketConfig;

use super::{empty, read_small_body, with_status, xml_response};
use crate::body::ResponseBody;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};
use crate::xml::XmlWriter;

/// S3's bound on a bucket policy document.
pub(crate) const MAX_BUCKET_POLICY_BYTES: usize = 20 * 1024;

fn no_policy() -> S3Error {
    with_status(
        S3Error::with_message("NoSuchBucketPolicy", "The bucket policy does not exist"),
        StatusCode::NOT_FOUND,
    )
}

fn malformed(why: impl std::fmt::Display) -> S3Error {
    S3Error::with_message("MalformedPolicy", why.to_string())
}

pub(crate) async fn get<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let doc = gw
        .layer
        .bucket_config(ctx.bucket(), BucketConfig::Policy)
        .await?
        .ok_or_else(no_policy)?;
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(ResponseBody::full(doc))
        .expect("static headers are valid"))
}

pub(crate) async fn put<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    gw.layer.head_bucket(ctx.bucket()).await?;
    let doc = read_small_body(gw, ctx).await?;
    if doc.len() > MAX_BUCKET_POLICY_BYTES {
        return Err(S3Error::with_message(
            "PolicyTooLarge",
            format!(
                "Policy exceeds the maximum allowed document size of {MAX_BUCKET_POLICY_BYTES} bytes"
            ),
        ));
    }
    if doc.iter().all(u8::is_ascii_whitespace) {
        return Err(S3Error::new("MissingRequestBodyError"));
    }
    policy::Policy::parse_bucket(&doc, ctx.bucket()).map_err(malformed)?;
    gw.layer
        .set_bucket_config(ctx.bucket(), BucketConfig::Policy, Some(doc))
        .await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub(crate) async fn delete<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    gw.layer
        .set_bucket_config(ctx.bucket(), BucketConfig::Policy, None)
        .await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// Whether the bucket's policy makes it public, as S3 reports it: it
/// allows an anonymous requester to list the bucket or to read or write
/// its objects.
pub(crate) async fn get_status<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    gw.layer.head_bucket(ctx.bucket()).await?;
    let policy = crate::authz::bucket_policy(gw, ctx.bucket())
        .await?
        .ok_or_else(no_policy)?;
    let public = policy.is_public(ctx.bucket());
    let mut w = XmlWriter::new();
    w.root("PolicyStatus")
        .elem("IsPublic", if public { "true" } else { "false" })
        .close("PolicyStatus");
    Ok(xml_response(StatusCode::OK, w.finish()))
}

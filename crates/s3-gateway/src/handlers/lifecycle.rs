//! Bucket lifecycle over S3: Put/Get/DeleteBucketLifecycleConfiguration
//! (the rules kept as MinIO keeps them, `LifecycleConfigXML` in the
//! bucket's `.metadata.bin`), and the `x-amz-expiration` header of objects a
//! rule will expire. The rules are [`crate::lifecycle`]'s; the background
//! pass that carries them out is [`crate::lifecycle::spawn`].

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body::Body;
use object::layer::{BucketConfig, ObjectInfo};

use super::bucket::store_config;
use super::{checked_body, with_status, xml_response};
use crate::body::ResponseBody;
use crate::error::S3Error;
use crate::lifecycle::Lifecycle;
use crate::service::{Ctx, Gateway};

/// `GET /b?lifecycle`: the rules as stored; a stored document this server
/// cannot read (a MinIO extension) is answered as it is.
pub(super) async fn get<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    let Some(doc) = gw
        .layer
        .bucket_config(ctx.bucket(), BucketConfig::Lifecycle)
        .await?
    else {
        return Err(with_status(
            S3Error::with_message(
                "NoSuchLifecycleConfiguration",
                "The lifecycle configuration does not exist",
            )
            .detail("BucketName", ctx.bucket()),
            StatusCode::NOT_FOUND,
        ));
    };
    let body = match Lifecycle::parse(&doc) {
        Ok(lc) => lc.to_xml(),
        Err(_) => String::from_utf8_lossy(&doc).into_owned(),
    };
    Ok(xml_response(StatusCode::OK, body))
}

/// `PUT /b?lifecycle`: validated as S3 validates it, rules without an ID
/// given one (as S3 and MinIO do), stored re-encoded as MinIO stores it.
pub(super) async fn put<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let body = checked_body(gw, ctx).await?;
    let mut lc = Lifecycle::parse(&body)?;
    lc.fill_missing_ids();
    if lc.has_transitions() {
        tracing::warn!(
            bucket = ctx.bucket(),
            "lifecycle configuration with transitions stored; transitions are not executed (no tiers)"
        );
    }
    store_config(gw, ctx.bucket(), BucketConfig::Lifecycle, Some(lc.to_xml())).await
}

/// `DELETE /b?lifecycle`.
pub(super) async fn delete<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    store_config(gw, ctx.bucket(), BucketConfig::Lifecycle, None).await
}

/// Adds `x-amz-expiration` to the answer about `info` (PUT, GET, HEAD)
/// when a rule of its bucket will expire it.
pub(super) async fn expiration_header(gw: &Gateway, info: &ObjectInfo, h: &mut HeaderMap) {
    if info.delete_marker {
        return;
    }
    let Ok(Some(lc)) = gw.lifecycles.get(gw, &info.bucket, Lifecycle::parse).await else {
        return;
    };
    let tags = info
        .metadata
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("x-amz-tagging"))
        .and_then(|(_, q)| super::parse_tags(q).ok())
        .unwrap_or_default();
    if let Some(v) =
        lc.expiration_header(&info.key, info.size, info.mod_time(), &tags, info.is_latest)
        && let Ok(v) = HeaderValue::from_str(&v)
    {
        h.insert("x-amz-expiration", v);
    }
}

//! Bucket CORS over S3: Put/Get/DeleteBucketCors, the `OPTIONS` preflight
//! and the CORS headers of actual requests. The rules and their matching
//! are [`crate::cors`]'s; the rules are kept in the bucket's
//! `.metadata.bin` ([`BucketConfig::Cors`]).

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body::Body;
use object::layer::BucketConfig;

use super::bucket::store_config;
use super::{checked_body, empty, with_status, xml_response};
use crate::body::ResponseBody;
use crate::cors::{self, CorsConfig, Resource};
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};

/// `GET /b?cors`.
pub(super) async fn get<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    match config_of(gw, ctx.bucket()).await? {
        Some(c) => Ok(xml_response(StatusCode::OK, c.to_xml())),
        None => Err(with_status(
            S3Error::with_message(
                "NoSuchCORSConfiguration",
                "The CORS configuration does not exist",
            )
            .detail("BucketName", ctx.bucket()),
            StatusCode::NOT_FOUND,
        )),
    }
}

/// `PUT /b?cors`: Content-MD5 (or a checksum) required, as S3 requires.
pub(super) async fn put<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let body = checked_body(gw, ctx).await?;
    let config = CorsConfig::parse(&body)?;
    store_config(gw, ctx.bucket(), BucketConfig::Cors, Some(config.to_xml())).await
}

/// `DELETE /b?cors`.
pub(super) async fn delete<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    store_config(gw, ctx.bucket(), BucketConfig::Cors, None).await
}

/// The bucket's rules; a stored document that no longer parses (written
/// by hand, or by a later version) counts as none.
async fn config_of(gw: &Gateway, bucket: &str) -> Result<Option<Arc<CorsConfig>>, S3Error> {
    gw.cors_rules.get(gw, bucket, CorsConfig::parse).await
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

fn insert_all(h: &mut HeaderMap, headers: cors::CorsHeaders) {
    for (name, value) in headers {
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.insert(name, v);
        }
    }
}

/// Answers an `OPTIONS` preflight to a bucket or an object URL, before any
/// authentication (browsers send preflights without credentials).
pub(crate) async fn preflight<B>(
    gw: &Gateway,
    ctx: &Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    let h = &ctx.parts.headers;
    let origin = header(h, "origin").filter(|o| !o.is_empty());
    let method = header(h, "access-control-request-method");
    if origin.is_none() {
        return Err(cors::insufficient_information());
    }
    let bucket = ctx.bucket();
    let config = match config_of(gw, bucket).await {
        Ok(c) => c,
        Err(e) if e.code == "NoSuchBucket" || e.code == "InvalidBucketName" => {
            return Err(cors::bucket_not_found(method));
        }
        Err(e) => return Err(e),
    };
    let resource = if ctx.key.is_some() {
        Resource::Object
    } else {
        Resource::Bucket
    };
    let headers = cors::answer_preflight(
        config.as_deref(),
        origin,
        method,
        header(h, "access-control-request-headers"),
        resource,
    )?;
    let mut r = empty(StatusCode::OK);
    insert_all(r.headers_mut(), headers);
    Ok(r)
}

/// Adds the CORS headers to the answer (success or error) of a request
/// that carries `Origin`, when a rule of its bucket allows it.
pub(crate) async fn decorate(
    gw: &Gateway,
    bucket: &str,
    request: &HeaderMap,
    method: &http::Method,
    response: &mut HeaderMap,
) {
    let Some(origin) = header(request, "origin").filter(|o| !o.is_empty()) else {
        return;
    };
    let Ok(Some(config)) = config_of(gw, bucket).await else {
        return;
    };
    if let Some(headers) = config.actual(
        origin,
        method.as_str(),
        header(request, "access-control-request-method"),
        header(request, "access-control-request-headers"),
    ) {
        insert_all(response, headers);
    }
}

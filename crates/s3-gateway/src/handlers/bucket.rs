//! Buckets: list, create, head, delete, location, versioning.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body::Body;
use object::layer::Versioning;

use super::{empty, owner, read_small_body, read_xml, xml_response};
use crate::body::ResponseBody;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};
use crate::time::iso8601;
use crate::xml::{self, Element, XmlWriter};

/// The buckets, or for a user not allowed `s3:ListAllMyBuckets`, those it
/// may list or locate (as MinIO answers, so `mc ls` shows a user its
/// buckets); `AccessDenied` when there are none.
pub(super) async fn list_buckets<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: http_body::Body,
{
    let mut buckets = gw.layer.list_buckets().await?;
    let who = ctx.requester.clone();
    if !crate::authz::allowed(gw, ctx, &who, "s3:ListAllMyBuckets", "", None).await? {
        let mut visible = Vec::new();
        for b in buckets {
            if crate::authz::allowed(gw, ctx, &who, "s3:ListBucket", &b.name, None).await?
                || crate::authz::allowed(gw, ctx, &who, "s3:GetBucketLocation", &b.name, None)
                    .await?
            {
                visible.push(b);
            }
        }
        if visible.is_empty() {
            return Err(S3Error::new("AccessDenied"));
        }
        buckets = visible;
    }
    let (id, name) = owner(&ctx.access_key);
    let mut w = XmlWriter::new();
    w.root("ListAllMyBucketsResult")
        .open("Owner")
        .elem("ID", &id)
        .elem("DisplayName", &name)
        .close("Owner")
        .open("Buckets");
    for b in &buckets {
        w.open("Bucket")
            .elem("Name", &b.name)
            .elem("CreationDate", &iso8601(b.created_nanos))
            .close("Bucket");
    }
    w.close("Buckets").close("ListAllMyBucketsResult");
    Ok(xml_response(StatusCode::OK, w.finish()))
}

pub(super) async fn head_bucket<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    gw.layer.head_bucket(ctx.bucket()).await?;
    let mut r = empty(StatusCode::OK);
    if let Ok(v) = http::HeaderValue::from_str(&gw.config.region) {
        r.headers_mut().insert("x-amz-bucket-region", v);
    }
    Ok(r)
}

pub(super) async fn create_bucket<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let object_lock = match ctx.header("x-amz-bucket-object-lock-enabled") {
        None => false,
        Some(v) if v.trim().eq_ignore_ascii_case("true") => true,
        Some(v) if v.trim().eq_ignore_ascii_case("false") => false,
        Some(v) => {
            return Err(S3Error::invalid_argument(
                "x-amz-bucket-object-lock-enabled must be true or false",
                "x-amz-bucket-object-lock-enabled",
                v,
            ));
        }
    };
    let body = read_small_body(gw, ctx).await?;
    if !body.iter().all(u8::is_ascii_whitespace) {
        let doc = xml::parse(&body)?;
        if doc.name != "CreateBucketConfiguration" {
            return Err(S3Error::new("MalformedXML"));
        }
        if let Some(loc) = doc.child_text("LocationConstraint") {
            let loc = loc.trim();
            if !loc.is_empty() && loc != gw.config.region {
                return Err(S3Error::with_message(
                    "InvalidLocationConstraint",
                    format!(
                        "The specified location-constraint {loc:?} is not valid; this server's region is {}",
                        gw.config.region
                    ),
                ));
            }
        }
    }
    gw.layer.make_bucket_with(ctx.bucket(), object_lock).await?;
    let mut r = empty(StatusCode::OK);
    if let Ok(v) = http::HeaderValue::from_str(&format!("/{}", ctx.bucket())) {
        r.headers_mut().insert(http::header::LOCATION, v);
    }
    Ok(r)
}

pub(super) async fn delete_bucket<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    gw.layer.delete_bucket(ctx.bucket()).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub(super) async fn get_location<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    gw.layer.head_bucket(ctx.bucket()).await?;
    let mut w = XmlWriter::new();
    // us-east-1 is written as an empty constraint, as S3 does.
    let region = if gw.config.region == "us-east-1" {
        ""
    } else {
        gw.config.region.as_str()
    };
    w.root("LocationConstraint")
        .text(region)
        .close("LocationConstraint");
    Ok(xml_response(StatusCode::OK, w.finish()))
}

pub(super) async fn get_versioning<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    gw.layer.head_bucket(ctx.bucket()).await?;
    let state = gw.layer.bucket_versioning_state(ctx.bucket()).await?;
    let mut w = XmlWriter::new();
    w.root("VersioningConfiguration");
    match state {
        Versioning::Enabled => {
            w.elem("Status", "Enabled");
        }
        Versioning::Suspended => {
            w.elem("Status", "Suspended");
        }
        Versioning::Unversioned => {}
    }
    w.close("VersioningConfiguration");
    Ok(xml_response(StatusCode::OK, w.finish()))
}

pub(super) async fn put_versioning<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    gw.layer.head_bucket(ctx.bucket()).await?;
    let doc = read_xml(gw, ctx).await?;
    let enabled = versioning_request(&doc)?;
    gw.layer
        .set_bucket_versioning(ctx.bucket(), enabled)
        .await?;
    Ok(empty(StatusCode::OK))
}

/// A `VersioningConfiguration` document: whether versioning is to be on.
pub(super) fn versioning_request(doc: &Element) -> Result<bool, S3Error> {
    if doc.name != "VersioningConfiguration" {
        return Err(S3Error::new("MalformedXML"));
    }
    if doc
        .child_text("MfaDelete")
        .is_some_and(|m| m.trim() == "Enabled")
    {
        return Err(S3Error::with_message(
            "NotImplemented",
            "MFA delete is not supported.",
        ));
    }
    match doc.child_text("Status").map(str::trim) {
        Some("Enabled") => Ok(true),
        Some("Suspended") => Ok(false),
        _ => Err(S3Error::new("IllegalVersioningConfigurationException")),
    }
}

/// A stored bucket configuration document as the answer, or `missing`
/// (with the bucket's name) when the bucket has none.
pub(super) async fn config_document<B>(
    gw: &Gateway,
    ctx: &Ctx<B>,
    kind: object::layer::BucketConfig,
    missing: S3Error,
) -> Result<Response<ResponseBody>, S3Error> {
    match gw.layer.bucket_config(ctx.bucket(), kind).await? {
        Some(doc) => Ok(xml_response(
            StatusCode::OK,
            String::from_utf8_lossy(&doc).into_owned(),
        )),
        None => Err(missing.detail("BucketName", ctx.bucket())),
    }
}

pub(super) async fn get_encryption<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    let mut missing = S3Error::with_message(
        "ServerSideEncryptionConfigurationNotFoundError",
        "The server side encryption configuration was not found",
    );
    missing.status = StatusCode::NOT_FOUND;
    config_document(gw, ctx, object::layer::BucketConfig::Encryption, missing).await
}

pub(super) async fn put_encryption<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    gw.layer.head_bucket(ctx.bucket()).await?;
    let body = read_small_body(gw, ctx).await?;
    let mode = crate::encryption::parse_bucket_default(&body)?;
    if gw.config.encryption.kms.is_none() {
        return Err(S3Error::with_message(
            "NotImplemented",
            "Server side encryption specified but KMS is not configured",
        ));
    }
    // Stored in a canonical form.
    let mut w = XmlWriter::new();
    w.root("ServerSideEncryptionConfiguration")
        .open("Rule")
        .open("ApplyServerSideEncryptionByDefault");
    match &mode {
        crate::encryption::Mode::Kms { key_id, .. } => {
            w.elem("SSEAlgorithm", "aws:kms")
                .opt("KMSMasterKeyID", key_id.as_deref());
        }
        _ => {
            w.elem("SSEAlgorithm", "AES256");
        }
    }
    w.close("ApplyServerSideEncryptionByDefault")
        .close("Rule")
        .close("ServerSideEncryptionConfiguration");
    gw.layer
        .set_bucket_config(
            ctx.bucket(),
            object::layer::BucketConfig::Encryption,
            Some(w.finish().into_bytes()),
        )
        .await?;
    Ok(empty(StatusCode::OK))
}

pub(super) async fn delete_encryption<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    store_config(
        gw,
        ctx.bucket(),
        object::layer::BucketConfig::Encryption,
        None,
    )
    .await
}

/// Stores a bucket's configuration document (200), or with `None` removes
/// it (204), as S3 answers the Put and Delete calls.
pub(super) async fn store_config(
    gw: &Gateway,
    bucket: &str,
    kind: object::layer::BucketConfig,
    doc: Option<String>,
) -> Result<Response<ResponseBody>, S3Error> {
    let status = if doc.is_some() {
        StatusCode::OK
    } else {
        StatusCode::NO_CONTENT
    };
    gw.layer
        .set_bucket_config(bucket, kind, doc.map(String::into_bytes))
        .await?;
    Ok(empty(status))
}

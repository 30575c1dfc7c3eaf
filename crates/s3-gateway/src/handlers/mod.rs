//! S3 operations, dispatched on method, bucket/key presence and the
//! sub-resource named in the query.

mod attributes;
mod bucket;
mod conditional;
pub(crate) mod fuzzing;
mod list;
mod multipart;
mod object;
mod post;
mod tagging;

pub(crate) use post::{boundary as post_boundary, post_object};

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body::Body;

use crate::auth::{ChecksumAlgorithm, Payload};
use crate::body::{BodyChecks, BodyReader, Expected, ResponseBody, read_to_vec};
use crate::checksum::base64_decode;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};
use crate::xml::{self, Element};

pub(crate) async fn dispatch<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let method = ctx.parts.method.clone();
    match (ctx.bucket.is_some(), ctx.key.is_some()) {
        (false, _) => match method {
            Method::GET | Method::HEAD => {
                ctx.api = "ListBuckets";
                bucket::list_buckets(gw, ctx).await
            }
            _ => Err(S3Error::new("MethodNotAllowed")),
        },
        (true, false) => bucket_op(gw, ctx, method).await,
        (true, true) => object_op(gw, ctx, method).await,
    }
}

/// Bucket sub-resources this gateway does not implement yet: answered
/// with `NotImplemented` rather than mistaken for another operation.
const UNSUPPORTED_BUCKET: &[&str] = &[
    "accelerate",
    "analytics",
    "intelligent-tiering",
    "inventory",
    "logging",
    "metrics",
    "ownershipControls",
    "publicAccessBlock",
    "requestPayment",
    "website",
    "replication",
    "notification",
    "policyStatus",
];

async fn bucket_op<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
    method: Method,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    if let Some(sub) = UNSUPPORTED_BUCKET.iter().find(|s| ctx.has(s)) {
        ctx.api = "Unsupported";
        return Err(S3Error::with_message(
            "NotImplemented",
            format!("The bucket sub-resource '{sub}' is not implemented."),
        ));
    }
    match method {
        Method::GET => {
            if ctx.has("location") {
                ctx.api = "GetBucketLocation";
                bucket::get_location(gw, ctx).await
            } else if ctx.has("versioning") {
                ctx.api = "GetBucketVersioning";
                bucket::get_versioning(gw, ctx).await
            } else if ctx.has("uploads") {
                ctx.api = "ListMultipartUploads";
                multipart::list_uploads(gw, ctx).await
            } else if ctx.has("versions") {
                ctx.api = "ListObjectVersions";
                list::list_versions(gw, ctx).await
            } else if ctx.has("policy") {
                ctx.api = "GetBucketPolicy";
                gw.layer.head_bucket(ctx.bucket()).await?;
                Err(S3Error::with_message(
                    "NoSuchBucketPolicy",
                    "The bucket policy does not exist",
                ))
                .map_err(|e| with_status(e, StatusCode::NOT_FOUND))
            } else if ctx.has("object-lock") {
                ctx.api = "GetObjectLockConfiguration";
                gw.layer.head_bucket(ctx.bucket()).await?;
                Err(with_status(
                    S3Error::with_message(
                        "ObjectLockConfigurationNotFoundError",
                        "Object Lock configuration does not exist for this bucket",
                    ),
                    StatusCode::NOT_FOUND,
                ))
            } else if ctx.has("encryption") {
                ctx.api = "GetBucketEncryption";
                bucket::get_encryption(gw, ctx).await
            } else if ctx.has("tagging") {
                ctx.api = "GetBucketTagging";
                tagging::get_bucket(gw, ctx).await
            } else if ctx.has("lifecycle") {
                ctx.api = "GetBucketLifecycle";
                gw.layer.head_bucket(ctx.bucket()).await?;
                Err(with_status(
                    S3Error::with_message(
                        "NoSuchLifecycleConfiguration",
                        "The lifecycle configuration does not exist",
                    ),
                    StatusCode::NOT_FOUND,
                ))
            } else if ctx.has("cors") {
                ctx.api = "GetBucketCors";
                gw.layer.head_bucket(ctx.bucket()).await?;
                Err(with_status(
                    S3Error::with_message(
                        "NoSuchCORSConfiguration",
                        "The CORS configuration does not exist",
                    ),
                    StatusCode::NOT_FOUND,
                ))
            } else if ctx.has("acl") {
                ctx.api = "GetBucketAcl";
                gw.layer.head_bucket(ctx.bucket()).await?;
                Ok(acl_response(ctx))
            } else if ctx.q("list-type") == Some("2") {
                ctx.api = "ListObjectsV2";
                list::list_objects(gw, ctx, true).await
            } else if let Some(t) = ctx.q("list-type") {
                let e = S3Error::invalid_argument("Invalid list type", "list-type", t);
                ctx.api = "ListObjects";
                Err(e)
            } else {
                ctx.api = "ListObjects";
                list::list_objects(gw, ctx, false).await
            }
        }
        Method::HEAD => {
            ctx.api = "HeadBucket";
            bucket::head_bucket(gw, ctx).await
        }
        Method::PUT => {
            if ctx.has("versioning") {
                ctx.api = "PutBucketVersioning";
                bucket::put_versioning(gw, ctx).await
            } else if ctx.has("encryption") {
                ctx.api = "PutBucketEncryption";
                bucket::put_encryption(gw, ctx).await
            } else if ctx.has("tagging") {
                ctx.api = "PutBucketTagging";
                tagging::put_bucket(gw, ctx).await
            } else if ctx.has("policy")
                || ctx.has("lifecycle")
                || ctx.has("cors")
                || ctx.has("encryption")
                || ctx.has("object-lock")
                || ctx.has("acl")
            {
                ctx.api = "Unsupported";
                Err(S3Error::with_message(
                    "NotImplemented",
                    "This bucket configuration is not implemented.",
                ))
            } else {
                ctx.api = "CreateBucket";
                bucket::create_bucket(gw, ctx).await
            }
        }
        Method::DELETE => {
            if ctx.has("encryption") {
                ctx.api = "DeleteBucketEncryption";
                bucket::delete_encryption(gw, ctx).await
            } else if ctx.has("tagging") {
                ctx.api = "DeleteBucketTagging";
                tagging::delete_bucket(gw, ctx).await
            } else if ctx.has("policy") || ctx.has("lifecycle") || ctx.has("cors") {
                ctx.api = "Unsupported";
                gw.layer.head_bucket(ctx.bucket()).await?;
                // Nothing is configured, so there is nothing to delete.
                Ok(empty(StatusCode::NO_CONTENT))
            } else {
                ctx.api = "DeleteBucket";
                bucket::delete_bucket(gw, ctx).await
            }
        }
        Method::POST => {
            if ctx.has("delete") {
                ctx.api = "DeleteObjects";
                object::delete_objects(gw, ctx).await
            } else {
                ctx.api = "PostObject";
                Err(S3Error::with_message(
                    "NotImplemented",
                    "Browser POST uploads are not implemented yet.",
                ))
            }
        }
        _ => Err(S3Error::new("MethodNotAllowed")),
    }
}

async fn object_op<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
    method: Method,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    match method {
        Method::GET => {
            if ctx.has("uploadId") {
                ctx.api = "ListParts";
                multipart::list_parts(gw, ctx).await
            } else if ctx.has("acl") {
                ctx.api = "GetObjectAcl";
                object::head_only(gw, ctx).await?;
                Ok(acl_response(ctx))
            } else if ctx.has("tagging") {
                ctx.api = "GetObjectTagging";
                tagging::get(gw, ctx).await
            } else if ctx.has("attributes") {
                ctx.api = "GetObjectAttributes";
                attributes::get_attributes(gw, ctx).await
            } else if ctx.has("retention") || ctx.has("legal-hold") {
                ctx.api = "Unsupported";
                Err(S3Error::with_message(
                    "NotImplemented",
                    "This object sub-resource is not implemented yet.",
                ))
            } else {
                ctx.api = "GetObject";
                object::get_object(gw, ctx, false).await
            }
        }
        Method::HEAD => {
            ctx.api = "HeadObject";
            object::get_object(gw, ctx, true).await
        }
        Method::PUT => {
            if ctx.has("uploadId") || ctx.has("partNumber") {
                if ctx.parts.headers.contains_key("x-amz-copy-source") {
                    ctx.api = "UploadPartCopy";
                    multipart::upload_part_copy(gw, ctx).await
                } else {
                    ctx.api = "UploadPart";
                    multipart::upload_part(gw, ctx).await
                }
            } else if ctx.has("tagging") {
                ctx.api = "PutObjectTagging";
                tagging::put(gw, ctx).await
            } else if ctx.has("acl") || ctx.has("retention") || ctx.has("legal-hold") {
                ctx.api = "Unsupported";
                Err(S3Error::with_message(
                    "NotImplemented",
                    "This object sub-resource is not implemented yet.",
                ))
            } else if ctx.parts.headers.contains_key("x-amz-copy-source") {
                ctx.api = "CopyObject";
                object::copy_object(gw, ctx).await
            } else {
                ctx.api = "PutObject";
                object::put_object(gw, ctx).await
            }
        }
        Method::DELETE => {
            if ctx.has("uploadId") {
                ctx.api = "AbortMultipartUpload";
                multipart::abort(gw, ctx).await
            } else if ctx.has("tagging") {
                ctx.api = "DeleteObjectTagging";
                tagging::delete(gw, ctx).await
            } else {
                ctx.api = "DeleteObject";
                object::delete_object(gw, ctx).await
            }
        }
        Method::POST => {
            if ctx.has("uploads") {
                ctx.api = "CreateMultipartUpload";
                multipart::create(gw, ctx).await
            } else if ctx.has("uploadId") {
                ctx.api = "CompleteMultipartUpload";
                multipart::complete(gw, ctx).await
            } else {
                Err(S3Error::new("MethodNotAllowed"))
            }
        }
        _ => Err(S3Error::new("MethodNotAllowed")),
    }
}

fn with_status(mut e: S3Error, status: StatusCode) -> S3Error {
    e.status = status;
    e
}

/// The canned ACL every bucket and object has: the owner has full control.
fn acl_response<B>(ctx: &Ctx<B>) -> Response<ResponseBody> {
    let (id, name) = owner(&ctx.access_key);
    let mut w = xml::XmlWriter::new();
    w.root("AccessControlPolicy")
        .open("Owner")
        .elem("ID", &id)
        .elem("DisplayName", &name)
        .close("Owner")
        .open("AccessControlList")
        .open("Grant");
    w.open("Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\"")
        .elem("ID", &id)
        .elem("DisplayName", &name)
        .close("Grantee")
        .elem("Permission", "FULL_CONTROL")
        .close("Grant")
        .close("AccessControlList")
        .close("AccessControlPolicy");
    xml_response(StatusCode::OK, w.finish())
}

/// The owner shown in listings: a stable id derived from the access key.
pub(crate) fn owner(access_key: &str) -> (String, String) {
    use sha2::Digest as _;
    (
        hex::encode(sha2::Sha256::digest(access_key.as_bytes())),
        access_key.to_owned(),
    )
}

/// A response with an XML document.
pub(crate) fn xml_response(status: StatusCode, doc: String) -> Response<ResponseBody> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/xml")
        .body(ResponseBody::full(doc))
        .expect("static headers are valid")
}

/// A response without a body.
pub(crate) fn empty(status: StatusCode) -> Response<ResponseBody> {
    let mut r = Response::new(ResponseBody::empty());
    *r.status_mut() = status;
    r
}

/// The request body as a verified reader, with the integrity checks the
/// headers ask for and a size limit.
pub(crate) fn body_reader<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
    limit: (u64, &'static str),
) -> Result<BodyReader<B>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let body = ctx
        .body
        .take()
        .ok_or_else(|| S3Error::internal("request body taken twice"))?;
    let payload = ctx.payload.take().unwrap_or(Payload::Unsigned);
    let content_md5 = match ctx.parts.headers.get("content-md5") {
        None => None,
        Some(v) => {
            let d = v
                .to_str()
                .ok()
                .and_then(base64_decode)
                .filter(|d| d.len() == 16)
                .ok_or_else(|| S3Error::new("InvalidDigest"))?;
            let mut m = [0u8; 16];
            m.copy_from_slice(&d);
            Some(m)
        }
    };
    let mut checksum = None;
    for alg in ChecksumAlgorithm::ALL {
        if let Some(v) = ctx.parts.headers.get(alg.header_name()) {
            let v = v.to_str().unwrap_or("");
            if !alg.is_valid_value(v) {
                return Err(S3Error::with_message(
                    "InvalidRequest",
                    format!("Value for {} header is invalid.", alg.header_name()),
                ));
            }
            if checksum.is_some() {
                return Err(S3Error::with_message(
                    "InvalidRequest",
                    "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.",
                ));
            }
            checksum = Some((alg, Expected::Header(v.to_owned())));
        }
    }
    // The trailer checksum: one, as S3 takes one checksum per request (two
    // announced, or a header and a trailer, would leave one unchecked).
    let trailers: Vec<ChecksumAlgorithm> = ctx
        .parts
        .headers
        .get_all("x-amz-trailer")
        .iter()
        .flat_map(|v| v.to_str().unwrap_or("").split(','))
        .filter_map(|n| ChecksumAlgorithm::from_header_name(n.trim()))
        .collect();
    match (trailers.as_slice(), &checksum) {
        ([], _) => {}
        ([alg], None) => checksum = Some((*alg, Expected::Trailer)),
        _ => {
            return Err(S3Error::with_message(
                "InvalidRequest",
                "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.",
            ));
        }
    }
    let _ = gw;
    Ok(BodyReader::new(
        body,
        BodyChecks {
            payload,
            content_md5,
            checksum,
            limit,
            idle_timeout: gw.config.limits.body_idle_timeout,
            min_rate: (gw.config.limits.body_min_rate > 0)
                .then_some((gw.config.limits.body_min_rate, gw.config.limits.body_grace)),
        },
    ))
}

/// Reads and parses an XML request document.
pub(crate) async fn read_xml<B>(gw: &Gateway, ctx: &mut Ctx<B>) -> Result<Element, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let mut r = body_reader(
        gw,
        ctx,
        (gw.config.limits.max_xml_bytes, "MaxMessageLengthExceeded"),
    )?;
    let data = read_to_vec(&mut r).await;
    ctx.bytes_in += r.raw_len();
    let data = data?;
    xml::parse(&data)
}

/// Reads the (normally empty) body of a request that carries none; bounded.
pub(crate) async fn read_small_body<B>(gw: &Gateway, ctx: &mut Ctx<B>) -> Result<Vec<u8>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let mut r = body_reader(
        gw,
        ctx,
        (gw.config.limits.max_xml_bytes, "MaxMessageLengthExceeded"),
    )?;
    let data = read_to_vec(&mut r).await;
    ctx.bytes_in += r.raw_len();
    data
}

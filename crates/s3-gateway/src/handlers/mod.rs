//! S3 operations, dispatched on method, bucket/key presence and the
//! sub-resource named in the query.

mod acl;
mod attributes;
mod bucket;
mod conditional;
pub(crate) mod cors;
pub(crate) mod fuzzing;
mod lifecycle;
mod list;
mod lock;
mod multipart;
mod object;
mod parsed;
mod policy;
mod post;
mod tagging;

pub(crate) use object::copy_source;
pub(crate) use parsed::ParsedConfigs;
pub(crate) use post::{boundary as post_boundary, post_object};
pub(crate) use tagging::{TAGGING_KEY, parse_query as parse_tags};

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body::Body;

use crate::auth::{ChecksumAlgorithm, Payload};
use crate::body::{BodyChecks, BodyReader, Expected, ResponseBody, read_to_vec};
use crate::checksum::base64_decode;
use crate::error::S3Error;
use crate::router::{Op, UNSUPPORTED_BUCKET};
use crate::service::{Ctx, Gateway};
use crate::xml::{self, Element};

/// Serves `op`, which the request resolved to and is authorised for.
pub(crate) async fn dispatch<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
    op: Op,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    match op {
        Op::ListBuckets => bucket::list_buckets(gw, ctx).await,
        Op::GetBucketLocation => bucket::get_location(gw, ctx).await,
        Op::GetBucketVersioning => bucket::get_versioning(gw, ctx).await,
        Op::ListMultipartUploads => multipart::list_uploads(gw, ctx).await,
        Op::ListObjectVersions => list::list_versions(gw, ctx).await,
        Op::GetBucketPolicy => policy::get(gw, ctx).await,
        Op::GetBucketPolicyStatus => policy::get_status(gw, ctx).await,
        Op::PutBucketPolicy => policy::put(gw, ctx).await,
        Op::DeleteBucketPolicy => policy::delete(gw, ctx).await,
        Op::GetObjectLockConfiguration => lock::get_config(gw, ctx).await,
        Op::GetBucketEncryption => bucket::get_encryption(gw, ctx).await,
        Op::GetBucketTagging => tagging::get_bucket(gw, ctx).await,
        Op::GetBucketLifecycle => lifecycle::get(gw, ctx).await,
        Op::GetBucketCors => cors::get(gw, ctx).await,
        Op::GetBucketAcl => {
            gw.layer.head_bucket(ctx.bucket()).await?;
            Ok(acl::get(ctx))
        }
        Op::PutBucketAcl => {
            gw.layer.head_bucket(ctx.bucket()).await?;
            acl::put(gw, ctx).await
        }
        Op::GetBucketOwnershipControls => acl::get_ownership(gw, ctx).await,
        Op::PutBucketOwnershipControls => acl::put_ownership(gw, ctx).await,
        Op::ListObjectsV2 => list::list_objects(gw, ctx, true).await,
        Op::ListObjects => list::list_objects(gw, ctx, false).await,
        Op::HeadBucket => bucket::head_bucket(gw, ctx).await,
        Op::PutBucketVersioning => bucket::put_versioning(gw, ctx).await,
        Op::PutBucketEncryption => bucket::put_encryption(gw, ctx).await,
        Op::PutBucketTagging => tagging::put_bucket(gw, ctx).await,
        Op::PutObjectLockConfiguration => lock::put_config(gw, ctx).await,
        Op::PutBucketCors => cors::put(gw, ctx).await,
        Op::PutBucketLifecycle => lifecycle::put(gw, ctx).await,
        Op::CreateBucket => {
            acl::check_headers(ctx)?;
            bucket::create_bucket(gw, ctx).await
        }
        Op::DeleteBucketEncryption => bucket::delete_encryption(gw, ctx).await,
        Op::DeleteBucketTagging => tagging::delete_bucket(gw, ctx).await,
        Op::DeleteBucketCors => cors::delete(gw, ctx).await,
        Op::DeleteBucketLifecycle => lifecycle::delete(gw, ctx).await,
        Op::DeleteBucket => bucket::delete_bucket(gw, ctx).await,
        Op::DeleteObjects => object::delete_objects(gw, ctx).await,
        // Browser uploads are served by `post_object` before the
        // signature in the head is checked; a form reaching here has no
        // boundary.
        Op::PostObject => Err(S3Error::with_message(
            "MalformedPOSTRequest",
            "The body of your POST request is not well-formed multipart/form-data.",
        )),
        Op::UnsupportedBucketCall => {
            let what = UNSUPPORTED_BUCKET.iter().find(|s| ctx.has(s)).map_or_else(
                || format!("{} on a bucket", ctx.parts.method),
                |s| format!("The bucket sub-resource '{s}'"),
            );
            Err(S3Error::with_message(
                "NotImplemented",
                format!("{what} is not implemented."),
            ))
        }
        Op::ListParts => multipart::list_parts(gw, ctx).await,
        Op::GetObjectAcl => {
            object::head_only(gw, ctx).await?;
            Ok(acl::get(ctx))
        }
        Op::PutObjectAcl => {
            object::head_only(gw, ctx).await?;
            acl::put(gw, ctx).await
        }
        Op::GetObjectTagging => tagging::get(gw, ctx).await,
        Op::GetObjectAttributes => attributes::get_attributes(gw, ctx).await,
        Op::GetObjectRetention => lock::get_retention(gw, ctx).await,
        Op::GetObjectLegalHold => lock::get_legal_hold(gw, ctx).await,
        Op::PutObjectRetention => lock::put_retention(gw, ctx).await,
        Op::PutObjectLegalHold => lock::put_legal_hold(gw, ctx).await,
        Op::GetObject => object::get_object(gw, ctx, false).await,
        Op::HeadObject => object::get_object(gw, ctx, true).await,
        Op::UploadPartCopy => multipart::upload_part_copy(gw, ctx).await,
        Op::UploadPart => multipart::upload_part(gw, ctx).await,
        Op::PutObjectTagging => tagging::put(gw, ctx).await,
        Op::CopyObject => {
            acl::check_headers(ctx)?;
            object::copy_object(gw, ctx).await
        }
        Op::PutObject => {
            acl::check_headers(ctx)?;
            object::put_object(gw, ctx).await
        }
        Op::AbortMultipartUpload => multipart::abort(gw, ctx).await,
        Op::DeleteObjectTagging => tagging::delete(gw, ctx).await,
        Op::DeleteObject => object::delete_object(gw, ctx).await,
        Op::CreateMultipartUpload => {
            acl::check_headers(ctx)?;
            multipart::create(gw, ctx).await
        }
        Op::CompleteMultipartUpload => multipart::complete(gw, ctx).await,
    }
}

/// Calls whose body S3 requires Content-MD5 or an `x-amz-checksum-*` of
/// (object lock, CORS and lifecycle configurations): the body reader
/// verifies whichever is given.
fn require_integrity<B>(ctx: &Ctx<B>) -> Result<(), S3Error> {
    let h = &ctx.parts.headers;
    let has_checksum = h.contains_key("content-md5")
        || h.keys().any(|k| k.as_str().starts_with("x-amz-checksum-"))
        || h.get("x-amz-trailer")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("x-amz-checksum-"));
    if has_checksum {
        Ok(())
    } else {
        Err(S3Error::with_message(
            "MissingContentMD5",
            "Missing required header for this request: Content-MD5 or x-amz-checksum-*",
        ))
    }
}

/// The body of a call that must carry Content-MD5 or a checksum
/// ([`require_integrity`]), read and verified.
pub(crate) async fn checked_body<B>(gw: &Gateway, ctx: &mut Ctx<B>) -> Result<Vec<u8>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    require_integrity(ctx)?;
    read_small_body(gw, ctx).await
}

/// [`checked_body`] parsed as XML whose root is one of `roots`.
pub(crate) async fn checked_doc<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
    roots: &[&str],
) -> Result<Element, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let doc = xml::parse(&checked_body(gw, ctx).await?)?;
    if roots.contains(&doc.name.as_str()) {
        Ok(doc)
    } else {
        Err(S3Error::new("MalformedXML"))
    }
}

fn with_status(mut e: S3Error, status: StatusCode) -> S3Error {
    e.status = status;
    e
}

/// The canned ACL every bucket and object has: the owner has full control.
pub(crate) fn acl_response<B>(ctx: &Ctx<B>) -> Response<ResponseBody> {
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

//! Access control lists as S3 has them under Object Ownership "bucket owner
//! enforced" (the default of new AWS buckets, and the only mode here):
//! ACLs grant nothing, the bucket owner owns every object, access is
//! decided by policies alone. Reading an ACL answers the owner's full
//! control; setting one is accepted when it says just that (`private`,
//! `bucket-owner-full-control`, or a document granting only the owner
//! `FULL_CONTROL`) and refused with `AccessControlListNotSupported`
//! otherwise, as S3 refuses it.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body::Body;

use super::{acl_response, empty, owner, read_small_body, xml_response};
use crate::body::ResponseBody;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};
use crate::xml::XmlWriter;

/// The canned ACLs that grant no more than the owner's full control.
const OWNER_ONLY: &[&str] = &["private", "bucket-owner-full-control"];

fn not_supported() -> S3Error {
    S3Error::with_message(
        "AccessControlListNotSupported",
        "The bucket does not allow ACLs",
    )
}

/// Refuses a request whose ACL headers grant more than the owner's full
/// control (PUT, copy, multipart create, bucket creation, ACL calls).
pub(crate) fn check_headers<B>(ctx: &Ctx<B>) -> Result<(), S3Error> {
    if let Some(acl) = ctx.parts.headers.get("x-amz-acl") {
        let v = acl.to_str().unwrap_or("").trim();
        if !OWNER_ONLY.contains(&v) {
            return Err(not_supported());
        }
    }
    let grants = ctx
        .parts
        .headers
        .keys()
        .any(|n| n.as_str().starts_with("x-amz-grant-"));
    if grants {
        return Err(not_supported());
    }
    Ok(())
}

/// A browser POST form's `acl` field.
pub(crate) fn check_form_acl(acl: Option<&str>) -> Result<(), S3Error> {
    match acl {
        None => Ok(()),
        Some(v) if OWNER_ONLY.contains(&v.trim()) => Ok(()),
        Some(_) => Err(not_supported()),
    }
}

/// `PUT ?acl` on a bucket or an object (which the caller has found): the
/// header or the document must grant only the owner's full control.
pub(crate) async fn put<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    check_headers(ctx)?;
    let canned = ctx.parts.headers.contains_key("x-amz-acl");
    let body = read_small_body(gw, ctx).await?;
    if body.iter().all(u8::is_ascii_whitespace) {
        if canned {
            return Ok(empty(StatusCode::OK));
        }
        return Err(S3Error::new("MissingSecurityHeader"));
    }
    if canned {
        // S3: a canned ACL and a document are exclusive.
        return Err(S3Error::with_message(
            "UnexpectedContent",
            "This request does not support content",
        ));
    }
    let doc = crate::xml::parse(&body)?;
    if doc.name != "AccessControlPolicy" {
        return Err(S3Error::new("MalformedACLError"));
    }
    let (owner_id, _) = owner(&ctx.access_key);
    let list = doc
        .child("AccessControlList")
        .ok_or_else(|| S3Error::new("MalformedACLError"))?;
    let mut grants = 0;
    for g in list.children.iter().filter(|c| c.name == "Grant") {
        grants += 1;
        let permission = g.child("Permission").map(|p| p.text.trim()).unwrap_or("");
        let grantee = g
            .child("Grantee")
            .ok_or_else(|| S3Error::new("MalformedACLError"))?;
        let id = grantee.child("ID").map(|i| i.text.trim()).unwrap_or("");
        if permission != "FULL_CONTROL" || id != owner_id {
            return Err(not_supported());
        }
    }
    if grants > 1 {
        return Err(not_supported());
    }
    Ok(empty(StatusCode::OK))
}

/// `GET ?acl`: the owner's full control.
pub(crate) fn get<B>(ctx: &Ctx<B>) -> Response<ResponseBody> {
    acl_response(ctx)
}

/// `GET ?ownershipControls`.
pub(crate) async fn get_ownership<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    gw.layer.head_bucket(ctx.bucket()).await?;
    let mut w = XmlWriter::new();
    w.root("OwnershipControls")
        .open("Rule")
        .elem("ObjectOwnership", "BucketOwnerEnforced")
        .close("Rule")
        .close("OwnershipControls");
    Ok(xml_response(StatusCode::OK, w.finish()))
}

/// `PUT ?ownershipControls`: `BucketOwnerEnforced` is accepted (it is
/// what every bucket has); the modes that make ACLs grant access are not
/// supported.
pub(crate) async fn put_ownership<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    gw.layer.head_bucket(ctx.bucket()).await?;
    let body = read_small_body(gw, ctx).await?;
    let doc = crate::xml::parse(&body)?;
    let rules: Vec<_> = doc.children.iter().filter(|c| c.name == "Rule").collect();
    let [rule] = rules.as_slice() else {
        return Err(S3Error::new("MalformedXML"));
    };
    match rule.child("ObjectOwnership").map(|o| o.text.trim()) {
        Some("BucketOwnerEnforced") => Ok(empty(StatusCode::OK)),
        Some("BucketOwnerPreferred" | "ObjectWriter") => Err(S3Error::with_message(
            "InvalidRequest",
            "Only the BucketOwnerEnforced object ownership is supported: ACLs grant no access here",
        )),
        _ => Err(S3Error::new("MalformedXML")),
    }
}

//! Object lock over S3: the bucket's lock configuration, a version's
//! retention and legal hold, the `x-amz-object-lock-*` headers of writes
//! and reads, and the governance bypass of deletes. The rules themselves
//! are the object layer's ([`object::layer::worm`]); this module reads and
//! writes S3's documents and headers and checks the permissions S3 ties to
//! them.

use std::time::SystemTime;

use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use http_body::Body;
use object::layer::ObjectInfo;
use object::layer::worm::{
    self, LEGAL_HOLD, LOCK_MODE, LOCK_UNTIL, ObjectLockConfig, Retention, RetentionMode,
    RetentionPeriod, VersionLock,
};

use super::object::version_param;
use super::{checked_doc, empty, with_status, xml_response};
use crate::body::ResponseBody;
use crate::error::S3Error;
use crate::service::{Ctx, Gateway};
use crate::xml::{Element, XmlWriter};

/// S3's header asking to bypass governance retention.
const BYPASS: &str = "x-amz-bypass-governance-retention";

fn invalid(msg: &str) -> S3Error {
    S3Error::with_message("InvalidRequest", msg)
}

/// A version without the retention or legal hold asked for.
fn no_lock_of_version() -> S3Error {
    with_status(
        S3Error::with_message(
            "NoSuchObjectLockConfiguration",
            "The specified object does not have a ObjectLock configuration",
        ),
        StatusCode::NOT_FOUND,
    )
}

fn not_enabled() -> S3Error {
    invalid("Bucket is missing ObjectLockConfiguration")
}

/// Whether the request asks to bypass governance retention and its
/// requester may (`s3:BypassGovernanceRetention`); a request that asks
/// without the permission is refused only where the bypass is needed.
pub(super) async fn bypass<B: Body>(
    gw: &Gateway,
    ctx: &Ctx<B>,
    key: &str,
) -> Result<bool, S3Error> {
    if !ctx
        .header(BYPASS)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        return Ok(false);
    }
    crate::authz::allowed(
        gw,
        ctx,
        &ctx.requester,
        "s3:BypassGovernanceRetention",
        ctx.bucket(),
        Some(key),
    )
    .await
}

/// `GET /b?object-lock`.
pub(super) async fn get_config<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    match gw.layer.bucket_object_lock(ctx.bucket()).await? {
        Some(cfg) => {
            let mut doc = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
            doc.push_str(&cfg.to_xml());
            Ok(xml_response(StatusCode::OK, doc))
        }
        None => Err(with_status(
            S3Error::with_message(
                "ObjectLockConfigurationNotFoundError",
                "Object Lock configuration does not exist for this bucket",
            ),
            StatusCode::NOT_FOUND,
        )),
    }
}

/// `PUT /b?object-lock`.
pub(super) async fn put_config<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let doc = checked_doc(gw, ctx, &["ObjectLockConfiguration"]).await?;
    let cfg = parse_config(&doc)?;
    gw.layer.set_bucket_object_lock(ctx.bucket(), cfg).await?;
    Ok(empty(StatusCode::OK))
}

/// An `ObjectLockConfiguration` document, validated as S3 validates it.
fn parse_config(doc: &Element) -> Result<ObjectLockConfig, S3Error> {
    if doc.child_text("ObjectLockEnabled").map(str::trim) != Some("Enabled") {
        return Err(S3Error::new("MalformedXML"));
    }
    let Some(rule) = doc.child("Rule") else {
        return Ok(ObjectLockConfig::default());
    };
    let dr = rule
        .child("DefaultRetention")
        .ok_or_else(|| S3Error::new("MalformedXML"))?;
    let mode = dr
        .child_text("Mode")
        .and_then(|m| RetentionMode::parse(m.trim()))
        .ok_or_else(|| S3Error::new("MalformedXML"))?;
    let period_err = |what: &str| {
        S3Error::with_message(
            "InvalidRetentionPeriod",
            format!(
                "Default retention period must be a positive integer value for '{what}' (at most 36500 days or 100 years)"
            ),
        )
    };
    let period = match (dr.child_text("Days"), dr.child_text("Years")) {
        (Some(d), None) => RetentionPeriod::Days(
            d.trim()
                .parse()
                .ok()
                .filter(|d| (1..=worm::MAX_DEFAULT_DAYS).contains(d))
                .ok_or_else(|| period_err("Days"))?,
        ),
        (None, Some(y)) => RetentionPeriod::Years(
            y.trim()
                .parse()
                .ok()
                .filter(|y| (1..=worm::MAX_DEFAULT_YEARS).contains(y))
                .ok_or_else(|| period_err("Years"))?,
        ),
        _ => return Err(S3Error::new("MalformedXML")),
    };
    Ok(ObjectLockConfig {
        default_retention: Some((mode, period)),
    })
}

/// `GET /b/k?retention`.
pub(super) async fn get_retention<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    let info = head_locked(gw, ctx).await?;
    let Some(r) = VersionLock::of(&info.metadata).retention else {
        return Err(no_lock_of_version());
    };
    let mut w = XmlWriter::new();
    w.root("Retention")
        .elem("Mode", r.mode.as_str())
        .elem("RetainUntilDate", &worm::format_iso8601(r.until))
        .close("Retention");
    Ok(xml_response(StatusCode::OK, w.finish()))
}

/// `GET /b/k?legal-hold`.
pub(super) async fn get_legal_hold<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error> {
    let info = head_locked(gw, ctx).await?;
    let Some(on) = VersionLock::of(&info.metadata).legal_hold else {
        return Err(no_lock_of_version());
    };
    let mut w = XmlWriter::new();
    w.root("LegalHold")
        .elem("Status", if on { "ON" } else { "OFF" })
        .close("LegalHold");
    Ok(xml_response(StatusCode::OK, w.finish()))
}

/// The version a retention or legal-hold read addresses, in a bucket with
/// object lock.
async fn head_locked<B>(gw: &Gateway, ctx: &Ctx<B>) -> Result<ObjectInfo, S3Error> {
    let version = version_param(ctx)?;
    if gw.layer.bucket_object_lock(ctx.bucket()).await?.is_none() {
        return Err(not_enabled());
    }
    let info = gw
        .layer
        .head_object(ctx.bucket(), ctx.key(), version)
        .await?;
    if info.delete_marker {
        return Err(S3Error::new("MethodNotAllowed").header("x-amz-delete-marker", "true"));
    }
    Ok(info)
}

/// `PUT /b/k?retention`.
pub(super) async fn put_retention<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let version = version_param(ctx)?;
    let doc = checked_doc(gw, ctx, &["Retention"]).await?;
    let mode = doc
        .child_text("Mode")
        .map(str::trim)
        .filter(|m| !m.is_empty());
    let date = doc
        .child_text("RetainUntilDate")
        .map(str::trim)
        .filter(|d| !d.is_empty());
    let retention = match (mode, date) {
        (None, None) => None,
        (Some(m), Some(d)) => Some(retention_of(m, d)?),
        _ => return Err(S3Error::new("MalformedXML")),
    };
    let key = ctx.key().to_owned();
    let bypass = bypass(gw, ctx, &key).await?;
    let info = gw
        .layer
        .put_object_retention(ctx.bucket(), &key, version, retention, bypass)
        .await?;
    Ok(versioned_ok(&info))
}

/// `PUT /b/k?legal-hold`.
pub(super) async fn put_legal_hold<B>(
    gw: &Gateway,
    ctx: &mut Ctx<B>,
) -> Result<Response<ResponseBody>, S3Error>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    let version = version_param(ctx)?;
    let doc = checked_doc(gw, ctx, &["LegalHold", "ObjectLockLegalHold"]).await?;
    let on = match doc.child_text("Status").map(str::trim) {
        Some("ON") => true,
        Some("OFF") => false,
        _ => return Err(S3Error::new("MalformedXML")),
    };
    let info = gw
        .layer
        .put_object_legal_hold(ctx.bucket(), ctx.key(), version, on)
        .await?;
    Ok(versioned_ok(&info))
}

fn versioned_ok(info: &ObjectInfo) -> Response<ResponseBody> {
    let mut r = empty(StatusCode::OK);
    if let Some(v) = info.version_id
        && let Ok(h) = http::HeaderValue::from_str(&v.to_string())
    {
        r.headers_mut().insert("x-amz-version-id", h);
    }
    r
}

/// A retention from its mode and date, refusing what S3 refuses: an
/// unknown mode, a date that is not ISO 8601, a date in the past.
fn retention_of(mode: &str, date: &str) -> Result<Retention, S3Error> {
    let mode = RetentionMode::parse(mode).ok_or_else(|| invalid("unknown wormMode directive"))?;
    let until = worm::parse_iso8601(date)
        .ok_or_else(|| invalid("Date must be provided in ISO 8601 format"))?;
    if until <= SystemTime::now() {
        return Err(invalid("the retain until date must be in the future"));
    }
    Ok(Retention { mode, until })
}

/// The lock entries a write asks for with its `x-amz-object-lock-*`
/// headers (PUT, copy, multipart create), validated, with the permissions
/// S3 ties to them (`s3:PutObjectRetention`, `s3:PutObjectLegalHold`). The
/// object layer refuses them on a bucket without object lock and adds the
/// bucket's default retention when a write asks for none.
pub(super) async fn write_entries<B: Body>(
    gw: &Gateway,
    ctx: &Ctx<B>,
    key: &str,
) -> Result<Vec<(String, String)>, S3Error> {
    write_entries_from(gw, ctx, &ctx.parts.headers, key).await
}

/// [`write_entries`] from the fields of a browser upload's form, given as
/// headers.
pub(super) async fn write_entries_from<B: Body>(
    gw: &Gateway,
    ctx: &Ctx<B>,
    h: &HeaderMap,
    key: &str,
) -> Result<Vec<(String, String)>, S3Error> {
    let get = |n: &str| h.get(n).map(|v| v.to_str().unwrap_or("\u{0}").trim());
    let mut out = Vec::new();
    let (mode, date) = (get(LOCK_MODE), get(LOCK_UNTIL));
    if mode.is_some() || date.is_some() {
        let (Some(mode), Some(date)) = (mode, date) else {
            return Err(invalid(
                "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied",
            ));
        };
        let r = retention_of(mode, date)?;
        if !crate::authz::allowed(
            gw,
            ctx,
            &ctx.requester,
            "s3:PutObjectRetention",
            ctx.bucket(),
            Some(key),
        )
        .await?
        {
            return Err(S3Error::new("AccessDenied"));
        }
        out.push((LOCK_MODE.to_owned(), r.mode.as_str().to_owned()));
        out.push((LOCK_UNTIL.to_owned(), worm::format_iso8601(r.until)));
    }
    if let Some(hold) = get(LEGAL_HOLD) {
        let v = match hold {
            "ON" => "ON",
            "OFF" => "OFF",
            _ => return Err(invalid("unknown wormMode directive")),
        };
        if !crate::authz::allowed(
            gw,
            ctx,
            &ctx.requester,
            "s3:PutObjectLegalHold",
            ctx.bucket(),
            Some(key),
        )
        .await?
        {
            return Err(S3Error::new("AccessDenied"));
        }
        out.push((LEGAL_HOLD.to_owned(), v.to_owned()));
    }
    Ok(out)
}

/// The lock headers of a GET or HEAD answer, from the version's metadata.
pub(super) fn response_headers(h: &mut HeaderMap, info: &ObjectInfo) {
    let lock = VersionLock::of(&info.metadata);
    let mut put = |n: &'static str, v: &str| {
        if let Ok(v) = http::HeaderValue::from_str(v) {
            h.insert(n, v);
        }
    };
    if let Some(r) = lock.retention {
        put(LOCK_MODE, r.mode.as_str());
        put(LOCK_UNTIL, &worm::format_iso8601(r.until));
    }
    if let Some(on) = lock.legal_hold {
        put(LEGAL_HOLD, if on { "ON" } else { "OFF" });
    }
}

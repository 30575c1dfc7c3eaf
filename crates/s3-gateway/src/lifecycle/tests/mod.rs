//! Tests of the lifecycle configuration: validation with S3's errors, the
//! GET document and its round trip, evaluation at exact instants.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Lifecycle;
use crate::error::S3Error;

mod dates;
mod eval;
mod parse;

/// A UTC instant from its calendar fields (years from 1970 on).
fn at(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64) -> SystemTime {
    let secs = crate::auth::days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s;
    UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).expect("after 1970"))
}

/// One nanosecond, the step from "not yet" to "due".
const NS: Duration = Duration::from_nanos(1);

/// A configuration document around `rules`.
fn doc(rules: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
         <LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{rules}</LifecycleConfiguration>"
    )
}

/// The configuration of `rules`, which must be valid.
fn lc(rules: &str) -> Lifecycle {
    match Lifecycle::parse(doc(rules).as_bytes()) {
        Ok(l) => l,
        Err(e) => panic!("{rules}: {e}"),
    }
}

/// The error `rules` make, which must be invalid.
fn err(rules: &str) -> S3Error {
    match Lifecycle::parse(doc(rules).as_bytes()) {
        Ok(l) => panic!("{rules} parsed as {l:?}"),
        Err(e) => e,
    }
}

/// A V2 rule with `body` (filter and actions), enabled, with an ID.
fn rule(id: &str, body: &str) -> String {
    format!("<Rule><ID>{id}</ID><Status>Enabled</Status>{body}</Rule>")
}

/// Asserts an error's code and exact message.
#[track_caller]
fn assert_err(e: &S3Error, code: &str, message: &str) {
    assert_eq!((e.code, e.message.as_str()), (code, message), "{e:?}");
    assert_eq!(e.status, http::StatusCode::BAD_REQUEST);
}

//! Conditional writes (`If-None-Match: *` and `If-Match: <etag>` on
//! PutObject and CompleteMultipartUpload), as S3 has them: the headers
//! become a [`Precondition`] the object layer checks under the object's
//! write lock at commit time, so of racing conditional writers at most one
//! sees its condition hold.

use http::HeaderMap;
use object::layer::{CompleteOptions, ObjectInfo, Precondition};

use crate::error::S3Error;
use crate::service::{Ctx, Gateway};

/// Longest `If-Match` value taken (an ETag is at most 32 hex digits, a
/// dash and a part count, in quotes).
const MAX_ETAG_LEN: usize = 128;

/// The precondition of a write request, if it has one.
pub(super) fn write_precondition(headers: &HeaderMap) -> Result<Option<Precondition>, S3Error> {
    let get = |name: &str| -> Result<Option<&str>, S3Error> {
        match headers.get(name) {
            None => Ok(None),
            Some(v) => v
                .to_str()
                .map(|s| Some(s.trim()))
                .map_err(|_| S3Error::invalid_argument("Invalid header value", name, "")),
        }
    };
    match (get("if-none-match")?, get("if-match")?) {
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(S3Error::with_message(
            "NotImplemented",
            "A conditional write takes one of If-Match and If-None-Match, not both",
        )),
        // S3 takes only `*` here: "no object under this key".
        (Some("*"), None) => Ok(Some(Precondition::Absent)),
        (Some(_), None) => Err(S3Error::with_message(
            "NotImplemented",
            "If-None-Match on a write takes only the value *",
        )),
        (None, Some(v)) => {
            if v.is_empty() || v.len() > MAX_ETAG_LEN {
                return Err(S3Error::invalid_argument(
                    "Invalid If-Match value",
                    "If-Match",
                    "",
                ));
            }
            Ok(Some(Precondition::EtagMatches(v.to_owned())))
        }
    }
}

/// Completes upload `id` of the request's key with `parts`, under the
/// request's precondition.
pub(super) async fn complete<B>(
    gw: &Gateway,
    ctx: &Ctx<B>,
    id: &str,
    parts: &[(i64, String)],
    checksum: Option<object::layer::PartsChecksum>,
) -> Result<ObjectInfo, S3Error> {
    let opts = CompleteOptions {
        precondition: write_precondition(&ctx.parts.headers)?,
        checksum,
    };
    Ok(gw
        .layer
        .complete_multipart_upload_with(ctx.bucket(), ctx.key(), id, parts, &opts)
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn headers_become_preconditions() {
        assert_eq!(write_precondition(&headers(&[])).unwrap(), None);
        assert_eq!(
            write_precondition(&headers(&[("if-none-match", "*")])).unwrap(),
            Some(Precondition::Absent)
        );
        assert_eq!(
            write_precondition(&headers(&[("if-match", "\"abc\"")])).unwrap(),
            Some(Precondition::EtagMatches("\"abc\"".into()))
        );
    }

    #[test]
    fn unsupported_forms_are_refused() {
        let e = write_precondition(&headers(&[("if-none-match", "\"abc\"")])).unwrap_err();
        assert_eq!(e.code, "NotImplemented");
        let both = headers(&[("if-none-match", "*"), ("if-match", "x")]);
        assert_eq!(
            write_precondition(&both).unwrap_err().code,
            "NotImplemented"
        );
        let long = "a".repeat(MAX_ETAG_LEN + 1);
        let e = write_precondition(&headers(&[("if-match", &long)])).unwrap_err();
        assert_eq!(e.code, "InvalidArgument");
    }
}

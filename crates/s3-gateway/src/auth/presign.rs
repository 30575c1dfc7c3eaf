//! Parsing of the `X-Amz-*` query parameters of a presigned URL.

use super::AuthLimits;
use super::canonical::Query;
use super::error::AuthError;
use super::header::{parse_credential, parse_signed_headers};
use super::signing::{ALGORITHM, CredentialScope, Signature};
use super::time::Timestamp;

pub(crate) const X_AMZ_ALGORITHM: &str = "X-Amz-Algorithm";
pub(crate) const X_AMZ_CREDENTIAL: &str = "X-Amz-Credential";
pub(crate) const X_AMZ_DATE: &str = "X-Amz-Date";
pub(crate) const X_AMZ_EXPIRES: &str = "X-Amz-Expires";
pub(crate) const X_AMZ_SIGNED_HEADERS: &str = "X-Amz-SignedHeaders";
pub(crate) const X_AMZ_SIGNATURE: &str = "X-Amz-Signature";
pub(crate) const X_AMZ_SECURITY_TOKEN: &str = "X-Amz-Security-Token";
pub(crate) const X_AMZ_CONTENT_SHA256: &str = "X-Amz-Content-Sha256";

/// The longest validity of a presigned URL: seven days.
pub const MAX_PRESIGNED_EXPIRES: u64 = 604_800;

/// Whether the query carries SigV4 query authentication.
pub(crate) fn is_presigned(query: &Query) -> bool {
    [
        X_AMZ_ALGORITHM,
        X_AMZ_CREDENTIAL,
        X_AMZ_SIGNATURE,
        X_AMZ_SIGNED_HEADERS,
    ]
    .iter()
    .any(|name| query.contains(name))
}

/// Whether the query carries SigV2 query authentication.
pub(crate) fn is_presigned_v2(query: &Query) -> bool {
    query.contains("AWSAccessKeyId") && query.contains("Signature")
}

#[derive(Debug)]
pub(crate) struct PresignedParams {
    pub(crate) access_key: String,
    pub(crate) scope: CredentialScope,
    pub(crate) date: Timestamp,
    pub(crate) amz_date: String,
    pub(crate) expires: u64,
    pub(crate) signed_headers: Vec<String>,
    pub(crate) signature: Signature,
    pub(crate) security_token: Option<String>,
    pub(crate) content_sha256: Option<String>,
}

const MISSING: &str = "Query-string authentication version 4 requires the X-Amz-Algorithm, \
     X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires \
     parameters.";

/// The single value of `name`, as text; repeated or non-UTF-8 values are
/// errors, absence is `None`.
fn single<'q>(query: &'q Query, name: &'q str) -> Result<Option<&'q str>, AuthError> {
    let mut values = query.values(name);
    let first = values.next();
    if values.next().is_some() {
        return Err(AuthError::query_error(format!(
            "The parameter {name} is repeated."
        )));
    }
    first
        .map(|v| {
            std::str::from_utf8(v)
                .map_err(|_| AuthError::query_error(format!("The parameter {name} is not text.")))
        })
        .transpose()
}

impl PresignedParams {
    pub(crate) fn parse(query: &Query, limits: &AuthLimits) -> Result<Self, AuthError> {
        let required = |name| single(query, name)?.ok_or_else(|| AuthError::query_error(MISSING));
        let algorithm = required(X_AMZ_ALGORITHM)?;
        let credential = required(X_AMZ_CREDENTIAL)?;
        let amz_date = required(X_AMZ_DATE)?;
        let expires = required(X_AMZ_EXPIRES)?;
        let signed_headers = required(X_AMZ_SIGNED_HEADERS)?;
        let signature = required(X_AMZ_SIGNATURE)?;
        if algorithm != ALGORITHM {
            return Err(AuthError::query_error(
                "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"",
            ));
        }
        let (access_key, scope) = parse_credential(credential).map_err(|detail| {
            AuthError::query_error(format!(
                "Error parsing the X-Amz-Credential parameter; {detail}"
            ))
        })?;
        let date = Timestamp::parse_iso8601_basic(amz_date).ok_or_else(|| {
            AuthError::query_error(
                "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"",
            )
        })?;
        let expires = parse_expires(expires)?;
        if signed_headers.len() > limits.max_authorization_len {
            return Err(AuthError::query_error("X-Amz-SignedHeaders is too long."));
        }
        let signed_headers = parse_signed_headers(signed_headers, limits.max_signed_headers)
            .map_err(|detail| {
                AuthError::query_error(format!(
                    "Error parsing the X-Amz-SignedHeaders parameter; {detail}"
                ))
            })?;
        let signature = Signature::from_hex(signature).ok_or_else(|| {
            AuthError::query_error("X-Amz-Signature must be 64 hexadecimal digits.")
        })?;
        let security_token = single(query, X_AMZ_SECURITY_TOKEN)?.map(str::to_owned);
        let content_sha256 = single(query, X_AMZ_CONTENT_SHA256)?.map(str::to_owned);
        Ok(PresignedParams {
            access_key,
            scope,
            date,
            amz_date: amz_date.to_owned(),
            expires,
            signed_headers,
            signature,
            security_token,
            content_sha256,
        })
    }
}

fn parse_expires(text: &str) -> Result<u64, AuthError> {
    if let Some(digits) = text.strip_prefix('-')
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(AuthError::query_error("X-Amz-Expires must be non-negative"));
    }
    if text.is_empty() || text.len() > 19 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AuthError::query_error("X-Amz-Expires should be a number"));
    }
    let mut value = 0u64;
    for b in text.bytes() {
        value = value * 10 + u64::from(b - b'0');
    }
    if value > MAX_PRESIGNED_EXPIRES {
        return Err(AuthError::query_error(
            "X-Amz-Expires must be less than a week (in seconds) that is 604800",
        ));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expires_bounds() {
        assert_eq!(parse_expires("0"), Ok(0));
        assert_eq!(parse_expires("86400"), Ok(86_400));
        assert_eq!(parse_expires("604800"), Ok(604_800));
        assert_eq!(parse_expires("0000604800"), Ok(604_800));
        for (bad, message) in [
            ("604801", "less than a week"),
            ("9999999999999999999", "less than a week"),
            ("99999999999999999999", "should be a number"),
            ("-1", "non-negative"),
            ("-", "should be a number"),
            ("", "should be a number"),
            ("1e3", "should be a number"),
            ("+5", "should be a number"),
        ] {
            let err = parse_expires(bad).unwrap_err();
            assert_eq!(err.code(), "AuthorizationQueryParametersError");
            assert!(err.to_string().contains(message), "{bad}: {err}");
        }
    }

    #[test]
    fn detects_query_authentication() {
        let q = |s| Query::parse(Some(s), 4096, 100).unwrap();
        assert!(is_presigned(&q("X-Amz-Algorithm=AWS4-HMAC-SHA256")));
        assert!(is_presigned(&q("X-Amz-Signature=00")));
        assert!(!is_presigned(&q("x-amz-algorithm=AWS4-HMAC-SHA256")));
        assert!(!is_presigned(&q("prefix=a")));
        assert!(is_presigned_v2(&q(
            "AWSAccessKeyId=a&Signature=b&Expires=1"
        )));
        assert!(!is_presigned_v2(&q("Signature=b")));
    }
}

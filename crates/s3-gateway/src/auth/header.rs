//! Parsing of the `Authorization` header and of the pieces it shares with
//! presigned URLs (the credential and the signed-header list).

use super::AuthLimits;
use super::error::AuthError;
use super::signing::{ALGORITHM, CredentialScope, SCOPE_TERMINATOR, Signature};
use super::time::parse_date_stamp;

/// A parsed `Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationHeader {
    /// The access key of `Credential`.
    pub access_key: String,
    /// The scope of `Credential` (date, region, service).
    pub scope: CredentialScope,
    /// `SignedHeaders`, in their order.
    pub signed_headers: Vec<String>,
    /// `Signature`.
    pub signature: Signature,
}

const MALFORMED_CREDENTIAL: &str = "the Credential is mal-formed; expecting \
     \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".";

impl AuthorizationHeader {
    /// Parses the header value strictly: the algorithm, one or more
    /// spaces, then exactly the three `key=value` components, separated by
    /// commas with optional spaces, in any order. A value longer than
    /// `limits.max_authorization_len` or with more than
    /// `limits.max_signed_headers` signed headers is refused before it is
    /// looked at further.
    ///
    /// Errors: `InvalidRequest` for another mechanism (SigV2 `AWS`, SigV4a),
    /// `AuthorizationHeaderMalformed` for everything else.
    pub fn parse(value: &str, limits: &AuthLimits) -> Result<Self, AuthError> {
        if value.len() > limits.max_authorization_len {
            return Err(AuthError::header_malformed("the header is too long."));
        }
        let (algorithm, rest) = value.split_once(' ').unwrap_or((value, ""));
        if algorithm != ALGORITHM {
            return Err(AuthError::unsupported_mechanism());
        }
        let mut credential = None;
        let mut signed_headers = None;
        let mut signature = None;
        for component in rest.trim_start_matches(' ').split(',') {
            let component = component.trim_matches(' ');
            let (key, val) = component.split_once('=').ok_or_else(|| {
                AuthError::header_malformed(format!(
                    "the component {component:?} is not of the form key=value."
                ))
            })?;
            let slot = match key {
                "Credential" => &mut credential,
                "SignedHeaders" => &mut signed_headers,
                "Signature" => &mut signature,
                _ => {
                    return Err(AuthError::header_malformed(format!(
                        "unknown component {key:?}."
                    )));
                }
            };
            if slot.replace(val).is_some() {
                return Err(AuthError::header_malformed(format!(
                    "the component {key} is repeated."
                )));
            }
        }
        let credential =
            credential.ok_or_else(|| AuthError::header_malformed("missing Credential."))?;
        let signed_headers =
            signed_headers.ok_or_else(|| AuthError::header_malformed("missing SignedHeaders."))?;
        let signature =
            signature.ok_or_else(|| AuthError::header_malformed("missing Signature."))?;
        let (access_key, scope) =
            parse_credential(credential).map_err(AuthError::header_malformed)?;
        let signed_headers = parse_signed_headers(signed_headers, limits.max_signed_headers)
            .map_err(AuthError::header_malformed)?;
        let signature = Signature::from_hex(signature).ok_or_else(|| {
            AuthError::header_malformed("the Signature is not 64 hexadecimal digits.")
        })?;
        Ok(AuthorizationHeader {
            access_key,
            scope,
            signed_headers,
            signature,
        })
    }
}

/// Parses `<access-key>/<YYYYMMDD>/<region>/<service>/aws4_request`. The
/// access key may itself hold `/` (the scope is the last four parts). The
/// error is the detail S3 gives, to be wrapped by the caller.
pub(crate) fn parse_credential(value: &str) -> Result<(String, CredentialScope), String> {
    let mut parts = value.rsplitn(5, '/');
    let (Some(terminator), Some(service), Some(region), Some(date), Some(access_key)) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(MALFORMED_CREDENTIAL.to_owned());
    };
    if access_key.is_empty() || access_key.len() > 128 || !access_key.bytes().all(is_key_byte) {
        return Err(MALFORMED_CREDENTIAL.to_owned());
    }
    if parse_date_stamp(date).is_none() {
        return Err(format!(
            "incorrect date format {date:?}. This date in the credential must be in the format \"yyyyMMdd\"."
        ));
    }
    // An empty region is well formed (madmin-go signs `mc admin` requests
    // so); whether it is accepted is the verifier's decision, with the
    // region it expects.
    if region.len() > 64 || !region.bytes().all(is_scope_byte) {
        return Err(MALFORMED_CREDENTIAL.to_owned());
    }
    if service.is_empty() || service.len() > 64 || !service.bytes().all(is_scope_byte) {
        return Err(MALFORMED_CREDENTIAL.to_owned());
    }
    if terminator != SCOPE_TERMINATOR {
        return Err(format!(
            "incorrect terminal {terminator:?}. This endpoint uses \"{SCOPE_TERMINATOR}\"."
        ));
    }
    Ok((
        access_key.to_owned(),
        CredentialScope::new(date, region, service),
    ))
}

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_graphic() && b != b',' && b != b'='
}

fn is_scope_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}

/// Parses `SignedHeaders`: `;`-separated lowercase header names, none
/// empty or repeated, at most `max` of them.
pub(crate) fn parse_signed_headers(value: &str, max: usize) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = Vec::new();
    for name in value.split(';') {
        if names.len() == max {
            return Err(format!("more than {max} signed headers."));
        }
        let valid = !name.is_empty()
            && name.bytes().all(|b| {
                b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || matches!(
                        b,
                        b'!' | b'#'
                            | b'$'
                            | b'%'
                            | b'&'
                            | b'\''
                            | b'*'
                            | b'+'
                            | b'-'
                            | b'.'
                            | b'^'
                            | b'_'
                            | b'`'
                            | b'|'
                            | b'~'
                    )
            });
        if !valid {
            return Err(format!(
                "the signed header {name:?} is not a lowercase header name."
            ));
        }
        if names.iter().any(|n| n == name) {
            return Err(format!("the signed header {name:?} is repeated."));
        }
        names.push(name.to_owned());
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIG: &str = "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024";

    fn parse(value: &str) -> Result<AuthorizationHeader, AuthError> {
        AuthorizationHeader::parse(value, &AuthLimits::default())
    }

    #[test]
    fn parses_the_documented_header_in_every_spacing() {
        for value in [
            format!(
                "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
                 SignedHeaders=host;range;x-amz-date, Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,\
                 SignedHeaders=host;range;x-amz-date,Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256   Signature={SIG} ,  SignedHeaders=host;range;x-amz-date,\
                 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request"
            ),
        ] {
            let h = parse(&value).unwrap();
            assert_eq!(h.access_key, "AKIAIOSFODNN7EXAMPLE");
            assert_eq!(h.scope, CredentialScope::new("20130524", "us-east-1", "s3"));
            assert_eq!(h.signed_headers, ["host", "range", "x-amz-date"]);
            assert_eq!(h.signature.to_hex(), SIG);
        }
    }

    #[test]
    fn access_keys_may_hold_slashes() {
        let h = parse(&format!(
            "AWS4-HMAC-SHA256 Credential=team/user/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host, Signature={SIG}"
        ))
        .unwrap();
        assert_eq!(h.access_key, "team/user");
    }

    #[test]
    fn refuses_other_mechanisms() {
        for value in [
            "AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=",
            "AWS4-ECDSA-P256-SHA256 Credential=x",
            "Bearer abc",
            "",
            "aws4-hmac-sha256 Credential=x",
        ] {
            let err = parse(value).unwrap_err();
            assert_eq!(err.code(), "InvalidRequest", "{value}");
        }
    }

    #[test]
    fn refuses_malformed_components() {
        let good_cred = "Credential=AKID/20130524/us-east-1/s3/aws4_request";
        let cases = [
            "AWS4-HMAC-SHA256".to_owned(),
            "AWS4-HMAC-SHA256 ".to_owned(),
            format!("AWS4-HMAC-SHA256 {good_cred}, SignedHeaders=host"),
            format!("AWS4-HMAC-SHA256 {good_cred}, Signature={SIG}"),
            format!("AWS4-HMAC-SHA256 SignedHeaders=host, Signature={SIG}"),
            format!(
                "AWS4-HMAC-SHA256 {good_cred}, {good_cred}, SignedHeaders=host, Signature={SIG}"
            ),
            format!("AWS4-HMAC-SHA256 {good_cred}, SignedHeaders=host, Signature={SIG}, Extra=1"),
            format!("AWS4-HMAC-SHA256 {good_cred}, SignedHeaders=host, Signature={SIG},"),
            format!("AWS4-HMAC-SHA256 {good_cred} SignedHeaders=host, Signature={SIG}"),
            format!(
                "AWS4-HMAC-SHA256 {good_cred}, SignedHeaders=host, Signature={}",
                &SIG[2..]
            ),
            format!(
                "AWS4-HMAC-SHA256 {good_cred}, SignedHeaders=host, Signature={}zz",
                &SIG[2..]
            ),
            format!("AWS4-HMAC-SHA256 {good_cred}, SignedHeaders=Host, Signature={SIG}"),
            format!("AWS4-HMAC-SHA256 {good_cred}, SignedHeaders=host;;range, Signature={SIG}"),
            format!("AWS4-HMAC-SHA256 {good_cred}, SignedHeaders=host;host, Signature={SIG}"),
            format!("AWS4-HMAC-SHA256 {good_cred}, SignedHeaders=, Signature={SIG}"),
            format!("AWS4-HMAC-SHA256 {good_cred}, SignedHeaders=ho st, Signature={SIG}"),
            format!(
                "AWS4-HMAC-SHA256 credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3, SignedHeaders=host, Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256 Credential=/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256 Credential=AKID/20131324/us-east-1/s3/aws4_request, SignedHeaders=host, Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256 Credential=AKID/20130524/us east/s3/aws4_request, SignedHeaders=host, Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1//aws4_request, SignedHeaders=host, Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws5_request, SignedHeaders=host, Signature={SIG}"
            ),
        ];
        for value in &cases {
            let err = parse(value).unwrap_err();
            assert_eq!(err.code(), "AuthorizationHeaderMalformed", "{value}: {err}");
            assert_eq!(err.status(), http::StatusCode::BAD_REQUEST);
        }
    }

    #[test]
    fn enforces_its_limits() {
        let limits = AuthLimits {
            max_signed_headers: 3,
            max_authorization_len: 300,
            ..AuthLimits::default()
        };
        let header = |signed: &str| {
            format!(
                "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, \
                 SignedHeaders={signed}, Signature={SIG}"
            )
        };
        assert!(AuthorizationHeader::parse(&header("a;b;c"), &limits).is_ok());
        let err = AuthorizationHeader::parse(&header("a;b;c;d"), &limits).unwrap_err();
        assert!(err.to_string().contains("more than 3"), "{err}");
        let long = header(&"x".repeat(200));
        let err = AuthorizationHeader::parse(&long, &limits).unwrap_err();
        assert!(err.to_string().contains("too long"), "{err}");
    }

    #[test]
    fn an_empty_region_is_left_to_the_verifier() {
        let (key, scope) = parse_credential("AKID/20130524//s3/aws4_request").unwrap();
        assert_eq!(key, "AKID");
        assert_eq!(scope, CredentialScope::new("20130524", "", "s3"));
    }

    #[test]
    fn credential_errors_say_what_s3_says() {
        assert_eq!(
            parse_credential("AKID/2013052/us-east-1/s3/aws4_request").unwrap_err(),
            "incorrect date format \"2013052\". This date in the credential must be in the format \"yyyyMMdd\"."
        );
        assert_eq!(
            parse_credential("AKID/20130524/us-east-1/s3/aws4").unwrap_err(),
            "incorrect terminal \"aws4\". This endpoint uses \"aws4_request\"."
        );
        assert_eq!(
            parse_credential("nothing").unwrap_err(),
            MALFORMED_CREDENTIAL
        );
        assert!(
            parse_credential(&format!(
                "{}/20130524/us-east-1/s3/aws4_request",
                "k".repeat(129)
            ))
            .is_err()
        );
    }
}

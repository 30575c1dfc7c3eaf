//! Bearer tokens of the metrics endpoint, in MinIO's format so that tokens
//! made by `mc admin prometheus generate` keep working: a JWT signed with
//! HMAC-SHA256/384/512 keyed by the secret key of the access key it names
//! (`accessKey`, else `sub`), with `exp` (and `nbf`, `iat` if present)
//! checked against the clock.

use base64::Engine as _;
use hmac::{KeyInit, Mac};
use serde_json::Value;

/// Why a token was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum TokenError {
    Malformed(&'static str),
    UnknownAccessKey,
    BadSignature,
    Expired,
    NotYetValid,
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenError::Malformed(w) => write!(f, "malformed token: {w}"),
            TokenError::UnknownAccessKey => f.write_str("unknown access key"),
            TokenError::BadSignature => f.write_str("signature does not match"),
            TokenError::Expired => f.write_str("token expired"),
            TokenError::NotYetValid => f.write_str("token not valid yet"),
        }
    }
}

/// The longest token accepted (MinIO's parser buffers 64 KiB).
const MAX_TOKEN: usize = 64 * 1024;

/// Checks `token` at `now` (Unix seconds); `secret_of` gives the secret key
/// of an access key. Returns the access key.
pub fn verify(
    token: &str,
    now: i64,
    secret_of: impl Fn(&str) -> Option<String>,
) -> Result<String, TokenError> {
    if token.len() > MAX_TOKEN {
        return Err(TokenError::Malformed("too long"));
    }
    let mut parts = token.split('.');
    let (Some(h), Some(c), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed("not three dot-separated parts"));
    };
    let header: Value = serde_json::from_slice(
        &b64url_decode(h).ok_or(TokenError::Malformed("header is not base64url"))?,
    )
    .map_err(|_| TokenError::Malformed("header is not JSON"))?;
    let alg = match header.get("alg").and_then(Value::as_str) {
        Some("HS256") => Alg::Hs256,
        Some("HS384") => Alg::Hs384,
        Some("HS512") => Alg::Hs512,
        _ => return Err(TokenError::Malformed("alg is not HS256, HS384 or HS512")),
    };
    let claims: Value = serde_json::from_slice(
        &b64url_decode(c).ok_or(TokenError::Malformed("claims are not base64url"))?,
    )
    .map_err(|_| TokenError::Malformed("claims are not JSON"))?;
    let access = claims
        .get("accessKey")
        .and_then(Value::as_str)
        .or_else(|| claims.get("sub").and_then(Value::as_str))
        .ok_or(TokenError::Malformed("no accessKey or sub claim"))?
        .to_owned();
    let sig = b64url_decode(s).ok_or(TokenError::Malformed("signature is not base64url"))?;
    let secret = secret_of(&access).ok_or(TokenError::UnknownAccessKey)?;
    let signed = &token[..h.len() + 1 + c.len()];
    if !alg.verify(secret.as_bytes(), signed.as_bytes(), &sig) {
        return Err(TokenError::BadSignature);
    }
    let num = |name: &str| claims.get(name).and_then(Value::as_f64);
    if let Some(exp) = num("exp")
        && (now as f64) >= exp
    {
        return Err(TokenError::Expired);
    }
    if let Some(nbf) = num("nbf")
        && (now as f64) < nbf
    {
        return Err(TokenError::NotYetValid);
    }
    if let Some(iat) = num("iat")
        && (now as f64) < iat
    {
        return Err(TokenError::NotYetValid);
    }
    Ok(access)
}

/// A token for `access` signed with `secret` (HS512), valid until `exp`
/// (Unix seconds), with the claims `mc admin prometheus generate` writes.
pub fn generate(access: &str, secret: &str, exp: i64) -> String {
    let header = b64url_encode(br#"{"alg":"HS512","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "exp": exp,
        "sub": access,
        "iss": "prometheus",
    });
    let claims = b64url_encode(claims.to_string().as_bytes());
    let signed = format!("{header}.{claims}");
    let sig = Alg::Hs512.sign(secret.as_bytes(), signed.as_bytes());
    format!("{signed}.{}", b64url_encode(&sig))
}

/// The JWT HMACs.
#[derive(Clone, Copy)]
enum Alg {
    Hs256,
    Hs384,
    Hs512,
}

impl Alg {
    fn mac<M: Mac + KeyInit>(key: &[u8], data: &[u8]) -> M {
        // HMAC takes keys of any length: this cannot fail.
        let mut mac = <M as KeyInit>::new_from_slice(key)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(data);
        mac
    }

    /// The tag of `data` under `key`.
    fn sign(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        fn tag<M: Mac + KeyInit>(key: &[u8], data: &[u8]) -> Vec<u8> {
            Alg::mac::<M>(key, data).finalize().into_bytes().to_vec()
        }
        match self {
            Alg::Hs256 => tag::<hmac::Hmac<sha2::Sha256>>(key, data),
            Alg::Hs384 => tag::<hmac::Hmac<sha2::Sha384>>(key, data),
            Alg::Hs512 => tag::<hmac::Hmac<sha2::Sha512>>(key, data),
        }
    }

    /// Whether `tag` is the tag of `data` under `key` (compared in constant
    /// time).
    fn verify(self, key: &[u8], data: &[u8], tag: &[u8]) -> bool {
        fn check<M: Mac + KeyInit>(key: &[u8], data: &[u8], tag: &[u8]) -> bool {
            Alg::mac::<M>(key, data).verify_slice(tag).is_ok()
        }
        match self {
            Alg::Hs256 => check::<hmac::Hmac<sha2::Sha256>>(key, data, tag),
            Alg::Hs384 => check::<hmac::Hmac<sha2::Sha384>>(key, data, tag),
            Alg::Hs512 => check::<hmac::Hmac<sha2::Sha512>>(key, data, tag),
        }
    }
}

/// JWT's base64url: no padding written; bits after the last byte may be
/// set.
const B64URL: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    base64::engine::GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

fn b64url_encode(data: &[u8]) -> String {
    B64URL.encode(data)
}

/// Decodes unpadded base64url (trailing `=` tolerated); `None` on any other
/// character or an impossible length.
fn b64url_decode(s: &str) -> Option<Vec<u8>> {
    B64URL.decode(s.trim_end_matches('=')).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(a: &str) -> Option<String> {
        (a == "admin").then(|| "secret-key-123".to_owned())
    }

    #[test]
    fn base64url_round_trip() {
        for len in 0..40 {
            let data: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(b64url_decode(&b64url_encode(&data)).unwrap(), data);
        }
        assert_eq!(b64url_encode(b"hello?>"), "aGVsbG8_Pg");
        assert!(b64url_decode("a").is_none());
        assert!(b64url_decode("ab+c").is_none());
        assert!(b64url_decode("aGVs bG8").is_none());
        // Padding of any length is tolerated, and so are set bits after
        // the last byte.
        assert_eq!(b64url_decode("aGVsbG8_Pg==").unwrap(), b"hello?>");
        assert_eq!(b64url_decode("aGVsbG8_Pg=====").unwrap(), b"hello?>");
        assert_eq!(b64url_decode("aGVsbG8_Ph").unwrap(), b"hello?>");
    }

    /// RFC 4231 test case 2, for each of the three JWT algorithms.
    #[test]
    fn hmacs_match_rfc_4231() {
        let (key, data) = (b"Jefe", b"what do ya want for nothing?");
        for (alg, tag) in [
            (
                Alg::Hs256,
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                Alg::Hs384,
                "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec373\
                 6322445e8e2240ca5e69e2c78b3239ecfab21649",
            ),
            (
                Alg::Hs512,
                "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554\
                 9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
            ),
        ] {
            assert_eq!(hex::encode(alg.sign(key, data)), tag);
            let tag = hex::decode(tag).unwrap();
            assert!(alg.verify(key, data, &tag));
            assert!(!alg.verify(key, data, &tag[1..]));
            assert!(!alg.verify(b"Jeff", data, &tag));
        }
    }

    #[test]
    fn generated_tokens_verify() {
        let t = generate("admin", "secret-key-123", 2_000_000_000);
        assert_eq!(verify(&t, 1_700_000_000, secrets).unwrap(), "admin");
        assert_eq!(verify(&t, 2_000_000_000, secrets), Err(TokenError::Expired));
        let other = generate("admin", "another-secret", 2_000_000_000);
        assert_eq!(
            verify(&other, 1_700_000_000, secrets),
            Err(TokenError::BadSignature)
        );
        let stranger = generate("nobody", "secret-key-123", 2_000_000_000);
        assert_eq!(
            verify(&stranger, 1_700_000_000, secrets),
            Err(TokenError::UnknownAccessKey)
        );
        // Tampered claims.
        let mut parts: Vec<&str> = t.split('.').collect();
        let forged = b64url_encode(br#"{"exp":9999999999,"sub":"admin"}"#);
        parts[1] = &forged;
        assert_eq!(
            verify(&parts.join("."), 1_700_000_000, secrets),
            Err(TokenError::BadSignature)
        );
        assert!(matches!(
            verify("a.b", 0, secrets),
            Err(TokenError::Malformed(_))
        ));
        assert!(matches!(
            verify("", 0, secrets),
            Err(TokenError::Malformed(_))
        ));
    }

    #[test]
    fn accepts_hs256_with_access_key_claim() {
        // A token as MinIO's own node authentication builds them (HS256 here).
        let header = b64url_encode(br#"{"alg":"HS256","typ":"JWT"}"#);
        let claims = b64url_encode(br#"{"accessKey":"admin","exp":2000000000,"sub":"x"}"#);
        let signed = format!("{header}.{claims}");
        let sig = b64url_encode(&Alg::Hs256.sign(b"secret-key-123", signed.as_bytes()));
        let t = format!("{signed}.{sig}");
        assert_eq!(verify(&t, 1_700_000_000, secrets).unwrap(), "admin");
        let none = format!("{}.{claims}.", b64url_encode(br#"{"alg":"none"}"#));
        assert!(matches!(
            verify(&none, 0, secrets),
            Err(TokenError::Malformed(_))
        ));
    }
}

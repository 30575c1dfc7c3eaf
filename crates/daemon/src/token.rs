//! Bearer tokens of the metrics endpoint, in MinIO's format so that tokens
//! made by `mc admin prometheus generate` keep working: a JWT signed with
//! HMAC-SHA256/384/512 keyed by the secret key of the access key it names
//! (`accessKey`, else `sub`), with `exp` (and `nbf`, `iat` if present)
//! checked against the clock.

use ring::hmac;
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
        Some("HS256") => hmac::HMAC_SHA256,
        Some("HS384") => hmac::HMAC_SHA384,
        Some("HS512") => hmac::HMAC_SHA512,
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
    let key = hmac::Key::new(alg, secret.as_bytes());
    let signed = &token[..h.len() + 1 + c.len()];
    hmac::verify(&key, signed.as_bytes(), &sig).map_err(|_| TokenError::BadSignature)?;
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
    let key = hmac::Key::new(hmac::HMAC_SHA512, secret.as_bytes());
    let sig = hmac::sign(&key, signed.as_bytes());
    format!("{signed}.{}", b64url_encode(sig.as_ref()))
}

const B64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn b64url_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(B64URL[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// Decodes unpadded base64url (trailing `=` tolerated); `None` on any other
/// character or an impossible length.
fn b64url_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    if s.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
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
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"secret-key-123");
        let sig = b64url_encode(hmac::sign(&key, signed.as_bytes()).as_ref());
        let t = format!("{signed}.{sig}");
        assert_eq!(verify(&t, 1_700_000_000, secrets).unwrap(), "admin");
        let none = format!("{}.{claims}.", b64url_encode(br#"{"alg":"none"}"#));
        assert!(matches!(
            verify(&none, 0, secrets),
            Err(TokenError::Malformed(_))
        ));
    }
}

//! Session tokens of temporary credentials, made as MinIO makes them: a
//! JWT signed with HMAC-SHA512 under the root user's secret key, whose
//! claims are the access key (`accessKey`), the expiry (`exp`, Unix
//! seconds), the parent user (`parent`) and, when the caller restricted
//! the session, the session policy (`sessionPolicy`, the policy JSON in
//! standard base64). MinIO serving the same drives verifies these tokens
//! with the same key, so the temporary keys work on either server.
//!
//! Service accounts carry a token too, signed with their own secret key:
//! the access key, the parent, `sa-policy` (`inherited-policy`, or
//! `embedded-policy` with the policy in `sessionPolicy`), and no expiry.
//!
//! Also the random access and secret keys MinIO generates: 20 characters
//! of `0-9A-Z`, and 40 characters of base64 with `/` made `+`.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Map, Value};
use sha2::Sha512;

/// Largest session token accepted for verification: MinIO's tokens with a
/// 2 KiB session policy are under 4 KiB.
pub const MAX_TOKEN_LEN: usize = 16 * 1024;

/// What a session token says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Claims {
    pub access_key: String,
    /// Unix seconds; 0 when the token has no expiry (a service
    /// account's).
    pub exp: u64,
    pub parent: String,
    /// The session policy's JSON (decoded from base64), if any.
    pub session_policy: Option<Vec<u8>>,
    /// Every claim as the token carries it (for claims this server does
    /// not interpret, kept when the token is re-read).
    pub raw: Map<String, Value>,
}

/// Why a token is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    /// Not three base64url parts of JSON, or not HS512, or a claim of the
    /// wrong type.
    Malformed,
    /// The signature is not the key's.
    BadSignature,
}

/// Signs `claims` (a JSON object) with `key`: a compact JWS, HS512.
pub fn sign(claims: &Map<String, Value>, key: &[u8]) -> String {
    // Go's encoding/json writes map keys sorted, as serde_json's default
    // map does: the same claims give the same bytes as MinIO's.
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS512","typ":"JWT"}"#);
    let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).unwrap_or_default());
    let signing_input = format!("{header}.{body}");
    let sig = mac(key, signing_input.as_bytes());
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig))
}

fn mac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = <Hmac<Sha512> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

/// The claims of a session token for temporary credentials.
pub fn session_claims(
    access_key: &str,
    exp: u64,
    parent: &str,
    session_policy: Option<&[u8]>,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("accessKey".into(), Value::from(access_key));
    m.insert("exp".into(), Value::from(exp));
    m.insert("parent".into(), Value::from(parent));
    if let Some(p) = session_policy {
        m.insert("sessionPolicy".into(), Value::from(STANDARD.encode(p)));
    }
    m
}

/// The `sa-policy` claim of a service account whose policy is its
/// parent's.
pub const INHERITED_POLICY: &str = "inherited-policy";
/// The `sa-policy` claim of a service account restricted by its own
/// policy (`sessionPolicy`).
pub const EMBEDDED_POLICY: &str = "embedded-policy";

/// The claims of a service account's token (signed with its own secret
/// key): `extra` claims first, then the parent and the policy claims,
/// which replace any of the same name.
pub fn service_claims(
    access_key: &str,
    parent: &str,
    session_policy: Option<&[u8]>,
    extra: &Map<String, Value>,
) -> Map<String, Value> {
    let mut m = extra.clone();
    m.remove("exp");
    m.remove("sessionPolicy");
    m.insert("accessKey".into(), Value::from(access_key));
    m.insert("parent".into(), Value::from(parent));
    match session_policy {
        Some(p) => {
            m.insert("sessionPolicy".into(), Value::from(STANDARD.encode(p)));
            m.insert("sa-policy".into(), Value::from(EMBEDDED_POLICY));
        }
        None => {
            m.insert("sa-policy".into(), Value::from(INHERITED_POLICY));
        }
    }
    m
}

/// Verifies `token` under `key` and reads its claims. The expiry is not
/// checked here: the caller tells an expired token from a forged one.
pub fn verify(token: &str, key: &[u8]) -> Result<Claims, TokenError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(TokenError::Malformed);
    }
    let mut parts = token.split('.');
    let (Some(h), Some(b), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed);
    };
    let header: Value = URL_SAFE_NO_PAD
        .decode(h)
        .ok()
        .and_then(|v| serde_json::from_slice(&v).ok())
        .ok_or(TokenError::Malformed)?;
    if header.get("alg").and_then(Value::as_str) != Some("HS512") {
        return Err(TokenError::Malformed);
    }
    let sig = URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| TokenError::Malformed)?;
    let expected = mac(key, &token.as_bytes()[..h.len() + 1 + b.len()]);
    if !bool::from(subtle::ConstantTimeEq::ct_eq(&sig[..], &expected[..])) {
        return Err(TokenError::BadSignature);
    }
    let raw: Map<String, Value> = URL_SAFE_NO_PAD
        .decode(b)
        .ok()
        .and_then(|v| serde_json::from_slice(&v).ok())
        .ok_or(TokenError::Malformed)?;
    let text = |k: &str| -> Result<String, TokenError> {
        match raw.get(k) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(TokenError::Malformed),
        }
    };
    // Go's jwt library writes `exp` as a JSON number, possibly with a
    // fraction; a string is what some encoders write.
    let exp = match raw.get("exp") {
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .ok_or(TokenError::Malformed)?,
        Some(Value::String(s)) => s.parse().map_err(|_| TokenError::Malformed)?,
        None => 0,
        Some(_) => return Err(TokenError::Malformed),
    };
    let session_policy = match raw.get("sessionPolicy") {
        None => None,
        Some(Value::String(s)) => Some(STANDARD.decode(s).map_err(|_| TokenError::Malformed)?),
        Some(_) => return Err(TokenError::Malformed),
    };
    Ok(Claims {
        access_key: text("accessKey")?,
        exp,
        parent: text("parent")?,
        session_policy,
        raw,
    })
}

/// A fresh access key as MinIO generates them: 20 of `0-9A-Z`.
pub fn new_access_key() -> String {
    const TABLE: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    random_bytes(20)
        .into_iter()
        .map(|b| TABLE[usize::from(b) % TABLE.len()] as char)
        .collect()
}

/// A fresh secret key as MinIO generates them: 40 characters of base64
/// (30 random bytes), `/` written `+`.
pub fn new_secret_key() -> String {
    base64::engine::general_purpose::STANDARD_NO_PAD
        .encode(random_bytes(30))
        .replace('/', "+")
}

fn random_bytes(n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut out)
        .expect("the system random generator works");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_refuse_other_keys_and_edits() {
        let claims = session_claims("AKTEMP", 1_900_000_000, "alice", Some(b"{\"x\":1}"));
        let t = sign(&claims, b"root-secret");
        let c = verify(&t, b"root-secret").unwrap();
        assert_eq!(c.access_key, "AKTEMP");
        assert_eq!(c.exp, 1_900_000_000);
        assert_eq!(c.parent, "alice");
        assert_eq!(c.session_policy.as_deref(), Some(&b"{\"x\":1}"[..]));
        assert_eq!(verify(&t, b"other"), Err(TokenError::BadSignature));
        // A changed claim breaks the signature.
        let mut parts: Vec<&str> = t.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(br#"{"accessKey":"AKTEMP","exp":9999999999}"#);
        parts[1] = &forged;
        assert_eq!(
            verify(&parts.join("."), b"root-secret"),
            Err(TokenError::BadSignature)
        );
        for bad in [
            "",
            "a.b",
            "a.b.c.d",
            "!!.!!.!!",
            &"x".repeat(MAX_TOKEN_LEN + 1),
        ] {
            assert_eq!(verify(bad, b"k"), Err(TokenError::Malformed), "{bad:.20}");
        }
    }

    #[test]
    fn tokens_have_minio_shape() {
        // HS512 over the sorted claims, as golang-jwt signs MapClaims.
        let t = sign(&session_claims("AK", 5, "p", None), b"k");
        let mut parts = t.split('.');
        let header = URL_SAFE_NO_PAD.decode(parts.next().unwrap()).unwrap();
        assert_eq!(header, br#"{"alg":"HS512","typ":"JWT"}"#);
        let body = URL_SAFE_NO_PAD.decode(parts.next().unwrap()).unwrap();
        assert_eq!(body, br#"{"accessKey":"AK","exp":5,"parent":"p"}"#);
        assert_eq!(
            URL_SAFE_NO_PAD.decode(parts.next().unwrap()).unwrap().len(),
            64
        );
    }

    #[test]
    fn other_algorithms_and_claim_types_are_refused() {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let body = URL_SAFE_NO_PAD.encode(br#"{"accessKey":"AK","exp":5}"#);
        let t = format!("{header}.{body}.");
        assert_eq!(verify(&t, b"k"), Err(TokenError::Malformed));
        let mut m = session_claims("AK", 5, "p", None);
        m.insert("exp".into(), Value::from("soon"));
        assert_eq!(verify(&sign(&m, b"k"), b"k"), Err(TokenError::Malformed));
        m.insert("exp".into(), Value::from(7.9));
        assert_eq!(verify(&sign(&m, b"k"), b"k").unwrap().exp, 7);
    }

    #[test]
    fn service_account_tokens_have_minio_claims() {
        let t = sign(
            &service_claims("SVC", "alice", None, &Map::new()),
            b"svc-secret",
        );
        let body = URL_SAFE_NO_PAD
            .decode(t.split('.').nth(1).unwrap())
            .unwrap();
        assert_eq!(
            body,
            br#"{"accessKey":"SVC","parent":"alice","sa-policy":"inherited-policy"}"#
        );
        let c = verify(&t, b"svc-secret").unwrap();
        assert_eq!((c.exp, c.session_policy), (0, None));
        // An embedded policy replaces the claims it names, kept ones stay.
        let mut extra = Map::new();
        extra.insert("exp".into(), Value::from(5));
        extra.insert("custom".into(), Value::from("kept"));
        extra.insert("sa-policy".into(), Value::from(INHERITED_POLICY));
        let m = service_claims("SVC", "alice", Some(b"{}"), &extra);
        assert_eq!(m["sa-policy"], EMBEDDED_POLICY);
        assert_eq!(m["sessionPolicy"], "e30=");
        assert_eq!(m["custom"], "kept");
        assert!(!m.contains_key("exp"));
    }

    #[test]
    fn generated_keys_look_like_minio_keys() {
        let a = new_access_key();
        assert_eq!(a.len(), 20);
        assert!(
            a.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
        );
        let s = new_secret_key();
        assert_eq!(s.len(), 40);
        assert!(!s.contains('/'));
        assert_ne!(new_access_key(), a);
    }
}

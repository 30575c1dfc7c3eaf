//! JSON Web Keys and the signatures of JSON Web Tokens, as OpenID Connect
//! providers publish and sign them: RSA keys (`RS256`, `RS384`, `RS512`,
//! `PS256`, `PS384`, `PS512`) and elliptic-curve keys on P-256 and P-384
//! (`ES256`, `ES384`), verified with ring. Symmetric (`HS*`) and unsigned
//! (`none`) tokens are refused: a provider's public keys are the only
//! trust here.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, UnparsedPublicKey};
use serde_json::{Map, Value};

/// Largest token accepted (providers' ID tokens are a few KiB).
pub const MAX_TOKEN_LEN: usize = 16 * 1024;
/// Most keys kept of one key set.
pub const MAX_KEYS: usize = 64;

/// A provider's public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Jwk {
    /// Modulus and exponent, big-endian.
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// An uncompressed point (`04 || x || y`) on P-256 or P-384.
    Ec { curve: Curve, point: Vec<u8> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Curve {
    P256,
    P384,
}

/// Why a token is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwtError {
    /// Not a compact JWS of JSON header and claims.
    Malformed(&'static str),
    /// An algorithm not accepted (`HS256`, `none`, ...).
    Algorithm(String),
    /// No key of the set has the token's `kid`.
    UnknownKey(String),
    /// The key does not fit the algorithm, or the signature is wrong.
    BadSignature,
}

impl std::fmt::Display for JwtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JwtError::Malformed(why) => write!(f, "the token is malformed: {why}"),
            JwtError::Algorithm(a) => write!(f, "the token's algorithm {a:?} is not accepted"),
            JwtError::UnknownKey(k) => write!(f, "no key of the provider has the id {k:?}"),
            JwtError::BadSignature => f.write_str("the token's signature does not verify"),
        }
    }
}

/// A key set (`jwks_uri`'s document): the signing keys by `kid`. Keys of
/// other types, curves or uses are left out.
pub fn parse_jwks(doc: &Value) -> HashMap<String, Jwk> {
    let mut out = HashMap::new();
    let Some(keys) = doc.get("keys").and_then(Value::as_array) else {
        return out;
    };
    for k in keys.iter().take(MAX_KEYS) {
        if k.get("use")
            .and_then(Value::as_str)
            .is_some_and(|u| u != "sig")
        {
            continue;
        }
        let kid = k
            .get("kid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let field = |n: &str| {
            k.get(n)
                .and_then(Value::as_str)
                .and_then(|s| URL_SAFE_NO_PAD.decode(s.trim_end_matches('=')).ok())
        };
        let key = match k.get("kty").and_then(Value::as_str) {
            Some("RSA") => match (field("n"), field("e")) {
                (Some(n), Some(e)) if !n.is_empty() && !e.is_empty() => Jwk::Rsa { n, e },
                _ => continue,
            },
            Some("EC") => {
                let (curve, len) = match k.get("crv").and_then(Value::as_str) {
                    Some("P-256") => (Curve::P256, 32),
                    Some("P-384") => (Curve::P384, 48),
                    _ => continue,
                };
                match (field("x"), field("y")) {
                    (Some(x), Some(y)) if x.len() == len && y.len() == len => {
                        let mut point = vec![4u8];
                        point.extend_from_slice(&x);
                        point.extend_from_slice(&y);
                        Jwk::Ec { curve, point }
                    }
                    _ => continue,
                }
            }
            _ => continue,
        };
        out.insert(kid, key);
    }
    out
}

/// A token split and decoded, before its signature is checked.
#[derive(Debug)]
pub struct Unverified<'a> {
    pub alg: String,
    pub kid: String,
    pub claims: Map<String, Value>,
    signing_input: &'a str,
    signature: Vec<u8>,
}

/// Splits and decodes `token`.
pub fn decode(token: &str) -> Result<Unverified<'_>, JwtError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(JwtError::Malformed("longer than 16 KiB"));
    }
    let mut parts = token.split('.');
    let (Some(h), Some(c), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Malformed("not three parts"));
    };
    let json = |part: &str| -> Result<Map<String, Value>, JwtError> {
        URL_SAFE_NO_PAD
            .decode(part)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(JwtError::Malformed("a part is not base64url JSON"))
    };
    let header = json(h)?;
    let claims = json(c)?;
    let signature = URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| JwtError::Malformed("the signature is not base64url"))?;
    let text = |k: &str| {
        header
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    Ok(Unverified {
        alg: text("alg"),
        kid: text("kid"),
        claims,
        signing_input: &token[..h.len() + 1 + c.len()],
        signature,
    })
}

impl Unverified<'_> {
    /// Checks the signature with `key`; the claims, once it holds.
    pub fn verify(self, key: &Jwk) -> Result<Map<String, Value>, JwtError> {
        let ok = match (self.alg.as_str(), key) {
            ("RS256" | "RS384" | "RS512" | "PS256" | "PS384" | "PS512", Jwk::Rsa { n, e }) => {
                let params: &signature::RsaParameters = match self.alg.as_str() {
                    "RS256" => &signature::RSA_PKCS1_2048_8192_SHA256,
                    "RS384" => &signature::RSA_PKCS1_2048_8192_SHA384,
                    "RS512" => &signature::RSA_PKCS1_2048_8192_SHA512,
                    "PS256" => &signature::RSA_PSS_2048_8192_SHA256,
                    "PS384" => &signature::RSA_PSS_2048_8192_SHA384,
                    _ => &signature::RSA_PSS_2048_8192_SHA512,
                };
                signature::RsaPublicKeyComponents { n, e }
                    .verify(params, self.signing_input.as_bytes(), &self.signature)
                    .is_ok()
            }
            ("ES256" | "ES384", Jwk::Ec { curve, point }) => {
                let params: &signature::EcdsaVerificationAlgorithm =
                    match (self.alg.as_str(), curve) {
                        ("ES256", Curve::P256) => &signature::ECDSA_P256_SHA256_FIXED,
                        ("ES384", Curve::P384) => &signature::ECDSA_P384_SHA384_FIXED,
                        _ => return Err(JwtError::BadSignature),
                    };
                UnparsedPublicKey::new(params, point)
                    .verify(self.signing_input.as_bytes(), &self.signature)
                    .is_ok()
            }
            ("RS256" | "RS384" | "RS512" | "PS256" | "PS384" | "PS512" | "ES256" | "ES384", _) => {
                false
            }
            (other, _) => return Err(JwtError::Algorithm(other.to_owned())),
        };
        if ok {
            Ok(self.claims)
        } else {
            Err(JwtError::BadSignature)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};

    fn vectors() -> Value {
        serde_json::from_str(include_str!("../../testdata/oidc_rsa.json")).unwrap()
    }

    #[test]
    fn rsa_tokens_of_another_implementation_verify() {
        let v = vectors();
        let keys = parse_jwks(&v["jwks"]);
        let key = &keys["test-rs-1"];
        for alg in ["rs256", "rs384", "rs512"] {
            let token = v[alg].as_str().unwrap();
            let t = decode(token).unwrap();
            assert_eq!(t.alg, alg.to_uppercase());
            assert_eq!(t.kid, "test-rs-1");
            let claims = t.verify(key).unwrap();
            assert_eq!(Value::Object(claims), v["claims"], "{alg}");
            // One changed byte of the claims or the signature fails.
            let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
            let forged = URL_SAFE_NO_PAD.encode(br#"{"sub":"mallory"}"#);
            let original = std::mem::replace(&mut parts[1], forged);
            assert_eq!(
                decode(&parts.join(".")).unwrap().verify(key),
                Err(JwtError::BadSignature)
            );
            parts[1] = original;
            let mut sig = URL_SAFE_NO_PAD.decode(&parts[2]).unwrap();
            sig[10] ^= 1;
            parts[2] = URL_SAFE_NO_PAD.encode(sig);
            assert_eq!(
                decode(&parts.join(".")).unwrap().verify(key),
                Err(JwtError::BadSignature)
            );
        }
    }

    #[test]
    fn ec_tokens_verify_from_the_jwk_coordinates() {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let public = pair.public_key().as_ref();
        let jwks = serde_json::json!({"keys": [{
            "kty": "EC", "crv": "P-256", "kid": "ec1",
            "x": URL_SAFE_NO_PAD.encode(&public[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&public[33..]),
        }]});
        let keys = parse_jwks(&jwks);
        let h = URL_SAFE_NO_PAD.encode(br#"{"alg":"ES256","kid":"ec1"}"#);
        let c = URL_SAFE_NO_PAD.encode(br#"{"sub":"bob"}"#);
        let input = format!("{h}.{c}");
        let sig = pair.sign(&rng, input.as_bytes()).unwrap();
        let token = format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()));
        let claims = decode(&token).unwrap().verify(&keys["ec1"]).unwrap();
        assert_eq!(claims["sub"], "bob");
        // An RSA algorithm named over the EC key, or the RSA key for ES256,
        // is a bad signature, not a pass.
        let v = vectors();
        let rsa = parse_jwks(&v["jwks"]);
        assert_eq!(
            decode(&token).unwrap().verify(&rsa["test-rs-1"]),
            Err(JwtError::BadSignature)
        );
        let rs = v["rs256"].as_str().unwrap();
        assert_eq!(
            decode(rs).unwrap().verify(&keys["ec1"]),
            Err(JwtError::BadSignature)
        );
    }

    #[test]
    fn symmetric_and_unsigned_tokens_are_refused() {
        let v = vectors();
        let keys = parse_jwks(&v["jwks"]);
        for alg in ["HS256", "none", "", "ES512"] {
            let h = URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"{alg}","kid":"test-rs-1"}}"#));
            let c = URL_SAFE_NO_PAD.encode(br#"{"sub":"x"}"#);
            let t = format!("{h}.{c}.");
            assert_eq!(
                decode(&t).unwrap().verify(&keys["test-rs-1"]),
                Err(JwtError::Algorithm(alg.to_owned()))
            );
        }
        for bad in [
            "",
            "a.b",
            "a.b.c.d",
            "!.!.!",
            &"x".repeat(MAX_TOKEN_LEN + 1),
        ] {
            assert!(
                matches!(decode(bad), Err(JwtError::Malformed(_))),
                "{bad:.20}"
            );
        }
    }

    #[test]
    fn key_sets_keep_signing_keys_only() {
        let doc = serde_json::json!({"keys": [
            {"kty": "RSA", "kid": "a", "n": "AQAB", "e": "AQAB"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
            {"kty": "EC", "kid": "p521", "crv": "P-521", "x": "AA", "y": "AA"},
            {"kty": "EC", "kid": "short", "crv": "P-256", "x": "AA", "y": "AA"},
            {"kty": "oct", "kid": "sym", "k": "AA"},
            {"kty": "RSA", "kid": "no-n", "e": "AQAB"},
        ]});
        let keys = parse_jwks(&doc);
        assert_eq!(keys.keys().collect::<Vec<_>>(), ["a"]);
        assert!(parse_jwks(&serde_json::json!({"keys": "x"})).is_empty());
    }
}

//! The SigV4 primitives: the credential scope, the signing key derived from
//! a secret key, HMAC-SHA256 signatures and their constant-time comparison.

use std::fmt;

use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq as _;

use super::credentials::SecretKey;

type HmacSha256 = hmac::Hmac<Sha256>;

/// The algorithm name of SigV4 with HMAC-SHA256.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// The last component of every credential scope.
pub const SCOPE_TERMINATOR: &str = "aws4_request";
/// The hex SHA-256 of the empty string.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// The scope of a credential: `YYYYMMDD/region/service/aws4_request`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialScope {
    date: String,
    region: String,
    service: String,
}

impl CredentialScope {
    /// A scope for `date` (`YYYYMMDD`), `region` and `service`. The values
    /// are taken as given; the verifier checks them against its
    /// configuration.
    pub fn new(
        date: impl Into<String>,
        region: impl Into<String>,
        service: impl Into<String>,
    ) -> Self {
        CredentialScope {
            date: date.into(),
            region: region.into(),
            service: service.into(),
        }
    }

    /// The date, `YYYYMMDD`.
    pub fn date(&self) -> &str {
        &self.date
    }

    /// The region.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The service (`s3`).
    pub fn service(&self) -> &str {
        &self.service
    }
}

impl fmt::Display for CredentialScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}/{SCOPE_TERMINATOR}",
            self.date, self.region, self.service
        )
    }
}

/// The key that signs for one scope:
/// `HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request")`.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey([u8; 32]);

impl Drop for SigningKey {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.0);
    }
}

impl SigningKey {
    /// Derives the signing key of `secret` for `scope`.
    pub fn derive(secret: &SecretKey, scope: &CredentialScope) -> Self {
        let mut k_secret = Vec::with_capacity(4 + secret.expose().len());
        k_secret.extend_from_slice(b"AWS4");
        k_secret.extend_from_slice(secret.expose().as_bytes());
        let k_date = hmac(&k_secret, scope.date.as_bytes());
        let k_region = hmac(&k_date, scope.region.as_bytes());
        let k_service = hmac(&k_region, scope.service.as_bytes());
        SigningKey(hmac(&k_service, SCOPE_TERMINATOR.as_bytes()))
    }

    /// The signature of `string_to_sign`.
    pub fn sign(&self, string_to_sign: &[u8]) -> Signature {
        Signature(hmac(&self.0, string_to_sign))
    }

    /// The raw key, for code that signs with another HMAC implementation.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

/// A SigV4 signature (32 bytes, written as 64 lowercase hex digits).
#[derive(Clone, Copy, Eq)]
pub struct Signature([u8; 32]);

impl Signature {
    /// Parses 64 hex digits (either case); anything else is `None`.
    pub fn from_hex(text: &str) -> Option<Self> {
        parse_hex32(text).map(Signature)
    }

    /// The signature as 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Compares in time independent of where the signatures differ.
    pub fn ct_eq(&self, other: &Signature) -> bool {
        ct_eq(&self.0, &other.0)
    }
}

/// `==` on signatures is the constant-time comparison.
impl PartialEq for Signature {
    fn eq(&self, other: &Self) -> bool {
        self.ct_eq(other)
    }
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signature({})", self.to_hex())
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// The SigV4 string to sign of a canonical request:
/// `AWS4-HMAC-SHA256\n<timestamp>\n<scope>\n<hex sha256(canonical request)>`.
pub fn string_to_sign(amz_date: &str, scope: &CredentialScope, canonical_request: &[u8]) -> String {
    format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request)
    )
}

pub(crate) fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = match HmacSha256::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC-SHA256 takes keys of any length"),
    };
    mac.update(data);
    mac.finalize().into_bytes().into()
}

pub(crate) fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

pub(crate) fn sha256_hex(data: &[u8]) -> String {
    hex::encode(sha256(data))
}

pub(crate) fn parse_hex32(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

/// Equality of two byte strings in time that depends only on their
/// lengths (`subtle`).
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signing_key_of_the_published_example() {
        // AWS's worked example of deriving a signing key (IAM, 2015-08-30):
        // the derived key and the signature of its string to sign, as AWS
        // publishes them.
        let secret = SecretKey::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
        let scope = CredentialScope::new("20150830", "us-east-1", "iam");
        assert_eq!(scope.to_string(), "20150830/us-east-1/iam/aws4_request");
        assert_eq!(
            (scope.date(), scope.region(), scope.service()),
            ("20150830", "us-east-1", "iam")
        );
        assert_eq!(
            format!("{ALGORITHM} {SCOPE_TERMINATOR}"),
            "AWS4-HMAC-SHA256 aws4_request"
        );
        let key = SigningKey::derive(&secret, &scope);
        assert_eq!(
            hex::encode(key.as_bytes()),
            "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9"
        );
        let to_sign = "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/iam/aws4_request\n\
                       f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59";
        assert_eq!(
            key.sign(to_sign.as_bytes()).to_hex(),
            "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
        );
        assert_eq!(key, SigningKey::derive(&secret, &scope));
        assert_eq!(format!("{key:?}"), "SigningKey(..)");
        let other = SigningKey::derive(
            &secret,
            &CredentialScope::new("20150831", "us-east-1", "iam"),
        );
        assert_ne!(key.as_bytes(), other.as_bytes());
    }

    #[test]
    fn signatures_parse_compare_and_print() {
        let hex = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
        let sig = Signature::from_hex(hex).unwrap();
        assert_eq!(sig.to_hex(), hex);
        assert_eq!(sig.to_string(), hex);
        assert_eq!(Signature::from_hex(&hex.to_uppercase()), Some(sig));
        assert!(sig.ct_eq(&sig));
        let mut other = hex.to_owned();
        other.replace_range(63.., "0");
        assert_ne!(Signature::from_hex(&other), Some(sig));
        assert_eq!(Signature::from_hex(&hex[1..]), None);
        assert_eq!(Signature::from_hex(&format!("{hex}0")), None);
        assert_eq!(Signature::from_hex(&hex.replace('f', "g")), None);
        assert!(format!("{sig:?}").contains(hex));
        assert!(!ct_eq(b"ab", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(ct_eq(b"abc", b"abc"));
        assert!(ct_eq(b"", b""));
        assert_eq!(sha256_hex(b""), EMPTY_SHA256);
    }
}

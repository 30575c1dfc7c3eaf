//! The KMS interface and its static-key implementation, configured and
//! encoded as MinIO's builtin KMS (`MINIO_KMS_SECRET_KEY=name:base64-key`),
//! so that data keys sealed by MinIO open here and the reverse.
//!
//! A data key (DEK) is 32 random bytes, sealed as
//! `AES-256-GCM(HMAC-SHA-256(master, iv), nonce, dek, aad = context) || iv
//! (16) || nonce (12)`, where the context is the canonical JSON text of a
//! string map (keys sorted, JSON escaping with `<`, `>` and `&` escaped).
//! Older MinIO releases wrote a JSON envelope
//! `{"aead", "id", "iv", "nonce", "bytes"}` and could use ChaCha20-Poly1305
//! under an HChaCha20-derived key; both still open.

use std::collections::BTreeMap;

use base64::Engine as _;
use hmac::{KeyInit as _, Mac as _};
use ring::aead::{AES_256_GCM, Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};

/// Why a KMS call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KmsError {
    /// The configuration string is not `name:base64-of-32-bytes`.
    #[error("invalid KMS secret key: {0}")]
    InvalidConfig(&'static str),
    /// The key name is not this KMS's.
    #[error("KMS key {0:?} does not exist")]
    KeyNotFound(String),
    /// The ciphertext does not open (wrong key, context or damage).
    #[error("the data key could not be decrypted")]
    Decrypt,
}

/// The context bound to a data key (for objects, MinIO uses
/// `{"<bucket>": "<bucket>/<object>"}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context(pub BTreeMap<String, String>);

impl Context {
    /// A context of one pair.
    pub fn single(key: &str, value: &str) -> Self {
        Context(BTreeMap::from([(key.to_owned(), value.to_owned())]))
    }

    /// The canonical text: a JSON object with sorted keys.
    pub fn marshal_text(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        out.push(b'{');
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'"');
            escape_json(&mut out, k);
            out.extend_from_slice(b"\":\"");
            escape_json(&mut out, v);
            out.push(b'"');
        }
        out.push(b'}');
        out
    }
}

/// JSON string escaping as Go's encoder does it with HTML escaping: `"`
/// and `\` with a backslash, `\n`, `\r`, `\t` short, other control bytes and
/// `<`, `>`, `&` as `\u00XX`, U+2028 and U+2029 as `\u202X`.
fn escape_json(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{2028}' => out.extend_from_slice(b"\\u2028"),
            '\u{2029}' => out.extend_from_slice(b"\\u2029"),
            c if (c as u32) < 0x20 || c == '<' || c == '>' || c == '&' => {
                let b = c as u8;
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 15)]);
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

/// A generated data key: in clear (to seal one object key) and sealed (to
/// store with the object).
#[derive(Clone, PartialEq, Eq)]
pub struct DataKey {
    /// The KMS key that sealed it.
    pub key_id: String,
    /// The key in clear.
    pub plaintext: [u8; 32],
    /// The sealed key.
    pub ciphertext: Vec<u8>,
}

impl Drop for DataKey {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.plaintext);
    }
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataKey")
            .field("key_id", &self.key_id)
            .field("ciphertext_len", &self.ciphertext.len())
            .finish_non_exhaustive()
    }
}

/// What SSE needs from a key management service. External KMSs (KES,
/// Vault transit) implement the same trait.
pub trait Kms: Send + Sync + std::fmt::Debug {
    /// The key used when a request names none.
    fn default_key_id(&self) -> &str;
    /// A new data key sealed under `key_id`, bound to `context`; `random`
    /// supplies 60 fresh random bytes (the key, the IV and the nonce).
    fn generate_key(
        &self,
        key_id: &str,
        context: &Context,
        random: &[u8; 60],
    ) -> Result<DataKey, KmsError>;
    /// Opens a sealed data key.
    fn decrypt(
        &self,
        key_id: &str,
        ciphertext: &[u8],
        context: &Context,
    ) -> Result<[u8; 32], KmsError>;
}

/// One static master key, as `MINIO_KMS_SECRET_KEY` configures it.
#[derive(Clone)]
pub struct StaticKms {
    key_id: String,
    key: [u8; 32],
}

impl Drop for StaticKms {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.key);
    }
}

impl std::fmt::Debug for StaticKms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticKms")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl StaticKms {
    /// Parses `name:base64-of-32-bytes`.
    pub fn parse(s: &str) -> Result<StaticKms, KmsError> {
        let (name, b64) = s
            .split_once(':')
            .ok_or(KmsError::InvalidConfig("expected <key-name>:<base64 key>"))?;
        if name.is_empty() {
            return Err(KmsError::InvalidConfig("empty key name"));
        }
        let key = base64_decode(b64.trim()).ok_or(KmsError::InvalidConfig("key is not base64"))?;
        let key: [u8; 32] = key
            .try_into()
            .map_err(|_| KmsError::InvalidConfig("key must be 32 bytes"))?;
        Ok(StaticKms {
            key_id: name.to_owned(),
            key,
        })
    }

    fn check(&self, key_id: &str) -> Result<(), KmsError> {
        if key_id.is_empty() || key_id == self.key_id {
            Ok(())
        } else {
            Err(KmsError::KeyNotFound(key_id.to_owned()))
        }
    }
}

fn aead(alg: &'static ring::aead::Algorithm, key: &[u8; 32]) -> LessSafeKey {
    // 32-byte keys for both algorithms: cannot fail.
    LessSafeKey::new(UnboundKey::new(alg, key).unwrap_or_else(|_| unreachable!()))
}

fn hmac_key(master: &[u8; 32], iv: &[u8]) -> [u8; 32] {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(master)
        .unwrap_or_else(|_| unreachable!("HMAC-SHA256 takes keys of any length"));
    mac.update(iv);
    mac.finalize().into_bytes().into()
}

impl Kms for StaticKms {
    fn default_key_id(&self) -> &str {
        &self.key_id
    }

    fn generate_key(
        &self,
        key_id: &str,
        context: &Context,
        random: &[u8; 60],
    ) -> Result<DataKey, KmsError> {
        self.check(key_id)?;
        let (plain, rest) = random.split_at(32);
        let (iv, nonce) = rest.split_at(16);
        let k = aead(&AES_256_GCM, &hmac_key(&self.key, iv));
        let mut ct = plain.to_vec();
        let mut n = [0u8; 12];
        n.copy_from_slice(nonce);
        let aad = context.marshal_text();
        k.seal_in_place_append_tag(Nonce::assume_unique_for_key(n), Aad::from(&aad), &mut ct)
            .map_err(|_| KmsError::Decrypt)?;
        ct.extend_from_slice(iv);
        ct.extend_from_slice(nonce);
        let mut plaintext = [0u8; 32];
        plaintext.copy_from_slice(plain);
        Ok(DataKey {
            key_id: self.key_id.clone(),
            plaintext,
            ciphertext: ct,
        })
    }

    fn decrypt(
        &self,
        key_id: &str,
        ciphertext: &[u8],
        context: &Context,
    ) -> Result<[u8; 32], KmsError> {
        self.check(key_id)?;
        let (sealed, iv, nonce, chacha) = parse_ciphertext(ciphertext).ok_or(KmsError::Decrypt)?;
        let k = if chacha {
            aead(&CHACHA20_POLY1305, &hchacha20(&self.key, &iv))
        } else {
            aead(&AES_256_GCM, &hmac_key(&self.key, &iv))
        };
        let aad = context.marshal_text();
        let mut buf = sealed;
        let plain = k
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&aad),
                &mut buf,
            )
            .map_err(|_| KmsError::Decrypt)?;
        plain.try_into().map_err(|_| KmsError::Decrypt)
    }
}

/// A sealed DEK taken apart: (sealed bytes, iv, nonce, is ChaCha20).
type Parts = (Vec<u8>, [u8; 16], [u8; 12], bool);

/// Splits a sealed DEK: the binary form `sealed || iv || nonce`, or the
/// legacy JSON envelope.
fn parse_ciphertext(b: &[u8]) -> Option<Parts> {
    if b.first() == Some(&b'{')
        && b.last() == Some(&b'}')
        && let Some(parsed) = parse_legacy_json(b)
    {
        return Some(parsed);
    }
    if b.len() < 28 + 16 {
        return None;
    }
    let (sealed, tail) = b.split_at(b.len() - 28);
    Some((
        sealed.to_vec(),
        tail[..16].try_into().ok()?,
        tail[16..].try_into().ok()?,
        false,
    ))
}

/// `{"aead":"...","id":"...","iv":"<b64>","nonce":"<b64>","bytes":"<b64>"}`
/// with string values only (what MinIO wrote); anything else is `None`.
fn parse_legacy_json(b: &[u8]) -> Option<Parts> {
    let s = std::str::from_utf8(b).ok()?;
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    let mut fields: BTreeMap<&str, &str> = BTreeMap::new();
    for pair in inner.split(',') {
        let (k, v) = pair.split_once(':')?;
        let k = k.trim().strip_prefix('"')?.strip_suffix('"')?;
        let v = v.trim().strip_prefix('"')?.strip_suffix('"')?;
        if v.contains('\\') {
            return None;
        }
        fields.insert(k, v);
    }
    let chacha = match *fields.get("aead")? {
        "AES-256-GCM-HMAC-SHA-256" => false,
        "ChaCha20Poly1305" => true,
        _ => return None,
    };
    let iv: [u8; 16] = base64_decode(fields.get("iv")?)?.try_into().ok()?;
    let nonce: [u8; 12] = base64_decode(fields.get("nonce")?)?.try_into().ok()?;
    let bytes = base64_decode(fields.get("bytes")?)?;
    Some((bytes, iv, nonce, chacha))
}

/// HChaCha20: the ChaCha20 core on (key, 16-byte input), words 0..4 and
/// 12..16 of the state after 20 rounds, without the final addition.
pub fn hchacha20(key: &[u8; 32], input: &[u8; 16]) -> [u8; 32] {
    let mut s = [0u32; 16];
    s[..4].copy_from_slice(&[0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574]);
    for i in 0..8 {
        s[4 + i] = u32::from_le_bytes(key[4 * i..4 * i + 4].try_into().unwrap_or_default());
    }
    for i in 0..4 {
        s[12 + i] = u32::from_le_bytes(input[4 * i..4 * i + 4].try_into().unwrap_or_default());
    }
    fn qr(s: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
        s[a] = s[a].wrapping_add(s[b]);
        s[d] = (s[d] ^ s[a]).rotate_left(16);
        s[c] = s[c].wrapping_add(s[d]);
        s[b] = (s[b] ^ s[c]).rotate_left(12);
        s[a] = s[a].wrapping_add(s[b]);
        s[d] = (s[d] ^ s[a]).rotate_left(8);
        s[c] = s[c].wrapping_add(s[d]);
        s[b] = (s[b] ^ s[c]).rotate_left(7);
    }
    for _ in 0..10 {
        qr(&mut s, 0, 4, 8, 12);
        qr(&mut s, 1, 5, 9, 13);
        qr(&mut s, 2, 6, 10, 14);
        qr(&mut s, 3, 7, 11, 15);
        qr(&mut s, 0, 5, 10, 15);
        qr(&mut s, 1, 6, 11, 12);
        qr(&mut s, 2, 7, 8, 13);
        qr(&mut s, 3, 4, 9, 14);
    }
    let mut out = [0u8; 32];
    for (i, w) in s[..4].iter().chain(&s[12..]).enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// MinIO's base64 (Go's `base64.StdEncoding`): the standard alphabet,
/// padding written and required, no whitespace; bits after the last byte
/// need not be zero.
const BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

/// Standard base64 with padding.
pub fn base64_encode(data: &[u8]) -> String {
    BASE64.encode(data)
}

/// Standard base64 with padding (strict: no whitespace, canonical padding).
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    BASE64.decode(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip_and_strictness() {
        for n in 0..40 {
            let d: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            let e = base64_encode(&d);
            assert_eq!(base64_decode(&e).unwrap(), d);
        }
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        for bad in [
            "Zm9", "Zm9v!A==", "=Zm9", "Zg==Zg==", "Z===", "Zg", "Zm9v\n", " Zm9v",
        ] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
        // As Go decodes: the bits after the last byte may be set.
        assert_eq!(base64_decode("Zh==").unwrap(), b"f");
        assert_eq!(base64_decode("Zm9=").unwrap(), b"fo");
        assert_eq!(base64_decode("").unwrap(), b"");
    }

    /// RFC 8439 / draft-irtf-cfrg-xchacha section 2.2.1 test vector.
    #[test]
    fn hchacha20_known_answer() {
        let key: [u8; 32] = std::array::from_fn(|i| i as u8);
        let input: [u8; 16] = [
            0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x4a, 0x00, 0x00, 0x00, 0x00, 0x31, 0x41,
            0x59, 0x27,
        ];
        let want = "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc";
        let got: String = hchacha20(&key, &input)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn context_text_is_canonical() {
        let mut c = Context::default();
        assert_eq!(c.marshal_text(), b"{}");
        c.0.insert("b".into(), "x<y>&\"q\"\n\u{1}".into());
        c.0.insert("a".into(), "bucket/obj".into());
        assert_eq!(
            String::from_utf8(c.marshal_text()).unwrap(),
            r#"{"a":"bucket/obj","b":"x\u003cy\u003e\u0026\"q\"\n\u0001"}"#
        );
    }

    #[test]
    fn generate_and_decrypt() {
        let kms = StaticKms::parse("my-key:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap();
        assert_eq!(kms.default_key_id(), "my-key");
        let ctx = Context::single("bucket", "bucket/object");
        let dek = kms.generate_key("", &ctx, &[7u8; 60]).unwrap();
        assert_eq!(dek.ciphertext.len(), 32 + 16 + 28);
        assert_eq!(
            kms.decrypt("my-key", &dek.ciphertext, &ctx).unwrap(),
            dek.plaintext
        );
        assert_eq!(
            kms.decrypt(
                "my-key",
                &dek.ciphertext,
                &Context::single("bucket", "other")
            ),
            Err(KmsError::Decrypt)
        );
        assert_eq!(
            kms.decrypt("other", &dek.ciphertext, &ctx),
            Err(KmsError::KeyNotFound("other".into()))
        );
        let mut bad = dek.ciphertext.clone();
        bad[3] ^= 1;
        assert_eq!(kms.decrypt("my-key", &bad, &ctx), Err(KmsError::Decrypt));
        assert!(format!("{dek:?}").contains("ciphertext_len"));
        for bad in ["nokey", ":AAAA", "k:notbase64!", "k:AAAA"] {
            assert!(StaticKms::parse(bad).is_err(), "{bad}");
        }
    }
}

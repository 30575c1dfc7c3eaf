//! Server-side encryption in MinIO's format, wired into requests.
//!
//! What is stored is what MinIO stores: the DARE ciphertext as the object's
//! bytes, the sealed keys in the internal metadata, the part's actual
//! (plaintext) size, and the ETag sealed with the object key; so MinIO with
//! the same KMS key reads Tessera's encrypted objects and the reverse.
//!
//! - `headers`: which mode a request asks for (SSE-C, SSE-S3, SSE-KMS, the
//!   bucket's default, or the server's auto-encryption), and the response
//!   headers that say how an object is encrypted.
//! - `keys`: a fresh sealed object key for a write; the unsealed key of a
//!   stored object and its DARE streams.
//! - `encrypt`: a write's body encrypted into DARE packages, with its
//!   plaintext MD5 and ETags.
//! - `decrypt`: a plaintext range of a stored object, decrypted from just
//!   the packages it needs.
//! - `view`: the ETag and size clients see of an encrypted object.

mod decrypt;
mod encrypt;
mod headers;
mod keys;
mod view;

pub(crate) use decrypt::{read_plain, read_plain_chunks};
pub(crate) use encrypt::put_encrypted;
pub use headers::EncryptionConfig;
pub(crate) use headers::{
    Mode, SSEC, SSEC_COPY, client_key, mode_headers, parse_bucket_default, write_mode_for,
};
pub(crate) use keys::{Existing, NewKey, existing_key, new_key, sealed_of};
pub(crate) use view::{client_view, listed_view, plain_size};

use ring::rand::{SecureRandom, SystemRandom};

use crate::error::S3Error;

/// MinIO's mark of an encrypted multipart object (each part its own DARE
/// stream under its part key).
pub(crate) const META_MULTIPART: &str = "X-Minio-Internal-Encrypted-Multipart";

pub(crate) fn random<const N: usize>() -> Result<[u8; N], S3Error> {
    let mut b = [0u8; N];
    SystemRandom::new()
        .fill(&mut b)
        .map_err(|_| S3Error::internal("the system random generator failed"))?;
    Ok(b)
}

/// Sets the response header `name` (a value that is not a valid header
/// value is left out).
fn set_header(h: &mut http::HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = http::HeaderValue::from_str(value) {
        h.insert(name, v);
    }
}

/// A deterministic plaintext of `len` bytes, for the tests.
#[cfg(test)]
fn plaintext(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ (i >> 11)) as u8)
        .collect()
}

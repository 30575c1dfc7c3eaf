//! The payload encryption of MinIO's admin API, as madmin-go's
//! `EncryptData` / `DecryptData` do it: `mc admin user add`, `mc admin user
//! svcacct add`, `mc admin config set` and others send their request bodies
//! encrypted under a key derived from the caller's secret key, and MinIO
//! answers some calls the same way (`mc admin config get`, `mc admin user
//! list`, the new credentials of `svcacct add`, service account listings
//! and info, ...).
//!
//! A payload is
//!
//! | bytes | field |
//! |---|---|
//! | 0..32 | salt, random per payload |
//! | 32 | algorithm id (see [`Algorithm`]) |
//! | 33..41 | stream nonce, random per payload |
//! | 41.. | the plaintext as a sio-go stream (below) |
//!
//! The key is 32 bytes derived from the password (the secret key's bytes)
//! and the salt: Argon2id (version 0x13, 1 pass, 64 MiB, 4 lanes) for ids
//! 0 and 1, PBKDF2-HMAC-SHA256 with 8192 iterations for id 2, which madmin
//! produces only when built with the `fips` tag. Id 0 seals the stream with
//! AES-256-GCM, id 1 with ChaCha20-Poly1305 (madmin picks it on CPUs
//! without AES instructions), id 2 with AES-256-GCM. Decryption accepts all
//! three, as madmin does; any other id is refused.
//!
//! The stream is secure-io/sio-go's format with its default 16 KiB
//! fragment size, not DARE (`crate::dare`): no headers, only ciphertexts.
//! The plaintext is cut into fragments of 16384 bytes; every fragment but
//! the last holds exactly 16384 bytes, the last one holds 0..=16384 (0 only
//! when the whole plaintext is empty), and each is sealed into `ciphertext
//! || tag (16)`. Fragment `i` (counting from 1) is sealed under the 12-byte
//! AEAD nonce `nonce (8) || i as u32, little endian`, with the 17 bytes of
//! associated data `flag || T`, where the flag is `0x80` on the last
//! fragment and `0x00` on the others, and `T` is the tag of sealing an
//! empty message with no associated data under the sequence number 0. A
//! reader tells fragments apart by length alone: while more than 16400
//! bytes remain, the next 16400 are a non-final fragment; what remains then
//! (16..=16400 bytes) is the final one. So a truncated, extended,
//! reordered, duplicated or spliced stream fails to authenticate, and so
//! does a stream sealed under another password, salt, nonce or algorithm.
//! sio-go itself also accepts an empty final fragment after full ones
//! (which no writer produces); so does [`decrypt`].
//!
//! An early madmin (copyright 2018, then in MinIO's own tree) wrote `salt
//! || DARE stream` with no id byte; madmin-go v3, which current MinIO and
//! `mc` use, no longer reads it, and neither does this module.
//!
//! This module does no I/O and draws no randomness: [`encrypt`] takes the
//! salt and the nonce from the caller, who must pass fresh random values.
//!
//! ## Cost
//!
//! Argon2id fills 64 MiB per call, on the calling thread (the lanes are
//! computed one after the other: the result does not depend on that, and
//! it keeps rayon out). Measured on this project's 2-core development
//! machine (AMD EPYC, AVX2), the median of 7 calls on a 100-byte payload,
//! stable over three runs (`cargo bench -p tessera-benches --bench sse --
//! madmin` measures the same calls):
//!
//! | call | median |
//! |---|---|
//! | [`decrypt`], ids 0 and 1 (Argon2id in fresh memory) | 54 ms |
//! | [`decrypt_with`], ids 0 and 1 (reused [`Argon2Memory`]) | 25 ms |
//! | [`decrypt`], id 2 (PBKDF2) | 1.2 ms |
//! | the stream alone, 1 MiB, AES-256-GCM / ChaCha20-Poly1305 | 0.13 / 0.40 ms |
//!
//! Fresh memory costs twice as much because the kernel maps and zeroes the
//! 64 MiB on every call. For comparison, madmin-go's `DecryptData` took a
//! median of 18 ms on the same machine (4 goroutines on 2 cores, memory
//! reused by Go's allocator; its first call took 123 ms). The server runs
//! this once per encrypted admin request and response, so it belongs on a
//! blocking thread, with the calls in flight bounded: each holds 64 MiB
//! (madmin serialises its Argon2id calls behind a process-wide mutex; one
//! [`Argon2Memory`] behind a mutex does the same and saves half the cost).
//! [`decrypt`] refuses payloads over [`MAX_CIPHERTEXT_LEN`], malformed
//! headers, unknown ids and impossible stream lengths before deriving any
//! key, so those cost nothing; MinIO itself refuses admin configuration
//! bodies over 262272 bytes before decrypting them, which is the body limit
//! the gateway should apply.

use std::num::NonZeroU32;

use ring::aead::{AES_256_GCM, Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use zeroize::{Zeroize as _, Zeroizing};

/// Bytes of the salt that leads a payload.
pub const SALT_LEN: usize = 32;
/// Bytes of the stream nonce (sio-go's nonce: the AEAD's 12 less the 4 of
/// the sequence number).
pub const NONCE_LEN: usize = 8;
/// Bytes before the stream: salt, algorithm id, nonce.
pub const HEADER_LEN: usize = SALT_LEN + 1 + NONCE_LEN;
/// Bytes of an authentication tag.
pub const TAG_LEN: usize = 16;
/// Plaintext bytes of every fragment but the last (sio-go's `BufSize`).
pub const FRAGMENT_LEN: usize = 1 << 14;
/// Bytes of a sealed full fragment.
pub const SEALED_FRAGMENT_LEN: usize = FRAGMENT_LEN + TAG_LEN;
/// The largest payload [`decrypt`] accepts (16 MiB); larger ones are
/// refused before any key is derived, so a hostile body costs no key
/// derivation and no allocation beyond its own size.
pub const MAX_CIPHERTEXT_LEN: usize = 16 << 20;
/// Argon2id passes.
pub const ARGON2ID_TIME: u32 = 1;
/// Argon2id memory in KiB (64 MiB).
pub const ARGON2ID_MEMORY_KIB: u32 = 64 * 1024;
/// Argon2id lanes (madmin's "threads"; part of the result).
pub const ARGON2ID_LANES: u32 = 4;
/// PBKDF2-HMAC-SHA256 iterations of id 2.
pub const PBKDF2_ITERATIONS: u32 = 8192;

/// Bytes of a derived key.
const KEY_LEN: usize = 32;
/// The associated-data flag of the final fragment.
const FINAL_FLAG: u8 = 0x80;

/// The key derivation and AEAD of a payload, by its id byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Id 0: Argon2id key, AES-256-GCM stream (what madmin and MinIO send on
    /// CPUs with AES instructions, so the one to send).
    Argon2idAes256Gcm,
    /// Id 1: Argon2id key, ChaCha20-Poly1305 stream.
    Argon2idChaCha20Poly1305,
    /// Id 2: PBKDF2-HMAC-SHA256 key, AES-256-GCM stream (madmin's FIPS
    /// build).
    Pbkdf2Aes256Gcm,
}

impl Algorithm {
    /// Every algorithm, in id order.
    pub const ALL: [Algorithm; 3] = [
        Algorithm::Argon2idAes256Gcm,
        Algorithm::Argon2idChaCha20Poly1305,
        Algorithm::Pbkdf2Aes256Gcm,
    ];

    /// The id byte of a payload.
    pub fn id(self) -> u8 {
        match self {
            Algorithm::Argon2idAes256Gcm => 0x00,
            Algorithm::Argon2idChaCha20Poly1305 => 0x01,
            Algorithm::Pbkdf2Aes256Gcm => 0x02,
        }
    }

    /// The algorithm of an id byte.
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            0x00 => Some(Algorithm::Argon2idAes256Gcm),
            0x01 => Some(Algorithm::Argon2idChaCha20Poly1305),
            0x02 => Some(Algorithm::Pbkdf2Aes256Gcm),
            _ => None,
        }
    }

    fn aead_key(self, key: &[u8; KEY_LEN]) -> LessSafeKey {
        let alg = match self {
            Algorithm::Argon2idAes256Gcm | Algorithm::Pbkdf2Aes256Gcm => &AES_256_GCM,
            Algorithm::Argon2idChaCha20Poly1305 => &CHACHA20_POLY1305,
        };
        // Both algorithms take 32-byte keys, so this cannot fail.
        LessSafeKey::new(UnboundKey::new(alg, key).unwrap_or_else(|_| unreachable!()))
    }
}

/// Why a payload did not decrypt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MadminError {
    /// The payload is longer than the limit.
    #[error("encrypted payload of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// The payload's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The payload is shorter than its 41-byte header (madmin's
    /// `ErrUnexpectedHeader`).
    #[error("encrypted payload shorter than its header")]
    UnexpectedHeader,
    /// The id byte names no algorithm.
    #[error("invalid encryption algorithm id {0:#04x}")]
    UnknownAlgorithm(u8),
    /// The key derivation refused its input (a password over 4 GiB) or
    /// could not allocate its memory.
    #[error("key derivation failed")]
    KeyDerivation,
    /// A fragment did not authenticate: wrong password (secret key), or
    /// the payload was damaged, truncated, extended or reordered (madmin's
    /// `ErrMaliciousData`).
    #[error("encrypted payload is not authentic")]
    NotAuthentic,
}

/// Bytes of the payload of `plain_len` bytes of plaintext.
pub fn encrypted_len(plain_len: usize) -> usize {
    HEADER_LEN + plain_len + plain_len.div_ceil(FRAGMENT_LEN).max(1) * TAG_LEN
}

/// Whether `data` looks like a payload: longer than the salt and a known
/// id byte after it (madmin's `IsEncrypted`; a heuristic, not a check).
pub fn is_encrypted(data: &[u8]) -> bool {
    data.len() > SALT_LEN && Algorithm::from_id(data[SALT_LEN]).is_some()
}

/// The working memory of Argon2id (64 MiB), kept to be reused: a key
/// derivation in fresh memory spends about half its time having the kernel
/// map and zero the pages (see the module docs). Keep one per concurrent
/// caller (for instance behind a mutex, as madmin serialises its Argon2id
/// calls); it stays resident once used. Each derivation overwrites every
/// block before it reads it, so what a previous call left does not matter;
/// nor is it wiped after a call (madmin does not wipe either), so it holds
/// what the last call's key follows from, as the process holds that
/// call's plaintext.
pub struct Argon2Memory {
    blocks: Vec<argon2::Block>,
}

impl Argon2Memory {
    /// Allocates the 64 MiB.
    pub fn new() -> Self {
        Argon2Memory {
            blocks: vec![argon2::Block::default(); ARGON2ID_MEMORY_KIB as usize],
        }
    }
}

impl Default for Argon2Memory {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Argon2Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Argon2Memory")
            .field("blocks", &self.blocks.len())
            .finish()
    }
}

/// The 32-byte key of `algorithm` for `password` and `salt`: Argon2id or
/// PBKDF2-HMAC-SHA256 as madmin derives it, Argon2id in `memory` if given
/// (else in 64 MiB allocated for the call). This is the costly step (see
/// the module docs).
pub fn derive_key(
    algorithm: Algorithm,
    password: &[u8],
    salt: &[u8; SALT_LEN],
    memory: Option<&mut Argon2Memory>,
) -> Result<Zeroizing<[u8; KEY_LEN]>, MadminError> {
    let mut key = Zeroizing::new([0u8; KEY_LEN]);
    match algorithm {
        Algorithm::Argon2idAes256Gcm | Algorithm::Argon2idChaCha20Poly1305 => {
            let params = argon2::Params::new(
                ARGON2ID_MEMORY_KIB,
                ARGON2ID_TIME,
                ARGON2ID_LANES,
                Some(KEY_LEN),
            )
            .map_err(|_| MadminError::KeyDerivation)?;
            let argon2 =
                argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
            match memory {
                Some(m) => argon2.hash_password_into_with_memory(
                    password,
                    salt,
                    key.as_mut(),
                    &mut m.blocks,
                ),
                None => argon2.hash_password_into(password, salt, key.as_mut()),
            }
            .map_err(|_| MadminError::KeyDerivation)?;
        }
        Algorithm::Pbkdf2Aes256Gcm => {
            const ITERATIONS: NonZeroU32 = NonZeroU32::new(PBKDF2_ITERATIONS).unwrap();
            ring::pbkdf2::derive(
                ring::pbkdf2::PBKDF2_HMAC_SHA256,
                ITERATIONS,
                salt,
                password,
                key.as_mut(),
            );
        }
    }
    Ok(key)
}

/// Encrypts `plaintext` as madmin's `EncryptData` does, with the caller's
/// fresh random `salt` and `nonce` (a salt or nonce used twice with the
/// same password repeats the key and the AEAD nonces).
///
/// # Panics
/// If the key derivation fails: a password of 4 GiB or more, or 64 MiB
/// that cannot be allocated (as an allocation failure of the output would);
/// or if the plaintext is 64 TiB or more (see [`seal_stream`]).
pub fn encrypt(
    password: &[u8],
    salt: [u8; SALT_LEN],
    nonce: [u8; NONCE_LEN],
    algorithm: Algorithm,
    plaintext: &[u8],
) -> Vec<u8> {
    encrypt_in(None, password, salt, nonce, algorithm, plaintext)
}

/// [`encrypt`] with Argon2id in reused `memory`.
///
/// # Panics
/// If the password is 4 GiB or longer, or the plaintext 64 TiB or more.
pub fn encrypt_with(
    memory: &mut Argon2Memory,
    password: &[u8],
    salt: [u8; SALT_LEN],
    nonce: [u8; NONCE_LEN],
    algorithm: Algorithm,
    plaintext: &[u8],
) -> Vec<u8> {
    encrypt_in(Some(memory), password, salt, nonce, algorithm, plaintext)
}

fn encrypt_in(
    memory: Option<&mut Argon2Memory>,
    password: &[u8],
    salt: [u8; SALT_LEN],
    nonce: [u8; NONCE_LEN],
    algorithm: Algorithm,
    plaintext: &[u8],
) -> Vec<u8> {
    let key = derive_key(algorithm, password, &salt, memory)
        .unwrap_or_else(|e| panic!("madmin encryption: {e}"));
    let mut out = Vec::with_capacity(encrypted_len(plaintext.len()));
    out.extend_from_slice(&salt);
    out.push(algorithm.id());
    out.extend_from_slice(&nonce);
    Stream::new(algorithm, &key, nonce).seal_into(plaintext, &mut out);
    out
}

/// Decrypts a payload of madmin's `EncryptData` (any algorithm id) with
/// `password`, refusing payloads over [`MAX_CIPHERTEXT_LEN`]. Nothing of
/// the plaintext is returned unless every fragment authenticates and the
/// stream ends with its final fragment.
pub fn decrypt(password: &[u8], ciphertext: &[u8]) -> Result<Vec<u8>, MadminError> {
    decrypt_in(None, password, ciphertext)
}

/// [`decrypt`] with Argon2id in reused `memory`.
pub fn decrypt_with(
    memory: &mut Argon2Memory,
    password: &[u8],
    ciphertext: &[u8],
) -> Result<Vec<u8>, MadminError> {
    decrypt_in(Some(memory), password, ciphertext)
}

fn decrypt_in(
    memory: Option<&mut Argon2Memory>,
    password: &[u8],
    ciphertext: &[u8],
) -> Result<Vec<u8>, MadminError> {
    if ciphertext.len() > MAX_CIPHERTEXT_LEN {
        return Err(MadminError::TooLarge {
            len: ciphertext.len(),
            max: MAX_CIPHERTEXT_LEN,
        });
    }
    if ciphertext.len() < HEADER_LEN {
        return Err(MadminError::UnexpectedHeader);
    }
    let (header, stream) = ciphertext.split_at(HEADER_LEN);
    let algorithm = Algorithm::from_id(header[SALT_LEN])
        .ok_or(MadminError::UnknownAlgorithm(header[SALT_LEN]))?;
    // A stream whose final fragment cannot even hold a tag is refused
    // before the costly key derivation.
    stream_plain_len(stream.len()).ok_or(MadminError::NotAuthentic)?;
    let salt: &[u8; SALT_LEN] = header[..SALT_LEN]
        .try_into()
        .unwrap_or_else(|_| unreachable!());
    let nonce: [u8; NONCE_LEN] = header[SALT_LEN + 1..]
        .try_into()
        .unwrap_or_else(|_| unreachable!());
    let key = derive_key(algorithm, password, salt, memory)?;
    open_stream(algorithm, &key, nonce, stream)
}

/// Seals `plaintext` as a sio-go stream (the part of a payload after its
/// header) under an already derived `key`.
///
/// # Panics
/// If the plaintext needs 2^32 fragments or more (64 TiB).
pub fn seal_stream(
    algorithm: Algorithm,
    key: &[u8; KEY_LEN],
    nonce: [u8; NONCE_LEN],
    plaintext: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(encrypted_len(plaintext.len()) - HEADER_LEN);
    Stream::new(algorithm, key, nonce).seal_into(plaintext, &mut out);
    out
}

/// Opens a sio-go stream (the part of a payload after its header) under an
/// already derived `key`.
pub fn open_stream(
    algorithm: Algorithm,
    key: &[u8; KEY_LEN],
    nonce: [u8; NONCE_LEN],
    stream: &[u8],
) -> Result<Vec<u8>, MadminError> {
    let plain_len = stream_plain_len(stream.len()).ok_or(MadminError::NotAuthentic)?;
    let mut out = Vec::with_capacity(plain_len + TAG_LEN);
    match Stream::new(algorithm, key, nonce).open_into(stream, &mut out) {
        Ok(()) => Ok(out),
        Err(e) => {
            // ring leaves the buffer's contents unspecified on failure.
            out.zeroize();
            Err(e)
        }
    }
}

/// The plaintext length of a stream of `len` bytes, as a sio-go reader
/// splits it (full fragments while more than one remains, the rest final),
/// or `None` if the final fragment is shorter than a tag.
fn stream_plain_len(len: usize) -> Option<usize> {
    let full = len.saturating_sub(1) / SEALED_FRAGMENT_LEN;
    let last = len - full * SEALED_FRAGMENT_LEN;
    (last >= TAG_LEN).then(|| full * FRAGMENT_LEN + last - TAG_LEN)
}

/// The AEAD, nonce prefix and associated data of one stream.
struct Stream {
    key: LessSafeKey,
    nonce: [u8; NONCE_LEN],
    /// `flag || tag of an empty message under sequence number 0`.
    aad: [u8; 1 + TAG_LEN],
}

impl Stream {
    fn new(algorithm: Algorithm, key: &[u8; KEY_LEN], nonce: [u8; NONCE_LEN]) -> Self {
        let key = algorithm.aead_key(key);
        let tag = key
            .seal_in_place_separate_tag(Self::nonce_of(&nonce, 0), Aad::empty(), &mut [])
            .unwrap_or_else(|_| unreachable!());
        let mut aad = [0u8; 1 + TAG_LEN];
        aad[1..].copy_from_slice(tag.as_ref());
        Stream { key, nonce, aad }
    }

    fn nonce_of(prefix: &[u8; NONCE_LEN], seq: u32) -> Nonce {
        let mut n = [0u8; 12];
        n[..NONCE_LEN].copy_from_slice(prefix);
        n[NONCE_LEN..].copy_from_slice(&seq.to_le_bytes());
        Nonce::assume_unique_for_key(n)
    }

    fn aad(&self, last: bool) -> [u8; 1 + TAG_LEN] {
        let mut aad = self.aad;
        aad[0] = if last { FINAL_FLAG } else { 0 };
        aad
    }

    /// Appends the sealed fragments of `plaintext` to `out`.
    fn seal_into(&self, plaintext: &[u8], out: &mut Vec<u8>) {
        // As sio-go's writer: full fragments while more than one fragment
        // remains, then the rest (0..=16384 bytes) as the final one.
        let full = plaintext.len().saturating_sub(1) / FRAGMENT_LEN;
        let mut fragments = plaintext.chunks(FRAGMENT_LEN);
        for i in 0..=full {
            let chunk = fragments.next().unwrap_or(&[]);
            let last = i == full;
            let seq = u32::try_from(i + 1)
                .unwrap_or_else(|_| panic!("madmin encryption: plaintext too long"));
            let start = out.len();
            out.extend_from_slice(chunk);
            let tag = self
                .key
                .seal_in_place_separate_tag(
                    Self::nonce_of(&self.nonce, seq),
                    Aad::from(self.aad(last)),
                    &mut out[start..],
                )
                .unwrap_or_else(|_| unreachable!());
            out.extend_from_slice(tag.as_ref());
        }
    }

    /// Appends the plaintext of `stream` to `out`, every fragment
    /// authenticated.
    fn open_into(&self, mut stream: &[u8], out: &mut Vec<u8>) -> Result<(), MadminError> {
        let mut seq: u32 = 1;
        loop {
            let last = stream.len() <= SEALED_FRAGMENT_LEN;
            let n = if last {
                stream.len()
            } else {
                SEALED_FRAGMENT_LEN
            };
            if n < TAG_LEN {
                return Err(MadminError::NotAuthentic);
            }
            let start = out.len();
            out.extend_from_slice(&stream[..n]);
            self.key
                .open_in_place(
                    Self::nonce_of(&self.nonce, seq),
                    Aad::from(self.aad(last)),
                    &mut out[start..],
                )
                .map_err(|_| MadminError::NotAuthentic)?;
            out.truncate(start + n - TAG_LEN);
            if last {
                return Ok(());
            }
            stream = &stream[n..];
            // sio-go's reader gives up when the sequence number wraps.
            seq = seq.checked_add(1).ok_or(MadminError::NotAuthentic)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths() {
        assert_eq!(encrypted_len(0), 41 + 16);
        assert_eq!(encrypted_len(1), 41 + 17);
        assert_eq!(encrypted_len(16384), 41 + 16400);
        assert_eq!(encrypted_len(16385), 41 + 16400 + 17);
        assert_eq!(stream_plain_len(0), None);
        assert_eq!(stream_plain_len(15), None);
        assert_eq!(stream_plain_len(16), Some(0));
        assert_eq!(stream_plain_len(16400), Some(16384));
        assert_eq!(stream_plain_len(16401), None);
        assert_eq!(stream_plain_len(16415), None);
        assert_eq!(stream_plain_len(16416), Some(16384));
        for n in [0, 1, 100, 16383, 16384, 16385, 32768, 32769, 100_000] {
            assert_eq!(
                stream_plain_len(encrypted_len(n) - HEADER_LEN),
                Some(n),
                "{n}"
            );
        }
    }

    #[test]
    fn ids() {
        for a in Algorithm::ALL {
            assert_eq!(Algorithm::from_id(a.id()), Some(a));
        }
        assert_eq!(Algorithm::from_id(3), None);
        assert!(!is_encrypted(&[0; 32]));
        assert!(is_encrypted(&[0; 33]));
        let mut d = [0u8; 50];
        d[32] = 7;
        assert!(!is_encrypted(&d));
    }

    #[test]
    fn refused_before_key_derivation() {
        assert_eq!(decrypt(b"p", &[]), Err(MadminError::UnexpectedHeader));
        assert_eq!(decrypt(b"p", &[0; 40]), Err(MadminError::UnexpectedHeader));
        assert_eq!(decrypt(b"p", &[0; 41]), Err(MadminError::NotAuthentic));
        assert_eq!(decrypt(b"p", &[0; 56]), Err(MadminError::NotAuthentic));
        let mut bad = [0u8; 60];
        bad[32] = 3;
        assert_eq!(decrypt(b"p", &bad), Err(MadminError::UnknownAlgorithm(3)));
        let big = vec![0u8; MAX_CIPHERTEXT_LEN + 1];
        assert!(matches!(
            decrypt(b"p", &big),
            Err(MadminError::TooLarge { .. })
        ));
    }

    #[test]
    fn stream_round_trip() {
        let key = [9u8; 32];
        for alg in Algorithm::ALL {
            for n in [0, 1, 16384, 16385, 40000] {
                let plain: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
                let s = seal_stream(alg, &key, [3; 8], &plain);
                assert_eq!(s.len(), encrypted_len(n) - HEADER_LEN);
                assert_eq!(open_stream(alg, &key, [3; 8], &s).unwrap(), plain);
                assert!(open_stream(alg, &key, [4; 8], &s).is_err());
            }
        }
    }
}

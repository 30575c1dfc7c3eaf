//! DARE 2.0: a stream cut into packages of 64 KiB of plaintext, each sealed
//! with an AEAD, in the format MinIO encrypts objects with (minio/sio).
//!
//! A package is `header (16) || ciphertext (1..=65536) || tag (16)`:
//!
//! | bytes | field |
//! |---|---|
//! | 0 | version, `0x20` |
//! | 1 | cipher suite: 0 AES-256-GCM, 1 ChaCha20-Poly1305 |
//! | 2..4 | plaintext length - 1, little endian |
//! | 4..16 | the stream's 12-byte nonce; bit 7 of byte 4 marks the final package |
//!
//! The AEAD nonce of package `i` is bytes 4..16 of its header with the last
//! four bytes (a little-endian u32) XORed with `i`; the associated data is
//! bytes 0..4. Every package but the last holds exactly 64 KiB, the last
//! one carries the final flag and 1..=64 KiB, and every package repeats the
//! first one's nonce. So a reordered, duplicated, spliced (another stream's
//! package) or truncated stream fails to open, and no plaintext of a package
//! is returned before its tag is verified. An empty stream is zero bytes.

use ring::aead::{AES_256_GCM, Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use subtle::ConstantTimeEq as _;

/// The version byte of DARE 2.0.
pub const VERSION: u8 = 0x20;
/// Bytes of a package header.
pub const HEADER_LEN: usize = 16;
/// Bytes of an authentication tag.
pub const TAG_LEN: usize = 16;
/// Plaintext bytes of every package but the last.
pub const PAYLOAD_LEN: usize = 1 << 16;
/// Bytes of a full package.
pub const PACKAGE_LEN: usize = HEADER_LEN + PAYLOAD_LEN + TAG_LEN;
/// Bytes a package adds to its plaintext.
pub const OVERHEAD: usize = HEADER_LEN + TAG_LEN;

/// The AEAD of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CipherSuite {
    /// AES-256 in GCM mode (suite byte 0).
    Aes256Gcm,
    /// ChaCha20-Poly1305 (suite byte 1).
    ChaCha20Poly1305,
}

impl CipherSuite {
    /// The suite byte in a package header.
    pub fn id(self) -> u8 {
        match self {
            CipherSuite::Aes256Gcm => 0,
            CipherSuite::ChaCha20Poly1305 => 1,
        }
    }

    /// The suite of a header byte.
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(CipherSuite::Aes256Gcm),
            1 => Some(CipherSuite::ChaCha20Poly1305),
            _ => None,
        }
    }

    fn key(self, key: &[u8; 32]) -> LessSafeKey {
        let alg = match self {
            CipherSuite::Aes256Gcm => &AES_256_GCM,
            CipherSuite::ChaCha20Poly1305 => &CHACHA20_POLY1305,
        };
        // Both algorithms take 32-byte keys, so this cannot fail.
        LessSafeKey::new(UnboundKey::new(alg, key).unwrap_or_else(|_| unreachable!()))
    }
}

/// Why a stream did not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DareError {
    /// The version byte is not `0x20`.
    #[error("package {0}: unsupported DARE version")]
    UnsupportedVersion(u64),
    /// The suite byte is unknown, or differs from the first package's.
    #[error("package {0}: unsupported or changed cipher suite")]
    UnsupportedCipher(u64),
    /// The package's length does not match its header, or a package other
    /// than the last is not full.
    #[error("package {0}: invalid payload size")]
    InvalidPayloadSize(u64),
    /// The nonce differs from the stream's (a package of another stream).
    #[error("package {0}: nonce does not belong to this stream")]
    NonceMismatch(u64),
    /// Authentication failed: the package was altered, reordered or is not
    /// encrypted with this key.
    #[error("package {0}: authentication failed")]
    TagMismatch(u64),
    /// Data after the final package.
    #[error("data after the final package")]
    UnexpectedData,
    /// The stream ended before its final package.
    #[error("stream truncated: no final package")]
    Truncated,
    /// More than 2^32 packages.
    #[error("stream too long")]
    TooLong,
}

/// Bytes of the DARE encoding of `plain_len` bytes of plaintext.
pub fn encrypted_len(plain_len: u64) -> u64 {
    plain_len + plain_len.div_ceil(PAYLOAD_LEN as u64) * OVERHEAD as u64
}

/// Plaintext bytes of a DARE stream of `cipher_len` bytes, if that is a
/// possible length.
pub fn decrypted_len(cipher_len: u64) -> Option<u64> {
    let full = cipher_len / PACKAGE_LEN as u64;
    let rest = cipher_len % PACKAGE_LEN as u64;
    match rest {
        0 => Some(full * PAYLOAD_LEN as u64),
        r if r > OVERHEAD as u64 => Some(full * PAYLOAD_LEN as u64 + r - OVERHEAD as u64),
        _ => None,
    }
}

/// For a plaintext range `offset..offset + len` (len > 0): the first
/// package to decrypt, the ciphertext byte range to read, and how many
/// plaintext bytes of the first package to skip. `plain_len` is the whole
/// stream's plaintext size.
pub fn package_range(offset: u64, len: u64, plain_len: u64) -> (u64, std::ops::Range<u64>, usize) {
    let p = PAYLOAD_LEN as u64;
    let first = offset / p;
    let last = (offset + len - 1) / p;
    let start = first * PACKAGE_LEN as u64;
    let end = ((last + 1) * PACKAGE_LEN as u64).min(encrypted_len(plain_len));
    (first, start..end, (offset - first * p) as usize)
}

/// Seals a stream, package by package.
pub struct Encryptor {
    key: LessSafeKey,
    suite: CipherSuite,
    nonce: [u8; 12],
    seq: u64,
    finished: bool,
}

impl std::fmt::Debug for Encryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encryptor")
            .field("suite", &self.suite)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl Encryptor {
    /// A stream sealed with `key`, whose 12-byte `nonce` must be random (a
    /// fresh key per stream is what makes DARE tamper-proof).
    pub fn new(key: &[u8; 32], nonce: [u8; 12], suite: CipherSuite) -> Self {
        Encryptor {
            key: suite.key(key),
            suite,
            nonce,
            seq: 0,
            finished: false,
        }
    }

    /// Seals one package of `plain` (1..=64 KiB; exactly 64 KiB unless
    /// `last`) and appends it to `out`.
    pub fn seal_package(
        &mut self,
        plain: &[u8],
        last: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), DareError> {
        if self.finished {
            return Err(DareError::UnexpectedData);
        }
        if plain.is_empty() || plain.len() > PAYLOAD_LEN || (!last && plain.len() != PAYLOAD_LEN) {
            return Err(DareError::InvalidPayloadSize(self.seq));
        }
        let seq = u32::try_from(self.seq).map_err(|_| DareError::TooLong)?;
        let mut header = [0u8; HEADER_LEN];
        header[0] = VERSION;
        header[1] = self.suite.id();
        header[2..4].copy_from_slice(&((plain.len() - 1) as u16).to_le_bytes());
        header[4..16].copy_from_slice(&self.nonce);
        if last {
            header[4] |= 0x80;
        } else {
            header[4] &= 0x7f;
        }
        let nonce = package_nonce(&header, seq);
        let start = out.len();
        out.extend_from_slice(&header);
        out.extend_from_slice(plain);
        let tag = self
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&header[..4]),
                &mut out[start + HEADER_LEN..],
            )
            .map_err(|_| DareError::TooLong)?;
        out.extend_from_slice(tag.as_ref());
        self.seq += 1;
        self.finished = last;
        Ok(())
    }

    /// Seals a whole plaintext.
    pub fn seal_all(mut self, plain: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(encrypted_len(plain.len() as u64) as usize);
        let n = plain.len().div_ceil(PAYLOAD_LEN);
        for (i, chunk) in plain.chunks(PAYLOAD_LEN).enumerate() {
            // Sizes are valid by construction.
            let _ = self.seal_package(chunk, i + 1 == n, &mut out);
        }
        out
    }
}

/// The AEAD nonce of package `seq`: header bytes 4..16 with the last four
/// XORed with `seq` (little endian).
fn package_nonce(header: &[u8; HEADER_LEN], seq: u32) -> [u8; 12] {
    let mut n = [0u8; 12];
    n.copy_from_slice(&header[4..16]);
    let tail = u32::from_le_bytes([n[8], n[9], n[10], n[11]]) ^ seq;
    n[8..12].copy_from_slice(&tail.to_le_bytes());
    n
}

/// Opens a stream package by package, from package `start_seq` (0 for the
/// whole stream; a later one for a range read).
pub struct Decryptor {
    key: [u8; 32],
    keys: [Option<LessSafeKey>; 2],
    seq: u64,
    reference: Option<[u8; HEADER_LEN]>,
    finished: bool,
}

impl std::fmt::Debug for Decryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decryptor")
            .field("seq", &self.seq)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl Decryptor {
    /// Opens packages sealed with `key`, the first one expected to be
    /// package number `start_seq`.
    pub fn new(key: &[u8; 32], start_seq: u64) -> Self {
        Decryptor {
            key: *key,
            keys: [None, None],
            seq: start_seq,
            reference: None,
            finished: false,
        }
    }

    /// Whether the final package was opened.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// The length of the package that starts `buf` (which must hold at
    /// least its 16-byte header), or an error if the header is invalid.
    pub fn package_len(&self, buf: &[u8]) -> Result<usize, DareError> {
        if buf.len() < HEADER_LEN {
            return Err(DareError::Truncated);
        }
        if buf[0] != VERSION {
            return Err(DareError::UnsupportedVersion(self.seq));
        }
        Ok(HEADER_LEN + usize::from(u16::from_le_bytes([buf[2], buf[3]])) + 1 + TAG_LEN)
    }

    /// Opens one whole package (`package_len` bytes) and appends its
    /// plaintext to `out`; nothing is appended unless it authenticates.
    pub fn open_package(&mut self, package: &[u8], out: &mut Vec<u8>) -> Result<(), DareError> {
        if self.finished {
            return Err(DareError::UnexpectedData);
        }
        if package.len() < HEADER_LEN {
            return Err(DareError::InvalidPayloadSize(self.seq));
        }
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&package[..HEADER_LEN]);
        let start = out.len();
        out.extend_from_slice(&package[HEADER_LEN..]);
        match self.open_detached(&header, &mut out[start..]) {
            Ok(n) => {
                out.truncate(start + n);
                Ok(())
            }
            Err(e) => {
                out.truncate(start);
                Err(e)
            }
        }
    }

    /// Opens one whole package in place, its header given apart: `sealed`
    /// holds the rest of the package (ciphertext and tag). On success the
    /// plaintext is `sealed[..n]` and `n` is returned; on failure the
    /// contents of `sealed` are unspecified and must not be used (they are
    /// not authenticated plaintext).
    pub fn open_detached(
        &mut self,
        header: &[u8; HEADER_LEN],
        sealed: &mut [u8],
    ) -> Result<usize, DareError> {
        let seq_no = self.seq;
        if self.finished {
            return Err(DareError::UnexpectedData);
        }
        let package_len = HEADER_LEN + sealed.len();
        if package_len <= OVERHEAD {
            return Err(DareError::InvalidPayloadSize(seq_no));
        }
        if header[0] != VERSION {
            return Err(DareError::UnsupportedVersion(seq_no));
        }
        let suite = CipherSuite::from_id(header[1]).ok_or(DareError::UnsupportedCipher(seq_no))?;
        let reference = *self.reference.get_or_insert(*header);
        if header[1] != reference[1] {
            return Err(DareError::UnsupportedCipher(seq_no));
        }
        let len = usize::from(u16::from_le_bytes([header[2], header[3]])) + 1;
        if package_len != HEADER_LEN + len + TAG_LEN {
            return Err(DareError::InvalidPayloadSize(seq_no));
        }
        let last = header[4] & 0x80 != 0;
        if !last && len != PAYLOAD_LEN {
            return Err(DareError::InvalidPayloadSize(seq_no));
        }
        let mut want = [0u8; 12];
        want.copy_from_slice(&reference[4..16]);
        if last {
            want[0] |= 0x80;
        } else {
            want[0] &= 0x7f;
        }
        // Compare without the flag bit's influence on the reference itself.
        if !bool::from(header[4..16].ct_eq(&want)) {
            return Err(DareError::NonceMismatch(seq_no));
        }
        let seq = u32::try_from(seq_no).map_err(|_| DareError::TooLong)?;
        let nonce = package_nonce(header, seq);
        let key = self.keys[usize::from(suite.id())].get_or_insert_with(|| suite.key(&self.key));
        let n = key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&header[..4]),
                sealed,
            )
            .map_err(|_| DareError::TagMismatch(seq_no))?
            .len();
        self.seq += 1;
        self.finished = last;
        Ok(n)
    }

    /// Opens a whole stream (or, from a later `start_seq`, the rest of
    /// one): every package authenticated, the final one present.
    pub fn open_all(mut self, mut cipher: &[u8]) -> Result<Vec<u8>, DareError> {
        let mut out = Vec::with_capacity(decrypted_len(cipher.len() as u64).unwrap_or(0) as usize);
        while !cipher.is_empty() {
            let n = self.package_len(cipher)?;
            if cipher.len() < n {
                return Err(DareError::Truncated);
            }
            self.open_package(&cipher[..n], &mut out)?;
            cipher = &cipher[n..];
        }
        // An empty stream (no package at all) is complete; otherwise the
        // final package must have been seen.
        let empty = self.reference.is_none();
        if !self.finished && !empty {
            return Err(DareError::Truncated);
        }
        Ok(out)
    }

    /// Opens the packages of a range read (see [`package_range`]) that may
    /// end before the stream does: every package authenticated, the final
    /// flag not required.
    pub fn open_prefix(mut self, mut cipher: &[u8]) -> Result<Vec<u8>, DareError> {
        let mut out = Vec::new();
        while !cipher.is_empty() {
            let n = self.package_len(cipher)?;
            if cipher.len() < n {
                return Err(DareError::Truncated);
            }
            self.open_package(&cipher[..n], &mut out)?;
            cipher = &cipher[n..];
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths() {
        assert_eq!(encrypted_len(0), 0);
        assert_eq!(encrypted_len(1), 33);
        assert_eq!(encrypted_len(65536), 65568);
        assert_eq!(encrypted_len(65537), 65568 + 33);
        for n in [0u64, 1, 100, 65535, 65536, 65537, 1 << 20, (1 << 20) + 3] {
            assert_eq!(decrypted_len(encrypted_len(n)), Some(n), "{n}");
        }
        assert_eq!(decrypted_len(32), None);
        assert_eq!(decrypted_len(20), None);
    }

    #[test]
    fn ranges() {
        let total = 3 * 65536 + 10;
        assert_eq!(package_range(0, 1, total), (0, 0..PACKAGE_LEN as u64, 0));
        assert_eq!(
            package_range(65536 + 5, 65536, total),
            (1, PACKAGE_LEN as u64..3 * PACKAGE_LEN as u64, 5)
        );
        assert_eq!(
            package_range(3 * 65536 + 2, 8, total),
            (3, 3 * PACKAGE_LEN as u64..encrypted_len(total), 2)
        );
    }
}

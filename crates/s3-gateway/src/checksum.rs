//! Body integrity: `Content-MD5` and the `x-amz-checksum-*` family, computed
//! while the body streams, and the base64 they are written in.

use md5::Digest as _;
use sha1::Sha1;
use sha2::Sha256;

use crate::auth::ChecksumAlgorithm;

/// A running checksum of one algorithm.
#[derive(Clone)]
pub(crate) enum Hasher {
    Crc(crc_fast::Digest, usize),
    Sha1(Sha1),
    Sha256(Sha256),
}

impl Hasher {
    pub(crate) fn new(alg: ChecksumAlgorithm) -> Hasher {
        use crc_fast::CrcAlgorithm as C;
        match alg {
            ChecksumAlgorithm::Crc32 => Hasher::Crc(crc_fast::Digest::new(C::Crc32IsoHdlc), 4),
            ChecksumAlgorithm::Crc32c => Hasher::Crc(crc_fast::Digest::new(C::Crc32Iscsi), 4),
            ChecksumAlgorithm::Crc64Nvme => Hasher::Crc(crc_fast::Digest::new(C::Crc64Nvme), 8),
            ChecksumAlgorithm::Sha1 => Hasher::Sha1(Sha1::new()),
            ChecksumAlgorithm::Sha256 => Hasher::Sha256(Sha256::new()),
        }
    }

    pub(crate) fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Crc(d, _) => d.update(data),
            Hasher::Sha1(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
        }
    }

    /// The digest, big-endian for the CRCs, as S3 sends it (base64).
    pub(crate) fn finish_base64(self) -> String {
        match self {
            Hasher::Crc(d, 4) => base64_encode(&(d.finalize() as u32).to_be_bytes()),
            Hasher::Crc(d, _) => base64_encode(&d.finalize().to_be_bytes()),
            Hasher::Sha1(h) => base64_encode(&h.finalize()),
            Hasher::Sha256(h) => base64_encode(&h.finalize()),
        }
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub(crate) fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding required); `None` if malformed.
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    if !b.len().is_multiple_of(4) {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(b.len() / 4 * 3);
    for (i, q) in b.chunks(4).enumerate() {
        let last = i == b.len() / 4 - 1;
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &q[..4 - pad] {
            n = (n << 6) | value(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for (plain, enc) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_encode(plain), enc);
            assert_eq!(base64_decode(enc).unwrap(), plain);
        }
        for bad in ["Zg=", "Z===", "Zg==Zg==", "Zm9*", "Zm9v\n"] {
            assert!(base64_decode(bad).is_none(), "{bad}");
        }
    }

    /// Known answers for "123456789" (the CRC catalogue's check values) and
    /// the SHA digests of "abc".
    #[test]
    fn checksums_known_answers() {
        let cases = [
            (
                ChecksumAlgorithm::Crc32,
                &b"123456789"[..],
                &0xCBF4_3926u32.to_be_bytes()[..],
            ),
            (
                ChecksumAlgorithm::Crc32c,
                b"123456789",
                &0xE306_9283u32.to_be_bytes(),
            ),
            (
                ChecksumAlgorithm::Crc64Nvme,
                b"123456789",
                &0xAE8B_1486_0A79_9888u64.to_be_bytes(),
            ),
        ];
        for (alg, data, want) in cases {
            let mut h = Hasher::new(alg);
            h.update(&data[..4]);
            h.update(&data[4..]);
            assert_eq!(h.finish_base64(), base64_encode(want), "{alg:?}");
        }
        let mut h = Hasher::new(ChecksumAlgorithm::Sha1);
        h.update(b"abc");
        assert_eq!(
            base64_decode(&h.finish_base64()).unwrap(),
            hex::decode("a9993e364706816aba3e25717850c26c9cd0d89d").unwrap()
        );
        let mut h = Hasher::new(ChecksumAlgorithm::Sha256);
        h.update(b"abc");
        assert_eq!(
            base64_decode(&h.finish_base64()).unwrap(),
            hex::decode("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
                .unwrap()
        );
    }
}

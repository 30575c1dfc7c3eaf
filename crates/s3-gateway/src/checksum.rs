//! Body integrity: `Content-MD5` and the `x-amz-checksum-*` family, computed
//! while the body streams, and the base64 they are written in.

use std::sync::OnceLock;

use base64::Engine as _;
use sha1::Sha1;
use sha2::{Digest as _, Sha256};

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

/// A running MD5 of a request body (`Content-MD5`), on the single-stream
/// path: a hub on the portable kernel has one lane, so every update is
/// hashed at once on the calling thread, never queued (the body reader
/// runs on a runtime worker, where the global hub's synchronous update
/// could park the thread). The global hub keeps its lanes for the ETags.
pub(crate) fn content_md5() -> md5x::Hasher {
    static SINGLE_STREAM: OnceLock<md5x::Md5Hub> = OnceLock::new();
    SINGLE_STREAM
        .get_or_init(|| {
            md5x::Md5Hub::new(md5x::HubConfig {
                kernel: md5x::Kernel::portable(),
                ..md5x::HubConfig::default()
            })
        })
        .hasher()
}

/// S3's base64 as Go's `base64.StdEncoding` reads it (and so MinIO): the
/// standard alphabet, padding written and required, no whitespace; bits
/// after the last byte need not be zero.
const BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

/// Standard base64 with padding.
pub(crate) fn base64_encode(data: &[u8]) -> String {
    BASE64.encode(data)
}

/// Decodes standard base64 (padding required); `None` if malformed.
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    BASE64.decode(text).ok()
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
        for bad in [
            "Zg=", "Z===", "Zg==Zg==", "Zm9*", "Zm9v\n", "Zg", " Zm9v", "Zm-v",
        ] {
            assert!(base64_decode(bad).is_none(), "{bad}");
        }
        // Bits after the last byte may be set (Go and MinIO accept them):
        // an SSE-C key or a Content-MD5 written so still decodes.
        assert_eq!(base64_decode("Zh==").unwrap(), b"f");
        assert_eq!(base64_decode("Zm9=").unwrap(), b"fo");
    }

    /// The Content-MD5 hasher, fed in pieces, agrees with an independent
    /// MD5 (the md-5 crate).
    #[test]
    fn content_md5_matches_an_independent_md5() {
        use md5::Digest as _;
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        for step in [1, 63, 64, 1000, 65_536, 300_000] {
            let mut h = content_md5();
            for piece in data.chunks(step) {
                h.update(piece);
            }
            assert_eq!(h.finalize()[..], md5::Md5::digest(&data)[..], "step {step}");
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

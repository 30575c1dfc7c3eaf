//! Body integrity: `Content-MD5` and the `x-amz-checksum-*` family, computed
//! while the body streams, and the base64 they are written in.

use std::sync::OnceLock;

use base64::Engine as _;
use sha1::Sha1;
use sha2::{Digest as _, Sha256};

use crate::auth::ChecksumAlgorithm;
use crate::error::S3Error;

/// A running checksum of one algorithm.
#[derive(Clone)]
pub(crate) enum Hasher {
    Crc(crc_fast::Digest, usize),
    Sha1(Sha1),
    Sha256(Sha256),
}

impl Hasher {
    pub(crate) fn new(alg: ChecksumAlgorithm) -> Hasher {
        match (crc_of(alg), alg) {
            (Some((crc, width)), _) => Hasher::Crc(crc_fast::Digest::new(crc), width),
            (None, ChecksumAlgorithm::Sha1) => Hasher::Sha1(Sha1::new()),
            (None, _) => Hasher::Sha256(Sha256::new()),
        }
    }

    pub(crate) fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Crc(d, _) => d.update(data),
            Hasher::Sha1(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
        }
    }

    /// The raw digest, big-endian for the CRCs.
    pub(crate) fn finish(self) -> Vec<u8> {
        match self {
            Hasher::Crc(d, width) => crc_bytes(d.finalize(), width),
            Hasher::Sha1(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
        }
    }

    /// The digest as S3 sends it (base64).
    pub(crate) fn finish_base64(self) -> String {
        base64_encode(&self.finish())
    }
}

/// The CRC of `alg` and its width in bytes; `None` for the SHAs.
fn crc_of(alg: ChecksumAlgorithm) -> Option<(crc_fast::CrcAlgorithm, usize)> {
    use crc_fast::CrcAlgorithm as C;
    match alg {
        ChecksumAlgorithm::Crc32 => Some((C::Crc32IsoHdlc, 4)),
        ChecksumAlgorithm::Crc32c => Some((C::Crc32Iscsi, 4)),
        ChecksumAlgorithm::Crc64Nvme => Some((C::Crc64Nvme, 8)),
        ChecksumAlgorithm::Sha1 | ChecksumAlgorithm::Sha256 => None,
    }
}

/// A CRC value as S3 writes it: big-endian, in its width.
fn crc_bytes(value: u64, width: usize) -> Vec<u8> {
    value.to_be_bytes()[8 - width..].to_vec()
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

/// The element of a CompleteMultipartUpload `Part` (and of ListParts)
/// that carries a part's checksum of `alg`.
pub(crate) fn part_element(alg: ChecksumAlgorithm) -> &'static str {
    match alg {
        ChecksumAlgorithm::Crc32 => "ChecksumCRC32",
        ChecksumAlgorithm::Crc32c => "ChecksumCRC32C",
        ChecksumAlgorithm::Crc64Nvme => "ChecksumCRC64NVME",
        ChecksumAlgorithm::Sha1 => "ChecksumSHA1",
        ChecksumAlgorithm::Sha256 => "ChecksumSHA256",
    }
}

/// The object checksum a CompleteMultipartUpload names in an
/// `x-amz-checksum-*` header: the digest, and the part count when it is
/// written as a composite (`<base64>-N`).
pub(crate) struct ObjectChecksum {
    pub(crate) alg: ChecksumAlgorithm,
    pub(crate) digest: Vec<u8>,
    pub(crate) parts: Option<usize>,
}

/// Takes the `x-amz-checksum-*` header out of a CompleteMultipartUpload
/// request: there it is the checksum of the object being completed, not of
/// the XML body, so the body reader must not check the body against it.
pub(crate) fn take_object_checksum(
    headers: &mut http::HeaderMap,
) -> Result<Option<ObjectChecksum>, S3Error> {
    let mut found = None;
    for alg in ChecksumAlgorithm::ALL {
        let Some(v) = headers.remove(alg.header_name()) else {
            continue;
        };
        let invalid = || {
            S3Error::with_message(
                "InvalidRequest",
                format!("Value for {} header is invalid.", alg.header_name()),
            )
        };
        if found.is_some() {
            return Err(S3Error::with_message(
                "InvalidRequest",
                "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.",
            ));
        }
        let v = v.to_str().map_err(|_| invalid())?;
        let (b64, parts) = match v.rsplit_once('-') {
            Some((b, n)) => {
                let n = n
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=10_000).contains(n))
                    .ok_or_else(invalid)?;
                (b, Some(n))
            }
            None => (v, None),
        };
        let digest = base64_decode(b64)
            .filter(|d| d.len() == alg.digest_len())
            .ok_or_else(invalid)?;
        found = Some(ObjectChecksum { alg, digest, parts });
    }
    Ok(found)
}

/// The composite checksum of parts: the algorithm over the concatenated
/// raw part digests (S3's COMPOSITE type, written `<base64>-N`).
pub(crate) fn composite(alg: ChecksumAlgorithm, parts: &[Vec<u8>]) -> Vec<u8> {
    let mut h = Hasher::new(alg);
    for p in parts {
        h.update(p);
    }
    h.finish()
}

/// The CRC of a whole object from its parts' CRCs and sizes, without the
/// data (S3's FULL_OBJECT type); `None` for the SHA algorithms, which do
/// not combine.
pub(crate) fn combined_crc(alg: ChecksumAlgorithm, parts: &[(Vec<u8>, u64)]) -> Option<Vec<u8>> {
    let (c, width) = crc_of(alg)?;
    let mut acc: Option<u64> = None;
    for (digest, size) in parts {
        let crc = digest.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b));
        acc = Some(match acc {
            None => crc,
            Some(a) => crc_fast::checksum_combine(c, a, crc, *size),
        });
    }
    Some(crc_bytes(acc?, width))
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

    /// The full-object CRC combined from parts' CRCs and sizes equals the
    /// CRC of the whole data, for each CRC; the composite is the CRC of the
    /// concatenated part digests.
    #[test]
    fn part_checksums_combine_into_the_object_checksum() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 31 + i / 7) as u8).collect();
        let cuts = [0, 1, 40_000, 40_001, 99_999, 100_000];
        for alg in [
            ChecksumAlgorithm::Crc32,
            ChecksumAlgorithm::Crc32c,
            ChecksumAlgorithm::Crc64Nvme,
        ] {
            let digest = |d: &[u8]| {
                let mut h = Hasher::new(alg);
                h.update(d);
                h.finish()
            };
            let parts: Vec<(Vec<u8>, u64)> = cuts
                .windows(2)
                .map(|w| (digest(&data[w[0]..w[1]]), (w[1] - w[0]) as u64))
                .collect();
            assert_eq!(combined_crc(alg, &parts).unwrap(), digest(&data), "{alg:?}");
            let raw: Vec<Vec<u8>> = parts.iter().map(|p| p.0.clone()).collect();
            assert_eq!(composite(alg, &raw), digest(&raw.concat()), "{alg:?}");
        }
        assert!(combined_crc(ChecksumAlgorithm::Sha256, &[(vec![0; 32], 1)]).is_none());
    }

    /// A Complete's checksum header: plain or `-N`, taken out of the
    /// headers; malformed values and two algorithms are refused.
    #[test]
    fn object_checksum_header_forms() {
        let mut h = http::HeaderMap::new();
        h.insert("x-amz-checksum-crc32c", "yZRlqg==-3".parse().unwrap());
        let c = take_object_checksum(&mut h).unwrap().unwrap();
        assert_eq!((c.alg, c.parts), (ChecksumAlgorithm::Crc32c, Some(3)));
        assert_eq!(c.digest, base64_decode("yZRlqg==").unwrap());
        assert!(h.is_empty());
        h.insert("x-amz-checksum-crc32", "yZRlqg==".parse().unwrap());
        assert_eq!(take_object_checksum(&mut h).unwrap().unwrap().parts, None);
        for bad in [
            "yZRl",
            "yZRlqg==-0",
            "yZRlqg==-x",
            "AAAAAAAAAAA=",
            "yZRlqg==-10001",
        ] {
            h.insert("x-amz-checksum-crc32c", bad.parse().unwrap());
            assert!(take_object_checksum(&mut h).is_err(), "{bad}");
        }
        h.insert("x-amz-checksum-crc32c", "yZRlqg==".parse().unwrap());
        h.insert("x-amz-checksum-crc32", "yZRlqg==".parse().unwrap());
        assert!(take_object_checksum(&mut h).is_err());
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
            h.finish(),
            hex::decode("a9993e364706816aba3e25717850c26c9cd0d89d").unwrap()
        );
        let mut h = Hasher::new(ChecksumAlgorithm::Sha256);
        h.update(b"abc");
        assert_eq!(
            h.finish(),
            hex::decode("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
                .unwrap()
        );
    }
}

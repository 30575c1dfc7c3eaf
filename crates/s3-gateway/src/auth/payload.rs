//! What the signature says about the body: the `x-amz-content-sha256`
//! modes, the streaming hash check of a signed payload, and the checksum
//! trailers of `aws-chunked` bodies.

use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::chunked::ChunkedDecoder;
use super::error::AuthError;
use super::signing::parse_hex32;

/// `x-amz-content-sha256: UNSIGNED-PAYLOAD`.
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
/// Signed `aws-chunked` body without trailers.
pub const STREAMING_PAYLOAD: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
/// Signed `aws-chunked` body with signed trailers.
pub const STREAMING_PAYLOAD_TRAILER: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
/// Unsigned `aws-chunked` body with (unsigned) trailers.
pub const STREAMING_UNSIGNED_PAYLOAD_TRAILER: &str = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";

/// The value of `x-amz-content-sha256`: how the body is bound to the
/// signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentSha256 {
    /// The hex SHA-256 of the whole body.
    Sha256([u8; 32]),
    /// `UNSIGNED-PAYLOAD`: the body is not signed.
    Unsigned,
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`: `aws-chunked`, each chunk signed.
    StreamingSigned,
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER`: signed chunks, then
    /// trailers with their own signature.
    StreamingSignedTrailer,
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`: unsigned chunks, then
    /// (unsigned) checksum trailers.
    StreamingUnsignedTrailer,
}

impl ContentSha256 {
    /// Parses the header value; anything else is S3's `InvalidArgument`.
    /// SigV4a streaming (`STREAMING-AWS4-ECDSA-P256-SHA256-*`) is not
    /// supported and refused the same way.
    pub fn parse(value: &str) -> Result<Self, AuthError> {
        Ok(match value {
            UNSIGNED_PAYLOAD => ContentSha256::Unsigned,
            STREAMING_PAYLOAD => ContentSha256::StreamingSigned,
            STREAMING_PAYLOAD_TRAILER => ContentSha256::StreamingSignedTrailer,
            STREAMING_UNSIGNED_PAYLOAD_TRAILER => ContentSha256::StreamingUnsignedTrailer,
            _ => match parse_hex32(value) {
                Some(hash) => ContentSha256::Sha256(hash),
                None => {
                    return Err(AuthError::InvalidArgument {
                        message: "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, \
                                  STREAMING-UNSIGNED-PAYLOAD-TRAILER, \
                                  STREAMING-AWS4-HMAC-SHA256-PAYLOAD, \
                                  STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER \
                                  or a valid sha256 value."
                            .to_owned(),
                        name: "x-amz-content-sha256".to_owned(),
                        value: value.to_owned(),
                    });
                }
            },
        })
    }

    /// Whether the body is `aws-chunked`.
    pub fn is_streaming(self) -> bool {
        matches!(
            self,
            ContentSha256::StreamingSigned
                | ContentSha256::StreamingSignedTrailer
                | ContentSha256::StreamingUnsignedTrailer
        )
    }
}

/// How the body of an authenticated request must be read.
#[derive(Debug)]
pub enum Payload {
    /// Not signed (`UNSIGNED-PAYLOAD`, presigned URLs): read it as is.
    Unsigned,
    /// Signed by its SHA-256: feed every byte to the verifier, and call
    /// [`PayloadSha256Verifier::finish`] at the end; a mismatch means the
    /// body must not be stored.
    Sha256(PayloadSha256Verifier),
    /// `aws-chunked`: feed the raw body to the decoder, which hands out the
    /// payload bytes and checks chunk signatures, the declared length and
    /// the trailers. The body is authentic only once
    /// [`ChunkedDecoder::finish`] returns `Ok`.
    Chunked(Box<ChunkedDecoder>),
}

/// Checks, while the body streams through, that it hashes to the signed
/// `x-amz-content-sha256`.
#[derive(Clone)]
pub struct PayloadSha256Verifier {
    expected: [u8; 32],
    hasher: Sha256,
    len: u64,
}

impl std::fmt::Debug for PayloadSha256Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PayloadSha256Verifier")
            .field("expected", &hex::encode(self.expected))
            .field("len", &self.len)
            .finish()
    }
}

impl PayloadSha256Verifier {
    /// A verifier expecting a body that hashes to `expected`.
    pub fn new(expected: [u8; 32]) -> Self {
        PayloadSha256Verifier {
            expected,
            hasher: Sha256::new(),
            len: 0,
        }
    }

    /// Hashes the next bytes of the body.
    pub fn update(&mut self, data: &[u8]) {
        self.hasher.update(data);
        self.len += data.len() as u64;
    }

    /// The number of bytes hashed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no byte has been hashed yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The expected hash.
    pub fn expected(&self) -> &[u8; 32] {
        &self.expected
    }

    /// At the end of the body: `Ok` if it hashes to the signed value, else
    /// [`AuthError::ContentSha256Mismatch`].
    pub fn finish(self) -> Result<(), AuthError> {
        let computed: [u8; 32] = self.hasher.finalize().into();
        if super::signing::ct_eq(&computed, &self.expected) {
            Ok(())
        } else {
            Err(AuthError::ContentSha256Mismatch {
                client_computed: hex::encode(self.expected),
                computed: hex::encode(computed),
            })
        }
    }
}

/// The checksum algorithms S3 accepts as `x-amz-checksum-*` trailers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChecksumAlgorithm {
    /// `x-amz-checksum-crc32` (4 bytes).
    Crc32,
    /// `x-amz-checksum-crc32c` (4 bytes).
    Crc32c,
    /// `x-amz-checksum-crc64nvme` (8 bytes).
    Crc64Nvme,
    /// `x-amz-checksum-sha1` (20 bytes).
    Sha1,
    /// `x-amz-checksum-sha256` (32 bytes).
    Sha256,
}

impl ChecksumAlgorithm {
    /// Every algorithm.
    pub const ALL: [ChecksumAlgorithm; 5] = [
        ChecksumAlgorithm::Crc32,
        ChecksumAlgorithm::Crc32c,
        ChecksumAlgorithm::Crc64Nvme,
        ChecksumAlgorithm::Sha1,
        ChecksumAlgorithm::Sha256,
    ];

    /// The header (and trailer) name, `x-amz-checksum-*`.
    pub fn header_name(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc32 => "x-amz-checksum-crc32",
            ChecksumAlgorithm::Crc32c => "x-amz-checksum-crc32c",
            ChecksumAlgorithm::Crc64Nvme => "x-amz-checksum-crc64nvme",
            ChecksumAlgorithm::Sha1 => "x-amz-checksum-sha1",
            ChecksumAlgorithm::Sha256 => "x-amz-checksum-sha256",
        }
    }

    /// The algorithm of a header name (case-insensitive).
    pub fn from_header_name(name: &str) -> Option<Self> {
        ChecksumAlgorithm::ALL
            .into_iter()
            .find(|a| a.header_name().eq_ignore_ascii_case(name))
    }

    /// The size of the digest in bytes.
    pub fn digest_len(self) -> usize {
        match self {
            ChecksumAlgorithm::Crc32 | ChecksumAlgorithm::Crc32c => 4,
            ChecksumAlgorithm::Crc64Nvme => 8,
            ChecksumAlgorithm::Sha1 => 20,
            ChecksumAlgorithm::Sha256 => 32,
        }
    }

    /// Whether `value` is the padded standard base64 of a digest of this
    /// algorithm's size, in canonical form (the bits after the last byte
    /// zero): the form S3 sends and accepts.
    pub fn is_valid_value(self, value: &str) -> bool {
        base64::engine::general_purpose::STANDARD
            .decode(value)
            .is_ok_and(|d| d.len() == self.digest_len())
    }
}

/// One checksum trailer of an `aws-chunked` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trailer {
    /// Which checksum.
    pub algorithm: ChecksumAlgorithm,
    /// The value as sent: base64 of the digest, already checked for form
    /// and size. Comparing it with the digest of the payload is the
    /// caller's work.
    pub value: String,
}

/// The checksum trailers of an `aws-chunked` body, in the order received.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trailers {
    entries: Vec<Trailer>,
}

impl Trailers {
    pub(crate) fn push(&mut self, trailer: Trailer) {
        self.entries.push(trailer);
    }

    /// The value of the `algorithm` trailer, if it was sent.
    pub fn get(&self, algorithm: ChecksumAlgorithm) -> Option<&str> {
        self.entries
            .iter()
            .find(|t| t.algorithm == algorithm)
            .map(|t| t.value.as_str())
    }

    /// Every trailer.
    pub fn iter(&self) -> std::slice::Iter<'_, Trailer> {
        self.entries.iter()
    }

    /// How many trailers were sent.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no trailer was sent.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<'a> IntoIterator for &'a Trailers {
    type Item = &'a Trailer;
    type IntoIter = std::slice::Iter<'a, Trailer>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::signing::EMPTY_SHA256;

    #[test]
    fn content_sha256_modes_parse() {
        assert_eq!(
            ContentSha256::parse("UNSIGNED-PAYLOAD"),
            Ok(ContentSha256::Unsigned)
        );
        assert_eq!(
            ContentSha256::parse(STREAMING_PAYLOAD),
            Ok(ContentSha256::StreamingSigned)
        );
        assert_eq!(
            ContentSha256::parse(STREAMING_PAYLOAD_TRAILER),
            Ok(ContentSha256::StreamingSignedTrailer)
        );
        assert_eq!(
            ContentSha256::parse(STREAMING_UNSIGNED_PAYLOAD_TRAILER),
            Ok(ContentSha256::StreamingUnsignedTrailer)
        );
        let ContentSha256::Sha256(hash) = ContentSha256::parse(EMPTY_SHA256).unwrap() else {
            panic!("not a hash")
        };
        assert_eq!(hex::encode(hash), EMPTY_SHA256);
        for bad in [
            "",
            "unsigned-payload",
            "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD",
            &EMPTY_SHA256[1..],
            "zz",
        ] {
            let err = ContentSha256::parse(bad).unwrap_err();
            assert_eq!(err.code(), "InvalidArgument", "{bad}");
        }
        assert!(ContentSha256::StreamingUnsignedTrailer.is_streaming());
        assert!(!ContentSha256::Unsigned.is_streaming());
        assert!(!ContentSha256::Sha256([0; 32]).is_streaming());
    }

    #[test]
    fn sha256_verifier_checks_the_whole_body() {
        let body = b"Welcome to Amazon S3.";
        let expected: [u8; 32] = Sha256::digest(body).into();
        let mut v = PayloadSha256Verifier::new(expected);
        assert!(v.is_empty());
        for piece in body.chunks(4) {
            v.update(piece);
        }
        assert_eq!(v.len(), body.len() as u64);
        assert_eq!(v.expected(), &expected);
        assert!(format!("{v:?}").contains(&hex::encode(expected)));
        v.clone().finish().unwrap();
        v.update(b"!");
        let err = v.finish().unwrap_err();
        assert_eq!(err.code(), "XAmzContentSHA256Mismatch");
        assert_eq!(err.status(), http::StatusCode::BAD_REQUEST);
        assert_eq!(err.details()[0].1, hex::encode(expected));
    }

    #[test]
    fn checksum_algorithms_and_values() {
        for a in ChecksumAlgorithm::ALL {
            assert_eq!(
                ChecksumAlgorithm::from_header_name(a.header_name()),
                Some(a)
            );
            assert_eq!(
                ChecksumAlgorithm::from_header_name(&a.header_name().to_uppercase()),
                Some(a)
            );
        }
        assert_eq!(
            ChecksumAlgorithm::from_header_name("x-amz-checksum-md5"),
            None
        );
        assert!(ChecksumAlgorithm::Crc32.is_valid_value("AAAAAA=="));
        assert!(ChecksumAlgorithm::Crc32c.is_valid_value("sOO8/Q=="));
        assert!(!ChecksumAlgorithm::Crc32.is_valid_value("AAAAAB=="));
        assert!(!ChecksumAlgorithm::Crc32.is_valid_value("AAAAAA="));
        assert!(!ChecksumAlgorithm::Crc32.is_valid_value("AAAAAAA="));
        assert!(!ChecksumAlgorithm::Crc32.is_valid_value("AAA*AA=="));
        assert!(!ChecksumAlgorithm::Crc32.is_valid_value(""));
        assert!(!ChecksumAlgorithm::Crc32.is_valid_value("A==="));
        assert!(!ChecksumAlgorithm::Crc32.is_valid_value(" AAAAAA=="));
        assert!(!ChecksumAlgorithm::Crc32.is_valid_value("AAAAAA==\n"));
        assert!(!ChecksumAlgorithm::Crc32.is_valid_value("AAAAAA"));
        assert!(ChecksumAlgorithm::Crc64Nvme.is_valid_value("AAAAAAAAAAA="));
        assert!(ChecksumAlgorithm::Sha1.is_valid_value("2jmj7l5rSw0yVb/vlWAYkK/YBwk="));
        assert!(
            ChecksumAlgorithm::Sha256
                .is_valid_value("47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
        );
        assert!(!ChecksumAlgorithm::Sha256.is_valid_value("2jmj7l5rSw0yVb/vlWAYkK/YBwk="));
        assert_eq!(ChecksumAlgorithm::Sha1.digest_len(), 20);
    }

    #[test]
    fn trailers_are_looked_up_by_algorithm() {
        let mut t = Trailers::default();
        assert!(t.is_empty());
        t.push(Trailer {
            algorithm: ChecksumAlgorithm::Crc32c,
            value: "sOO8/Q==".to_owned(),
        });
        assert_eq!(t.len(), 1);
        assert_eq!(t.get(ChecksumAlgorithm::Crc32c), Some("sOO8/Q=="));
        assert_eq!(t.get(ChecksumAlgorithm::Crc32), None);
        assert_eq!(t.iter().count(), 1);
        assert_eq!((&t).into_iter().next().unwrap().value, "sOO8/Q==");
    }
}

//! How data bodies (PUT, UploadPart) travel, and the `aws-chunked` bodies
//! of the clients that do not send `UNSIGNED-PAYLOAD`.
//!
//! minio-go (and so `mc`) sends a PutObject over plain HTTP as
//! `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`: 64 KiB chunks, each signed over
//! the SHA-256 of its data and the previous chunk's signature, so the
//! server hashes every byte. Over HTTPS it sends `UNSIGNED-PAYLOAD`, or,
//! when a program turns its trailing headers on (mc does not),
//! `STREAMING-UNSIGNED-PAYLOAD-TRAILER` with a CRC32C of the whole body in
//! the trailer (`api.go` `newRequest`, `pkg/signer` of minio-go). The AWS
//! SDKs send aws-chunked bodies with an unsigned CRC32 trailer. These
//! modes make the benchmark pay, and make the server pay, what those
//! clients' users pay.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::{BufMut, Bytes, BytesMut};
use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::pattern::Pattern;

/// Data bytes per chunk (minio-go's `payloadChunkSize`).
pub const CHUNK: usize = 64 * 1024;

const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
pub const STREAMING_SIGNED: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
pub const STREAMING_UNSIGNED_TRAILER: &str = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";

/// The `--payload` choice: how PUT and UploadPart bodies are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PayloadMode {
    /// `UNSIGNED-PAYLOAD`.
    #[default]
    Unsigned,
    /// The body's SHA-256 in `x-amz-content-sha256`, hashed before sending.
    Signed,
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`, 64 KiB chunks, each signed.
    Streaming,
    /// aws-chunked, `STREAMING-UNSIGNED-PAYLOAD-TRAILER`, CRC32 trailer.
    Crc32Trailer,
    /// aws-chunked, `STREAMING-UNSIGNED-PAYLOAD-TRAILER`, CRC32C trailer
    /// written as minio-go writes it.
    Crc32cTrailer,
    /// As minio-go and mc send PutObject by default: `streaming` over
    /// HTTP, `unsigned` over HTTPS.
    MinioGo,
    /// As the AWS SDKs send PutObject: `crc32-trailer`.
    AwsSdk,
}

impl PayloadMode {
    /// The concrete framing on a connection that is (or is not) TLS.
    pub fn framing(self, https: bool) -> Framing {
        match self {
            PayloadMode::Unsigned => Framing::Unsigned,
            PayloadMode::MinioGo if https => Framing::Unsigned,
            PayloadMode::Signed => Framing::Signed,
            PayloadMode::Streaming => Framing::Streaming,
            PayloadMode::Crc32Trailer | PayloadMode::AwsSdk => Framing::Trailer(Trailer::Crc32),
            PayloadMode::Crc32cTrailer => Framing::Trailer(Trailer::Crc32cMinioGo),
            PayloadMode::MinioGo => Framing::Streaming,
        }
    }
}

/// What a data body looks like on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Unsigned,
    Signed,
    Streaming,
    Trailer(Trailer),
}

/// The checksum trailer of an unsigned aws-chunked body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trailer {
    /// `x-amz-checksum-crc32`, the trailer line ended by CRLF (AWS SDKs).
    Crc32,
    /// `x-amz-checksum-crc32c`, the trailer line ended by LF and followed
    /// by two CRLFs (minio-go's `StreamingUSReader`).
    Crc32cMinioGo,
}

impl Trailer {
    pub fn header(self) -> &'static str {
        match self {
            Trailer::Crc32 => "x-amz-checksum-crc32",
            Trailer::Crc32cMinioGo => "x-amz-checksum-crc32c",
        }
    }

    fn algorithm(self) -> crc_fast::CrcAlgorithm {
        match self {
            Trailer::Crc32 => crc_fast::CrcAlgorithm::Crc32IsoHdlc,
            Trailer::Crc32cMinioGo => crc_fast::CrcAlgorithm::Crc32Iscsi,
        }
    }

    fn end(self) -> &'static str {
        match self {
            Trailer::Crc32 => "\r\n\r\n",
            Trailer::Crc32cMinioGo => "\n\r\n\r\n",
        }
    }
}

impl Framing {
    /// The `x-amz-content-sha256` value of an aws-chunked framing.
    pub fn content_sha256(self) -> Option<&'static str> {
        match self {
            Framing::Streaming => Some(STREAMING_SIGNED),
            Framing::Trailer(_) => Some(STREAMING_UNSIGNED_TRAILER),
            Framing::Unsigned | Framing::Signed => None,
        }
    }

    /// Bytes on the wire for `len` data bytes.
    pub fn encoded_len(self, len: u64) -> u64 {
        let chunk = CHUNK as u64;
        let (full, rest) = (len / chunk, len % chunk);
        let per_chunk = |n: u64| -> u64 {
            let hex = format!("{n:x}").len() as u64;
            match self {
                Framing::Streaming => hex + 17 + 64 + 2 + n + 2,
                _ => hex + 2 + n + 2,
            }
        };
        let mut total = full * per_chunk(chunk) + if rest > 0 { per_chunk(rest) } else { 0 };
        total += match self {
            // `0;chunk-signature=<64>\r\n\r\n`
            Framing::Streaming => 1 + 17 + 64 + 2 + 2,
            // `0\r\n<name>:<8 base64>` and the end
            Framing::Trailer(t) => 3 + t.header().len() as u64 + 1 + 8 + t.end().len() as u64,
            Framing::Unsigned | Framing::Signed => return len,
        };
        total
    }
}

/// The signature chain of a `STREAMING-AWS4-HMAC-SHA256-PAYLOAD` body.
#[derive(Debug, Clone)]
pub struct Chain {
    /// The derived SigV4 signing key.
    pub key: Vec<u8>,
    /// `x-amz-date` of the request.
    pub amz_date: String,
    /// `<date>/<region>/s3/aws4_request`.
    pub scope: String,
    /// The previous signature (first: the request's own, the seed).
    pub previous: String,
}

impl Chain {
    fn sign(&mut self, data: &[u8]) -> String {
        let to_sign = format!(
            "AWS4-HMAC-SHA256-PAYLOAD\n{}\n{}\n{}\n{EMPTY_SHA256}\n{}",
            self.amz_date,
            self.scope,
            self.previous,
            hex::encode(Sha256::digest(data))
        );
        let sig = aws_sigv4::sign::v4::calculate_signature(&self.key, to_sign.as_bytes());
        self.previous.clone_from(&sig);
        sig
    }
}

/// What a chunked body still has to add to its data.
#[derive(Debug)]
pub enum Encoder {
    Signed(Chain),
    Trailer(Trailer, Box<crc_fast::Digest>),
}

impl Encoder {
    pub fn trailer(t: Trailer) -> Encoder {
        Encoder::Trailer(t, Box::new(crc_fast::Digest::new(t.algorithm())))
    }

    /// The chunk of `data` (a chunk of at most [`CHUNK`] bytes, not empty)
    /// with its header and closing CRLF, the data copied once.
    pub fn chunk(&mut self, data: &[u8]) -> Bytes {
        let header = match self {
            Encoder::Signed(chain) => {
                format!("{:x};chunk-signature={}\r\n", data.len(), chain.sign(data))
            }
            Encoder::Trailer(_, crc) => {
                crc.update(data);
                format!("{:x}\r\n", data.len())
            }
        };
        let mut out = BytesMut::with_capacity(header.len() + data.len() + 2);
        out.put_slice(header.as_bytes());
        out.put_slice(data);
        out.put_slice(b"\r\n");
        out.freeze()
    }

    /// The final, empty chunk and the trailer.
    pub fn last(&mut self) -> Bytes {
        match self {
            Encoder::Signed(chain) => {
                Bytes::from(format!("0;chunk-signature={}\r\n\r\n", chain.sign(&[])))
            }
            Encoder::Trailer(t, crc) => {
                let value = (crc.finalize() as u32).to_be_bytes();
                Bytes::from(format!(
                    "0\r\n{}:{}{}",
                    t.header(),
                    STANDARD.encode(value),
                    t.end()
                ))
            }
        }
    }
}

/// A range of a pattern sent as an aws-chunked body.
#[derive(Debug)]
pub struct ChunkedPattern {
    pub pattern: Pattern,
    pub pos: u64,
    pub end: u64,
    pub encoder: Encoder,
    pub done: bool,
    /// Wire bytes still to come (the size hint).
    pub remaining: u64,
    buf: Vec<u8>,
}

impl ChunkedPattern {
    pub fn new(pattern: Pattern, pos: u64, end: u64, encoder: Encoder, wire_len: u64) -> Self {
        ChunkedPattern {
            pattern,
            pos,
            end,
            encoder,
            done: false,
            remaining: wire_len,
            buf: vec![0; CHUNK],
        }
    }

    /// The next frame: one chunk, or the last chunk and trailer; `None`
    /// once everything went.
    pub fn next_frame(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let frame = if self.pos < self.end {
            let n = (self.end - self.pos).min(CHUNK as u64) as usize;
            self.pattern.fill(self.pos, &mut self.buf[..n]);
            self.pos += n as u64;
            self.encoder.chunk(&self.buf[..n])
        } else {
            self.done = true;
            self.encoder.last()
        };
        self.remaining = self.remaining.saturating_sub(frame.len() as u64);
        Some(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's published example of a streaming upload ("Signature
    /// Calculations for the Authorization Header: Transferring Payload in
    /// Multiple Chunks"): 66,560 bytes of `a` in chunks of 64 KiB and 1 KiB.
    #[test]
    fn aws_streaming_example() {
        let key = aws_sigv4::sign::v4::generate_signing_key(
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_369_353_600),
            "us-east-1",
            "s3",
        );
        let mut chain = Chain {
            key: key.as_ref().to_vec(),
            amz_date: "20130524T000000Z".into(),
            scope: "20130524/us-east-1/s3/aws4_request".into(),
            previous: "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9".into(),
        };
        let data = vec![b'a'; 66_560];
        assert_eq!(
            chain.sign(&data[..65_536]),
            "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
        );
        assert_eq!(
            chain.sign(&data[65_536..]),
            "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
        );
        assert_eq!(
            chain.sign(&[]),
            "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
        );
        // The example's Content-Length.
        assert_eq!(Framing::Streaming.encoded_len(66_560), 66_824);
    }

    fn wire(framing: Framing, len: u64) -> Vec<u8> {
        let encoder = match framing {
            Framing::Streaming => Encoder::Signed(Chain {
                key: vec![7; 32],
                amz_date: "20260101T000000Z".into(),
                scope: "20260101/us-east-1/s3/aws4_request".into(),
                previous: "0".repeat(64),
            }),
            Framing::Trailer(t) => Encoder::trailer(t),
            _ => unreachable!("not chunked"),
        };
        let pattern = Pattern::new("k", len, 1);
        let mut body = ChunkedPattern::new(pattern, 0, len, encoder, framing.encoded_len(len));
        let mut out = Vec::new();
        while let Some(f) = body.next_frame() {
            out.extend_from_slice(&f);
        }
        assert_eq!(body.remaining, 0);
        out
    }

    #[test]
    fn lengths_match_what_is_sent() {
        for framing in [
            Framing::Streaming,
            Framing::Trailer(Trailer::Crc32),
            Framing::Trailer(Trailer::Crc32cMinioGo),
        ] {
            for len in [0, 1, 4095, 65_535, 65_536, 65_537, 3 * 65_536 + 17] {
                let w = wire(framing, len);
                assert_eq!(
                    w.len() as u64,
                    framing.encoded_len(len),
                    "{framing:?} {len}"
                );
            }
        }
    }

    #[test]
    fn trailers_carry_the_checksum_of_the_data() {
        let len = 100_000;
        let mut data = vec![0; len as usize];
        Pattern::new("k", len, 1).fill(0, &mut data);
        // CRC32 of the data, and the SDKs' trailer form.
        let w = wire(Framing::Trailer(Trailer::Crc32), len);
        let crc = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, &data) as u32;
        let tail = format!(
            "\r\n0\r\nx-amz-checksum-crc32:{}\r\n\r\n",
            STANDARD.encode(crc.to_be_bytes())
        );
        assert!(w.ends_with(tail.as_bytes()), "{:?}", &w[w.len() - 60..]);
        // The data comes back out of the framing unchanged.
        let first = b"10000\r\n";
        assert_eq!(&w[..first.len()], first);
        assert_eq!(&w[first.len()..first.len() + 65_536], &data[..65_536]);
        // CRC32C in minio-go's form.
        let w = wire(Framing::Trailer(Trailer::Crc32cMinioGo), len);
        let crc = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &data) as u32;
        let tail = format!(
            "0\r\nx-amz-checksum-crc32c:{}\n\r\n\r\n",
            STANDARD.encode(crc.to_be_bytes())
        );
        assert!(w.ends_with(tail.as_bytes()));
    }

    #[test]
    fn modes_resolve_by_scheme() {
        assert_eq!(PayloadMode::MinioGo.framing(false), Framing::Streaming);
        assert_eq!(PayloadMode::MinioGo.framing(true), Framing::Unsigned);
        assert_eq!(
            PayloadMode::AwsSdk.framing(false),
            Framing::Trailer(Trailer::Crc32)
        );
        assert_eq!(PayloadMode::Unsigned.framing(true), Framing::Unsigned);
    }
}

//! `aws-chunked` bodies: uploads signed by the `aws-sigv4` crate (seed,
//! chunk and trailer signatures) decoded in every split, and every way a
//! body can be malformed, with the error it gets.

mod common;

use bytes::Bytes;
use common::*;
use s3_gateway::auth::{
    AuthConfig, AuthError, ChecksumAlgorithm, ChunkLimits, ChunkedDecoder, ContentSha256,
    CredentialScope, Payload, SecretKey, Signature, SignatureChain, SigningKey, Trailer, Verifier,
};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Signed,
    SignedTrailer,
    UnsignedTrailer,
}

struct Upload {
    request: http::Request<()>,
    body: Vec<u8>,
    payload: Vec<u8>,
}

fn random_trailers(rng: &mut Rng) -> Vec<(ChecksumAlgorithm, String)> {
    let mut all = ChecksumAlgorithm::ALL.to_vec();
    let mut out = Vec::new();
    for _ in 0..rng.below(3) {
        let a = all.remove(rng.below(all.len()));
        out.push((a, base64(&rng.bytes(a.digest_len()))));
    }
    out
}

/// Builds a streaming upload as an SDK would: the request signed with the
/// streaming `x-amz-content-sha256`, then chunks of `sizes` (and the final
/// empty chunk), then the trailers.
fn upload(
    mode: Mode,
    payload: &[u8],
    sizes: &[usize],
    trailers: &[(ChecksumAlgorithm, String)],
    declared_trailers: &[ChecksumAlgorithm],
) -> Upload {
    let time = example_time();
    let mut builder = http::Request::put("/bucket/object")
        .header("host", "localhost:9000")
        .header("content-encoding", "aws-chunked")
        .header("x-amz-decoded-content-length", payload.len().to_string());
    if mode != Mode::Signed && !declared_trailers.is_empty() {
        let names: Vec<&str> = declared_trailers.iter().map(|a| a.header_name()).collect();
        builder = builder.header("x-amz-trailer", names.join(","));
    }
    let mut request = builder.body(()).unwrap();
    let body_kind = match mode {
        Mode::Signed => Body::Precomputed("STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
        Mode::SignedTrailer => Body::StreamingSignedTrailer,
        Mode::UnsignedTrailer => Body::StreamingUnsignedTrailer,
    };
    let seed = sign_with_aws_sigv4(&mut request, body_kind, &SignOptions::new(time));

    let mut body = Vec::new();
    let mut previous = seed;
    let mut rest = payload;
    let mut sizes = sizes.iter().copied();
    loop {
        let n = if rest.is_empty() {
            0
        } else {
            sizes.next().unwrap_or(rest.len()).min(rest.len()).max(1)
        };
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        if mode == Mode::UnsignedTrailer {
            body.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        } else {
            previous = with_chunk_params(time, |params| {
                aws_sigv4::sign::v4::sign_chunk(&Bytes::copy_from_slice(chunk), &previous, params)
                    .unwrap()
                    .signature()
                    .to_owned()
            });
            body.extend_from_slice(format!("{n:x};chunk-signature={previous}\r\n").as_bytes());
        }
        if n == 0 {
            break;
        }
        body.extend_from_slice(chunk);
        body.extend_from_slice(b"\r\n");
    }
    match mode {
        Mode::Signed => body.extend_from_slice(b"\r\n"),
        Mode::UnsignedTrailer | Mode::SignedTrailer => {
            for (a, value) in trailers {
                body.extend_from_slice(format!("{}:{value}\r\n", a.header_name()).as_bytes());
            }
            if mode == Mode::SignedTrailer {
                let mut headers = aws_smithy_runtime_api::http::Headers::new();
                for (a, value) in trailers {
                    headers.insert(a.header_name(), value.clone());
                }
                let signature = with_chunk_params(time, |params| {
                    aws_sigv4::sign::v4::sign_trailer(&headers, &previous, params)
                        .unwrap()
                        .signature()
                        .to_owned()
                });
                body.extend_from_slice(
                    format!("x-amz-trailer-signature:{signature}\r\n").as_bytes(),
                );
            }
            body.extend_from_slice(b"\r\n");
        }
    }
    Upload {
        request,
        body,
        payload: payload.to_vec(),
    }
}

fn decoder_of(request: &http::Request<()>) -> Box<ChunkedDecoder> {
    decoder_with(&verifier(), request)
}

fn decoder_with(
    verifier: &Verifier<s3_gateway::auth::StaticCredentials>,
    request: &http::Request<()>,
) -> Box<ChunkedDecoder> {
    let verified = authenticate(verifier, request, example_time()).unwrap();
    assert!(verified.content_sha256.is_streaming());
    match verified.payload {
        Payload::Chunked(decoder) => decoder,
        other => panic!("not chunked: {other:?}"),
    }
}

/// Decodes `body` fed in pieces of the given sizes (cycled), with the
/// zero-copy API.
fn decode_in_pieces(
    decoder: &mut ChunkedDecoder,
    body: &[u8],
    pieces: &[usize],
) -> Result<Vec<u8>, AuthError> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut i = 0;
    while offset < body.len() {
        let end = (offset + pieces[i % pieces.len()].max(1)).min(body.len());
        i += 1;
        let mut input = &body[offset..end];
        while !input.is_empty() {
            let decoded = decoder.decode(input)?;
            assert!(decoded.consumed > 0 && decoded.consumed <= input.len());
            out.extend_from_slice(decoded.payload);
            input = &input[decoded.consumed..];
        }
        offset = end;
    }
    Ok(out)
}

#[test]
fn uploads_signed_by_aws_sigv4_decode_in_any_split() {
    let mut rng = Rng::new(11);
    for i in 0..120 {
        let mode = *rng.pick(&[Mode::Signed, Mode::SignedTrailer, Mode::UnsignedTrailer]);
        let len = *rng.pick(&[0, 1, 100, 8192, 65_536, 70_001, 200_000]);
        let payload = rng.bytes(len);
        let sizes: Vec<usize> = (0..4).map(|_| rng.range(1, 70_000)).collect();
        let trailers = if mode == Mode::Signed {
            Vec::new()
        } else {
            random_trailers(&mut rng)
        };
        let declared: Vec<ChecksumAlgorithm> = trailers.iter().map(|(a, _)| *a).collect();
        let up = upload(mode, &payload, &sizes, &trailers, &declared);
        let mut decoder = decoder_of(&up.request);
        assert_eq!(decoder.is_signed(), mode != Mode::UnsignedTrailer);
        let pieces: Vec<usize> = (0..3).map(|_| rng.range(1, 9000)).collect();
        let decoded = decode_in_pieces(&mut decoder, &up.body, &pieces)
            .unwrap_or_else(|e| panic!("upload {i} ({mode:?}, {len} bytes): {e:?}"));
        assert_eq!(decoded, up.payload, "upload {i}");
        assert!(decoder.is_done(), "upload {i}");
        assert_eq!(decoder.decoded_len(), len as u64);
        let got = decoder.finish().unwrap();
        let expected: Vec<Trailer> = trailers
            .iter()
            .map(|(a, v)| Trailer {
                algorithm: *a,
                value: v.clone(),
            })
            .collect();
        assert_eq!(
            got.iter().cloned().collect::<Vec<_>>(),
            expected,
            "upload {i}"
        );
    }
}

#[test]
fn byte_at_a_time_and_all_at_once_agree() {
    let mut rng = Rng::new(12);
    let payload = rng.bytes(3000);
    let trailers = vec![(ChecksumAlgorithm::Crc32, base64(&[1, 2, 3, 4]))];
    let up = upload(
        Mode::SignedTrailer,
        &payload,
        &[1000, 999, 1],
        &trailers,
        &[ChecksumAlgorithm::Crc32],
    );
    let mut one = decoder_of(&up.request);
    assert_eq!(decode_in_pieces(&mut one, &up.body, &[1]).unwrap(), payload);
    let mut all = decoder_of(&up.request);
    let mut out = Vec::new();
    all.decode_into(&up.body, &mut out).unwrap();
    assert_eq!(out, payload);
    assert_eq!(one.finish().unwrap(), all.finish().unwrap());
}

#[test]
fn trailers_signed_in_sorted_or_wire_order_verify() {
    // Two trailers sent in reverse name order: aws-sigv4 signs them sorted.
    let trailers = vec![
        (ChecksumAlgorithm::Sha256, base64(&[7; 32])),
        (ChecksumAlgorithm::Crc32, base64(&[9; 4])),
    ];
    let declared = [ChecksumAlgorithm::Crc32, ChecksumAlgorithm::Sha256];
    let up = upload(Mode::SignedTrailer, b"hello", &[5], &trailers, &declared);
    let mut decoder = decoder_of(&up.request);
    decoder.decode_into(&up.body, &mut Vec::new()).unwrap();
    let got = decoder.finish().unwrap();
    assert_eq!(
        got.get(ChecksumAlgorithm::Sha256),
        Some(trailers[0].1.as_str())
    );
    assert_eq!(
        got.get(ChecksumAlgorithm::Crc32),
        Some(trailers[1].1.as_str())
    );
    assert_eq!(got.len(), 2);
}

// --- Decoders built directly, for the framing errors. ---

fn chain_from(seed: Signature) -> SignatureChain {
    let scope = CredentialScope::new("20130524", "us-east-1", "s3");
    SignatureChain::new(
        SigningKey::derive(&SecretKey::new(SECRET_KEY), &scope),
        "20130524T000000Z",
        &scope,
        seed,
    )
}

fn chain() -> SignatureChain {
    chain_from(Signature::from_hex(&"0".repeat(64)).unwrap())
}

fn sha(data: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(data).into()
}

/// A signed body for `chain()`, chunks as given, then `tail` after the
/// final chunk header.
fn signed_body(chunks: &[&[u8]], tail: &str) -> (Vec<u8>, Signature) {
    let mut c = chain();
    let mut body = Vec::new();
    for chunk in chunks.iter().chain(std::iter::once(&&b""[..])) {
        let sig = c.chunk_signature(&sha(chunk));
        c = chain_from(sig);
        body.extend_from_slice(format!("{:x};chunk-signature={sig}\r\n", chunk.len()).as_bytes());
        if !chunk.is_empty() {
            body.extend_from_slice(chunk);
            body.extend_from_slice(b"\r\n");
        }
    }
    body.extend_from_slice(tail.as_bytes());
    (body, c.previous())
}

fn run(mut decoder: ChunkedDecoder, body: &[u8]) -> Result<Vec<u8>, AuthError> {
    let mut out = Vec::new();
    decoder.decode_into(body, &mut out)?;
    decoder.finish()?;
    Ok(out)
}

fn code(result: Result<Vec<u8>, AuthError>) -> &'static str {
    result.map(|_| ()).unwrap_err().code()
}

#[test]
fn signed_chunks_are_chained() {
    let limits = ChunkLimits::default();
    let (body, _) = signed_body(&[b"hello ", b"world"], "\r\n");
    assert_eq!(
        run(
            ChunkedDecoder::signed(chain(), Some(11), None, limits),
            &body
        )
        .unwrap(),
        b"hello world"
    );
    // Without a declared length, too.
    assert!(run(ChunkedDecoder::signed(chain(), None, None, limits), &body).is_ok());

    // Chunks swapped, each with its own valid signature: the chain breaks.
    let (a, _) = signed_body(&[b"hello ", b"world"], "\r\n");
    let first_end = a.windows(2).position(|w| w == b"\r\n").unwrap() + 2 + 6 + 2;
    let second_end = first_end
        + a[first_end..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .unwrap()
        + 2
        + 5
        + 2;
    let mut swapped = a[first_end..second_end].to_vec();
    swapped.extend_from_slice(&a[..first_end]);
    swapped.extend_from_slice(&a[second_end..]);
    assert_eq!(
        code(run(
            ChunkedDecoder::signed(chain(), Some(11), None, limits),
            &swapped
        )),
        "SignatureDoesNotMatch"
    );

    // A chunk dropped.
    let dropped = a[first_end..].to_vec();
    assert_eq!(
        code(run(
            ChunkedDecoder::signed(chain(), None, None, limits),
            &dropped
        )),
        "SignatureDoesNotMatch"
    );

    // The final chunk's signature is checked too.
    let mut bad_final = body.clone();
    let pos = bad_final.len() - 5;
    bad_final[pos] = if bad_final[pos] == b'0' { b'1' } else { b'0' };
    assert_eq!(
        code(run(
            ChunkedDecoder::signed(chain(), Some(11), None, limits),
            &bad_final
        )),
        "SignatureDoesNotMatch"
    );
}

/// Chunks of up to 128 KiB are hashed in groups of up to four (the SHA-NI
/// kernel's lanes) and checked when a group fills or a larger chunk or the
/// end comes: every chunk of every position in a group is still checked,
/// in order, and the payload comes out whole.
#[test]
fn grouped_chunks_are_each_checked() {
    let limits = ChunkLimits::default();
    // Small chunks in runs of 1 to 9, and chunks too large for a group
    // between them (they flush the group first).
    let mut rng = Rng::new(41);
    let sizes = [
        65_536, 65_536, 65_536, 65_536, 65_536, 1_000, 200_000, 65_536, 65_536, 131_072, 131_073,
        7, 65_536, 65_536, 65_536, 65_536, 65_536, 65_536, 65_536, 65_536, 65_536, 3,
    ];
    let chunks: Vec<Vec<u8>> = sizes.iter().map(|&n| rng.bytes(n)).collect();
    let refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
    let payload: Vec<u8> = chunks.concat();
    let (body, _) = signed_body(&refs, "\r\n");
    let ok = run(
        ChunkedDecoder::signed(chain(), Some(payload.len() as u64), None, limits),
        &body,
    )
    .unwrap();
    assert_eq!(ok, payload);
    // One byte of one chunk changed after signing: refused, wherever it is.
    let mut start = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        let header = body[start..].windows(2).position(|w| w == b"\r\n").unwrap() + 2;
        let mut forged = body.clone();
        forged[start + header + chunk.len() / 2] ^= 1;
        assert_eq!(
            code(run(
                ChunkedDecoder::signed(chain(), Some(payload.len() as u64), None, limits),
                &forged
            )),
            "SignatureDoesNotMatch",
            "chunk {i}"
        );
        // And cut right after that chunk: still reported as forged, not
        // as an incomplete body.
        let cut = &forged[..start + header + chunk.len() + 2];
        assert_eq!(
            code(run(
                ChunkedDecoder::signed(chain(), None, None, limits),
                cut
            )),
            "SignatureDoesNotMatch",
            "chunk {i}, body cut after it"
        );
        start += header + chunk.len() + 2;
    }
}

#[test]
fn malformed_framing_is_refused() {
    let limits = ChunkLimits {
        max_line_len: 100,
        max_chunk_size: 1000,
        max_trailer_bytes: 200,
    };
    let signed = |declared| ChunkedDecoder::signed(chain(), declared, None, limits);
    let unsigned = |declared| ChunkedDecoder::unsigned(declared, vec![], limits);
    let sig = "0".repeat(64);
    let cases: Vec<(ChunkedDecoder, Vec<u8>, &str, &str)> = vec![
        (
            unsigned(None),
            b"zz\r\n".to_vec(),
            "InvalidRequest",
            "not a hex number",
        ),
        (
            unsigned(None),
            b"\r\n".to_vec(),
            "InvalidRequest",
            "not a hex number",
        ),
        (
            unsigned(None),
            b" 5\r\nhello\r\n0\r\n\r\n".to_vec(),
            "InvalidRequest",
            "not a hex number",
        ),
        (
            unsigned(None),
            b"5;ext=1\r\nhello\r\n0\r\n\r\n".to_vec(),
            "InvalidRequest",
            "not a hex number",
        ),
        (
            unsigned(None),
            b"10000000000000000\r\n".to_vec(),
            "InvalidRequest",
            "not a hex number",
        ),
        (
            unsigned(None),
            b"3e9\r\n".to_vec(),
            "InvalidRequest",
            "larger than the limit",
        ),
        (
            unsigned(None),
            b"5\nhello\r\n".to_vec(),
            "InvalidRequest",
            "CRLF",
        ),
        (
            unsigned(None),
            b"5\r\nhelloXX0\r\n".to_vec(),
            "InvalidRequest",
            "not followed by CRLF",
        ),
        (
            unsigned(None),
            b"5\r\nhello\rX".to_vec(),
            "InvalidRequest",
            "not followed by CRLF",
        ),
        (
            unsigned(None),
            format!("{}\r\n", "0".repeat(101)).into_bytes(),
            "InvalidRequest",
            "too long",
        ),
        (
            unsigned(None),
            b"0\r\n\r\n\r\nmore".to_vec(),
            "InvalidRequest",
            "follows the end",
        ),
        (
            signed(None),
            b"5\r\nhello\r\n".to_vec(),
            "InvalidRequest",
            "no chunk-signature",
        ),
        (
            signed(None),
            b"5;chunk-signature=abc\r\n".to_vec(),
            "InvalidRequest",
            "64 hex digits",
        ),
        (
            signed(None),
            format!("5;chunk-signature={sig}0\r\n").into_bytes(),
            "InvalidRequest",
            "64 hex digits",
        ),
        (
            signed(None),
            format!("5;chunk-signature={sig}\r\nhello\r\n").into_bytes(),
            "SignatureDoesNotMatch",
            "",
        ),
        (
            unsigned(Some(3)),
            b"5\r\nhello\r\n".to_vec(),
            "IncompleteBody",
            "",
        ),
        (
            unsigned(Some(6)),
            b"5\r\nhello\r\n0\r\n\r\n".to_vec(),
            "IncompleteBody",
            "",
        ),
        (
            unsigned(Some(5)),
            b"5\r\nhel".to_vec(),
            "IncompleteBody",
            "",
        ),
        (
            unsigned(Some(5)),
            b"5\r\nhello\r\n0".to_vec(),
            "IncompleteBody",
            "",
        ),
        (unsigned(None), b"".to_vec(), "IncompleteBody", ""),
    ];
    for (i, (decoder, body, code_expected, message)) in cases.into_iter().enumerate() {
        let err = run(decoder, &body).unwrap_err();
        assert_eq!(err.code(), code_expected, "case {i}: {err:?}");
        assert!(err.to_string().contains(message), "case {i}: {err}");
    }
    // Sizes near u64::MAX do not overflow the length check.
    let unbounded = ChunkLimits {
        max_chunk_size: u64::MAX,
        ..ChunkLimits::default()
    };
    let err = run(
        ChunkedDecoder::unsigned(Some(10), vec![], unbounded),
        b"5\r\nhello\r\nffffffffffffffff\r\n",
    )
    .unwrap_err();
    assert_eq!(err.code(), "IncompleteBody");
    // IncompleteBody says how much was declared and received.
    let err = run(unsigned(Some(6)), b"5\r\nhello\r\n0\r\n\r\n").unwrap_err();
    assert_eq!(
        err.details(),
        vec![
            ("NumberBytesExpected", "6".to_owned()),
            ("NumberBytesProvided", "5".to_owned())
        ]
    );
}

#[test]
fn errors_are_sticky() {
    let mut decoder = ChunkedDecoder::unsigned(None, vec![], ChunkLimits::default());
    let err = decoder.decode(b"zz\r\n").unwrap_err();
    assert_eq!(decoder.decode(b"0\r\n\r\n").unwrap_err(), err);
    assert!(!decoder.is_done());
    assert_eq!(decoder.finish().unwrap_err(), err);
}

#[test]
fn trailers_are_checked() {
    let limits = ChunkLimits {
        max_trailer_bytes: 200,
        ..ChunkLimits::default()
    };
    let crc = ChecksumAlgorithm::Crc32;
    let unsigned =
        |declared: Vec<ChecksumAlgorithm>| ChunkedDecoder::unsigned(Some(5), declared, limits);
    let body = |trailers: &str| format!("5\r\nhello\r\n0\r\n{trailers}").into_bytes();

    let ok = run(
        unsigned(vec![crc]),
        &body("x-amz-checksum-crc32:AAAAAA==\r\n\r\n"),
    )
    .unwrap();
    assert_eq!(ok, b"hello");
    // Names are case-insensitive, values trimmed; the final empty line may
    // be missing.
    assert!(
        run(
            unsigned(vec![crc]),
            &body("X-Amz-Checksum-CRC32: AAAAAA==\r\n")
        )
        .is_ok()
    );
    // minio-go's form (`StreamingUSReader`, what mc sends over HTTPS):
    // trailer lines ended by LF alone, then two CRLFs; several lines too.
    assert_eq!(
        run(
            unsigned(vec![crc]),
            &body("x-amz-checksum-crc32:AAAAAA==\n\r\n\r\n")
        )
        .unwrap(),
        b"hello"
    );
    let two = vec![crc, ChecksumAlgorithm::Crc32c];
    assert!(
        run(
            unsigned(two),
            &body("x-amz-checksum-crc32:AAAAAA==\nx-amz-checksum-crc32c:AAAAAA==\n\r\n\r\n")
        )
        .is_ok()
    );
    // No trailers declared, none sent; with or without the final CRLF.
    assert!(run(unsigned(vec![]), &body("\r\n")).is_ok());
    assert!(run(unsigned(vec![]), &body("")).is_ok());

    let cases: Vec<(Vec<ChecksumAlgorithm>, String, &str)> = vec![
        (vec![crc], "\r\n".to_owned(), "MalformedTrailerError"),
        (
            vec![crc],
            "x-amz-checksum-sha1:AAAAAA==\r\n\r\n".to_owned(),
            "MalformedTrailerError",
        ),
        (
            vec![crc],
            "x-amz-checksum-md5:AAAAAA==\r\n\r\n".to_owned(),
            "MalformedTrailerError",
        ),
        (
            vec![crc],
            "x-amz-checksum-crc32:AAAAAA==\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n".to_owned(),
            "MalformedTrailerError",
        ),
        (
            vec![crc],
            "x-amz-checksum-crc32 AAAAAA==\r\n\r\n".to_owned(),
            "MalformedTrailerError",
        ),
        // minio-go's LF-ended block without its final CRLF (MinIO: EOF).
        (
            vec![crc],
            "x-amz-checksum-crc32:AAAAAA==\n\r\n".to_owned(),
            "IncompleteBody",
        ),
        (
            vec![crc],
            "x-amz-checksum-crc32:AAAAAA==\n\n\r\n".to_owned(),
            "MalformedTrailerError",
        ),
        (
            vec![crc, ChecksumAlgorithm::Crc32c],
            "x-amz-checksum-crc32:AAAAAA==\n\r\nx-amz-checksum-crc32c:AAAAAA==\n\r\n\r\n"
                .to_owned(),
            "MalformedTrailerError",
        ),
        (
            vec![crc],
            format!(
                "x-amz-checksum-crc32:AAAAAA==\r\nx-amz-trailer-signature:{}\r\n\r\n",
                "0".repeat(64)
            ),
            "MalformedTrailerError",
        ),
        (
            vec![crc],
            "x-amz-checksum-crc32:AAAAAAAA\r\n\r\n".to_owned(),
            "InvalidDigest",
        ),
        (
            vec![crc],
            "x-amz-checksum-crc32:not base64!\r\n\r\n".to_owned(),
            "InvalidDigest",
        ),
        (
            vec![crc],
            format!("x-amz-checksum-crc32:{}\r\n\r\n", "A".repeat(300)),
            "MalformedTrailerError",
        ),
        (
            vec![crc],
            "x-amz-checksum-crc32:AAAAAA==\r\n\r\nextra".to_owned(),
            "InvalidRequest",
        ),
        (
            vec![crc],
            "x-amz-checksum-crc32:\u{ff}AAAAA==\r\n\r\n".to_owned(),
            "InvalidDigest",
        ),
    ];
    for (i, (declared, trailers, expected)) in cases.into_iter().enumerate() {
        let err = run(unsigned(declared), &body(&trailers)).unwrap_err();
        assert_eq!(err.code(), expected, "case {i}: {err:?}");
    }
    // Bytes that are not text.
    let mut raw = body("x-amz-checksum-crc32:");
    raw.extend_from_slice(b"\xffAAAAA==\r\n\r\n");
    assert_eq!(
        code(run(unsigned(vec![crc]), &raw)),
        "MalformedTrailerError"
    );
    // A partial trailer line at the end is an incomplete body.
    let err = run(unsigned(vec![crc]), &body("x-amz-checksum-crc32:AAA")).unwrap_err();
    assert_eq!(err.code(), "IncompleteBody");
}

#[test]
fn signed_trailers_need_their_signature() {
    let crc = ChecksumAlgorithm::Crc32;
    let limits = ChunkLimits::default();
    let (prefix, last) = signed_body(&[b"hello"], "");
    let trailer_line = "x-amz-checksum-crc32:AAAAAA==\n";
    // The trailer signature chains from the final chunk's.
    let good_sig = chain_from(last).trailer_signature(trailer_line.as_bytes());
    let with = |tail: String| {
        let mut body = prefix.clone();
        body.extend_from_slice(tail.as_bytes());
        run(
            ChunkedDecoder::signed(chain(), Some(5), Some(vec![crc]), limits),
            &body,
        )
    };
    assert_eq!(
        with(format!(
            "x-amz-checksum-crc32:AAAAAA==\r\nx-amz-trailer-signature:{good_sig}\r\n\r\n"
        ))
        .unwrap(),
        b"hello"
    );
    assert_eq!(
        code(with("x-amz-checksum-crc32:AAAAAA==\r\n\r\n".to_owned())),
        "MalformedTrailerError"
    );
    // minio-go's signed form (`addSignedTrailer`): the trailer lines ended
    // by LF, an empty CRLF line, the signature line, the final CRLF.
    assert_eq!(
        with(format!(
            "x-amz-checksum-crc32:AAAAAA==\n\r\nx-amz-trailer-signature:{good_sig}\r\n\r\n"
        ))
        .unwrap(),
        b"hello"
    );
    assert_eq!(
        code(with(format!(
            "x-amz-checksum-crc32:AAAAAA==\n\r\nx-amz-trailer-signature:{}\r\n\r\n",
            "1".repeat(64)
        ))),
        "SignatureDoesNotMatch"
    );
    assert_eq!(
        code(with(format!(
            "x-amz-checksum-crc32:AAAAAA==\r\nx-amz-trailer-signature:{}\r\n\r\n",
            "1".repeat(64)
        ))),
        "SignatureDoesNotMatch"
    );
    assert_eq!(
        code(with(format!(
            "x-amz-checksum-crc32:AAAAAA==\r\nx-amz-trailer-signature:{good_sig}\r\nx-amz-checksum-sha1:AAAA\r\n\r\n"
        ))),
        "MalformedTrailerError"
    );
    assert_eq!(
        code(with(
            "x-amz-checksum-crc32:AAAAAA==\r\nx-amz-trailer-signature:xyz\r\n\r\n".to_owned()
        )),
        "MalformedTrailerError"
    );
    // The trailer signature chains from the final chunk, not the seed.
    let from_seed = chain().trailer_signature(trailer_line.as_bytes());
    assert_eq!(
        code(with(format!(
            "x-amz-checksum-crc32:AAAAAA==\r\nx-amz-trailer-signature:{from_seed}\r\n\r\n"
        ))),
        "SignatureDoesNotMatch"
    );
}

#[test]
fn verifier_checks_streaming_headers() {
    let verifier = verifier();
    let sign = |headers: &[(&str, &str)], body: Body<'_>| {
        let mut builder = http::Request::put("/bucket/object").header("host", "localhost:9000");
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let mut request = builder.body(()).unwrap();
        sign_with_aws_sigv4(&mut request, body, &SignOptions::new(example_time()));
        authenticate(&verifier, &request, example_time())
    };
    let streaming = Body::Precomputed("STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
    assert_eq!(
        sign(&[], streaming).unwrap_err(),
        AuthError::MissingContentLength
    );
    assert_eq!(
        AuthError::MissingContentLength.status(),
        http::StatusCode::LENGTH_REQUIRED
    );
    let streaming = Body::Precomputed("STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
    let err = sign(&[("x-amz-decoded-content-length", "-1")], streaming).unwrap_err();
    assert_eq!(err.code(), "InvalidArgument");
    let err = sign(
        &[
            ("x-amz-decoded-content-length", "5"),
            ("x-amz-trailer", "x-amz-checksum-md5"),
        ],
        Body::StreamingUnsignedTrailer,
    )
    .unwrap_err();
    assert_eq!(err.code(), "InvalidRequest");
    assert_eq!(
        err.to_string(),
        "The value specified in the x-amz-trailer header is not supported"
    );
    let err = sign(
        &[
            ("x-amz-decoded-content-length", "5"),
            (
                "x-amz-trailer",
                "x-amz-checksum-crc32, x-amz-checksum-crc32",
            ),
        ],
        Body::StreamingSignedTrailer,
    )
    .unwrap_err();
    assert_eq!(err.code(), "InvalidRequest");
    let verified = sign(
        &[
            ("x-amz-decoded-content-length", "5"),
            (
                "x-amz-trailer",
                "x-amz-checksum-crc32c, x-amz-checksum-sha256",
            ),
        ],
        Body::StreamingSignedTrailer,
    )
    .unwrap();
    assert_eq!(
        verified.content_sha256,
        ContentSha256::StreamingSignedTrailer
    );
    let Payload::Chunked(decoder) = verified.payload else {
        panic!()
    };
    assert_eq!(decoder.declared_len(), Some(5));

    // The chunk limits come from the configuration.
    let small = Verifier::new(
        AuthConfig {
            limits: s3_gateway::auth::AuthLimits {
                chunk: ChunkLimits {
                    max_chunk_size: 10,
                    ..ChunkLimits::default()
                },
                ..Default::default()
            },
            ..AuthConfig::default()
        },
        credentials(),
    );
    let up = upload(Mode::UnsignedTrailer, &[1; 11], &[11], &[], &[]);
    let mut decoder = decoder_with(&small, &up.request);
    let err = decoder.decode_into(&up.body, &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("larger than the limit"), "{err}");
}

//! Fuzz-style loops (seeded, bounded): random and mutated inputs to the
//! `Authorization` parser, the whole verifier and the chunk decoder. None
//! may panic; every error must be a client error; a signed body that was
//! changed must never decode to different bytes.

mod common;

use common::*;
use s3_gateway::auth::{
    AuthLimits, AuthorizationHeader, ChecksumAlgorithm, ChunkLimits, ChunkedDecoder,
    CredentialScope, Payload, SecretKey, Signature, SignatureChain, SigningKey,
};

const SPECIAL: &[u8] = b" ,;=/:\t\r\n\0%+-_.~AWS4-HMAC-SHA256Credential=SignedHeaders=Signature=aws4_request0123456789abcdef\xff\xc3";

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..rng.range(1, 4) {
        let pos = if out.is_empty() {
            0
        } else {
            rng.below(out.len() + 1)
        };
        match rng.below(5) {
            0 if pos < out.len() => out[pos] = *rng.pick(SPECIAL),
            1 if pos < out.len() => {
                out.remove(pos);
            }
            2 => out.insert(pos, *rng.pick(SPECIAL)),
            3 => out.truncate(pos),
            _ => {
                let n = rng.range(1, 8);
                let piece = rng.bytes(n);
                out.splice(pos..pos, piece);
            }
        }
    }
    out
}

const VALID_HEADER: &str = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
     SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
     Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";

#[test]
fn authorization_parser_never_panics() {
    let mut rng = Rng::new(21);
    let limits = AuthLimits::default();
    let mut accepted = 0;
    for i in 0..30_000 {
        let input = if i % 3 == 0 {
            let n = rng.below(200);
            rng.bytes(n)
        } else {
            mutate(&mut rng, VALID_HEADER.as_bytes())
        };
        let text = String::from_utf8_lossy(&input);
        match AuthorizationHeader::parse(&text, &limits) {
            Ok(parsed) => {
                accepted += 1;
                assert!(!parsed.access_key.is_empty());
                assert!(!parsed.signed_headers.is_empty());
            }
            Err(e) => {
                assert!(
                    matches!(e.code(), "AuthorizationHeaderMalformed" | "InvalidRequest"),
                    "{e:?}"
                );
                assert!(e.status().is_client_error());
            }
        }
    }
    // Some mutations keep the header valid (a changed signature digit).
    assert!(accepted > 0);
}

fn random_ascii(rng: &mut Rng, base: &str) -> String {
    let bytes = mutate(rng, base.as_bytes());
    bytes
        .into_iter()
        .filter(|b| (0x20..0x7f).contains(b) || *b == b'\t')
        .map(char::from)
        .collect()
}

#[test]
fn verifier_never_panics() {
    let verifier = verifier();
    let mut rng = Rng::new(22);
    let presigned_query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
    for i in 0..5_000 {
        let query = random_ascii(&mut rng, presigned_query).replace([' ', '\t', '#'], "");
        let path =
            random_ascii(&mut rng, "/test%24file.text/a%2Fb").replace([' ', '\t', '#', '?'], "");
        let path = if path.starts_with('/') {
            path
        } else {
            format!("/{path}")
        };
        let target = if i % 2 == 0 {
            format!("{path}?{query}")
        } else {
            path
        };
        let Ok(uri) = target.parse::<http::Uri>() else {
            continue;
        };
        let mut request = http::Request::builder().uri(uri);
        if rng.chance(80) {
            request = request.header(
                "host",
                random_ascii(&mut rng, "examplebucket.s3.amazonaws.com"),
            );
        }
        if i % 2 == 1 || rng.chance(10) {
            request = request.header("authorization", random_ascii(&mut rng, VALID_HEADER));
        }
        for (name, base) in [
            ("x-amz-date", "20130524T000000Z"),
            (
                "x-amz-content-sha256",
                "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
            ),
            ("x-amz-decoded-content-length", "66560"),
            ("x-amz-trailer", "x-amz-checksum-crc32c"),
            ("date", "Fri, 24 May 2013 00:00:00 GMT"),
            ("x-amz-security-token", "token"),
        ] {
            if rng.chance(60) {
                request = request.header(name, random_ascii(&mut rng, base));
            }
        }
        let Ok(request) = request.body(()) else {
            continue;
        };
        if let Err(e) = verifier.authenticate((&request).into(), example_time()) {
            assert!(e.status().is_client_error(), "{e:?}");
            assert!(!e.code().is_empty());
            let _ = e.to_string();
            let _ = e.details();
        }
    }
}

fn chain_from(seed: Signature) -> SignatureChain {
    let scope = CredentialScope::new("20130524", "us-east-1", "s3");
    SignatureChain::new(
        SigningKey::derive(&SecretKey::new(SECRET_KEY), &scope),
        "20130524T000000Z",
        &scope,
        seed,
    )
}

fn sha(data: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(data).into()
}

/// A valid body: signed (with a signed CRC32 trailer when `trailer`) or
/// unsigned with a CRC32 trailer.
fn valid_body(rng: &mut Rng, payload: &[u8], signed: bool, trailer: bool) -> Vec<u8> {
    let seed = Signature::from_hex(&"ab".repeat(32)).unwrap();
    let mut chain = chain_from(seed);
    let mut body = Vec::new();
    let mut rest = payload;
    loop {
        let n = if rest.is_empty() {
            0
        } else {
            rng.range(1, rest.len())
        };
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        if signed {
            let sig = chain.chunk_signature(&sha(chunk));
            chain = chain_from(sig);
            body.extend_from_slice(format!("{n:x};chunk-signature={sig}\r\n").as_bytes());
        } else {
            body.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        }
        if n == 0 {
            break;
        }
        body.extend_from_slice(chunk);
        body.extend_from_slice(b"\r\n");
    }
    if trailer {
        body.extend_from_slice(b"x-amz-checksum-crc32:AAAAAA==\r\n");
        if signed {
            let sig = chain.trailer_signature(b"x-amz-checksum-crc32:AAAAAA==\n");
            body.extend_from_slice(format!("x-amz-trailer-signature:{sig}\r\n").as_bytes());
        }
    }
    body.extend_from_slice(b"\r\n");
    body
}

fn decoder(signed: bool, trailer: bool, declared: u64) -> ChunkedDecoder {
    let limits = ChunkLimits {
        max_line_len: 256,
        max_chunk_size: 1 << 20,
        max_trailer_bytes: 512,
    };
    let trailers = vec![ChecksumAlgorithm::Crc32];
    if signed {
        let seed = Signature::from_hex(&"ab".repeat(32)).unwrap();
        ChunkedDecoder::signed(
            chain_from(seed),
            Some(declared),
            trailer.then_some(trailers),
            limits,
        )
    } else {
        ChunkedDecoder::unsigned(Some(declared), trailers, limits)
    }
}

/// Feeds `body` in random pieces; checks the decoder's contract on the way.
fn feed(rng: &mut Rng, mut d: ChunkedDecoder, body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < body.len() {
        let end = (offset + rng.range(1, 300)).min(body.len());
        let mut input = &body[offset..end];
        while !input.is_empty() {
            match d.decode(input) {
                Ok(decoded) => {
                    assert!(decoded.consumed > 0 && decoded.consumed <= input.len());
                    assert!(decoded.payload.len() <= decoded.consumed);
                    out.extend_from_slice(decoded.payload);
                    input = &input[decoded.consumed..];
                }
                Err(e) => {
                    assert!(e.status().is_client_error(), "{e:?}");
                    // Sticky.
                    assert_eq!(d.decode(b"0\r\n\r\n").unwrap_err(), e);
                    return Err(e.code().to_owned());
                }
            }
        }
        offset = end;
    }
    d.finish().map(|_| out).map_err(|e| {
        assert!(e.status().is_client_error(), "{e:?}");
        e.code().to_owned()
    })
}

#[test]
fn chunk_decoder_never_panics_on_random_bytes() {
    let mut rng = Rng::new(23);
    for i in 0..3_000 {
        let n = rng.below(400);
        let body = rng.bytes(n);
        let signed = i % 2 == 0;
        let declared = rng.below(1000) as u64;
        let _ = feed(&mut rng, decoder(signed, i % 3 == 0, declared), &body);
    }
}

#[test]
fn mutated_signed_bodies_never_decode_to_other_bytes() {
    let mut rng = Rng::new(24);
    let mut refused = 0;
    for i in 0..3_000 {
        let len = rng.below(3000);
        let payload = rng.bytes(len);
        let (signed, trailer) = match i % 3 {
            0 => (true, false),
            1 => (true, true),
            _ => (false, true),
        };
        let body = valid_body(&mut rng, &payload, signed, trailer);
        assert_eq!(
            feed(&mut rng, decoder(signed, trailer, len as u64), &body).unwrap(),
            payload,
            "valid body {i}"
        );
        let mutated = mutate(&mut rng, &body);
        match feed(&mut rng, decoder(signed, trailer, len as u64), &mutated) {
            Ok(decoded) => {
                assert_eq!(decoded.len(), len, "declared length enforced");
                if signed {
                    assert_eq!(
                        decoded, payload,
                        "body {i}: a signed body changed undetected"
                    );
                }
            }
            Err(_) => refused += 1,
        }
    }
    assert!(refused > 2_000, "only {refused} mutations refused");
}

#[test]
fn verified_chunked_payloads_resist_random_bodies() {
    // Through the verifier: the published chunked request with random
    // bodies.
    let request = http::Request::put("/examplebucket/chunkObject.txt")
        .header("host", "s3.amazonaws.com")
        .header("x-amz-date", "20130524T000000Z")
        .header("x-amz-storage-class", "REDUCED_REDUNDANCY")
        .header("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
        .header("content-encoding", "aws-chunked")
        .header("x-amz-decoded-content-length", "66560")
        .header("content-length", "66824")
        .header(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,\
             SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;\
             x-amz-decoded-content-length;x-amz-storage-class,\
             Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
        )
        .body(())
        .unwrap();
    let verifier = verifier();
    let mut rng = Rng::new(25);
    for _ in 0..500 {
        let verified = authenticate(&verifier, &request, example_time()).unwrap();
        let Payload::Chunked(d) = verified.payload else {
            panic!()
        };
        let n = rng.below(2000);
        let mut body = format!("{:x};chunk-signature=", rng.below(0x20000)).into_bytes();
        body.extend(rng.bytes(n));
        assert!(feed(&mut rng, *d, &body).is_err());
    }
}

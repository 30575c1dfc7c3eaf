//! The worked examples of the Amazon S3 API reference, verified end to end:
//! "Signature Calculations for the Authorization Header: Transferring
//! Payload in a Single Chunk" (GET Object, PUT Object, GET Bucket
//! Lifecycle, Get Bucket (List Objects)), "Authenticating Requests: Using
//! Query Parameters" (the presigned GET), "... Transferring Payload in
//! Multiple Chunks" (the signed chunked PUT: seed and chunk signatures) and
//! "Signature calculations for trailing headers" (the signed chunked PUT
//! with a CRC32C trailer). All use access key AKIAIOSFODNN7EXAMPLE, its
//! example secret, 20130524T000000Z and us-east-1. Since HMAC-SHA256 cannot
//! be forged, a verifier that accepts these signatures computes exactly
//! AWS's canonical requests.

mod common;

use std::time::Duration;

use common::*;
use s3_gateway::auth::{
    AuthKind, ChecksumAlgorithm, ContentSha256, CredentialScope, Payload, SecretKey, Signature,
    SignatureChain, SigningKey,
};

const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

fn authorization(signed_headers: &str, signature: &str) -> String {
    format!(
        "AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/20130524/us-east-1/s3/aws4_request,\
         SignedHeaders={signed_headers},Signature={signature}"
    )
}

#[test]
fn get_object() {
    let request = http::Request::get("/test.txt")
        .header("host", "examplebucket.s3.amazonaws.com")
        .header("range", "bytes=0-9")
        .header("x-amz-content-sha256", EMPTY)
        .header("x-amz-date", "20130524T000000Z")
        .header(
            "authorization",
            authorization(
                "host;range;x-amz-content-sha256;x-amz-date",
                "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
            ),
        )
        .body(())
        .unwrap();
    let verified = authenticate(&verifier(), &request, example_time()).unwrap();
    assert_eq!(verified.access_key, ACCESS_KEY);
    assert_eq!(verified.principal.name(), "example-user");
    assert_eq!(verified.kind, AuthKind::Header);
    assert_eq!(verified.request_time, example_time());
    assert_eq!(
        verified.scope,
        CredentialScope::new("20130524", "us-east-1", "s3")
    );
    assert_eq!(
        verified.signed_headers,
        ["host", "range", "x-amz-content-sha256", "x-amz-date"]
    );
    assert_eq!(verified.security_token, None);
    let Payload::Sha256(body) = verified.payload else {
        panic!("a signed empty payload")
    };
    body.finish().unwrap();
}

#[test]
fn put_object() {
    let content = b"Welcome to Amazon S3.";
    let hash = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072";
    let request = http::Request::put("/test$file.text")
        .header("host", "examplebucket.s3.amazonaws.com")
        .header("date", "Fri, 24 May 2013 00:00:00 GMT")
        .header("x-amz-date", "20130524T000000Z")
        .header("x-amz-storage-class", "REDUCED_REDUNDANCY")
        .header("x-amz-content-sha256", hash)
        .header(
            "authorization",
            authorization(
                "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
                "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
            ),
        )
        .body(())
        .unwrap();
    let verified = authenticate(&verifier(), &request, example_time()).unwrap();
    assert!(matches!(verified.content_sha256, ContentSha256::Sha256(_)));
    let Payload::Sha256(mut body) = verified.payload else {
        panic!("a signed payload")
    };
    let mut wrong = body.clone();
    body.update(&content[..7]);
    body.update(&content[7..]);
    body.finish().unwrap();
    wrong.update(b"Welcome to Amazon S4.");
    let err = wrong.finish().unwrap_err();
    assert_eq!(err.code(), "XAmzContentSHA256Mismatch");

    // The same request with the path escaped differently is the same
    // canonical request: `$` and `%24` agree.
    let mut escaped = request;
    *escaped.uri_mut() = "/test%24file.text".parse().unwrap();
    authenticate(&verifier(), &escaped, example_time()).unwrap();
}

#[test]
fn get_bucket_lifecycle() {
    let request = http::Request::get("/?lifecycle")
        .header("host", "examplebucket.s3.amazonaws.com")
        .header("x-amz-date", "20130524T000000Z")
        .header("x-amz-content-sha256", EMPTY)
        .header(
            "authorization",
            authorization(
                "host;x-amz-content-sha256;x-amz-date",
                "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
            ),
        )
        .body(())
        .unwrap();
    authenticate(&verifier(), &request, example_time()).unwrap();
}

#[test]
fn get_bucket_list_objects() {
    let signature = "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7";
    for target in ["/?max-keys=2&prefix=J", "/?prefix=J&max-keys=2"] {
        let request = http::Request::get(target)
            .header("host", "examplebucket.s3.amazonaws.com")
            .header("x-amz-date", "20130524T000000Z")
            .header("x-amz-content-sha256", EMPTY)
            .header(
                "authorization",
                authorization("host;x-amz-content-sha256;x-amz-date", signature),
            )
            .body(())
            .unwrap();
        authenticate(&verifier(), &request, example_time()).unwrap();
    }
    // A different prefix is a different request.
    let request = http::Request::get("/?max-keys=2&prefix=K")
        .header("host", "examplebucket.s3.amazonaws.com")
        .header("x-amz-date", "20130524T000000Z")
        .header("x-amz-content-sha256", EMPTY)
        .header(
            "authorization",
            authorization("host;x-amz-content-sha256;x-amz-date", signature),
        )
        .body(())
        .unwrap();
    let err = authenticate(&verifier(), &request, example_time()).unwrap_err();
    assert_eq!(err.code(), "SignatureDoesNotMatch");
    let details = err.details();
    assert!(
        details
            .iter()
            .any(|(k, v)| *k == "CanonicalRequest" && v.contains("max-keys=2&prefix=K")),
        "{details:?}"
    );
}

const PRESIGNED: &str = "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256\
    &X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request\
    &X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host\
    &X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";

fn presigned_get(target: &str) -> http::Request<()> {
    http::Request::get(target)
        .header("host", "examplebucket.s3.amazonaws.com")
        .body(())
        .unwrap()
}

#[test]
fn presigned_get_object() {
    let verifier = verifier();
    let request = presigned_get(PRESIGNED);
    for later in [0, 60, 86_400] {
        let now = example_time() + Duration::from_secs(later);
        let verified = authenticate(&verifier, &request, now).unwrap();
        assert_eq!(
            verified.kind,
            AuthKind::Presigned {
                expires: example_time() + Duration::from_secs(86_400)
            }
        );
        assert_eq!(verified.content_sha256, ContentSha256::Unsigned);
        assert!(matches!(verified.payload, Payload::Unsigned));
    }
    // One second after it expires.
    let err = authenticate(
        &verifier,
        &request,
        example_time() + Duration::from_secs(86_401),
    )
    .unwrap_err();
    assert_eq!(err.code(), "AccessDenied");
    assert_eq!(err.to_string(), "Request has expired");
    assert_eq!(err.status(), http::StatusCode::FORBIDDEN);
    assert_eq!(
        err.details(),
        vec![
            ("X-Amz-Expires", "86400".to_owned()),
            ("Expires", "Sat, 25 May 2013 00:00:00 GMT".to_owned()),
            ("ServerTime", "Sat, 25 May 2013 00:00:01 GMT".to_owned()),
        ]
    );
    // Valid a little before its date (clock skew), not long before.
    authenticate(
        &verifier,
        &request,
        example_time() - Duration::from_secs(14 * 60),
    )
    .unwrap();
    let err = authenticate(
        &verifier,
        &request,
        example_time() - Duration::from_secs(16 * 60),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "Request is not valid yet");
    // Tampering with the expiry breaks the signature.
    let err = authenticate(
        &verifier,
        &presigned_get(&PRESIGNED.replace("Expires=86400", "Expires=86401")),
        example_time(),
    )
    .unwrap_err();
    assert_eq!(err.code(), "SignatureDoesNotMatch");
}

/// The signed chunked upload of the S3 documentation: 66560 bytes of `a` in
/// a 65536-byte chunk, a 1024-byte chunk and the final empty chunk.
fn chunked_request(
    content_sha256: &str,
    signed_headers: &str,
    seed: &str,
    trailer: bool,
) -> http::Request<()> {
    let mut builder = http::Request::put("/examplebucket/chunkObject.txt")
        .header("host", "s3.amazonaws.com")
        .header("x-amz-date", "20130524T000000Z")
        .header("x-amz-storage-class", "REDUCED_REDUNDANCY")
        .header("x-amz-content-sha256", content_sha256)
        .header("content-encoding", "aws-chunked")
        .header("x-amz-decoded-content-length", "66560")
        .header("content-length", "66824");
    if trailer {
        builder = builder.header("x-amz-trailer", "x-amz-checksum-crc32c");
    }
    builder
        .header("authorization", authorization(signed_headers, seed))
        .body(())
        .unwrap()
}

fn chunked_body(signatures: [&str; 3], tail: &str) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(format!("10000;chunk-signature={}\r\n", signatures[0]).as_bytes());
    body.extend_from_slice(&[b'a'; 65_536]);
    body.extend_from_slice(format!("\r\n400;chunk-signature={}\r\n", signatures[1]).as_bytes());
    body.extend_from_slice(&[b'a'; 1024]);
    body.extend_from_slice(format!("\r\n0;chunk-signature={}\r\n", signatures[2]).as_bytes());
    body.extend_from_slice(tail.as_bytes());
    body
}

const SEED: &str = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
const CHUNKS: [&str; 3] = [
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
    "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
];

#[test]
fn put_object_in_signed_chunks() {
    let request = chunked_request(
        "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
        "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;\
         x-amz-decoded-content-length;x-amz-storage-class",
        SEED,
        false,
    );
    let body = chunked_body(CHUNKS, "\r\n");
    assert_eq!(body.len(), 66_824, "the documented Content-Length");
    for split in [1, 7, 4096, 65_600, body.len()] {
        let verified = authenticate(&verifier(), &request, example_time()).unwrap();
        assert_eq!(verified.content_sha256, ContentSha256::StreamingSigned);
        let Payload::Chunked(mut decoder) = verified.payload else {
            panic!("a chunked payload")
        };
        assert!(decoder.is_signed());
        assert_eq!(decoder.declared_len(), Some(66_560));
        let mut payload = Vec::new();
        for piece in body.chunks(split) {
            decoder.decode_into(piece, &mut payload).unwrap();
        }
        assert!(decoder.is_done());
        assert_eq!(decoder.decoded_len(), 66_560);
        let trailers = decoder.finish().unwrap();
        assert!(trailers.is_empty());
        assert_eq!(payload, vec![b'a'; 66_560]);
    }

    // The chunk signatures, computed on their own from the seed.
    let key = SigningKey::derive(
        &SecretKey::new(SECRET_KEY),
        &CredentialScope::new("20130524", "us-east-1", "s3"),
    );
    let scope = CredentialScope::new("20130524", "us-east-1", "s3");
    let seed = Signature::from_hex(SEED).unwrap();
    let chain = SignatureChain::new(key, "20130524T000000Z", &scope, seed);
    assert_eq!(chain.previous(), seed);
    let hash = |data: &[u8]| -> [u8; 32] {
        use sha2::Digest;
        sha2::Sha256::digest(data).into()
    };
    assert_eq!(
        chain.chunk_signature(&hash(&[b'a'; 65_536])).to_hex(),
        CHUNKS[0]
    );

    // A changed byte in the second chunk is caught when that chunk ends.
    let mut corrupt = body.clone();
    corrupt[65_536 + 200] = b'b';
    let Payload::Chunked(mut decoder) = authenticate(&verifier(), &request, example_time())
        .unwrap()
        .payload
    else {
        panic!()
    };
    let err = decoder.decode_into(&corrupt, &mut Vec::new()).unwrap_err();
    assert_eq!(err.code(), "SignatureDoesNotMatch");
    assert!(err.details().iter().any(|(k, v)| *k == "StringToSign"
        && v.starts_with(
            "AWS4-HMAC-SHA256-PAYLOAD\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
        )));
}

#[test]
fn put_object_in_signed_chunks_with_a_signed_trailer() {
    let request = chunked_request(
        "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
        "content-encoding;host;x-amz-content-sha256;x-amz-date;\
         x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer",
        "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e",
        true,
    );
    let chunks = [
        "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
        "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
        "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
    ];
    let trailer = "x-amz-checksum-crc32c:sOO8/Q==\r\n\
                   x-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n";
    // As SDKs send it, with the empty line AWS's example shows before the
    // trailers, and without the final empty line.
    for tail in [
        format!("{trailer}\r\n"),
        format!("\r\n{trailer}\r\n"),
        trailer.to_owned(),
    ] {
        let verified = authenticate(&verifier(), &request, example_time()).unwrap();
        assert_eq!(
            verified.content_sha256,
            ContentSha256::StreamingSignedTrailer
        );
        let Payload::Chunked(mut decoder) = verified.payload else {
            panic!("a chunked payload")
        };
        let mut payload = Vec::new();
        decoder
            .decode_into(&chunked_body(chunks, &tail), &mut payload)
            .unwrap();
        let trailers = decoder.finish().unwrap();
        assert_eq!(payload.len(), 66_560);
        assert_eq!(trailers.get(ChecksumAlgorithm::Crc32c), Some("sOO8/Q=="));
        assert_eq!(trailers.len(), 1);
    }
    // Another checksum value breaks the trailer signature.
    let verified = authenticate(&verifier(), &request, example_time()).unwrap();
    let Payload::Chunked(mut decoder) = verified.payload else {
        panic!()
    };
    let tampered = chunked_body(
        chunks,
        &format!("{}\r\n", trailer.replace("sOO8/Q==", "sOO8/A==")),
    );
    let result = decoder.decode_into(&tampered, &mut Vec::new());
    assert_eq!(result.unwrap_err().code(), "SignatureDoesNotMatch");
}

/// The trailer vector of the AWS CRT (aws-crt-swift's ChunkSignerTests):
/// trailers `first:1st`, `second:2nd`, `third:3rd` chained from the final
/// chunk signature of the documented chunked upload.
#[test]
fn crt_trailer_signature() {
    let scope = CredentialScope::new("20130524", "us-east-1", "s3");
    let key = SigningKey::derive(&SecretKey::new(SECRET_KEY), &scope);
    let chain = SignatureChain::new(
        key,
        "20130524T000000Z",
        &scope,
        Signature::from_hex(CHUNKS[2]).unwrap(),
    );
    assert_eq!(
        chain
            .trailer_signature(b"first:1st\nsecond:2nd\nthird:3rd\n")
            .to_hex(),
        "df5735bd9f3295cd9386572292562fefc93ba94e80a0a1ddcbd652c4e0a75e6c"
    );
}

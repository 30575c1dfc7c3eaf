//! Entry points shared by the cargo-fuzz targets in `fuzz/` and the stable
//! corpus regression tests: one function per parser, taking raw bytes and
//! panicking only when a property that must hold is broken.

use crate::auth::{
    AuthLimits, AuthorizationHeader, ChecksumAlgorithm, ChunkLimits, ChunkedDecoder,
    CredentialScope, PresignedParams, Query, SecretKey, Signature, SignatureChain, SigningKey,
};

/// `Authorization` header parsing: never panics, and a parsed header
/// written back in canonical form parses to the same value.
pub fn authorization_header(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let limits = AuthLimits::default();
    let Ok(header) = AuthorizationHeader::parse(text, &limits) else {
        return;
    };
    let again = format!(
        "AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={}, Signature={}",
        header.access_key,
        header.scope,
        header.signed_headers.join(";"),
        header.signature
    );
    let reparsed = AuthorizationHeader::parse(&again, &limits)
        .unwrap_or_else(|e| panic!("canonical form {again:?} does not parse: {e:?}"));
    assert_eq!(reparsed, header);
}

/// Presigned query parsing (the part after `?`): never panics.
pub fn presigned_query(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let limits = AuthLimits::default();
    if let Ok(query) = Query::parse(Some(text), limits.max_query_len, limits.max_query_params) {
        let _ = PresignedParams::parse(&query, &limits);
    }
}

/// The `aws-chunked` decoder: the first byte picks the mode (signed or
/// unsigned, declared trailers) and where the input is split. The decoder
/// never panics, makes progress on every non-empty input, and gives the
/// same payload and outcome whether the body arrives whole or in pieces.
pub fn aws_chunked(data: &[u8]) {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let split = if body.is_empty() {
        0
    } else {
        usize::from(mode >> 3) % body.len()
    };
    let whole = run_chunked(mode, &[body]);
    let pieces = run_chunked(mode, &[&body[..split], &body[split..]]);
    assert_eq!(whole, pieces, "split at {split} changed the outcome");
}

fn new_decoder(mode: u8) -> ChunkedDecoder {
    let trailers = match mode & 3 {
        0 => None,
        1 => Some(vec![ChecksumAlgorithm::Crc32]),
        2 => Some(vec![ChecksumAlgorithm::Crc64Nvme]),
        _ => Some(vec![ChecksumAlgorithm::Sha256]),
    };
    let limits = ChunkLimits::default();
    let decoded_length = (mode & 8 != 0).then_some(u64::from(mode));
    if mode & 4 == 0 {
        let scope = CredentialScope::new("20130524", "us-east-1", "s3");
        let key = SigningKey::derive(
            &SecretKey::new("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            &scope,
        );
        let seed =
            Signature::from_hex("4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")
                .expect("a valid seed signature");
        let chain = SignatureChain::new(key, "20130524T000000Z", &scope, seed);
        ChunkedDecoder::signed(chain, decoded_length, trailers, limits)
    } else {
        let trailers = trailers.unwrap_or_default();
        ChunkedDecoder::unsigned(decoded_length, trailers, limits)
    }
}

/// Decodes `parts` in order; the outcome is the payload (up to the first
/// error) and whether the body completed, as `Debug` text of the trailers
/// or the error.
fn run_chunked(mode: u8, parts: &[&[u8]]) -> (Vec<u8>, Result<String, String>) {
    let mut decoder = new_decoder(mode);
    let mut payload = Vec::new();
    for part in parts {
        let mut input = *part;
        while !input.is_empty() {
            match decoder.decode(input) {
                Ok(decoded) => {
                    assert!(
                        decoded.consumed > 0 && decoded.consumed <= input.len(),
                        "no progress or overrun: consumed {} of {}",
                        decoded.consumed,
                        input.len()
                    );
                    payload.extend_from_slice(decoded.payload);
                    input = &input[decoded.consumed..];
                }
                Err(e) => return (payload, Err(format!("{e:?}"))),
            }
        }
    }
    let outcome = decoder
        .finish()
        .map(|t| format!("{t:?}"))
        .map_err(|e| format!("{e:?}"));
    (payload, outcome)
}

/// The S3 request XML parser: never panics.
pub fn s3_xml(data: &[u8]) {
    let _ = crate::xml::parse(data);
}

pub use crate::handlers::fuzzing::{
    documents as s3_documents, headers as range_conditional, post_form,
};

/// SigV4 verification of a request built from `data` (fields split at NUL:
/// method, path, query, then `name: value` headers, and a last byte that
/// picks which byte of the signature to change): a request signed with the
/// right key verifies unless it breaks a rule the verifier enforces, and
/// with one signature byte changed, or a signed header's value changed,
/// it never verifies. Returns whether the signed request verified.
pub fn sigv4_verify(data: &[u8]) -> bool {
    use crate::auth::{
        AuthConfig, Authentication, Credentials, Principal, RequestHead, StaticCredentials,
        Verifier, canonical_request, string_to_sign,
    };
    use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};

    const ACCESS: &str = "AKIAIOSFODNN7EXAMPLE";
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const AMZ_DATE: &str = "20130524T000000Z";
    let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_369_353_600);

    let Some((&pick, rest)) = data.split_last() else {
        return false;
    };
    let mut fields = rest.split(|&b| b == 0);
    let method = match fields.next().and_then(|m| m.first()).map(|m| m % 5) {
        Some(0) | None => Method::GET,
        Some(1) => Method::PUT,
        Some(2) => Method::POST,
        Some(3) => Method::DELETE,
        _ => Method::HEAD,
    };
    let path = String::from_utf8_lossy(fields.next().unwrap_or(b"/"));
    let query = String::from_utf8_lossy(fields.next().unwrap_or(b""));
    let target = if query.is_empty() {
        format!("/{}", path.trim_start_matches('/'))
    } else {
        format!("/{}?{query}", path.trim_start_matches('/'))
    };
    let Ok(uri) = target.parse::<Uri>() else {
        return false;
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        "host",
        HeaderValue::from_static("examplebucket.s3.amazonaws.com"),
    );
    headers.insert("x-amz-date", HeaderValue::from_static(AMZ_DATE));
    headers.insert(
        "x-amz-content-sha256",
        HeaderValue::from_static("UNSIGNED-PAYLOAD"),
    );
    let mut signed = vec![
        "host".to_owned(),
        "x-amz-content-sha256".to_owned(),
        "x-amz-date".to_owned(),
    ];
    for field in fields {
        let line = String::from_utf8_lossy(field);
        let Some((n, v)) = line.split_once(':') else {
            continue;
        };
        let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(n.trim().as_bytes()),
            HeaderValue::from_str(v.trim()),
        ) else {
            continue;
        };
        if n == http::header::AUTHORIZATION || headers.contains_key(&n) {
            continue;
        }
        signed.push(n.as_str().to_owned());
        headers.insert(n, v);
    }
    signed.sort();
    let scope = CredentialScope::new("20130524", "us-east-1", "s3");
    let head = RequestHead {
        method: &method,
        uri: &uri,
        headers: &headers,
    };
    let Ok(canonical) = canonical_request(&head, &signed, "UNSIGNED-PAYLOAD", false) else {
        return false;
    };
    let key = SigningKey::derive(&SecretKey::new(SECRET), &scope);
    let signature = key
        .sign(string_to_sign(AMZ_DATE, &scope, &canonical).as_bytes())
        .to_hex();
    let authorization = |sig: &str| {
        HeaderValue::from_str(&format!(
            "AWS4-HMAC-SHA256 Credential={ACCESS}/{scope}, SignedHeaders={}, Signature={sig}",
            signed.join(";")
        ))
        .expect("an ASCII header")
    };
    let verifier = Verifier::new(
        AuthConfig::default(),
        StaticCredentials::new().with(ACCESS, Credentials::new(SECRET, Principal::new("fuzz"))),
    );
    let verify = |headers: &HeaderMap| {
        verifier.authenticate(
            RequestHead {
                method: &method,
                uri: &uri,
                headers,
            },
            now,
        )
    };

    let mut good = headers.clone();
    good.insert(http::header::AUTHORIZATION, authorization(&signature));
    let verified = match verify(&good) {
        Ok(Authentication::Signed(_)) => true,
        Ok(Authentication::Anonymous) => panic!("a signed request was taken as anonymous"),
        Err(_) => false,
    };

    // One hex digit of the signature changed.
    let mut bad_sig = signature.into_bytes();
    let i = usize::from(pick) % bad_sig.len();
    bad_sig[i] = if bad_sig[i] == b'0' { b'1' } else { b'0' };
    let bad_sig = String::from_utf8(bad_sig).expect("hex");
    let mut forged = headers.clone();
    forged.insert(http::header::AUTHORIZATION, authorization(&bad_sig));
    assert!(
        !matches!(verify(&forged), Ok(Authentication::Signed(_))),
        "a changed signature verified"
    );

    // A signed header's value changed (one the canonical form keeps as
    // sent, so the change cannot vanish in trimming).
    if verified {
        let name = &signed[usize::from(pick) % signed.len()];
        let mut changed = good.clone();
        let old = changed
            .get(name.as_str())
            .map(|v| v.as_bytes().to_vec())
            .unwrap_or_default();
        let mut new = old.clone();
        new.push(b'x');
        changed.insert(
            HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
            HeaderValue::from_bytes(&new).expect("a header value"),
        );
        assert!(
            !matches!(verify(&changed), Ok(Authentication::Signed(_))),
            "a changed {name} header verified"
        );
    }
    verified
}

#[cfg(test)]
#[path = "../../../fuzz/corpus.rs"]
mod corpus_files;

#[cfg(test)]
mod tests {
    use super::corpus_files::corpus;

    #[test]
    fn corpus_authorization_header() {
        for input in corpus("authorization_header") {
            super::authorization_header(&input);
        }
    }

    #[test]
    fn corpus_presigned_query() {
        for input in corpus("presigned_query") {
            super::presigned_query(&input);
        }
    }

    #[test]
    fn corpus_aws_chunked() {
        for input in corpus("aws_chunked") {
            super::aws_chunked(&input);
        }
    }

    #[test]
    fn corpus_s3_documents() {
        let seeds = corpus("s3_documents");
        let accepted = seeds.iter().filter(|i| super::s3_documents(i)).count();
        assert!(accepted >= 5, "only {accepted} documents accepted");
    }

    #[test]
    fn corpus_range_conditional() {
        for input in corpus("range_conditional") {
            super::range_conditional(&input);
        }
    }

    #[test]
    fn corpus_post_form() {
        let seeds = corpus("post_form");
        let accepted = seeds.iter().filter(|i| super::post_form(i)).count();
        assert!(accepted >= 2, "only {accepted} forms passed their policy");
    }

    #[test]
    fn corpus_sigv4_verify() {
        let seeds = corpus("sigv4_verify");
        let verified = seeds.iter().filter(|i| super::sigv4_verify(i)).count();
        // The seeds with a security token or a presigned parameter do not.
        assert!(verified >= 7, "only {verified} signed seeds verified");
    }

    #[test]
    fn corpus_s3_xml() {
        for input in corpus("s3_xml") {
            super::s3_xml(&input);
        }
    }

    /// The seeds hold complete, correctly signed bodies: the decoder
    /// accepts some, so the corpus reaches past the first signature check.
    #[test]
    fn corpus_aws_chunked_has_valid_bodies() {
        let valid = corpus("aws_chunked")
            .iter()
            .filter(|input| {
                let (&mode, body) = input.split_first().expect("a mode byte");
                super::run_chunked(mode, &[body]).1.is_ok() && mode & 4 == 0
            })
            .count();
        assert!(valid >= 4, "only {valid} signed bodies decode");
    }
}

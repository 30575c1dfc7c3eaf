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

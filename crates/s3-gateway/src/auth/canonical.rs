//! The SigV4 canonical request, built as S3 builds it: the path is not
//! normalised and not double-encoded, the query is decoded, re-encoded and
//! sorted, header values are trimmed with inner runs of spaces folded, and
//! `host` comes from the `Host` header or, over HTTP/2, the URI authority.

use http::{HeaderMap, Method, Uri};

use super::error::AuthError;

/// The parts of a request that authentication reads: method, URI (path,
/// query and, over HTTP/2, the authority) and headers. Built from
/// `http::request::Parts` with `From`, or field by field.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    /// The request method.
    pub method: &'a Method,
    /// The request target as received (`/bucket/key?query`, or absolute).
    pub uri: &'a Uri,
    /// The request headers.
    pub headers: &'a HeaderMap,
}

impl<'a> From<&'a http::request::Parts> for RequestHead<'a> {
    fn from(parts: &'a http::request::Parts) -> Self {
        RequestHead {
            method: &parts.method,
            uri: &parts.uri,
            headers: &parts.headers,
        }
    }
}

impl<'a, B> From<&'a http::Request<B>> for RequestHead<'a> {
    fn from(request: &'a http::Request<B>) -> Self {
        RequestHead {
            method: request.method(),
            uri: request.uri(),
            headers: request.headers(),
        }
    }
}

/// The decoded query string: (name, value) pairs in the order received.
/// Names and values are bytes because percent-encoding may produce
/// anything.
#[derive(Debug, Clone, Default)]
pub(crate) struct Query {
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Query {
    /// Decodes `raw` (the part after `?`): `&`-separated `name[=value]`,
    /// `+` as space, `%XX` escapes. Empty segments are skipped. Invalid
    /// escapes, a query over `max_len` bytes or over `max_params`
    /// parameters are [`AuthError::InvalidUri`].
    pub(crate) fn parse(
        raw: Option<&str>,
        max_len: usize,
        max_params: usize,
    ) -> Result<Self, AuthError> {
        let raw = raw.unwrap_or("");
        if raw.len() > max_len {
            return Err(AuthError::InvalidUri);
        }
        let mut pairs = Vec::new();
        for segment in raw.split('&').filter(|s| !s.is_empty()) {
            if pairs.len() == max_params {
                return Err(AuthError::InvalidUri);
            }
            let (name, value) = segment.split_once('=').unwrap_or((segment, ""));
            pairs.push((
                percent_decode(name.as_bytes(), true)?,
                percent_decode(value.as_bytes(), true)?,
            ));
        }
        Ok(Query { pairs })
    }

    /// Every value of `name` (exact, case-sensitive match).
    pub(crate) fn values<'q>(&'q self, name: &'q str) -> impl Iterator<Item = &'q [u8]> + 'q {
        self.pairs
            .iter()
            .filter(move |(n, _)| n == name.as_bytes())
            .map(|(_, v)| v.as_slice())
    }

    /// Every (name, value) pair, in the order received.
    pub(crate) fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.pairs.iter().map(|(n, v)| (n.as_slice(), v.as_slice()))
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.values(name).next().is_some()
    }

    /// Whether a parameter name appears more than once.
    pub(crate) fn has_repeated_names(&self) -> bool {
        self.pairs
            .iter()
            .enumerate()
            .any(|(i, (n, _))| self.pairs[..i].iter().any(|(m, _)| m == n))
    }

    /// The canonical query string, leaving out `exclude` (the signature
    /// of a presigned URL): pairs sorted by name, then value (SigV4).
    #[cfg(test)]
    pub(crate) fn canonical(&self, exclude: Option<&str>) -> String {
        self.canonical_in(exclude, QueryOrder::NameThenValue)
    }

    /// The canonical query string in `order`.
    pub(crate) fn canonical_in(&self, exclude: Option<&str>, order: QueryOrder) -> String {
        let mut encoded: Vec<(String, String)> = self
            .pairs
            .iter()
            .filter(|(n, _)| exclude.is_none_or(|x| n != x.as_bytes()))
            .map(|(n, v)| {
                let mut name = String::with_capacity(n.len());
                uri_encode(&mut name, n, true);
                let mut value = String::with_capacity(v.len());
                uri_encode(&mut value, v, true);
                (name, value)
            })
            .collect();
        match order {
            QueryOrder::NameThenValue => encoded.sort_unstable(),
            // Stable: the values of one name stay in the order received.
            QueryOrder::NameOnly => encoded.sort_by(|a, b| a.0.cmp(&b.0)),
        }
        let mut out = String::new();
        for (i, (name, value)) in encoded.iter().enumerate() {
            if i > 0 {
                out.push('&');
            }
            out.push_str(name);
            out.push('=');
            out.push_str(value);
        }
        out
    }
}

/// How the pairs of a canonical query are ordered. SigV4 sorts by name
/// then value; Go's `url.Values.Encode`, which minio-go's signer (and so
/// madmin and `mc admin`) canonicalises with, sorts by name only and keeps
/// a name's values in their order. The verifier tries the second only for
/// a query that repeats a name and failed the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueryOrder {
    NameThenValue,
    NameOnly,
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~')
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

fn push_escaped(out: &mut String, b: u8) {
    out.push('%');
    out.push(char::from(HEX_UPPER[usize::from(b >> 4)]));
    out.push(char::from(HEX_UPPER[usize::from(b & 15)]));
}

/// AWS's `UriEncode`: every byte but `A-Za-z0-9-_.~` as `%XX` (upper
/// case), and `/` too when `encode_slash`.
pub(crate) fn uri_encode(out: &mut String, bytes: &[u8], encode_slash: bool) {
    for &b in bytes {
        if is_unreserved(b) || (b == b'/' && !encode_slash) {
            out.push(char::from(b));
        } else {
            push_escaped(out, b);
        }
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn escape_at(raw: &[u8], i: usize) -> Result<u8, AuthError> {
    match (raw.get(i + 1).copied(), raw.get(i + 2).copied()) {
        (Some(hi), Some(lo)) => match (hex_value(hi), hex_value(lo)) {
            (Some(hi), Some(lo)) => Ok(hi << 4 | lo),
            _ => Err(AuthError::InvalidUri),
        },
        _ => Err(AuthError::InvalidUri),
    }
}

fn percent_decode(raw: &[u8], plus_as_space: bool) -> Result<Vec<u8>, AuthError> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'%' => {
                out.push(escape_at(raw, i)?);
                i += 3;
            }
            b'+' if plus_as_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The canonical URI of S3: the path as received, each byte re-encoded
/// with AWS's `UriEncode` (so `%7e`, `~` and `%7E` agree) except that `/`
/// separates segments and an escaped `%2F` stays escaped. No `.`/`..`
/// or `//` normalisation: S3 keys may contain them.
pub(crate) fn canonical_uri(path: &str) -> Result<String, AuthError> {
    if path.is_empty() {
        return Ok("/".to_owned());
    }
    let raw = path.as_bytes();
    let mut out = String::with_capacity(raw.len() + raw.len() / 2);
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            let b = escape_at(raw, i)?;
            if b == b'/' {
                out.push_str("%2F");
            } else {
                uri_encode(&mut out, &[b], true);
            }
            i += 3;
        } else {
            uri_encode(&mut out, &raw[i..=i], false);
            i += 1;
        }
    }
    Ok(out)
}

/// A header value as SigV4 canonicalises it: leading and trailing spaces
/// and tabs removed, every inner run of spaces folded into one.
fn push_trimmed(out: &mut Vec<u8>, value: &[u8]) {
    let start = value
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(start, |p| p + 1);
    let mut previous_space = false;
    for &b in &value[start..end] {
        if b == b' ' {
            if !previous_space {
                out.push(b);
            }
            previous_space = true;
        } else {
            out.push(b);
            previous_space = false;
        }
    }
}

/// Builds the canonical request from already parsed pieces.
pub(crate) fn build_canonical_request(
    head: &RequestHead<'_>,
    query: &Query,
    exclude_query: Option<&str>,
    signed_headers: &[String],
    payload_hash: &str,
) -> Result<Vec<u8>, AuthError> {
    build_canonical_request_in(
        head,
        query,
        exclude_query,
        signed_headers,
        payload_hash,
        QueryOrder::NameThenValue,
    )
}

/// [`build_canonical_request`] with the query's pairs in `order`.
pub(crate) fn build_canonical_request_in(
    head: &RequestHead<'_>,
    query: &Query,
    exclude_query: Option<&str>,
    signed_headers: &[String],
    payload_hash: &str,
    order: QueryOrder,
) -> Result<Vec<u8>, AuthError> {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(head.method.as_str().as_bytes());
    out.push(b'\n');
    out.extend_from_slice(canonical_uri(head.uri.path())?.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(query.canonical_in(exclude_query, order).as_bytes());
    out.push(b'\n');
    for name in signed_headers {
        out.extend_from_slice(name.as_bytes());
        out.push(b':');
        let mut values = head.headers.get_all(name.as_str()).iter().peekable();
        if values.peek().is_none() {
            match (name.as_str(), head.uri.authority()) {
                ("host", Some(authority)) => {
                    push_trimmed(&mut out, authority.as_str().as_bytes());
                }
                _ => {
                    return Err(AuthError::MissingSecurityHeader {
                        header: name.clone(),
                    });
                }
            }
        }
        for (i, value) in values.enumerate() {
            if i > 0 {
                out.push(b',');
            }
            push_trimmed(&mut out, value.as_bytes());
        }
        out.push(b'\n');
    }
    out.push(b'\n');
    out.extend_from_slice(signed_headers.join(";").as_bytes());
    out.push(b'\n');
    out.extend_from_slice(payload_hash.as_bytes());
    Ok(out)
}

/// The SigV4 canonical request of `head` for S3.
///
/// `signed_headers` are the lowercase names listed in `SignedHeaders`, in
/// their order; `payload_hash` is the last line (`x-amz-content-sha256`, or
/// `UNSIGNED-PAYLOAD` for presigned URLs); when `presigned`, the
/// `X-Amz-Signature` parameter is left out of the canonical query. The
/// result is bytes: header values may hold any octet.
///
/// Errors: [`AuthError::InvalidUri`] for bad percent-encoding (or a query
/// over 64 KiB), [`AuthError::MissingSecurityHeader`] for a signed header
/// the request does not carry.
pub fn canonical_request(
    head: &RequestHead<'_>,
    signed_headers: &[String],
    payload_hash: &str,
    presigned: bool,
) -> Result<Vec<u8>, AuthError> {
    let query = Query::parse(head.uri.query(), 64 * 1024, 4096)?;
    let exclude = presigned.then_some(super::presign::X_AMZ_SIGNATURE);
    build_canonical_request(head, &query, exclude, signed_headers, payload_hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical_query(raw: &str) -> String {
        Query::parse(Some(raw), 1 << 16, 1000)
            .unwrap()
            .canonical(None)
    }

    #[test]
    fn repeated_names_order_as_sigv4_or_as_go() {
        let q = Query::parse(
            Some("user=reader&b=1&user=writer&user=nobody"),
            1 << 16,
            100,
        )
        .unwrap();
        assert!(q.has_repeated_names());
        assert_eq!(q.canonical(None), "b=1&user=nobody&user=reader&user=writer");
        assert_eq!(
            q.canonical_in(None, QueryOrder::NameOnly),
            "b=1&user=reader&user=writer&user=nobody"
        );
        assert!(
            !Query::parse(Some("a=1&b=2&c"), 1 << 16, 100)
                .unwrap()
                .has_repeated_names()
        );
    }

    #[test]
    fn uri_encoding_is_aws_uri_encode() {
        let mut s = String::new();
        uri_encode(&mut s, "a-_.~Z09 /+=&é".as_bytes(), true);
        assert_eq!(s, "a-_.~Z09%20%2F%2B%3D%26%C3%A9");
        s.clear();
        uri_encode(&mut s, b"a/b", false);
        assert_eq!(s, "a/b");
    }

    #[test]
    fn canonical_uri_reencodes_but_does_not_normalise() {
        assert_eq!(canonical_uri("").unwrap(), "/");
        assert_eq!(canonical_uri("/").unwrap(), "/");
        assert_eq!(canonical_uri("/test.txt").unwrap(), "/test.txt");
        assert_eq!(
            canonical_uri("/test$file.text").unwrap(),
            "/test%24file.text"
        );
        assert_eq!(
            canonical_uri("/test%24file.text").unwrap(),
            "/test%24file.text"
        );
        assert_eq!(canonical_uri("/a%7eb%7E~").unwrap(), "/a~b~~");
        assert_eq!(canonical_uri("/a%2fb/c").unwrap(), "/a%2Fb/c");
        assert_eq!(canonical_uri("//a/./../b//").unwrap(), "//a/./../b//");
        assert_eq!(canonical_uri("/a+b%20c").unwrap(), "/a%2Bb%20c");
        assert_eq!(canonical_uri("/%E1%88%B4").unwrap(), "/%E1%88%B4");
        assert_eq!(canonical_uri("/%e1%88%b4").unwrap(), "/%E1%88%B4");
        for bad in ["/%", "/%4", "/%zz", "/a%g0"] {
            assert_eq!(canonical_uri(bad), Err(AuthError::InvalidUri), "{bad}");
        }
    }

    #[test]
    fn canonical_query_sorts_encoded_pairs() {
        assert_eq!(canonical_query(""), "");
        assert_eq!(canonical_query("lifecycle"), "lifecycle=");
        assert_eq!(
            canonical_query("max-keys=2&prefix=J"),
            "max-keys=2&prefix=J"
        );
        assert_eq!(
            canonical_query("prefix=J&max-keys=2"),
            "max-keys=2&prefix=J"
        );
        assert_eq!(canonical_query("b=2&a=2&a=1&&"), "a=1&a=2&b=2");
        assert_eq!(
            canonical_query("Param2=x&Param1=y&param0=z"),
            "Param1=y&Param2=x&param0=z"
        );
        assert_eq!(canonical_query("k=a+b%20c%2b"), "k=a%20b%20c%2B");
        assert_eq!(canonical_query("k=%7e~/"), "k=~~%2F");
        assert_eq!(canonical_query("=v"), "=v");
        assert_eq!(canonical_query("%E1%88%B4=bar"), "%E1%88%B4=bar");
        assert_eq!(
            Query::parse(Some("a=%"), 100, 10).unwrap_err(),
            AuthError::InvalidUri
        );
        assert_eq!(
            Query::parse(Some("a=1"), 2, 10).unwrap_err(),
            AuthError::InvalidUri
        );
        assert_eq!(
            Query::parse(Some("a&b&c"), 100, 2).unwrap_err(),
            AuthError::InvalidUri
        );
        let q = Query::parse(Some("X-Amz-Signature=abc&x=1"), 100, 10).unwrap();
        assert_eq!(q.canonical(Some("X-Amz-Signature")), "x=1");
        assert!(q.contains("x"));
        assert!(!q.contains("X"));
        assert_eq!(q.values("x").collect::<Vec<_>>(), vec![b"1".as_slice()]);
    }

    #[test]
    fn header_values_are_trimmed_and_folded() {
        let mut out = Vec::new();
        push_trimmed(&mut out, b"  a   b \t c  ");
        assert_eq!(out, b"a b \t c");
        out.clear();
        push_trimmed(&mut out, b"   ");
        assert_eq!(out, b"");
        out.clear();
        push_trimmed(&mut out, b"\"a   b   c\"");
        assert_eq!(out, b"\"a b c\"");
    }
}

//! The raw HTTP/1.1 client of the tests: one request per connection, sent
//! byte for byte as written (so tests can send what no client library
//! would), and the response parsed.

use std::io::{Read, Write};
use std::net::TcpStream;

use super::PATIENCE;

/// A parsed HTTP/1.1 response.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The `<Code>` of an S3 error document.
    pub fn code(&self) -> String {
        let t = self.text();
        t.split("<Code>")
            .nth(1)
            .and_then(|r| r.split("</Code>").next())
            .unwrap_or("")
            .to_owned()
    }
}

/// Sends `request` (which says `Connection: close`) on a new connection
/// and reads the response to EOF. A server that refuses a request before
/// reading all of it may reset the connection after its answer: a read
/// error counts only if no response head arrived.
pub fn raw(addr: &str, request: &[u8]) -> RawResponse {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(request).expect("send");
    let mut buf = Vec::new();
    if let Err(e) = s.read_to_end(&mut buf) {
        assert!(
            head_end(&buf).is_some(),
            "read response: {e}; got {:?}",
            String::from_utf8_lossy(&buf)
        );
    }
    parse_response(&buf)
}

fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n")
}

/// Parses one response (Content-Length or chunked body, or to EOF).
pub fn parse_response(buf: &[u8]) -> RawResponse {
    let end = head_end(buf)
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(buf)));
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let rest = &buf[end + 4..];
    let chunked = headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked {
        let mut out = Vec::new();
        let mut r = rest;
        while let Some(p) = r.windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(
                String::from_utf8_lossy(&r[..p])
                    .split(';')
                    .next()
                    .unwrap()
                    .trim(),
                16,
            )
            .expect("chunk size");
            if size == 0 {
                break;
            }
            out.extend_from_slice(&r[p + 2..p + 2 + size]);
            r = &r[p + 2 + size + 2..];
        }
        out
    } else {
        rest.to_vec()
    };
    RawResponse {
        status,
        headers,
        body,
    }
}

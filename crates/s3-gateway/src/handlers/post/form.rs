//! The `multipart/form-data` body of a browser POST: the fields before the
//! file, read into memory under a size bound, an idle and a total deadline;
//! then the file, streamed. Every search resumes where the previous one
//! stopped, so the work is linear in the form's size however it is framed
//! (a form sent in one-byte frames costs what it costs in one frame).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http_body::Body;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::time::Instant;

use crate::error::S3Error;

/// Bytes of form fields before the file (S3 allows 20 KiB of policy).
pub(in crate::handlers) const MAX_FIELDS_BYTES: usize = 64 * 1024;
/// Most form fields.
pub(in crate::handlers) const MAX_FIELDS: usize = 64;

pub(in crate::handlers) fn malformed(msg: &str) -> S3Error {
    S3Error::with_message("MalformedPOSTRequest", msg)
}

/// The request body as a byte source with a pushback buffer.
pub(in crate::handlers) struct Source<B> {
    body: B,
    pub(in crate::handlers) buf: BytesMut,
    done: bool,
    /// Bytes received on the wire.
    pub(in crate::handlers) raw: u64,
}

impl<B> Source<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    pub(in crate::handlers) fn new(body: B) -> Self {
        Source {
            body,
            buf: BytesMut::new(),
            done: false,
            raw: 0,
        }
    }

    /// Reads one more frame into the buffer; false at the end of the body.
    fn poll_more(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        loop {
            if self.done {
                return Poll::Ready(Ok(false));
            }
            match Pin::new(&mut self.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    self.done = true;
                    return Poll::Ready(Ok(false));
                }
                Poll::Ready(Some(Err(e))) => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        e.to_string(),
                    )));
                }
                Poll::Ready(Some(Ok(f))) => {
                    if let Ok(d) = f.into_data() {
                        self.raw += d.len() as u64;
                        self.buf.extend_from_slice(&d);
                        return Poll::Ready(Ok(true));
                    }
                }
            }
        }
    }
}

/// The deadlines of the form phase, which runs before anything is
/// authenticated.
#[derive(Debug, Clone, Copy)]
pub(in crate::handlers) struct FormDeadlines {
    /// Longest wait for the next piece of the form.
    pub(in crate::handlers) idle: Duration,
    /// When the whole form (every field before the file) must be in.
    pub(in crate::handlers) until: Instant,
}

fn timed_out() -> S3Error {
    S3Error::new("RequestTimeout")
}

impl<B> Source<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    /// One more frame within the form's deadlines; false at the end.
    async fn more_within(&mut self, d: FormDeadlines) -> Result<bool, S3Error> {
        let idle_end = (Instant::now() + d.idle).min(d.until);
        match tokio::time::timeout_at(idle_end, std::future::poll_fn(|cx| self.poll_more(cx))).await
        {
            Ok(r) => r.map_err(crate::error::body_error),
            Err(_) => Err(timed_out()),
        }
    }

    /// Reads until `needle` is in the buffer (searching only what is new)
    /// and returns its position; `limit` bounds the bytes buffered first.
    async fn find_within(
        &mut self,
        needle: &[u8],
        limit: usize,
        d: FormDeadlines,
        what: &str,
    ) -> Result<usize, S3Error> {
        let mut from = 0;
        loop {
            if let Some(i) = find(&self.buf[from..], needle) {
                return Ok(from + i);
            }
            from = self.buf.len().saturating_sub(needle.len() - 1);
            if self.buf.len() > limit {
                return Err(malformed(&format!("{what} too long")));
            }
            if !self.more_within(d).await? {
                return Err(malformed(&format!("the body ends inside {what}")));
            }
        }
    }

    /// Reads until at least `n` bytes are buffered; false if the body ends
    /// first.
    async fn fill_within(&mut self, n: usize, d: FormDeadlines) -> Result<bool, S3Error> {
        while self.buf.len() < n {
            if !self.more_within(d).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

pub(in crate::handlers) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// One part's headers: its field name, its file name, its content type.
fn part_headers(head: &[u8]) -> Result<(String, Option<String>, Option<String>), S3Error> {
    let head = std::str::from_utf8(head).map_err(|_| malformed("part headers are not UTF-8"))?;
    let mut name = None;
    let mut filename = None;
    let mut ctype = None;
    for line in head.split("\r\n") {
        let Some((h, v)) = line.split_once(':') else {
            continue;
        };
        if h.trim().eq_ignore_ascii_case("content-disposition") {
            for p in v.split(';').skip(1) {
                if let Some((k, val)) = p.split_once('=') {
                    let val = val.trim().trim_matches('"').to_owned();
                    match k.trim() {
                        "name" => name = Some(val),
                        "filename" => filename = Some(val),
                        _ => {}
                    }
                }
            }
        } else if h.trim().eq_ignore_ascii_case("content-type") {
            ctype = Some(v.trim().to_owned());
        }
    }
    Ok((
        name.ok_or_else(|| malformed("a part has no name"))?,
        filename,
        ctype,
    ))
}

/// The form up to its file.
pub(in crate::handlers) struct Form {
    /// The fields in the order sent (names as sent).
    pub(in crate::handlers) fields: Vec<(String, String)>,
    /// The file part's `Content-Type`.
    pub(in crate::handlers) file_type: Option<String>,
    /// The file part's file name (`${filename}`).
    pub(in crate::handlers) filename: String,
}

impl Form {
    /// The value of a field (names match case-insensitively).
    pub(in crate::handlers) fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads the fields before the file; the source is left at the file's
/// first byte. A field sent twice is refused: the policy would check one
/// value and the object store another.
pub(in crate::handlers) async fn read_form<B>(
    src: &mut Source<B>,
    boundary: &str,
    d: FormDeadlines,
) -> Result<Form, S3Error>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let first = format!("--{boundary}\r\n").into_bytes();
    let delim = format!("\r\n--{boundary}").into_bytes();
    if !src.fill_within(first.len(), d).await? {
        return Err(malformed("the body ends before the first boundary"));
    }
    if !src.buf.starts_with(&first) {
        return Err(malformed("the body does not start with the boundary"));
    }
    src.buf.advance(first.len());
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut used = 0usize;
    loop {
        let head_end = src
            .find_within(b"\r\n\r\n", MAX_FIELDS_BYTES, d, "a part header")
            .await?;
        let (name, filename, ctype) = part_headers(&src.buf[..head_end])?;
        src.buf.advance(head_end + 4);
        if name.eq_ignore_ascii_case("file") || filename.is_some() {
            return Ok(Form {
                fields,
                file_type: ctype,
                filename: filename.unwrap_or_default(),
            });
        }
        let room = MAX_FIELDS_BYTES.saturating_sub(used);
        let end = src.find_within(&delim, room, d, "a form field").await?;
        let value = String::from_utf8(src.buf[..end].to_vec())
            .map_err(|_| malformed("a form field is not UTF-8"))?;
        used += name.len() + value.len();
        if used > MAX_FIELDS_BYTES || fields.len() >= MAX_FIELDS {
            return Err(malformed("form fields are too large"));
        }
        if fields.iter().any(|(k, _)| k.eq_ignore_ascii_case(&name)) {
            return Err(S3Error::with_message(
                "InvalidArgument",
                format!("The form field {name} appears more than once."),
            ));
        }
        src.buf.advance(end + delim.len());
        // After a delimiter: `\r\n` (another part) or `--` (the end).
        if !src.fill_within(2, d).await? {
            return Err(malformed("the body ends after a boundary"));
        }
        if src.buf.starts_with(b"--") {
            return Err(S3Error::with_message(
                "InvalidArgument",
                "POST requires exactly one file upload per request.",
            ));
        }
        src.buf.advance(2);
        fields.push((name, value));
    }
}

/// The file part as an `AsyncRead`: bytes up to the closing delimiter,
/// which must arrive before the body ends. The size range the policy sets
/// is enforced as the bytes stream: over the maximum fails at once, under
/// the minimum fails at the end, before the object layer commits.
pub(in crate::handlers) struct FileReader<'a, B> {
    src: &'a mut Source<B>,
    delim: Vec<u8>,
    pub(in crate::handlers) total: u64,
    range: (u64, u64),
    finished: bool,
}

impl<'a, B> FileReader<'a, B> {
    pub(in crate::handlers) fn new(
        src: &'a mut Source<B>,
        boundary: &str,
        range: (u64, u64),
    ) -> Self {
        FileReader {
            src,
            delim: format!("\r\n--{boundary}").into_bytes(),
            total: 0,
            range,
            finished: false,
        }
    }
}

impl<B> AsyncRead for FileReader<'_, B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.finished {
                return Poll::Ready(Ok(()));
            }
            // The buffer holds at most a partial delimiter plus one frame
            // here: everything before it has been handed out.
            if let Some(i) = find(&this.src.buf, &this.delim) {
                if i == 0 {
                    if this.total < this.range.0 {
                        return Poll::Ready(Err(io::Error::other(S3Error::with_message(
                            "EntityTooSmall",
                            "Your proposed upload is smaller than the minimum allowed size",
                        ))));
                    }
                    this.src.buf.advance(this.delim.len());
                    this.finished = true;
                    return Poll::Ready(Ok(()));
                }
                let n = i.min(out.remaining());
                return this.emit(n, out);
            }
            // Everything but a possible partial delimiter at the end is file.
            let safe = this.src.buf.len().saturating_sub(this.delim.len() - 1);
            if safe > 0 {
                let n = safe.min(out.remaining());
                return this.emit(n, out);
            }
            match this.src.poll_more(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(true)) => {}
                Poll::Ready(Ok(false)) => {
                    return Poll::Ready(Err(io::Error::other(malformed(
                        "the body ended inside the file",
                    ))));
                }
            }
        }
    }
}

impl<B> FileReader<'_, B> {
    fn emit(&mut self, n: usize, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.total += n as u64;
        if self.total > self.range.1 {
            return Poll::Ready(Err(io::Error::other(S3Error::with_message(
                "EntityTooLarge",
                "Your proposed upload exceeds the maximum allowed size",
            ))));
        }
        out.put_slice(&self.src.buf[..n]);
        self.src.buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn deadlines() -> FormDeadlines {
        FormDeadlines {
            idle: Duration::from_secs(5),
            until: Instant::now() + Duration::from_secs(5),
        }
    }

    fn form_bytes(fields: &[(&str, &str)], file: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for (k, v) in fields {
            out.extend_from_slice(
                format!("--XyZ\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n")
                    .as_bytes(),
            );
        }
        out.extend_from_slice(
            b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\n",
        );
        out.extend_from_slice(file);
        out.extend_from_slice(b"\r\n--XyZ--\r\n");
        out
    }

    /// A body of one-byte frames.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
    }

    impl Body for Trickle {
        type Data = Bytes;
        type Error = std::io::Error;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
            if self.at == self.data.len() {
                return Poll::Ready(None);
            }
            let b = Bytes::copy_from_slice(&self.data[self.at..self.at + 1]);
            self.at += 1;
            Poll::Ready(Some(Ok(http_body::Frame::data(b))))
        }
    }

    #[tokio::test]
    async fn a_form_in_one_byte_frames_parses_as_one() {
        let policy = "p".repeat(40_000);
        let body = form_bytes(
            &[("key", "k/${filename}"), ("policy", &policy)],
            b"file bytes",
        );
        let mut src = Source::new(Trickle { data: body, at: 0 });
        let started = std::time::Instant::now();
        let form = read_form(&mut src, "XyZ", deadlines()).await.unwrap();
        // Linear work: 40 KB of one-byte frames in well under a second
        // even in a debug build (quadratic rescanning takes many seconds).
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(form.get("KEY"), Some("k/${filename}"));
        assert_eq!(form.get("policy").map(str::len), Some(40_000));
        assert_eq!(form.filename, "a.txt");
        let mut file = Vec::new();
        let mut r = FileReader::new(&mut src, "XyZ", (0, 100));
        tokio::io::AsyncReadExt::read_to_end(&mut r, &mut file)
            .await
            .unwrap();
        assert_eq!(file, b"file bytes");
    }

    #[tokio::test]
    async fn duplicates_and_sizes_are_refused() {
        let body = form_bytes(
            &[("Content-Type", "image/png"), ("content-type", "text/html")],
            b"x",
        );
        let mut src = Source::new(Trickle { data: body, at: 0 });
        let e = read_form(&mut src, "XyZ", deadlines()).await.err().unwrap();
        assert_eq!(e.code, "InvalidArgument");
        for (range, code) in [((5, 100), "EntityTooSmall"), ((0, 3), "EntityTooLarge")] {
            let body = form_bytes(&[("key", "k")], b"four");
            let mut src = Source::new(Trickle { data: body, at: 0 });
            read_form(&mut src, "XyZ", deadlines()).await.unwrap();
            let mut r = FileReader::new(&mut src, "XyZ", range);
            let err = tokio::io::AsyncReadExt::read_to_end(&mut r, &mut Vec::new())
                .await
                .unwrap_err();
            let e = err.into_inner().unwrap().downcast::<S3Error>().unwrap();
            assert_eq!(e.code, code);
        }
    }

    #[tokio::test]
    async fn a_stalled_form_times_out() {
        struct Stall;
        impl Body for Stall {
            type Data = Bytes;
            type Error = std::io::Error;
            fn poll_frame(
                self: Pin<&mut Self>,
                _: &mut Context<'_>,
            ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
                Poll::Pending
            }
        }
        let mut src = Source::new(Stall);
        let d = FormDeadlines {
            idle: Duration::from_millis(50),
            until: Instant::now() + Duration::from_secs(5),
        };
        let e = read_form(&mut src, "XyZ", d).await.err().unwrap();
        assert_eq!(e.code, "RequestTimeout");
    }
}

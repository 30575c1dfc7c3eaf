//! The handlers' parsers as fuzz entry points (re-exported by
//! [`crate::fuzzing`]): the request documents each handler decodes, the
//! range and conditional headers, and the browser POST form with its
//! policy. Each panics only when a property that must hold is broken.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use http_body::{Body, Frame};
use object::layer::ObjectInfo;

use super::post::form::{Form, FormDeadlines, Source, read_form};
use super::post::policy::check_policy;

/// A request document (the first byte picks the decoder, the rest is the
/// XML): DeleteObjects, PutBucketVersioning, Put(Bucket|Object)Tagging,
/// CompleteMultipartUpload with and without part checksums, and
/// PutBucketEncryption. What a decoder accepts obeys S3's bounds. Returns
/// whether the decoder accepted the document.
pub fn documents(data: &[u8]) -> bool {
    let Some((&which, xml)) = data.split_first() else {
        return false;
    };
    if which % 6 == 5 {
        return crate::encryption::parse_bucket_default(xml).is_ok();
    }
    let Ok(doc) = crate::xml::parse(xml) else {
        return false;
    };
    match which % 6 {
        0 => super::object::delete_request(&doc)
            .map(|(_, objects)| assert!((1..=1000).contains(&objects.len())))
            .is_ok(),
        1 => super::bucket::versioning_request(&doc).is_ok(),
        2 => {
            let Ok(tags) = super::tagging::tagging_request(&doc) else {
                return false;
            };
            let object_ok = super::tagging::validate(&tags).is_ok();
            if object_ok {
                assert!(tags.len() <= 10);
            }
            if super::tagging::validate_bucket(&tags).is_ok() {
                assert!(tags.len() <= 50);
                for (i, (k, _)) in tags.iter().enumerate() {
                    assert!(!k.is_empty() && !tags[..i].iter().any(|(k2, _)| k2 == k));
                }
            }
            object_ok
        }
        n => {
            let element = (n == 4).then_some("ChecksumCRC32");
            let Ok((parts, listed)) = super::multipart::complete_request(&doc, element) else {
                return false;
            };
            assert!(!parts.is_empty() && parts.len() <= 10_000);
            assert!(parts.windows(2).all(|w| w[0].0 < w[1].0));
            assert!(parts.iter().all(|p| (1..=10_000).contains(&p.0)));
            let expected = if element.is_some() { parts.len() } else { 0 };
            assert_eq!(listed.len(), expected);
            true
        }
    }
}

/// `Range` and the conditional headers: the first line is a `Range`
/// value, the others `name: value` headers. A parsed range resolves inside
/// every object size; the read and write preconditions never panic.
pub fn headers(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let range = lines.next().unwrap_or("");
    let mut h = HeaderMap::new();
    for line in lines {
        if let Some((n, v)) = line.split_once(':')
            && let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(n.trim().as_bytes()),
                HeaderValue::from_str(v.trim()),
            )
        {
            h.append(n, v);
        }
    }
    if let Some(r) = super::object::parse_range(range) {
        for size in [0, 1, 10, 1 << 20, u64::MAX - 1, u64::MAX] {
            if let Some((offset, len)) = r.resolve(size) {
                assert!(len > 0 && offset < size, "{r:?} in {size}");
                assert!(offset.checked_add(len).is_some_and(|end| end <= size));
            }
        }
    }
    let info = ObjectInfo {
        etag: "9b2cf535f27731c974343645a3985328".to_owned(),
        mod_time_nanos: 1_700_000_000_000_000_000,
        size: 10,
        ..empty_info()
    };
    for prefix in ["", "x-amz-copy-source-"] {
        let _ = super::object::check_conditions(&h, &info, prefix);
    }
    let _ = super::conditional::write_precondition(&h);
}

fn empty_info() -> ObjectInfo {
    ObjectInfo {
        bucket: "b".to_owned(),
        key: "k".to_owned(),
        version_id: None,
        delete_marker: false,
        is_latest: true,
        size: 0,
        etag: String::new(),
        mod_time_nanos: 0,
        content_type: String::new(),
        metadata: Default::default(),
        parts: Vec::new(),
        data_shards: 1,
        parity_shards: 0,
        inline: true,
        internal: Default::default(),
    }
}

/// The boundary of the fuzzed forms.
const BOUNDARY: &str = "fuzzbound";

/// A body served from memory in the frames given.
struct Frames(VecDeque<Bytes>);

impl Body for Frames {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
    }
}

/// What reading a form gave, comparable across framings: the fields, the
/// file's type and name, or the error code.
type FormOutcome = Result<(Vec<(String, String)>, Option<String>, String), &'static str>;

fn read_framed(
    rt: &tokio::runtime::Runtime,
    body: &[u8],
    frame: usize,
) -> (FormOutcome, Option<Form>) {
    let frames = body
        .chunks(frame.max(1))
        .map(Bytes::copy_from_slice)
        .collect();
    let mut src = Source::new(Frames(frames));
    let deadlines = FormDeadlines {
        idle: Duration::from_secs(3600),
        until: tokio::time::Instant::now() + Duration::from_secs(3600),
    };
    let read = rt.block_on(async { read_form(&mut src, BOUNDARY, deadlines).await });
    match read {
        Ok(form) => (
            Ok((
                form.fields.clone(),
                form.file_type.clone(),
                form.filename.clone(),
            )),
            Some(form),
        ),
        Err(e) => (Err(e.code), None),
    }
}

/// The browser POST form reader and its policy check: the first byte sets
/// the frame size of a second reading, the rest is the body (boundary
/// `fuzzbound`). The form reads the same whatever its framing, and the
/// policy check of what it read (the `policy` field, base64 or raw JSON)
/// never panics and, when it passes, bounds the file's size sensibly.
/// Returns whether the form passed its policy.
pub fn post_form(data: &[u8]) -> bool {
    thread_local! {
        static RT: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a current-thread runtime");
    }
    let Some((&split, body)) = data.split_first() else {
        return false;
    };
    RT.with(|rt| {
        let (whole, form) = read_framed(rt, body, body.len());
        let (framed, _) = read_framed(rt, body, usize::from(split % 16) + 1);
        assert_eq!(whole, framed, "the framing changed the form");
        let Some(form) = form else { return false };
        let key = form
            .get("key")
            .unwrap_or("k")
            .replace("${filename}", &form.filename);
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let raw = form.get("policy").unwrap_or("");
        let encoded;
        let policy_b64 = if raw.trim_start().starts_with('{') {
            encoded = crate::checksum::base64_encode(raw.as_bytes());
            encoded.as_str()
        } else {
            raw
        };
        let _ = check_policy(policy_b64, &form, "bucket", &key, SystemTime::now());
        match check_policy(policy_b64, &form, "bucket", &key, now) {
            Ok(p) => {
                assert!(p.length.0 <= p.length.1, "{:?}", p.length);
                true
            }
            Err(_) => false,
        }
    })
}

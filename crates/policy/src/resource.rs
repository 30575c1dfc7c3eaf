//! Resources: `arn:aws:s3:::bucket/key*`, `arn:minio:kms:::key`, and `*`,
//! matched as MinIO's `resource.go` matches them.
//!
//! The request's resource is a path: `bucket/key` for objects; for the
//! bucket itself `bucket/` in identity policies and `bucket` in bucket
//! policies. So in an identity policy `arn:aws:s3:::bucket/*` also covers
//! bucket-level actions such as `s3:ListBucket` (the `*` matches the empty
//! key), while in a bucket policy it does not. A pattern matches when the
//! wildcard match succeeds or when it equals the path as Go's `path.Clean`
//! leaves it (`bucket/a//b` is `bucket/a/b`, `bucket/` is `bucket`).

use std::borrow::Cow;

use crate::PolicyError;
use crate::condition::key::{COMMON, KeyName};
use crate::request::Request;
use crate::wildcard;

const S3_PREFIX: &str = "arn:aws:s3:::";
const KMS_PREFIX: &str = "arn:minio:kms:::";

/// Which ARN family a resource names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ArnType {
    S3,
    Kms,
    /// A resource written `*` (or, by MinIO's reading, `*pattern`).
    All,
}

/// A resource of a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resource {
    /// As written.
    pub(crate) text: String,
    pub(crate) kind: ArnType,
    /// What follows the ARN prefix.
    pub(crate) pattern: String,
    /// Whether the pattern may hold a policy variable.
    has_vars: bool,
}

impl Resource {
    /// Whether the pattern may hold a policy variable (`${...}`).
    pub(crate) fn may_hold_variables(&self) -> bool {
        self.has_vars
    }

    /// Reads a resource as MinIO's `parseResource` does.
    pub(crate) fn parse(s: &str) -> Result<Resource, PolicyError> {
        // MinIO reads a resource that is exactly one of its prefixes (`*`,
        // but also `arn:aws:s3:::`) as the all-type with itself as pattern.
        let (kind, pattern) = if s == "*" || s == S3_PREFIX || s == KMS_PREFIX {
            (ArnType::All, s)
        } else if let Some(p) = s.strip_prefix(S3_PREFIX) {
            (ArnType::S3, p)
        } else if let Some(p) = s.strip_prefix(KMS_PREFIX) {
            (ArnType::Kms, p)
        } else if let Some(p) = s.strip_prefix('*') {
            (ArnType::All, p)
        } else {
            return Err(PolicyError::invalid(format!("invalid resource '{s}'")));
        };
        if pattern.starts_with('/') {
            return Err(PolicyError::invalid(format!(
                "invalid resource '{s}' - starts with '/' will not match a bucket"
            )));
        }
        Ok(Resource {
            text: s.to_owned(),
            kind,
            pattern: pattern.to_owned(),
            has_vars: pattern.contains('$'),
        })
    }

    pub(crate) fn is_s3(&self) -> bool {
        matches!(self.kind, ArnType::S3 | ArnType::All)
    }

    pub(crate) fn is_kms(&self) -> bool {
        matches!(self.kind, ArnType::Kms | ArnType::All)
    }

    pub(crate) fn is_bucket_pattern(&self) -> bool {
        !self.pattern.contains('/') || self.pattern == "*"
    }

    pub(crate) fn is_object_pattern(&self) -> bool {
        self.pattern.contains(['/', '*'])
    }

    /// MinIO's `Resource.IsValid`.
    pub(crate) fn is_valid(&self) -> bool {
        if self.is_s3() && self.pattern.starts_with('/') {
            return false;
        }
        if self.is_kms() && self.pattern.contains(['/', '\\', '.']) {
            return false;
        }
        !self.pattern.is_empty()
    }

    /// MinIO's `Resource.ValidateBucket`: the pattern matches the bucket,
    /// or could match a path inside it.
    pub(crate) fn covers_bucket(&self, bucket: &str) -> bool {
        wildcard::matches(&self.pattern, bucket)
            || wildcard::matches_as_pattern_prefix(&self.pattern, &format!("{bucket}/"))
    }

    /// Whether the request path `path` (with `clean`, its `path.Clean`
    /// form) falls under this resource.
    pub(crate) fn matches(&self, path: &str, clean: &str, req: &Request<'_>) -> bool {
        let pattern = if self.has_vars {
            substitute(&self.pattern, req)
        } else {
            Cow::Borrowed(self.pattern.as_str())
        };
        (clean != "." && clean == pattern) || wildcard::matches(&pattern, path)
    }
}

/// MinIO's substitution in resources: one pass; `${key}` for a common key
/// (spelled exactly) with a non-empty first value becomes that value; any
/// other `${...}` stays as written.
fn substitute<'a>(pattern: &'a str, req: &Request<'_>) -> Cow<'a, str> {
    let Some(first) = pattern.find('$') else {
        return Cow::Borrowed(pattern);
    };
    let mut out = String::with_capacity(pattern.len() + 16);
    out.push_str(&pattern[..first]);
    let mut rest = &pattern[first..];
    while !rest.is_empty() {
        match rest.find('$') {
            Some(0) => {}
            Some(i) => {
                out.push_str(&rest[..i]);
                rest = &rest[i..];
            }
            None => {
                out.push_str(rest);
                break;
            }
        }
        let close = rest.find('}');
        if rest.len() < 3 || rest.as_bytes()[1] != b'{' || close.is_none() {
            out.push('$');
            rest = &rest[1..];
            continue;
        }
        let end = close.unwrap_or(rest.len());
        let name = &rest[2..end];
        match variable_value(name, req) {
            Some(v) => out.push_str(v),
            None => {
                out.push_str("${");
                out.push_str(name);
                out.push('}');
            }
        }
        rest = &rest[end + 1..];
    }
    Cow::Owned(out)
}

/// The value a policy variable `${name}` stands for, if any.
fn variable_value<'r>(name: &str, req: &'r Request<'_>) -> Option<&'r str> {
    let key: KeyName = COMMON.iter().copied().find(|k| k.name() == name)?;
    req.values(&key.name().to_ascii_lowercase())
        .first()
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// Go's `path.Clean`; borrows when the result is a prefix of `path`.
pub(crate) fn clean(path: &str) -> Cow<'_, str> {
    if path.is_empty() {
        return Cow::Borrowed(".");
    }
    let p = path.as_bytes();
    let n = p.len();
    let rooted = p[0] == b'/';
    let mut out = LazyBuf {
        s: p,
        buf: None,
        w: 0,
    };
    let (mut r, mut dotdot) = (0, 0);
    if rooted {
        out.append(b'/');
        r = 1;
        dotdot = 1;
    }
    while r < n {
        // An empty element or `.`: skipped.
        if p[r] == b'/' || (p[r] == b'.' && (r + 1 == n || p[r + 1] == b'/')) {
            r += 1;
        } else if p[r] == b'.' && p[r + 1] == b'.' && (r + 2 == n || p[r + 2] == b'/') {
            r += 2;
            if out.w > dotdot {
                out.w -= 1;
                while out.w > dotdot && out.index(out.w) != b'/' {
                    out.w -= 1;
                }
            } else if !rooted {
                if out.w > 0 {
                    out.append(b'/');
                }
                out.append(b'.');
                out.append(b'.');
                dotdot = out.w;
            }
        } else {
            if (rooted && out.w != 1) || (!rooted && out.w != 0) {
                out.append(b'/');
            }
            while r < n && p[r] != b'/' {
                out.append(p[r]);
                r += 1;
            }
        }
    }
    if out.w == 0 {
        return Cow::Borrowed(".");
    }
    match out.buf {
        None => path.get(..out.w).map_or_else(
            || Cow::Owned(String::from_utf8_lossy(&p[..out.w]).into_owned()),
            Cow::Borrowed,
        ),
        Some(mut b) => {
            b.truncate(out.w);
            Cow::Owned(String::from_utf8_lossy(&b).into_owned())
        }
    }
}

/// Go's `lazybuf`: writes that repeat the input allocate nothing.
struct LazyBuf<'a> {
    s: &'a [u8],
    buf: Option<Vec<u8>>,
    w: usize,
}

impl LazyBuf<'_> {
    fn index(&self, i: usize) -> u8 {
        match &self.buf {
            Some(b) => b[i],
            None => self.s[i],
        }
    }

    fn append(&mut self, c: u8) {
        if self.buf.is_none() {
            if self.w < self.s.len() && self.s[self.w] == c {
                self.w += 1;
                return;
            }
            let mut b = vec![0u8; self.s.len()];
            b[..self.w].copy_from_slice(&self.s[..self.w]);
            self.buf = Some(b);
        }
        if let Some(b) = &mut self.buf {
            b[self.w] = c;
        }
        self.w += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn parse() {
        let r = Resource::parse("arn:aws:s3:::bucket/*").unwrap();
        assert_eq!((r.kind, r.pattern.as_str()), (ArnType::S3, "bucket/*"));
        assert_eq!(Resource::parse("*").unwrap().kind, ArnType::All);
        let quirk = Resource::parse("*bucket").unwrap();
        assert_eq!(
            (quirk.kind, quirk.pattern.as_str()),
            (ArnType::All, "bucket")
        );
        assert_eq!(
            Resource::parse("arn:minio:kms:::key").unwrap().kind,
            ArnType::Kms
        );
        // MinIO writes the all-type back as `*` and its pattern: `*` is
        // stored as `**`, which must read back as `*`.
        let stored = Resource::parse("**").unwrap();
        assert_eq!((stored.kind, stored.pattern.as_str()), (ArnType::All, "*"));
        assert!(Resource::parse("arn:aws:s3:::/bucket").is_err());
        assert!(Resource::parse("bucket").is_err());
        assert!(Resource::parse("arn:aws:s3::bucket").is_err());
        let bare = Resource::parse("arn:aws:s3:::").unwrap();
        assert_eq!(
            (bare.kind, bare.pattern.as_str()),
            (ArnType::All, "arn:aws:s3:::")
        );
        assert!(bare.is_valid());
        assert!(!Resource::parse("arn:minio:kms:::a.b").unwrap().is_valid());
    }

    #[test]
    fn go_path_clean() {
        for (i, o) in [
            ("", "."),
            ("abc", "abc"),
            ("abc/", "abc"),
            ("a//b", "a/b"),
            ("a/./b", "a/b"),
            ("a/../b", "b"),
            ("a/..", "."),
            ("../a", "../a"),
            ("a/../../b", "../b"),
            ("/../a", "/a"),
            ("/", "/"),
            ("//", "/"),
            ("./", "."),
            ("b/c/../../..", ".."),
            ("é/./x", "é/x"),
        ] {
            assert_eq!(clean(i), o, "{i:?}");
        }
        assert!(matches!(clean("bucket/"), Cow::Borrowed("bucket")));
        assert!(matches!(clean("bucket/key"), Cow::Borrowed(_)));
    }

    #[test]
    fn substitution() {
        let mut m = HashMap::new();
        m.insert("aws:username".to_string(), vec!["alice".to_string()]);
        m.insert("aws:userid".to_string(), vec![String::new()]);
        let req = Request {
            action: "s3:GetObject",
            bucket: "b",
            object: None,
            account: "alice",
            groups: &[],
            principal_arn: None,
            anonymous: false,
            bucket_policy: false,
            conditions: &m,
        };
        assert_eq!(substitute("home/${aws:username}/*", &req), "home/alice/*");
        assert_eq!(substitute("${aws:userid}x", &req), "${aws:userid}x");
        assert_eq!(substitute("${aws:UserName}", &req), "${aws:UserName}");
        assert_eq!(substitute("a$b${c", &req), "a$b${c");
        assert_eq!(substitute("$", &req), "$");
        assert_eq!(substitute("x$${aws:username}", &req), "x$alice");
        assert_eq!(substitute("${}", &req), "${}");
        assert_eq!(substitute("${nope}${aws:username}", &req), "${nope}alice");
    }
}

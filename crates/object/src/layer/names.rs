//! Bucket and object name rules (S3's, and MinIO's extra ones that keep a
//! key mappable to a path on every drive).

use super::error::{Error, Result};

/// Longest object key, in bytes (S3's limit).
pub const MAX_KEY_BYTES: usize = 1024;
/// Longest path segment of a key (file systems' limit).
pub const MAX_SEGMENT_BYTES: usize = 255;

/// Checks a bucket name: 3 to 63 characters of lowercase letters, digits,
/// `.` and `-`, starting and ending with a letter or digit, no `..`, not an
/// IP address, and not one of the names the layout reserves.
pub fn check_bucket(name: &str) -> Result<()> {
    let bad = || Error::InvalidBucketName(name.to_owned());
    let b = name.as_bytes();
    if !(3..=63).contains(&b.len()) {
        return Err(bad());
    }
    if !b
        .iter()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'.' || *c == b'-')
    {
        return Err(bad());
    }
    let edge_ok = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !edge_ok(b[0]) || !edge_ok(b[b.len() - 1]) {
        return Err(bad());
    }
    if name.contains("..") || name.contains(".-") || name.contains("-.") {
        return Err(bad());
    }
    if name.split('.').count() == 4 && name.split('.').all(|p| p.parse::<u8>().is_ok()) {
        return Err(bad());
    }
    if name == "minio" || name.starts_with(".minio") {
        return Err(bad());
    }
    Ok(())
}

/// Checks an object key: 1 to 1024 bytes of valid UTF-8 (guaranteed by
/// `&str`), no NUL, no empty, `.` or `..` segment (a trailing `/` is allowed:
/// a directory object), no segment over 255 bytes, no leading `/`.
pub fn check_key(key: &str) -> Result<()> {
    let bad = |why| Error::InvalidObjectName(key.to_owned(), why);
    if key.is_empty() {
        return Err(bad("empty"));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(bad("longer than 1024 bytes"));
    }
    if key.contains('\0') {
        return Err(bad("contains NUL"));
    }
    if key.starts_with('/') {
        return Err(bad("starts with /"));
    }
    let body = key.strip_suffix('/').unwrap_or(key);
    for seg in body.split('/') {
        if seg.is_empty() {
            return Err(bad("empty path segment"));
        }
        if seg == "." || seg == ".." {
            return Err(bad("`.` or `..` path segment"));
        }
        if seg.len() > MAX_SEGMENT_BYTES {
            return Err(bad("path segment longer than 255 bytes"));
        }
        if seg == "xl.meta" || seg.ends_with("__XLDIR__") {
            return Err(bad("reserved name"));
        }
    }
    // A directory object's last segment is stored with `__XLDIR__` added
    // (`object_dir`), which must still fit the file system's name limit.
    if key.ends_with('/')
        && body.rsplit('/').next().unwrap_or("").len() + DIR_SUFFIX.len() > MAX_SEGMENT_BYTES
    {
        return Err(bad(
            "directory name longer than 246 bytes before its trailing /",
        ));
    }
    Ok(())
}

/// What a directory object's last segment is stored with.
const DIR_SUFFIX: &str = "__XLDIR__";

/// Whether no key [`check_key`] accepts starts with `prefix`. A listing
/// with such a prefix is empty and walks nothing: its directory part may be
/// a path no drive accepts (`/`, `./`, `a/../`).
pub fn prefix_names_no_key(prefix: &str) -> bool {
    if prefix.len() > MAX_KEY_BYTES || prefix.contains('\0') || prefix.starts_with('/') {
        return true;
    }
    // The segments before the last `/` are whole segments of any key with
    // this prefix; the part after it may still grow into a valid one (`.`
    // into `.a`), so only its length counts.
    let Some(i) = prefix.rfind('/') else {
        return false;
    };
    prefix[i + 1..].len() > MAX_SEGMENT_BYTES
        || prefix[..i].split('/').any(|seg| {
            seg.is_empty()
                || seg == "."
                || seg == ".."
                || seg.len() > MAX_SEGMENT_BYTES
                || seg == "xl.meta"
                || seg.ends_with("__XLDIR__")
        })
}

/// The directory (relative to the bucket volume) that holds an object's
/// `xl.meta`: the key itself, with a directory object's trailing `/`
/// encoded as MinIO does (`a/b/` -> `a/b__XLDIR__`).
pub fn object_dir(key: &str) -> String {
    placement::set_key(key).into_owned()
}

/// The key back from an object directory path.
pub fn key_from_dir(dir: &str) -> String {
    match dir.strip_suffix("__XLDIR__") {
        Some(stem) => format!("{stem}/"),
        None => dir.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets() {
        for ok in ["abc", "my-bucket", "a.b.c", "123", "x".repeat(63).as_str()] {
            check_bucket(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in [
            "ab",
            "Abc",
            "a_b",
            "-ab",
            "ab-",
            "a..b",
            "192.168.1.1",
            ".minio.sys",
            "minio",
            &"x".repeat(64),
            "a.-b",
        ] {
            assert!(check_bucket(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn keys() {
        for ok in ["a", "a/b/c", "dir/", "ünïcode/ключ", "a b", "a/.hidden"] {
            check_key(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in [
            "",
            "/a",
            "a//b",
            "a/../b",
            "./a",
            "a/.",
            "a\0b",
            "x/xl.meta",
            &"k".repeat(1025),
            &"s".repeat(256),
            &format!("{}/", "d".repeat(247)),
            &format!("a/{}/", "d".repeat(255)),
        ] {
            assert!(check_key(bad).is_err(), "{bad:?} accepted");
        }
        // The longest directory object whose stored name still fits.
        check_key(&format!("a/{}/", "d".repeat(246))).unwrap();
        check_key(&"f".repeat(255)).unwrap();
    }

    #[test]
    fn prefixes_that_name_no_key() {
        let seg = "s".repeat(255);
        for live in [
            "",
            "a",
            "a/",
            "a/b",
            ".",
            "..",
            "a/.",
            "a/..",
            "a/.h",
            "ü/",
            &seg,
            &format!("{seg}/{seg}"),
        ] {
            assert!(!prefix_names_no_key(live), "{live:?}");
            // The prefix does name a key: itself grown by one byte, or
            // itself when its last segment is full.
            check_key(&format!("{live}x"))
                .or_else(|_| check_key(live))
                .unwrap_or_else(|e| panic!("{live:?}: {e}"));
        }
        for dead in [
            "/",
            "/a",
            "./",
            "../",
            "a/./",
            "a/../b",
            "a//",
            "a\0",
            "x/xl.meta/",
            "d__XLDIR__/",
            &format!("{seg}s/"),
            &format!("a/{seg}s"),
            &"k".repeat(1025),
        ] {
            assert!(prefix_names_no_key(dead), "{dead:?}");
        }
    }

    #[test]
    fn dir_objects() {
        assert_eq!(object_dir("a/b/"), "a/b__XLDIR__");
        assert_eq!(key_from_dir("a/b__XLDIR__"), "a/b/");
        assert_eq!(object_dir("a/b"), "a/b");
    }
}

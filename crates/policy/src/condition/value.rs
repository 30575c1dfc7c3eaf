//! Condition values as written in a policy, and the small readers Go's
//! standard library gives MinIO (`strconv.ParseBool`, `strconv.Atoi`,
//! standard base64, minio-go's bucket-name check).

use crate::PolicyError;
use crate::json::Json;

/// One value of a condition: MinIO reads each as a boolean, an integer or
/// a string, and keeps which (`"1"` and `1` are different values).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Scalar {
    Bool(bool),
    Int(i64),
    Str(String),
}

impl Scalar {
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value as Go's `fmt` prints it, for messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Scalar::Bool(b) => b.to_string(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Str(s) => s.clone(),
        }
    }
}

/// Reads a condition's values: one value, or a non-empty array of values
/// without repeats, each a boolean, an integer or a string. `null` (which
/// Go's decoder turns into `false`) and fractions are refused.
pub(crate) fn parse_values(j: &Json, max: usize) -> Result<Vec<Scalar>, PolicyError> {
    let one = |j: &Json| -> Result<Scalar, PolicyError> {
        match j {
            Json::Bool(b) => Ok(Scalar::Bool(*b)),
            Json::Int(i) => Ok(Scalar::Int(*i)),
            Json::String(s) => Ok(Scalar::Str(s.clone())),
            other => Err(PolicyError::syntax(format!(
                "a condition value must be a string, an integer or a boolean, not {}",
                other.kind()
            ))),
        }
    };
    match j {
        Json::Array(items) => {
            if items.is_empty() {
                return Err(PolicyError::invalid("invalid value"));
            }
            if items.len() > max {
                return Err(PolicyError::Limit(format!(
                    "a condition has more than {max} values"
                )));
            }
            let mut out: Vec<Scalar> = Vec::with_capacity(items.len());
            for item in items {
                let v = one(item)?;
                if out.contains(&v) {
                    return Err(PolicyError::invalid(format!(
                        "duplicate value found '{}'",
                        v.describe()
                    )));
                }
                out.push(v);
            }
            Ok(out)
        }
        other => Ok(vec![one(other)?]),
    }
}

/// Go's `strconv.ParseBool`.
pub(crate) fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `strconv.Atoi` on a 64-bit machine: an optional sign and decimal
/// digits, within `i64`.
pub(crate) fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    // Rust's parser takes the same sign and digits.
    s.parse().ok()
}

/// Go's `base64.StdEncoding.DecodeString`: padded standard alphabet; line
/// breaks are skipped; the unused bits of the last symbol may be set.
pub(crate) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let symbols: Vec<u8> = s.bytes().filter(|&c| c != b'\r' && c != b'\n').collect();
    if !symbols.len().is_multiple_of(4) {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    };
    let mut out = Vec::with_capacity(symbols.len() / 4 * 3);
    let quads = symbols.chunks_exact(4);
    let last = quads.len().saturating_sub(1);
    for (i, q) in quads.enumerate() {
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && i != last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &q[..4 - pad] {
            n = (n << 6) | value(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..4 - pad]);
    }
    Some(out)
}

/// minio-go's `s3utils.CheckValidBucketName` (the lenient one), which
/// MinIO applies to the bucket of an `s3:x-amz-copy-source` value.
pub(crate) fn check_bucket_name(b: &str) -> Result<(), String> {
    if b.trim().is_empty() {
        return Err("Bucket name cannot be empty".into());
    }
    if b.len() < 3 {
        return Err("Bucket name cannot be shorter than 3 characters".into());
    }
    if b.len() > 63 {
        return Err("Bucket name cannot be longer than 63 characters".into());
    }
    let parts: Vec<&str> = b.split('.').collect();
    if parts.len() == 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
    {
        return Err("Bucket name cannot be an ip address".into());
    }
    let bytes = b.as_bytes();
    let inner_ok = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b':');
    if b.contains("..")
        || b.contains(".-")
        || b.contains("-.")
        || !bytes[0].is_ascii_alphanumeric()
        || !bytes[bytes.len() - 1].is_ascii_alphanumeric()
        || !bytes.iter().all(|&c| inner_ok(c))
    {
        return Err("Bucket name contains invalid characters".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        let j = crate::json::parse(br#"["a", 1, true]"#, 4).unwrap();
        assert_eq!(
            parse_values(&j, 10).unwrap(),
            vec![Scalar::Str("a".into()), Scalar::Int(1), Scalar::Bool(true)]
        );
        let dup = crate::json::parse(br#"["a", "a"]"#, 4).unwrap();
        assert!(parse_values(&dup, 10).is_err());
        let mixed = crate::json::parse(br#"["1", 1]"#, 4).unwrap();
        assert_eq!(parse_values(&mixed, 10).unwrap().len(), 2);
        for bad in ["[]", "null", "1.5", "[[1]]", "{}"] {
            let j = crate::json::parse(bad.as_bytes(), 4).unwrap();
            assert!(parse_values(&j, 10).is_err(), "{bad}");
        }
        let many = crate::json::parse(br#"["a","b","c"]"#, 4).unwrap();
        assert!(matches!(parse_values(&many, 2), Err(PolicyError::Limit(_))));
    }

    #[test]
    fn go_readers() {
        assert_eq!(parse_bool("True"), Some(true));
        assert_eq!(parse_bool("0"), Some(false));
        assert_eq!(parse_bool("yes"), None);
        assert_eq!(atoi("+12"), Some(12));
        assert_eq!(atoi("-0"), Some(0));
        assert_eq!(atoi("007"), Some(7));
        for bad in ["", "+", "1.0", " 1", "1_000", "9223372036854775808", "0x10"] {
            assert_eq!(atoi(bad), None, "{bad:?}");
        }
        assert_eq!(atoi("-9223372036854775808"), Some(i64::MIN));
    }

    #[test]
    fn base64() {
        assert_eq!(base64_decode("").unwrap(), b"");
        assert_eq!(base64_decode("Zg==").unwrap(), b"f");
        assert_eq!(base64_decode("Zm8=").unwrap(), b"fo");
        assert_eq!(base64_decode("Zm9v").unwrap(), b"foo");
        assert_eq!(base64_decode("Zm9v\nYmFy").unwrap(), b"foobar");
        assert_eq!(base64_decode("Zh==").unwrap(), b"f");
        for bad in ["Zg", "Zg=", "Z===", "Zg==Zg==", "Zm9v!A==", "===="] {
            assert_eq!(base64_decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn bucket_names() {
        for ok in ["abc", "my-bucket", "My_Bucket:1", "a.b.c", "1.2.3.4a"] {
            assert!(check_bucket_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "ab",
            "-abc",
            "abc-",
            "a..b",
            "a.-b",
            "1.2.3.4",
            "a b c",
            &"a".repeat(64),
        ] {
            assert!(check_bucket_name(bad).is_err(), "{bad}");
        }
    }
}

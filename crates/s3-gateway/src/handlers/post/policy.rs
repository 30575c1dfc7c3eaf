//! The policy document of a browser POST: its expiry, its conditions on
//! the form's fields (names matched case-insensitively, `$` optional), and
//! S3's rule that every field the form sends is covered by a condition,
//! apart from the fields S3 exempts.

use std::time::SystemTime;

use super::form::Form;
use crate::error::S3Error;

fn invalid_policy(msg: &str) -> S3Error {
    S3Error::with_message("InvalidPolicyDocument", format!("Invalid Policy: {msg}"))
}

fn denied(msg: String) -> S3Error {
    S3Error::with_message("AccessDenied", msg)
}

/// Fields a policy need not mention (S3's list, SigV2's fields included).
fn exempt(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "x-amz-signature" | "file" | "policy" | "awsaccesskeyid" | "signature"
    ) || n.starts_with("x-ignore-")
}

/// The policy text with S3's escapes that JSON lacks (`\$` for a dollar
/// sign, `\v` for a vertical tab) turned into JSON; every other escape is
/// left for the JSON parser, so `\\$` stays a backslash and a dollar.
fn aws_escapes(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match (raw[i], raw.get(i + 1)) {
            (b'\\', Some(b'$')) => out.push(b'$'),
            (b'\\', Some(b'v')) => out.extend_from_slice(b"\\u000b"),
            (b'\\', Some(&c)) => out.extend_from_slice(&[b'\\', c]),
            (c, _) => {
                out.push(c);
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    out
}

/// What a policy allows that is not a field check.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::handlers) struct Policy {
    /// `content-length-range`: the file's least and greatest size.
    pub(in crate::handlers) length: (u64, u64),
}

/// Checks the policy (`policy_b64`, as the form carries it) against the
/// form, with `bucket` and `key` (the key after `${filename}`) standing
/// for their fields.
pub(in crate::handlers) fn check_policy(
    policy_b64: &str,
    form: &Form,
    bucket: &str,
    key: &str,
    now: SystemTime,
) -> Result<Policy, S3Error> {
    let raw = crate::checksum::base64_decode(policy_b64.trim())
        .ok_or_else(|| invalid_policy("the policy is not base64"))?;
    let doc: serde_json::Value = serde_json::from_slice(&aws_escapes(&raw))
        .map_err(|_| invalid_policy("the policy is not JSON"))?;
    let exp = doc
        .get("expiration")
        .and_then(|e| e.as_str())
        .ok_or_else(|| invalid_policy("Policy missing expiration"))?;
    let exp = parse_iso8601(exp).ok_or_else(|| invalid_policy("Invalid 'expiration' value"))?;
    if now > exp {
        return Err(denied(
            "Invalid according to Policy: Policy expired.".to_owned(),
        ));
    }
    let value = |name: &str| -> String {
        let name = name.strip_prefix('$').unwrap_or(name);
        if name.eq_ignore_ascii_case("bucket") {
            bucket.to_owned()
        } else if name.eq_ignore_ascii_case("key") {
            key.to_owned()
        } else {
            form.get(name).unwrap_or("").to_owned()
        }
    };
    let fail = |c: &serde_json::Value| {
        denied(format!(
            "Invalid according to Policy: Policy Condition failed: {c}"
        ))
    };
    let conditions = doc
        .get("conditions")
        .and_then(|c| c.as_array())
        .ok_or_else(|| invalid_policy("Policy missing conditions"))?;
    let mut covered: Vec<String> = Vec::new();
    let mut length = (0, u64::MAX);
    for c in conditions {
        if let Some(obj) = c.as_object() {
            for (k, v) in obj {
                let want = v
                    .as_str()
                    .ok_or_else(|| invalid_policy("a condition value is not a string"))?;
                if value(k) != want {
                    return Err(fail(c));
                }
                covered.push(k.trim_start_matches('$').to_ascii_lowercase());
            }
        } else if let Some(arr) = c.as_array() {
            let op = arr.first().and_then(|o| o.as_str()).unwrap_or("");
            match op.to_ascii_lowercase().as_str() {
                "eq" | "starts-with" => {
                    let (Some(name), Some(want), 3) = (
                        arr.get(1).and_then(|v| v.as_str()),
                        arr.get(2).and_then(|v| v.as_str()),
                        arr.len(),
                    ) else {
                        return Err(invalid_policy("a condition is malformed"));
                    };
                    if !name.starts_with('$') {
                        return Err(invalid_policy("a condition's field name must start with $"));
                    }
                    let got = value(name);
                    let ok = if op.eq_ignore_ascii_case("eq") {
                        got == want
                    } else if name.eq_ignore_ascii_case("$content-type") {
                        // S3 checks each of a comma-separated list.
                        got.split(',').all(|t| t.trim().starts_with(want))
                    } else {
                        got.starts_with(want)
                    };
                    if !ok {
                        return Err(fail(c));
                    }
                    covered.push(name[1..].to_ascii_lowercase());
                }
                "content-length-range" => {
                    let num = |i: usize| {
                        arr.get(i).and_then(|v| {
                            v.as_u64()
                                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                        })
                    };
                    let (Some(lo), Some(hi), 3) = (num(1), num(2), arr.len()) else {
                        return Err(invalid_policy("content-length-range is malformed"));
                    };
                    if lo > hi {
                        return Err(invalid_policy("content-length-range is malformed"));
                    }
                    length = (lo, hi);
                }
                _ => return Err(invalid_policy("unknown policy condition")),
            }
        } else {
            return Err(invalid_policy("a condition is malformed"));
        }
    }
    let extra: Vec<&str> = form
        .fields
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !exempt(k) && !covered.iter().any(|c| c.eq_ignore_ascii_case(k)))
        .collect();
    if !extra.is_empty() {
        return Err(denied(format!(
            "Invalid according to Policy: Extra input fields: {}",
            extra.join(", ")
        )));
    }
    Ok(Policy { length })
}

/// `2006-01-02T15:04:05[.000]Z`.
pub(in crate::handlers) fn parse_iso8601(s: &str) -> Option<SystemTime> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>().ok());
    let (y, m, dd) = (d.next()??, d.next()??, d.next()??);
    let time = time.split('.').next()?;
    let mut t = time.split(':').map(|x| x.parse::<i64>().ok());
    let (h, mi, se) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&dd) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let days = crate::auth::days_from_civil(y, m, dd);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se;
    u64::try_from(secs)
        .ok()
        .map(|s| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(fields: &[(&str, &str)]) -> Form {
        Form {
            fields: fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            file_type: None,
            filename: "f.txt".into(),
        }
    }

    fn b64(s: &str) -> String {
        crate::checksum::base64_encode(s.as_bytes())
    }

    #[test]
    fn iso_dates() {
        let t = parse_iso8601("2013-05-24T00:00:00.000Z").unwrap();
        assert_eq!(
            t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs(),
            1_369_353_600
        );
        assert!(parse_iso8601("2013-13-24T00:00:00Z").is_none());
        assert!(parse_iso8601("yesterday").is_none());
    }

    #[test]
    fn conditions_coverage_and_errors() {
        let p = b64(
            r#"{"expiration":"2100-01-01T00:00:00.000Z","conditions":[{"bucket":"b"},["starts-with","$key","up/"],["eq","$Content-Type","text/plain"],["content-length-range",1,100],{"x-amz-algorithm":"AWS4-HMAC-SHA256"}]}"#,
        );
        let now = SystemTime::now();
        let ok = form(&[
            ("key", "up/${filename}"),
            ("CONTENT-TYPE", "text/plain"),
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            ("policy", "..."),
            ("x-amz-signature", "..."),
            ("x-ignore-me", "anything"),
        ]);
        let got = check_policy(&p, &ok, "b", "up/f.txt", now).unwrap();
        assert_eq!(got.length, (1, 100));
        // Wrong bucket, key (after substitution), extra field.
        assert_eq!(
            check_policy(&p, &ok, "other", "up/f.txt", now)
                .unwrap_err()
                .code,
            "AccessDenied"
        );
        let e = check_policy(&p, &ok, "b", "down/f.txt", now).unwrap_err();
        assert!(e.message.contains("Condition failed"), "{}", e.message);
        let mut extra = ok.fields.clone();
        extra.push((
            "success_action_redirect".into(),
            "https://evil.example".into(),
        ));
        let e = check_policy(&p, &form_of(extra), "b", "up/f.txt", now).unwrap_err();
        assert_eq!(e.code, "AccessDenied");
        assert!(
            e.message
                .contains("Extra input fields: success_action_redirect")
        );
        // Expired; malformed.
        let old = b64(r#"{"expiration":"2000-01-01T00:00:00Z","conditions":[]}"#);
        assert!(
            check_policy(&old, &form(&[]), "b", "k", now)
                .unwrap_err()
                .message
                .contains("expired")
        );
        for bad in [
            "not base64!",
            &b64("[]"),
            &b64(r#"{"expiration":"2100-01-01T00:00:00Z"}"#),
            &b64(r#"{"expiration":"2100-01-01T00:00:00Z","conditions":[["eq","key","x"]]}"#),
            &b64(
                r#"{"expiration":"2100-01-01T00:00:00Z","conditions":[["content-length-range",9,1]]}"#,
            ),
        ] {
            assert_eq!(
                check_policy(bad, &form(&[]), "b", "k", now)
                    .unwrap_err()
                    .code,
                "InvalidPolicyDocument",
                "{bad}"
            );
        }
    }

    #[test]
    fn s3_escapes() {
        assert_eq!(aws_escapes(br#"a\$b"#), b"a$b");
        assert_eq!(aws_escapes(br#"a\\$b"#), br#"a\\$b"#);
        assert_eq!(aws_escapes(br#"\v\"\u00e9\"#), br#"\u000b\"\u00e9\"#);
        let p = b64(
            r#"{"expiration":"2100-01-01T00:00:00Z","conditions":[["eq","$x-amz-meta-price","\$5 \"caf\u00e9\""],{"key":"k"},{"bucket":"b"}]}"#,
        );
        let f = form(&[("key", "k"), ("x-amz-meta-price", "$5 \"caf\u{e9}\"")]);
        check_policy(&p, &f, "b", "k", SystemTime::now()).unwrap();
    }

    fn form_of(fields: Vec<(String, String)>) -> Form {
        Form {
            fields,
            file_type: None,
            filename: String::new(),
        }
    }
}

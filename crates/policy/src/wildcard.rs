//! MinIO's wildcard matching (`minio/pkg/v3/wildcard`): `*` matches any run
//! of bytes, `?` exactly one byte, every other byte itself. Names are flat:
//! `/` is an ordinary byte, so `bucket/*` matches `bucket/a/b`.
//!
//! MinIO matches by recursion, which takes exponential time on patterns such
//! as `a*a*a*a*b`. Here the answers are the same (checked against a port of
//! the recursion in the tests and against MinIO itself in
//! `tests/oracle.rs`) in at most `pattern.len() * text.len()` steps.

/// Whether `text` matches `pattern` as MinIO's `wildcard.Match` decides.
pub fn matches(pattern: &str, text: &str) -> bool {
    core(pattern.as_bytes(), text.as_bytes(), |p, t| p == t)
}

/// MinIO's `wildcard.MatchSimple`, used for principals: as [`matches()`], but
/// a `?` met once the text is used up ends the match successfully (so `a?`
/// and even `a?b` match `a`).
///
/// The extra success depends on how far into the pattern the text runs
/// out, which an earlier `*` can change; so this walks the pattern keeping
/// every text position reachable so far (one row of booleans).
pub fn matches_simple(pattern: &str, text: &str) -> bool {
    // Without a `?` the extra success cannot happen; `*` alone, the usual
    // principal, matches everything either way.
    if !pattern.contains('?') {
        return matches(pattern, text);
    }
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let n = t.len();
    let mut row = vec![false; n + 1];
    let mut next = vec![false; n + 1];
    row[0] = true;
    for &c in p {
        if c == b'?' && row[n] {
            return true;
        }
        if c == b'*' {
            let Some(first) = row.iter().position(|&r| r) else {
                return false;
            };
            next[..first].fill(false);
            next[first..].fill(true);
        } else {
            next[0] = false;
            for j in 0..n {
                next[j + 1] = row[j] && (c == b'?' || t[j] == c);
            }
        }
        if !next.contains(&true) {
            return false;
        }
        std::mem::swap(&mut row, &mut next);
    }
    row[n]
}

/// [`matches()`] with ASCII letters compared without case; `pattern_lower`
/// must already be lower-case. Action names are matched this way, as AWS
/// compares them.
pub(crate) fn matches_ascii_nocase(pattern_lower: &str, text: &str) -> bool {
    core(pattern_lower.as_bytes(), text.as_bytes(), |p, t| {
        p == t.to_ascii_lowercase()
    })
}

/// MinIO's `wildcard.MatchAsPatternPrefix`: whether `text` can begin a
/// string that `pattern` matches, judged position by position up to the
/// first `*` of the pattern.
pub(crate) fn matches_as_pattern_prefix(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    for (&pc, &tc) in p.iter().zip(t) {
        if pc == b'*' {
            return true;
        }
        if pc != b'?' && pc != tc {
            return false;
        }
    }
    t.len() <= p.len()
}

/// The matcher. `star` remembers the pattern position after the last `*`
/// seen and the text position that star's run currently ends at; on a
/// mismatch the run grows by one byte and matching resumes after the star.
/// Earlier stars never need revisiting: anything they could absorb, the
/// last star can absorb as well.
fn core(pattern: &[u8], text: &[u8], eq: impl Fn(u8, u8) -> bool) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if t == text.len() {
            // The text is used up: only trailing stars may remain.
            while p < pattern.len() && pattern[p] == b'*' {
                p += 1;
            }
            if p == pattern.len() {
                return true;
            }
        } else if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    p += 1;
                    star = Some((p, t));
                    continue;
                }
                b'?' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                c if eq(c, text[t]) => {
                    p += 1;
                    t += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((after_star, run_end)) if run_end < text.len() => {
                star = Some((after_star, run_end + 1));
                p = after_star;
                t = run_end + 1;
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A direct port of MinIO's recursive `deepMatchRune`, the reference
    /// the one-pass matcher is compared with.
    fn reference(pattern: &[u8], text: &[u8], simple: bool) -> bool {
        if pattern.is_empty() {
            return text.is_empty();
        }
        if pattern == b"*" {
            return true;
        }
        deep(text, pattern, simple)
    }

    fn deep(mut text: &[u8], mut pattern: &[u8], simple: bool) -> bool {
        while let Some(&c) = pattern.first() {
            match c {
                b'?' => {
                    if text.is_empty() {
                        return simple;
                    }
                }
                b'*' => {
                    return pattern.len() == 1
                        || deep(text, &pattern[1..], simple)
                        || (!text.is_empty() && deep(&text[1..], pattern, simple));
                }
                _ => {
                    if text.first() != Some(&c) {
                        return false;
                    }
                }
            }
            text = &text[1..];
            pattern = &pattern[1..];
        }
        text.is_empty() && pattern.is_empty()
    }

    /// Every string of length `0..=max_len` over `alphabet`.
    fn all_strings(alphabet: &[u8], max_len: usize) -> Vec<Vec<u8>> {
        let mut out = vec![Vec::new()];
        let mut layer = vec![Vec::new()];
        for _ in 0..max_len {
            let mut next = Vec::new();
            for s in &layer {
                for &c in alphabet {
                    let mut s2 = s.clone();
                    s2.push(c);
                    next.push(s2);
                }
            }
            out.extend(next.iter().cloned());
            layer = next;
        }
        out
    }

    #[test]
    fn agrees_with_the_recursive_reference_exhaustively() {
        let patterns = all_strings(b"ab*?", 6);
        let texts = all_strings(b"ab", 5);
        for p in &patterns {
            for t in &texts {
                for simple in [false, true] {
                    let (ps, ts) = (
                        std::str::from_utf8(p).unwrap(),
                        std::str::from_utf8(t).unwrap(),
                    );
                    let got = if simple {
                        matches_simple(ps, ts)
                    } else {
                        matches(ps, ts)
                    };
                    assert_eq!(
                        got,
                        reference(p, t, simple),
                        "pattern {:?} text {:?} simple {simple}",
                        String::from_utf8_lossy(p),
                        String::from_utf8_lossy(t)
                    );
                }
            }
        }
    }

    #[test]
    fn examples() {
        assert!(matches("*", ""));
        assert!(matches("", ""));
        assert!(!matches("", "a"));
        assert!(matches("bucket/*", "bucket/"));
        assert!(matches("bucket/*", "bucket/a/b"));
        assert!(!matches("bucket/*", "bucket"));
        assert!(matches("b?cket", "bucket"));
        assert!(!matches("a?", "a"));
        assert!(matches_simple("a?", "a"));
        assert!(matches_simple("a?b", "a"));
        assert!(matches_simple("*?x", "ab"));
        assert!(!matches("*?x", "ab"));
        // `?` is one byte, not one character.
        assert!(!matches("?", "é"));
        assert!(matches("??", "é"));
    }

    #[test]
    fn hostile_patterns_take_polynomial_time() {
        let pattern = "a*".repeat(500) + "b";
        let text = "a".repeat(2000);
        assert!(!matches(&pattern, &text));
        assert!(matches(&pattern[..pattern.len() - 1], &text));
        assert!(!matches_simple(&pattern, &text));
        assert!(matches_simple(&"?".repeat(3000), &text));
    }

    #[test]
    fn ascii_nocase() {
        assert!(matches_ascii_nocase("s3:get*", "s3:GetObject"));
        assert!(matches_ascii_nocase("s3:getobject", "S3:GETOBJECT"));
        assert!(!matches_ascii_nocase("s3:getobject", "s3:GetObjects"));
    }

    #[test]
    fn pattern_prefix_examples() {
        // The table of MinIO's documentation of MatchAsPatternPrefix.
        for (p, t, want) in [
            ("abc*", "ab", true),
            ("abc*", "abd", false),
            ("abc*c", "abcd", true),
            ("ab*??d", "abxxc", true),
            ("ab*??d", "abxc", true),
            ("ab??d", "abxc", true),
            ("ab??d", "abc", true),
            ("ab??d", "abcxdd", false),
        ] {
            assert_eq!(matches_as_pattern_prefix(p, t), want, "{p} {t}");
        }
    }
}

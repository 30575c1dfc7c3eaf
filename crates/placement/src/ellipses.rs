//! MinIO's ellipsis syntax for drive arguments: `/mnt/disk{1...8}`.
//!
//! Rules, as MinIO's `ellipses` package (github.com/minio/pkg) applies them:
//!
//! * An argument "has ellipses" when it contains `...`, or contains both `{`
//!   and `}`. Such an argument must then be a valid pattern; `/d{1..4}` is an
//!   error, not a literal path.
//! * A range is `{N...M}` where `N` and `M` are made of `0-9a-z`. Each bound is
//!   read as decimal, or, failing that, as hexadecimal; if either bound needed
//!   hexadecimal, the labels are written in lowercase hexadecimal. `N > M` is
//!   an error; `{N...N}` is one label.
//! * Labels are zero-padded to the width of `M` as written when `N` has a
//!   leading zero and more than one digit, or when `M` has a leading zero:
//!   `{01...16}` gives `01`..`16`, `{001...00a}` gives `001`..`00a`.
//! * Ranges are found from the right; any `{` or `}` left over in the text
//!   between them is an error.
//! * Expansion order: the **leftmost** range varies fastest. So
//!   `http://host{1...2}/export{1...8}` gives `host1/export1`,
//!   `host2/export1`, `host1/export2`, ...: consecutive drives sit on different
//!   hosts, and erasure sets (consecutive chunks) span hosts.
//!
//! One deliberate difference: MinIO's regular expression does not see past a
//! newline, so an argument with a control character expands to garbage there;
//! here it is refused ([`Error::ControlCharacter`]).

use crate::Error;

/// The most drives one argument may expand to. MinIO has no limit; this one
/// only keeps a typo such as `{1...1000000000}` from exhausting memory.
pub const MAX_DRIVES_PER_ARG: usize = 1 << 17;

/// Whether MinIO treats `arg` as an ellipsis pattern: it contains `...`, or
/// both `{` and `}`.
///
/// ```
/// assert!(placement::has_ellipses("/mnt/disk{1...4}"));
/// assert!(placement::has_ellipses("/mnt/disk{1..4}")); // braces: a (malformed) pattern
/// assert!(!placement::has_ellipses("/mnt/disk1"));
/// ```
pub fn has_ellipses(arg: &str) -> bool {
    arg.contains("...") || (arg.contains('{') && arg.contains('}'))
}

/// One `{N...M}` range of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EllipsisRange {
    start: u64,
    end: u64,
    hexadecimal: bool,
    pad_width: Option<usize>,
}

impl EllipsisRange {
    /// First value.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Last value (inclusive).
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Whether labels are written in lowercase hexadecimal.
    pub fn is_hexadecimal(&self) -> bool {
        self.hexadecimal
    }

    /// Minimum label width (zero-padded), if padding applies.
    pub fn pad_width(&self) -> Option<usize> {
        self.pad_width
    }

    /// Number of labels. Parsing guarantees it fits [`MAX_DRIVES_PER_ARG`].
    pub fn len(&self) -> usize {
        // Bounded by MAX_DRIVES_PER_ARG at parse time.
        usize::try_from(self.end - self.start).map_or(usize::MAX, |d| d.saturating_add(1))
    }

    /// Always false: a range has at least one label.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The label at position `index` (0-based), or `None` past the end.
    pub fn label(&self, index: usize) -> Option<String> {
        if index >= self.len() {
            return None;
        }
        let value = self.start + index as u64;
        Some(match (self.hexadecimal, self.pad_width) {
            (false, None) => value.to_string(),
            (true, None) => format!("{value:x}"),
            (false, Some(w)) => format!("{value:0w$}"),
            (true, Some(w)) => format!("{value:0w$x}"),
        })
    }
}

/// A parsed argument: literal text and ranges, alternating, left to right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EllipsisPattern {
    arg: String,
    /// `ranges.len() + 1` literal pieces: text before, between and after the
    /// ranges.
    literals: Vec<String>,
    ranges: Vec<EllipsisRange>,
    drive_count: usize,
}

impl EllipsisPattern {
    /// Parses an argument that [`has_ellipses`].
    ///
    /// ```
    /// let p = placement::EllipsisPattern::parse("http://node{1...4}:9000/mnt/disk{01...16}")?;
    /// assert_eq!(p.drive_count(), 64);
    /// assert_eq!(p.get(0).as_deref(), Some("http://node1:9000/mnt/disk01"));
    /// assert_eq!(p.get(1).as_deref(), Some("http://node2:9000/mnt/disk01"));
    /// # Ok::<(), placement::Error>(())
    /// ```
    pub fn parse(arg: &str) -> Result<Self, Error> {
        if arg.chars().any(char::is_control) {
            return Err(Error::ControlCharacter {
                arg: arg.escape_debug().to_string(),
            });
        }
        // Tokens are found from the right, as MinIO's greedy regular
        // expression `(.*)({[0-9a-z]*\.\.\.[0-9a-z]*})(.*)` does.
        let mut rest = arg;
        let mut ranges_rev = Vec::new();
        let mut literals_rev = Vec::new();
        while let Some((token_start, token_end)) = find_last_token(rest) {
            let token = &rest[token_start..token_end];
            ranges_rev.push(parse_range(arg, token)?);
            literals_rev.push(rest[token_end..].to_string());
            rest = &rest[..token_start];
        }
        if ranges_rev.is_empty() {
            return Err(Error::InvalidEllipsis {
                arg: arg.to_string(),
                reason: "no range of the form {N...M} found".to_string(),
            });
        }
        literals_rev.push(rest.to_string());
        if literals_rev.iter().any(|l| l.contains(['{', '}'])) {
            return Err(Error::InvalidEllipsis {
                arg: arg.to_string(),
                reason: "a brace is not part of a {N...M} range".to_string(),
            });
        }
        literals_rev.reverse();
        ranges_rev.reverse();
        let mut drive_count: usize = 1;
        for r in &ranges_rev {
            drive_count = drive_count
                .checked_mul(r.len())
                .filter(|&n| n <= MAX_DRIVES_PER_ARG)
                .ok_or_else(|| Error::TooManyDrives {
                    arg: arg.to_string(),
                    limit: MAX_DRIVES_PER_ARG,
                })?;
        }
        Ok(EllipsisPattern {
            arg: arg.to_string(),
            literals: literals_rev,
            ranges: ranges_rev,
            drive_count,
        })
    }

    /// The argument this pattern was parsed from.
    pub fn arg(&self) -> &str {
        &self.arg
    }

    /// The ranges, left to right.
    pub fn ranges(&self) -> &[EllipsisRange] {
        &self.ranges
    }

    /// The literal pieces around the ranges, left to right (one more than
    /// there are ranges; pieces may be empty).
    pub fn literals(&self) -> &[String] {
        &self.literals
    }

    /// Number of strings the pattern expands to: the product of the range
    /// lengths.
    pub fn drive_count(&self) -> usize {
        self.drive_count
    }

    /// The `index`-th expansion (0-based) in MinIO's order: the leftmost range
    /// varies fastest.
    pub fn get(&self, index: usize) -> Option<String> {
        if index >= self.drive_count {
            return None;
        }
        let mut out = String::with_capacity(self.arg.len() + 8);
        let mut rest = index;
        for (i, range) in self.ranges.iter().enumerate() {
            out.push_str(&self.literals[i]);
            let n = range.len();
            out.push_str(&range.label(rest % n)?);
            rest /= n;
        }
        out.push_str(&self.literals[self.ranges.len()]);
        Some(out)
    }

    /// All expansions in MinIO's order.
    pub fn expand(&self) -> Vec<String> {
        (0..self.drive_count).filter_map(|i| self.get(i)).collect()
    }
}

/// Expands one argument: an ellipsis pattern into its drives, any other
/// argument into itself.
///
/// ```
/// assert_eq!(
///     placement::expand("/mnt/disk{1...3}")?,
///     ["/mnt/disk1", "/mnt/disk2", "/mnt/disk3"]
/// );
/// assert_eq!(placement::expand("/data")?, ["/data"]);
/// assert!(placement::expand("/mnt/disk{4...1}").is_err());
/// # Ok::<(), placement::Error>(())
/// ```
pub fn expand(arg: &str) -> Result<Vec<String>, Error> {
    if has_ellipses(arg) {
        Ok(EllipsisPattern::parse(arg)?.expand())
    } else {
        Ok(vec![arg.to_string()])
    }
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_digit() || b.is_ascii_lowercase()
}

/// Byte range of the rightmost `{[0-9a-z]*...[0-9a-z]*}` in `s`.
fn find_last_token(s: &str) -> Option<(usize, usize)> {
    let bytes = s.as_bytes();
    (0..bytes.len())
        .rev()
        .filter(|&i| bytes[i] == b'{')
        .find_map(|i| token_end_at(bytes, i).map(|end| (i, end)))
}

/// If a token starts at `start` (which holds `{`), the index just past it.
fn token_end_at(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() && is_token_char(bytes[i]) {
        i += 1;
    }
    if !bytes[i..].starts_with(b"...") {
        return None;
    }
    i += 3;
    while i < bytes.len() && is_token_char(bytes[i]) {
        i += 1;
    }
    (bytes.get(i) == Some(&b'}')).then_some(i + 1)
}

/// Reads one bound: decimal first, then hexadecimal (as Go's
/// `strconv.ParseUint` with base 10, then base 16). Returns the value and
/// whether hexadecimal was needed.
fn parse_bound(arg: &str, text: &str) -> Result<(u64, bool), Error> {
    if text.is_empty() {
        return Err(Error::InvalidEllipsis {
            arg: arg.to_string(),
            reason: "a range bound is empty".to_string(),
        });
    }
    if let Ok(v) = text.parse::<u64>() {
        return Ok((v, false));
    }
    match u64::from_str_radix(text, 16) {
        Ok(v) => Ok((v, true)),
        Err(_) => Err(Error::InvalidEllipsis {
            arg: arg.to_string(),
            reason: if text.bytes().all(|b| b.is_ascii_hexdigit()) {
                format!("'{text}' is too large")
            } else {
                format!("'{text}' is not a decimal or lowercase hexadecimal number")
            },
        }),
    }
}

fn parse_range(arg: &str, token: &str) -> Result<EllipsisRange, Error> {
    let inner = &token[1..token.len() - 1];
    let (start_text, end_text) = inner
        .split_once("...")
        .ok_or_else(|| Error::InvalidEllipsis {
            arg: arg.to_string(),
            reason: "a range needs three dots".to_string(),
        })?;
    let (start, start_hex) = parse_bound(arg, start_text)?;
    let (end, end_hex) = parse_bound(arg, end_text)?;
    if start > end {
        return Err(Error::EllipsisRangeReversed {
            arg: arg.to_string(),
            start,
            end,
        });
    }
    if end - start >= MAX_DRIVES_PER_ARG as u64 {
        return Err(Error::TooManyDrives {
            arg: arg.to_string(),
            limit: MAX_DRIVES_PER_ARG,
        });
    }
    let padded = (start_text.starts_with('0') && start_text.len() > 1) || end_text.starts_with('0');
    Ok(EllipsisRange {
        start,
        end,
        hexadecimal: start_hex || end_hex,
        pad_width: padded.then_some(end_text.len()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_order_leftmost_fastest() {
        let got = expand("http://host{1...2}/export{1...3}").unwrap();
        assert_eq!(
            got,
            [
                "http://host1/export1",
                "http://host2/export1",
                "http://host1/export2",
                "http://host2/export2",
                "http://host1/export3",
                "http://host2/export3",
            ]
        );
    }

    #[test]
    fn padding_rules() {
        assert_eq!(expand("d{01...03}").unwrap(), ["d01", "d02", "d03"]);
        assert_eq!(expand("d{1...03}").unwrap(), ["d01", "d02", "d03"]);
        assert_eq!(expand("d{0...2}").unwrap(), ["d0", "d1", "d2"]);
        // Width is the end bound's width, even if the start is written wider.
        assert_eq!(expand("d{001...10}").unwrap()[0], "d01");
        assert_eq!(expand("d{8...10}").unwrap(), ["d8", "d9", "d10"]);
    }

    #[test]
    fn hexadecimal_ranges() {
        assert_eq!(
            expand("h{8...b}").unwrap(),
            ["h8", "h9", "ha", "hb"],
            "a non-decimal bound switches labels to hexadecimal"
        );
        assert_eq!(expand("h{001...00a}").unwrap()[9], "h00a");
        // The start is read as decimal when it can be: 10 (not 0x10) ... 0x1f.
        let v = expand("h{10...1f}").unwrap();
        assert_eq!(v.first().map(String::as_str), Some("ha"));
        assert_eq!(v.len(), 22);
    }

    #[test]
    fn malformed() {
        for bad in [
            "/d{1..4}",
            "/d{...4}",
            "/d{1...}",
            "{...}",
            "...",
            "/d{4...1}",
            "/d{1...4",
            "/d{1...4}}",
            "/d{{1...4}",
            "/d{1...2O}",
            "/d{a...z}",
            "/d{-1...1}",
            "/d{1...4}\n",
        ] {
            assert!(expand(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn size_limit() {
        assert!(matches!(
            expand("/d{1...99999999999}"),
            Err(Error::TooManyDrives { .. })
        ));
        assert!(matches!(
            expand("/d{1...1000}/e{1...1000}"),
            Err(Error::TooManyDrives { .. })
        ));
        assert!(matches!(
            expand("/d{0...ffffffffffffffff}"),
            Err(Error::TooManyDrives { .. })
        ));
    }
}

//! User metadata beyond ASCII, as S3 carries it: values with non-ASCII
//! characters are stored decoded and answered in RFC 2047 encoded words
//! (`=?UTF-8?B?...?=`), so a response header stays ASCII; a value sent as
//! encoded words is decoded before it is stored.

use std::borrow::Cow;

use base64::Engine as _;

/// Longest encoded word accepted (RFC 2047 allows 75 characters; clients
/// that encode a whole value in one word send longer ones).
const MAX_WORD: usize = 8 * 1024;

/// The value `v` stands for: encoded words (`=?charset?B|Q?text?=`, UTF-8,
/// US-ASCII or ISO-8859-1) decoded, the white space between two encoded
/// words dropped; a value that is not entirely made of well-formed encoded
/// words and text is kept as sent.
pub(crate) fn decode(v: &str) -> Cow<'_, str> {
    if !v.contains("=?") {
        return Cow::Borrowed(v);
    }
    decode_words(v).map_or(Cow::Borrowed(v), Cow::Owned)
}

fn decode_words(v: &str) -> Option<String> {
    let mut out = String::with_capacity(v.len());
    let mut rest = v;
    let mut after_word = false;
    while !rest.is_empty() {
        match rest.find("=?") {
            Some(start) => {
                let (text, word) = rest.split_at(start);
                // White space between two encoded words is not text.
                if !(after_word && text.chars().all(|c| c == ' ' || c == '\t')) {
                    out.push_str(text);
                }
                let (decoded, len) = decode_word(word)?;
                out.push_str(&decoded);
                rest = &word[len..];
                after_word = true;
            }
            None => {
                out.push_str(rest);
                break;
            }
        }
    }
    Some(out)
}

/// One encoded word at the start of `w`: its text and its length.
fn decode_word(w: &str) -> Option<(String, usize)> {
    let body = w.strip_prefix("=?")?;
    let (charset, body) = body.split_once('?')?;
    let (encoding, body) = body.split_once('?')?;
    let end = body.find("?=")?;
    if end > MAX_WORD {
        return None;
    }
    let text = &body[..end];
    let len = 2 + charset.len() + 1 + encoding.len() + 1 + end + 2;
    let bytes = if encoding.eq_ignore_ascii_case("B") {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()?
    } else if encoding.eq_ignore_ascii_case("Q") {
        let mut out = Vec::with_capacity(text.len());
        let mut b = text.bytes();
        while let Some(c) = b.next() {
            match c {
                b'_' => out.push(b' '),
                b'=' => {
                    let hi = (b.next()? as char).to_digit(16)?;
                    let lo = (b.next()? as char).to_digit(16)?;
                    out.push((hi * 16 + lo) as u8);
                }
                c => out.push(c),
            }
        }
        out
    } else {
        return None;
    };
    // A language tag (`UTF-8*en`, RFC 2231) does not change the charset.
    let charset = charset.split('*').next().unwrap_or(charset);
    let decoded =
        if charset.eq_ignore_ascii_case("UTF-8") || charset.eq_ignore_ascii_case("US-ASCII") {
            String::from_utf8(bytes).ok()?
        } else if charset.eq_ignore_ascii_case("ISO-8859-1") {
            bytes.iter().map(|&c| char::from(c)).collect()
        } else {
            return None;
        };
    Some((decoded, len))
}

/// The header value of a stored value: as is when it is printable ASCII,
/// else one UTF-8 `B` encoded word (what S3 answers).
pub(crate) fn encode(v: &str) -> Cow<'_, str> {
    if v.bytes().all(|c| c == b'\t' || (0x20..0x7f).contains(&c)) {
        return Cow::Borrowed(v);
    }
    Cow::Owned(format!(
        "=?UTF-8?B?{}?=",
        base64::engine::general_purpose::STANDARD.encode(v.as_bytes())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_the_encoded_form() {
        for v in ["plain", "café", "日本語のテキスト", "a\u{1F600}b", ""] {
            assert_eq!(decode(&encode(v)), v, "{v}");
        }
        assert_eq!(encode("café"), "=?UTF-8?B?Y2Fmw6k=?=");
        assert_eq!(encode("ascii only"), "ascii only");
    }

    #[test]
    fn decodes_what_clients_send() {
        assert_eq!(decode("=?utf-8?q?caf=C3=A9_au_lait?="), "café au lait");
        assert_eq!(decode("=?UTF-8?B?Y2Fm?= =?UTF-8?B?w6k=?="), "café");
        assert_eq!(decode("x =?ISO-8859-1?Q?=E9?= y"), "x é y");
        // Not encoded words: kept as sent.
        for kept in [
            "=?",
            "a=?b",
            "=?UTF-8?X?abc?=",
            "=?UTF-8?B?!!!?=",
            "=?KOI8-R?B?YQ==?=",
            "=?UTF-8?Q?=ZZ?=",
        ] {
            assert_eq!(decode(kept), kept, "{kept}");
        }
        // Bytes that are not UTF-8 under a UTF-8 label: kept as sent.
        assert_eq!(decode("=?UTF-8?B?/w==?="), "=?UTF-8?B?/w==?=");
    }
}

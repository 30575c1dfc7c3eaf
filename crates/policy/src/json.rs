//! The JSON tree policies are read from.
//!
//! serde_json tokenizes; this module builds its own tree instead of
//! `serde_json::Value` because a policy reader needs what `Value` loses:
//! the order of an object's fields and whether a field appears twice (Go's
//! decoder, which MinIO uses, lets the last one win silently; a repeated
//! `Condition` would thereby drop a condition, so here it is an error).
//! Depth is bounded while building, before any allocation it would cause.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

use crate::PolicyError;

/// A JSON value, objects as ordered field lists.
#[derive(Debug, Clone)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    /// An integer that fits `i64`, as Go's decoder reads into an `int`.
    Int(i64),
    /// Any other number (fraction, exponent, out of range): no policy
    /// value may be one.
    Number,
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// A short description of the value's type for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Int(_) | Json::Number => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

/// Reads `bytes` as one JSON value nested at most `max_depth` deep.
pub(crate) fn parse(bytes: &[u8], max_depth: usize) -> Result<Json, PolicyError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = Seed {
        depth_left: max_depth,
    }
    .deserialize(&mut de)
    .map_err(|e| classify(&e))?;
    de.end().map_err(|e| classify(&e))?;
    Ok(value)
}

/// The marker in custom errors that says a limit, not the syntax, failed.
const DEPTH_MARK: &str = "policy nested deeper than";

fn classify(e: &serde_json::Error) -> PolicyError {
    let msg = e.to_string();
    if msg.starts_with(DEPTH_MARK) {
        PolicyError::Limit(msg)
    } else if msg.contains("duplicate field") {
        PolicyError::syntax(msg)
    } else {
        PolicyError::syntax(format!("policy is not valid JSON: {msg}"))
    }
}

struct Seed {
    depth_left: usize,
}

impl<'de> DeserializeSeed<'de> for Seed {
    type Value = Json;

    /// Checks the depth only when a value is really there, so an empty
    /// array at the deepest level allowed is still accepted.
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        if self.depth_left == 0 {
            return Err(de::Error::custom(format_args!(
                "{DEPTH_MARK} the limit allows"
            )));
        }
        d.deserialize_any(self)
    }
}

impl Seed {
    /// The seed of a value nested in this one.
    fn nested(&self) -> Seed {
        Seed {
            depth_left: self.depth_left.saturating_sub(1),
        }
    }
}

impl<'de> Visitor<'de> for Seed {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => Json::Int(i),
            Err(_) => Json::Number,
        })
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Json, E> {
        Ok(Json::Number)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self.nested())? {
            out.push(v);
        }
        Ok(Json::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut out: Vec<(String, Json)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom(format_args!(
                    "duplicate field '{key}' in a JSON object"
                )));
            }
            let value = map.next_value_seed(self.nested())?;
            out.push((key, value));
        }
        Ok(Json::Object(out))
    }
}

/// Writes `s` as a JSON string literal.
pub(crate) fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_types() {
        let j = parse(
            br#"{"b":1,"a":[true,null,"x",1.5,18446744073709551615]}"#,
            8,
        )
        .unwrap();
        let Json::Object(fields) = j else {
            panic!("object expected")
        };
        assert_eq!(fields[0].0, "b");
        assert!(matches!(fields[0].1, Json::Int(1)));
        let Json::Array(items) = &fields[1].1 else {
            panic!("array expected")
        };
        assert!(matches!(items[0], Json::Bool(true)));
        assert!(matches!(items[1], Json::Null));
        assert!(matches!(&items[2], Json::String(s) if s == "x"));
        assert!(matches!(&items[3], Json::Number));
        assert!(matches!(&items[4], Json::Number));
    }

    #[test]
    fn refuses_duplicates_trailing_text_and_depth() {
        assert!(matches!(
            parse(br#"{"a":1,"a":2}"#, 8),
            Err(PolicyError::Syntax(_))
        ));
        assert!(matches!(
            parse(br#"{"a":1} x"#, 8),
            Err(PolicyError::Syntax(_))
        ));
        assert!(matches!(parse(b"[[[[1]]]]", 4), Err(PolicyError::Limit(_))));
        assert!(parse(b"[[[1]]]", 4).is_ok());
        let deep = "[".repeat(100_000);
        assert!(parse(deep.as_bytes(), 16).is_err());
    }

    #[test]
    fn escapes() {
        let mut s = String::new();
        write_str(&mut s, "a\"b\\c\n\u{1}é");
        assert_eq!(s, r#""a\"b\\c\n\u0001é""#);
        let back: String = serde_json::from_str(&s).unwrap();
        assert_eq!(back, "a\"b\\c\n\u{1}é");
    }
}

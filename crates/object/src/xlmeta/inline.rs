//! Inline data: the small objects MinIO stores inside xl.meta itself
//! (MinIO's `xlMetaInlineData`).
//!
//! Layout after the metadata CRC: one version byte (1), then a msgpack map
//! from key (a string: the version id as a hyphenated UUID, or `null` for
//! the null version) to a `bin` holding this drive's bitrot-framed shard.
//! No bytes at all when there is no inline data.

use std::borrow::Cow;

use crate::msgp::{Reader, Writer};
use crate::text::{IntoOwned, Text};

/// The inline-data format version MinIO writes and reads.
pub const INLINE_DATA_VERSION: u8 = 1;

/// The inline data of one xl.meta, in stored order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InlineData<'a> {
    entries: Vec<(Text<'a>, Cow<'a, [u8]>)>,
}

/// The outcome of decoding inline data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodedInline<'a> {
    pub data: InlineData<'a>,
    /// Whether the stored bytes were damaged and only a valid prefix of the
    /// entries was kept (MinIO's `repair`).
    pub repaired: bool,
}

impl<'a> InlineData<'a> {
    /// No inline data.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decode the bytes that follow the metadata CRC.
    ///
    /// Like MinIO (which validates and, on failure, "repairs"), damaged inline
    /// data does not fail the whole xl.meta: the entries that decode before
    /// the damage are kept and `repaired` is set. The metadata itself is
    /// CRC-protected; each inline shard carries its own bitrot hashes.
    pub(crate) fn decode(buf: &'a [u8]) -> DecodedInline<'a> {
        let mut data = InlineData::default();
        if buf.is_empty() {
            return DecodedInline {
                data,
                repaired: false,
            };
        }
        if buf[0] != INLINE_DATA_VERSION {
            // MinIO drops inline data of an unknown version entirely.
            return DecodedInline {
                data,
                repaired: true,
            };
        }
        let mut r = Reader::new(&buf[1..]);
        let Ok(n) = r.read_map_len() else {
            return DecodedInline {
                data,
                repaired: true,
            };
        };
        let mut repaired = false;
        for _ in 0..n {
            let entry = r
                .read_key()
                .and_then(|k| Ok((k, r.read_bin()?)))
                .ok()
                .filter(|(k, _)| !k.is_empty());
            match entry {
                Some((k, v)) => data.entries.push((Text::borrowed(k), Cow::Borrowed(v))),
                None => {
                    repaired = true;
                    break;
                }
            }
        }
        DecodedInline { data, repaired }
    }

    /// Append the encoding (nothing if empty).
    pub fn encode(&self, out: &mut Vec<u8>) {
        if self.entries.is_empty() {
            return;
        }
        let mut w = Writer::with_buffer(std::mem::take(out));
        w.raw(&[INLINE_DATA_VERSION]);
        w.map_len(self.entries.len());
        for (k, v) in &self.entries {
            w.str(k.as_bytes());
            w.bin(v);
        }
        *out = w.into_inner();
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no inline data.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keys and values in stored order.
    pub fn iter(&self) -> impl Iterator<Item = (&Text<'a>, &[u8])> {
        self.entries.iter().map(|(k, v)| (k, &v[..]))
    }

    /// The shard stored under `key` (the first match, as MinIO's `find`).
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.entries
            .iter()
            .find(|(k, _)| k.as_bytes() == key.as_bytes())
            .map(|(_, v)| &v[..])
    }

    /// Add or replace `key` (MinIO's `replace`: in place, else appended).
    pub fn insert(&mut self, key: impl Into<Text<'a>>, value: impl Into<Cow<'a, [u8]>>) {
        let key = key.into();
        let value = value.into();
        let mut found = false;
        for (k, v) in &mut self.entries {
            if *k == key {
                *v = value.clone();
                found = true;
            }
        }
        if !found {
            self.entries.push((key, value));
        }
    }

    /// Remove every entry whose key is in `keys`; whether any was removed.
    pub fn remove(&mut self, keys: &[&str]) -> bool {
        let before = self.entries.len();
        self.entries
            .retain(|(k, _)| !keys.iter().any(|key| k.as_bytes() == key.as_bytes()));
        self.entries.len() != before
    }

    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> InlineData<'static> {
        InlineData {
            entries: self
                .entries
                .into_iter()
                .map(|(k, v)| (k.into_owned(), IntoOwned::into_owned(v)))
                .collect(),
        }
    }
}

/// The inline-data key of a version id: the hyphenated UUID, or `null` for
/// the all-zero (null) version.
pub fn inline_key(version_id: &[u8; 16]) -> String {
    if *version_id == [0; 16] {
        "null".to_owned()
    } else {
        uuid::Uuid::from_bytes(*version_id).hyphenated().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_edit() {
        let mut d = InlineData::new();
        let mut out = Vec::new();
        d.encode(&mut out);
        assert!(out.is_empty());
        d.insert("null", &b"abc"[..]);
        d.insert("x", vec![1u8; 300]);
        d.insert("null", &b"xyz"[..]);
        d.encode(&mut out);
        assert_eq!(&out[..6], &[1, 0x82, 0xa4, b'n', b'u', b'l']);
        let back = InlineData::decode(&out);
        assert!(!back.repaired);
        assert_eq!(back.data, d);
        assert_eq!(back.data.get("null"), Some(&b"xyz"[..]));
        assert!(d.remove(&["null", "nope"]));
        assert!(!d.remove(&["null"]));
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn damage_keeps_valid_prefix() {
        let mut d = InlineData::new();
        d.insert("a", &b"1"[..]);
        d.insert("b", &b"2222"[..]);
        let mut out = Vec::new();
        d.encode(&mut out);
        let cut = InlineData::decode(&out[..out.len() - 1]);
        assert!(cut.repaired);
        assert_eq!(cut.data.len(), 1);
        let bad_version = InlineData::decode(&[2, 0x80]);
        assert!(bad_version.repaired && bad_version.data.is_empty());
    }

    #[test]
    fn keys() {
        assert_eq!(inline_key(&[0; 16]), "null");
        let id = *uuid::Uuid::parse_str("996d235d-6cf1-44d5-855f-6667d232af0d")
            .unwrap()
            .as_bytes();
        assert_eq!(inline_key(&id), "996d235d-6cf1-44d5-855f-6667d232af0d");
    }
}

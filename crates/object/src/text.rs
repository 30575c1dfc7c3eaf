//! Borrowed-or-owned byte strings and insertion-ordered metadata maps.

use std::borrow::Cow;
use std::fmt;

/// A MessagePack string as MinIO stores it.
///
/// Go strings are byte strings: msgp neither checks nor requires UTF-8, so
/// neither do we. Decoding borrows from the input buffer; [`Text::as_str`]
/// gives a `&str` when the bytes are UTF-8 (they virtually always are).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Text<'a>(Cow<'a, [u8]>);

impl<'a> Text<'a> {
    /// Borrow `bytes` without copying.
    pub fn borrowed(bytes: &'a [u8]) -> Self {
        Text(Cow::Borrowed(bytes))
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The text, if it is UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// The text with invalid UTF-8 replaced.
    pub fn to_string_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.0)
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A copy that owns its bytes.
    pub fn into_owned(self) -> Text<'static> {
        Text(Cow::Owned(self.0.into_owned()))
    }
}

impl fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string_lossy(), f)
    }
}

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_string_lossy(), f)
    }
}

impl<'a> From<&'a str> for Text<'a> {
    fn from(s: &'a str) -> Self {
        Text(Cow::Borrowed(s.as_bytes()))
    }
}

impl From<String> for Text<'static> {
    fn from(s: String) -> Self {
        Text(Cow::Owned(s.into_bytes()))
    }
}

impl<'a> From<&'a [u8]> for Text<'a> {
    fn from(s: &'a [u8]) -> Self {
        Text(Cow::Borrowed(s))
    }
}

impl From<Vec<u8>> for Text<'static> {
    fn from(s: Vec<u8>) -> Self {
        Text(Cow::Owned(s))
    }
}

impl PartialEq<str> for Text<'_> {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for Text<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

/// Values that can drop their borrow of the input buffer.
pub trait IntoOwned {
    /// The owning type.
    type Owned: 'static;
    /// Copy any borrowed bytes.
    fn into_owned(self) -> Self::Owned;
}

impl IntoOwned for Text<'_> {
    type Owned = Text<'static>;
    fn into_owned(self) -> Text<'static> {
        Text::into_owned(self)
    }
}

impl IntoOwned for Cow<'_, [u8]> {
    type Owned = Cow<'static, [u8]>;
    fn into_owned(self) -> Cow<'static, [u8]> {
        Cow::Owned(Cow::into_owned(self))
    }
}

/// A string-keyed map that keeps its entries in insertion order.
///
/// MinIO encodes Go maps, whose iteration order is random, so two MinIO
/// writes of the same map may order entries differently. Keeping the order
/// we decoded is what lets an unmodified file re-encode byte for byte.
/// Keys are unique: [`MetaMap::insert`] replaces an existing value in place
/// (as decoding a Go map with a repeated key keeps the last value).
#[derive(Clone, PartialEq, Eq)]
pub struct MetaMap<'a, V> {
    entries: Vec<(Text<'a>, V)>,
}

impl<V> Default for MetaMap<'_, V> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
        }
    }
}

impl<V: fmt::Debug> fmt::Debug for MetaMap<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

impl<'a, V> MetaMap<'a, V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            entries: Vec::with_capacity(n),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries in stored order.
    pub fn iter(&self) -> impl Iterator<Item = (&Text<'a>, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// The value for `key` (exact, case-sensitive match, like a Go map).
    pub fn get(&self, key: &str) -> Option<&V> {
        self.entries
            .iter()
            .find(|(k, _)| k.as_bytes() == key.as_bytes())
            .map(|(_, v)| v)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Set `key`, replacing (in place) and returning any previous value.
    pub fn insert(&mut self, key: impl Into<Text<'a>>, value: V) -> Option<V> {
        let key = key.into();
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => Some(std::mem::replace(v, value)),
            None => {
                self.entries.push((key, value));
                None
            }
        }
    }

    /// Sort entries by key: a canonical order, e.g. for comparing maps that
    /// MinIO wrote in different (random Go map) orders.
    pub fn sort_keys(&mut self) {
        self.entries.sort_by(|a, b| a.0.cmp(&b.0));
    }

    /// Remove `key`, keeping the order of the others.
    pub fn remove(&mut self, key: &str) -> Option<V> {
        let i = self
            .entries
            .iter()
            .position(|(k, _)| k.as_bytes() == key.as_bytes())?;
        Some(self.entries.remove(i).1)
    }
}

impl<V: IntoOwned> IntoOwned for MetaMap<'_, V> {
    type Owned = MetaMap<'static, V::Owned>;
    fn into_owned(self) -> Self::Owned {
        MetaMap {
            entries: self
                .entries
                .into_iter()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        }
    }
}

impl<T: IntoOwned> IntoOwned for Option<T> {
    type Owned = Option<T::Owned>;
    fn into_owned(self) -> Self::Owned {
        self.map(IntoOwned::into_owned)
    }
}

impl<T: IntoOwned> IntoOwned for Vec<T> {
    type Owned = Vec<T::Owned>;
    fn into_owned(self) -> Self::Owned {
        self.into_iter().map(IntoOwned::into_owned).collect()
    }
}

/// A map entry we do not model, kept verbatim so a decode/encode round trip
/// does not lose it. Unknown fields are re-emitted after the known ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawField<'a> {
    /// The key as stored.
    pub key: Text<'a>,
    /// The complete MessagePack encoding of the value.
    pub value: Cow<'a, [u8]>,
}

impl IntoOwned for RawField<'_> {
    type Owned = RawField<'static>;
    fn into_owned(self) -> RawField<'static> {
        RawField {
            key: self.key.into_owned(),
            value: IntoOwned::into_owned(self.value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_map_keeps_order_and_replaces_in_place() {
        let mut m: MetaMap<'_, Text<'_>> = MetaMap::new();
        assert!(m.insert("b", "1".into()).is_none());
        assert!(m.insert("a", "2".into()).is_none());
        assert_eq!(m.insert("b", "3".into()), Some(Text::from("1")));
        let keys: Vec<_> = m.iter().map(|(k, _)| k.to_string()).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(m.get("b").unwrap(), "3");
        assert!(m.get("B").is_none());
        assert_eq!(m.remove("b"), Some(Text::from("3")));
        assert_eq!(m.len(), 1);
        let owned: MetaMap<'static, Text<'static>> = m.into_owned();
        assert_eq!(owned.get("a").unwrap(), "2");
    }

    #[test]
    fn text_accessors() {
        let t = Text::borrowed(b"caf\xc3\xa9");
        assert_eq!(t.as_str(), Some("café"));
        let bad = Text::borrowed(b"\xff");
        assert_eq!(bad.as_str(), None);
        assert_eq!(bad.to_string_lossy(), "\u{fffd}");
        assert_eq!(format!("{:?}", Text::from("x")), "\"x\"");
    }
}

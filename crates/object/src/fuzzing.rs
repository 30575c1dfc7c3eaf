//! Entry points shared by the cargo-fuzz targets in `fuzz/` and the stable
//! corpus regression tests.

use crate::xlmeta::{Journal, XlMeta};

/// `xl.meta` decoding: neither the journal nor the full decoder panics,
/// and re-encoding an accepted file is stable (encode, decode, encode gives
/// the same bytes).
pub fn xl_meta(data: &[u8]) {
    let _ = Journal::decode(data);
    let Ok(meta) = XlMeta::decode(data) else {
        return;
    };
    let Ok(first) = meta.encode() else {
        return;
    };
    let again = XlMeta::decode(&first).expect("an encoded xl.meta decodes");
    let second = again.encode().expect("a decoded xl.meta encodes");
    assert_eq!(first, second);
}

#[cfg(test)]
#[path = "../../../fuzz/corpus.rs"]
mod corpus_files;

#[cfg(test)]
mod tests {
    use super::corpus_files::corpus;

    #[test]
    fn corpus_xl_meta() {
        for input in corpus("xl_meta") {
            super::xl_meta(&input);
        }
    }
}

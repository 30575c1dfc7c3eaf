//! Entry points shared by the cargo-fuzz targets in `fuzz/` and the stable
//! corpus regression tests.

use crate::format::FormatErasureV3;

/// `format.json` parsing: never panics, and an accepted format written
/// back parses to the same value.
pub fn format_json(data: &[u8]) {
    let Ok(format) = FormatErasureV3::from_json(data) else {
        return;
    };
    let again = format.to_json();
    let reparsed = FormatErasureV3::from_json(&again).expect("a written format parses");
    assert_eq!(reparsed, format);
}

#[cfg(test)]
#[path = "../../../fuzz/corpus.rs"]
mod corpus_files;

#[cfg(test)]
mod tests {
    use super::corpus_files::corpus;

    #[test]
    fn corpus_format_json() {
        for input in corpus("format_json") {
            super::format_json(&input);
        }
    }
}

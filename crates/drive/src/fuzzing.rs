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
mod tests {
    /// Every file of `fuzz/corpus/<target>` (the seeds and whatever the
    /// fuzzer found), run through the target's entry point.
    fn corpus(target: &str) -> Vec<Vec<u8>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus")
            .join(target);
        let files: Vec<Vec<u8>> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| {
                std::fs::read(entry.expect("a directory entry").path()).expect("a corpus file")
            })
            .collect();
        assert!(
            files.len() >= 10,
            "{}: only {} files",
            dir.display(),
            files.len()
        );
        files
    }

    #[test]
    fn corpus_format_json() {
        for input in corpus("format_json") {
            super::format_json(&input);
        }
    }
}

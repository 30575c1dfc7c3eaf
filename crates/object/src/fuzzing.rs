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
    fn corpus_xl_meta() {
        for input in corpus("xl_meta") {
            super::xl_meta(&input);
        }
    }
}

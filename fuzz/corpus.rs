//! The seed corpora of `fuzz/corpus/` as the crates' regression tests read
//! them (each crate's `fuzzing` module includes this file by path, so the
//! crates share it without a dependency between them).

/// Every file of `fuzz/corpus/<target>` (the seeds and whatever the fuzzer
/// found and was kept); at least ten, so an emptied corpus fails.
pub fn corpus(target: &str) -> Vec<Vec<u8>> {
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

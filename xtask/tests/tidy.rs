//! Tidy checks of the tree, run as ordinary tests (`cargo test -p xtask
//! --test tidy`, and by `cargo xtask ci` with every other test).
//!
//! They hold the rules that `docs/architecture.md` writes down, so the page
//! and the code cannot drift apart: the crate layering (the table between
//! `<!-- tidy:layering -->` markers), where `unsafe` may appear (the list
//! between `<!-- tidy:unsafe -->` markers), the file-size ceiling, that every
//! repository path the docs name exists, that `docs/benchmarks.md` stays a
//! reference page, and that no comment cites a dated benchmark sitting.
//!
//! The manifests are read line by line rather than with a TOML parser: the
//! workspace writes every dependency as `name = ...` or `name.workspace =
//! true` on one line, and xtask stays free of dependencies.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The longest a Rust source file (library, binary, test or benchmark) may
/// be. A file past it holds more than one job; split it by job.
const MAX_LINES: usize = 1_200;

/// The most `docs/benchmarks.md` may weigh: it is the scorecard and the
/// method; investigations go to `docs/bench-notes/`.
const MAX_BENCHMARKS_PAGE_BYTES: u64 = 30 * 1024;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Every package of the workspace: (package name, its directory).
fn packages() -> Vec<(String, PathBuf)> {
    let root = root();
    let mut dirs: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|e| e.expect("crates/ entry").path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.push(root.join("benches"));
    dirs.push(root.join("xtask"));
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let manifest = read(&dir.join("Cargo.toml"));
            let name = section(&manifest, "package")
                .into_iter()
                .find_map(|line| {
                    let (key, value) = line.split_once('=')?;
                    (key.trim() == "name").then(|| value.trim().trim_matches('"').to_owned())
                })
                .unwrap_or_else(|| panic!("{}: no package name", dir.display()));
            (name, dir)
        })
        .collect()
}

/// The lines of the `[name]` table of a manifest, comments and blanks left
/// out.
fn section<'a>(manifest: &'a str, name: &str) -> Vec<&'a str> {
    let header = format!("[{name}]");
    let mut inside = false;
    let mut lines = Vec::new();
    for line in manifest.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            inside = trimmed == header;
            continue;
        }
        if inside && !trimmed.is_empty() && !trimmed.starts_with('#') {
            lines.push(trimmed);
        }
    }
    lines
}

/// The key of a `key = value` or `key.workspace = true` manifest line.
fn dependency_name(line: &str) -> Option<&str> {
    let (key, _) = line.split_once('=')?;
    Some(key.trim().split('.').next()?.trim())
}

/// The workspace's own crates, as `[workspace.dependencies]` names them
/// (the entries with a `path`).
fn workspace_crates() -> BTreeSet<String> {
    let manifest = read(&root().join("Cargo.toml"));
    section(&manifest, "workspace.dependencies")
        .into_iter()
        .filter(|line| line.contains("path ="))
        .filter_map(dependency_name)
        .map(str::to_owned)
        .collect()
}

/// The text between `<!-- tidy:NAME -->` and `<!-- /tidy:NAME -->` in
/// docs/architecture.md.
fn architecture_block(name: &str) -> String {
    let page = read(&root().join("docs/architecture.md"));
    let open = format!("<!-- tidy:{name} -->");
    let close = format!("<!-- /tidy:{name} -->");
    let start = page
        .find(&open)
        .unwrap_or_else(|| panic!("docs/architecture.md has no {open} block"));
    let end = page[start..]
        .find(&close)
        .unwrap_or_else(|| panic!("docs/architecture.md: {open} is never closed"));
    page[start + open.len()..start + end].to_owned()
}

/// The backticked names in a Markdown table cell.
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The layering table: crate -> the workspace crates it may depend on.
fn allowed_layering() -> BTreeMap<String, BTreeSet<String>> {
    let block = architecture_block("layering");
    let mut table = BTreeMap::new();
    for line in block.lines() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
        if cells.len() < 2 {
            continue;
        }
        let Some(name) = backticked(cells[0]).into_iter().next() else {
            continue; // the header and the separator row
        };
        let allowed: BTreeSet<String> = backticked(cells[1]).into_iter().collect();
        assert!(
            table.insert(name.clone(), allowed).is_none(),
            "docs/architecture.md names `{name}` twice in the layering table"
        );
    }
    table
}

#[test]
fn crate_layering_is_the_one_architecture_md_writes_down() {
    let ours = workspace_crates();
    let table = allowed_layering();
    let mut problems = Vec::new();
    for (name, dir) in packages() {
        let Some(allowed) = table.get(&name) else {
            problems.push(format!(
                "`{name}` has no row in docs/architecture.md's layering table"
            ));
            continue;
        };
        let manifest = read(&dir.join("Cargo.toml"));
        for line in section(&manifest, "dependencies") {
            let Some(dep) = dependency_name(line) else {
                continue;
            };
            if ours.contains(dep) && !allowed.contains(dep) {
                problems.push(format!(
                    "`{name}` depends on `{dep}`, which docs/architecture.md's layering table does not allow"
                ));
            }
        }
    }
    for name in table.keys() {
        if !packages().iter().any(|(p, _)| p == name) {
            problems.push(format!(
                "docs/architecture.md's layering table names `{name}`, which is not a package"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The places where `unsafe` may appear, as docs/architecture.md lists them:
/// a path ending in `/` allows a whole folder, any other path one file.
fn allowed_unsafe_places() -> Vec<String> {
    architecture_block("unsafe")
        .lines()
        .filter(|line| line.trim_start().starts_with('-'))
        .filter_map(|line| backticked(line).into_iter().next())
        .collect()
}

/// Whether a line's code (the part before a `//` comment) uses `unsafe` as a
/// keyword: a block, a function, an impl, a trait or an extern block.
fn uses_unsafe(line: &str) -> bool {
    let code = line.split("//").next().unwrap_or("");
    let mut rest = code;
    while let Some(at) = rest.find("unsafe") {
        let before = rest[..at].chars().next_back();
        let after = rest[at + "unsafe".len()..].trim_start();
        let word_start = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let keyword_use = ["{", "fn", "impl", "trait", "extern"]
            .iter()
            .any(|next| after.starts_with(next));
        if word_start && keyword_use {
            return true;
        }
        rest = &rest[at + "unsafe".len()..];
    }
    false
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn all_rust_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = Vec::new();
    for dir in ["crates", "benches", "xtask"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .expect("under the workspace root")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn unsafe_code_only_where_architecture_md_allows_it() {
    let places = allowed_unsafe_places();
    assert!(
        !places.is_empty(),
        "docs/architecture.md's unsafe list is empty"
    );
    let allowed = |file: &str| {
        places.iter().any(|place| {
            if place.ends_with('/') {
                file.starts_with(place.as_str())
            } else {
                file == place
            }
        })
    };
    let mut problems = Vec::new();
    for file in all_rust_files() {
        let name = relative(&file);
        // This file spells the keyword in the strings it tests itself with.
        if allowed(&name) || file.ends_with("xtask/tests/tidy.rs") {
            continue;
        }
        for (number, line) in read(&file).lines().enumerate() {
            if uses_unsafe(line) {
                problems.push(format!(
                    "{name}:{}: `unsafe` outside the places docs/architecture.md lists",
                    number + 1
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn crates_without_unsafe_forbid_it() {
    let root_manifest = read(&root().join("Cargo.toml"));
    assert!(
        section(&root_manifest, "workspace.lints.rust")
            .iter()
            .any(|line| line.replace(' ', "") == "unsafe_code=\"forbid\""),
        "the workspace lints must forbid unsafe_code"
    );
    let places = allowed_unsafe_places();
    let mut problems = Vec::new();
    for (name, dir) in packages() {
        let prefix = format!("{}/", relative(&dir));
        let may_use_unsafe = places.iter().any(|p| p.starts_with(&prefix));
        let manifest = read(&dir.join("Cargo.toml"));
        if may_use_unsafe {
            // Its own lint table: unsafe blocks documented and scoped.
            let clippy = section(&manifest, "lints.clippy")
                .join("\n")
                .replace(' ', "");
            let rust = section(&manifest, "lints.rust").join("\n").replace(' ', "");
            if !clippy.contains("undocumented_unsafe_blocks=\"deny\"") {
                problems.push(format!(
                    "`{name}` allows unsafe but not deny(undocumented_unsafe_blocks)"
                ));
            }
            if !rust.contains("unsafe_op_in_unsafe_fn=\"deny\"") {
                problems.push(format!(
                    "`{name}` allows unsafe but not deny(unsafe_op_in_unsafe_fn)"
                ));
            }
        } else if !section(&manifest, "lints")
            .iter()
            .any(|line| line.replace(' ', "") == "workspace=true")
        {
            problems.push(format!(
                "`{name}` may not use unsafe but does not take the workspace lints (which forbid it)"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_rust_file_is_over_the_size_ceiling() {
    let mut problems = Vec::new();
    for file in all_rust_files() {
        let lines = read(&file).lines().count();
        if lines > MAX_LINES {
            problems.push(format!(
                "{}: {lines} lines (ceiling {MAX_LINES}): split it by job",
                relative(&file)
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The reference pages whose named paths must exist: the README and every
/// Markdown page under docs/.
fn doc_pages() -> Vec<PathBuf> {
    let root = root();
    let mut pages = vec![root.join("README.md")];
    for dir in ["docs", "docs/bench-notes"] {
        for entry in fs::read_dir(root.join(dir)).expect("docs folder") {
            let path = entry.expect("docs entry").path();
            if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

#[test]
fn every_path_the_docs_name_exists() {
    let root = root();
    let mut problems = Vec::new();
    for page in doc_pages() {
        for name in backticked(&read(&page)) {
            let is_repo_path = [
                "crates/",
                "docs/",
                "xtask/",
                "benches/",
                "tests/",
                "packaging/",
                ".ci/",
            ]
            .iter()
            .any(|top| name.starts_with(top));
            // Globs and placeholders (`crates/*`, `<bucket>`) name no one file.
            if !is_repo_path || name.contains(['*', '<', ' ', '{']) {
                continue;
            }
            let path = name.split(':').next().unwrap_or(&name);
            if !root.join(path).exists() {
                problems.push(format!(
                    "{} names `{name}`, which does not exist",
                    relative(&page)
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn benchmarks_page_is_a_reference_not_a_notebook() {
    let page = root().join("docs/benchmarks.md");
    let bytes = fs::metadata(&page).expect("docs/benchmarks.md").len();
    assert!(
        bytes <= MAX_BENCHMARKS_PAGE_BYTES,
        "docs/benchmarks.md is {bytes} bytes (at most {MAX_BENCHMARKS_PAGE_BYTES}): \
         move investigations to docs/bench-notes/"
    );
}

/// Whether a line cites a dated part of the benchmark documents, such as
/// "benchmarks.md, sitting of 2026-11-20".
fn cites_a_dated_sitting(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let names_the_docs = lower.contains("benchmarks.md") || lower.contains("bench-notes");
    let has_date = lower.as_bytes().windows(10).any(|w| {
        w[..4].iter().all(u8::is_ascii_digit)
            && w[4] == b'-'
            && w[5..7].iter().all(u8::is_ascii_digit)
            && w[7] == b'-'
            && w[8..].iter().all(u8::is_ascii_digit)
    });
    (names_the_docs && has_date) || lower.contains("sitting")
}

#[test]
fn no_comment_cites_a_dated_benchmark_sitting() {
    let mut problems = Vec::new();
    for file in all_rust_files() {
        if file.ends_with("xtask/tests/tidy.rs") {
            continue;
        }
        for (number, line) in read(&file).lines().enumerate() {
            let comment = line.trim_start();
            if (comment.starts_with("//") || comment.starts_with("*"))
                && cites_a_dated_sitting(line)
            {
                problems.push(format!(
                    "{}:{}: a comment cites a dated sitting; say the fact and how to measure it again",
                    relative(&file),
                    number + 1
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checks_see_what_they_check() {
    // Guards against a check that passes because it reads nothing.
    assert!(packages().len() >= 10, "found too few packages");
    assert!(all_rust_files().len() >= 100, "found too few Rust files");
    assert!(workspace_crates().contains("object"));
    assert!(uses_unsafe("    let x = unsafe { f() };"));
    assert!(uses_unsafe("unsafe impl Send for X {}"));
    assert!(uses_unsafe("pub unsafe fn f() {}"));
    assert!(!uses_unsafe("// unsafe { in a comment }"));
    assert!(!uses_unsafe("#![forbid(unsafe_code)]"));
    assert!(!uses_unsafe("let not_unsafe = 1;"));
    assert!(cites_a_dated_sitting(
        "// see docs/benchmarks.md, 2026-11-20 (hot GETs)"
    ));
    assert!(!cites_a_dated_sitting("// see docs/bench-notes/get.md"));
}

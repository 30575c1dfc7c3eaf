//! Error messages name the offending input and say what to do.

use placement::{StorageClass, StorageClassConfig, parse_endpoints};

fn layout_error(args: &[&str], override_count: Option<usize>) -> String {
    match parse_endpoints(args).and_then(|t| t.layout(override_count)) {
        Ok(_) => panic!("{args:?} accepted"),
        Err(e) => e.to_string(),
    }
}

fn assert_mentions(message: &str, parts: &[&str]) {
    for p in parts {
        assert!(message.contains(p), "{message:?} should mention {p:?}");
    }
}

#[test]
fn ellipsis_errors() {
    assert_mentions(
        &layout_error(&["/mnt/disk{1..4}"], None),
        &["/mnt/disk{1..4}", "{N...M}", "three dots"],
    );
    assert_mentions(
        &layout_error(&["/mnt/disk{4...1}"], None),
        &["/mnt/disk{4...1}", "4", "1", "smaller number first"],
    );
    assert_mentions(
        &layout_error(&["/d{1...4}", "/e1"], None),
        &["/e1", "ellipsis"],
    );
}

#[test]
fn drive_errors() {
    assert_mentions(
        &layout_error(&["/d{1...4}", "/d{3...6}"], None),
        &["/d3", "/d{1...4}", "/d{3...6}", "twice"],
    );
    assert_mentions(
        &layout_error(&["/d1", "http://h/d2"], None),
        &["/d1", "http://h/d2", "paths", "URLs"],
    );
    assert_mentions(
        &layout_error(&["http://h1/d", "https://h2/d"], None),
        &["http://h1/d", "https://h2/d", "same scheme"],
    );
    assert_mentions(
        &layout_error(&["10.0.0.1:9000"], None),
        &["10.0.0.1:9000", "http://10.0.0.1:9000/"],
    );
    assert_mentions(
        &layout_error(&["http://h:99999/d"], None),
        &["99999", "1 and 65535"],
    );
    assert_mentions(
        &layout_error(&["ftp://h/d"], None),
        &["ftp", "http:// or https://"],
    );
}

#[test]
fn sizing_errors() {
    assert_mentions(
        &layout_error(&["/d{1...17}"], None),
        &["/d{1...17}", "17 drives", "2 to 16"],
    );
    assert_mentions(
        &layout_error(&["http://h{1...17}/d{1...2}"], None),
        &["34 drives", "[2]", "17 values", "hosts"],
    );
    assert_mentions(
        &layout_error(&["/d{1...60}"], Some(8)),
        &[
            "set drive count 8",
            "60 drives",
            "[2, 3, 4, 5, 6, 10, 12, 15]",
        ],
    );
    assert_mentions(
        &layout_error(&["/d{1...1}"], None),
        &["1 drive", "at least 2"],
    );
}

#[test]
fn parity_errors() {
    let e = StorageClass::parse("EC-2").unwrap_err().to_string();
    assert_mentions(&e, &["EC-2", "EC:<parity>"]);
    let e = StorageClassConfig::resolve(Some(StorageClass::new(9)), None, 16)
        .unwrap_err()
        .to_string();
    assert_mentions(&e, &["9", "at most 8", "16 drives"]);
    let t = parse_endpoints(&["/a{1...16}", "/b{1...4}"]).unwrap();
    let e = t
        .layout(None)
        .unwrap()
        .storage_class_config(None, None)
        .unwrap_err()
        .to_string();
    assert_mentions(&e, &["pool 1", "/b{1...4}", "parity 4", "4 drives"]);
}

//! GETs of objects whose shard files are not in the page cache.

use aws_sdk_s3::primitives::ByteStream;

use super::{body, upload_in_parts};
use crate::support::{Server, data};

/// Drops every file under `dirs` from the page cache (synced first, so its
/// pages are clean): the next reads come from the disk.
fn evict_all(dirs: &[std::path::PathBuf]) {
    let mut stack: Vec<std::path::PathBuf> = dirs.to_vec();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else if let Ok(f) = std::fs::File::open(&path) {
                f.sync_all().unwrap();
                rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
            }
        }
    }
}

/// With `TESSERA_HUGE_FILL=on` (off by default on a guest whose balloon
/// reports free pages), GETs of objects whose shard files are not in the
/// page cache fill it through the drive's huge-folio mappings (whose own
/// tests check the fill): whole and ranged GETs of a single-part and a
/// multipart object read back bit for bit, cold and hot, also with many
/// GETs of one cold object at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cold_gets_with_huge_fills() {
    let srv = Server::start_with_env(4, &[("TESSERA_HUGE_FILL", "on")]);
    let c = srv.client();
    c.create_bucket().bucket("cold").send().await.unwrap();
    let one = data((5 << 20) + 17, 41);
    c.put_object()
        .bucket("cold")
        .key("one")
        .body(ByteStream::from(one.clone()))
        .send()
        .await
        .unwrap();
    let part = 5 << 20;
    let multi = data(part + (3 << 20) + 1, 43);
    upload_in_parts(&c, "cold", "multi", &multi, part).await;

    let get = |key: &'static str, range: Option<String>| {
        let c = c.clone();
        async move {
            let out = c
                .get_object()
                .bucket("cold")
                .key(key)
                .set_range(range)
                .send()
                .await
                .unwrap();
            body(out).await
        }
    };
    for pass in ["cold", "hot"] {
        if pass == "cold" {
            evict_all(&srv.dirs);
        }
        // Ranges inside a record, across the 2 MiB chunks a fill brings
        // in, across the parts, and the tail.
        for (key, d) in [("one", &one), ("multi", &multi)] {
            let len = d.len();
            for (from, to) in [
                (len - 100, len - 1),
                (100, 200),
                ((2 << 20) - 7, (4 << 20) + 7),
                (part - 3, part + 3),
            ] {
                let got = get(key, Some(format!("bytes={from}-{to}"))).await;
                assert!(got == d[from..=to], "{pass} {key} {from}-{to}");
            }
            assert!(get(key, None).await == *d, "{pass} {key} whole");
        }
    }
    evict_all(&srv.dirs);
    let gets: Vec<_> = (0..8).map(|_| tokio::spawn(get("one", None))).collect();
    for g in gets {
        assert!(
            g.await.unwrap() == one,
            "one of 8 GETs at once of a cold object"
        );
    }
}

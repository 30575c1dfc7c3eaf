//! Listings: prefixes, delimiters, pages and continuation tokens.

use aws_sdk_s3::primitives::ByteStream;

use crate::support::{Server, code};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("lst").send().await.unwrap();
    let mut keys = Vec::new();
    for d in ["a", "b", "c/d"] {
        for i in 0..7 {
            keys.push(format!("{d}/k{i:02}"));
        }
    }
    keys.push("top".into());
    keys.push("a-b".into());
    keys.sort();
    for k in &keys {
        c.put_object()
            .bucket("lst")
            .key(k)
            .body(ByteStream::from(k.as_bytes().to_vec()))
            .send()
            .await
            .unwrap();
    }
    // V2, paginated by 4.
    let mut seen = Vec::new();
    let mut token = None;
    loop {
        let page = c
            .list_objects_v2()
            .bucket("lst")
            .max_keys(4)
            .set_continuation_token(token.clone())
            .send()
            .await
            .unwrap();
        assert!(page.contents().len() <= 4);
        assert_eq!(page.key_count(), Some(page.contents().len() as i32));
        seen.extend(page.contents().iter().map(|o| o.key().unwrap().to_owned()));
        if page.is_truncated() != Some(true) {
            break;
        }
        token = page.next_continuation_token().map(str::to_owned);
        assert!(token.is_some());
    }
    assert_eq!(seen, keys);
    // Delimiter and prefix.
    let page = c
        .list_objects_v2()
        .bucket("lst")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    let prefixes: Vec<_> = page
        .common_prefixes()
        .iter()
        .map(|p| p.prefix().unwrap().to_owned())
        .collect();
    assert_eq!(prefixes, ["a/", "b/", "c/"]);
    let objects: Vec<_> = page.contents().iter().map(|o| o.key().unwrap()).collect();
    assert_eq!(objects, ["a-b", "top"]);
    let page = c
        .list_objects_v2()
        .bucket("lst")
        .prefix("c/")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    assert_eq!(page.common_prefixes()[0].prefix(), Some("c/d/"));
    assert!(page.contents().is_empty());
    // Start-after and fetch-owner.
    let page = c
        .list_objects_v2()
        .bucket("lst")
        .start_after("b/k05")
        .fetch_owner(true)
        .send()
        .await
        .unwrap();
    let first = &page.contents()[0];
    assert_eq!(first.key(), Some("b/k06"));
    assert!(first.owner().is_some());
    assert_eq!(first.size(), Some(5));
    // V1 with marker.
    let page = c
        .list_objects()
        .bucket("lst")
        .marker("c/d/k05")
        .send()
        .await
        .unwrap();
    let got: Vec<_> = page.contents().iter().map(|o| o.key().unwrap()).collect();
    assert_eq!(got, ["c/d/k06", "top"]);
    // max-keys=0 and a bad continuation token.
    let page = c
        .list_objects_v2()
        .bucket("lst")
        .max_keys(0)
        .send()
        .await
        .unwrap();
    assert!(page.contents().is_empty());
    let e = c
        .list_objects_v2()
        .bucket("lst")
        .continuation_token("!!!")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    let e = c
        .list_objects_v2()
        .bucket("nope-nope")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
}

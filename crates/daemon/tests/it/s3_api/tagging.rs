//! Object tags: set, read, replace and delete them, and their limits.

use aws_sdk_s3::primitives::ByteStream;

use crate::support::{Server, code, data};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_tagging() {
    use aws_sdk_s3::types::{Tag, Tagging};
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("tagged").send().await.unwrap();
    c.put_object()
        .bucket("tagged")
        .key("o")
        .tagging("team=storage&tier=hot%20data")
        .body(ByteStream::from(data(200_000, 2)))
        .send()
        .await
        .unwrap();
    let got = c
        .get_object_tagging()
        .bucket("tagged")
        .key("o")
        .send()
        .await
        .unwrap();
    let tags: Vec<_> = got
        .tag_set()
        .iter()
        .map(|t| (t.key().to_owned(), t.value().to_owned()))
        .collect();
    assert_eq!(
        tags,
        [
            ("team".to_owned(), "storage".to_owned()),
            ("tier".to_owned(), "hot data".to_owned())
        ]
    );
    let head = c
        .get_object()
        .bucket("tagged")
        .key("o")
        .send()
        .await
        .unwrap();
    assert_eq!(head.tag_count(), Some(2));
    let tagging = |pairs: &[(&str, &str)]| {
        Tagging::builder()
            .set_tag_set(Some(
                pairs
                    .iter()
                    .map(|(k, v)| Tag::builder().key(*k).value(*v).build().unwrap())
                    .collect(),
            ))
            .build()
            .unwrap()
    };
    c.put_object_tagging()
        .bucket("tagged")
        .key("o")
        .tagging(tagging(&[("only", "one & more")]))
        .send()
        .await
        .unwrap();
    let got = c
        .get_object_tagging()
        .bucket("tagged")
        .key("o")
        .send()
        .await
        .unwrap();
    assert_eq!(got.tag_set().len(), 1);
    assert_eq!(got.tag_set()[0].value(), "one & more");
    // The data is untouched by tag edits.
    let body = c
        .get_object()
        .bucket("tagged")
        .key("o")
        .send()
        .await
        .unwrap();
    assert!(body.body.collect().await.unwrap().into_bytes() == data(200_000, 2));
    let many: Vec<(String, String)> = (0..11).map(|i| (format!("k{i}"), "v".into())).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let e = c
        .put_object_tagging()
        .bucket("tagged")
        .key("o")
        .tagging(tagging(&many))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidTag");
    c.delete_object_tagging()
        .bucket("tagged")
        .key("o")
        .send()
        .await
        .unwrap();
    let got = c
        .get_object_tagging()
        .bucket("tagged")
        .key("o")
        .send()
        .await
        .unwrap();
    assert!(got.tag_set().is_empty());
    let e = c
        .get_object_tagging()
        .bucket("tagged")
        .key("missing")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
}

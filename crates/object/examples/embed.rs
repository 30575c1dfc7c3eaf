//! Tessera's object layer embedded in a program, with no HTTP: four local
//! directories as one erasure set (2 data + 2 parity shards), a bucket, an
//! object written, read back, read in part, and read again after two of
//! the four "drives" are wiped.
//!
//! ```text
//! cargo run -p object --example embed -- [DIR]
//! ```
//!
//! DIR (default: a fresh temporary directory) receives `d1` .. `d4` in
//! MinIO's on-disk format: a MinIO server started on `DIR/d{1...4}` serves
//! the same bucket and object.

use std::path::PathBuf;

use object::layer::{GetOptions, LayerOptions, ObjectLayer, PutOptions, Range};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (root, _keep) = match std::env::args().nth(1) {
        Some(d) => (PathBuf::from(d), None),
        None => {
            let t = tempfile::tempdir()?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    let drives: Vec<PathBuf> = (1..=4).map(|i| root.join(format!("d{i}"))).collect();
    let layer = ObjectLayer::open_dirs(&drives, LayerOptions::default()).await?;
    println!(
        "deployment {} on {} drives, {} set(s)",
        layer.deployment_id(),
        drives.len(),
        layer.sets().len()
    );
    if let Err(e) = layer.make_bucket("photos").await {
        println!("make bucket: {e}");
    }

    // 3 MiB of content: three erasure blocks, each split into 2 data and 2
    // parity shards, every shard block behind its HighwayHash-256.
    let body: Vec<u8> = (0..3u32 << 20).map(|i| (i % 251) as u8).collect();
    let info = layer
        .put_object(
            "photos",
            "2026/holiday.raw",
            &mut &body[..],
            &PutOptions {
                size: Some(body.len() as u64),
                content_type: Some("image/x-raw".into()),
                metadata: vec![("X-Amz-Meta-Camera".into(), "tessera-1".into())],
                ..PutOptions::default()
            },
        )
        .await?;
    println!("stored {} bytes, ETag {}", info.size, info.etag);

    let mut out = Vec::new();
    layer
        .get_object(
            "photos",
            "2026/holiday.raw",
            &GetOptions::default(),
            &mut out,
        )
        .await?;
    assert_eq!(out, body);
    println!("read back {} bytes, identical", out.len());

    let mut part = Vec::new();
    let range = Range::From {
        offset: 1_000_000,
        length: Some(100_000),
    };
    layer
        .get_object(
            "photos",
            "2026/holiday.raw",
            &GetOptions {
                version_id: None,
                range: Some(range),
            },
            &mut part,
        )
        .await?;
    assert_eq!(part, &body[1_000_000..1_100_000]);
    println!("range 1000000+100000 read, identical");

    // Lose two of the four drives' data: parity rebuilds the object.
    for d in &drives[..2] {
        let b = d.join("photos");
        std::fs::remove_dir_all(&b)?;
        std::fs::create_dir_all(&b)?;
    }
    let mut again = Vec::new();
    layer
        .get_object(
            "photos",
            "2026/holiday.raw",
            &GetOptions::default(),
            &mut again,
        )
        .await?;
    assert_eq!(again, body);
    println!("read with 2 of 4 drives wiped: identical (rebuilt from parity)");
    let healed = layer
        .heal_object("photos", "2026/holiday.raw", None)
        .await?;
    println!("healed drives {:?}", healed.healed_drives);

    let listed = layer.list_objects("photos", &Default::default()).await?;
    for o in &listed.objects {
        println!("listed {} ({} bytes)", o.key, o.size);
    }
    Ok(())
}

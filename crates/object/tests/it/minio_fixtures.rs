//! Decode and re-encode xl.meta and .metadata.bin files written by a real
//! MinIO server (see testdata/minio/README.md for how they were made).

use crate::support::fixtures::*;
use object::bucketmeta::BucketMetadata;
use object::msgp::MsgTime;
use object::xlmeta::{
    FormatVersion, Journal, META_CONTENT_TYPE, META_INLINE_DATA, ObjectVersion, Version,
    VersionFlags, VersionType, XlMeta,
};

fn uuid(s: &str) -> [u8; 16] {
    *uuid::Uuid::parse_str(s).unwrap().as_bytes()
}

const NULL: [u8; 16] = [0; 16];
const MIB: i64 = 1 << 20;

fn load(object: &str) -> Vec<Vec<u8>> {
    (0..DRIVES).map(|d| xl_meta(d, object)).collect()
}

fn decode_all(files: &[Vec<u8>]) -> Vec<XlMeta<'_>> {
    files.iter().map(|b| XlMeta::decode(b).unwrap()).collect()
}

fn only_object<'m, 'a>(m: &'m XlMeta<'a>) -> &'m ObjectVersion<'a> {
    assert_eq!(m.len(), 1);
    m.versions()[0].version().as_object().unwrap()
}

fn small_txt() -> Vec<u8> {
    b"Tessera inline fixture: the quick brown fox jumps over the lazy dog.\n".repeat(3)
}

#[test]
fn every_fixture_reencodes_byte_identically() {
    for (label, bytes) in all_fixtures() {
        let m = XlMeta::decode(&bytes).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(m.format(), FormatVersion { major: 1, minor: 3 }, "{label}");
        assert_eq!(m.meta_version(), 3, "{label}");
        assert!(!m.inline_repaired(), "{label}");
        let again = m.encode().unwrap();
        assert!(again == bytes, "{label}: re-encoding differs");
        // Re-encoding an owned copy gives the same bytes too.
        assert!(m.clone().into_owned().encode().unwrap() == bytes, "{label}");
    }
}

#[test]
fn derived_headers_match_minio_signatures() {
    // The stored header of every version equals the header we derive from
    // the version body: type, flags, EC counts and, above all, MinIO's
    // signature hash.
    let mut checked = 0;
    for (label, bytes) in all_fixtures() {
        let m = XlMeta::decode(&bytes).unwrap();
        for e in m.versions() {
            assert_eq!(*e.header(), e.version().header(), "{label}");
            checked += 1;
        }
    }
    assert_eq!(checked, (OBJECTS.len() + BUCKET_METAS.len() + 2) * DRIVES);
}

#[test]
fn headers_only_journal_agrees_with_full_decode() {
    for (label, bytes) in all_fixtures() {
        let j = Journal::decode(&bytes).unwrap();
        let m = XlMeta::decode(&bytes).unwrap();
        assert_eq!(j.entries.len(), m.len(), "{label}");
        for (je, e) in j.entries.iter().zip(m.versions()) {
            assert_eq!(je.header, *e.header(), "{label}");
            assert_eq!(je.decode().unwrap(), *e.version(), "{label}");
        }
    }
}

/// The versions with their metadata maps in key order.
fn normalized<'a>(m: &XlMeta<'a>) -> Vec<Version<'a>> {
    m.versions()
        .iter()
        .map(|e| {
            let mut v = e.version().clone();
            if let Some(o) = v.as_object_mut() {
                if let Some(s) = o.meta_sys.as_mut() {
                    s.sort_keys();
                }
                if let Some(u) = o.meta_user.as_mut() {
                    u.sort_keys();
                }
            }
            v
        })
        .collect()
}

#[test]
fn drives_differ_only_in_ec_index_inline_data_and_map_order() {
    let mut identical = 0;
    let mut reordered = 0;
    for obj in OBJECTS.iter().chain(BUCKET_METAS.iter()) {
        let files = load(obj);
        let metas = decode_all(&files);
        for (d, meta) in metas.iter().enumerate() {
            // Each drive stores EcIndex = EcDist[drive position].
            for e in meta.versions() {
                if let Some(o) = e.version().as_object() {
                    assert_eq!(o.ec_index_for_drive(d), Some(o.erasure_index), "{obj} d{d}");
                }
            }
            // Drive 1's copy, re-targeted at drive d, is drive d's file, up
            // to the order of metadata map entries: each drive's copy is
            // marshalled separately from a Go map, in random order.
            let mut m = metas[0].clone();
            m.set_drive_position(d).unwrap();
            *m.inline_mut() = meta.inline().clone();
            let headers =
                |x: &XlMeta<'_>| x.versions().iter().map(|e| *e.header()).collect::<Vec<_>>();
            assert_eq!(headers(&m), headers(meta), "{obj}: drive {d}");
            assert_eq!(normalized(&m), normalized(meta), "{obj}: drive {d}");
            if m.encode().unwrap() == files[d] {
                identical += 1;
            } else {
                reordered += 1;
            }
        }
    }
    // Most copies are byte-identical after re-targeting; the fixtures
    // contain at least one drive whose map order differs (fix/empty, d3).
    assert!(
        identical > 2 * reordered,
        "{identical} identical, {reordered} reordered"
    );
    assert!(reordered > 0);
}

#[test]
fn common_erasure_layout() {
    for obj in OBJECTS.iter().chain(BUCKET_METAS.iter()) {
        for bytes in load(obj) {
            let m = XlMeta::decode(&bytes).unwrap();
            for e in m.versions() {
                let Some(o) = e.version().as_object() else {
                    continue;
                };
                assert_eq!((o.erasure_m, o.erasure_n), (2, 2), "{obj}");
                assert_eq!((e.header().ec_m, e.header().ec_n), (2, 2), "{obj}");
                assert_eq!(o.erasure_block_size, MIB, "{obj}");
                assert_eq!((o.erasure_algorithm, o.checksum_algo), (1, 1), "{obj}");
                let mut dist = o.erasure_dist.clone();
                dist.sort_unstable();
                assert_eq!(dist, [1, 2, 3, 4], "{obj}");
                assert_eq!(o.data_dir.len(), 16);
                assert_ne!(o.data_dir, [0; 16], "{obj}");
                // This MinIO is a development build: "v" is 0.
                assert_eq!(e.version().written_by_version, Some(0), "{obj}");
                // MinIO stores no per-part ETags for these uploads.
                assert_eq!(o.part_etags, None, "{obj}");
                assert!(o.part_indices.is_none());
                assert!(o.unknown.is_empty() && e.version().unknown.is_empty());
                assert_eq!(o.meta_sys.is_some(), o.meta_user.is_some());
            }
        }
    }
}

#[test]
fn empty_object() {
    let files = load("fix/empty");
    let metas = decode_all(&files);
    let o = only_object(&metas[0]);
    assert_eq!(o.version_id, NULL, "unversioned bucket: null version");
    assert_eq!(o.size, 0);
    assert_eq!(o.part_numbers, [1]);
    assert_eq!(o.part_sizes, [0]);
    assert_eq!(o.part_actual_sizes.as_deref(), Some(&[0][..]));
    assert_eq!(o.etag().unwrap(), "d41d8cd98f00b204e9800998ecf8427e");
    assert!(o.inline_data());
    // An empty object still has an (empty) inline entry under "null".
    for m in &metas {
        assert_eq!(m.inline_data(&NULL), Some(&[][..]));
        assert_eq!(m.inline().get("null"), Some(&[][..]));
    }
    let flags = metas[0].versions()[0].header().flags;
    assert!(flags.inline_data() && flags.uses_data_dir() && !flags.free_version());
}

#[test]
fn small_inline_object() {
    let files = load("fix/small.txt");
    let metas = decode_all(&files);
    let o = only_object(&metas[0]);
    assert_eq!(o.size, 207);
    assert_eq!(o.part_sizes, [207]);
    assert_eq!(o.etag().unwrap(), "5e12eb1dc0634ce7b54635b1ae3f250c");
    assert_eq!(o.content_type().unwrap(), "text/plain");
    assert_eq!(o.sys(META_INLINE_DATA), Some(&b"true"[..]));
    let h = metas[0].versions()[0].header();
    assert_eq!(
        h.flags,
        VersionFlags(VersionFlags::USES_DATA_DIR | VersionFlags::INLINE_DATA)
    );
    assert_eq!(reassemble_inline(&metas, &NULL), small_txt());
}

#[test]
fn larger_objects_use_data_dirs() {
    for (obj, size, etag) in [
        (
            "fix/onemib.bin",
            MIB + 1,
            "e4f78f498fb591645649efc1338ee32c",
        ),
        (
            "fix/twenty.bin",
            20 * MIB,
            "bfda3443e1180f919f0b51afc8fa78f7",
        ),
    ] {
        for m in decode_all(&load(obj)) {
            let o = only_object(&m);
            assert_eq!(o.size, size, "{obj}");
            assert_eq!(o.part_numbers, [1], "{obj}");
            assert_eq!(o.part_sizes, [size], "{obj}");
            assert_eq!(o.part_actual_sizes.as_deref(), Some(&[size][..]), "{obj}");
            assert_eq!(o.etag().unwrap(), etag, "{obj}");
            assert_eq!(o.content_type().unwrap(), "application/octet-stream");
            assert!(!o.inline_data() && m.inline().is_empty(), "{obj}");
            assert_eq!(
                m.versions()[0].header().flags,
                VersionFlags(VersionFlags::USES_DATA_DIR)
            );
        }
    }
}

#[test]
fn multipart_object() {
    for m in decode_all(&load("fix/multi.bin")) {
        let o = only_object(&m);
        assert_eq!(o.size, 20 * MIB);
        assert_eq!(o.part_numbers, [1, 2]);
        assert_eq!(o.part_sizes, [16 * MIB, 4 * MIB]);
        assert_eq!(
            o.part_actual_sizes.as_deref(),
            Some(&[16 * MIB, 4 * MIB][..])
        );
        // Multipart ETag: MD5 of the part MD5s, "-" part count.
        assert_eq!(o.etag().unwrap(), "db887c41e185291717b14f3a2c6a627e-2");
        // The completed upload records the total actual size in MetaSys,
        // with MinIO's capitalised key.
        assert_eq!(
            o.sys("X-Minio-Internal-actual-size"),
            Some(&b"20971520"[..])
        );
    }
}

#[test]
fn user_metadata_and_content_type() {
    let files = load("fix/meta.txt");
    let metas = decode_all(&files);
    let o = only_object(&metas[0]);
    assert_eq!(o.user(META_CONTENT_TYPE).unwrap(), "application/json");
    assert_eq!(o.user("X-Amz-Meta-Color").unwrap(), "blue");
    assert_eq!(o.user("X-Amz-Meta-Owner").unwrap(), "tessera");
    assert_eq!(o.etag().unwrap(), "fd0dfd6ca6b12df17299e45a77b9e15b");
    assert_eq!(o.meta_user.as_ref().unwrap().len(), 4);
    assert_eq!(
        reassemble_inline(&metas, &NULL),
        b"{\"hello\":\"metadata\"}\n"
    );
}

#[test]
fn versioned_object_with_delete_marker() {
    let dm = uuid("7d1613d1-5c39-436f-b519-dbc99ce81fe6");
    let v2 = uuid("996d235d-6cf1-44d5-855f-6667d232af0d");
    let v1 = uuid("6399f3c7-d5b7-4fc7-a114-89f73925f2b2");
    let files = load("ver/doc.txt");
    let metas = decode_all(&files);
    for m in &metas {
        let ids: Vec<_> = m.versions().iter().map(|e| e.header().version_id).collect();
        assert_eq!(ids, [dm, v2, v1], "newest first");
        let types: Vec<_> = m
            .versions()
            .iter()
            .map(|e| e.header().version_type)
            .collect();
        assert_eq!(
            types,
            [
                VersionType::DeleteMarker,
                VersionType::Object,
                VersionType::Object
            ]
        );
        let times: Vec<_> = m.versions().iter().map(|e| e.header().mod_time).collect();
        assert!(times.windows(2).all(|w| w[0] > w[1]));

        // The latest version is the delete marker.
        let latest = m.latest().unwrap();
        let d = latest.version().as_delete_marker().unwrap();
        assert_eq!(d.version_id, dm);
        // MinIO writes an empty, non-nil MetaSys for a delete marker.
        assert_eq!(d.meta_sys.as_ref().map(|s| s.len()), Some(0));
        assert_eq!(latest.header().flags, VersionFlags(0));
        assert_eq!((latest.header().ec_m, latest.header().ec_n), (0, 0));

        let o2 = m.find(&v2).unwrap().version().as_object().unwrap();
        assert_eq!(
            (o2.size, o2.etag().unwrap().as_str()),
            (26, Some("93f73fa1a513dca1b1a7a57a9b528e9c"))
        );
        let o1 = m.find(&v1).unwrap().version().as_object().unwrap();
        assert_eq!(
            (o1.size, o1.etag().unwrap().as_str()),
            (12, Some("dd8f100298ff923592ab35dc15788abc"))
        );
        // Inline shards are keyed by the version UUID.
        let keys: Vec<_> = m.inline().iter().map(|(k, _)| k.to_string()).collect();
        assert_eq!(keys.len(), 2);
        assert!(keys.contains(&"996d235d-6cf1-44d5-855f-6667d232af0d".to_owned()));
        assert!(m.inline_data(&dm).is_none());
    }
    assert_eq!(reassemble_inline(&metas, &v1), b"version one\n");
    assert_eq!(
        reassemble_inline(&metas, &v2),
        b"version two, a bit longer\n"
    );
}

#[test]
fn editing_a_minio_file_keeps_the_rest_intact() {
    // Remove the delete marker from MinIO's versioned file: the result is
    // what MinIO would store after deleting that marker (the other entries'
    // bytes are unchanged), and it decodes cleanly.
    let files = load("ver/doc.txt");
    let mut m = XlMeta::decode(&files[0]).unwrap();
    let dm = m.versions()[0].header().version_id;
    m.remove_version(&dm).unwrap();
    let out = m.encode().unwrap();
    let back = XlMeta::decode(&out).unwrap();
    assert_eq!(back.len(), 2);
    let orig = Journal::decode(&files[0]).unwrap();
    let now = Journal::decode(&out).unwrap();
    assert_eq!(now.entries[..], orig.entries[1..]);
    assert_eq!(now.inline, orig.inline);
}

fn bucket_metadata_bin(bucket_object: &str) -> Vec<u8> {
    let files = load(bucket_object);
    let metas = decode_all(&files);
    let o = only_object(&metas[0]);
    assert!(o.inline_data());
    assert_eq!(o.version_id, NULL);
    reassemble_inline(&metas, &NULL)
}

#[test]
fn bucket_metadata_round_trips() {
    for (bucket, obj) in [("fix", BUCKET_METAS[0]), ("ver", BUCKET_METAS[1])] {
        let raw = bucket_metadata_bin(obj);
        // The extracted copy kept in testdata matches what we reassemble.
        let stored =
            std::fs::read(testdata().join(format!("extracted/{bucket}.metadata.bin"))).unwrap();
        assert!(raw == stored, "{bucket}: reassembled .metadata.bin differs");

        let m = BucketMetadata::decode(&raw).unwrap();
        assert_eq!(m.name, bucket);
        assert!(m.created.secs > 1_600_000_000, "{bucket}: {:?}", m.created);
        assert!(!m.lock_enabled);
        assert!(m.unknown.is_empty(), "{bucket}: {:?}", m.unknown);
        assert!(m.encode().unwrap() == raw, "{bucket}: re-encoding differs");
        assert!(m.clone().into_owned().encode().unwrap() == raw);

        let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
        match bucket {
            "fix" => {
                assert!(
                    text(&m.tagging_config_xml).contains("<Key>team</Key><Value>storage</Value>")
                );
                let quota: serde_json::Value =
                    serde_json::from_slice(&m.quota_config_json).unwrap();
                assert_eq!(quota["quota"], 1 << 30);
                let policy: serde_json::Value =
                    serde_json::from_slice(&m.policy_config_json).unwrap();
                assert_eq!(policy["Version"], "2012-10-17");
                // Configured later than creation...
                for t in [
                    m.tagging_config_updated_at,
                    m.policy_config_updated_at,
                    m.quota_config_updated_at,
                ] {
                    assert!(t > m.created);
                }
                // ...while MinIO stamps every other UpdatedAt with the
                // creation time when it creates the bucket.
                assert!(m.versioning_config_xml.is_empty());
                assert_eq!(m.versioning_config_updated_at, m.created);
                assert_eq!(m.lifecycle_config_updated_at, m.created);
            }
            _ => {
                assert!(text(&m.versioning_config_xml).contains("<Status>Enabled</Status>"));
                assert!(m.versioning_config_updated_at.secs >= m.created.secs);
                assert!(m.tagging_config_xml.is_empty() && m.policy_config_json.is_empty());
                assert_eq!(m.policy_config_updated_at, m.created);
                assert_ne!(m.created, MsgTime::GO_ZERO);
            }
        }
    }
}

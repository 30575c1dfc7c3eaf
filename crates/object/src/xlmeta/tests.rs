//! Unit tests of the journal operations and of the older file formats.

use super::*;

const SEC: i64 = 1_000_000_000;

fn id(n: u8) -> [u8; 16] {
    [n; 16]
}

fn object(version_id: [u8; 16], mod_time: i64) -> Version<'static> {
    let mut o = ObjectVersion::new(
        version_id,
        [0xdd; 16],
        mod_time,
        5,
        ErasureParams {
            data_blocks: 2,
            parity_blocks: 2,
            block_size: 1 << 20,
            distribution: vec![3, 4, 1, 2],
        },
    );
    o.push_part(1, 5, 5, None);
    o.set_user(META_ETAG, "5d41402abc4b2a76b9719d911017c592");
    o.set_user(META_CONTENT_TYPE, "text/plain");
    Version::object(o, 0)
}

fn ids(m: &XlMeta<'_>) -> Vec<[u8; 16]> {
    m.versions().iter().map(|e| e.header().version_id).collect()
}

#[test]
fn new_file_round_trips() {
    let mut m = XlMeta::new();
    m.add_version(object(id(1), 10 * SEC)).unwrap();
    m.add_delete_marker(id(2), 20 * SEC, 0).unwrap();
    m.set_inline_data(&id(1), &b"shard"[..]);
    let bytes = m.encode().unwrap();
    assert_eq!(&bytes[..8], b"XL2 \x01\x00\x03\x00");
    let back = XlMeta::decode(&bytes).unwrap();
    assert_eq!(back, m);
    assert_eq!(back.encode().unwrap(), bytes);
    assert_eq!(back.inline_data(&id(1)), Some(&b"shard"[..]));
    assert_eq!(back.format(), FormatVersion { major: 1, minor: 3 });

    let j = Journal::decode(&bytes).unwrap();
    assert_eq!(j.entries.len(), 2);
    assert_eq!(j.entries[0].header, *back.versions()[0].header());
    assert_eq!(
        j.entries[1].decode().unwrap(),
        *back.versions()[1].version()
    );

    // An empty journal is a valid file too.
    let empty = XlMeta::new().encode().unwrap();
    assert!(XlMeta::decode(&empty).unwrap().is_empty());
}

#[test]
fn journal_order_and_latest() {
    let mut m = XlMeta::new();
    m.add_version(object(id(1), 10 * SEC)).unwrap();
    m.add_version(object(id(3), 30 * SEC)).unwrap();
    m.add_version(object(id(2), 20 * SEC)).unwrap();
    assert_eq!(ids(&m), [id(3), id(2), id(1)]);
    // A tie goes before the existing entry, as MinIO's addVersion does.
    m.add_version(object(id(4), 20 * SEC)).unwrap();
    assert_eq!(ids(&m), [id(3), id(4), id(2), id(1)]);
    assert_eq!(m.latest().unwrap().header().version_id, id(3));

    // Replacing with a new time re-sorts.
    let old = m.add_version(object(id(1), 40 * SEC)).unwrap();
    assert!(old.is_some());
    assert_eq!(ids(&m), [id(1), id(3), id(4), id(2)]);

    // A delete marker on top becomes the latest.
    m.add_delete_marker(id(9), 50 * SEC, 0).unwrap();
    let latest = m.latest().unwrap();
    assert_eq!(latest.header().version_type, VersionType::DeleteMarker);
    assert!(latest.version().as_delete_marker().is_some());
}

#[test]
fn null_version_is_overwritten() {
    let null = [0u8; 16];
    let mut m = XlMeta::new();
    m.add_version(object(null, 10 * SEC)).unwrap();
    m.set_inline_data(&null, &b"v1"[..]);
    assert_eq!(m.inline().get("null"), Some(&b"v1"[..]));
    let prev = m.add_version(object(null, 20 * SEC)).unwrap().unwrap();
    assert_eq!(prev.mod_time(), 10 * SEC);
    assert_eq!(m.len(), 1);
    // A null delete marker replaces the null object (unversioned delete).
    m.add_delete_marker(null, 30 * SEC, 0).unwrap();
    assert_eq!(m.len(), 1);
    assert_eq!(
        m.versions()[0].header().version_type,
        VersionType::DeleteMarker
    );
}

#[test]
fn remove_version_drops_inline_and_reports_shared_dirs() {
    let mut m = XlMeta::new();
    m.add_version(object(id(1), 10 * SEC)).unwrap();
    m.add_version(object(id(2), 20 * SEC)).unwrap();
    // Both versions share data dir 0xdd…: removing one must keep the dir.
    assert_eq!(m.shared_data_dir_count(&id(1), &[0xdd; 16]), 1);
    m.set_inline_data(&id(2), &b"x"[..]);
    assert_eq!(m.shared_data_dir_count(&id(2), &[0xdd; 16]), 0);
    let removed = m.remove_version(&id(2)).unwrap();
    assert_eq!(removed.version_id(), id(2));
    assert!(m.inline().is_empty());
    assert_eq!(m.remove_version(&id(2)), Err(Error::VersionNotFound));
    assert_eq!(m.shared_data_dir_count(&id(1), &[0xdd; 16]), 0);
}

#[test]
fn invalid_versions_are_rejected() {
    let mut m = XlMeta::new();
    let mut v = object(id(1), 10 * SEC);
    v.as_object_mut().unwrap().erasure_m = 1; // fewer data than parity shards
    assert!(matches!(m.add_version(v), Err(Error::InvalidVersion(_))));
    assert!(matches!(
        m.add_version(object(id(1), 0)),
        Err(Error::InvalidVersion(_))
    ));
    assert!(matches!(
        m.add_delete_marker(id(2), -5, 0),
        Err(Error::InvalidVersion(_))
    ));
    assert!(m.is_empty());
}

#[test]
fn update_version_rederives_header() {
    let mut m = XlMeta::new();
    m.add_version(object(id(1), 10 * SEC)).unwrap();
    m.add_version(object(id(2), 20 * SEC)).unwrap();
    let sig = m.versions()[1].header().signature;
    m.update_version(&id(1), |v| {
        let o = v.as_object_mut().unwrap();
        o.set_user("X-Amz-Meta-Tag", "new");
        o.mod_time = 30 * SEC;
    })
    .unwrap();
    assert_eq!(ids(&m), [id(1), id(2)]);
    assert_ne!(m.versions()[0].header().signature, sig);
    assert_eq!(
        m.update_version(&id(1), |v| v.as_object_mut().unwrap().version_id = id(7)),
        Err(Error::InvalidVersion(
            "an update may not change the version id"
        ))
    );
    assert_eq!(
        m.update_version(&id(8), |_| {}),
        Err(Error::VersionNotFound)
    );
}

#[test]
fn drive_position_sets_ec_index_only() {
    let mut m = XlMeta::new();
    m.add_version(object(id(1), 10 * SEC)).unwrap();
    m.add_delete_marker(id(2), 20 * SEC, 0).unwrap();
    let headers: Vec<_> = m.versions().iter().map(|e| *e.header()).collect();
    for (drive, want) in [(0, 3), (1, 4), (2, 1), (3, 2)] {
        m.set_drive_position(drive).unwrap();
        let o = m.find(&id(1)).unwrap().version().as_object().unwrap();
        assert_eq!(o.erasure_index, want);
        let now: Vec<_> = m.versions().iter().map(|e| *e.header()).collect();
        assert_eq!(now, headers);
        // The derived header agrees with the stored one.
        assert_eq!(m.find(&id(1)).unwrap().version().header(), headers[1]);
    }
    assert!(m.set_drive_position(4).is_err());
}

#[test]
fn max_versions_enforced_on_add_and_decode() {
    let mut m = XlMeta::new();
    m.set_max_versions(2);
    m.add_version(object(id(1), 10 * SEC)).unwrap();
    m.add_version(object(id(2), 20 * SEC)).unwrap();
    assert!(matches!(
        m.add_version(object(id(3), 30 * SEC)),
        Err(Error::TooManyVersions { count: 3, limit: 2 })
    ));
    // Replacing is still allowed at the cap.
    m.add_version(object(id(2), 25 * SEC)).unwrap();
    let bytes = m.encode().unwrap();
    let limits = Limits { max_versions: 1 };
    assert!(matches!(
        XlMeta::decode_with(&bytes, &limits),
        Err(Error::TooManyVersions { count: 2, limit: 1 })
    ));
}

#[test]
fn header_errors() {
    let good = {
        let mut m = XlMeta::new();
        m.add_version(object(id(1), SEC)).unwrap();
        m.encode().unwrap()
    };
    assert_eq!(
        XlMeta::decode(&good[..8]).unwrap_err(),
        Error::TooShort { len: 8 }
    );
    let mut bad = good.clone();
    bad[0] = b'Y';
    assert!(matches!(XlMeta::decode(&bad), Err(Error::BadMagic { .. })));
    let mut bad = good.clone();
    bad[4] = 2;
    assert_eq!(
        XlMeta::decode(&bad).unwrap_err(),
        Error::UnsupportedVersion { major: 2, minor: 3 }
    );
    let mut bad = good.clone();
    bad[6] = 4;
    assert_eq!(
        XlMeta::decode(&bad).unwrap_err(),
        Error::UnsupportedVersion { major: 1, minor: 4 }
    );
    // A flipped metadata byte fails the CRC.
    let mut bad = good.clone();
    bad[20] ^= 1;
    assert!(matches!(
        XlMeta::decode(&bad),
        Err(Error::CrcMismatch { .. })
    ));
    // Truncation inside the metadata.
    let e = XlMeta::decode(&good[..good.len() - 10]).unwrap_err();
    assert!(e.is_truncated(), "{e:?}");
    // Header and meta versions are range-checked (fix the CRC after editing).
    let with_versions = |hv: u8, mv: u8| {
        let mut b = good.clone();
        b[13] = hv;
        b[14] = mv;
        let meta_len = u32::from_be_bytes([b[9], b[10], b[11], b[12]]) as usize;
        let crc = xxh64(&b[13..13 + meta_len], 0) as u32;
        b[13 + meta_len + 1..13 + meta_len + 5].copy_from_slice(&crc.to_be_bytes());
        b
    };
    assert!(XlMeta::decode(&with_versions(3, 3)).is_ok());
    assert_eq!(
        XlMeta::decode(&with_versions(4, 3)).unwrap_err(),
        Error::UnsupportedHeaderVersion(4)
    );
    assert_eq!(
        XlMeta::decode(&with_versions(0, 3)).unwrap_err(),
        Error::UnsupportedHeaderVersion(0)
    );
    assert_eq!(
        XlMeta::decode(&with_versions(3, 4)).unwrap_err(),
        Error::UnsupportedMetaVersion(4)
    );
    // Older meta versions are kept on re-encode.
    let old = with_versions(3, 1);
    let m = XlMeta::decode(&old).unwrap();
    assert_eq!(m.meta_version(), 1);
    assert_eq!(m.encode().unwrap(), old);
}

/// The `{"Versions": [...]}` map of the formats before 1.3.
fn unindexed_meta(versions: &[Version<'_>]) -> Vec<u8> {
    let mut w = Writer::new();
    w.map_len(2);
    w.str(b"Other");
    w.array_len(1);
    w.int(7);
    w.str(b"Versions");
    w.array_len(versions.len());
    for v in versions {
        v.encode(&mut w);
    }
    w.into_inner()
}

#[test]
fn reads_formats_1_0_to_1_2() {
    let versions = [
        object(id(1), 10 * SEC),
        Version::delete_marker(DeleteMarker::new(id(2), 20 * SEC), 0),
        object(id(3), 15 * SEC),
    ];
    let meta = unindexed_meta(&versions);
    let mut inline = Vec::new();
    let mut d = InlineData::new();
    d.insert("01010101-0101-0101-0101-010101010101", &b"data"[..]);
    d.encode(&mut inline);

    let mut v10 = b"XL2 1   ".to_vec();
    v10.extend_from_slice(&meta);

    let mut w = Writer::with_buffer(b"XL2 \x01\x00\x01\x00".to_vec());
    w.bin(&meta);
    let mut v11 = w.into_inner();
    v11.extend_from_slice(&inline);

    let mut w = Writer::with_buffer(b"XL2 \x01\x00\x02\x00".to_vec());
    w.bin(&meta);
    // 1.2 stores the CRC with msgp's variable-width uint encoding.
    w.uint(u64::from(xxh64(&meta, 0) as u32));
    let mut v12 = w.into_inner();
    v12.extend_from_slice(&inline);

    for (minor, file) in [(0u16, &v10), (1, &v11), (2, &v12)] {
        let m = XlMeta::decode(file).unwrap_or_else(|e| panic!("1.{minor}: {e}"));
        assert_eq!(m.format(), FormatVersion { major: 1, minor });
        assert_eq!(m.meta_version(), 1);
        // Sorted newest first, headers derived from the bodies.
        assert_eq!(ids(&m), [id(2), id(3), id(1)]);
        for e in m.versions() {
            assert_eq!(*e.header(), e.version().header());
        }
        let want_inline = if minor == 0 { None } else { Some(&b"data"[..]) };
        assert_eq!(m.inline_data(&id(1)), want_inline);
        // Re-encoding upgrades to 1.3 and reads back the same.
        let up = m.encode().unwrap();
        let again = XlMeta::decode(&up).unwrap();
        assert_eq!(again.versions(), m.versions());
        assert_eq!(again.format().minor, 3);
    }

    let mut bad = v12.clone();
    let crc_at = 8 + 3 + meta.len();
    bad[crc_at + 1] ^= 0xff;
    assert!(matches!(
        XlMeta::decode(&bad),
        Err(Error::CrcMismatch { .. })
    ));
}

#[test]
fn damaged_inline_data_is_repaired_not_fatal() {
    let mut m = XlMeta::new();
    m.add_version(object(id(1), SEC)).unwrap();
    m.set_inline_data(&id(1), vec![7u8; 100]);
    let bytes = m.encode().unwrap();
    let cut = &bytes[..bytes.len() - 3];
    let d = XlMeta::decode(cut).unwrap();
    assert!(d.inline_repaired());
    assert!(d.inline().is_empty());
    assert_eq!(d.versions(), m.versions());
    assert!(!XlMeta::decode(&bytes).unwrap().inline_repaired());
}

#[test]
fn owned_copy_outlives_buffer() {
    let owned = {
        let mut m = XlMeta::new();
        m.add_version(object(id(1), SEC)).unwrap();
        let bytes = m.encode().unwrap();
        XlMeta::decode(&bytes).unwrap().into_owned()
    };
    assert_eq!(owned.len(), 1);
    assert_eq!(
        owned.versions()[0]
            .version()
            .as_object()
            .unwrap()
            .etag()
            .unwrap(),
        "5d41402abc4b2a76b9719d911017c592"
    );
}

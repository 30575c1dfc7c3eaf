//! Pure parts: the content pattern and its verification, sizes and
//! durations, percentiles, SigV4 against AWS's published examples, XML
//! helpers and the SSE-C key, endpoints, /proc parsing and the doc splice.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tessera_bench::client::Endpoint;
use tessera_bench::harness::{Profile, utc_date};
use tessera_bench::hist::{Histogram, median};
use tessera_bench::pattern::{Pattern, Rng};
use tessera_bench::procstat::{parse_stat_ticks, parse_status_kb};
use tessera_bench::record::{SECTION, splice_doc};
use tessera_bench::s3::{Sse, uri_encode, xml_all, xml_text, xml_unescape};
use tessera_bench::sign::{PayloadHash, Signer};
use tessera_bench::units::{SizeSpec, fmt_size, parse_duration, parse_size};

#[test]
fn pattern_fill_is_offset_addressable() {
    let p = Pattern::new("bucket/key", 100_000, 42);
    let mut whole = vec![0u8; 100_000];
    p.fill(0, &mut whole);
    // Any piece generated on its own equals the same range of the whole.
    for (off, len) in [
        (0, 1),
        (1, 7),
        (3, 8),
        (7, 9),
        (8, 8),
        (13, 1000),
        (99_990, 10),
        (65_533, 17),
    ] {
        let mut piece = vec![0u8; len];
        p.fill(off as u64, &mut piece);
        assert_eq!(piece, whole[off..off + len], "offset {off} len {len}");
        assert_eq!(p.byte(off as u64), whole[off]);
        p.verify(off as u64, &whole[off..off + len]).unwrap();
    }
    p.verify(0, &whole).unwrap();
    // Not constant, not repeating at 8-byte granularity.
    let words: std::collections::HashSet<&[u8]> = whole.chunks_exact(8).collect();
    assert_eq!(words.len(), whole.len() / 8);
}

#[test]
fn pattern_depends_on_key_size_and_seed() {
    let mut a = vec![0u8; 4096];
    let mut b = vec![0u8; 4096];
    Pattern::new("k1", 4096, 1).fill(0, &mut a);
    for other in [
        Pattern::new("k2", 4096, 1),
        Pattern::new("k1", 4097, 1),
        Pattern::new("k1", 4096, 2),
    ] {
        other.fill(0, &mut b);
        assert_ne!(a, b);
        assert!(other.verify(0, &a).is_err());
    }
}

#[test]
fn verify_finds_the_first_wrong_byte() {
    let p = Pattern::new("obj", 10_000, 7);
    let mut data = vec![0u8; 10_000];
    p.fill(0, &mut data);
    for pos in [0usize, 5, 8, 4095, 9_999] {
        let mut d = data.clone();
        d[pos] ^= 0x40;
        let m = p.verify(0, &d).unwrap_err();
        assert_eq!(m.offset, pos as u64);
        assert_eq!(m.got, d[pos]);
        assert_eq!(m.expected, data[pos]);
        // Also when checked in pieces at unaligned offsets.
        let start = pos.saturating_sub(3);
        let m = p
            .verify(start as u64, &d[start..(pos + 5).min(d.len())])
            .unwrap_err();
        assert_eq!(m.offset, pos as u64);
        assert!(m.to_string().contains(&pos.to_string()));
    }
    // A shifted body (an off-by-one server) fails at once.
    assert_eq!(p.verify(0, &data[1..]).unwrap_err().offset, 0);
}

#[test]
fn pattern_tiles_never_repeat() {
    // Words are laid out in 4 KiB tiles: a body whose tiles are swapped,
    // or shifted by exactly one tile, must not verify, and checking in
    // pieces across tile boundaries at odd offsets must agree with the
    // whole.
    let size = 5 * 4096 + 123;
    let p = Pattern::new("tiles", size as u64, 9);
    let mut whole = vec![0u8; size];
    p.fill(0, &mut whole);
    let mut swapped = whole.clone();
    swapped.copy_within(0..4096, 8192);
    swapped[..4096].copy_from_slice(&whole[8192..12288]);
    assert_eq!(p.verify(0, &swapped).unwrap_err().offset, 0);
    assert_eq!(p.verify(4096, &whole[..4096]).unwrap_err().offset, 4096);
    for (off, len) in [(4093, 7), (4095, 4098), (8191, 1), (12_285, 8200)] {
        let mut piece = vec![0u8; len];
        p.fill(off as u64, &mut piece);
        assert_eq!(piece, whole[off..off + len], "offset {off} len {len}");
        p.verify(off as u64, &piece).unwrap();
        // The last byte wrong, past the tile boundary.
        piece[len - 1] ^= 1;
        let m = p.verify(off as u64, &piece).unwrap_err();
        assert_eq!(m.offset, (off + len - 1) as u64);
    }
    // The same place of every tile holds a different word.
    let firsts: std::collections::HashSet<&[u8]> = whole.chunks(4096).map(|t| &t[..8]).collect();
    assert_eq!(firsts.len(), whole.len().div_ceil(4096));
}

#[test]
fn sizes_parse() {
    assert_eq!(parse_size("4096").unwrap(), 4096);
    assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
    assert_eq!(parse_size("1mib").unwrap(), 1 << 20);
    assert_eq!(parse_size("4KiB").unwrap(), 4096);
    assert_eq!(parse_size("4k").unwrap(), 4096);
    assert_eq!(parse_size("1 GiB").unwrap(), 1 << 30);
    assert_eq!(parse_size("10MB").unwrap(), 10_000_000);
    assert_eq!(parse_size("1.5MiB").unwrap(), 3 << 19);
    assert_eq!(parse_size("0").unwrap(), 0);
    for bad in [
        "",
        "MiB",
        "1XB",
        "1.2.3MiB",
        "-1",
        "99999999999999999999",
        "20000000TiB",
        ".",
    ] {
        assert!(parse_size(bad).is_err(), "{bad:?} accepted");
    }
    assert_eq!(fmt_size(1 << 20), "1MiB");
    assert_eq!(fmt_size(4096), "4KiB");
    assert_eq!(fmt_size(1536), "1.5KiB");
    assert_eq!(fmt_size(100), "100B");
}

#[test]
fn size_ranges_parse_and_sample_inside() {
    assert_eq!(SizeSpec::parse("1MiB").unwrap(), SizeSpec::Fixed(1 << 20));
    let r = SizeSpec::parse("4KiB..16MiB").unwrap();
    assert_eq!(
        r,
        SizeSpec::Range {
            lo: 4096,
            hi: 16 << 20
        }
    );
    assert_eq!(r.to_string(), "4KiB..16MiB");
    assert_eq!(
        SizeSpec::parse("1KiB..1KiB").unwrap(),
        SizeSpec::Fixed(1024)
    );
    assert!(SizeSpec::parse("2MiB..1MiB").is_err());
    assert!(SizeSpec::parse("1MiB..x").is_err());
    let mut rng = Rng::new(3);
    let (mut small, mut large) = (0, 0);
    for _ in 0..10_000 {
        let s = r.sample(&mut rng);
        assert!((4096..=16 << 20).contains(&s));
        if s < 64 << 10 {
            small += 1;
        }
        if s > 1 << 20 {
            large += 1;
        }
    }
    // Log-uniform: 4 of the 12 octaves are below 64 KiB, 4 above 1 MiB.
    assert!((2500..4200).contains(&small), "{small}");
    assert!((2500..4200).contains(&large), "{large}");
    let mean = r.mean();
    assert!(mean > 1 << 20 && mean < 2 << 20, "{mean}");
}

#[test]
fn durations_parse() {
    assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
    assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
    assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
    assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
    assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
    assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
    for bad in ["", "s", "10x", "1m30", "25h", "-1s", "1e400"] {
        assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn quantiles_match_exact_percentiles_within_bucket_error() {
    let mut rng = Rng::new(11);
    let mut h = Histogram::new();
    let mut exact = Vec::new();
    for _ in 0..50_000 {
        // Spread over 10 us .. 10 s, log-uniform.
        let v = (10f64 * 1e6f64.powf(rng.next_f64())) as u64;
        h.record(v);
        exact.push(v);
    }
    exact.sort_unstable();
    for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
        let rank = ((q * exact.len() as f64).ceil() as usize).clamp(1, exact.len());
        let want = exact[rank - 1] as f64;
        let got = h.quantile(q) as f64;
        assert!(
            (got - want).abs() <= want / 64.0 + 1.0,
            "q{q}: got {got}, exact {want}"
        );
    }
    assert_eq!(h.max(), *exact.last().unwrap());
    assert_eq!(h.min(), exact[0]);
    assert_eq!(h.count(), 50_000);
}

#[test]
fn quantiles_small_and_edge_cases() {
    let mut h = Histogram::new();
    assert_eq!(h.quantile(0.5), 0);
    for v in 1..=100 {
        h.record(v);
    }
    // Exact below 128 us: nearest rank.
    assert_eq!(h.quantile(0.5), 50);
    assert_eq!(h.quantile(0.9), 90);
    assert_eq!(h.quantile(0.99), 99);
    assert_eq!(h.quantile(1.0), 100);
    let mut g = Histogram::new();
    g.record(u64::MAX);
    g.record(1_000_000);
    let mut m = Histogram::new();
    m.merge(&h);
    m.merge(&g);
    assert_eq!(m.count(), 102);
    assert_eq!(m.max(), tessera_bench::hist::MAX_VALUE);
    let s = h.summary();
    assert_eq!(s.p50_ms, 0.05);
    assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    assert_eq!(median(&[]), None);
}

fn aws_time() -> SystemTime {
    // 20130524T000000Z
    UNIX_EPOCH + Duration::from_secs(1_369_353_600)
}

fn auth(headers: &[(&'static str, String)]) -> String {
    headers
        .iter()
        .find(|(n, _)| *n == "authorization")
        .map(|(_, v)| v.clone())
        .expect("authorization header")
}

/// The examples of AWS's "Signature Calculations for the Authorization
/// Header: Transferring Payload in a Single Chunk" page.
#[test]
fn sigv4_matches_aws_published_examples() {
    let s = Signer::new(
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "us-east-1",
    );
    let host = "examplebucket.s3.amazonaws.com";
    // GET Object.
    let h = s
        .sign(
            "GET",
            "/test.txt",
            &[("host", host), ("range", "bytes=0-9")],
            PayloadHash::Bytes(&[]),
            aws_time(),
        )
        .unwrap()
        .headers;
    let a = auth(&h);
    assert!(a.starts_with(
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request"
    ));
    assert!(
        a.contains("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date"),
        "{a}"
    );
    assert!(
        a.ends_with("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"),
        "{a}"
    );
    assert!(
        h.iter()
            .any(|(n, v)| *n == "x-amz-date" && v == "20130524T000000Z")
    );
    assert!(h.iter().any(|(n, v)| *n == "x-amz-content-sha256"
        && v == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));

    // GET Bucket (List Objects) with a query.
    let h = s
        .sign(
            "GET",
            "/?max-keys=2&prefix=J",
            &[("host", host)],
            PayloadHash::Bytes(&[]),
            aws_time(),
        )
        .unwrap()
        .headers;
    assert!(
        auth(&h).ends_with(
            "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
        ),
        "{}",
        auth(&h)
    );

    // PUT Object with a body and extra headers.
    let h = s
        .sign(
            "PUT",
            "/test%24file.text",
            &[
                ("host", host),
                ("date", "Fri, 24 May 2013 00:00:00 GMT"),
                ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ],
            PayloadHash::Bytes(b"Welcome to Amazon S3."),
            aws_time(),
        )
        .unwrap()
        .headers;
    assert!(
        auth(&h).ends_with(
            "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
        ),
        "{}",
        auth(&h)
    );
}

#[test]
fn sigv4_unsigned_and_precomputed_payloads() {
    let s = Signer::new("minioadmin", "minioadmin", "us-east-1");
    let h = s
        .sign(
            "PUT",
            "/b/k",
            &[("host", "127.0.0.1:9000")],
            PayloadHash::Unsigned,
            aws_time(),
        )
        .unwrap()
        .headers;
    assert!(
        h.iter()
            .any(|(n, v)| *n == "x-amz-content-sha256" && v == "UNSIGNED-PAYLOAD")
    );
    let hash = "a".repeat(64);
    let h = s
        .sign(
            "PUT",
            "/b/k",
            &[("host", "127.0.0.1:9000")],
            PayloadHash::Precomputed(hash.clone()),
            aws_time(),
        )
        .unwrap()
        .headers;
    assert!(
        h.iter()
            .any(|(n, v)| *n == "x-amz-content-sha256" && *v == hash)
    );
    // No host: an error, not a panic.
    assert!(
        s.sign("GET", "/", &[], PayloadHash::Unsigned, aws_time())
            .is_err()
    );
}

#[test]
fn helpers() {
    // The SSE-C key: 32 bytes fixed by the seed, sent with its MD5, both
    // in standard base64 with padding.
    let Sse::C {
        key_b64,
        key_md5_b64,
    } = Sse::customer_key(7)
    else {
        panic!("not an SSE-C key");
    };
    use base64::Engine as _;
    use md5::Digest as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = b64.decode(&key_b64).unwrap();
    assert_eq!(key.len(), 32);
    assert_eq!(b64.encode(&key), key_b64);
    assert_eq!(
        b64.decode(&key_md5_b64).unwrap(),
        md5::Md5::digest(&key).to_vec()
    );
    assert_eq!(Sse::customer_key(7), Sse::customer_key(7));
    assert_ne!(Sse::customer_key(7), Sse::customer_key(8));
    assert_eq!(uri_encode("a b/c~d+e", true), "a%20b/c~d%2Be");
    assert_eq!(uri_encode("a/b", false), "a%2Fb");
    let xml = "<R><IsTruncated>true</IsTruncated><Contents><Key>a&amp;b</Key></Contents>\
               <Contents><Key>c&#x3c;</Key></Contents><NextContinuationToken>t/+=</NextContinuationToken></R>";
    assert_eq!(xml_text(xml, "IsTruncated").as_deref(), Some("true"));
    assert_eq!(xml_all(xml, "Key"), vec!["a&b".to_owned(), "c<".to_owned()]);
    assert_eq!(xml_text(xml, "Missing"), None);
    assert_eq!(
        xml_unescape("&lt;&gt;&quot;&apos;&#65;&bogus;&"),
        "<>\"'A&bogus;&"
    );
}

#[test]
fn endpoints_parse() {
    let e = Endpoint::parse("127.0.0.1:9000", false).unwrap();
    assert_eq!(
        (e.tls, e.authority.as_str(), e.port),
        (false, "127.0.0.1:9000", 9000)
    );
    let e = Endpoint::parse("https://s3.example:8443/", false).unwrap();
    assert_eq!((e.tls, e.host.as_str(), e.port), (true, "s3.example", 8443));
    let e = Endpoint::parse("example.com", true).unwrap();
    assert_eq!((e.tls, e.port), (true, 443));
    let e = Endpoint::parse("[::1]:9000", false).unwrap();
    assert_eq!(
        (e.host.as_str(), e.authority.as_str()),
        ("::1", "[::1]:9000")
    );
    for bad in ["", "ftp://x", "host:port", "http://h/path", ":9000", "[::1"] {
        assert!(Endpoint::parse(bad, false).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn proc_parsing() {
    let stat =
        "1234 (tessera (x) y) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 8 0 100 1000 50";
    assert_eq!(parse_stat_ticks(stat), Some(325));
    assert_eq!(parse_stat_ticks("garbage"), None);
    let status = "Name:\ttessera\nVmHWM:\t  123456 kB\nVmRSS:\t   65432 kB\n";
    assert_eq!(parse_status_kb(status, "VmHWM"), Some(123_456));
    assert_eq!(parse_status_kb(status, "VmRSS"), Some(65_432));
    assert_eq!(parse_status_kb(status, "VmSwap"), None);
    // The probe on this very process.
    let mut p = tessera_bench::procstat::Probe::new(vec![std::process::id()]);
    p.start();
    let mut x = 0u64;
    for i in 0..5_000_000u64 {
        x = x.wrapping_mul(31).wrapping_add(i);
    }
    std::hint::black_box(x);
    let u = p.stop().unwrap();
    assert!(u.cpu_seconds >= 0.0);
    assert!(u.peak_rss_bytes > 0);
    // A group of processes (a cluster's nodes): memory summed over them.
    let mut two = tessera_bench::procstat::Probe::new(vec![std::process::id(); 2]);
    two.start();
    let u2 = two.stop().unwrap();
    assert!(u2.peak_rss_bytes > u.peak_rss_bytes);
}

#[test]
fn doc_splice() {
    let doc = "# Benchmarks\n\n## A\n\ntext\n";
    let once = splice_doc(doc, Profile::Quick, "table 1\n");
    assert!(once.starts_with(doc.trim_end()));
    assert!(once.contains(SECTION));
    assert!(once.contains("<!-- tessera-bench harness quick: begin -->\ntable 1\n<!-- tessera-bench harness quick: end -->"));
    // Replaced in place, other profiles and text kept.
    let twice = splice_doc(&once, Profile::Quick, "table 2");
    assert!(twice.contains("table 2") && !twice.contains("table 1"));
    assert_eq!(twice.matches(SECTION).count(), 1);
    let full = splice_doc(&twice, Profile::Full, "full table");
    assert!(full.contains("table 2") && full.contains("full table"));
    assert_eq!(full.matches(SECTION).count(), 1);
    // A section followed by another one: the block goes inside it.
    let mid = format!("# B\n\n{SECTION}\n\nprose\n\n## Later\n\nmore\n");
    let out = splice_doc(&mid, Profile::Full, "T");
    let t = out.find("\nT\n").unwrap();
    assert!(t > out.find("prose").unwrap() && t < out.find("## Later").unwrap());
}

#[test]
fn dates() {
    assert_eq!(utc_date(aws_time()), "2013-05-24 00:00 UTC");
    assert_eq!(
        utc_date(UNIX_EPOCH + Duration::from_secs(951_782_400 + 3_723)),
        "2000-02-29 01:02 UTC"
    );
}

//! The harness in its quickest form (`harness --smoke`): starts the servers,
//! runs every kind of phase in compare mode, writes the JSON, the run file
//! and the doc block rendered from it. Bodies go as minio-go sends them
//! (`--payload minio-go`: every 64 KiB chunk signed), so MinIO checks the
//! load generator's chunk signatures independently of Tessera. Not a speed test: it asserts that the harness works and that no
//! request failed. MinIO (`$TESSERA_MINIO`, else target/tools/bin/minio,
//! installed by `cargo xtask tools`) is left out only when its binary is
//! absent and `TESSERA_REQUIRE_MINIO` is unset.

mod common;

use common::{bench, show, tessera_bin};

#[test]
fn harness_smoke() {
    let tessera = tessera_bin();
    let minio = std::env::var_os("TESSERA_MINIO")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            tessera_bench::harness::target_dir()
                .join("tools")
                .join("bin")
                .join("minio")
        });
    let with_minio = minio.is_file();
    if !with_minio {
        assert!(
            std::env::var_os("TESSERA_REQUIRE_MINIO").is_none(),
            "TESSERA_REQUIRE_MINIO is set but there is no minio binary at {} \
             (run `cargo xtask tools` or set TESSERA_MINIO)",
            minio.display()
        );
        eprintln!(
            "NOTE: no minio binary at {}: the harness smoke runs Tessera alone",
            minio.display()
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("harness.json");
    let doc = dir.path().join("benchmarks.md");
    std::fs::write(&doc, "# Benchmarks\n\n## Earlier section\n\nkept\n").unwrap();
    let work = dir.path().join("work");
    let mut args = vec![
        "harness".to_owned(),
        "--smoke".into(),
        "--tessera".into(),
        tessera.display().to_string(),
        "--json".into(),
        json.display().to_string(),
        "--write-doc".into(),
        "--doc".into(),
        doc.display().to_string(),
        "--workdir".into(),
        work.display().to_string(),
        "--keep".into(),
        "--payload".into(),
        "minio-go".into(),
    ];
    if with_minio {
        args.push("--minio".into());
        args.push(minio.display().to_string());
    } else {
        args.push("--without-minio".into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = bench(&args);
    assert!(o.status.success(), "{}", show(&o));

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["errors"], 0, "{v:#}");
    let layouts = v["layouts"].as_array().unwrap();
    assert_eq!(layouts.len(), 1);
    let phases = layouts[0]["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 6);
    for p in phases {
        let r = &p["result"];
        assert!(r["a"]["metric"].as_f64().unwrap() > 0.0, "{p:#}");
        assert!(r["a"]["per_cpu"].as_f64().unwrap() > 0.0, "{p:#}");
        assert!(r["a"]["peak_rss_mib"].as_f64().unwrap() > 1.0, "{p:#}");
        if with_minio {
            assert!(r["b"]["metric"].as_f64().unwrap() > 0.0, "{p:#}");
            assert!(r["median_ratio"].as_f64().unwrap() > 0.0, "{p:#}");
        }
    }
    // The run is archived beside the document, and the document's block is
    // rendered from that file.
    let runs = tessera_bench::record::load_all(&dir.path().join("bench-runs")).unwrap();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    let (file, run) = &runs[0];
    assert_eq!(run.profile, tessera_bench::harness::Profile::Smoke);
    assert_eq!(run.source, tessera_bench::record::MEASURED);
    assert_eq!(run.layouts.len(), 1);
    assert_eq!(run.layouts[0].rows.len(), 6);
    for r in &run.layouts[0].rows {
        assert_eq!(r.per_round.len(), 2, "{r:#?}");
        assert!(r.tessera.metric.unwrap() > 0.0, "{r:#?}");
        assert_eq!(r.minio.is_some(), with_minio, "{r:#?}");
    }
    let text = std::fs::read_to_string(&doc).unwrap();
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(text.contains(&format!("(bench-runs/{name})")), "{text}");
    assert!(text.contains("## Earlier section\n\nkept"), "{text}");
    assert!(text.contains(tessera_bench::record::SECTION), "{text}");
    assert!(
        text.contains("<!-- tessera-bench harness smoke: begin -->"),
        "{text}"
    );
    assert!(text.contains("| PUT 1MiB c=2 |"), "{text}");
    // The drives and logs were kept (--keep) in a subdirectory of --workdir.
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("kept "), "{}", show(&o));
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 1);
}

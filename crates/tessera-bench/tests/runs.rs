//! The run archive: a run file renders the table it should, run files
//! survive a parse and a write unchanged, the document's blocks are
//! rendered from the newest run of their profile, and the blocks of
//! docs/benchmarks.md are what docs/bench-runs/ renders.

use std::path::{Path, PathBuf};

use tessera_bench::harness::Profile;
use tessera_bench::record::{self, RunFile};

/// A small run as the harness writes it: one row with its rounds, one
/// that failed.
const RUN: &str = r#"{
  "schema": 1,
  "source": "tessera-bench harness",
  "profile": "scorecard",
  "date": "2026-11-28 10:15 UTC",
  "commit": "abc1234",
  "command": "tessera-bench harness --scorecard --write-doc",
  "machine": {
    "cpu": "AMD EPYC",
    "cpu_family": 26,
    "isa": [
      "avx2",
      "gfni"
    ],
    "kernel": "6.18.44",
    "cores": 2,
    "memory_gib": 24.0
  },
  "tessera": "target/release/tessera, built 2026-11-28 10:00 UTC; workspace HEAD abc1234",
  "minio": "target/tools/bin/minio",
  "total_s": 600.4,
  "layouts": [
    {
      "drives": 4,
      "parity": "EC:2 (2+2)",
      "rounds": 2,
      "seconds_per_run": 6.0,
      "rows": [
        {
          "name": "PUT 16MiB c=8",
          "metric": "MiB/s",
          "tessera": {
            "metric": 818.0,
            "per_cpu": 650.5,
            "p50_ms": 150.24,
            "p99_ms": 210.0,
            "peak_rss_mib": 143.0,
            "errors": 0
          },
          "minio": {
            "metric": 450.7,
            "per_cpu": 320.0,
            "p50_ms": 280.0,
            "p99_ms": 460.0,
            "peak_rss_mib": 433.0,
            "errors": 0
          },
          "ratio": {
            "median": 1.81,
            "min": 1.61,
            "max": 1.96
          },
          "cpu_ratio": {
            "median": 2.03,
            "min": 1.99,
            "max": 2.18
          },
          "p99_ratio": {
            "median": 0.46,
            "min": 0.44,
            "max": 0.48
          },
          "per_round": [
            {
              "round": 1,
              "tessera": {
                "metric": 800.0,
                "per_cpu": 640.0,
                "p50_ms": 150.0,
                "p99_ms": 200.0,
                "peak_rss_mib": 140.0,
                "errors": 0
              },
              "minio": {
                "metric": 497.0,
                "per_cpu": 294.0,
                "p50_ms": 270.0,
                "p99_ms": 450.0,
                "peak_rss_mib": 430.0,
                "errors": 0
              },
              "ratio": 1.61,
              "cpu_ratio": 2.18,
              "p99_ratio": 0.44
            },
            {
              "round": 2,
              "tessera": {
                "metric": 836.0,
                "per_cpu": 661.0,
                "p50_ms": 150.5,
                "p99_ms": 220.0,
                "peak_rss_mib": 143.0,
                "errors": 0
              },
              "minio": {
                "metric": 426.5,
                "per_cpu": 332.2,
                "p50_ms": 290.0,
                "p99_ms": 470.0,
                "peak_rss_mib": 433.0,
                "errors": 0
              },
              "ratio": 1.96,
              "cpu_ratio": 1.99,
              "p99_ratio": 0.48
            }
          ]
        },
        {
          "name": "LIST 10000 keys (ListObjectsV2, 1000/page) c=8",
          "metric": null,
          "rounds": 5,
          "error": "LIST 10000 keys (4 drives): minio: prepare failed | HTTP 507",
          "tessera": {
            "metric": null,
            "per_cpu": null,
            "p50_ms": null,
            "p99_ms": null,
            "peak_rss_mib": null,
            "errors": null
          },
          "minio": null,
          "ratio": {
            "median": null,
            "min": null,
            "max": null
          },
          "cpu_ratio": {
            "median": null,
            "min": null,
            "max": null
          },
          "p99_ratio": {
            "median": null,
            "min": null,
            "max": null
          },
          "per_round": []
        }
      ]
    }
  ]
}
"#;

fn run() -> RunFile {
    serde_json::from_str(RUN).unwrap()
}

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

#[test]
fn a_run_file_renders_its_table() {
    let md = record::markdown(&run(), Some("bench-runs/2026-11-28-abc1234.json"));
    let lines: Vec<&str> = md.lines().collect();
    assert_eq!(
        lines[0],
        "Run 2026-11-28 10:15 UTC (scorecard profile) at `abc1234`, 600 s in all."
    );
    assert!(
        md.contains(
            "from [bench-runs/2026-11-28-abc1234.json](bench-runs/2026-11-28-abc1234.json)"
        )
    );
    assert!(md.contains(
        "Machine: AMD EPYC (CPU family 26), 2 cores, 24 GiB RAM, Linux 6.18.44; avx2 gfni\n"
    ));
    // A measured run says nothing of a source.
    assert!(!md.contains("Source:"));
    assert!(md.contains(
        "#### 4 drives, parity EC:2 (2+2): medians of 2 alternating rounds (6.0 s per run)\n"
    ));
    assert!(
        lines.contains(
            &"| PUT 16MiB c=8 | 818 MiB/s | 451 MiB/s | 1.81x (1.61x-1.96x) | 650.5 | 320.0 \
              | 2.03x (1.99x-2.18x) | 150.2 / 280.0 | 210.0 / 460.0 | 0.46x (0.44x-0.48x) \
              | 143 / 433 | 0 / 0 |"
        ),
        "{md}"
    );
    // A failed row keeps its name and why; `|` cannot break the table.
    assert!(
        lines.contains(
            &"| LIST 10000 keys (ListObjectsV2, 1000/page) c=8 (5 rounds) | FAILED: LIST \
              10000 keys (4 drives): minio: prepare failed / HTTP 507 | | | | | | | | | | |"
        ),
        "{md}"
    );
}

#[test]
fn unknown_figures_render_as_dashes() {
    let mut r = run();
    r.source = "converted from docs/benchmarks.md".into();
    r.minio = None;
    let row = &mut r.layouts[0].rows[0];
    row.minio = None;
    row.tessera.p50_ms = None;
    row.tessera.errors = None;
    row.ratio.min = None;
    row.ratio.max = None;
    let md = record::markdown(&r, None);
    assert!(md.contains("Source: converted from docs/benchmarks.md.\n"));
    assert!(md.contains("MinIO: not run (--without-minio)\n"));
    assert!(
        md.contains(
            "| PUT 16MiB c=8 | 818 MiB/s | - | 1.81x | 650.5 | - | 2.03x (1.99x-2.18x) \
             | - / - | 210.0 / - | 0.46x (0.44x-0.48x) | 143 / - | - / - |"
        ),
        "{md}"
    );
}

#[test]
fn a_run_file_round_trips() {
    let r = run();
    assert_eq!(r.to_json().unwrap(), RUN);
    let again: RunFile = serde_json::from_str(&r.to_json().unwrap()).unwrap();
    assert_eq!(again, r);
}

#[test]
fn the_archived_runs_are_in_their_written_form() {
    let runs = record::load_all(&docs().join("bench-runs")).unwrap();
    assert!(runs.len() >= 4, "{runs:#?}");
    for (path, run) in &runs {
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(run.to_json().unwrap(), text, "{}", path.display());
        assert_eq!(run.schema, record::SCHEMA);
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with(&run.stem()), "{name}: stem {}", run.stem());
    }
}

#[test]
fn the_document_block_is_the_newest_run_and_regenerates_to_itself() {
    let dir = tempfile::tempdir().unwrap();
    let runs_dir = dir.path().join("bench-runs");
    let older = run();
    let mut newer = run();
    newer.date = "2026-11-29 08:00 UTC".into();
    newer.layouts[0].rows[0].tessera.metric = Some(900.0);
    let mut quick = run();
    quick.profile = Profile::Quick;
    quick.date = "2026-11-30 08:00 UTC".into();
    let first = record::save(&runs_dir, &older).unwrap();
    let again = record::save(&runs_dir, &older).unwrap();
    assert_eq!(first.file_name().unwrap(), "2026-11-28-abc1234.json");
    assert_eq!(again.file_name().unwrap(), "2026-11-28-abc1234-2.json");
    record::save(&runs_dir, &newer).unwrap();
    record::save(&runs_dir, &quick).unwrap();

    let doc = dir.path().join("benchmarks.md");
    std::fs::write(
        &doc,
        format!("# Benchmarks\n\n{}\n\nprose\n", record::SECTION),
    )
    .unwrap();
    record::write_doc(&doc, &runs_dir, &[Profile::Scorecard]).unwrap();
    let text = std::fs::read_to_string(&doc).unwrap();
    assert!(
        text.contains("(bench-runs/2026-11-29-abc1234.json)"),
        "{text}"
    );
    assert!(text.contains("| 900 MiB/s |"), "{text}");
    assert!(!text.contains("quick profile"), "{text}");
    assert_eq!(record::blocks_in(&text), [Profile::Scorecard]);

    // Rendering again from the same runs changes nothing.
    let runs = record::load_all(&runs_dir).unwrap();
    let regenerated = record::regenerate(&text, &runs, "bench-runs", &record::blocks_in(&text));
    assert_eq!(regenerated, text);
}

#[test]
fn docs_benchmarks_md_is_rendered_from_docs_bench_runs() {
    let doc = std::fs::read_to_string(docs().join("benchmarks.md")).unwrap();
    let runs = record::load_all(&docs().join("bench-runs")).unwrap();
    let blocks = record::blocks_in(&doc);
    assert!(blocks.contains(&Profile::Scorecard), "no scorecard block");
    let rendered = record::regenerate(&doc, &runs, "bench-runs", &blocks);
    assert!(
        rendered == doc,
        "docs/benchmarks.md's tables differ from what docs/bench-runs/ renders: \
         run `cargo run -p tessera-bench -- doc`"
    );
}

//! Data-driven tests over `testdata/*.txt`.
//!
//! Each file is a list of cases in the style of raft-rs's datadriven tests:
//!
//! ```text
//! # comment
//! command arg key=value ...
//! ----
//! expected output line
//! expected output line
//!
//! next command ...
//! ```
//!
//! Tokens of the command line are separated by spaces. `key=value` tokens
//! (key made of `a-z`, `0-9`, `_`, `-`) are named arguments; `keyhex=...`
//! gives the value of `key` in hexadecimal. Other tokens are positional;
//! `hex:...` gives a positional token in hexadecimal. Errors print as
//! `error: <variant>`.
//!
//! Where the expected values come from is said at the top of each file:
//! `hashing.txt`, `object_placement.txt`, `path_clean.txt` and `host_ip.txt`
//! are written by the Go program in `testdata/gen` with the libraries MinIO
//! uses; the other files restate facts from MinIO's documentation and tests,
//! or were derived by hand from MinIO's rules.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use placement::{
    DistributionAlgo, Error, ParseOptions, StorageClass, StorageClassConfig, Topology,
};

struct Case {
    line: usize,
    command: String,
    expected: String,
}

fn parse_cases(text: &str) -> Vec<Case> {
    let lines: Vec<&str> = text.lines().collect();
    let mut cases = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim().is_empty() || line.starts_with('#') {
            i += 1;
            continue;
        }
        let command = line.to_string();
        let start = i + 1;
        assert_eq!(
            lines.get(i + 1).copied(),
            Some("----"),
            "line {start}: a command must be followed by ----"
        );
        i += 2;
        let mut expected = Vec::new();
        while i < lines.len() && !lines[i].is_empty() {
            expected.push(lines[i]);
            i += 1;
        }
        cases.push(Case {
            line: start,
            command,
            expected: expected.join("\n"),
        });
    }
    cases
}

fn decode_hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length in {s:?}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn encode_hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The Go generator's `keyArg`: readable when printable ASCII without spaces
/// or '=', hex otherwise.
fn key_arg(name: &str, value: &[u8]) -> String {
    let simple = !value.is_empty() && value.iter().all(|&c| c > b' ' && c < 0x7f && c != b'=');
    if simple {
        format!("{name}={}", String::from_utf8_lossy(value))
    } else {
        format!("{name}hex={}", encode_hex(value))
    }
}

struct Args {
    named: Vec<(String, Vec<u8>)>,
    positional: Vec<String>,
}

impl Args {
    fn parse(tokens: &[&str]) -> Args {
        let mut named = Vec::new();
        let mut positional = Vec::new();
        for t in tokens {
            if let Some(h) = t.strip_prefix("hex:") {
                positional.push(String::from_utf8(decode_hex(h)).expect("utf-8"));
                continue;
            }
            match t.split_once('=') {
                Some((k, v))
                    if !k.is_empty()
                        && k.bytes().all(|b| {
                            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                        }) =>
                {
                    match k.strip_suffix("hex") {
                        Some(base) => named.push((base.to_string(), decode_hex(v))),
                        None => named.push((k.to_string(), v.as_bytes().to_vec())),
                    }
                }
                _ => positional.push((*t).to_string()),
            }
        }
        Args { named, positional }
    }

    fn bytes(&self, key: &str) -> Option<&[u8]> {
        self.named
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
    }

    fn str(&self, key: &str) -> Option<String> {
        self.bytes(key)
            .map(|b| String::from_utf8(b.to_vec()).expect("utf-8 argument"))
    }

    fn req(&self, key: &str) -> String {
        self.str(key)
            .unwrap_or_else(|| panic!("missing argument {key}="))
    }

    fn usize(&self, key: &str) -> Option<usize> {
        self.str(key).map(|v| v.parse().expect("number"))
    }

    fn list(&self, key: &str) -> Vec<usize> {
        self.req(key)
            .split(',')
            .map(|v| v.parse().expect("number"))
            .collect()
    }

    fn options(&self) -> ParseOptions {
        ParseOptions {
            working_dir: self.str("cwd"),
            default_port: self.str("port").map(|p| p.parse().expect("port")),
            orchestrated: self.str("orchestrated").as_deref() == Some("true"),
        }
    }
}

fn error_kind(e: &Error) -> String {
    let debug = format!("{e:?}");
    let end = debug.find([' ', '{', '(']).unwrap_or(debug.len());
    format!("error: {}", &debug[..end])
}

fn show<T>(r: Result<T, Error>, f: impl FnOnce(T) -> String) -> String {
    match r {
        Ok(v) => f(v),
        Err(e) => error_kind(&e),
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn run(command: &str) -> String {
    let tokens: Vec<&str> = command.split_whitespace().collect();
    let args = Args::parse(&tokens[1..]);
    match tokens[0] {
        "expand" => show(placement::expand(&args.positional[0]), |v| {
            if args.str("show").as_deref() == Some("summary") {
                format!(
                    "count={} first={} last={}",
                    v.len(),
                    v.first().map_or("", String::as_str),
                    v.last().map_or("", String::as_str)
                )
            } else {
                v.join("\n")
            }
        }),
        "endpoint" => show(
            placement::Endpoint::parse(&args.positional[0], &args.options()),
            |e| {
                if e.is_url() {
                    format!(
                        "canonical={} path={} scheme={} host={} port={} node={}",
                        e.as_str(),
                        e.path(),
                        opt(e.scheme()),
                        opt(e.host()),
                        opt(e.port()),
                        opt(e.node())
                    )
                } else {
                    format!(
                        "canonical={} path={} relative={}",
                        e.as_str(),
                        e.path(),
                        e.is_relative()
                    )
                }
            },
        ),
        "layout" => show(topology(&args), |t| {
            show(t.layout(args.usize("override")), |l| {
                let mut out = format!(
                    "style={:?} pools={} sets={} drives={}",
                    l.style(),
                    l.pools().len(),
                    l.set_count(),
                    l.drive_count()
                );
                for p in l.pools() {
                    let _ = write!(
                        out,
                        "\npool {}: drives={} set_drive_count={} sets={}",
                        p.index(),
                        p.drive_count(),
                        p.set_drive_count(),
                        p.sets().len()
                    );
                    for s in p.sets() {
                        match args.str("show").as_deref() {
                            Some("members") => {
                                let names: Vec<&str> =
                                    s.drives().iter().map(|d| d.endpoint().as_str()).collect();
                                let _ =
                                    write!(out, "\n  set {}: {}", s.set_index(), names.join(" "));
                            }
                            Some("nodes") => {
                                let nodes: Vec<String> = s
                                    .drives_per_node()
                                    .iter()
                                    .map(|(n, c)| format!("{n}={c}"))
                                    .collect();
                                let _ =
                                    write!(out, "\n  set {}: {}", s.set_index(), nodes.join(" "));
                            }
                            _ => {}
                        }
                    }
                }
                out
            })
        }),
        "check-local" => {
            let local: Vec<String> = args.req("local").split(',').map(str::to_string).collect();
            show(topology(&args), |t| {
                show(
                    t.check_local(|e| e.host().is_some_and(|h| local.iter().any(|l| l == h))),
                    |()| "ok".to_string(),
                )
            })
        }
        "layout-parity" => {
            let sc = |k: &str| args.str(k).map(|v| StorageClass::parse(&v).expect("class"));
            show(topology(&args), |t| {
                show(t.layout(None), |l| {
                    show(l.storage_class_config(sc("standard"), sc("rrs")), |c| {
                        let mut out = format!(
                            "standard_parity={} rrs_parity={}",
                            c.standard_parity(),
                            c.rrs_parity()
                        );
                        for p in l.pools() {
                            for class in ["STANDARD", "REDUCED_REDUNDANCY"] {
                                let _ = write!(
                                    out,
                                    "\npool {} {class}: {}",
                                    p.index(),
                                    show(c.erasure_params(class, p.set_drive_count()), |e| {
                                        let q = e.quorum();
                                        format!(
                                            "data={} parity={} read_quorum={} write_quorum={}",
                                            e.data, e.parity, q.read, q.write
                                        )
                                    })
                                );
                            }
                        }
                        out
                    })
                })
            })
        }
        "parity" => {
            let sc = |k: &str| args.str(k).map(|v| StorageClass::parse(&v));
            let n = args.usize("set_drive_count").expect("set_drive_count");
            let standard = match sc("standard").transpose() {
                Ok(v) => v,
                Err(e) => return error_kind(&e),
            };
            let rrs = match sc("rrs").transpose() {
                Ok(v) => v,
                Err(e) => return error_kind(&e),
            };
            show(StorageClassConfig::resolve(standard, rrs, n), |c| {
                ["STANDARD", "REDUCED_REDUNDANCY"]
                    .iter()
                    .map(|class| {
                        format!(
                            "{class} {}",
                            show(c.erasure_params(class, n), |e| {
                                let q = e.quorum();
                                format!(
                                    "data={} parity={} read_quorum={} write_quorum={}",
                                    e.data, e.parity, q.read, q.write
                                )
                            })
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        "default-parity" => args
            .list("drives")
            .iter()
            .map(|&n| format!("{n}: {}", placement::default_parity(n)))
            .collect::<Vec<_>>()
            .join("\n"),
        "storage-class" => show(StorageClass::parse(&args.req("value")), |c| {
            format!("parity={} display={c}", c.parity())
        }),
        "quorum" => {
            let q = placement::Quorum::new(
                args.usize("data").expect("data"),
                args.usize("parity").expect("parity"),
            );
            format!("read={} write={}", q.read, q.write)
        }
        "set-index" => {
            let id = uuid::Uuid::parse_str(&args.req("deployment")).expect("uuid");
            let key = args.bytes("key").expect("key");
            let mut out = format!(
                "siphash64={:016x}\ncrc32={:08x}",
                placement::sip_hash64(key, &id),
                placement::crc32_ieee(key)
            );
            for (name, algo) in [
                ("sipmod", DistributionAlgo::SipModParity),
                ("crcmod", DistributionAlgo::CrcMod),
            ] {
                let cells: Vec<String> = args
                    .list("sets")
                    .iter()
                    .map(|&n| {
                        let i = placement::set_index_for(key, &id, n, algo).expect("set index");
                        // SIPMOD (no +PARITY) hashes the same way.
                        if algo == DistributionAlgo::SipModParity {
                            assert_eq!(
                                placement::set_index_for(key, &id, n, DistributionAlgo::SipMod)
                                    .ok(),
                                Some(i)
                            );
                        }
                        format!("{n}:{i}")
                    })
                    .collect();
                let _ = write!(out, "\n{name} {}", cells.join(" "));
            }
            out
        }
        "hash-order" => {
            let key = args.bytes("key").expect("key");
            args.list("cardinalities")
                .iter()
                .map(|&n| {
                    let order = placement::hash_order(key, n);
                    let mut into = vec![0; n];
                    placement::hash_order_into(key, &mut into);
                    assert_eq!(order, into, "hash_order_into disagrees");
                    let cells: Vec<String> = order.iter().map(usize::to_string).collect();
                    format!("{n}: {}", cells.join(" "))
                })
                .collect::<Vec<_>>()
                .join("\n")
        }
        "object-placement" => {
            let id = uuid::Uuid::parse_str(&args.req("deployment")).expect("uuid");
            let bucket = args.req("bucket");
            let object = args.req("object");
            let set_key = placement::set_key(&object);
            let dist_key = placement::distribution_key(&bucket, &object);
            show(
                placement::object_placement(
                    &bucket,
                    &object,
                    &id,
                    args.usize("sets").expect("sets"),
                    args.usize("drives").expect("drives"),
                    DistributionAlgo::CURRENT,
                ),
                |p| {
                    let cells: Vec<String> = p.distribution.iter().map(usize::to_string).collect();
                    format!(
                        "set-key {}\ndistribution-key {}\nset {}\ndistribution {}",
                        key_arg("key", set_key.as_bytes()),
                        key_arg("key", dist_key.as_bytes()),
                        p.set_index,
                        cells.join(" ")
                    )
                },
            )
        }
        "path-clean" => key_arg("clean", placement::clean_path(&args.req("path")).as_bytes()),
        "is-host-ip" => placement::is_host_ip(&args.req("arg")).to_string(),
        other => panic!("unknown command {other}"),
    }
}

fn topology(args: &Args) -> Result<Topology, Error> {
    placement::parse_endpoints_with(&args.positional, &args.options())
}

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata")
}

fn run_file(name: &str) {
    let path = testdata().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cases = parse_cases(&text);
    assert!(!cases.is_empty(), "{name} has no cases");
    let mut failures = String::new();
    for case in &cases {
        let got = run(&case.command);
        if got != case.expected {
            let _ = write!(
                failures,
                "\n{name}:{} {}\n--- expected\n{}\n--- got\n{}\n",
                case.line, case.command, case.expected, got
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:{failures}",
        failures.matches("--- got").count(),
        cases.len()
    );
}

#[test]
fn ellipses() {
    run_file("ellipses.txt");
}

#[test]
fn endpoints() {
    run_file("endpoints.txt");
}

#[test]
fn layouts() {
    run_file("layout.txt");
}

#[test]
fn errors() {
    run_file("errors.txt");
}

#[test]
fn parity() {
    run_file("parity.txt");
}

#[test]
fn hashing_oracle() {
    run_file("hashing.txt");
}

#[test]
fn object_placement_oracle() {
    run_file("object_placement.txt");
}

#[test]
fn path_clean_oracle() {
    run_file("path_clean.txt");
}

#[test]
fn host_ip_oracle() {
    run_file("host_ip.txt");
}

/// Every fixture file is run by one of the tests above.
#[test]
fn no_orphan_fixture() {
    let known = [
        "ellipses.txt",
        "endpoints.txt",
        "layout.txt",
        "errors.txt",
        "parity.txt",
        "hashing.txt",
        "object_placement.txt",
        "path_clean.txt",
        "host_ip.txt",
    ];
    for entry in std::fs::read_dir(testdata()).expect("testdata") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        if name.ends_with(".txt") {
            assert!(
                known.contains(&name.as_str()),
                "testdata/{name} is not run by any test"
            );
        }
    }
}

#[test]
fn harness_detects_mismatch() {
    // The comparison must be able to fail: a wrong expectation is reported.
    let cases = parse_cases("expand /d{1...2}\n----\n/d1\n/d3\n");
    assert_eq!(cases.len(), 1);
    assert_ne!(run(&cases[0].command), cases[0].expected);
    assert_eq!(run(&cases[0].command), "/d1\n/d2");
}

//! Property tests driven by a seeded generator (`fastrand`).
//!
//! Every iteration has its own seed, printed when it fails; set
//! `PLACEMENT_SEED=<seed>` to replay that one iteration.

use std::panic::{AssertUnwindSafe, catch_unwind};

use placement::{
    DistributionAlgo, DriveSpace, Endpoint, ParseOptions, PoolCandidate, PoolChoice, Quorum,
    StorageClass, StorageClassConfig,
};

/// The property tests' view of `fastrand`'s seeded generator.
struct Gen(fastrand::Rng);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0.u64(..)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        self.0.usize(..n)
    }

    fn range(&mut self, lo: usize, hi_inclusive: usize) -> usize {
        self.0.usize(lo..=hi_inclusive)
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn bytes(&mut self, max_len: usize) -> Vec<u8> {
        let len = self.below(max_len + 1);
        (0..len).map(|_| self.0.u8(..)).collect()
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const BASE_SEED: u64 = 0x0005_eed0_f7e5_5e7a;

/// Runs `iterations` seeded cases of `property`; a failure or a panic reports
/// the seed of the failing case.
fn check(name: &str, iterations: u64, property: impl Fn(&mut Gen) -> Result<(), String>) {
    let seeds: Vec<u64> = match std::env::var("PLACEMENT_SEED") {
        Ok(s) => vec![
            s.trim_start_matches("0x")
                .parse::<u64>()
                .ok()
                .unwrap_or_else(|| {
                    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("PLACEMENT_SEED")
                }),
        ],
        Err(_) => (0..iterations)
            .map(|i| BASE_SEED ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect(),
    };
    for seed in seeds {
        let mut rng = Gen(fastrand::Rng::with_seed(seed));
        match catch_unwind(AssertUnwindSafe(|| property(&mut rng))) {
            Ok(Ok(())) => {}
            Ok(Err(msg)) => panic!("property {name} failed with seed {seed:#x}: {msg}"),
            Err(_) => panic!("property {name} panicked with seed {seed:#x}"),
        }
    }
}

fn random_key(rng: &mut Gen) -> Vec<u8> {
    if rng.chance(50) {
        rng.bytes(64)
    } else {
        format!("bucket-{}/obj/{}", rng.below(1000), rng.next()).into_bytes()
    }
}

#[test]
fn hash_order_is_a_permutation() {
    check("hash_order_is_a_permutation", 2000, |rng| {
        let key = random_key(rng);
        let n = rng.range(1, 64);
        let order = placement::hash_order(&key, n);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        if sorted != (1..=n).collect::<Vec<_>>() {
            return Err(format!(
                "key {key:?}, n {n}: {order:?} is not a permutation of 1..={n}"
            ));
        }
        // A rotation: each next value is the previous plus one, wrapping.
        for w in order.windows(2) {
            if w[1] != w[0] % n + 1 {
                return Err(format!("not a rotation: {order:?}"));
            }
        }
        let mut inverse = vec![0; n];
        if !placement::drives_by_shard(&order, &mut inverse) {
            return Err("drives_by_shard refused a permutation".to_string());
        }
        for (shard, &drive) in inverse.iter().enumerate() {
            if order[drive] != shard + 1 {
                return Err(format!("inverse wrong at shard {shard}"));
            }
        }
        Ok(())
    });
}

#[test]
fn drives_by_shard_refuses_non_permutations() {
    check("drives_by_shard_refuses_non_permutations", 500, |rng| {
        let n = rng.range(1, 16);
        let mut dist: Vec<usize> = (1..=n).collect();
        let i = rng.below(n);
        // Either out of range or a repeat.
        dist[i] = if rng.chance(50) || n == 1 {
            [0, n + 1][rng.below(2)]
        } else {
            dist[(i + 1) % n]
        };
        let mut out = vec![0; n];
        if placement::drives_by_shard(&dist, &mut out) {
            return Err(format!("{dist:?} accepted"));
        }
        Ok(())
    });
}

#[test]
fn set_index_is_below_set_count() {
    check("set_index_is_below_set_count", 3000, |rng| {
        let key = random_key(rng);
        let id = uuid::Uuid::from_u64_pair(rng.next(), rng.next());
        let sets = if rng.chance(90) {
            rng.range(1, 1000)
        } else {
            rng.next() as usize | 1
        };
        for algo in [
            DistributionAlgo::CrcMod,
            DistributionAlgo::SipMod,
            DistributionAlgo::SipModParity,
        ] {
            let i = placement::set_index_for(&key, &id, sets, algo).map_err(|e| e.to_string())?;
            if i >= sets {
                return Err(format!("{algo}: index {i} for {sets} sets"));
            }
        }
        if placement::set_index_for(&key, &id, 0, DistributionAlgo::CURRENT).is_ok() {
            return Err("0 sets accepted".to_string());
        }
        Ok(())
    });
}

#[test]
fn set_index_depends_on_deployment_id_for_sipmod_only() {
    // Over many keys, two ids must disagree somewhere for SIPMOD and never for
    // CRCMOD.
    check("set_index_depends_on_deployment_id", 50, |rng| {
        let a = uuid::Uuid::from_u64_pair(rng.next(), rng.next());
        let b = uuid::Uuid::from_u64_pair(rng.next(), rng.next());
        let mut sip_differs = false;
        for _ in 0..200 {
            let key = random_key(rng);
            let crc =
                |id| placement::set_index_for(&key, id, 16, DistributionAlgo::CrcMod).unwrap();
            if crc(&a) != crc(&b) {
                return Err("CRCMOD depends on the deployment id".to_string());
            }
            let sip = |id| {
                placement::set_index_for(&key, id, 16, DistributionAlgo::SipModParity).unwrap()
            };
            sip_differs |= sip(&a) != sip(&b);
        }
        if sip_differs {
            Ok(())
        } else {
            Err("SIPMOD ignores the deployment id".to_string())
        }
    });
}

/// A random valid pattern, with the lengths of its ranges.
fn random_pattern(rng: &mut Gen) -> (String, Vec<usize>) {
    let literals = [
        "/mnt/disk",
        "http://node",
        ":9000/d",
        "/",
        "-",
        "x",
        "",
        ".example.net/data",
    ];
    let ranges = rng.range(1, 3);
    let mut arg = rng.pick(&literals).to_string();
    let mut lens = Vec::new();
    for _ in 0..ranges {
        let pad = rng.chance(30);
        let (start, end, len) = if rng.chance(20) {
            // Hexadecimal: a one-digit start (same value in both bases) and a
            // letter for the end.
            let s = rng.below(10) as u64;
            let e = rng.range(10, 15) as u64;
            (format!("{s}"), format!("{e:x}"), (e - s + 1) as usize)
        } else {
            let s = rng.below(30) as u64;
            let len = rng.range(1, 12);
            (s.to_string(), (s + len as u64 - 1).to_string(), len)
        };
        let (start, end) = if pad {
            (format!("0{start}"), format!("0{end}"))
        } else {
            (start, end)
        };
        lens.push(len);
        arg.push_str(&format!("{{{start}...{end}}}"));
        let literal: &&str = rng.pick(&literals);
        arg.push_str(literal);
    }
    (arg, lens)
}

#[test]
fn expansion_count_is_product_of_ranges() {
    check("expansion_count_is_product_of_ranges", 1500, |rng| {
        let (arg, lens) = random_pattern(rng);
        let drives = placement::expand(&arg).map_err(|e| format!("{arg}: {e}"))?;
        let product: usize = lens.iter().product();
        if drives.len() != product {
            return Err(format!("{arg}: {} drives, ranges {lens:?}", drives.len()));
        }
        let pattern = placement::EllipsisPattern::parse(&arg).map_err(|e| e.to_string())?;
        let range_lens: Vec<usize> = pattern.ranges().iter().map(|r| r.len()).collect();
        if range_lens != lens {
            return Err(format!(
                "{arg}: range lengths {range_lens:?}, expected {lens:?}"
            ));
        }
        for (i, d) in drives.iter().enumerate() {
            if pattern.get(i).as_deref() != Some(d.as_str()) {
                return Err(format!("{arg}: get({i}) disagrees with expand"));
            }
        }
        if pattern.get(product).is_some() {
            return Err("get past the end".to_string());
        }
        let mut unique = drives.clone();
        unique.sort();
        unique.dedup();
        if unique.len() != drives.len() {
            return Err(format!("{arg}: repeated expansions"));
        }
        // The leftmost range varies fastest: drives 0 and 1 differ in the
        // first range's label only (when it has more than one label).
        if lens[0] > 1 {
            let first = &pattern.ranges()[0];
            let expected1 = format!("{}{}", pattern.literals()[0], first.label(1).unwrap());
            if !drives[1].starts_with(&expected1) {
                return Err(format!(
                    "{arg}: second drive {} should start with {expected1}",
                    drives[1]
                ));
            }
        }
        Ok(())
    });
}

const ALPHABET: &[&str] = &[
    "{",
    "}",
    "...",
    "..",
    ".",
    "/",
    ":",
    "//",
    "[",
    "]",
    "%",
    "%25",
    "@",
    "?",
    "#",
    "=",
    "\\",
    "0",
    "1",
    "9",
    "01",
    "a",
    "f",
    "z",
    "A",
    "-",
    "_",
    "~",
    " ",
    "http",
    "https",
    "://",
    "EC",
    "{1...4}",
    "{0...f}",
    "{4...1}",
    "node",
    "é",
    "鍵",
    "\u{0}",
    "\n",
    "\t",
    "+",
    "18446744073709551615",
    "99999999999999999999",
    "::1",
    "127.0.0.1",
    "9000",
    "65536",
];

fn garbage(rng: &mut Gen) -> String {
    if rng.chance(15) {
        return String::from_utf8_lossy(&rng.bytes(40)).into_owned();
    }
    let parts = rng.below(12);
    (0..parts).map(|_| *rng.pick(ALPHABET)).collect()
}

fn mutate(rng: &mut Gen, s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    for _ in 0..rng.range(1, 4) {
        let pos = rng.below(chars.len() + 1);
        match rng.below(3) {
            0 if pos < chars.len() => {
                chars.remove(pos);
            }
            1 if pos < chars.len() => {
                chars[pos] = rng.pick(ALPHABET).chars().next().unwrap_or('x');
            }
            _ => {
                for c in rng.pick(ALPHABET).chars().rev() {
                    chars.insert(pos, c);
                }
            }
        }
    }
    chars.into_iter().collect()
}

const VALID: &[&str] = &[
    "/mnt/disk{1...8}",
    "http://node{1...4}:9000/mnt/disk{01...16}",
    "https://[::1]:9000/d{1...4}",
    "/d1",
    "./data",
    "http://h{1...2}.rack{1...4}/data{1...18}",
    "EC:2",
];

fn exercise(args: &[String], rng: &mut Gen) {
    let options = ParseOptions {
        working_dir: rng.chance(50).then(|| "/srv".to_string()),
        default_port: rng.chance(50).then_some(9000),
        orchestrated: rng.chance(20),
    };
    for a in args {
        let _ = placement::expand(a);
        let _ = placement::has_ellipses(a);
        let _ = Endpoint::parse(a, &options);
        let _ = placement::clean_path(a);
        let _ = placement::is_host_ip(a);
        let _ = StorageClass::parse(a);
        let _ = placement::StorageClassName::parse(a);
        let _ = DistributionAlgo::from_format_name(a);
        let _ = placement::set_key(a);
        let _ = placement::distribution_key(a, a);
    }
    if let Ok(t) = placement::parse_endpoints_with(args, &options) {
        let override_count = [None, Some(0), Some(rng.below(20))][rng.below(3)];
        if let Ok(layout) = t.layout(override_count) {
            let _ = layout.storage_class_config(None, None);
            let _ = layout.storage_class_config(Some(StorageClass::new(rng.below(10))), None);
        }
        let _ = t.check_local(|e| e.port() == Some(9000));
    }
}

#[test]
fn garbage_never_panics() {
    check("garbage_never_panics", 4000, |rng| {
        let count = rng.range(1, 3);
        let args: Vec<String> = (0..count)
            .map(|_| {
                if rng.chance(50) {
                    garbage(rng)
                } else {
                    let base = rng.pick(VALID).to_string();
                    mutate(rng, &base)
                }
            })
            .collect();
        exercise(&args, rng);
        Ok(())
    });
}

#[test]
fn layouts_are_consistent() {
    check("layouts_are_consistent", 600, |rng| {
        let nodes = rng.range(1, 9);
        let per_node = rng.range(1, 20);
        let arg = format!("http://node{{1...{nodes}}}:9000/mnt/disk{{1...{per_node}}}");
        let topology = placement::parse_endpoints(&[arg.as_str()]).map_err(|e| e.to_string())?;
        let override_count = if rng.chance(25) {
            Some(rng.range(2, 16))
        } else {
            None
        };
        let Ok(layout) = topology.layout(override_count) else {
            return Ok(());
        };
        let total = nodes * per_node;
        let pool = &layout.pools()[0];
        let size = pool.set_drive_count();
        if !(2..=16).contains(&size) || total % size != 0 || pool.sets().len() * size != total {
            return Err(format!("{arg}: size {size} for {total} drives"));
        }
        if let Some(o) = override_count {
            if size != o {
                return Err(format!("{arg}: override {o} gave {size}"));
            }
        } else {
            let sym = if nodes > size {
                nodes % size == 0
            } else {
                size % nodes == 0
            };
            if !sym {
                return Err(format!(
                    "{arg}: size {size} not symmetric over {nodes} nodes"
                ));
            }
            // No larger symmetric divisor exists.
            for bigger in size + 1..=16 {
                let s = if nodes > bigger {
                    nodes % bigger == 0
                } else {
                    bigger % nodes == 0
                };
                if total % bigger == 0 && s {
                    return Err(format!("{arg}: {bigger} would fit, chose {size}"));
                }
            }
        }
        // Drives in expansion order, each once, indices consistent.
        let expanded = placement::expand(&arg).map_err(|e| e.to_string())?;
        let laid: Vec<&str> = layout.drives().map(|d| d.endpoint().as_str()).collect();
        if laid != expanded {
            return Err(format!("{arg}: layout order differs from expansion order"));
        }
        for (i, d) in layout.drives().enumerate() {
            if d.set_index() != i / size || d.drive_index() != i % size || d.pool_index() != 0 {
                return Err(format!(
                    "{arg}: drive {i} has indices {}/{}",
                    d.set_index(),
                    d.drive_index()
                ));
            }
        }
        Ok(())
    });
}

#[test]
fn quorums_overlap() {
    check("quorums_overlap", 500, |rng| {
        let n = rng.range(1, 32);
        let parity = rng.below(n / 2 + 1);
        let q = Quorum::new(n - parity, parity);
        // Any write quorum and any read quorum share a drive; two write
        // quorums share a drive.
        if q.read + q.write <= n || 2 * q.write <= n {
            return Err(format!("n {n} parity {parity}: {q:?}"));
        }
        if q.write > n {
            return Err(format!("n {n} parity {parity}: write quorum above n"));
        }
        Ok(())
    });
}

#[test]
fn resolved_parity_fits_sets() {
    check("resolved_parity_fits_sets", 800, |rng| {
        let n = rng.range(1, 16);
        let sc = |rng: &mut Gen| rng.chance(60).then(|| StorageClass::new(rng.below(10)));
        let (standard, rrs) = (sc(rng), sc(rng));
        if let Ok(c) = StorageClassConfig::resolve(standard, rrs, n) {
            if n > 2 && (c.standard_parity() > n / 2 || c.rrs_parity() > n / 2) {
                return Err(format!("n {n}: {c:?} accepted"));
            }
            if c.standard_parity() > 0 && c.rrs_parity() > 0 && c.standard_parity() < c.rrs_parity()
            {
                return Err(format!("n {n}: {c:?} accepted"));
            }
        }
        Ok(())
    });
}

fn random_drive(rng: &mut Gen) -> Option<DriveSpace> {
    if rng.chance(10) {
        return None;
    }
    let total = rng.next() >> rng.range(20, 40);
    let used = if total == 0 {
        0
    } else {
        rng.next() % (total + 1)
    };
    Some(DriveSpace {
        total_bytes: total,
        used_bytes: used,
        free_bytes: total - used,
        free_inodes: rng.next() % 1_000_000,
        used_inodes: rng.next() % 10,
    })
}

#[test]
fn chosen_pool_can_take_the_object() {
    check("chosen_pool_can_take_the_object", 1500, |rng| {
        let pool_count = rng.range(1, 5);
        let drives: Vec<Vec<Option<DriveSpace>>> = (0..pool_count)
            .map(|_| {
                let n = rng.range(1, 16);
                (0..n).map(|_| random_drive(rng)).collect()
            })
            .collect();
        let pools: Vec<PoolCandidate<'_>> = drives
            .iter()
            .map(|d| PoolCandidate {
                set_count: rng.range(1, 64),
                set_drives: d,
                accepts_new_objects: rng.chance(85),
            })
            .collect();
        let choice = PoolChoice {
            object_size_bytes: if rng.chance(10) {
                -1
            } else {
                (rng.next() >> rng.range(24, 60)) as i64
            },
            meta_bucket: rng.chance(10),
            single_drive: rng.chance(10),
            random: rng.next(),
        };
        let weights = placement::pool_weights(&pools, &choice);
        match placement::choose_pool(&pools, &choice) {
            Ok(i) if pool_count > 1 => {
                if weights[i] == 0 || !pools[i].accepts_new_objects {
                    return Err(format!("chose pool {i} with weights {weights:?}"));
                }
                // Pure: the same inputs give the same pool.
                if placement::choose_pool(&pools, &choice) != Ok(i) {
                    return Err("not deterministic".to_string());
                }
            }
            Ok(_) => {}
            Err(_) if pool_count > 1 => {
                if weights.iter().any(|&w| w > 0) {
                    return Err(format!("refused with weights {weights:?}"));
                }
            }
            Err(_) => {}
        }
        Ok(())
    });
}

#[test]
fn pool_draw_is_proportional() {
    // Sweeping the draw over the whole range picks each pool in proportion to
    // its weight, exactly.
    check("pool_draw_is_proportional", 200, |rng| {
        let pool_count = rng.range(2, 4);
        let drives: Vec<[Option<DriveSpace>; 4]> = (0..pool_count)
            .map(|_| {
                let total = (rng.range(1, 50) as u64) << 30;
                [Some(DriveSpace {
                    total_bytes: total,
                    used_bytes: 0,
                    free_bytes: total,
                    free_inodes: 1 << 20,
                    used_inodes: 1,
                }); 4]
            })
            .collect();
        let pools: Vec<PoolCandidate<'_>> = drives
            .iter()
            .map(|d| PoolCandidate {
                set_count: 1,
                set_drives: d,
                accepts_new_objects: true,
            })
            .collect();
        let mut choice = PoolChoice {
            object_size_bytes: 1024,
            meta_bucket: false,
            single_drive: false,
            random: 0,
        };
        let weights = placement::pool_weights(&pools, &choice);
        let total: u64 = weights.iter().sum();
        let unit = 1u64 << 30;
        let mut counts = vec![0u64; pool_count];
        let mut r = 0;
        while r < total {
            choice.random = r;
            counts[placement::choose_pool(&pools, &choice).map_err(|e| e.to_string())?] += 1;
            r += unit;
        }
        let expected: Vec<u64> = weights.iter().map(|w| w / unit).collect();
        if counts != expected {
            return Err(format!("counts {counts:?}, weights/GiB {expected:?}"));
        }
        Ok(())
    });
}

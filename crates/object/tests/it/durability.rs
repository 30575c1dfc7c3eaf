//! Durability: a crashed writer (`kill -9` in the middle of a storm of PUTs
//! and deletes), a hung drive, and random operation sequences checked
//! against an in-memory model after every step.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{Fault, FaultyDrive, data, dirs, get, staging_leftovers};
use drive::{DeadlineConfig, DeadlineDrive, Drive};
use object::layer::{Error, LayerOptions, ListOptions, ObjectLayer, PutOptions, VersionSel};
use uuid::Uuid;

fn body_for(key: &str, generation: u64) -> Vec<u8> {
    // Sizes cycle through inline, one block and several blocks.
    let sizes = [0usize, 17, 5000, 300_000, (1 << 20) + 7, 2_600_000];
    let h = key.bytes().fold(generation, |a, b| {
        a.wrapping_mul(31).wrapping_add(u64::from(b))
    });
    let len = sizes[(h % sizes.len() as u64) as usize];
    data(len, h)
}

/// Whether the crash writer's operation `generation` is a multipart upload.
fn is_multipart(generation: u64) -> bool {
    generation % 7 == 3
}

/// The parts of the multipart upload of (`key`, `generation`): 5 MiB, then
/// a short last part.
fn parts_for(key: &str, generation: u64) -> Vec<Vec<u8>> {
    let first = data(5 << 20, generation);
    let mut last = body_for(key, generation);
    last.push(generation as u8);
    vec![first, last]
}

/// The content the crash writer stores for (`key`, `generation`).
fn content_for(key: &str, generation: u64) -> Vec<u8> {
    if is_multipart(generation) {
        parts_for(key, generation).concat()
    } else {
        body_for(key, generation)
    }
}

const CRASH_ENV: &str = "TESSERA_CRASH_WRITER_ROOT";

/// What the parent learned from the crash writer's output: per key, the
/// last acknowledged state (`Some(generation)` stored, `None` deleted) and
/// the operation begun but not acknowledged (at most one per key: the
/// writer serialises operations on a key).
#[derive(Default)]
struct StormLog {
    acked: BTreeMap<String, Option<u64>>,
    pending: BTreeMap<String, Option<u64>>,
    acks: usize,
    multipart_acks: usize,
}

impl StormLog {
    fn line(&mut self, line: &str) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        match parts.as_slice() {
            ["BEGIN", op, key, generation] => {
                let g: u64 = generation.parse().unwrap();
                let state = if *op == "del" { None } else { Some(g) };
                self.pending.insert(key.to_string(), state);
            }
            ["ACK", op, key, generation] => {
                let g: u64 = generation.parse().unwrap();
                let state = if *op == "del" { None } else { Some(g) };
                self.acked.insert(key.to_string(), state);
                self.pending.remove(*key);
                self.acks += 1;
                if *op == "mpu" {
                    self.multipart_acks += 1;
                }
            }
            _ => {}
        }
    }
}

/// The child side of the crash test: PUTs, multipart uploads and deletes
/// forever, printing
/// `ACK <op> <key> <generation>` after each acknowledged operation.
fn crash_writer(root: &Path) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let l = Arc::new(
            ObjectLayer::open_dirs(&dirs(root, 4), LayerOptions::default())
                .await
                .unwrap(),
        );
        let _ = l.make_bucket("crash").await;
        println!("READY");
        // Four concurrent writers over 12 keys. One operation per key at a
        // time, its ACK printed before the next starts, so the order of the
        // ACK lines is the order in which the store applied them.
        let key_locks: Arc<Vec<tokio::sync::Mutex<()>>> =
            Arc::new((0..12).map(|_| tokio::sync::Mutex::new(())).collect());
        let mut tasks = Vec::new();
        for w in 0..4u64 {
            let l = l.clone();
            let key_locks = key_locks.clone();
            tasks.push(tokio::spawn(async move {
                let mut generation = w * 1_000_000;
                loop {
                    generation += 1;
                    let slot = ((generation * 7 + w) % 12) as usize;
                    let key = format!("k{slot}");
                    let _serial = key_locks[slot].lock().await;
                    if generation % 5 == 0 {
                        println!("BEGIN del {key} {generation}");
                        if l.delete_object("crash", &key, None).await.is_ok() {
                            println!("ACK del {key} {generation}");
                        }
                    } else if is_multipart(generation) {
                        println!("BEGIN mpu {key} {generation}");
                        let r: Result<(), Error> = async {
                            let id = l
                                .create_multipart_upload("crash", &key, &PutOptions::default())
                                .await?;
                            let mut done = Vec::new();
                            for (i, p) in parts_for(&key, generation).iter().enumerate() {
                                let n = i as i64 + 1;
                                let up = l
                                    .upload_part("crash", &key, &id, n, &mut &p[..], None)
                                    .await?;
                                done.push((n, up.etag));
                            }
                            l.complete_multipart_upload("crash", &key, &id, &done)
                                .await
                                .map(|_| ())
                        }
                        .await;
                        if r.is_ok() {
                            println!("ACK mpu {key} {generation}");
                        }
                    } else {
                        let body = body_for(&key, generation);
                        let opts = PutOptions {
                            size: Some(body.len() as u64),
                            ..Default::default()
                        };
                        // Start the line before the PUT: the parent knows it
                        // may be in flight when killed.
                        println!("BEGIN put {key} {generation}");
                        if l.put_object("crash", &key, &mut &body[..], &opts)
                            .await
                            .is_ok()
                        {
                            println!("ACK put {key} {generation}");
                        }
                    }
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
}

/// This module's path as the test harness names its tests (without the
/// crate's name): the crash writer reruns this binary on one exact test.
fn test_module() -> &'static str {
    module_path!().split_once("::").map_or("", |(_, m)| m)
}

#[test]
fn kill_9_mid_storm_loses_no_acknowledged_write() {
    if let Ok(root) = std::env::var(CRASH_ENV) {
        crash_writer(Path::new(&root));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut multipart_acks = 0;
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                &format!(
                    "{}::kill_9_mid_storm_loses_no_acknowledged_write",
                    test_module()
                ),
                "--nocapture",
            ])
            .env(CRASH_ENV, tmp.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let mut lines = BufReader::new(out).lines();
        let mut log = StormLog::default();
        let started = Instant::now();
        let kill_after = 40 + round * 25;
        for line in lines.by_ref() {
            log.line(&line.unwrap());
            if log.acks >= kill_after || started.elapsed() > Duration::from_secs(60) {
                break;
            }
        }
        // SIGKILL: no destructors, no flushing.
        child.kill().unwrap();
        child.wait().unwrap();
        // Lines the child printed before dying but we did not read yet are
        // acknowledged operations too.
        for line in lines.map_while(Result::ok) {
            log.line(&line);
        }
        let acks = log.acks;
        multipart_acks += log.multipart_acks;
        let (acked, pending) = (log.acked, log.pending);
        assert!(acks >= 10, "the writer made progress before the kill");

        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let l = ObjectLayer::open_dirs(&dirs(tmp.path(), 4), LayerOptions::default())
                .await
                .unwrap();
            for (key, state) in &acked {
                let got = get(&l, "crash", key).await;
                // Allowed: the last acknowledged state, or the result of
                // the one operation on the key in flight at the kill
                // (complete, never a mixture).
                let want = |st: &Option<u64>| st.map(|g| content_for(key, g));
                let mut allowed = vec![want(state)];
                if let Some(p) = pending.get(key) {
                    allowed.push(want(p));
                }
                let got = match got {
                    Ok(bytes) => Some(bytes),
                    Err(Error::NoSuchKey { .. }) => None,
                    Err(e) => {
                        panic!("round {round}: acknowledged {key} ({state:?}) unreadable: {e}")
                    }
                };
                assert!(
                    allowed.contains(&got),
                    "round {round}: {key}: store holds {:?} bytes, acknowledged state {state:?}, \
                     in flight {:?}",
                    got.as_ref().map(Vec::len),
                    pending.get(key)
                );
            }
            // Every listed key reads back whole.
            let listed = l
                .list_objects("crash", &ListOptions::default())
                .await
                .unwrap();
            for o in &listed.objects {
                let bytes = get(&l, "crash", &o.key).await.unwrap();
                assert_eq!(bytes.len() as u64, o.size, "{} listed size", o.key);
            }
            // The temp area was cleaned at open.
            for d in dirs(tmp.path(), 4) {
                let left = staging_leftovers(&d);
                assert!(left.is_empty(), "round {round}: temp leftovers {left:?}");
            }
        });
    }
    assert!(multipart_acks > 0, "the storm completed multipart uploads");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_drive_does_not_hang_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let mut hangers = Vec::new();
    let mut drives: Vec<Arc<dyn Drive>> = Vec::new();
    for d in dirs(tmp.path(), 4) {
        let h = FaultyDrive::open(&d).await;
        hangers.push(h.clone());
        let deadline = DeadlineDrive::new(
            h as Arc<dyn Drive>,
            DeadlineConfig::new(Duration::from_millis(300), 3, Duration::from_secs(60)),
        );
        drives.push(Arc::new(deadline));
    }
    let l = ObjectLayer::open(drives, LayerOptions::default())
        .await
        .unwrap();
    l.make_bucket("hang").await.unwrap();
    let big = body_for("big", 1);
    let body = vec![5u8; 3 << 20];
    l.put_object("hang", "before", &mut &body[..], &PutOptions::default())
        .await
        .unwrap();
    hangers[2].set(Fault::Hang);
    // Without the deadline these would wait for the hung drive forever.
    let ops = async {
        l.put_object("hang", "during", &mut &big[..], &PutOptions::default())
            .await
            .unwrap();
        assert_eq!(get(&l, "hang", "during").await.unwrap(), big);
        assert_eq!(get(&l, "hang", "before").await.unwrap(), body);
        l.head_object("hang", "before", None).await.unwrap();
        l.list_objects("hang", &ListOptions::default())
            .await
            .unwrap();
        l.delete_object("hang", "before", None).await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(20), ops)
        .await
        .expect("operations with a hung drive did not finish: the deadline did not apply");
    hangers[2].set(Fault::None);
}

/// A version in the model: its id and its body (`None`: a delete marker).
type ModelVersion = (Option<Uuid>, Option<Vec<u8>>);

/// Random operation sequences on 4, 6, 8 and 16 drives against a model,
/// checked after every step; drives are wiped and healed along the way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_operations_match_a_model() {
    let seed: u64 = std::env::var("TESSERA_MODEL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("model test seed {seed} (TESSERA_MODEL_SEED to replay)");
    let mut rng = seed | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for n in [4usize, 6, 8, 16] {
        let tmp = tempfile::tempdir().unwrap();
        let ds = dirs(tmp.path(), n);
        let l = ObjectLayer::open_dirs(&ds, LayerOptions::default())
            .await
            .unwrap();
        let parity = l.sets()[0].default_parity();
        l.make_bucket("model").await.unwrap();
        let versioned = n == 6;
        if versioned {
            l.set_bucket_versioning("model", true).await.unwrap();
        }
        // key -> versions (newest last): Some(body) or None (delete marker)
        let mut model: BTreeMap<String, Vec<ModelVersion>> = BTreeMap::new();
        for step in 0..60 {
            let key = format!("k/{}", next() % 9);
            let ctx = format!("seed {seed} n {n} step {step} key {key}");
            match next() % 10 {
                0..=4 => {
                    let body = body_for(&key, next());
                    let info = l
                        .put_object("model", &key, &mut &body[..], &PutOptions::default())
                        .await
                        .unwrap_or_else(|e| panic!("{ctx}: put: {e}"));
                    let vs = model.entry(key.clone()).or_default();
                    if !versioned {
                        vs.clear();
                    }
                    vs.push((info.version_id, Some(body)));
                }
                5 | 6 => {
                    let r = l
                        .delete_object("model", &key, None)
                        .await
                        .unwrap_or_else(|e| panic!("{ctx}: delete: {e}"));
                    if versioned {
                        model
                            .entry(key.clone())
                            .or_default()
                            .push((r.version_id, None));
                    } else {
                        model.remove(&key);
                    }
                }
                7 if versioned => {
                    // Delete a random specific version.
                    if let Some(vs) = model.get_mut(&key)
                        && !vs.is_empty()
                    {
                        let i = (next() as usize) % vs.len();
                        let (vid, _) = vs.remove(i);
                        let sel = vid.map_or(VersionSel::Null, VersionSel::Id);
                        l.delete_object("model", &key, Some(sel))
                            .await
                            .unwrap_or_else(|e| panic!("{ctx}: delete version: {e}"));
                        if vs.is_empty() {
                            model.remove(&key);
                        }
                    }
                }
                _ => {
                    // Lose up to `parity` drives' data, check, then heal all.
                    let lose = 1 + (next() as usize) % parity;
                    let mut lost = Vec::new();
                    while lost.len() < lose {
                        let d = (next() as usize) % n;
                        if !lost.contains(&d) {
                            lost.push(d);
                        }
                    }
                    for &d in &lost {
                        let p = ds[d].join("model");
                        std::fs::remove_dir_all(&p).unwrap();
                        std::fs::create_dir_all(&p).unwrap();
                    }
                    for k in model.keys() {
                        l.heal_object("model", k, None).await.unwrap_or_else(|e| {
                            panic!("{ctx}: heal {k} after losing {lost:?}: {e}")
                        });
                    }
                    if versioned {
                        // Older versions heal one by one.
                        for (k, vs) in &model {
                            for (vid, _) in vs {
                                let sel = vid.map_or(VersionSel::Null, VersionSel::Id);
                                l.heal_object("model", k, Some(sel))
                                    .await
                                    .unwrap_or_else(|e| panic!("{ctx}: heal {k} {vid:?}: {e}"));
                            }
                        }
                    }
                }
            }
            // Check everything against the model.
            for k in (0..9).map(|i| format!("k/{i}")) {
                let latest = model.get(&k).and_then(|v| v.last());
                match (latest, get(&l, "model", &k).await) {
                    (Some((_, Some(body))), Ok(got)) => {
                        assert!(got == *body, "{ctx}: {k} content differs")
                    }
                    (Some((_, None)), Err(Error::NoSuchKey { delete_marker, .. })) => {
                        assert!(delete_marker, "{ctx}: {k}")
                    }
                    (None, Err(Error::NoSuchKey { .. })) => {}
                    (want, got) => panic!(
                        "{ctx}: {k}: model {:?}, store {:?}",
                        want.map(|w| w.1.as_ref().map(Vec::len)),
                        got.map(|g| g.len())
                    ),
                }
            }
            let listed = l
                .list_objects("model", &ListOptions::default())
                .await
                .unwrap();
            let keys: Vec<&str> = listed.objects.iter().map(|o| o.key.as_str()).collect();
            let want: Vec<&str> = model
                .iter()
                .filter(|(_, v)| matches!(v.last(), Some((_, Some(_)))))
                .map(|(k, _)| k.as_str())
                .collect();
            assert_eq!(keys, want, "{ctx}: listing");
            if versioned {
                let vers = l
                    .list_object_versions("model", &ListOptions::default(), None)
                    .await
                    .unwrap();
                let got: Vec<(String, Option<Uuid>)> = vers
                    .versions
                    .iter()
                    .map(|v| (v.key.clone(), v.version_id))
                    .collect();
                let want: Vec<(String, Option<Uuid>)> = model
                    .iter()
                    .flat_map(|(k, vs)| vs.iter().rev().map(move |(vid, _)| (k.clone(), *vid)))
                    .collect();
                assert_eq!(got, want, "{ctx}: version listing");
            }
        }
    }
}

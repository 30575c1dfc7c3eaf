//! The durable log: what a restart keeps, and torn tails cut at every byte.

use consensus::{FileLog, FileLogError, LogStore, Replica, StateMachine, Timing};
use raft::Storage;
use raft::eraftpb::{Entry, HardState};
use raft::prelude::ConfState;

#[derive(Default)]
struct Log(Vec<(u64, Vec<u8>)>, u64);
impl StateMachine for Log {
    fn apply(&mut self, index: u64, data: &[u8]) {
        self.1 = index;
        self.0.push((index, data.to_vec()));
    }
    fn applied_index(&self) -> u64 {
        self.1
    }
    fn snapshot(&self) -> Vec<u8> {
        // The payloads applied, one per line (the tests' payloads have no
        // newline).
        self.0
            .iter()
            .map(|e| e.1.clone())
            .collect::<Vec<_>>()
            .join(&b'\n')
    }
    fn restore(&mut self, index: u64, data: &[u8]) -> Result<(), String> {
        self.0 = data
            .split(|b| *b == b'\n')
            .enumerate()
            .map(|(i, d)| (i as u64 + 1, d.to_vec()))
            .collect();
        self.1 = index;
        Ok(())
    }
}

fn entry(index: u64, term: u64, data: &[u8]) -> Entry {
    Entry {
        index,
        term,
        data: data.to_vec().into(),
        ..Default::default()
    }
}

fn one_voter() -> ConfState {
    ConfState::from((vec![1], vec![]))
}

#[test]
fn a_restarted_single_node_keeps_its_committed_log() {
    let dir = tempfile::tempdir().unwrap();
    let term;
    {
        let log = FileLog::open(dir.path(), one_voter()).unwrap();
        let mut r = Replica::new(1, log, Log::default(), Timing::default()).unwrap();
        r.campaign().unwrap();
        r.drive().unwrap();
        assert!(r.is_leader());
        for p in [b"a", b"b", b"c"] {
            r.propose(p.to_vec()).unwrap();
            r.drive().unwrap();
        }
        let applied: Vec<_> = r.state_machine().0.iter().map(|e| e.1.clone()).collect();
        assert_eq!(
            applied,
            vec![vec![], b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
        );
        term = r.term();
    }
    let log = FileLog::open(dir.path(), one_voter()).unwrap();
    assert_eq!(log.last_index().unwrap(), 4);
    let mut r = Replica::new(1, log, Log::default(), Timing::default()).unwrap();
    assert_eq!(r.term(), term);
    r.drive().unwrap();
    let applied: Vec<_> = r.state_machine().0.iter().map(|e| e.1.clone()).collect();
    assert_eq!(
        applied,
        vec![vec![], b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
    );
}

#[test]
fn a_torn_last_record_is_cut_at_every_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let log = FileLog::open(dir.path(), one_voter()).unwrap();
    log.append(&[entry(1, 1, b"one"), entry(2, 1, b"two")])
        .unwrap();
    let hs = HardState {
        term: 1,
        commit: 2,
        ..Default::default()
    };
    log.set_hard_state(hs).unwrap();
    let path = dir.path().join("log");
    let before = std::fs::metadata(&path).unwrap().len();
    log.append(&[entry(3, 1, b"three-is-the-last-record")])
        .unwrap();
    drop(log);
    let full = std::fs::read(&path).unwrap();
    assert!(full.len() as u64 > before + 8);
    for cut in before..full.len() as u64 {
        std::fs::write(&path, &full[..cut as usize]).unwrap();
        let log = FileLog::open(dir.path(), one_voter()).unwrap();
        assert_eq!(log.last_index().unwrap(), 2, "cut at {cut}");
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            before,
            "file truncated at cut {cut}"
        );
        // The log accepts the next append where the whole records end.
        log.append(&[entry(3, 1, b"again")]).unwrap();
        drop(log);
        let log = FileLog::open(dir.path(), one_voter()).unwrap();
        assert_eq!(log.last_index().unwrap(), 3, "cut at {cut}");
    }
    // A flipped byte in the last record's body fails its CRC.
    let mut bad = full.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0x40;
    std::fs::write(&path, &bad).unwrap();
    let log = FileLog::open(dir.path(), one_voter()).unwrap();
    assert_eq!(log.last_index().unwrap(), 2);
    // The whole file reopens whole.
    drop(log);
    std::fs::write(&path, &full).unwrap();
    let log = FileLog::open(dir.path(), one_voter()).unwrap();
    assert_eq!(log.last_index().unwrap(), 3);
    assert_eq!(log.initial_state().unwrap().hard_state.commit, 2);
}

#[test]
fn an_overwritten_suffix_replays_as_raft_appended_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = FileLog::open(dir.path(), one_voter()).unwrap();
    log.append(&[entry(1, 1, b"a"), entry(2, 1, b"b"), entry(3, 1, b"c")])
        .unwrap();
    log.append(&[entry(2, 2, b"B")]).unwrap();
    drop(log);
    let log = FileLog::open(dir.path(), one_voter()).unwrap();
    assert_eq!(log.last_index().unwrap(), 2);
    assert_eq!(log.term(2).unwrap(), 2);
}

#[test]
fn damaged_state_or_a_commit_beyond_the_log_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let log = FileLog::open(dir.path(), one_voter()).unwrap();
    log.append(&[entry(1, 1, b"a"), entry(2, 1, b"b")]).unwrap();
    let hs = HardState {
        term: 1,
        commit: 2,
        ..Default::default()
    };
    log.set_hard_state(hs).unwrap();
    drop(log);
    // Losing the log's records below the commit index is damage, not a torn
    // tail.
    let path = dir.path().join("log");
    let full = std::fs::read(&path).unwrap();
    std::fs::write(&path, &full[..10]).unwrap();
    let err = FileLog::open(dir.path(), one_voter())
        .err()
        .expect("refused");
    assert!(matches!(err, FileLogError::CorruptState { .. }), "{err}");
    let state = dir.path().join("state");
    let mut s = std::fs::read(&state).unwrap();
    s[5] ^= 1;
    std::fs::write(&state, &s).unwrap();
    let err = FileLog::open(dir.path(), one_voter())
        .err()
        .expect("refused");
    assert!(matches!(err, FileLogError::CorruptState { .. }), "{err}");
    std::fs::write(&state, [1u8, 2]).unwrap();
    assert!(FileLog::open(dir.path(), one_voter()).is_err());
}

#[test]
fn a_compacted_log_restarts_from_its_snapshot_and_keeps_appending() {
    let dir = tempfile::tempdir().unwrap();
    let payloads: Vec<Vec<u8>> = (0..40).map(|i| format!("p{i}").into_bytes()).collect();
    {
        let log = FileLog::open(dir.path(), one_voter()).unwrap();
        let mut r = Replica::new(1, log, Log::default(), Timing::default()).unwrap();
        r.campaign().unwrap();
        r.drive().unwrap();
        for p in &payloads[..30] {
            r.propose(p.clone()).unwrap();
            r.drive().unwrap();
        }
        // 31 applied entries (the leader's empty one first): compacted.
        assert!(!r.compact(100).unwrap());
        assert!(r.compact(10).unwrap());
        assert_eq!(r.store().first_index().unwrap(), 32);
        for p in &payloads[30..] {
            r.propose(p.clone()).unwrap();
            r.drive().unwrap();
        }
    }
    let size = std::fs::metadata(dir.path().join("log")).unwrap().len();
    let log = FileLog::open(dir.path(), one_voter()).unwrap();
    assert_eq!(
        (log.first_index().unwrap(), log.last_index().unwrap()),
        (32, 41)
    );
    let mut r = Replica::new(1, log, Log::default(), Timing::default()).unwrap();
    r.drive().unwrap();
    // The state machine came back from the snapshot and the entries after.
    let applied: Vec<_> = r.state_machine().0.iter().map(|e| e.1.clone()).collect();
    let mut want = vec![vec![]];
    want.extend(payloads.iter().cloned());
    assert_eq!(applied, want);
    assert_eq!(r.state_machine().1, 41);
    // Only the entries after the snapshot are in the log file.
    assert!(size < 600, "log of {size} bytes after compaction");
    r.campaign().unwrap();
    r.drive().unwrap();
    r.propose(b"after".to_vec()).unwrap();
    r.drive().unwrap();
    assert_eq!(r.state_machine().0.last().unwrap().1, b"after".to_vec());
}

#[test]
fn a_crash_between_snapshot_and_log_rewrite_replays_past_the_covered_entries() {
    let dir = tempfile::tempdir().unwrap();
    {
        let log = FileLog::open(dir.path(), one_voter()).unwrap();
        let mut r = Replica::new(1, log, Log::default(), Timing::default()).unwrap();
        r.campaign().unwrap();
        r.drive().unwrap();
        for i in 0..12 {
            r.propose(format!("q{i}").into_bytes()).unwrap();
            r.drive().unwrap();
        }
    }
    // The log file with every entry, which compaction rewrites.
    let before = std::fs::read(dir.path().join("log")).unwrap();
    {
        let log = FileLog::open(dir.path(), one_voter()).unwrap();
        let mut r = Replica::new(1, log, Log::default(), Timing::default()).unwrap();
        r.drive().unwrap();
        assert!(r.compact(5).unwrap());
    }
    // A crash after the snapshot is written and before the log is
    // rewritten leaves this file in place.
    std::fs::write(dir.path().join("log"), before).unwrap();
    let log = FileLog::open(dir.path(), one_voter()).unwrap();
    assert_eq!(log.first_index().unwrap(), 14);
    let mut r = Replica::new(1, log, Log::default(), Timing::default()).unwrap();
    r.drive().unwrap();
    assert_eq!(r.state_machine().1, 13);
    assert_eq!(r.state_machine().0.last().unwrap().1, b"q11".to_vec());
}

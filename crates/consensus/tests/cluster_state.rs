//! The cluster state replicated by three replicas: every member applies the
//! same commands in the same order, and a ReadIndex read on a follower sees
//! a write the leader committed before the read began.

use consensus::{ClusterState, Command, MemLog, MetaEvent, Replica, Timing};
use raft::prelude::ConfState;

type R = Replica<MemLog, ClusterState>;

fn settle(rs: &mut [R]) -> Vec<(u64, Vec<u8>)> {
    let mut reads = Vec::new();
    for _ in 0..200 {
        let mut msgs = Vec::new();
        for r in rs.iter_mut() {
            let out = r.drive().unwrap();
            msgs.extend(out.messages);
            reads.extend(out.reads.into_iter().map(|x| (r.id(), x.ctx)));
        }
        if msgs.is_empty() {
            return reads;
        }
        for m in msgs {
            let to = m.to as usize - 1;
            let _ = rs[to].step(m);
        }
    }
    panic!("did not settle");
}

#[test]
fn three_replicas_agree_on_cluster_state_and_reads_see_writes() {
    let voters = vec![1, 2, 3];
    let mut rs: Vec<R> = voters
        .iter()
        .map(|&id| {
            let log = MemLog::new(ConfState::from((voters.clone(), vec![])));
            Replica::new(id, log, ClusterState::default(), Timing::default()).unwrap()
        })
        .collect();
    rs[0].campaign().unwrap();
    settle(&mut rs);
    let cmds = [
        Command::SetLayout {
            version: 1,
            blob: b"pools".to_vec(),
        },
        Command::Event(MetaEvent::BucketCreated {
            bucket: "a".into(),
            origin: "n1/1".into(),
        }),
        Command::Event(MetaEvent::BucketConfigChanged {
            bucket: "a".into(),
            config: "versioning".into(),
            origin: "n1/2".into(),
        }),
        Command::Event(MetaEvent::BucketDeleted {
            bucket: "a".into(),
            origin: String::new(),
        }),
    ];
    for c in &cmds {
        // Proposed through a follower too: raft forwards to the leader.
        rs[1].propose(c.encode()).unwrap();
        settle(&mut rs);
    }
    rs[2].read_index(b"q".to_vec());
    let reads = settle(&mut rs);
    assert_eq!(reads, vec![(3, b"q".to_vec())]);
    let s = rs[2].state_machine();
    assert_eq!(s.layout(), (1, &b"pools"[..]));
    let (complete, evs) = s.events_since(1);
    assert!(complete);
    assert_eq!(evs.len(), 3);
    assert_eq!(
        evs[2],
        (
            3,
            MetaEvent::BucketDeleted {
                bucket: "a".into(),
                origin: String::new(),
            }
        )
    );
    assert_eq!(evs[1].1.origin(), "n1/2");
    // An event written before `origin` existed still decodes.
    let old: MetaEvent = serde_json::from_str(r#"{"BucketCreated":{"bucket":"x"}}"#).unwrap();
    assert_eq!(old.bucket(), "x");
    assert_eq!(old.origin(), "");
    for r in &rs[1..] {
        assert_eq!(r.state_machine(), rs[0].state_machine());
    }
}

//! Which version of an object a quorum of the set's drives agrees on:
//! reading `xl.meta` from every drive ([`ErasureSet::read_metas`]), and the
//! pure decisions on what the drives answered: the version picked
//! ([`pick_version`]), whether a write reached its quorum, and what a
//! commit that missed it undoes ([`commit_outcome`]). The decisions take
//! the drives' answers and do no I/O, so they are tested on their own.

use std::collections::BTreeMap;

use drive::DriveError;

use super::super::join::join_all;
use super::{ErasureSet, MAX_XL_META, XL_META};
use crate::layer::error::{Error, Result};
use crate::layer::types::{DriveHealState, VersionSel};
use crate::xlmeta::{ObjectVersion, Version, XlMeta};

/// What reading the metadata of one object on every drive gave.
pub(crate) struct Metas {
    pub metas: Vec<Option<XlMeta<'static>>>,
    /// Drives that answered "no such object".
    pub not_found: usize,
    /// Drives that failed otherwise.
    pub errors: usize,
}

/// An object version agreed by a read quorum of drives.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub version: Version<'static>,
    /// Per drive of the set: its copy of the metadata agrees (and its shard
    /// index, 1-based, for objects).
    pub agree: Vec<Option<usize>>,
    /// Whether it is the latest agreed version.
    pub is_latest: bool,
    /// Per drive: the whole decoded xl.meta (for inline data and rewrites).
    pub metas: Vec<Option<XlMeta<'static>>>,
}

impl Resolved {
    /// Per shard (0-based), the drives holding it: each agreeing drive
    /// under the shard index its metadata gives.
    pub(super) fn holders(&self) -> Vec<Vec<usize>> {
        let n = self.agree.len();
        let mut holder: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (d, a) in self.agree.iter().enumerate() {
            if let Some(idx) = a
                && (1..=n).contains(idx)
            {
                holder[idx - 1].push(d);
            }
        }
        holder
    }
}

impl ErasureSet {
    /// Reads and decodes `xl.meta` of `bucket`/`dir` on every drive.
    pub(crate) async fn read_metas(&self, bucket: &str, dir: &str) -> Metas {
        self.read_metas_states(bucket, dir).await.0
    }

    /// [`read_metas`](Self::read_metas), with what each drive's read found
    /// (a decoded copy is `Ok` here, whatever it holds).
    pub(crate) async fn read_metas_states(
        &self,
        bucket: &str,
        dir: &str,
    ) -> (Metas, Vec<DriveHealState>) {
        let path = format!("{dir}/{XL_META}");
        let reads = self
            .drives
            .iter()
            .map(|d| d.read_all(bucket, &path, MAX_XL_META))
            .collect();
        let mut out = Metas {
            metas: vec![None; self.drives.len()],
            not_found: 0,
            errors: 0,
        };
        let mut states = vec![DriveHealState::Ok; self.drives.len()];
        for (i, r) in join_all(reads).await.into_iter().enumerate() {
            let Some(r) = r else {
                out.errors += 1;
                states[i] = DriveHealState::Unknown;
                continue;
            };
            match r {
                Ok(bytes) => match XlMeta::decode(&bytes) {
                    Ok(m) => out.metas[i] = Some(m.into_owned()),
                    Err(e) => {
                        tracing::warn!(drive = %self.drives[i].label(), %dir, "corrupt xl.meta: {e}");
                        out.errors += 1;
                        states[i] = DriveHealState::Corrupt;
                    }
                },
                Err(DriveError::FileNotFound | DriveError::VolumeNotFound) => {
                    out.not_found += 1;
                    states[i] = DriveHealState::Missing;
                }
                Err(e) => {
                    tracing::debug!(drive = %self.drives[i].label(), %dir, "xl.meta: {e}");
                    out.errors += 1;
                    states[i] = DriveHealState::of_error(&e);
                }
            }
        }
        (out, states)
    }

    /// Picks the version a read quorum of the set's drives agrees on
    /// ([`pick_version`]).
    pub(crate) fn resolve(
        &self,
        bucket: &str,
        key: &str,
        metas: Metas,
        want: Option<VersionSel>,
    ) -> Result<Resolved> {
        pick_version(
            self.drives.len(),
            self.default_parity,
            bucket,
            key,
            metas,
            want,
        )
    }
}

/// Picks the version a read quorum of a set of `n` drives agrees on in
/// `metas`: `want` a specific one, or the latest. A newer version short of
/// its read quorum is passed over only when the drives that failed could
/// not have completed its write quorum; otherwise the answer is a
/// read-quorum error, never the older version. When none is agreed, the
/// answer is "no such key/version" if enough drives answered (`n` less
/// `default_parity`), else a read-quorum error.
fn pick_version(
    n: usize,
    default_parity: usize,
    bucket: &str,
    key: &str,
    metas: Metas,
    want: Option<VersionSel>,
) -> Result<Resolved> {
    // (version id, mod time, signature) -> drives holding it.
    let mut seen: BTreeMap<(i64, [u8; 16], [u8; 4]), Vec<usize>> = BTreeMap::new();
    for (i, m) in metas.metas.iter().enumerate() {
        let Some(m) = m else { continue };
        for e in m.versions() {
            let h = e.header();
            if let Some(w) = want
                && h.version_id != w.bytes()
            {
                continue;
            }
            seen.entry((h.mod_time, h.version_id, h.signature))
                .or_default()
                .push(i);
        }
    }
    // Latest first: the greatest mod time, then version id.
    let mut best_count = 0;
    let mut chosen = None;
    for ((mt, vid, sig), drives) in seen.iter().rev() {
        let quorum = version_quorum(&metas.metas, drives[0], vid, n);
        best_count = best_count.max(drives.len());
        if drives.len() >= quorum {
            chosen = Some(((*mt, *vid, *sig), drives.clone()));
            break;
        }
        // Short of its read quorum, but the drives that did not answer may
        // hold it too: if they complete its write quorum, the write may
        // have been acknowledged, and an older version (or the key's
        // absence) would be a stale answer. Which one holds is unknown
        // until those drives answer.
        if drives.len() + metas.errors >= version_write_quorum(&metas.metas, drives[0], vid, n) {
            return Err(Error::ReadQuorum {
                ok: drives.len(),
                needed: quorum,
            });
        }
    }
    let Some(((_, vid, _), drives)) = chosen else {
        // No version agreed by a quorum. If enough drives answered,
        // the version does not exist in an agreed state (a write that
        // never reached its quorum is not an object); otherwise too few
        // drives could be asked.
        let quorum = n - default_parity;
        let answered = n - metas.errors;
        if answered >= quorum {
            return Err(match want {
                Some(VersionSel::Id(u)) => Error::NoSuchVersion {
                    bucket: bucket.into(),
                    key: key.into(),
                    version: u.to_string(),
                },
                Some(VersionSel::Null) => Error::NoSuchVersion {
                    bucket: bucket.into(),
                    key: key.into(),
                    version: "null".into(),
                },
                None => Error::NoSuchKey {
                    bucket: bucket.into(),
                    key: key.into(),
                    delete_marker: false,
                },
            });
        }
        return Err(Error::ReadQuorum {
            ok: best_count,
            needed: quorum,
        });
    };
    let first = drives[0];
    let meta0 = metas.metas[first]
        .as_ref()
        .ok_or_else(|| Error::Internal("agreed drive without metadata".into()))?;
    let entry = meta0
        .find(&vid)
        .ok_or_else(|| Error::Internal("agreed version missing".into()))?;
    let version = entry.version().clone().into_owned();
    let mut agree = vec![None; n];
    for &d in &drives {
        let idx = metas.metas[d]
            .as_ref()
            .and_then(|m| m.find(&vid))
            .and_then(|e| e.version().as_object().map(|o| o.erasure_index))
            .unwrap_or(0);
        agree[d] = Some(usize::try_from(idx).unwrap_or(0));
    }
    // Latest among all agreed versions (for a specific version request,
    // whether it is the newest agreed one on the drives).
    let is_latest = match want {
        None => true,
        Some(_) => {
            let newest = latest_agreed(&metas.metas, n);
            newest == Some(vid)
        }
    };
    Ok(Resolved {
        version,
        agree,
        is_latest,
        metas: metas.metas,
    })
}

/// Version `vid` as drive `drive` holds it, if it is an object.
fn object_version<'m>(
    metas: &'m [Option<XlMeta<'static>>],
    drive: usize,
    vid: &[u8; 16],
) -> Option<&'m ObjectVersion<'static>> {
    metas[drive].as_ref()?.find(vid)?.version().as_object()
}

/// Read quorum of one version: its data shards for objects, half the
/// set for delete markers.
pub(super) fn version_quorum(
    metas: &[Option<XlMeta<'static>>],
    drive: usize,
    vid: &[u8; 16],
    n: usize,
) -> usize {
    let k = object_version(metas, drive, vid)
        .and_then(|o| usize::try_from(o.erasure_m).ok())
        .filter(|&k| k >= 1 && k <= n);
    k.unwrap_or((n / 2).max(1))
}

/// Write quorum of one version as drive `drive` holds it ([`write_quorum_of`]).
fn version_write_quorum(
    metas: &[Option<XlMeta<'static>>],
    drive: usize,
    vid: &[u8; 16],
    n: usize,
) -> usize {
    write_quorum_of(object_version(metas, drive, vid), n)
}

/// Write quorum of a version in a set of `n` drives: what a write of it
/// needed before it was acknowledged. For an object (`Some`), that of its
/// data and parity shards ([`ErasureSet::write_quorum`]); a majority of the
/// set for delete markers and the rest, and for an object whose shards the
/// set cannot hold ([`metadata_quorum`]).
pub(super) fn write_quorum_of(object: Option<&ObjectVersion<'_>>, n: usize) -> usize {
    let shards = object
        .and_then(|o| {
            Some((
                usize::try_from(o.erasure_m).ok()?,
                usize::try_from(o.erasure_n).ok()?,
            ))
        })
        .filter(|&(k, m)| k >= 1 && k + m <= n);
    match shards {
        Some((k, m)) => ErasureSet::write_quorum(k, m),
        None => metadata_quorum(n),
    }
}

/// The drives of `metas` holding a copy of version `vid`, whatever the
/// copy says.
pub(super) fn holders_of(metas: &[Option<XlMeta<'static>>], vid: &[u8; 16]) -> Vec<usize> {
    (0..metas.len())
        .filter(|&d| metas[d].as_ref().is_some_and(|m| m.find(vid).is_some()))
        .collect()
}

/// The latest version a read quorum of the `n` drives agrees on.
fn latest_agreed(metas: &[Option<XlMeta<'static>>], n: usize) -> Option<[u8; 16]> {
    let mut seen: BTreeMap<(i64, [u8; 16], [u8; 4]), Vec<usize>> = BTreeMap::new();
    for (i, m) in metas.iter().enumerate() {
        for e in m.iter().flat_map(|m| m.versions()) {
            let h = e.header();
            seen.entry((h.mod_time, h.version_id, h.signature))
                .or_default()
                .push(i);
        }
    }
    for ((_, vid, _), drives) in seen.iter().rev() {
        if drives.len() >= version_quorum(metas, drives[0], vid, n) {
            return Some(*vid);
        }
    }
    None
}

/// `Ok` when `ok` drives took a write that needs `needed` of them, else
/// the write-quorum error.
pub(super) fn check_write_quorum(ok: usize, needed: usize) -> Result<()> {
    if ok < needed {
        return Err(Error::WriteQuorum { ok, needed });
    }
    Ok(())
}

/// Drives of a set of `n` that must take a change of metadata alone (a
/// delete marker, a removed version, edited user metadata): a majority.
pub(super) fn metadata_quorum(n: usize) -> usize {
    n / 2 + 1
}

/// Whether removing a version from `ok` drives of a set of `n` is enough:
/// a majority, or every drive that held it (`holders`) when fewer did. The
/// error names the majority.
pub(super) fn check_version_removed(ok: usize, n: usize, holders: usize) -> Result<()> {
    let quorum = metadata_quorum(n);
    if ok < quorum.min(holders) {
        return Err(Error::WriteQuorum { ok, needed: quorum });
    }
    Ok(())
}

/// What one drive's commit of a new version did, for the decision on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Committed {
    /// The drive, by position in the set.
    pub drive: usize,
    /// Its `xl.meta` before the commit (`None`: there was none).
    pub previous: Option<Vec<u8>>,
    /// The data directory of the version the commit replaced, which no
    /// other version shares, if any.
    pub replaced_data_dir: Option<[u8; 16]>,
}

/// How a commit ends, given what every drive did ([`commit_outcome`]).
#[derive(Debug)]
pub(super) enum CommitOutcome {
    /// The version is committed; the data directories of the versions it
    /// replaced are removed, per drive: (drive, data directory).
    Keep { remove: Vec<(usize, [u8; 16])> },
    /// Too few drives committed: each of those is undone, and the commit
    /// fails with `error`.
    RollBack { undo: Vec<Undo>, error: Error },
}

/// How one drive's commit is undone.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Undo {
    /// The drive, by position in the set.
    pub drive: usize,
    /// The `xl.meta` to put back; `None`: remove the new one.
    pub restore: Option<Vec<u8>>,
    /// Whether the data directory moved into place is removed (a version
    /// with its data in a directory rather than inline).
    pub remove_data_dir: bool,
}

/// The decision on a commit that `done` drives completed, `quorum` being
/// needed: keep it (removing the replaced versions' data), or roll every
/// completed drive back to its previous `xl.meta` (and, when the data was
/// `moved` into place, remove the new data directory).
pub(super) fn commit_outcome(done: Vec<Committed>, quorum: usize, moved: bool) -> CommitOutcome {
    if done.len() >= quorum {
        let remove = (done.iter())
            .filter_map(|c| Some((c.drive, c.replaced_data_dir?)))
            .collect();
        return CommitOutcome::Keep { remove };
    }
    let error = Error::WriteQuorum {
        ok: done.len(),
        needed: quorum,
    };
    let undo = (done.into_iter())
        .map(|c| Undo {
            drive: c.drive,
            restore: c.previous,
            remove_data_dir: moved,
        })
        .collect();
    CommitOutcome::RollBack { undo, error }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xlmeta::{DeleteMarker, ErasureParams, ObjectVersion};

    const N: usize = 4;

    /// An object version of a 2+2 set (read quorum 2) as drive `d` holds it.
    fn object(vid: u8, mod_time: i64, d: usize) -> Version<'static> {
        let erasure = ErasureParams {
            data_blocks: 2,
            parity_blocks: 2,
            block_size: 1 << 20,
            distribution: vec![1, 2, 3, 4],
        };
        let mut o = ObjectVersion::new([vid; 16], [9; 16], mod_time, 10, erasure);
        o.erasure_index = d as i64 + 1;
        Version::object(o, 0)
    }

    /// A version as drive `d` holds it.
    type Held = fn(usize) -> Version<'static>;

    /// The answers of the set's drives: per drive, its versions (`None`:
    /// the drive failed).
    fn metas(drives: [Option<Vec<Held>>; N]) -> Metas {
        let mut out = Metas {
            metas: Vec::new(),
            not_found: 0,
            errors: 0,
        };
        for (d, versions) in drives.into_iter().enumerate() {
            let Some(versions) = versions else {
                out.errors += 1;
                out.metas.push(None);
                continue;
            };
            let mut m = XlMeta::new();
            for v in versions {
                m.add_version(v(d)).unwrap();
            }
            out.metas.push(Some(m));
        }
        out
    }

    fn v1(d: usize) -> Version<'static> {
        object(1, 100, d)
    }
    fn v2(d: usize) -> Version<'static> {
        object(2, 200, d)
    }
    fn marker(_: usize) -> Version<'static> {
        Version::delete_marker(DeleteMarker::new([3; 16], 300), 0)
    }

    #[test]
    fn the_latest_version_a_quorum_holds_is_picked() {
        // v2 reached one drive only (a write that missed its quorum): v1.
        let m = metas([
            Some(vec![v1, v2]),
            Some(vec![v1]),
            Some(vec![v1]),
            Some(vec![]),
        ]);
        let r = pick_version(N, 2, "b", "k", m, None).unwrap();
        assert_eq!(r.version.version_id(), [1; 16]);
        assert_eq!(r.agree, vec![Some(1), Some(2), Some(3), None]);
        assert_eq!(r.holders(), vec![vec![0], vec![1], vec![2], vec![]]);
        assert!(r.is_latest);
        // v2 on two drives is agreed (2 data shards) and newest.
        let m = metas([Some(vec![v1, v2]), Some(vec![v1, v2]), Some(vec![v1]), None]);
        let r = pick_version(N, 2, "b", "k", m, None).unwrap();
        assert_eq!(r.version.version_id(), [2; 16]);
        // Asked for v1 by id: found, not the latest.
        let m = metas([Some(vec![v1, v2]), Some(vec![v1, v2]), Some(vec![v1]), None]);
        let want = Some(VersionSel::Id(uuid::Uuid::from_bytes([1; 16])));
        let r = pick_version(N, 2, "b", "k", m, want).unwrap();
        assert_eq!(r.version.version_id(), [1; 16]);
        assert!(!r.is_latest);
    }

    #[test]
    fn a_delete_marker_needs_half_the_set() {
        let m = metas([
            Some(vec![v1, marker]),
            Some(vec![v1, marker]),
            Some(vec![v1]),
            None,
        ]);
        let r = pick_version(N, 2, "b", "k", m, None).unwrap();
        assert_eq!(r.version.version_id(), [3; 16]);
        let m = metas([Some(vec![v1, marker]), Some(vec![v1]), Some(vec![v1]), None]);
        let r = pick_version(N, 2, "b", "k", m, None).unwrap();
        assert_eq!(r.version.version_id(), [1; 16]);
    }

    #[test]
    fn no_agreed_version_is_missing_or_a_read_quorum_error() {
        // Enough drives answered (4 - parity 2): the object does not exist.
        let m = metas([Some(vec![v1]), Some(vec![]), Some(vec![]), None]);
        let e = pick_version(N, 2, "b", "k", m, None).unwrap_err();
        assert!(
            matches!(
                e,
                Error::NoSuchKey {
                    delete_marker: false,
                    ..
                }
            ),
            "{e}"
        );
        let m = metas([Some(vec![]), Some(vec![]), None, None]);
        let e = pick_version(N, 2, "b", "k", m, Some(VersionSel::Null)).unwrap_err();
        assert!(
            matches!(&e, Error::NoSuchVersion { version, .. } if version == "null"),
            "{e}"
        );
        // Too few answered: a read-quorum error naming the best count.
        let m = metas([Some(vec![v1]), None, None, None]);
        let e = pick_version(N, 2, "b", "k", m, None).unwrap_err();
        assert!(matches!(e, Error::ReadQuorum { ok: 1, needed: 2 }), "{e}");
    }

    #[test]
    fn a_newer_version_the_failed_drives_may_complete_is_never_passed_over() {
        fn v3(d: usize) -> Version<'static> {
            object(4, 400, d)
        }
        // v2 was acknowledged on drives 0, 1 and 2 (2+2: write quorum 3);
        // drives 1 and 2 fail. v1 still has its read quorum of 2, but
        // answering it would be stale.
        let m = metas([Some(vec![v1, v2]), None, None, Some(vec![v1])]);
        let e = pick_version(N, 2, "b", "k", m, None).unwrap_err();
        assert!(matches!(e, Error::ReadQuorum { ok: 1, needed: 2 }), "{e}");
        // Nor is the key's absence (a delete marker's) answered when an
        // object written after it may be complete.
        let m = metas([
            Some(vec![v1, marker, v3]),
            None,
            None,
            Some(vec![v1, marker]),
        ]);
        let e = pick_version(N, 2, "b", "k", m, None).unwrap_err();
        assert!(matches!(e, Error::ReadQuorum { .. }), "{e}");
        // Asked for by id, it is not "no such version" either.
        let m = metas([Some(vec![v1, v2]), None, None, Some(vec![v1])]);
        let want = Some(VersionSel::Id(uuid::Uuid::from_bytes([2; 16])));
        let e = pick_version(N, 2, "b", "k", m, want).unwrap_err();
        assert!(matches!(e, Error::ReadQuorum { .. }), "{e}");
        // With one drive failed, v2 on one drive cannot have reached its
        // write quorum (1 + 1 < 3): a write that failed, v1 is the answer.
        let m = metas([Some(vec![v1, v2]), Some(vec![v1]), None, Some(vec![v1])]);
        let r = pick_version(N, 2, "b", "k", m, None).unwrap();
        assert_eq!(r.version.version_id(), [1; 16]);
        // A delete marker needs a majority to be written (3 of 4): on one
        // drive with one failed, it was not acknowledged.
        let m = metas([Some(vec![v1, marker]), Some(vec![v1]), Some(vec![v1]), None]);
        let r = pick_version(N, 2, "b", "k", m, None).unwrap();
        assert_eq!(r.version.version_id(), [1; 16]);
        let m = metas([Some(vec![v1, marker]), Some(vec![v1]), None, None]);
        let e = pick_version(N, 2, "b", "k", m, None).unwrap_err();
        assert!(matches!(e, Error::ReadQuorum { .. }), "{e}");
    }

    #[test]
    fn a_version_s_write_quorum_is_its_shards_or_a_majority() {
        let m = metas([Some(vec![v1, marker]), None, None, None]).metas;
        assert_eq!(version_write_quorum(&m, 0, &[1; 16], N), 3);
        assert_eq!(version_write_quorum(&m, 0, &[3; 16], N), 3);
        // A version whose shards the set cannot hold: a majority.
        assert_eq!(version_write_quorum(&m, 0, &[1; 16], 3), 2);
    }

    #[test]
    fn a_version_s_read_quorum_is_its_data_shards() {
        let m = metas([Some(vec![v1, marker]), None, None, None]).metas;
        assert_eq!(version_quorum(&m, 0, &[1; 16], N), 2);
        assert_eq!(version_quorum(&m, 0, &[3; 16], N), 2);
        assert_eq!(version_quorum(&m, 0, &[3; 16], 1), 1);
        // Data shards the set cannot have: half the set.
        assert_eq!(version_quorum(&m, 0, &[1; 16], 1), 1);
        assert_eq!(latest_agreed(&m, N), None);
        assert_eq!(latest_agreed(&m, 1), Some([3; 16]));
    }

    #[test]
    fn write_quorums() {
        assert!(check_write_quorum(3, 3).is_ok());
        assert!(matches!(
            check_write_quorum(2, 3),
            Err(Error::WriteQuorum { ok: 2, needed: 3 })
        ));
        assert_eq!(metadata_quorum(4), 3);
        assert_eq!(metadata_quorum(5), 3);
        // A version on two drives of four: removed from both is enough.
        assert!(check_version_removed(2, 4, 2).is_ok());
        assert!(matches!(
            check_version_removed(1, 4, 2),
            Err(Error::WriteQuorum { ok: 1, needed: 3 })
        ));
        assert!(check_version_removed(3, 4, 4).is_ok());
        assert!(check_version_removed(2, 4, 4).is_err());
    }

    #[test]
    fn a_commit_below_quorum_is_undone_on_the_drives_that_took_it() {
        let done = |n: usize| -> Vec<Committed> {
            (0..n)
                .map(|d| Committed {
                    drive: d * 2,
                    previous: (d % 2 == 0).then(|| vec![d as u8]),
                    replaced_data_dir: (d == 1).then_some([7; 16]),
                })
                .collect()
        };
        match commit_outcome(done(3), 3, true) {
            CommitOutcome::Keep { remove } => assert_eq!(remove, vec![(2, [7; 16])]),
            CommitOutcome::RollBack { error, .. } => panic!("rolled back: {error}"),
        }
        for moved in [true, false] {
            let CommitOutcome::RollBack { undo, error } = commit_outcome(done(2), 3, moved) else {
                panic!("kept below quorum");
            };
            assert!(matches!(error, Error::WriteQuorum { ok: 2, needed: 3 }));
            let want = vec![
                Undo {
                    drive: 0,
                    restore: Some(vec![0]),
                    remove_data_dir: moved,
                },
                Undo {
                    drive: 2,
                    restore: None,
                    remove_data_dir: moved,
                },
            ];
            assert_eq!(undo, want);
        }
    }
}

//! Listing: ordered walks of every drive, merged by quorum, with S3's
//! prefix / delimiter / marker / max-keys semantics.
//!
//! A drive is walked depth first in *key* order, which is not directory
//! order: the object `a` (the file `a/xl.meta`) sorts before `a.txt`, which
//! sorts before `a/b`. Each directory `x/` therefore stands for two entries,
//! the object `x` and the subtree `x/`, sorted among their siblings by those
//! names. Subtrees wholly before the marker or outside the prefix are never
//! opened; keys that collapse into a common prefix stop the walk of that
//! prefix. Each drive's walk stops after the entries the page needs, so a
//! page costs about `max_keys` metadata reads per drive, whatever the size
//! of the bucket.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use drive::{Drive, DriveError};
use tokio::task::JoinSet;

use super::error::{Error, Result};
use super::names::key_from_dir;
use super::set::{ErasureSet, MAX_XL_META, Metas, XL_META, object_info};
use super::types::VersionSel;
use crate::xlmeta::{VersionKind, XlMeta};

/// Most keys a page may ask for (S3's limit).
pub const MAX_KEYS: usize = 1000;
/// Longest prefix, delimiter or marker accepted.
const MAX_ARG_BYTES: usize = 1024;
/// Entries one drive's walk may visit for one page before giving up (a
/// bound on the work of a listing whose entries are all hidden or partial).
const MAX_VISITS: usize = 1_000_000;

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Only keys starting with this.
    pub prefix: String,
    /// Collapse keys into common prefixes at the first occurrence of this
    /// after the prefix.
    pub delimiter: Option<String>,
    /// Start after this key (V1 `marker`, V2 `start-after` or the decoded
    /// continuation token; versions: `key-marker`).
    pub marker: Option<String>,
    /// Most entries (objects plus common prefixes) to return; 0 is S3's
    /// default of 1000, larger values are capped at 1000.
    pub max_keys: usize,
}

/// One listed object (or object version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedObject {
    /// Key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// ETag (no quotes).
    pub etag: String,
    /// Modification time, nanoseconds since the epoch.
    pub mod_time_nanos: i64,
    /// Version id (`None`: null version).
    pub version_id: Option<uuid::Uuid>,
    /// Whether this is the latest version.
    pub is_latest: bool,
    /// Whether this version is a delete marker.
    pub delete_marker: bool,
}

/// A page of ListObjects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListResult {
    /// Objects, in key order.
    pub objects: Vec<ListedObject>,
    /// Common prefixes, in order.
    pub prefixes: Vec<String>,
    /// Whether more entries follow.
    pub is_truncated: bool,
    /// Where the next page starts (the last key or prefix returned) when
    /// truncated.
    pub next_marker: Option<String>,
}

/// A page of ListObjectVersions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListVersionsResult {
    /// Versions: keys in order, each key's versions newest first.
    pub versions: Vec<ListedObject>,
    /// Common prefixes.
    pub prefixes: Vec<String>,
    /// Whether more entries follow.
    pub is_truncated: bool,
    /// `NextKeyMarker`.
    pub next_key_marker: Option<String>,
    /// `NextVersionIdMarker` (`"null"` for the null version).
    pub next_version_marker: Option<String>,
}

#[derive(Debug, Clone)]
enum Walked {
    Object(String, Vec<u8>),
    Prefix(String),
}

impl Walked {
    fn name(&self) -> &str {
        match self {
            Walked::Object(k, _) | Walked::Prefix(k) => k,
        }
    }
}

fn check_args(opts: &ListOptions) -> Result<usize> {
    for (what, s) in [
        ("prefix", Some(opts.prefix.as_str())),
        ("delimiter", opts.delimiter.as_deref()),
        ("marker", opts.marker.as_deref()),
    ] {
        if let Some(s) = s
            && (s.len() > MAX_ARG_BYTES || s.contains('\0'))
        {
            return Err(Error::InvalidObjectName(
                s.chars().take(64).collect(),
                match what {
                    "prefix" => "invalid prefix",
                    "delimiter" => "invalid delimiter",
                    _ => "invalid marker",
                },
            ));
        }
    }
    Ok(match opts.max_keys {
        0 => MAX_KEYS,
        n => n.min(MAX_KEYS),
    })
}

/// The common prefix `key` collapses into, if any.
fn common_prefix<'a>(key: &'a str, prefix: &str, delimiter: Option<&str>) -> Option<&'a str> {
    let d = delimiter.filter(|d| !d.is_empty())?;
    let rest = key.get(prefix.len()..)?;
    rest.find(d).map(|i| &key[..prefix.len() + i + d.len()])
}

/// Walks one drive in key order, from after `after`, returning at most
/// `limit` entries (objects and collapsed prefixes) and whether it stopped
/// early.
async fn walk_drive(
    drive: Arc<dyn Drive>,
    bucket: String,
    prefix: String,
    delimiter: Option<String>,
    after: Option<String>,
    limit: usize,
) -> std::result::Result<(Vec<Walked>, bool), DriveError> {
    // Stack of pending entries, smallest on top: (sort name, is_subtree).
    // An object entry's name is its key; a subtree's is `dir/`.
    let mut stack: Vec<(String, bool)> = Vec::new();
    let mut out = Vec::new();
    let mut last_prefix: Option<String> = None;
    let mut visits = 0usize;
    // Start at the deepest existing directory that contains the prefix.
    let start_dir = match prefix.rfind('/') {
        Some(i) => prefix[..=i].to_owned(),
        None => String::new(),
    };
    stack.push((start_dir, true));
    while let Some((name, subtree)) = stack.pop() {
        visits += 1;
        if visits > MAX_VISITS {
            return Ok((out, true));
        }
        if subtree {
            // Skip subtrees wholly outside the prefix or before the marker.
            if !(name.starts_with(&prefix) || prefix.starts_with(&name)) {
                continue;
            }
            if let Some(a) = &after
                && name.as_str() < a.as_str()
                && !a.starts_with(&name)
            {
                continue;
            }
            if let Some(p) = &last_prefix
                && name.starts_with(p.as_str())
            {
                continue;
            }
            let dir = name.trim_end_matches('/');
            let entries = match drive.list_dir(&bucket, dir, usize::MAX).await {
                Ok(e) => e,
                Err(DriveError::FileNotFound | DriveError::VolumeNotFound) if !dir.is_empty() => {
                    continue;
                }
                Err(DriveError::FileNotFound) => return Ok((out, false)),
                Err(e) => return Err(e),
            };
            let is_object_dir = entries.iter().any(|e| e == XL_META);
            let mut children: Vec<(String, bool)> = Vec::new();
            for e in entries {
                let Some(child) = e.strip_suffix('/') else {
                    continue;
                };
                // An object's data directories are not keys.
                if is_object_dir && uuid::Uuid::parse_str(child).is_ok() {
                    continue;
                }
                let full = format!("{name}{child}");
                children.push((key_from_dir(&full), false));
                children.push((format!("{full}/"), true));
            }
            children.sort();
            stack.extend(children.into_iter().rev());
        } else {
            let key = name;
            if !key.starts_with(&prefix) {
                continue;
            }
            if let Some(a) = &after
                && key.as_str() <= a.as_str()
            {
                continue;
            }
            if let Some(p) = &last_prefix
                && key.starts_with(p.as_str())
            {
                continue;
            }
            if let Some(cp) = common_prefix(&key, &prefix, delimiter.as_deref()) {
                let cp = cp.to_owned();
                if after.as_deref().is_some_and(|a| cp.as_str() <= a) {
                    // The marker is inside this prefix: it was returned.
                    last_prefix = Some(cp);
                    continue;
                }
                last_prefix = Some(cp.clone());
                out.push(Walked::Prefix(cp));
            } else {
                let dir = super::names::object_dir(&key);
                match drive
                    .read_all(&bucket, &format!("{dir}/{XL_META}"), MAX_XL_META)
                    .await
                {
                    Ok(bytes) => out.push(Walked::Object(key, bytes)),
                    Err(DriveError::FileNotFound) => continue,
                    Err(e) => return Err(e),
                }
            }
            if out.len() >= limit {
                return Ok((out, !stack.is_empty()));
            }
        }
    }
    Ok((out, false))
}

/// Raw `xl.meta` per drive of a set (`None`: the drive lacks the key).
type PerDrive = Vec<Option<Vec<u8>>>;

/// One merged entry: a key with its metadata per drive of its set, or a
/// common prefix.
enum Merged {
    Object(String, usize, Vec<Option<Vec<u8>>>),
    Prefix(String),
}

/// Walks every drive of every set and merges: entries in key order, each
/// object key with the metadata of the drives that have it. `more` is set
/// when some walk stopped early (so entries may follow the last one).
async fn merged_page(
    sets: &[ErasureSet],
    bucket: &str,
    opts: &ListOptions,
    after: Option<&str>,
    limit: usize,
) -> Result<(Vec<Merged>, bool)> {
    let mut tasks = JoinSet::new();
    for (si, set) in sets.iter().enumerate() {
        for (di, d) in set.drives().iter().enumerate() {
            let fut = walk_drive(
                d.clone(),
                bucket.to_owned(),
                opts.prefix.clone(),
                opts.delimiter.clone(),
                after.map(str::to_owned),
                limit,
            );
            tasks.spawn(async move { (si, di, fut.await) });
        }
    }
    let mut objects: BTreeMap<String, (usize, PerDrive)> = BTreeMap::new();
    let mut prefixes: BTreeMap<String, usize> = BTreeMap::new();
    let mut more = false;
    let mut failed = vec![0usize; sets.len()];
    // The smallest "last entry" of the walks that stopped early: entries
    // past it may be missing from this merge.
    let mut horizon: Option<String> = None;
    while let Some(r) = tasks.join_next().await {
        let Ok((si, di, r)) = r else { continue };
        match r {
            Ok((entries, stopped)) => {
                if stopped {
                    more = true;
                    if let Some(last) = entries.last() {
                        let l = last.name().to_owned();
                        if horizon.as_ref().is_none_or(|h| &l < h) {
                            horizon = Some(l);
                        }
                    }
                }
                for e in entries {
                    match e {
                        Walked::Object(k, bytes) => {
                            let n = sets[si].drives().len();
                            let slot = objects.entry(k).or_insert_with(|| (si, vec![None; n]));
                            if slot.0 == si {
                                slot.1[di] = Some(bytes);
                            }
                        }
                        Walked::Prefix(p) => *prefixes.entry(p).or_default() += 1,
                    }
                }
            }
            Err(e) => {
                tracing::warn!(drive = %sets[si].drives()[di].label(), "listing: {e}");
                failed[si] += 1;
            }
        }
    }
    for (si, set) in sets.iter().enumerate() {
        if failed[si] > set.default_parity() {
            return Err(Error::ReadQuorum {
                ok: set.drives().len() - failed[si],
                needed: set.drives().len() - set.default_parity(),
            });
        }
    }
    let mut out: Vec<(String, Merged)> = objects
        .into_iter()
        .map(|(k, (si, m))| (k.clone(), Merged::Object(k, si, m)))
        .chain(prefixes.into_keys().map(|p| (p.clone(), Merged::Prefix(p))))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(h) = horizon {
        out.retain(|(name, _)| name.as_str() <= h.as_str());
    }
    Ok((out.into_iter().map(|(_, m)| m).collect(), more))
}

fn metas_of(raw: Vec<Option<Vec<u8>>>) -> Metas {
    let n = raw.len();
    let mut metas = Vec::with_capacity(n);
    let mut not_found = 0;
    let mut errors = 0;
    for r in raw {
        match r {
            Some(b) => match XlMeta::decode(&b) {
                Ok(m) => metas.push(Some(m.into_owned())),
                Err(_) => {
                    errors += 1;
                    metas.push(None);
                }
            },
            None => {
                not_found += 1;
                metas.push(None);
            }
        }
    }
    Metas {
        metas,
        not_found,
        errors,
    }
}

/// ListObjects: the latest version of each key, hiding keys whose latest
/// version is a delete marker.
pub(crate) async fn list_objects(
    sets: &[ErasureSet],
    bucket: &str,
    opts: &ListOptions,
) -> Result<ListResult> {
    let max = check_args(opts)?;
    let mut res = ListResult::default();
    let mut after = opts.marker.clone();
    let mut count = 0;
    loop {
        let (page, more) =
            merged_page(sets, bucket, opts, after.as_deref(), max + 1 - count).await?;
        let empty = page.is_empty();
        for m in page {
            let name = match &m {
                Merged::Object(k, ..) | Merged::Prefix(k) => k.clone(),
            };
            after = Some(name.clone());
            let entry = match m {
                Merged::Prefix(p) => Some(Err(p)),
                Merged::Object(key, si, raw) => {
                    let metas = metas_of(raw);
                    match sets[si].resolve(bucket, &key, metas, None) {
                        Ok(r) => {
                            let info = object_info(bucket, &key, &r.version, true);
                            if info.delete_marker {
                                None
                            } else {
                                Some(Ok(listed(&info)))
                            }
                        }
                        Err(e) if e.is_not_found() => None,
                        Err(Error::ReadQuorum { .. }) => None,
                        Err(e) => return Err(e),
                    }
                }
            };
            let Some(entry) = entry else { continue };
            if count == max {
                res.is_truncated = true;
                return Ok(finish(res));
            }
            count += 1;
            match entry {
                Ok(o) => res.objects.push(o),
                Err(p) => res.prefixes.push(p),
            }
        }
        if !more || empty {
            return Ok(finish(res));
        }
    }
}

fn finish(mut res: ListResult) -> ListResult {
    if res.is_truncated {
        let last_obj = res.objects.last().map(|o| o.key.clone());
        let last_pre = res.prefixes.last().cloned();
        res.next_marker = match (last_obj, last_pre) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    res
}

fn listed(info: &super::types::ObjectInfo) -> ListedObject {
    ListedObject {
        key: info.key.clone(),
        size: info.size,
        etag: info.etag.clone(),
        mod_time_nanos: info.mod_time_nanos,
        version_id: info.version_id,
        is_latest: info.is_latest,
        delete_marker: info.delete_marker,
    }
}

/// ListObjectVersions: every version agreed by a quorum, keys in order,
/// newest first within a key.
pub(crate) async fn list_versions(
    sets: &[ErasureSet],
    bucket: &str,
    opts: &ListOptions,
    version_marker: Option<&str>,
) -> Result<ListVersionsResult> {
    let max = check_args(opts)?;
    let mut res = ListVersionsResult::default();
    // With a version marker, the marker key's older versions come first.
    let mut after = opts.marker.clone();
    let mut resume: Option<(String, VersionSel)> = match (&opts.marker, version_marker) {
        (Some(k), Some(v)) if !v.is_empty() => Some((
            k.clone(),
            VersionSel::parse(v).ok_or_else(|| Error::InvalidVersionId(v.into()))?,
        )),
        _ => None,
    };
    if let Some((k, _)) = &resume {
        // Re-visit the marker key itself.
        after = predecessor(k);
    }
    let mut count = 0;
    let mut last: Option<(String, Option<uuid::Uuid>)> = None;
    loop {
        let (page, more) = merged_page(sets, bucket, opts, after.as_deref(), max + 1).await?;
        let empty = page.is_empty();
        for m in page {
            let (name, items): (String, Vec<std::result::Result<ListedObject, String>>) = match m {
                Merged::Prefix(p) => (p.clone(), vec![Err(p)]),
                Merged::Object(key, si, raw) => {
                    let metas = metas_of(raw);
                    let versions = agreed_versions(&sets[si], bucket, &key, metas);
                    (key, versions.into_iter().map(Ok).collect())
                }
            };
            after = Some(name.clone());
            let mut items = items;
            if let Some((rk, _)) = &resume
                && name.as_str() < rk.as_str()
            {
                continue;
            }
            if let Some((rk, rv)) = &resume {
                if &name == rk {
                    // Skip up to and including the version marker.
                    let pos = items.iter().position(|i| match i {
                        Ok(o) => match rv {
                            VersionSel::Null => o.version_id.is_none(),
                            VersionSel::Id(u) => o.version_id == Some(*u),
                        },
                        Err(_) => false,
                    });
                    items = match pos {
                        Some(p) => items.split_off(p + 1),
                        None => Vec::new(),
                    };
                }
                if name.as_str() >= rk.as_str() {
                    resume = None;
                }
            } else if opts.marker.as_deref() == Some(name.as_str()) {
                continue;
            }
            for item in items {
                if count == max {
                    res.is_truncated = true;
                    if let Some((k, v)) = last {
                        res.next_key_marker = Some(k);
                        res.next_version_marker =
                            Some(v.map_or_else(|| "null".to_owned(), |u| u.to_string()));
                    }
                    return Ok(res);
                }
                count += 1;
                match item {
                    Ok(o) => {
                        last = Some((o.key.clone(), o.version_id));
                        res.versions.push(o);
                    }
                    Err(p) => {
                        last = Some((p.clone(), None));
                        res.prefixes.push(p);
                    }
                }
            }
        }
        if !more || empty {
            return Ok(res);
        }
    }
}

/// A walk start that includes `k` itself: `k` without its last character
/// sorts before `k`; the caller skips the entries between the two.
fn predecessor(k: &str) -> Option<String> {
    let mut s = k.to_owned();
    s.pop();
    if s.is_empty() { None } else { Some(s) }
}

/// Every version of `key` agreed by a quorum of drives, newest first.
fn agreed_versions(set: &ErasureSet, bucket: &str, key: &str, metas: Metas) -> Vec<ListedObject> {
    let mut ids: BTreeSet<(i64, [u8; 16])> = BTreeSet::new();
    for m in metas.metas.iter().flatten() {
        for e in m.versions() {
            let h = e.header();
            ids.insert((h.mod_time, h.version_id));
        }
    }
    let mut out = Vec::new();
    let mut first = true;
    for (_, vid) in ids.into_iter().rev() {
        let sel = if vid == [0; 16] {
            VersionSel::Null
        } else {
            VersionSel::Id(uuid::Uuid::from_bytes(vid))
        };
        let m = Metas {
            metas: metas.metas.clone(),
            not_found: metas.not_found,
            errors: metas.errors,
        };
        if let Ok(r) = set.resolve(bucket, key, m, Some(sel)) {
            if out
                .iter()
                .any(|o: &ListedObject| o.version_id == sel_uuid(sel))
            {
                continue;
            }
            let info = object_info(bucket, key, &r.version, first);
            first = false;
            let mut l = listed(&info);
            l.delete_marker = matches!(r.version.kind, VersionKind::DeleteMarker(_));
            out.push(l);
        }
    }
    out
}

fn sel_uuid(s: VersionSel) -> Option<uuid::Uuid> {
    match s {
        VersionSel::Null => None,
        VersionSel::Id(u) => Some(u),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_collapse() {
        assert_eq!(common_prefix("a/b/c", "", Some("/")), Some("a/"));
        assert_eq!(common_prefix("a/b/c", "a/", Some("/")), Some("a/b/"));
        assert_eq!(common_prefix("a/b", "a/", Some("/")), None);
        assert_eq!(common_prefix("a-b-c", "a", Some("-")), Some("a-"));
        assert_eq!(common_prefix("abc", "", None), None);
        assert_eq!(common_prefix("abc", "", Some("")), None);
    }
}

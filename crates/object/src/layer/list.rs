//! Listing: ordered walks of every drive, merged by quorum, with S3's
//! prefix / delimiter / marker / max-keys semantics.
//!
//! Each drive walks its part of the page with [`Drive::walk`] (see
//! `drive::walk`: key order, which is not directory order; subtrees before
//! the marker or outside the prefix never opened; collapsed prefixes not
//! descended). A local drive does the whole walk in one blocking task and
//! returns each object with the head of its `xl.meta`, so a page costs
//! about `max_keys` small reads per drive and no hop between threads per
//! key. The drives' answers are merged per key and resolved as a GET
//! resolves a version (the newest version a read quorum of drives agrees
//! on), from the journal headers: only the chosen version's body is
//! decoded. Anything unusual (a body that does not decode) falls back to
//! the full decode and `ErasureSet::resolve`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use drive::walk::{WalkEntry, WalkOptions};
use drive::{Drive, DriveError};
use tokio::task::JoinSet;

use super::error::{Error, Result};
use super::names::{object_dir, prefix_names_no_key};
use super::set::{ErasureSet, MAX_XL_META, Metas, XL_META, object_info};
use super::types::VersionSel;
use crate::xlmeta::{Journal, META_ETAG, Version, VersionKind, XlMeta};

/// Most keys a page may ask for (S3's limit).
pub const MAX_KEYS: usize = 1000;
/// Longest delimiter accepted.
const MAX_ARG_BYTES: usize = 1024;
/// Longest prefix or marker accepted: past S3's key limit (a longer prefix
/// is a valid request naming no key, a longer marker still positions the
/// page), a sanity bound on what a page compares against.
const MAX_POSITION_BYTES: usize = 16 << 10;
/// Bytes of each `xl.meta` a walk reads: the metadata of an object with a
/// few versions, and the inline data of small ones. A longer file whose
/// metadata does not fit is read whole afterwards.
const META_HEAD: usize = 8 << 10;

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
    /// An encrypted object's encryption metadata and part sizes (`None`
    /// for plain objects and delete markers): the ETag and size clients
    /// see of an encrypted object are not the stored ones, and a gateway
    /// needs these to give them.
    pub encryption: Option<Box<ListedEncryption>>,
}

/// What a listing carries of an encrypted object; see
/// [`ListedObject::encryption`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedEncryption {
    /// The `MetaSys` entries of the encryption: keys starting with
    /// `X-Minio-Internal-Server-Side-Encryption-` or
    /// `X-Minio-Internal-Encrypted-` (MinIO's names).
    pub internal: std::collections::BTreeMap<String, Vec<u8>>,
    /// Stored size of each part, in order (one entry for a single-part
    /// object).
    pub part_sizes: Vec<u64>,
}

/// Whether a `MetaSys` key is one of the encryption entries a listing
/// carries.
fn is_encryption_key(k: &str) -> bool {
    const PREFIXES: [&str; 2] = [
        "X-Minio-Internal-Server-Side-Encryption-",
        "X-Minio-Internal-Encrypted-",
    ];
    PREFIXES.iter().any(|p| k.starts_with(p))
}

/// The [`ListedEncryption`] of an object of `size` bytes with these
/// `MetaSys` entries and part sizes (none: one part of `size`), `None` when
/// no entry is an encryption entry.
fn listed_encryption<'a>(
    sys: impl Iterator<Item = (std::borrow::Cow<'a, str>, &'a [u8])>,
    size: u64,
    part_sizes: impl Iterator<Item = u64>,
) -> Option<Box<ListedEncryption>> {
    let internal: std::collections::BTreeMap<String, Vec<u8>> = sys
        .filter(|(k, _)| is_encryption_key(k))
        .map(|(k, v)| (k.into_owned(), v.to_vec()))
        .collect();
    if internal.is_empty() {
        return None;
    }
    let mut part_sizes: Vec<u64> = part_sizes.collect();
    if part_sizes.is_empty() {
        part_sizes.push(size);
    }
    Some(Box::new(ListedEncryption {
        internal,
        part_sizes,
    }))
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
    for (what, s, limit) in [
        ("prefix", Some(opts.prefix.as_str()), MAX_POSITION_BYTES),
        ("delimiter", opts.delimiter.as_deref(), MAX_ARG_BYTES),
        ("marker", opts.marker.as_deref(), MAX_POSITION_BYTES),
    ] {
        // A NUL is refused only in a delimiter: a prefix or marker holding
        // one names no key but is a valid request.
        if let Some(s) = s
            && (s.len() > limit || (what == "delimiter" && s.contains('\0')))
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

#[cfg(test)]
use drive::walk::common_prefix;

/// Walks one drive in key order, from after `after`, returning at most
/// `limit` entries (objects with their `xl.meta`, and collapsed prefixes)
/// and whether it stopped early.
async fn walk_drive(
    drive: Arc<dyn Drive>,
    opts: WalkOptions,
) -> std::result::Result<(Vec<Walked>, bool), DriveError> {
    let page = drive.walk(&opts).await?;
    let mut out = Vec::with_capacity(page.entries.len());
    for e in page.entries {
        match e {
            WalkEntry::Prefix(p) => out.push(Walked::Prefix(p)),
            WalkEntry::Object {
                key,
                meta,
                complete,
            } => {
                // A head that holds the whole journal is enough; else the
                // file is read whole, as a GET reads it.
                if complete || !Journal::decode(&meta).is_err_and(|e| e.is_truncated()) {
                    out.push(Walked::Object(key, meta));
                    continue;
                }
                let path = format!("{}/{XL_META}", object_dir(&key));
                match drive.read_all(&opts.volume, &path, MAX_XL_META).await {
                    Ok(bytes) => out.push(Walked::Object(key, bytes)),
                    Err(DriveError::FileNotFound) => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok((out, page.more))
}

/// Raw `xl.meta` per drive of a set (`None`: the drive lacks the key).
type PerDrive = Vec<Option<Vec<u8>>>;

/// One merged entry: a key with its metadata per drive of its set (and the
/// drives of the set that were not walked), or a common prefix.
enum Merged {
    Object(String, usize, Vec<Option<Vec<u8>>>, Arc<Vec<usize>>),
    Prefix(String),
}

/// How many drives of a set of `n` a ListObjects page walks: enough that
/// the drives left out cannot hold a read quorum of any version by
/// themselves. Parity is at most half the set, so an object version's
/// quorum (its data shards) is at least `n - n/2`, and a delete marker's is
/// `n/2`: leaving out fewer than `max(1, n/2)` drives is safe.
fn listing_drives(n: usize) -> usize {
    n - (n / 2).max(1) + 1
}

/// [`listing_drives`], and at least the data shards of the default parity,
/// so that such versions reach their quorum on the walked drives alone (16
/// drives at EC:4: 12, where 9 would confirm nothing and send every key to
/// the other 7).
fn listing_share(n: usize, parity: usize) -> usize {
    listing_drives(n).max(n.saturating_sub(parity)).min(n)
}

/// The drives of a set a page walks: `count` of them, those that report
/// themselves online first, this process's own drives before other
/// nodes' (in set order), then the rest.
fn choose_drives(set: &ErasureSet, count: usize) -> (Vec<usize>, Arc<Vec<usize>>) {
    let mut order: Vec<usize> = (0..set.drives().len()).collect();
    let offline = |d: &Arc<dyn drive::Drive>| d.health().state != drive::DriveState::Online;
    order.sort_by_key(|&d| (offline(&set.drives()[d]), !set.drives()[d].is_local()));
    let rest = order.split_off(count.min(order.len()));
    (order, Arc::new(rest))
}

/// Walks the drives of every set (all of them, or with `subset` a
/// [`listing_drives`] share of each set) and merges: entries in key order,
/// each object key with the metadata of the drives that have it. `more` is
/// set when some walk stopped early (so entries may follow the last one).
/// A subset walk where a drive fails is done again on every drive.
async fn merged_page(
    sets: &[ErasureSet],
    bucket: &str,
    opts: &ListOptions,
    after: Option<&str>,
    limit: usize,
    subset: bool,
) -> Result<(Vec<Merged>, bool)> {
    let mut tasks = JoinSet::new();
    let mut unread: Vec<Arc<Vec<usize>>> = Vec::with_capacity(sets.len());
    for (si, set) in sets.iter().enumerate() {
        let n = set.drives().len();
        let share = listing_share(n, set.default_parity());
        let (walked, rest) = choose_drives(set, if subset { share } else { n });
        unread.push(rest);
        for di in walked {
            let fut = walk_drive(
                set.drives()[di].clone(),
                WalkOptions {
                    volume: bucket.to_owned(),
                    prefix: opts.prefix.clone(),
                    delimiter: opts.delimiter.clone(),
                    after: after.map(str::to_owned),
                    limit,
                    meta_head: META_HEAD,
                    meta_limit: MAX_XL_META,
                },
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
    if subset && failed.iter().any(|&f| f > 0) {
        // A drive of the subset failed: the page is walked on every drive,
        // as a full walk decides whether enough answered.
        return Box::pin(merged_page(sets, bucket, opts, after, limit, false)).await;
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
        .map(|(k, (si, m))| {
            let rest = Arc::clone(&unread[si]);
            (k.clone(), Merged::Object(k, si, m, rest))
        })
        .chain(prefixes.into_keys().map(|p| (p.clone(), Merged::Prefix(p))))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(h) = horizon {
        out.retain(|(name, _)| name.as_str() <= h.as_str());
    }
    Ok((out.into_iter().map(|(_, m)| m).collect(), more))
}

/// Reads the `xl.meta` of `key` on the drives that were not walked (for a
/// key the walked drives could not decide). A drive that fails counts as
/// not having the key, as a drive whose walk failed does.
async fn read_unread(
    set: &ErasureSet,
    bucket: &str,
    key: &str,
    raw: &mut PerDrive,
    unread: &[usize],
) {
    let path = format!("{}/{XL_META}", object_dir(key));
    let mut tasks = JoinSet::new();
    for &d in unread {
        let (drive, bucket, path) = (set.drives()[d].clone(), bucket.to_owned(), path.clone());
        tasks.spawn(async move { (d, drive.read_all(&bucket, &path, MAX_XL_META).await) });
    }
    while let Some(r) = tasks.join_next().await {
        if let Ok((d, Ok(bytes))) = r {
            raw[d] = Some(bytes);
        }
    }
}

/// The listing's view of each drive's raw `xl.meta` for
/// [`ErasureSet::resolve`]. A drive that lacks the key, failed, or holds
/// an `xl.meta` that does not decode does not vote, and none counts as a
/// failed drive: a listing names what the drives it reads agree on, and a
/// newer version the failed drives might complete does not hide a key
/// (only a GET of it, which answers a read-quorum error then).
fn metas_of(raw: Vec<Option<Vec<u8>>>) -> Metas {
    let n = raw.len();
    let mut metas = Vec::with_capacity(n);
    let mut not_found = 0;
    let errors = 0;
    for r in raw {
        match r.map(|b| XlMeta::decode(&b).map(XlMeta::into_owned)) {
            Some(Ok(m)) => metas.push(Some(m)),
            Some(Err(_)) | None => {
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

/// What the header-only resolution of a key's latest version found.
#[derive(Debug, PartialEq, Eq)]
enum Fast {
    /// The latest agreed version is an object (or a legacy object).
    Listed(ListedObject),
    /// No agreed version, or the latest is a delete marker.
    Hidden,
    /// A body did not decode: resolve with the full decode instead.
    Slow,
    /// The drives not read could change the answer: read them first.
    Unsure,
}

/// Each drive's `xl.meta` journal, `None` where the drive lacks the key or
/// its `xl.meta` does not decode (such a drive does not vote).
fn journals(raw: &[Option<Vec<u8>>]) -> Vec<Option<Journal<'_>>> {
    raw.iter()
        .map(|r| r.as_deref().and_then(|b| Journal::decode(b).ok()))
        .collect()
}

/// The latest version of `key` a read quorum of the set's drives agrees
/// on, from each drive's raw `xl.meta` (`None`: the drive lacks the key).
///
/// The same decision as [`ErasureSet::resolve`] with no version asked
/// (versions grouped by mod time, version id and signature across drives,
/// the newest group whose size reaches its quorum wins: the version's data
/// shards for objects, half the set otherwise), but it reads only the
/// journal headers of each drive (the metadata CRC is still checked) and
/// decodes one version body: the candidate's, on the first drive that has
/// it. A drive whose `xl.meta` does not decode does not vote.
///
/// `unread` drives of the set were not read (their slots are `None`). The
/// answer stands only if they cannot change it: no newer version could
/// reach its quorum with them (else [`Fast::Unsure`]); a version none of
/// the read drives has cannot reach one, as there are fewer unread drives
/// than any quorum (see [`listing_drives`]).
fn latest_fast(key: &str, raw: &[Option<Vec<u8>>], unread: usize) -> Fast {
    let n = raw.len();
    let journals = journals(raw);
    let mut seen: BTreeMap<(i64, [u8; 16], [u8; 4]), Vec<usize>> = BTreeMap::new();
    for (i, j) in journals.iter().enumerate() {
        for e in j.iter().flat_map(|j| &j.entries) {
            let h = &e.header;
            seen.entry((h.mod_time, h.version_id, h.signature))
                .or_default()
                .push(i);
        }
    }
    let default_quorum = (n / 2).max(1);
    for ((_, vid, _), drives) in seen.iter().rev() {
        let Some(j0) = &journals[drives[0]] else {
            return Fast::Slow;
        };
        let Some(entry) = j0.entries.iter().find(|e| e.header.version_id == *vid) else {
            return Fast::Slow;
        };
        let Ok(version) = entry.decode() else {
            return Fast::Slow;
        };
        let quorum = version
            .as_object()
            .and_then(|o| usize::try_from(o.erasure_m).ok())
            .filter(|&k| k >= 1 && k <= n)
            .unwrap_or(default_quorum);
        if drives.len() >= quorum {
            return match version.kind {
                VersionKind::DeleteMarker(_) => Fast::Hidden,
                _ => Fast::Listed(listed_latest(key, &version)),
            };
        }
        if drives.len() + unread >= quorum {
            // The drives not read could complete this newer version.
            return Fast::Unsure;
        }
    }
    Fast::Hidden
}

/// What the header-only resolution of a key's versions found.
#[derive(Debug, PartialEq, Eq)]
enum VersionsFast {
    /// The versions [`agreed_versions`] lists, newest first.
    Listed(Vec<ListedObject>),
    /// A body did not decode: resolve with the full decode instead.
    Slow,
    /// The drives not read could change the answer: read them first.
    Unsure,
}

/// Every version of `key` agreed by a read quorum of the set's drives,
/// newest first, from each drive's raw `xl.meta`: what [`agreed_versions`]
/// lists after the full decode of every copy, from the journal headers and
/// one decoded body per listed version (the metadata CRC is still
/// checked). Each version id is resolved as [`ErasureSet::resolve`]
/// resolves a version asked for: the newest group of copies with that id,
/// mod time and signature that reaches its quorum.
///
/// `unread` drives of the set were not read: a group of copies that could
/// reach its quorum with them, and would be chosen if it did, makes the
/// answer [`VersionsFast::Unsure`]. A version none of the read drives has
/// cannot reach a quorum (see [`listing_drives`]), and copies that reach
/// none do not order the list, so the unread drives change nothing else.
fn versions_fast(key: &str, raw: &[Option<Vec<u8>>], unread: usize) -> VersionsFast {
    let n = raw.len();
    let journals = journals(raw);
    // (version id, mod time, signature) -> drives holding it.
    let mut seen: BTreeMap<([u8; 16], i64, [u8; 4]), Vec<usize>> = BTreeMap::new();
    for (i, j) in journals.iter().enumerate() {
        for e in j.iter().flat_map(|j| &j.entries) {
            let h = &e.header;
            seen.entry((h.version_id, h.mod_time, h.signature))
                .or_default()
                .push(i);
        }
    }
    let default_quorum = (n / 2).max(1);
    let mut found: Vec<((i64, [u8; 16]), ListedObject)> = Vec::new();
    let ids: BTreeSet<[u8; 16]> = seen.keys().map(|k| k.0).collect();
    for vid in ids {
        // The groups of this id, newest (mod time, signature) first.
        let groups = seen.range((vid, i64::MIN, [0; 4])..=(vid, i64::MAX, [0xff; 4]));
        for (_, drives) in groups.rev() {
            let Some(j0) = &journals[drives[0]] else {
                return VersionsFast::Slow;
            };
            let Some(entry) = j0.entries.iter().find(|e| e.header.version_id == vid) else {
                return VersionsFast::Slow;
            };
            let Ok(version) = entry.decode() else {
                return VersionsFast::Slow;
            };
            let quorum = version
                .as_object()
                .and_then(|o| usize::try_from(o.erasure_m).ok())
                .filter(|&k| k >= 1 && k <= n)
                .unwrap_or(default_quorum);
            if drives.len() >= quorum {
                found.push(((version.mod_time(), vid), listed_latest(key, &version)));
                break;
            }
            if drives.len() + unread >= quorum {
                return VersionsFast::Unsure;
            }
        }
    }
    VersionsFast::Listed(sort_versions(found))
}

/// What [`object_info`] then [`listed`] give for the latest version, without
/// building the rest of the object's information.
fn listed_latest(key: &str, v: &Version<'_>) -> ListedObject {
    let vid = v.version_id();
    let version_id = (vid != [0; 16]).then(|| uuid::Uuid::from_bytes(vid));
    match &v.kind {
        VersionKind::Object(o) => {
            let mut etag = String::new();
            for (k, val) in o.meta_user.iter().flat_map(|u| u.iter()) {
                if k.to_string_lossy() == META_ETAG {
                    etag = val.to_string_lossy().into_owned();
                }
            }
            let size = u64::try_from(o.size).unwrap_or(0);
            let sys = o
                .meta_sys
                .iter()
                .flat_map(|m| m.iter())
                .map(|(k, v)| (k.to_string_lossy(), &v[..]));
            // As object_info gives the parts.
            let parts = o
                .part_numbers
                .iter()
                .zip(&o.part_sizes)
                .map(|(_, &s)| u64::try_from(s).unwrap_or(0));
            let encryption = listed_encryption(sys, size, parts);
            ListedObject {
                key: key.to_owned(),
                size,
                etag,
                mod_time_nanos: o.mod_time,
                version_id,
                is_latest: true,
                delete_marker: false,
                encryption,
            }
        }
        _ => ListedObject {
            key: key.to_owned(),
            size: 0,
            etag: String::new(),
            mod_time_nanos: v.mod_time(),
            version_id,
            is_latest: true,
            delete_marker: matches!(v.kind, VersionKind::DeleteMarker(_)),
            encryption: None,
        },
    }
}

/// The latest version of `key` by the full decode and
/// [`ErasureSet::resolve`] (`None`: hidden).
fn resolve_full(
    set: &ErasureSet,
    bucket: &str,
    key: &str,
    raw: PerDrive,
) -> Result<Option<std::result::Result<ListedObject, String>>> {
    match set.resolve(bucket, key, metas_of(raw), None) {
        Ok(r) => {
            let info = object_info(bucket, key, &r.version, true);
            Ok((!info.delete_marker).then(|| Ok(listed(&info))))
        }
        Err(e) if e.is_not_found() => Ok(None),
        Err(Error::ReadQuorum { .. }) => Ok(None),
        Err(e) => Err(e),
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
    if prefix_names_no_key(&opts.prefix) {
        return Ok(res);
    }
    let mut after = opts.marker.clone();
    let mut count = 0;
    loop {
        let (page, more) =
            merged_page(sets, bucket, opts, after.as_deref(), max + 1 - count, true).await?;
        let empty = page.is_empty();
        for m in page {
            let name = match &m {
                Merged::Object(k, ..) | Merged::Prefix(k) => k.clone(),
            };
            after = Some(name.clone());
            let entry = match m {
                Merged::Prefix(p) => Some(Err(p)),
                Merged::Object(key, si, mut raw, unread) => {
                    match latest_fast(&key, &raw, unread.len()) {
                        Fast::Unsure => {
                            read_unread(&sets[si], bucket, &key, &mut raw, &unread).await;
                            match latest_fast(&key, &raw, 0) {
                                Fast::Listed(o) => Some(Ok(o)),
                                Fast::Hidden | Fast::Unsure => None,
                                Fast::Slow => resolve_full(&sets[si], bucket, &key, raw)?,
                            }
                        }
                        Fast::Listed(o) => Some(Ok(o)),
                        Fast::Hidden => None,
                        Fast::Slow => {
                            read_unread(&sets[si], bucket, &key, &mut raw, &unread).await;
                            resolve_full(&sets[si], bucket, &key, raw)?
                        }
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
        encryption: listed_encryption(
            info.internal
                .iter()
                .map(|(k, v)| (std::borrow::Cow::Borrowed(k.as_str()), &v[..])),
            info.size,
            info.parts.iter().map(|p| p.size),
        ),
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
    if prefix_names_no_key(&opts.prefix) {
        return Ok(res);
    }
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
        let (page, more) = merged_page(sets, bucket, opts, after.as_deref(), max + 1, true).await?;
        let empty = page.is_empty();
        for m in page {
            let (name, items): (String, Vec<std::result::Result<ListedObject, String>>) = match m {
                Merged::Prefix(p) => (p.clone(), vec![Err(p)]),
                Merged::Object(key, si, mut raw, unread) => {
                    let mut fast = versions_fast(&key, &raw, unread.len());
                    if matches!(fast, VersionsFast::Slow | VersionsFast::Unsure) {
                        read_unread(&sets[si], bucket, &key, &mut raw, &unread).await;
                        if fast == VersionsFast::Unsure {
                            fast = versions_fast(&key, &raw, 0);
                        }
                    }
                    let versions = match fast {
                        VersionsFast::Listed(v) => v,
                        VersionsFast::Slow | VersionsFast::Unsure => {
                            agreed_versions(&sets[si], bucket, &key, metas_of(raw))
                        }
                    };
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

/// Every version of `key` agreed by a quorum of drives, newest first: each
/// version id resolved as [`ErasureSet::resolve`] resolves a version asked
/// for, the versions ordered by the (mod time, version id) of what was
/// resolved, the first one the latest (the one a GET without a version
/// resolves). Copies that reach no quorum do not order the list.
fn agreed_versions(set: &ErasureSet, bucket: &str, key: &str, metas: Metas) -> Vec<ListedObject> {
    let mut ids: BTreeSet<[u8; 16]> = BTreeSet::new();
    for m in metas.metas.iter().flatten() {
        for e in m.versions() {
            ids.insert(e.header().version_id);
        }
    }
    let mut found: Vec<((i64, [u8; 16]), ListedObject)> = Vec::new();
    for vid in ids {
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
            let info = object_info(bucket, key, &r.version, false);
            let mut l = listed(&info);
            l.delete_marker = matches!(r.version.kind, VersionKind::DeleteMarker(_));
            found.push(((r.version.mod_time(), vid), l));
        }
    }
    sort_versions(found)
}

/// Versions keyed by (mod time, version id), newest first, the first one
/// marked the latest.
fn sort_versions(mut found: Vec<((i64, [u8; 16]), ListedObject)>) -> Vec<ListedObject> {
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    let mut out: Vec<ListedObject> = found.into_iter().map(|(_, l)| l).collect();
    for (i, l) in out.iter_mut().enumerate() {
        l.is_latest = i == 0;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xlmeta::{DeleteMarker, ErasureParams, ObjectVersion, VersionHeader};

    use fastrand::Rng;

    async fn set_of(dir: &std::path::Path, n: usize, parity: usize) -> ErasureSet {
        let mut drives: Vec<Arc<dyn Drive>> = Vec::new();
        for i in 0..n {
            let d = drive::LocalDrive::open(dir.join(format!("d{i}")), Default::default())
                .await
                .unwrap();
            drives.push(Arc::new(d));
        }
        ErasureSet::new(drives, parity).unwrap()
    }

    /// The old way: every xl.meta decoded whole, then `resolve`.
    fn latest_full(set: &ErasureSet, key: &str, raw: &[Option<Vec<u8>>]) -> Option<ListedObject> {
        match set.resolve("b", key, metas_of(raw.to_vec()), None) {
            Ok(r) => {
                let info = object_info("b", key, &r.version, true);
                (!info.delete_marker).then(|| listed(&info))
            }
            Err(e) if e.is_not_found() => None,
            Err(Error::ReadQuorum { .. }) => None,
            Err(e) => panic!("{key}: {e}"),
        }
    }

    fn object(rng: &mut Rng, n: usize, vid: [u8; 16], mod_time: i64) -> Version<'static> {
        // Mostly the set's default shape, sometimes another storage class
        // (a different data-shard count, so another quorum).
        let k = match rng.u64(..4) {
            0 => n - 1,
            _ => n - n / 2,
        };
        let mut o = ObjectVersion::new(
            vid,
            [7; 16],
            mod_time,
            rng.u64(..5000) as i64,
            ErasureParams {
                data_blocks: k as u8,
                parity_blocks: (n - k) as u8,
                block_size: 1 << 20,
                distribution: (1..=n as u8).collect(),
            },
        );
        if rng.u64(..5) != 0 {
            o.set_user(META_ETAG, format!("{:032x}", rng.u64(..)));
        }
        o.set_user("content-type", "text/plain");
        // Some encrypted (single-part or multipart), with entries a
        // listing does not carry beside those it does.
        o.set_sys("x-minio-internal-inline-data", b"true".to_vec());
        match rng.u64(..4) {
            0 => {
                o.set_sys(
                    "X-Minio-Internal-Server-Side-Encryption-S3-Sealed-Key",
                    b"sealed".to_vec(),
                );
                o.set_sys("X-Minio-Internal-Server-Side-Encryption-Iv", b"iv".to_vec());
            }
            1 => {
                o.set_sys("X-Minio-Internal-Encrypted-Multipart", Vec::new());
                o.set_sys(
                    "X-Minio-Internal-Server-Side-Encryption-Sealed-Key",
                    b"k".to_vec(),
                );
                o.part_numbers = vec![1, 2];
                o.part_sizes = vec![o.size - o.size / 3, o.size / 3];
            }
            _ => {}
        }
        Version::object(o, 1)
    }

    /// Random journals on random subsets of the drives (stale drives,
    /// missing drives, delete markers, versions that reached too few
    /// drives, corrupt files): the header-only resolution lists exactly
    /// what the full decode and `resolve` list.
    #[tokio::test]
    async fn fast_resolution_matches_resolve() {
        let tmp = tempfile::tempdir().unwrap();
        let mut rng = Rng::with_seed(0x9e37_79b9_7f4a_7c15);
        let (mut listed_count, mut hidden_count, mut unsure_count) = (0, 0, 0);
        let (mut versions_count, mut versions_unsure) = (0, 0);
        for (n, parity) in [(4usize, 2usize), (5, 2), (6, 3), (8, 4), (16, 4)] {
            let set = set_of(&tmp.path().join(format!("s{n}")), n, parity).await;
            for case in 0..400 {
                let count = 1 + rng.u64(..4) as usize;
                let mut versions = Vec::new();
                for v in 0..count {
                    let vid = match rng.u64(..3) {
                        0 => [0; 16],
                        _ => uuid::Uuid::from_u128(u128::from(rng.u64(..))).into_bytes(),
                    };
                    // Equal times now and then, to exercise the tie order.
                    let mod_time = 1_000 + rng.u64(..6) as i64 * 10 + v as i64 % 2;
                    versions.push(if rng.u64(..4) == 0 {
                        Version::delete_marker(DeleteMarker::new(vid, mod_time), 1)
                    } else {
                        object(&mut rng, n, vid, mod_time)
                    });
                }
                let mut raw: Vec<Option<Vec<u8>>> = Vec::new();
                for _ in 0..n {
                    raw.push(match rng.u64(..10) {
                        0 => None,
                        1 => Some(b"XL2 garbage".to_vec()),
                        _ => {
                            let mut m = XlMeta::new();
                            for v in &versions {
                                if rng.u64(..4) != 0 {
                                    // Same id may come back: add_version replaces.
                                    let _ = m.add_version(v.clone());
                                }
                            }
                            Some(m.encode().unwrap())
                        }
                    });
                }
                let key = format!("k{case}");
                let want = latest_full(&set, &key, &raw);
                let got = match latest_fast(&key, &raw, 0) {
                    Fast::Listed(o) => Some(o),
                    Fast::Hidden => None,
                    Fast::Slow | Fast::Unsure => panic!("{key}: slow path on well-formed files"),
                };
                assert_eq!(got, want, "n={n} case {case}");
                match got {
                    Some(_) => listed_count += 1,
                    None => hidden_count += 1,
                }
                // Only a listing share of the drives read (a random
                // choice): the answer is the same, or the share says it
                // cannot decide.
                let mut order: Vec<usize> = (0..n).collect();
                for i in (1..n).rev() {
                    order.swap(i, rng.u64(..i as u64 + 1) as usize);
                }
                let unread = &order[listing_drives(n)..];
                let mut part = raw.clone();
                for &d in unread {
                    part[d] = None;
                }
                match latest_fast(&key, &part, unread.len()) {
                    Fast::Listed(o) => assert_eq!(Some(o), want, "n={n} case {case} subset"),
                    Fast::Hidden => assert_eq!(None, want, "n={n} case {case} subset"),
                    Fast::Unsure => unsure_count += 1,
                    Fast::Slow => panic!("{key}: slow path on well-formed files"),
                }
                // Every version: the header-only resolution lists what the
                // full decode and a `resolve` per version list, from all
                // drives or (when it can decide) from the listing share.
                let all = agreed_versions(&set, "b", &key, metas_of(raw.clone()));
                versions_count += all.len();
                // The version listed as the latest is the one a GET without
                // a version resolves.
                match &want {
                    Some(o) => assert_eq!(all.first(), Some(o), "n={n} case {case} latest"),
                    None => assert!(
                        all.first().is_none_or(|v| v.delete_marker),
                        "n={n} case {case} latest"
                    ),
                }
                assert_eq!(
                    versions_fast(&key, &raw, 0),
                    VersionsFast::Listed(all.clone()),
                    "n={n} case {case} versions"
                );
                match versions_fast(&key, &part, unread.len()) {
                    VersionsFast::Listed(v) => {
                        assert_eq!(v, all, "n={n} case {case} versions subset")
                    }
                    VersionsFast::Unsure => versions_unsure += 1,
                    VersionsFast::Slow => panic!("{key}: slow path on well-formed files"),
                }
            }
        }
        // Both outcomes are well represented, and subsets decide most
        // keys but not all.
        assert!(
            listed_count > 400 && hidden_count > 400,
            "{listed_count} / {hidden_count}"
        );
        assert!(
            unsure_count > 50 && unsure_count < 1600,
            "{unsure_count} undecided of 2000"
        );
        assert!(versions_count > 2000, "{versions_count} versions listed");
        assert!(
            versions_unsure > 50 && versions_unsure < 1600,
            "{versions_unsure} version listings undecided of 2000"
        );
    }

    #[test]
    fn listing_drives_leave_out_less_than_any_quorum() {
        assert_eq!(listing_drives(1), 1);
        assert_eq!(listing_drives(2), 2);
        assert_eq!(listing_drives(3), 3);
        assert_eq!(listing_drives(4), 3);
        assert_eq!(listing_drives(8), 5);
        assert_eq!(listing_drives(16), 9);
        // The share with the default parity: the data shards when more.
        let shares = [(16, 4), (4, 2), (8, 4), (1, 0)].map(|(n, p)| listing_share(n, p));
        assert_eq!(shares, [12, 3, 5, 1]);
        for n in 1..=32 {
            for p in 0..=n / 2 {
                assert!(listing_share(n, p) >= listing_drives(n));
                assert!(listing_share(n, p) >= n - p && listing_share(n, p) <= n);
            }
            let unread = n - listing_drives(n);
            // Smallest quorum: a delete marker's (half the set), or an
            // object's with the most parity allowed (half the set).
            assert!(unread < (n / 2).max(1), "n={n}");
            assert!(unread < n - n / 2, "n={n}");
        }
    }

    /// An xl.meta whose header is fine but whose body is not (with a valid
    /// CRC): the fast resolution hands over to the full one.
    #[test]
    fn undecodable_body_takes_the_slow_path() {
        let h = VersionHeader {
            version_id: [1; 16],
            mod_time: 5,
            signature: [0; 4],
            version_type: crate::xlmeta::VersionType::Object,
            flags: crate::xlmeta::VersionFlags(0),
            ec_n: 2,
            ec_m: 2,
        };
        let mut w = crate::msgp::Writer::new();
        w.uint(3);
        w.uint(3);
        w.int(1);
        w.bin(&h.to_bytes());
        w.bin(&[0xc1, 0xc1]);
        let meta = w.into_inner();
        let mut file = b"XL2 ".to_vec();
        file.extend_from_slice(&1u16.to_le_bytes());
        file.extend_from_slice(&3u16.to_le_bytes());
        file.push(0xc6);
        file.extend_from_slice(&(meta.len() as u32).to_be_bytes());
        file.extend_from_slice(&meta);
        file.push(0xce);
        file.extend_from_slice(&(xxhash_rust::xxh64::xxh64(&meta, 0) as u32).to_be_bytes());
        assert!(Journal::decode(&file).is_ok());
        assert!(XlMeta::decode(&file).is_err());
        let raw = vec![Some(file.clone()), Some(file.clone()), Some(file), None];
        assert_eq!(latest_fast("k", &raw, 0), Fast::Slow);
    }

    /// `listed_latest` gives what `object_info` then `listed` give, for
    /// objects with and without an ETag, delete markers and the null
    /// version.
    #[test]
    fn listed_latest_is_object_info() {
        let mut rng = Rng::with_seed(7);
        let mut vs = vec![
            object(&mut rng, 4, [0; 16], 10),
            object(&mut rng, 4, [3; 16], 11),
            Version::delete_marker(DeleteMarker::new([4; 16], 12), 1),
            Version::delete_marker(DeleteMarker::new([0; 16], 13), 1),
        ];
        let mut bare = ObjectVersion::new(
            [5; 16],
            [0; 16],
            14,
            3,
            ErasureParams {
                data_blocks: 2,
                parity_blocks: 2,
                block_size: 1 << 20,
                distribution: vec![1, 2, 3, 4],
            },
        );
        bare.meta_user = None;
        vs.push(Version::object(bare, 1));
        for v in &vs {
            let info = object_info("b", "key", v, true);
            assert_eq!(listed_latest("key", v), listed(&info), "{v:?}");
        }
    }

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

//! [`Drive::walk`]: one page of a volume walked in
//! object-key order, each object with the head of its metadata file.
//!
//! The layout is MinIO's: an object `k` is the directory `k/` holding
//! [`META_FILE`] (`xl.meta`) and its data directories (named by UUIDs); a
//! key ending in `/` (a "directory object") is stored as
//! `k`[`DIR_OBJECT_SUFFIX`]. Key order is not directory order: the object
//! `a` (the file `a/xl.meta`) sorts before `a.txt`, which sorts before
//! `a/b`. Each directory `x/` therefore stands for two entries, the object
//! `x` and the subtree `x/`, sorted among their siblings by those names.
//! Subtrees wholly before `after` or outside the prefix are never opened;
//! keys that collapse into a common prefix stop the walk of that prefix.
//! A walk starts in the deepest directory the prefix names (`a/b/` for
//! the prefix `a/b/c`), and also looks beside it for the directory object
//! of that name (`a/b/`, stored as `a/b__XLDIR__`), which the prefix
//! `a/b/` includes.
//!
//! The algorithm is written once, over `WalkFs` (crate-private): the
//! trait's default method runs it over a drive's own
//! [`list_dir`](crate::Drive::list_dir) and
//! [`read_all`](crate::Drive::read_all); [`LocalDrive`](crate::LocalDrive)
//! runs it inside one blocking task with direct system calls (no
//! per-entry hop between threads), reading only the head of each
//! metadata file and skipping the listing of object directories that the
//! link count shows have no subdirectory.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use crate::drive::Drive;
use crate::error::{DriveError, Result};

/// The file that makes a directory an object.
pub const META_FILE: &str = "xl.meta";
/// Suffix of the directory of a key that ends in `/` (`a/b/` is stored as
/// `a/b__XLDIR__`).
pub const DIR_OBJECT_SUFFIX: &str = "__XLDIR__";
/// Entries one walk may visit before it stops (a bound on the work of a page
/// whose entries are all filtered out).
pub const MAX_VISITS: usize = 1_000_000;

/// What [`Drive::walk`] lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WalkOptions {
    /// The volume (bucket).
    pub volume: String,
    /// Only keys starting with this.
    pub prefix: String,
    /// Collapse keys into a common prefix at the first occurrence of this
    /// after the prefix (`None` or empty: no collapsing).
    pub delimiter: Option<String>,
    /// Only entries after this key (a common prefix that contains it was
    /// returned already and is skipped too).
    pub after: Option<String>,
    /// Most entries (objects and common prefixes) returned.
    pub limit: usize,
    /// Bytes of each metadata file to read, at least: a drive may return
    /// more (the default method returns whole files), and says whether what
    /// it returned is the whole file.
    pub meta_head: usize,
    /// Largest metadata file read whole (the default method's
    /// [`read_all`](crate::Drive::read_all) limit).
    pub meta_limit: u64,
}

/// One entry of a [`WalkPage`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalkEntry {
    /// An object: its key and the first bytes of its metadata file.
    Object {
        /// The key.
        key: String,
        /// The metadata file, or its first bytes.
        meta: Vec<u8>,
        /// Whether `meta` is the whole file.
        complete: bool,
    },
    /// A common prefix (ends with the delimiter).
    Prefix(String),
}

impl WalkEntry {
    /// The key or common prefix.
    pub fn name(&self) -> &str {
        match self {
            WalkEntry::Object { key, .. } => key,
            WalkEntry::Prefix(p) => p,
        }
    }
}

/// One page of a walk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WalkPage {
    /// Entries in key order.
    pub entries: Vec<WalkEntry>,
    /// Whether the walk stopped before the end (entries may follow the
    /// last one).
    pub more: bool,
}

/// A directory entry: its name and whether it is a directory.
pub(crate) type DirEntry = (String, bool);

/// The children of one directory as the walk's candidates, sorted by name:
/// for each child directory `c` (an object's data directories excluded),
/// the object `c` (named `x/` for `x__XLDIR__`) and the subtree `c/`.
/// Names are relative to the directory and kept in one buffer, so a large
/// directory can be kept (see the local drive's directory cache) and
/// entered at any point by binary search.
#[derive(Debug, Default)]
pub(crate) struct Cands {
    arena: String,
    /// (start, length, is a subtree), sorted by (name, is a subtree).
    items: Vec<(u32, u32, bool)>,
}

impl Cands {
    /// The candidates of a directory whose entries are `entries`.
    pub(crate) fn build(entries: Vec<DirEntry>) -> Cands {
        let is_object_dir = entries.iter().any(|(e, is_dir)| !is_dir && e == META_FILE);
        let mut list: Vec<(String, bool)> = Vec::new();
        for (child, is_dir) in entries {
            if !is_dir {
                continue;
            }
            // An object's data directories are not keys.
            if is_object_dir && uuid::Uuid::parse_str(&child).is_ok() {
                continue;
            }
            list.push((key_from_dir(&child), false));
            list.push((child + "/", true));
        }
        list.sort_unstable();
        let mut arena = String::with_capacity(list.iter().map(|(n, _)| n.len()).sum());
        let mut items = Vec::with_capacity(list.len());
        for (name, subtree) in list {
            // Names are at most 255 bytes (plus a suffix) and the arena
            // holds what one directory listing returned.
            let start = u32::try_from(arena.len()).unwrap_or(u32::MAX);
            arena.push_str(&name);
            items.push((start, name.len() as u32, subtree));
        }
        Cands { arena, items }
    }

    /// Number of candidates.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Candidate `i`: its name and whether it is a subtree.
    pub(crate) fn get(&self, i: usize) -> (&str, bool) {
        let (start, len, subtree) = self.items[i];
        let start = start as usize;
        (
            self.arena.get(start..start + len as usize).unwrap_or(""),
            subtree,
        )
    }

    /// The first candidate whose name is not below `name`.
    pub(crate) fn lower_bound(&self, name: &str) -> usize {
        self.items.partition_point(|&(start, len, _)| {
            let start = start as usize;
            self.arena.get(start..start + len as usize).unwrap_or("") < name
        })
    }

    /// Approximate memory held, in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.arena.capacity() + self.items.capacity() * std::mem::size_of::<(u32, u32, bool)>()
    }
}

/// What the walk needs from a file system. Paths are relative to the
/// volume; `""` is the volume itself.
pub(crate) trait WalkFs: Send {
    /// The candidates of a directory ([`Cands::build`] of its entries). A
    /// missing directory is `FileNotFound`, a missing volume (when `dir`
    /// is empty) `VolumeNotFound`.
    fn read_dir(
        &mut self,
        volume: &str,
        dir: &str,
    ) -> impl Future<Output = Result<Arc<Cands>>> + Send;
    /// The metadata file of the object directory `dir`: `None` if there is
    /// none, else (bytes, whether they are the whole file).
    fn read_meta(
        &mut self,
        volume: &str,
        dir: &str,
        head: usize,
        limit: u64,
    ) -> impl Future<Output = Result<Option<(Vec<u8>, bool)>>> + Send;
    /// Whether the object directory `dir` may have subdirectories other
    /// than its data directories; `false` only when it surely has none.
    fn may_have_subdirs(
        &mut self,
        volume: &str,
        dir: &str,
    ) -> impl Future<Output = Result<bool>> + Send;
}

/// The key of an object directory (`a/b__XLDIR__` -> `a/b/`).
pub fn key_from_dir(dir: &str) -> String {
    match dir.strip_suffix(DIR_OBJECT_SUFFIX) {
        Some(stem) => format!("{stem}/"),
        None => dir.to_owned(),
    }
}

/// The directory of a key (`a/b/` -> `a/b__XLDIR__`).
pub fn dir_from_key(key: &str) -> String {
    match key.strip_suffix('/') {
        Some(stem) => format!("{stem}{DIR_OBJECT_SUFFIX}"),
        None => key.to_owned(),
    }
}

/// The common prefix `key` collapses into, if any.
pub fn common_prefix<'a>(key: &'a str, prefix: &str, delimiter: Option<&str>) -> Option<&'a str> {
    let d = delimiter.filter(|d| !d.is_empty())?;
    let rest = key.get(prefix.len()..)?;
    rest.find(d).map(|i| &key[..prefix.len() + i + d.len()])
}

/// Whether the subtree `name` (ending in `/`, or empty for the volume) can
/// hold keys of the page: inside or above the prefix, and not wholly
/// before `after`.
fn subtree_wanted(name: &str, prefix: &str, after: Option<&str>) -> bool {
    if !(name.starts_with(prefix) || prefix.starts_with(name)) {
        return false;
    }
    !after.is_some_and(|a| name < a && !a.starts_with(name))
}

/// Whether the object `key` can be an entry of the page.
fn object_wanted(key: &str, prefix: &str, after: Option<&str>) -> bool {
    key.starts_with(prefix) && after.is_none_or(|a| key > a)
}

/// A directory being walked: its candidates from `pos` on, while they
/// start with `p_rel` (the part of the prefix below the directory).
struct Level {
    /// The directory's name with its trailing `/` (`""`: the volume).
    base: String,
    cands: Arc<Cands>,
    pos: usize,
    p_rel: String,
}

impl Level {
    /// Enters `base`: skips (by binary search) the candidates below the
    /// prefix and wholly before `after`, which the filters would drop.
    fn new(base: String, cands: Arc<Cands>, prefix: &str, after: Option<&str>) -> Level {
        let p_rel = prefix
            .get(base.len()..)
            .filter(|_| prefix.starts_with(&base))
            .unwrap_or("");
        let mut pos = cands.lower_bound(p_rel);
        if let Some(r) = after
            .filter(|a| a.starts_with(&base))
            .map(|a| &a[base.len()..])
        {
            // Objects must sort after `r`; a subtree `c/` may contain it:
            // no wanted candidate sorts below r's first component.
            let first = match r.find('/') {
                Some(i) => &r[..=i],
                None => r,
            };
            pos = pos.max(cands.lower_bound(first));
        }
        let p_rel = p_rel.to_owned();
        Level {
            base,
            cands,
            pos,
            p_rel,
        }
    }

    /// The next candidate as a full name, or `None` at the end.
    fn next(&mut self) -> Option<(String, bool)> {
        if self.pos >= self.cands.len() {
            return None;
        }
        let (rel, subtree) = self.cands.get(self.pos);
        if !rel.starts_with(self.p_rel.as_str()) {
            return None;
        }
        self.pos += 1;
        let mut name = String::with_capacity(self.base.len() + rel.len());
        name.push_str(&self.base);
        name.push_str(rel);
        Some((name, subtree))
    }

    /// Whether candidates remain.
    fn has_more(&self) -> bool {
        self.pos < self.cands.len() && self.cands.get(self.pos).0.starts_with(self.p_rel.as_str())
    }

    /// Skips the candidates inside the common prefix `cp` (which this
    /// directory contains or equals).
    fn skip_prefix(&mut self, cp: &str) {
        let Some(cp_rel) = cp.strip_prefix(self.base.as_str()) else {
            return;
        };
        while self.pos < self.cands.len() && self.cands.get(self.pos).0.starts_with(cp_rel) {
            self.pos += 1;
        }
    }
}

/// One page of the walk over `fs`.
pub(crate) async fn walk<F: WalkFs>(fs: &mut F, o: &WalkOptions) -> Result<WalkPage> {
    let prefix = o.prefix.as_str();
    let after = o.after.as_deref();
    let delimiter = o.delimiter.as_deref().filter(|d| !d.is_empty());
    // Directories being walked, innermost on top.
    let mut levels: Vec<Level> = Vec::new();
    // Entries before any directory is entered: the start directory's
    // object then its subtree (smallest on top).
    let mut pending: Vec<(String, bool)> = Vec::new();
    // Object directories seen (their subtree comes later), so that only
    // they get the cheap "any subdirectory?" check before being listed.
    let mut object_dirs: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    let mut last_prefix: Option<String> = None;
    let mut visits = 0usize;
    let start_dir = match prefix.rfind('/') {
        Some(i) => prefix[..=i].to_owned(),
        None => String::new(),
    };
    // The key equal to the start directory (a directory object, stored
    // beside it as `dir__XLDIR__`) sorts before everything inside it.
    let start_object = (!start_dir.is_empty()).then(|| start_dir.clone());
    pending.push((start_dir, true));
    if let Some(k) = start_object {
        pending.push((k, false));
    }
    loop {
        let (name, subtree) = match pending.pop() {
            Some(e) => e,
            None => {
                let Some(top) = levels.last_mut() else { break };
                match top.next() {
                    Some(e) => e,
                    None => {
                        levels.pop();
                        continue;
                    }
                }
            }
        };
        visits += 1;
        if visits > MAX_VISITS {
            return Ok(WalkPage {
                entries: out,
                more: true,
            });
        }
        if subtree {
            if !subtree_wanted(&name, prefix, after) {
                continue;
            }
            if let Some(p) = &last_prefix
                && name.starts_with(p.as_str())
            {
                continue;
            }
            let dir = name.trim_end_matches('/');
            if object_dirs.remove(dir) && !fs.may_have_subdirs(&o.volume, dir).await? {
                continue;
            }
            let cands = match fs.read_dir(&o.volume, dir).await {
                Ok(c) => c,
                Err(DriveError::FileNotFound | DriveError::VolumeNotFound) if !dir.is_empty() => {
                    continue;
                }
                Err(DriveError::FileNotFound) => {
                    return Ok(WalkPage {
                        entries: out,
                        more: false,
                    });
                }
                Err(e) => return Err(e),
            };
            levels.push(Level::new(name, cands, prefix, after));
        } else {
            let key = name;
            if !object_wanted(&key, prefix, after) {
                continue;
            }
            if let Some(p) = &last_prefix
                && key.starts_with(p.as_str())
            {
                continue;
            }
            if let Some(cp) = common_prefix(&key, prefix, delimiter) {
                let cp = cp.to_owned();
                // Nothing else inside the prefix is wanted: leave the
                // directories inside it, skip its other candidates here.
                while levels.last().is_some_and(|l| l.base.starts_with(&cp)) {
                    levels.pop();
                }
                if let Some(top) = levels.last_mut() {
                    top.skip_prefix(&cp);
                }
                if after.is_some_and(|a| cp.as_str() <= a) {
                    // The marker is inside this prefix: it was returned.
                    last_prefix = Some(cp);
                    continue;
                }
                last_prefix = Some(cp.clone());
                out.push(WalkEntry::Prefix(cp));
            } else {
                let dir = dir_from_key(&key);
                match fs
                    .read_meta(&o.volume, &dir, o.meta_head, o.meta_limit)
                    .await
                {
                    Ok(Some((meta, complete))) => {
                        object_dirs.insert(dir);
                        out.push(WalkEntry::Object {
                            key,
                            meta,
                            complete,
                        });
                    }
                    Ok(None) => continue,
                    Err(e) => return Err(e),
                }
            }
            if out.len() >= o.limit {
                let more = !pending.is_empty() || levels.iter().any(Level::has_more);
                return Ok(WalkPage { entries: out, more });
            }
        }
    }
    Ok(WalkPage {
        entries: out,
        more: false,
    })
}

/// [`WalkFs`] over any drive's [`list_dir`](Drive::list_dir) and
/// [`read_all`](Drive::read_all): what the trait's default method uses.
pub(crate) struct DriveFs<'a, D: Drive + ?Sized>(pub(crate) &'a D);

impl<D: Drive + ?Sized> WalkFs for DriveFs<'_, D> {
    fn read_dir(
        &mut self,
        volume: &str,
        dir: &str,
    ) -> impl Future<Output = Result<Arc<Cands>>> + Send {
        let drive = self.0;
        async move {
            let names = drive.list_dir(volume, dir, usize::MAX).await?;
            let entries = names
                .into_iter()
                .map(|mut n| {
                    let is_dir = n.ends_with('/');
                    if is_dir {
                        n.pop();
                    }
                    (n, is_dir)
                })
                .collect();
            Ok(Arc::new(Cands::build(entries)))
        }
    }

    fn read_meta(
        &mut self,
        volume: &str,
        dir: &str,
        _head: usize,
        limit: u64,
    ) -> impl Future<Output = Result<Option<(Vec<u8>, bool)>>> + Send {
        let drive = self.0;
        let path = format!("{dir}/{META_FILE}");
        async move {
            match drive.read_all(volume, &path, limit).await {
                Ok(bytes) => Ok(Some((bytes, true))),
                // The volume's absence is the read_dir's to report.
                Err(DriveError::FileNotFound | DriveError::VolumeNotFound) => Ok(None),
                Err(e) => Err(e),
            }
        }
    }

    fn may_have_subdirs(
        &mut self,
        _volume: &str,
        _dir: &str,
    ) -> impl Future<Output = Result<bool>> + Send {
        std::future::ready(Ok(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(key_from_dir("a/b__XLDIR__"), "a/b/");
        assert_eq!(key_from_dir("a/b"), "a/b");
        assert_eq!(dir_from_key("a/b/"), "a/b__XLDIR__");
        assert_eq!(dir_from_key("a/b"), "a/b");
        assert_eq!(common_prefix("a/b/c", "", Some("/")), Some("a/"));
        assert_eq!(common_prefix("a/b/c", "a/", Some("/")), Some("a/b/"));
        assert_eq!(common_prefix("a/b", "a/", Some("/")), None);
        assert_eq!(common_prefix("a-b-c", "a", Some("-")), Some("a-"));
        assert_eq!(common_prefix("abc", "", None), None);
        assert_eq!(common_prefix("abc", "", Some("")), None);
    }

    #[test]
    fn filters() {
        assert!(subtree_wanted("", "a/b", None));
        assert!(subtree_wanted("a/", "a/b", None));
        assert!(!subtree_wanted("b/", "a/b", None));
        assert!(subtree_wanted("a/b/", "a/b", None));
        // A subtree before the marker is skipped unless it contains it.
        assert!(!subtree_wanted("a/", "", Some("b")));
        assert!(subtree_wanted("a/", "", Some("a/x")));
        assert!(subtree_wanted("c/", "", Some("b")));
        assert!(object_wanted("b", "", Some("a")));
        assert!(!object_wanted("a", "", Some("a")));
        assert!(!object_wanted("x", "a", None));
    }
}

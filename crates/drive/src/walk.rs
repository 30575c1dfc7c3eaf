//! [`Drive::walk`](crate::Drive::walk): one page of a volume walked in
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
//! The algorithm is written once, over [`WalkFs`]: the trait's default
//! method runs it over a drive's own [`list_dir`](crate::Drive::list_dir) and
//! [`read_all`](crate::Drive::read_all); [`LocalDrive`](crate::LocalDrive)
//! runs it inside one blocking task with direct system calls (no
//! per-entry hop between threads), reading only the head of each
//! metadata file and skipping the listing of object directories that the
//! link count shows have no subdirectory.

use std::collections::HashSet;
use std::future::Future;

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

/// What [`Drive::walk`](crate::Drive::walk) lists.
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

/// What the walk needs from a file system. Paths are relative to the
/// volume; `""` is the volume itself.
pub(crate) trait WalkFs: Send {
    /// The entries of a directory, in any order, without `.` and `..`.
    /// A missing directory is `FileNotFound`, a missing volume (when `dir`
    /// is empty) `VolumeNotFound`.
    fn read_dir(
        &mut self,
        volume: &str,
        dir: &str,
    ) -> impl Future<Output = Result<Vec<DirEntry>>> + Send;
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

/// One page of the walk over `fs`.
pub(crate) async fn walk<F: WalkFs>(fs: &mut F, o: &WalkOptions) -> Result<WalkPage> {
    let prefix = o.prefix.as_str();
    let after = o.after.as_deref();
    let delimiter = o.delimiter.as_deref().filter(|d| !d.is_empty());
    // Pending entries, smallest on top: (sort name, is a subtree). An
    // object's name is its key, a subtree's `dir/`.
    let mut stack: Vec<(String, bool)> = Vec::new();
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
    stack.push((start_dir, true));
    if let Some(k) = start_object {
        stack.push((k, false));
    }
    while let Some((name, subtree)) = stack.pop() {
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
            let entries = match fs.read_dir(&o.volume, dir).await {
                Ok(e) => e,
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
            let is_object_dir = entries.iter().any(|(e, is_dir)| !is_dir && e == META_FILE);
            let mut children: Vec<(String, bool)> = Vec::new();
            for (child, is_dir) in entries {
                if !is_dir {
                    continue;
                }
                // An object's data directories are not keys.
                if is_object_dir && uuid::Uuid::parse_str(&child).is_ok() {
                    continue;
                }
                let full = format!("{name}{child}");
                let key = key_from_dir(&full);
                if object_wanted(&key, prefix, after) {
                    children.push((key, false));
                }
                let sub = full + "/";
                if subtree_wanted(&sub, prefix, after) {
                    children.push((sub, true));
                }
            }
            children.sort_unstable();
            stack.extend(children.into_iter().rev());
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
                return Ok(WalkPage {
                    entries: out,
                    more: !stack.is_empty(),
                });
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
    ) -> impl Future<Output = Result<Vec<DirEntry>>> + Send {
        let drive = self.0;
        async move {
            let names = drive.list_dir(volume, dir, usize::MAX).await?;
            Ok(names
                .into_iter()
                .map(|mut n| {
                    let is_dir = n.ends_with('/');
                    if is_dir {
                        n.pop();
                    }
                    (n, is_dir)
                })
                .collect())
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

//! [`Drive::walk`](crate::Drive::walk) for a [`LocalDrive`](crate::LocalDrive):
//! a page of a listing walked whole inside one blocking task with direct
//! system calls (`sync_fs.rs`), the directories and `xl.meta` heads read
//! kept for later pages and listings while nothing changed (`cache.rs`),
//! and the next page of a listing walked ahead of its request (`ahead.rs`).

mod ahead;
mod cache;
mod sync_fs;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) use self::cache::Namespace;
use self::cache::Stamp;
use self::sync_fs::{SyncFs, run_ready};
use crate::error::{Ctx, Result, map_io};
use crate::walk::{WalkOptions, WalkPage};

/// Directories a walk read, with their stamps (`None`: too many to keep).
type Dirs = Option<Vec<(String, Stamp)>>;

impl super::Inner {
    /// A page of the walk, whole inside one blocking task (or taken from
    /// the walk run ahead of it).
    pub(super) async fn walk(&self, opts: &WalkOptions) -> Result<WalkPage> {
        let ns = Arc::clone(&self.io.blocking.ns);
        if let Some(after) = opts.after.as_deref()
            && let Some(ahead) = ns.take_ahead(opts, after)
            && let Some((page, since, dirs)) = self.serve_ahead(ahead, opts, after).await
        {
            ns.ahead_served.fetch_add(1, Ordering::Relaxed);
            ns.ahead_unused.store(0, Ordering::Relaxed);
            self.walk_ahead(opts, &page, since, Some(dirs));
            return Ok(page);
        }
        // Read before the walk: a change from now on invalidates what the
        // walk ahead of the next page keeps of this one.
        let since = ns.generation();
        let (page, dirs) = self.walk_now(opts.clone(), None).await?;
        if opts.after.is_some() {
            self.walk_ahead(opts, &page, since, dirs);
        }
        Ok(page)
    }

    /// Walks a page now, with the directories it read.
    async fn walk_now(
        &self,
        opts: WalkOptions,
        cancel: Option<Arc<AtomicBool>>,
    ) -> Result<(WalkPage, Dirs)> {
        walk_blocking(
            &self.io.blocking,
            opts,
            self.cfg.max_list_entries,
            self.root.clone(),
            cancel,
        )
        .await
    }
}

/// Runs one page of the walk in a blocking task of `blocking`.
async fn walk_blocking(
    blocking: &super::io::Blocking,
    opts: WalkOptions,
    max_entries: usize,
    label: PathBuf,
    cancel: Option<Arc<AtomicBool>>,
) -> Result<(WalkPage, Dirs)> {
    let ns = Arc::clone(&blocking.ns);
    blocking
        .run(move |root| {
            let mut fs = SyncFs::new(root, &ns, max_entries, &label);
            fs.cancel = cancel;
            let page = run_ready(crate::walk::walk(&mut fs, &opts))?;
            Ok(page.map(|p| (p, fs.dirs.take())))
        })
        .await
        .map_err(|e| map_io("walk", Ctx::Read, e))?
}

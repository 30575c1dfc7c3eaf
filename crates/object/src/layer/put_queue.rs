//! The PUT queue of an erasure set: a bound on the shard records that
//! streamed uploads have queued for, or are writing to, the set's drives,
//! all uploads together, counted in [`ALIGN`] pages.
//!
//! An upload takes room for a whole block's records at once (first come,
//! first served), so that uploads holding part of what they need cannot
//! starve each other. Room comes back as records are written, but it is
//! handed on in batches, a quarter of the queue at a time (or all of it
//! once nothing else is out). When the queue is full, the waiting uploads
//! thus resume together rather than one block at a time. Their next blocks
//! then reach the `md5x` hub together and are hashed in its SIMD lanes. One
//! at a time, each would hash alone, at a sixth of the speed of full lanes.

use std::sync::{Arc, Mutex};

use drive::ALIGN;
use tokio::sync::Semaphore;

/// A set's PUT queue (see the module documentation).
#[derive(Debug)]
pub(crate) struct PutQueue {
    free: Semaphore,
    /// Pages in all.
    total: usize,
    counts: Mutex<Counts>,
    /// Pages handed on at once (unless nothing else is out).
    batch: usize,
}

/// Where the pages are that are not free.
#[derive(Debug, Default)]
struct Counts {
    /// Given back but not handed on yet.
    held: usize,
    /// In rooms. (Pages a waiter has collected towards its room are in
    /// neither: they come back with it.)
    out: usize,
}

/// Room taken in a [`PutQueue`]; given back when dropped.
#[derive(Debug)]
pub(crate) struct Room {
    queue: Arc<PutQueue>,
    pages: usize,
}

impl PutQueue {
    /// A queue of `bytes` (whole pages, at least one).
    pub(crate) fn new(bytes: usize) -> Arc<PutQueue> {
        let total = (bytes / ALIGN).clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        Arc::new(PutQueue {
            free: Semaphore::new(total),
            total,
            counts: Mutex::new(Counts::default()),
            batch: total.div_ceil(4),
        })
    }

    /// Pages in all.
    #[cfg(test)]
    pub(crate) fn pages(&self) -> usize {
        self.total
    }

    /// Pages free to take right now.
    #[cfg(test)]
    pub(crate) fn free(&self) -> usize {
        self.free.available_permits()
    }

    /// Room for `pages` (all of the queue if it has fewer), waiting behind
    /// the uploads that asked first.
    pub(crate) async fn room(self: &Arc<Self>, pages: usize) -> Room {
        let pages = pages.min(self.total);
        let count = u32::try_from(pages).expect("total fits in u32");
        match self.free.acquire_many(count).await {
            // Counted by the Room from here on: its drop gives them back.
            Ok(permit) => permit.forget(),
            Err(_) => unreachable!("the semaphore is never closed"),
        }
        self.counts().out += pages;
        Room {
            queue: Arc::clone(self),
            pages,
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes back `pages`; hands on what it holds once that is a batch, or
    /// once no room is out any more (nothing else would give any back).
    fn give_back(&self, pages: usize) {
        let mut c = self.counts();
        c.out = c.out.saturating_sub(pages);
        c.held += pages;
        if c.held >= self.batch || c.out == 0 {
            self.free.add_permits(std::mem::take(&mut c.held));
        }
    }
}

impl Room {
    /// Pages of this room.
    #[cfg(test)]
    pub(crate) fn pages(&self) -> usize {
        self.pages
    }

    /// Splits off `pages` of this room (as many as it has, at most).
    pub(crate) fn split(&mut self, pages: usize) -> Room {
        let pages = pages.min(self.pages);
        self.pages -= pages;
        Room {
            queue: Arc::clone(&self.queue),
            pages,
        }
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        if self.pages > 0 {
            self.queue.give_back(self.pages);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A task waiting for `pages` of `q` (given a moment to queue up).
    async fn waiter(q: &Arc<PutQueue>, pages: usize) -> tokio::task::JoinHandle<Room> {
        let q = Arc::clone(q);
        let task = tokio::spawn(async move { q.room(pages).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        task
    }

    /// The room `task` got, failing if it does not get any soon.
    async fn got(task: tokio::task::JoinHandle<Room>) -> Room {
        tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .expect("the waiter got its room")
            .unwrap()
    }

    #[test]
    fn sizes() {
        assert_eq!(PutQueue::new(0).pages(), 1);
        assert_eq!(PutQueue::new(ALIGN - 1).pages(), 1);
        assert_eq!(PutQueue::new(64 * ALIGN + 5).pages(), 64);
        assert_eq!(PutQueue::new(usize::MAX).pages(), u32::MAX as usize);
    }

    #[tokio::test]
    async fn room_is_given_back_in_batches_or_when_nothing_is_out() {
        let q = PutQueue::new(100 * ALIGN);
        let mut a = q.room(60).await;
        let b = q.room(40).await;
        assert_eq!(q.free(), 0);
        // 10 pages back: under a batch (25) with room still out, held.
        drop(a.split(10));
        assert_eq!(q.free(), 0);
        assert_eq!(a.pages(), 50);
        // 30 more make a batch: all 40 handed on.
        drop(a.split(30));
        assert_eq!(q.free(), 40);
        // A waiter for 50 gets them once enough comes back.
        let waiter = waiter(&q, 50).await;
        assert!(!waiter.is_finished());
        // 5 back: held (under a batch, room out); 5 more: still held.
        let mut b = b;
        drop(b.split(5));
        drop(b.split(5));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        // The rest of `a` (20): held reaches 30, a batch: handed on.
        drop(a);
        let c = got(waiter).await;
        assert_eq!(c.pages(), 50);
        // What is left comes back when nothing else is out, batch or not.
        drop(b);
        drop(c);
        assert_eq!(q.free(), 100);
    }

    /// A waiter collects the free pages towards its room while it waits;
    /// those are not out in a room, and the last room given back hands on
    /// what is held even under a batch.
    #[tokio::test]
    async fn the_last_room_back_completes_a_waiter_that_collected_part() {
        let q = PutQueue::new(100 * ALIGN);
        let mut a = q.room(95).await;
        let waiter = waiter(&q, 100).await;
        for _ in 0..4 {
            drop(a.split(20));
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert!(!waiter.is_finished());
        }
        // 15 left: under a batch, but nothing else is out.
        drop(a);
        let w = got(waiter).await;
        assert_eq!(w.pages(), 100);
        drop(w);
        assert_eq!(q.free(), 100);
    }

    #[tokio::test]
    async fn asking_for_more_than_the_queue_takes_all_of_it() {
        let q = PutQueue::new(8 * ALIGN);
        let r = q.room(1000).await;
        assert_eq!(r.pages(), 8);
        assert_eq!(q.free(), 0);
        drop(r);
        assert_eq!(q.free(), 8);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_takers_never_exceed_the_queue_nor_stall() {
        let q = PutQueue::new(64 * ALIGN);
        let out = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = tokio::task::JoinSet::new();
        for t in 0..16usize {
            let (q, out) = (Arc::clone(&q), Arc::clone(&out));
            tasks.spawn(async move {
                for i in 0..200usize {
                    let want = 1 + (t * 7 + i * 13) % 40;
                    let mut room = q.room(want).await;
                    let now = out.fetch_add(want, std::sync::atomic::Ordering::SeqCst) + want;
                    assert!(now <= 64, "{now} pages out of 64");
                    let part = room.split(want / 2);
                    tokio::task::yield_now().await;
                    out.fetch_sub(want, std::sync::atomic::Ordering::SeqCst);
                    drop(part);
                    drop(room);
                }
            });
        }
        tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(r) = tasks.join_next().await {
                r.unwrap();
            }
        })
        .await
        .expect("takers stalled");
        assert_eq!(q.free(), 64);
    }
}

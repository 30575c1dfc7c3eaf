//! Waiting on one future per drive without a task per drive.
//!
//! A drive's small read (an `xl.meta` whose name and pages are cached)
//! completes on its first poll, and a task spawned for it adds the task's
//! allocation, scheduling and wake-up to a read that needs none. Reading
//! a GET's four `xl.meta` on the request's task instead gave hot 4 KiB
//! GETs 1.09x the objects per server CPU-second (`tessera-bench get
//! --obj-size 4KiB --concurrent 32` against one server on four
//! directories, both builds in turn; `docs/bench-notes/get.md`).
//! [`join_all`] polls the futures on the calling task; the ones that must
//! wait (the backend's reads, a remote drive's RPC) still wait
//! concurrently.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::Poll;

/// Runs `futs` concurrently on the calling task and returns their outputs
/// in order, `None` for a future that panicked. As with a spawned task's
/// panic, the others run on; the panicked future is dropped and never
/// polled again. Every poll polls each future not yet done, which for the
/// few drives of an erasure set costs less than a task each.
pub(crate) async fn join_all<'a, T>(
    futs: Vec<Pin<Box<dyn Future<Output = T> + Send + 'a>>>,
) -> Vec<Option<T>> {
    let mut out: Vec<Option<T>> = futs.iter().map(|_| None).collect();
    let mut pending: Vec<_> = futs.into_iter().map(Some).collect();
    let mut left = pending.len();
    std::future::poll_fn(|cx| {
        for (slot, done) in pending.iter_mut().zip(out.iter_mut()) {
            let Some(fut) = slot else { continue };
            match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
                Ok(Poll::Pending) => continue,
                Ok(Poll::Ready(v)) => *done = Some(v),
                Err(_) => tracing::error!("a drive operation panicked"),
            }
            *slot = None;
            left -= 1;
        }
        if left == 0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    type Fut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

    #[tokio::test]
    async fn outputs_come_back_in_order_whatever_order_they_finish_in() {
        let futs: Vec<Fut<'_, usize>> = (0..5usize)
            .map(|i| -> Fut<'_, usize> {
                Box::pin(async move {
                    // The first finishes last, the last first.
                    tokio::time::sleep(Duration::from_millis(10 * (5 - i as u64))).await;
                    i * 10
                })
            })
            .collect();
        let out = join_all(futs).await;
        assert_eq!(out, vec![Some(0), Some(10), Some(20), Some(30), Some(40)]);
    }

    #[tokio::test]
    async fn the_futures_wait_concurrently() {
        // Each waits for all four: polled one after another to the end,
        // the first would wait forever.
        let barrier = tokio::sync::Barrier::new(4);
        let futs: Vec<Fut<'_, ()>> = (0..4)
            .map(|_| -> Fut<'_, ()> {
                Box::pin(async {
                    barrier.wait().await;
                })
            })
            .collect();
        let joined = tokio::time::timeout(Duration::from_secs(30), join_all(futs)).await;
        assert_eq!(
            joined.expect("the futures waited one after another").len(),
            4
        );
    }

    #[tokio::test]
    async fn a_panicking_future_gives_none_and_the_others_finish() {
        let polls = Arc::new(AtomicUsize::new(0));
        let p = polls.clone();
        let futs: Vec<Fut<'_, u8>> = vec![
            Box::pin(async { 1 }),
            Box::pin(async move {
                p.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
                p.fetch_add(1, Ordering::SeqCst);
                panic!("drive bug");
            }),
            Box::pin(async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                3
            }),
        ];
        let out = join_all(futs).await;
        assert_eq!(out, vec![Some(1), None, Some(3)]);
        // Polled until it panicked (twice), never again.
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn no_futures_no_outputs() {
        let out: Vec<Option<u8>> = join_all(Vec::new()).await;
        assert!(out.is_empty());
    }
}

//! Admission of S3 requests: a bound on how many are served at once.
//!
//! Every request the gateway serves holds memory until its response body
//! is sent: a streamed upload holds the erasure block it is reading from
//! its client, a GET its read-ahead and its queued response frames. Without
//! a bound, enough concurrent clients (or slow ones) hold enough of it to
//! exhaust the machine. So a request takes a *slot* before anything is read
//! or authenticated, and keeps it until its response body is done (the slot
//! travels inside the [`ResponseBody`](crate::ResponseBody)).
//!
//! When every slot is taken, a request waits up to the configured deadline
//! for one, first come first served. A request still waiting then gets
//! `503 SlowDown`, which every S3 SDK retries with back-off. A client that
//! goes away while waiting leaves the queue at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::S3Error;

/// A request's slot; given back when dropped.
#[derive(Debug)]
pub struct Slot(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

/// How the bound stands, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdmissionStats {
    /// Requests admitted at most at once (0: no bound).
    pub limit: usize,
    /// Requests holding a slot now.
    pub active: usize,
    /// Requests waiting for a slot now.
    pub waiting: usize,
    /// Requests refused with `SlowDown` so far.
    pub refused: u64,
}

/// The bound on concurrent requests.
#[derive(Debug)]
pub struct Admission {
    /// `None`: unbounded.
    slots: Option<Arc<Semaphore>>,
    limit: usize,
    wait: Duration,
    waiting: AtomicUsize,
    refused: AtomicU64,
}

/// Counts a waiter for as long as it waits (also when its future is
/// dropped mid-wait).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Admission {
    /// At most `limit` requests at once (0: no bound), each waiting at most
    /// `wait` for a slot (zero: refused at once when all are taken).
    pub fn new(limit: usize, wait: Duration) -> Admission {
        let limit = limit.min(Semaphore::MAX_PERMITS);
        Admission {
            slots: (limit > 0).then(|| Arc::new(Semaphore::new(limit))),
            limit,
            wait,
            waiting: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// A slot, waiting for one if need be; `SlowDown` when none came free
    /// within the deadline.
    pub async fn admit(&self) -> Result<Slot, S3Error> {
        let Some(slots) = &self.slots else {
            return Ok(Slot(None));
        };
        if let Ok(p) = slots.clone().try_acquire_owned() {
            return Ok(Slot(Some(p)));
        }
        if !self.wait.is_zero() {
            self.waiting.fetch_add(1, Ordering::Relaxed);
            let _w = Waiting(&self.waiting);
            if let Ok(Ok(p)) = tokio::time::timeout(self.wait, slots.clone().acquire_owned()).await
            {
                return Ok(Slot(Some(p)));
            }
        }
        self.refused.fetch_add(1, Ordering::Relaxed);
        Err(S3Error::with_message(
            "SlowDown",
            format!(
                "The server is serving its limit of {} requests at once; none finished within {:?}. \
                 Please reduce your request rate.",
                self.limit, self.wait
            ),
        ))
    }

    /// The bound, the slots taken, the waiters and the refusals so far.
    pub fn stats(&self) -> AdmissionStats {
        AdmissionStats {
            limit: self.limit,
            active: self
                .slots
                .as_ref()
                .map_or(0, |s| self.limit - s.available_permits()),
            waiting: self.waiting.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiter_gets_the_first_slot_given_back() {
        let a = Arc::new(Admission::new(2, Duration::from_secs(30)));
        let s1 = a.admit().await.unwrap();
        let _s2 = a.admit().await.unwrap();
        assert_eq!(a.stats().active, 2);
        let a2 = a.clone();
        let waiter = tokio::spawn(async move { a2.admit().await.map(|_| ()) });
        while a.stats().waiting == 0 {
            tokio::task::yield_now().await;
        }
        assert!(!waiter.is_finished());
        drop(s1);
        tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("the waiter got the slot")
            .unwrap()
            .unwrap();
        let st = a.stats();
        assert_eq!((st.waiting, st.refused), (0, 0), "{st:?}");
    }

    #[tokio::test]
    async fn a_waiter_is_refused_with_slow_down_at_the_deadline() {
        let a = Admission::new(1, Duration::from_millis(50));
        let _s = a.admit().await.unwrap();
        let t = std::time::Instant::now();
        let e = a.admit().await.unwrap_err();
        assert!(t.elapsed() >= Duration::from_millis(50));
        assert_eq!(e.code, "SlowDown");
        assert_eq!(e.status, http::StatusCode::SERVICE_UNAVAILABLE);
        let st = a.stats();
        assert_eq!(
            st,
            AdmissionStats {
                limit: 1,
                active: 1,
                waiting: 0,
                refused: 1
            }
        );
    }

    #[tokio::test]
    async fn no_wait_refuses_at_once_and_a_free_slot_admits() {
        let a = Admission::new(1, Duration::ZERO);
        let s = a.admit().await.unwrap();
        assert_eq!(a.admit().await.unwrap_err().code, "SlowDown");
        drop(s);
        let _s = a.admit().await.unwrap();
        assert_eq!(a.stats().refused, 1);
    }

    #[tokio::test]
    async fn a_waiter_that_goes_away_leaves_the_queue() {
        let a = Arc::new(Admission::new(1, Duration::from_secs(30)));
        let s = a.admit().await.unwrap();
        let a2 = a.clone();
        let waiter = tokio::spawn(async move { a2.admit().await.map(|_| ()) });
        while a.stats().waiting == 0 {
            tokio::task::yield_now().await;
        }
        waiter.abort();
        let _ = waiter.await;
        assert_eq!(a.stats().waiting, 0);
        drop(s);
        // The slot is free for the next request, not held by the gone one.
        let _s = a.admit().await.unwrap();
        assert_eq!(a.stats().refused, 0);
    }

    #[tokio::test]
    async fn zero_means_no_bound() {
        let a = Admission::new(0, Duration::ZERO);
        let mut held = Vec::new();
        for _ in 0..1000 {
            held.push(a.admit().await.unwrap());
        }
        assert_eq!(held.len(), 1000);
        assert_eq!(a.stats().active, 0);
    }
}

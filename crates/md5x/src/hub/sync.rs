//! The synchronous update's path through the hub: submit, then combine or
//! park the thread until the job is done, and on unwinding withdraw the
//! job before the borrowed bytes go away.

use std::sync::Arc;
use std::time::Duration;

use super::combiner::Submit;
use super::job::{BlockPtr, Job, Phase, Segment, Waiter};
use super::{Shared, lock};
use crate::portable::{self, BLOCK};

/// How long a synchronous owner of a claimed job sleeps between looks at
/// it when no wake-up comes (a backstop: combiners wake owners).
const CLAIMED_BACKSTOP: Duration = Duration::from_millis(20);

/// Hashes `whole` (whole blocks borrowed from the caller) from `state`
/// through the hub, synchronously. Does not return or unwind before no
/// combiner reads `whole` any more.
pub(super) fn run_sync(shared: &Shared, state: [u32; 4], whole: &[u8]) -> [u32; 4] {
    let segment = Segment {
        data: BlockPtr(whole.as_ptr()),
        blocks: whole.len() / BLOCK,
    };
    let job = Arc::new(Job::new(vec![segment], state, None));
    let mut guard = SyncGuard {
        shared,
        job: &job,
        armed: true,
    };
    match shared.submit(&job, Waiter::Thread(std::thread::current())) {
        Submit::Alone => {
            shared.count_alone(whole.len() / BLOCK);
            let mut s = state;
            portable::compress(&mut s, whole);
            guard.armed = false;
            return s;
        }
        Submit::Lead => {
            shared.combine(&job, None);
        }
        Submit::Wait => loop {
            let mut inner = lock(&job.inner);
            match inner.phase {
                Phase::Done => break,
                Phase::Elected => {
                    inner.phase = Phase::Claimed;
                    drop(inner);
                    shared.combine(&job, None);
                    break;
                }
                Phase::Queued if inner.queued_at.elapsed() > shared.config.max_queue_wait => {
                    drop(inner);
                    // Still queued after the bound: work on it ourselves.
                    let mut q = lock(&shared.queue);
                    let mut inner = lock(&job.inner);
                    if inner.phase == Phase::Queued {
                        if let Some(pos) = q.jobs.iter().position(|j| Arc::ptr_eq(j, &job)) {
                            q.jobs.remove(pos);
                        }
                        inner.phase = Phase::Claimed;
                        q.combiners += 1;
                        drop(inner);
                        drop(q);
                        shared.combine(&job, None);
                        break;
                    }
                }
                phase => {
                    // Queued: sleep until the job would be overdue. Claimed:
                    // its combiner wakes us when it is done, or elects us
                    // if it is handed back; the timeout is only a backstop
                    // (waking every few hundred microseconds while a batch
                    // runs would cost CPU time on every waiting thread).
                    let nap = if phase == Phase::Queued {
                        shared
                            .config
                            .max_queue_wait
                            .saturating_sub(inner.queued_at.elapsed())
                            + Duration::from_micros(10)
                    } else {
                        CLAIMED_BACKSTOP
                    };
                    drop(inner);
                    std::thread::park_timeout(nap);
                }
            }
        },
    }
    guard.armed = false;
    let inner = lock(&job.inner);
    debug_assert_eq!(inner.phase, Phase::Done);
    inner.state
}

/// On unwinding out of `run_sync`, withdraws the job and waits until no
/// combiner reads the caller's bytes.
struct SyncGuard<'a> {
    shared: &'a Shared,
    job: &'a Arc<Job>,
    armed: bool,
}

impl Drop for SyncGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if self.shared.abandon(self.job) {
            // A combiner holds it: it lets go at its next quantum.
            lock(&self.job.inner).waiter = Waiter::Thread(std::thread::current());
            loop {
                let phase = lock(&self.job.inner).phase;
                if matches!(phase, Phase::Done | Phase::Released) {
                    break;
                }
                std::thread::park_timeout(Duration::from_millis(1));
            }
        }
    }
}

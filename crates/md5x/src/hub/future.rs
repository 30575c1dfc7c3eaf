//! [`BlockUpdate`]: the future of an owned update, which queues its job,
//! combines when it is elected, and gives the hasher and the buffers back.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::combiner::Submit;
use super::hasher::Hasher;
use super::job::{Job, Phase, Waiter};
use super::lock;

/// The future of [`Hasher::update_block`] and [`Hasher::update_parts`]:
/// resolves to the hasher and the buffer(s) given (`O`).
#[must_use = "futures do nothing unless polled"]
pub struct BlockUpdate<O = Vec<u8>> {
    pub(super) stage: Stage<O>,
}

pub(super) enum Stage<O> {
    /// Not submitted yet.
    New { hasher: Hasher, job: Arc<Job> },
    /// Queued; waiting to be done or elected.
    Waiting { hasher: Hasher, job: Arc<Job> },
    /// Finished (or never needed the hub).
    Ready(Hasher, O),
    /// Output taken.
    Gone,
}

// The future never pins what it holds (the buffers are only moved in and
// out), so it is `Unpin` whatever `O` is.
impl<O> Unpin for BlockUpdate<O> {}

impl<O> std::fmt::Debug for BlockUpdate<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BlockUpdate")
    }
}

/// Completes a finished job: the hasher takes the state (its tail was
/// buffered at submission), the caller's buffers come back.
fn complete<O: 'static>(mut hasher: Hasher, job: &Job) -> (Hasher, O) {
    hasher.state = lock(&job.inner).state;
    let owned = lock(&job.owned)
        .take()
        .expect("an owned update's job owns its buffers");
    let caller = owned
        .caller
        .downcast::<O>()
        .expect("a job's buffers are of its future's type");
    (hasher, *caller)
}

impl<O: Send + 'static> Future for BlockUpdate<O> {
    type Output = (Hasher, O);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = Pin::into_inner(self);
        loop {
            match std::mem::replace(&mut this.stage, Stage::Gone) {
                Stage::New { hasher, job } => {
                    let shared = hasher.shared.clone();
                    match shared.submit(&job, Waiter::Task(cx.waker().clone())) {
                        Submit::Alone => {
                            shared.count_alone(job.blocks);
                            let mut inner = lock(&job.inner);
                            // SAFETY: the job was never queued: this caller
                            // is its only user, and it owns the bytes.
                            unsafe { job.compress_all(&mut inner.state) };
                            inner.phase = Phase::Done;
                            drop(inner);
                            return Poll::Ready(complete(hasher, &job));
                        }
                        Submit::Lead => {
                            lock(&job.inner).waiter = Waiter::Task(cx.waker().clone());
                            if shared.combine(&job, Some(shared.config.async_budget_quanta.max(1)))
                            {
                                return Poll::Ready(complete(hasher, &job));
                            }
                            this.stage = Stage::Waiting { hasher, job };
                            return Poll::Pending;
                        }
                        Submit::Wait => this.stage = Stage::Waiting { hasher, job },
                    }
                }
                Stage::Waiting { hasher, job } => {
                    let mut inner = lock(&job.inner);
                    match inner.phase {
                        Phase::Done => {
                            drop(inner);
                            return Poll::Ready(complete(hasher, &job));
                        }
                        Phase::Elected => {
                            inner.phase = Phase::Claimed;
                            inner.waiter = Waiter::Task(cx.waker().clone());
                            drop(inner);
                            let shared = hasher.shared.clone();
                            if shared.combine(&job, Some(shared.config.async_budget_quanta.max(1)))
                            {
                                return Poll::Ready(complete(hasher, &job));
                            }
                            this.stage = Stage::Waiting { hasher, job };
                            return Poll::Pending;
                        }
                        _ => {
                            inner.waiter = Waiter::Task(cx.waker().clone());
                            drop(inner);
                            this.stage = Stage::Waiting { hasher, job };
                            return Poll::Pending;
                        }
                    }
                }
                Stage::Ready(hasher, owner) => return Poll::Ready((hasher, owner)),
                Stage::Gone => panic!("BlockUpdate polled after completion"),
            }
        }
    }
}

impl<O> Drop for BlockUpdate<O> {
    fn drop(&mut self) {
        if let Stage::Waiting { hasher, job } = &self.stage {
            // The job owns its buffers, so a combiner still holding it
            // reads valid memory; it lets go at its next quantum.
            hasher.shared.abandon(job);
        }
    }
}

//! The queue protocol and flat combining: submitting a job, electing a
//! waiting owner to combine, abandoning a job, and the combiner that
//! advances the queued jobs together in the kernel's lanes.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::job::{Job, Phase, Waiter};
use super::{Queue, Shared, bump, lock};
use crate::portable::{self, BLOCK};

/// What a submitter must do with its job.
pub(super) enum Submit {
    /// Hash it on this thread, alone (the queue is not involved).
    Alone,
    /// Run `combine` for it now (it is claimed).
    Lead,
    /// It is queued: wait.
    Wait,
}

impl Shared {
    /// Counts an update of `blocks` blocks hashed by its caller alone.
    pub(super) fn count_alone(&self, blocks: usize) {
        bump(&self.counters.jobs_alone, 1);
        bump(&self.counters.blocks_alone, blocks as u64);
    }

    /// Whether a job of `bytes` whole-block bytes should go to the queue.
    pub(super) fn wants_lanes(&self, bytes: usize) -> bool {
        self.width > 1
            && bytes >= self.config.min_job_bytes.max(BLOCK)
            && self.live_hashers.load(Ordering::Relaxed) >= self.config.min_simd_streams
    }

    pub(super) fn submit(&self, job: &Arc<Job>, waiter: Waiter) -> Submit {
        let mut q = lock(&self.queue);
        if q.jobs.len() >= self.config.max_queued {
            return Submit::Alone;
        }
        bump(&self.counters.jobs_combined, 1);
        if q.combiners == 0 || q.jobs.len() >= self.width {
            q.combiners += 1;
            return Submit::Lead;
        }
        let mut inner = lock(&job.inner);
        inner.phase = Phase::Queued;
        inner.queued_at = Instant::now();
        inner.waiter = waiter;
        drop(inner);
        q.jobs.push_back(job.clone());
        Submit::Wait
    }

    /// Elects the owner of the first queued job to run a combiner (the
    /// caller has counted it in `combiners`). Returns its waiter to wake
    /// once the queue lock is released.
    fn elect_front(&self, q: &mut Queue) -> Option<Waiter> {
        let job = q.jobs.pop_front()?;
        let mut inner = lock(&job.inner);
        inner.phase = Phase::Elected;
        q.combiners += 1;
        bump(&self.counters.elections, 1);
        Some(std::mem::replace(&mut inner.waiter, Waiter::None))
    }

    /// Gives up a combiner role (`combiners -= 1`); if that leaves queued
    /// jobs with no combiner, elects the first one's owner.
    fn leave(&self, q: &mut Queue) -> Option<Waiter> {
        q.combiners -= 1;
        if q.combiners == 0 {
            self.elect_front(q)
        } else {
            None
        }
    }

    /// The owner gives up `job` before it is done (a dropped future or an
    /// unwinding update). Returns whether a combiner still holds it (the
    /// bytes are still being read).
    pub(super) fn abandon(&self, job: &Arc<Job>) -> bool {
        let mut q = lock(&self.queue);
        let mut inner = lock(&job.inner);
        let mut wake = None;
        let held = match inner.phase {
            Phase::Queued => {
                if let Some(pos) = q.jobs.iter().position(|j| Arc::ptr_eq(j, job)) {
                    q.jobs.remove(pos);
                }
                inner.phase = Phase::Released;
                false
            }
            Phase::Elected => {
                inner.phase = Phase::Released;
                wake = self.leave(&mut q);
                false
            }
            Phase::Claimed => {
                inner.abandoned = true;
                true
            }
            Phase::Done | Phase::Released => false,
        };
        inner.waiter = Waiter::None;
        drop(inner);
        drop(q);
        if let Some(w) = wake {
            w.wake();
        }
        held
    }

    /// Runs a combiner for `own` (claimed by this caller, counted in
    /// `combiners`) until `own` is done (returns true), or until `budget`
    /// quanta have run (returns false): then every lane, `own` first, goes
    /// back to the queue and the role is left, which elects `own`'s owner
    /// again if no other combiner runs. The async path uses a budget so
    /// that its worker thread gets to run the other tasks (whose next
    /// blocks fill the lanes) between two stretches of combining.
    pub(super) fn combine(&self, own: &Arc<Job>, budget: Option<usize>) -> bool {
        bump(&self.counters.combiner_runs, 1);
        let start = {
            let inner = lock(&own.inner);
            (inner.state, inner.done_blocks)
        };
        let mut c = Combiner {
            shared: self,
            lanes: vec![Lane {
                job: own.clone(),
                state: start.0,
                done_blocks: start.1,
            }],
            finished: false,
        };
        c.run(own, budget)
    }
}

/// A job in a combiner's lane, with its progress (the job's own `state`
/// is stale while claimed).
struct Lane {
    job: Arc<Job>,
    state: [u32; 4],
    done_blocks: usize,
}

struct Combiner<'a> {
    shared: &'a Shared,
    lanes: Vec<Lane>,
    /// Set on the normal exit; `Drop` hands the lanes back otherwise.
    finished: bool,
}

impl Combiner<'_> {
    fn run(&mut self, own: &Arc<Job>, mut budget: Option<usize>) -> bool {
        let s = self.shared;
        let quantum = s.config.quantum_blocks;
        let mut states: Vec<[u32; 4]> = Vec::with_capacity(s.width);
        loop {
            // Done lanes are retired after each quantum, so the own job is
            // done when it is no longer in a lane.
            let Some(mine) = self.lanes.iter().position(|l| Arc::ptr_eq(&l.job, own)) else {
                self.hand_back();
                return true;
            };
            if budget == Some(0) {
                // `hand_back` pushes the lanes to the front in order: own
                // job first, so the next combiner (or its owner, elected)
                // resumes it before the others.
                self.lanes.swap(0, mine);
                self.hand_back();
                return false;
            }
            budget = budget.map(|b| b - 1);
            self.refill();
            let n = self.lanes.len();
            // Alone in the lanes while other hashers are live: look at the
            // queue again sooner, so that their blocks join before this one
            // has spent much of its job on the single-stream code.
            let quantum = if n == 1 && s.live_hashers.load(Ordering::Relaxed) > 1 {
                (quantum / 8).max(1)
            } else {
                quantum
            };
            let blocks = self
                .lanes
                .iter()
                .map(|l| l.job.run_len(l.done_blocks))
                .min()
                .unwrap_or(0)
                .min(quantum);
            if n >= s.config.min_simd_streams.max(2) {
                states.clear();
                states.extend(self.lanes.iter().map(|l| l.state));
                // SAFETY: every lane's job is claimed by this combiner
                // (phase `Claimed`, set under the queue lock when it was
                // taken), and the slices die before any lane is retired.
                let data: Vec<&[u8]> = self
                    .lanes
                    .iter()
                    .map(|l| unsafe { l.job.run(l.done_blocks) })
                    .collect();
                s.config.kernel.compress_lanes(&mut states, &data, blocks);
                drop(data);
                for (l, st) in self.lanes.iter_mut().zip(&states) {
                    l.state = *st;
                }
                bump(&s.counters.blocks_in_lanes, (blocks * n) as u64);
                bump(&s.counters.lane_calls, 1);
                bump(&s.counters.lane_steps, blocks as u64);
            } else {
                for l in &mut self.lanes {
                    // SAFETY: as above, the job is claimed by this
                    // combiner.
                    let run = unsafe { l.job.run(l.done_blocks) };
                    portable::compress(&mut l.state, &run[..blocks * BLOCK]);
                }
                bump(&s.counters.blocks_single, (blocks * n) as u64);
            }
            for l in &mut self.lanes {
                l.done_blocks += blocks;
            }
            self.retire_done(own);
        }
    }

    /// Takes queued jobs into free lanes, drops abandoned lanes, and elects
    /// an extra combiner for a job that has waited too long.
    fn refill(&mut self) {
        let s = self.shared;
        let mut wake = Vec::new();
        {
            let mut q = lock(&s.queue);
            self.lanes.retain(|l| {
                let mut inner = lock(&l.job.inner);
                if !inner.abandoned {
                    return true;
                }
                inner.phase = Phase::Released;
                wake.push(std::mem::replace(&mut inner.waiter, Waiter::None));
                false
            });
            while self.lanes.len() < s.width {
                let Some(job) = q.jobs.pop_front() else { break };
                let mut inner = lock(&job.inner);
                inner.phase = Phase::Claimed;
                let lane = Lane {
                    job: job.clone(),
                    state: inner.state,
                    done_blocks: inner.done_blocks,
                };
                drop(inner);
                self.lanes.push(lane);
            }
            let overdue = q
                .jobs
                .front()
                .is_some_and(|j| lock(&j.inner).queued_at.elapsed() > s.config.max_queue_wait);
            if overdue && let Some(w) = s.elect_front(&mut q) {
                wake.push(w);
            }
        }
        for w in wake {
            w.wake();
        }
    }

    /// Gives finished jobs back to their owners.
    fn retire_done(&mut self, own: &Arc<Job>) {
        let mut i = 0;
        while i < self.lanes.len() {
            let l = &self.lanes[i];
            if l.done_blocks < l.job.blocks {
                i += 1;
                continue;
            }
            let l = self.lanes.swap_remove(i);
            let mut inner = lock(&l.job.inner);
            inner.state = l.state;
            inner.done_blocks = l.done_blocks;
            inner.phase = Phase::Done;
            let w = std::mem::replace(&mut inner.waiter, Waiter::None);
            drop(inner);
            let mine = Arc::ptr_eq(&l.job, own);
            drop(l);
            if !mine {
                w.wake();
            }
        }
    }

    /// Puts the jobs still in lanes back at the front of the queue (in
    /// their order) and leaves the combiner role.
    fn hand_back(&mut self) {
        let s = self.shared;
        let mut q = lock(&s.queue);
        for l in self.lanes.drain(..).rev() {
            let mut inner = lock(&l.job.inner);
            inner.state = l.state;
            inner.done_blocks = l.done_blocks;
            if inner.abandoned {
                inner.phase = Phase::Released;
                let w = std::mem::replace(&mut inner.waiter, Waiter::None);
                drop(inner);
                // Waking a thread under the queue lock is harmless (unpark
                // only sets a flag); tasks are only woken after.
                w.wake();
                continue;
            }
            inner.phase = Phase::Queued;
            inner.queued_at = Instant::now();
            drop(inner);
            q.jobs.push_front(l.job);
        }
        let wake = s.leave(&mut q);
        self.finished = true;
        drop(q);
        if let Some(w) = wake {
            w.wake();
        }
    }
}

impl Drop for Combiner<'_> {
    fn drop(&mut self) {
        if !self.finished {
            // Unwinding out of a kernel: give every job back (states as of
            // the last completed quantum) so no owner waits for us.
            self.hand_back();
        }
    }
}

//! Steady-state calls do not allocate: encode, verify, and reconstruct of a
//! loss pattern seen before (its decoding matrix is cached).
//!
//! A counting global allocator counts this thread's allocations; this file
//! holds a single test so nothing else runs on it meanwhile.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::{Rng, coder, kernels};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards every call unchanged to the system allocator; counting a
// thread-local `Cell` neither allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn steady_state_calls_do_not_allocate() {
    let mut rng = Rng::with_seed(0xa110c);
    for kernel in kernels() {
        for (k, m, len) in [(8, 4, 4099), (12, 4, 100), (200, 56, 65)] {
            let rs = coder(k, m, kernel);
            let mut shards = vec![vec![0u8; len]; k + m];
            for s in &mut shards[..k] {
                rng.fill(s);
            }
            let mut present = vec![true; k + m];
            for p in present.iter_mut().take(m) {
                *p = false;
            }
            // Warm up: the first reconstruct builds and caches the matrix.
            rs.encode_shards(&mut shards).unwrap();
            rs.reconstruct(&mut shards, &present).unwrap();

            let before = allocations();
            rs.encode_shards(&mut shards).unwrap();
            let (data, parity) = shards.split_at_mut(k);
            rs.encode(data, parity).unwrap();
            assert!(rs.verify_shards(&shards).unwrap());
            rs.reconstruct(&mut shards, &present).unwrap();
            rs.reconstruct_data(&mut shards, &present).unwrap();
            let after = allocations();
            assert_eq!(
                after - before,
                0,
                "kernel {kernel} {k}+{m}: steady-state calls allocated"
            );
        }
    }
}

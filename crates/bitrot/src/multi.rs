//! Multi-stream scheduling: hashing many independent inputs with a kernel's
//! lockstep (interleaved) path.
//!
//! Up to `capacity` streams are active at once (8, rounded up to a multiple
//! of the kernel's widest width). Each step groups the active streams by the
//! kernel's lane widths (widest first, never leaving a lone stream behind
//! when a narrower group avoids it), advances every group
//! by the number of whole packets its shortest member still has, finishes
//! the streams that have no whole packet left (tail and finalisation on the
//! single-stream path), and refills the freed lanes with the next inputs.
//! Equal lengths, the erasure-coding case, therefore run entirely in
//! lockstep; unequal lengths keep the lanes busy as long as there are at
//! least two streams left. A lone last stream uses the single-stream path.

use crate::kernel::{Kernel, words_to_bytes};
use crate::portable::{PACKET, ROUNDS_256, State, digest256_from};

/// Streams kept active at once: at least this many, rounded up to a
/// multiple of the kernel's widest lockstep width.
const MIN_ACTIVE: usize = 8;

/// Upper bound of the active streams (array size).
const MAX_LANES: usize = 16;

pub(crate) fn hash256_many(kernel: Kernel, key: &[u8; 32], inputs: &[&[u8]], out: &mut [[u8; 32]]) {
    assert_eq!(
        inputs.len(),
        out.len(),
        "hash256_many: one output digest per input is required"
    );
    let widths = kernel.lane_widths();
    let Some(&max_width) = widths.first() else {
        for (o, input) in out.iter_mut().zip(inputs) {
            *o = kernel.hash256(key, input);
        }
        return;
    };
    let capacity = (MIN_ACTIVE.div_ceil(max_width) * max_width).min(MAX_LANES);
    let min_width = *widths.last().expect("non-empty");

    let base = State::new(key);
    let mut states = [base; MAX_LANES];
    // (input index, bytes consumed) per active lane.
    let mut meta = [(0usize, 0usize); MAX_LANES];
    let mut active = 0;
    let mut next = 0;
    loop {
        // Refill. Inputs without a whole packet never need a lane.
        while active < capacity && next < inputs.len() {
            if inputs[next].len() < PACKET {
                out[next] = kernel.hash256(key, inputs[next]);
            } else {
                states[active] = base;
                meta[active] = (next, 0);
                active += 1;
            }
            next += 1;
        }
        if active == 0 {
            return;
        }
        if active < min_width {
            // One stream left (and nothing queued): single-stream path.
            for lane in 0..active {
                let (idx, pos) = meta[lane];
                let rest = &inputs[idx][pos..];
                let whole = rest.len() & !(PACKET - 1);
                kernel.update(&mut states[lane], &rest[..whole]);
                let s = kernel.finish(&states[lane], &rest[whole..], ROUNDS_256);
                out[idx] = words_to_bytes(digest256_from(&s));
            }
            active = 0;
            continue;
        }

        // Advance the active lanes, group by group.
        let mut start = 0;
        while active - start >= min_width {
            let left = active - start;
            // The widest group that does not leave a lone stream behind
            // (4 = 2 + 2 rather than 3 + 1), else the widest that fits.
            let w = widths
                .iter()
                .copied()
                .find(|&w| w <= left && (left - w == 0 || left - w >= min_width))
                .or_else(|| widths.iter().copied().find(|&w| w <= left))
                .expect("min_width fits");
            let mut slices: [&[u8]; MAX_LANES] = [&[]; MAX_LANES];
            let mut packets = usize::MAX;
            for lane in start..start + w {
                let (idx, pos) = meta[lane];
                let rest = &inputs[idx][pos..];
                slices[lane - start] = rest;
                packets = packets.min(rest.len() / PACKET);
            }
            kernel.lockstep(&mut states[start..start + w], &slices[..w], packets);
            for m in &mut meta[start..start + w] {
                m.1 += packets * PACKET;
            }
            start += w;
        }

        // Retire lanes with less than a packet left.
        let mut lane = 0;
        while lane < active {
            let (idx, pos) = meta[lane];
            let rest = &inputs[idx][pos..];
            if rest.len() < PACKET {
                let s = kernel.finish(&states[lane], rest, ROUNDS_256);
                out[idx] = words_to_bytes(digest256_from(&s));
                active -= 1;
                states[lane] = states[active];
                meta[lane] = meta[active];
            } else {
                lane += 1;
            }
        }
    }
}

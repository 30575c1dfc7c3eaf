//! Several whole messages hashed together in a kernel's lanes
//! ([`Kernel::digest_many`](crate::Kernel::digest_many)).

use crate::portable::{self, BLOCK, INIT};

/// What lane scheduling needs from a kernel; implemented by `Kernel` and,
/// in tests, by deliberately broken kernels.
pub(crate) trait Compress {
    fn lanes(&self) -> usize;
    fn compress_lanes(&self, states: &mut [[u32; 4]], data: &[&[u8]], blocks: usize);
}

impl Compress for crate::Kernel {
    fn lanes(&self) -> usize {
        crate::Kernel::lanes(*self)
    }
    fn compress_lanes(&self, states: &mut [[u32; 4]], data: &[&[u8]], blocks: usize) {
        crate::Kernel::compress_lanes(*self, states, data, blocks);
    }
}

/// One message in a lane: its index, state and the blocks it has consumed.
struct Lane {
    input: usize,
    state: [u32; 4],
    done_blocks: usize,
}

/// `out[i] = md5(inputs[i])`, whole blocks in the lanes of `k`: all lanes
/// run until the shortest message's whole blocks are consumed, that lane is
/// finished (tail and padding on the portable code) and refilled with the
/// next message.
///
/// # Panics
/// If `inputs.len() != out.len()`.
pub(crate) fn digest_many(k: &dyn Compress, inputs: &[&[u8]], out: &mut [[u8; 16]]) {
    assert_eq!(inputs.len(), out.len(), "one output per input");
    let width = k.lanes().max(1);
    let mut lanes: Vec<Lane> = Vec::with_capacity(width);
    let mut next = 0;
    let mut states = Vec::with_capacity(width);
    let mut data: Vec<&[u8]> = Vec::with_capacity(width);
    loop {
        while lanes.len() < width && next < inputs.len() {
            let input = inputs[next];
            if input.len() < BLOCK {
                out[next] = portable::finish(&INIT, input, input.len() as u64);
            } else {
                lanes.push(Lane {
                    input: next,
                    state: INIT,
                    done_blocks: 0,
                });
            }
            next += 1;
        }
        if lanes.is_empty() {
            return;
        }
        let blocks = lanes
            .iter()
            .map(|l| inputs[l.input].len() / BLOCK - l.done_blocks)
            .min()
            .unwrap_or(0);
        states.clear();
        data.clear();
        for l in &lanes {
            states.push(l.state);
            data.push(&inputs[l.input][l.done_blocks * BLOCK..]);
        }
        k.compress_lanes(&mut states, &data, blocks);
        for (l, s) in lanes.iter_mut().zip(&states) {
            l.state = *s;
            l.done_blocks += blocks;
        }
        lanes.retain(|l| {
            let input = inputs[l.input];
            let whole = input.len() / BLOCK;
            if l.done_blocks < whole {
                return true;
            }
            out[l.input] = portable::finish(&l.state, &input[whole * BLOCK..], input.len() as u64);
            false
        });
    }
}

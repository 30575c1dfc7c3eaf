//! The portable kernel: MD5 on plain `u32` arithmetic, one 64-byte block at
//! a time. It is the fallback on every CPU, the single-stream path of every
//! kernel (MD5 is a chain of dependent steps, so one stream gains nothing
//! from vector registers), and the reference the lane kernels are checked
//! against at start-up.

use crate::rounds::md5_rounds;

/// Bytes per MD5 block.
pub const BLOCK: usize = 64;

/// The initial state `A, B, C, D` (RFC 1321, section 3.3).
pub const INIT: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

/// Mixes `blocks` (a whole number of 64-byte blocks) into `state`.
pub fn compress(state: &mut [u32; 4], blocks: &[u8]) {
    debug_assert_eq!(blocks.len() % BLOCK, 0);
    let [mut a, mut b, mut c, mut d] = *state;
    for block in blocks.chunks_exact(BLOCK) {
        let mut m = [0u32; 16];
        for (w, bytes) in m.iter_mut().zip(block.chunks_exact(4)) {
            *w = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        let (a0, b0, c0, d0) = (a, b, c, d);
        // F = (b & c) | (!b & d), written with one fewer operation.
        macro_rules! ff {
            ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $i:expr, $k:expr, $s:expr) => {
                $a = $a
                    .wrapping_add($m[$i].wrapping_add($k))
                    .wrapping_add($d ^ ($b & ($c ^ $d)))
                    .rotate_left($s)
                    .wrapping_add($b);
            };
        }
        // G = (b & d) | (c & !d); the two terms share no bits, so `+` can
        // replace `|` and the two halves are added independently.
        macro_rules! gg {
            ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $i:expr, $k:expr, $s:expr) => {
                $a = $a
                    .wrapping_add($m[$i].wrapping_add($k))
                    .wrapping_add(!$d & $c)
                    .wrapping_add($d & $b)
                    .rotate_left($s)
                    .wrapping_add($b);
            };
        }
        macro_rules! hh {
            ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $i:expr, $k:expr, $s:expr) => {
                $a = $a
                    .wrapping_add($m[$i].wrapping_add($k))
                    .wrapping_add($b ^ $c ^ $d)
                    .rotate_left($s)
                    .wrapping_add($b);
            };
        }
        macro_rules! ii {
            ($a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $i:expr, $k:expr, $s:expr) => {
                $a = $a
                    .wrapping_add($m[$i].wrapping_add($k))
                    .wrapping_add($c ^ ($b | !$d))
                    .rotate_left($s)
                    .wrapping_add($b);
            };
        }
        md5_rounds!(ff, gg, hh, ii, a, b, c, d, m);
        a = a.wrapping_add(a0);
        b = b.wrapping_add(b0);
        c = c.wrapping_add(c0);
        d = d.wrapping_add(d0);
    }
    *state = [a, b, c, d];
}

/// Finishes a message: `tail` (fewer than 64 bytes) is the end of a message
/// of `total_len` bytes whose whole blocks are already in `state`. Applies
/// the padding and length (RFC 1321, sections 3.1 and 3.2) and returns the
/// digest.
pub fn finish(state: &[u32; 4], tail: &[u8], total_len: u64) -> [u8; 16] {
    assert!(tail.len() < BLOCK, "tail of {} bytes", tail.len());
    let mut s = *state;
    let mut pad = [0u8; 2 * BLOCK];
    pad[..tail.len()].copy_from_slice(tail);
    pad[tail.len()] = 0x80;
    // One block if the tail, the 0x80 byte and the 8-byte length fit in it.
    let n = if tail.len() < BLOCK - 8 {
        BLOCK
    } else {
        2 * BLOCK
    };
    pad[n - 8..n].copy_from_slice(&total_len.wrapping_mul(8).to_le_bytes());
    compress(&mut s, &pad[..n]);
    state_to_digest(&s)
}

/// The digest bytes of a final state (little-endian words).
pub fn state_to_digest(s: &[u32; 4]) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (chunk, w) in out.chunks_exact_mut(4).zip(s) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// One-shot MD5 of `data` on the portable kernel.
pub fn digest(data: &[u8]) -> [u8; 16] {
    let whole = data.len() - data.len() % BLOCK;
    let mut s = INIT;
    compress(&mut s, &data[..whole]);
    finish(&s, &data[whole..], data.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(d: [u8; 16]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// RFC 1321, appendix A.5.
    #[test]
    fn rfc1321_test_suite() {
        for (msg, want) in crate::selftest::RFC1321 {
            assert_eq!(hex(digest(msg.as_bytes())), *want, "{msg:?}");
        }
    }
}

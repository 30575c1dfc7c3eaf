//! The streaming hasher.

use std::fmt;

use crate::kernel::{Kernel, words_to_bytes};
use crate::portable::{
    PACKET, ROUNDS_64, ROUNDS_128, ROUNDS_256, State, digest64_from, digest128_from, digest256_from,
};

/// Streaming keyed HighwayHash (64, 128 or 256-bit output from one state).
///
/// Any split of the input over [`update`](Self::update) calls gives the
/// same digest as the one-shot functions. Finalising does not consume or
/// change the hasher: more input may follow, and [`reset`](Self::reset)
/// starts over with the same key.
#[derive(Clone)]
pub struct HighwayHasher {
    kernel: Kernel,
    key: [u8; 32],
    state: State,
    buf: [u8; PACKET],
    buffered: usize,
}

impl HighwayHasher {
    /// A hasher with `key` on the detected kernel ([`Kernel::detect`]).
    pub fn new(key: &[u8; 32]) -> Self {
        Self::with_kernel(Kernel::detect(), key)
    }

    /// A hasher with `key` on the given kernel.
    pub fn with_kernel(kernel: Kernel, key: &[u8; 32]) -> Self {
        HighwayHasher {
            kernel,
            key: *key,
            state: kernel.init(key),
            buf: [0; PACKET],
            buffered: 0,
        }
    }

    /// The kernel this hasher runs on.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Appends `data` to the input.
    pub fn update(&mut self, mut data: &[u8]) {
        if self.buffered > 0 {
            let take = (PACKET - self.buffered).min(data.len());
            self.buf[self.buffered..self.buffered + take].copy_from_slice(&data[..take]);
            self.buffered += take;
            data = &data[take..];
            if self.buffered < PACKET {
                return;
            }
            self.kernel.update(&mut self.state, &self.buf);
            self.buffered = 0;
        }
        let whole = data.len() & !(PACKET - 1);
        if whole > 0 {
            self.kernel.update(&mut self.state, &data[..whole]);
        }
        let rest = &data[whole..];
        self.buf[..rest.len()].copy_from_slice(rest);
        self.buffered = rest.len();
    }

    fn finished(&self, rounds: usize) -> State {
        self.kernel
            .finish(&self.state, &self.buf[..self.buffered], rounds)
    }

    /// HighwayHash-64 of the input so far.
    pub fn finalize64(&self) -> u64 {
        digest64_from(&self.finished(ROUNDS_64))
    }

    /// HighwayHash-128 of the input so far (two little-endian words).
    pub fn finalize128(&self) -> [u8; 16] {
        let h = digest128_from(&self.finished(ROUNDS_128));
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&h[0].to_le_bytes());
        out[8..].copy_from_slice(&h[1].to_le_bytes());
        out
    }

    /// HighwayHash-256 of the input so far (four little-endian words, as
    /// minio/highwayhash's `Sum`).
    pub fn finalize256(&self) -> [u8; 32] {
        words_to_bytes(digest256_from(&self.finished(ROUNDS_256)))
    }

    /// Forgets all input; the key and kernel stay.
    pub fn reset(&mut self) {
        self.state = self.kernel.init(&self.key);
        self.buffered = 0;
    }
}

impl fmt::Debug for HighwayHasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HighwayHasher")
            .field("kernel", &self.kernel)
            .field("buffered", &self.buffered)
            .finish_non_exhaustive()
    }
}

/// Writing into the hasher is [`HighwayHasher::update`]; it never fails.
impl std::io::Write for HighwayHasher {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

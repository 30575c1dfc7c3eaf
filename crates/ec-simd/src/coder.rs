//! The Reed-Solomon coder: argument checking, matrices, and the calls into
//! the selected kernel.

use std::fmt;
use std::sync::Arc;

use crate::Error;
use crate::cache::{DecodeCache, Key};
use crate::kernel::{Coeffs, Kernel, MAX_SHARDS};
use crate::matrix::{self, Matrix};

/// Scratch bytes [`ReedSolomon::verify`] keeps on the stack for recomputed
/// parity.
const VERIFY_SCRATCH: usize = 16 * 1024;

/// A systematic Reed-Solomon coder over GF(2^8) for a fixed number of data
/// and parity shards, byte-compatible with klauspost/reedsolomon's default
/// coder (and so with MinIO's erasure sets).
///
/// Cloning is cheap (the state is shared behind an [`Arc`]) and the coder is
/// `Send + Sync`: one instance can serve every thread. Encoding tables are
/// computed at construction; decoding matrices are computed once per loss
/// pattern and cached (a few hundred patterns), so steady-state calls do not
/// allocate.
///
/// Shards are passed as slices of anything that derefs to bytes
/// (`&[u8]`, `Vec<u8>`, `&mut [u8]`, ...). All shards of one call must have
/// the same length, which may be anything including zero.
#[derive(Clone)]
pub struct ReedSolomon {
    inner: Arc<Inner>,
}

struct Inner {
    data: usize,
    parity: usize,
    kernel: Kernel,
    /// The full `(data + parity) x data` encoding matrix.
    matrix: Matrix,
    /// The parity rows, expanded for the kernel.
    encode: Coeffs,
    cache: DecodeCache,
}

impl fmt::Debug for ReedSolomon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReedSolomon")
            .field("data_shards", &self.inner.data)
            .field("parity_shards", &self.inner.parity)
            .field("kernel", &self.inner.kernel)
            .finish()
    }
}

/// An array of empty shared slices, filled in by the calls below.
fn empty_refs<'a>() -> [&'a [u8]; MAX_SHARDS] {
    [&[]; MAX_SHARDS]
}

/// An array of empty mutable slices, filled in by the calls below.
fn empty_muts<'a>() -> [&'a mut [u8]; MAX_SHARDS] {
    core::array::from_fn(|_| <&mut [u8]>::default())
}

fn check_count(what: &'static str, expected: usize, got: usize) -> Result<(), Error> {
    if expected == got {
        Ok(())
    } else {
        Err(Error::WrongShardCount {
            what,
            expected,
            got,
        })
    }
}

fn check_len(expected: usize, index: usize, got: usize) -> Result<(), Error> {
    if expected == got {
        Ok(())
    } else {
        Err(Error::ShardLengthMismatch {
            expected,
            index,
            got,
        })
    }
}

impl ReedSolomon {
    /// A coder for `data_shards` data and `parity_shards` parity shards using
    /// the best kernel of this host ([`Kernel::detect`]).
    ///
    /// Both counts must be at least 1 and their sum at most 256.
    pub fn new(data_shards: usize, parity_shards: usize) -> Result<Self, Error> {
        Self::with_kernel(data_shards, parity_shards, Kernel::detect())
    }

    /// Like [`ReedSolomon::new`] with an explicit kernel.
    pub fn with_kernel(
        data_shards: usize,
        parity_shards: usize,
        kernel: Kernel,
    ) -> Result<Self, Error> {
        let invalid = Error::InvalidShardCounts {
            data: data_shards,
            parity: parity_shards,
        };
        if data_shards == 0 || parity_shards == 0 {
            return Err(invalid);
        }
        match data_shards.checked_add(parity_shards) {
            Some(total) if total <= MAX_SHARDS => {}
            _ => return Err(invalid),
        }
        let total = data_shards + parity_shards;
        let matrix = matrix::encoding_matrix(data_shards, total).ok_or(Error::SingularMatrix)?;
        let parity_rows = matrix.as_slice()[data_shards * data_shards..].to_vec();
        let encode = kernel.expand(parity_shards, data_shards, parity_rows);
        Ok(Self {
            inner: Arc::new(Inner {
                data: data_shards,
                parity: parity_shards,
                kernel,
                matrix,
                encode,
                cache: DecodeCache::default(),
            }),
        })
    }

    /// Number of data shards.
    pub fn data_shards(&self) -> usize {
        self.inner.data
    }

    /// Number of parity shards.
    pub fn parity_shards(&self) -> usize {
        self.inner.parity
    }

    /// Data plus parity shards.
    pub fn total_shards(&self) -> usize {
        self.inner.data + self.inner.parity
    }

    /// The kernel this coder multiplies with.
    pub fn kernel(&self) -> Kernel {
        self.inner.kernel
    }

    /// Computes the parity shards of `data` into `parity` (overwriting it).
    ///
    /// `data` must hold exactly [`data_shards`](Self::data_shards) entries and
    /// `parity` exactly [`parity_shards`](Self::parity_shards), all of one
    /// length.
    pub fn encode<D, P>(&self, data: &[D], parity: &mut [P]) -> Result<(), Error>
    where
        D: AsRef<[u8]>,
        P: AsMut<[u8]>,
    {
        let (k, m) = (self.inner.data, self.inner.parity);
        check_count("data", k, data.len())?;
        check_count("parity", m, parity.len())?;
        let len = data[0].as_ref().len();
        let mut ins = empty_refs();
        for (i, (slot, d)) in ins.iter_mut().zip(data).enumerate() {
            let d = d.as_ref();
            check_len(len, i, d.len())?;
            *slot = d;
        }
        let mut outs = empty_muts();
        for (j, (slot, p)) in outs.iter_mut().zip(parity.iter_mut()).enumerate() {
            let p = p.as_mut();
            check_len(len, k + j, p.len())?;
            *slot = p;
        }
        self.inner
            .kernel
            .apply(&self.inner.encode, &ins[..k], &mut outs[..m]);
        Ok(())
    }

    /// Like [`encode`](Self::encode) on one list of all shards: the first
    /// `data_shards` entries are read, the rest are overwritten with parity.
    pub fn encode_shards<S: AsMut<[u8]>>(&self, shards: &mut [S]) -> Result<(), Error> {
        let (k, m) = (self.inner.data, self.inner.parity);
        check_count("shards", k + m, shards.len())?;
        let (data, parity) = shards.split_at_mut(k);
        let mut ins = empty_refs();
        let mut len = None;
        for (i, (slot, d)) in ins.iter_mut().zip(data.iter_mut()).enumerate() {
            let d: &[u8] = d.as_mut();
            let expected = *len.get_or_insert(d.len());
            check_len(expected, i, d.len())?;
            *slot = d;
        }
        let len = len.unwrap_or(0);
        let mut outs = empty_muts();
        for (j, (slot, p)) in outs.iter_mut().zip(parity.iter_mut()).enumerate() {
            let p = p.as_mut();
            check_len(len, k + j, p.len())?;
            *slot = p;
        }
        self.inner
            .kernel
            .apply(&self.inner.encode, &ins[..k], &mut outs[..m]);
        Ok(())
    }

    /// Whether `parity` is the parity of `data`. Works in column chunks with
    /// a fixed stack buffer: no allocation, and it stops at the first chunk
    /// that differs.
    pub fn verify<D, P>(&self, data: &[D], parity: &[P]) -> Result<bool, Error>
    where
        D: AsRef<[u8]>,
        P: AsRef<[u8]>,
    {
        let (k, m) = (self.inner.data, self.inner.parity);
        check_count("data", k, data.len())?;
        check_count("parity", m, parity.len())?;
        let len = data[0].as_ref().len();
        for (i, d) in data.iter().enumerate() {
            check_len(len, i, d.as_ref().len())?;
        }
        for (j, p) in parity.iter().enumerate() {
            check_len(len, k + j, p.as_ref().len())?;
        }
        let mut scratch = [0u8; VERIFY_SCRATCH];
        // `m <= 255`, so every chunk is at least 64 bytes.
        let chunk = VERIFY_SCRATCH / m / 64 * 64;
        let mut off = 0;
        while off < len {
            let n = chunk.min(len - off);
            let mut ins = empty_refs();
            for (slot, d) in ins.iter_mut().zip(data) {
                *slot = &d.as_ref()[off..off + n];
            }
            let mut outs = empty_muts();
            for (slot, s) in outs.iter_mut().zip(scratch.chunks_exact_mut(chunk)) {
                *slot = &mut s[..n];
            }
            self.inner
                .kernel
                .apply(&self.inner.encode, &ins[..k], &mut outs[..m]);
            for (got, p) in outs.iter().zip(parity) {
                if **got != p.as_ref()[off..off + n] {
                    return Ok(false);
                }
            }
            off += n;
        }
        Ok(true)
    }

    /// Like [`verify`](Self::verify) on one list of all shards.
    pub fn verify_shards<S: AsRef<[u8]>>(&self, shards: &[S]) -> Result<bool, Error> {
        let k = self.inner.data;
        check_count("shards", self.total_shards(), shards.len())?;
        let (data, parity) = shards.split_at(k);
        self.verify(data, parity)
    }

    /// Rebuilds every shard whose `present` flag is false, data and parity,
    /// from the present ones.
    ///
    /// `shards` holds all [`total_shards`](Self::total_shards) buffers (data
    /// first), all of one length; missing ones are overwritten. At least
    /// [`data_shards`](Self::data_shards) must be present. Present shards are
    /// only read.
    pub fn reconstruct<S: AsMut<[u8]>>(
        &self,
        shards: &mut [S],
        present: &[bool],
    ) -> Result<(), Error> {
        self.rebuild(shards, present, false)
    }

    /// Like [`reconstruct`](Self::reconstruct) but rebuilds only missing
    /// data shards; missing parity buffers are left untouched.
    pub fn reconstruct_data<S: AsMut<[u8]>>(
        &self,
        shards: &mut [S],
        present: &[bool],
    ) -> Result<(), Error> {
        self.rebuild(shards, present, true)
    }

    fn rebuild<S: AsMut<[u8]>>(
        &self,
        shards: &mut [S],
        present: &[bool],
        data_only: bool,
    ) -> Result<(), Error> {
        let (k, total) = (self.inner.data, self.total_shards());
        check_count("shards", total, shards.len())?;
        check_count("present", total, present.len())?;
        let n_present = present.iter().filter(|&&p| p).count();
        if n_present < k {
            return Err(Error::TooFewShards {
                needed: k,
                present: n_present,
            });
        }
        let len = shards[0].as_mut().len();
        for (i, s) in shards.iter_mut().enumerate() {
            check_len(len, i, s.as_mut().len())?;
        }

        // Sources: the first `k` present shards. Outputs: the missing ones
        // that were asked for.
        let mut key: Key = [0; 8];
        let mut n_src = 0;
        let mut n_out = 0;
        for (i, &p) in present.iter().enumerate() {
            if p && n_src < k {
                key[i / 64] |= 1 << (i % 64);
                n_src += 1;
            } else if !p && (i < k || !data_only) {
                key[4 + i / 64] |= 1 << (i % 64);
                n_out += 1;
            }
        }
        if n_out == 0 {
            return Ok(());
        }
        let coeffs = self
            .inner
            .cache
            .get_or_build(&key, || self.decode_matrix(&key))?;

        let mut ins = empty_refs();
        let mut outs = empty_muts();
        let (mut ni, mut no) = (0, 0);
        for (i, s) in shards.iter_mut().enumerate() {
            let bit = 1u64 << (i % 64);
            if key[i / 64] & bit != 0 {
                ins[ni] = &*s.as_mut();
                ni += 1;
            } else if key[4 + i / 64] & bit != 0 {
                outs[no] = s.as_mut();
                no += 1;
            }
        }
        self.inner
            .kernel
            .apply(&coeffs, &ins[..ni], &mut outs[..no]);
        Ok(())
    }

    /// The matrix that maps the source shards of `key` to its output shards:
    /// rows of the inverted source sub-matrix for data shards, and the parity
    /// row times that inverse for parity shards, so everything is rebuilt in
    /// one pass over the sources.
    fn decode_matrix(&self, key: &Key) -> Result<Coeffs, Error> {
        let inner = &*self.inner;
        let total = inner.data + inner.parity;
        let bit = |i: usize, half: usize| key[half * 4 + i / 64] >> (i % 64) & 1 == 1;
        let sources = (0..total).filter(|&i| bit(i, 0));
        let outputs: Vec<usize> = (0..total).filter(|&i| bit(i, 1)).collect();
        let inv = inner
            .matrix
            .select_rows(sources)
            .invert()
            .ok_or(Error::SingularMatrix)?;
        let mut coefs = Vec::with_capacity(outputs.len() * inner.data);
        for &o in &outputs {
            if o < inner.data {
                coefs.extend_from_slice(inv.row(o));
            } else {
                let row = inner
                    .matrix
                    .select_rows([o])
                    .mul(&inv)
                    .ok_or(Error::SingularMatrix)?;
                coefs.extend_from_slice(row.as_slice());
            }
        }
        Ok(inner.kernel.expand(outputs.len(), inner.data, coefs))
    }

    /// Number of loss patterns whose decoding matrices are cached.
    #[doc(hidden)]
    pub fn cached_decode_matrices(&self) -> usize {
        self.inner.cache.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coder_is_send_sync_and_cheap_to_clone() {
        fn assert_send_sync<T: Send + Sync + Clone>() {}
        assert_send_sync::<ReedSolomon>();
        let rs = ReedSolomon::new(4, 2).unwrap();
        let clone = rs.clone();
        assert!(Arc::ptr_eq(&rs.inner, &clone.inner));
    }

    #[test]
    fn decode_matrices_are_cached_per_pattern() {
        let rs = ReedSolomon::new(4, 2).unwrap();
        let mut shards = vec![vec![7u8; 10]; 6];
        rs.encode_shards(&mut shards).unwrap();
        assert_eq!(rs.cached_decode_matrices(), 0);
        let present = [false, true, true, true, true, true];
        rs.reconstruct(&mut shards, &present).unwrap();
        rs.reconstruct(&mut shards, &present).unwrap();
        assert_eq!(rs.cached_decode_matrices(), 1);
        rs.reconstruct_data(&mut shards, &present).unwrap();
        // Same sources and outputs (only a data shard is missing).
        assert_eq!(rs.cached_decode_matrices(), 1);
        rs.reconstruct(&mut shards, &[true, false, true, true, true, true])
            .unwrap();
        assert_eq!(rs.cached_decode_matrices(), 2);
        // Nothing missing: no matrix needed.
        rs.reconstruct(&mut shards, &[true; 6]).unwrap();
        assert_eq!(rs.cached_decode_matrices(), 2);
    }
}

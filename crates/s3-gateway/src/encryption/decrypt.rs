//! A plaintext range of an encrypted object: for every part it overlaps,
//! only the DARE packages it needs are read, and they are decrypted in
//! place in the read buffers.

use std::io;

use object::layer::{Chunk, ChunkSink, WriteSink};
use sse::dare::{self, Decryptor};
use tokio::io::AsyncWrite;

use super::keys::Segment;

/// A [`ChunkSink`] that opens the DARE packages of the ciphertext it is
/// given (starting at package `first_seq`), skips `skip` plaintext bytes
/// and hands the next `left` bytes of plaintext to `out`.
///
/// A package that lies whole inside a chunk (the read buffer of one shard)
/// is decrypted in place there and its plaintext moved down over the
/// headers and tags before it while it is still in cache, so the chunk's
/// plaintext goes on as one frame, a slice of that buffer (a 64 KiB frame
/// per package costs more in channel sends, writes and TCP pushes than the
/// move). Only a package split between two chunks is gathered into a
/// buffer of its own. Nothing of a package goes on before its tag
/// verified.
struct PlainSink<'a, S> {
    dec: Decryptor,
    out: &'a mut S,
    /// A package split between chunks: its header...
    header: [u8; dare::HEADER_LEN],
    /// ...its bytes taken so far (header included)...
    taken: usize,
    /// ...its length, once the header is complete...
    package_len: usize,
    /// ...and its sealed bytes (ciphertext and tag) so far.
    sealed: Vec<u8>,
    skip: usize,
    left: u64,
    /// Why decryption failed (the read then stops with an output error).
    failed: Option<String>,
}

/// Plaintext of one chunk to hand on, in this order.
struct Pieces {
    /// The package that ended at the chunk's start, gathered.
    gathered: Option<Vec<u8>>,
    /// The plaintext of the packages whole in the chunk: its first bytes.
    in_chunk: usize,
}

impl<'a, S: ChunkSink> PlainSink<'a, S> {
    fn new(key: &[u8; 32], first_seq: u64, skip: usize, left: u64, out: &'a mut S) -> Self {
        PlainSink {
            dec: Decryptor::new(key, first_seq),
            out,
            header: [0; dare::HEADER_LEN],
            taken: 0,
            package_len: 0,
            sealed: Vec::new(),
            skip,
            left,
            failed: None,
        }
    }

    /// Of a package's `n` plaintext bytes, the range to hand on (after the
    /// skip, within what is left).
    fn keep(&mut self, n: usize) -> std::ops::Range<usize> {
        let skip = self.skip.min(n);
        self.skip -= skip;
        let keep = ((n - skip) as u64).min(self.left) as usize;
        self.left -= keep as u64;
        skip..skip + keep
    }

    /// Decrypts what `data` holds: the rest of a split package, whole
    /// packages in place (their plaintext moved to the front of `data`),
    /// and the start of the next one (kept).
    fn open(&mut self, data: &mut [u8]) -> Result<Pieces, String> {
        let mut pieces = Pieces {
            gathered: None,
            in_chunk: 0,
        };
        let mut pos = 0;
        while pos < data.len() && self.left > 0 {
            if self.taken == 0 && data.len() - pos >= dare::HEADER_LEN {
                let plen = self.package_len_at(&data[pos..pos + dare::HEADER_LEN])?;
                if data.len() - pos >= plen {
                    // Whole in this chunk: open it where it lies.
                    let mut header = [0u8; dare::HEADER_LEN];
                    header.copy_from_slice(&data[pos..pos + dare::HEADER_LEN]);
                    let sealed = &mut data[pos + dare::HEADER_LEN..pos + plen];
                    let n = self
                        .dec
                        .open_detached(&header, sealed)
                        .map_err(|e| format!("decrypting: {e}"))?;
                    let r = self.keep(n);
                    let base = pos + dare::HEADER_LEN;
                    // Never over ciphertext not yet opened: the front only
                    // holds bytes of packages already done.
                    data.copy_within(base + r.start..base + r.end, pieces.in_chunk);
                    pieces.in_chunk += r.len();
                    pos += plen;
                    continue;
                }
            }
            // A package split between chunks: gather it.
            if self.taken < dare::HEADER_LEN {
                let take = (dare::HEADER_LEN - self.taken).min(data.len() - pos);
                self.header[self.taken..self.taken + take].copy_from_slice(&data[pos..pos + take]);
                self.taken += take;
                pos += take;
                if self.taken < dare::HEADER_LEN {
                    break;
                }
                self.package_len = self.package_len_at(&self.header.clone())?;
                self.sealed.clear();
            }
            let take = (self.package_len - self.taken).min(data.len() - pos);
            self.sealed.extend_from_slice(&data[pos..pos + take]);
            self.taken += take;
            pos += take;
            if self.taken == self.package_len {
                self.taken = 0;
                let mut sealed = std::mem::take(&mut self.sealed);
                let n = self
                    .dec
                    .open_detached(&self.header, &mut sealed)
                    .map_err(|e| format!("decrypting: {e}"))?;
                let r = self.keep(n);
                sealed.truncate(r.end);
                sealed.drain(..r.start);
                if !sealed.is_empty() {
                    // Only the first package of a chunk can end here (one
                    // that starts in it and ends in the next is kept).
                    pieces.gathered = Some(sealed);
                }
            }
        }
        Ok(pieces)
    }

    fn package_len_at(&self, header: &[u8]) -> Result<usize, String> {
        let plen = self.dec.package_len(header).map_err(|e| e.to_string())?;
        if plen > dare::PACKAGE_LEN {
            return Err("encrypted package too long".into());
        }
        Ok(plen)
    }

    /// Fails if the ciphertext ended before the plaintext wanted.
    fn finish(&self) -> Result<(), (bool, String)> {
        if self.left > 0 || self.taken > 0 {
            return Err((false, "encrypted stream ended early".into()));
        }
        Ok(())
    }
}

impl<S: ChunkSink> ChunkSink for PlainSink<'_, S> {
    async fn put(&mut self, mut chunk: Chunk) -> io::Result<()> {
        if self.left == 0 {
            return Ok(());
        }
        let pieces = match self.open(chunk.as_mut_slice()) {
            Ok(p) => p,
            Err(e) => {
                self.failed = Some(e.clone());
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
        };
        if let Some(v) = pieces.gathered {
            self.out.put(Chunk::from(v)).await?;
        }
        if pieces.in_chunk > 0 {
            self.out.put(chunk.narrow(0..pieces.in_chunk)).await?;
        }
        Ok(())
    }
}

/// Writes the plaintext `offset..offset + len` of an encrypted object to
/// `out`: for every part it overlaps, reads just the packages it needs and
/// decrypts them.
pub(crate) async fn read_plain<W: AsyncWrite + Unpin + Send>(
    layer: &object::layer::ObjectLayer,
    opened: &object::layer::OpenObject,
    segments: &[Segment],
    range: (u64, u64),
    out: &mut W,
) -> Result<(), (bool, String)> {
    read_plain_chunks(layer, opened, segments, range, &mut WriteSink(out)).await
}

/// [`read_plain`] into a [`ChunkSink`]: the plaintext goes on as slices of
/// the buffers the ciphertext was read (and decrypted) in. The error says
/// whether the sink failed (the client went away) and what happened.
pub(crate) async fn read_plain_chunks<S: ChunkSink>(
    layer: &object::layer::ObjectLayer,
    opened: &object::layer::OpenObject,
    segments: &[Segment],
    (offset, len): (u64, u64),
    out: &mut S,
) -> Result<(), (bool, String)> {
    let end = offset + len;
    for seg in segments {
        let (s0, s1) = (seg.plain_offset, seg.plain_offset + seg.plain_len);
        if s1 <= offset || s0 >= end || seg.plain_len == 0 {
            continue;
        }
        let local = offset.max(s0) - s0;
        let local_len = end.min(s1) - s0 - local;
        let (first, crange, skip) = dare::package_range(local, local_len, seg.plain_len);
        let mut sink = PlainSink::new(&seg.key, first, skip, local_len, &mut *out);
        let r = layer
            .read_object_chunks(
                opened,
                seg.cipher_offset + crange.start,
                crange.end - crange.start,
                &mut sink,
            )
            .await;
        if let Some(e) = sink.failed.take() {
            return Err((false, e));
        }
        if let Err(e) = r {
            return Err((matches!(e, object::layer::Error::Output(_)), e.to_string()));
        }
        sink.finish()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use sse::dare::{CipherSuite, Encryptor, PAYLOAD_LEN};

    use super::super::plaintext;
    use super::*;

    #[derive(Default)]
    struct Collect(Vec<Vec<u8>>);

    impl ChunkSink for Collect {
        async fn put(&mut self, chunk: Chunk) -> io::Result<()> {
            self.0.push(chunk.as_slice().to_vec());
            Ok(())
        }
    }

    fn chunk(b: &[u8]) -> Chunk {
        Chunk::from(b.to_vec())
    }

    /// Feeds the ciphertext of `offset..offset + len` in chunks of `step`
    /// bytes, as the object layer would hand it over.
    async fn open_range(
        cipher: &[u8],
        plain_len: u64,
        offset: u64,
        len: u64,
        step: usize,
    ) -> (Collect, Result<(), (bool, String)>) {
        let key = [7u8; 32];
        let (first, crange, skip) = dare::package_range(offset, len, plain_len);
        let mut out = Collect::default();
        let mut sink = PlainSink::new(&key, first, skip, len, &mut out);
        let range = &cipher[crange.start as usize..crange.end as usize];
        let mut r = Ok(());
        for chunk in range.chunks(step) {
            if let Err(e) = sink.put(super::tests::chunk(chunk)).await {
                r = Err((false, sink.failed.take().unwrap_or_else(|| e.to_string())));
                break;
            }
        }
        if r.is_ok() {
            r = sink.finish();
        }
        (out, r)
    }

    #[tokio::test]
    async fn ranges_across_packages_and_chunks() {
        let p = PAYLOAD_LEN as u64;
        let plain_len = 40 * p + 1234;
        let plain = plaintext(plain_len as usize);
        let cipher = Encryptor::new(&[7u8; 32], [3u8; 12], CipherSuite::Aes256Gcm).seal_all(&plain);
        let cases = [
            (0, plain_len),
            (0, 1),
            (p - 1, 2),
            (p, p),
            (5, 20 * p),
            (17 * p - 3, 23 * p + 1237 - 17 * p),
            (plain_len - 1, 1),
            (3 * p + 100, 16 * p),
        ];
        // Chunks smaller than a header, straddling packages, and larger
        // than a frame.
        for step in [7, 1000, 65_568, 100_000, 524_288, 3 << 20] {
            for (off, len) in cases {
                let (out, r) = open_range(&cipher, plain_len, off, len, step).await;
                r.unwrap_or_else(|e| panic!("{off}+{len} step {step}: {e:?}"));
                let got: Vec<u8> = out.0.iter().flat_map(|c| c.iter().copied()).collect();
                assert!(
                    got == plain[off as usize..(off + len) as usize],
                    "{off}+{len} step {step}"
                );
                // At most two frames per chunk: a package gathered from
                // two chunks, then the packages whole in the chunk.
                let chunks = (dare::encrypted_len(len) as usize).div_ceil(step) + 2;
                assert!(out.0.len() <= 2 * chunks, "{} frames", out.0.len());
                assert!(out.0.iter().all(|c| !c.is_empty()));
            }
        }
    }

    #[tokio::test]
    async fn a_tampered_package_stops_before_its_plaintext() {
        let p = PAYLOAD_LEN as u64;
        let plain_len = 40 * p;
        let plain = plaintext(plain_len as usize);
        let mut cipher =
            Encryptor::new(&[7u8; 32], [3u8; 12], CipherSuite::Aes256Gcm).seal_all(&plain);
        // A ciphertext byte of package 20.
        cipher[20 * dare::PACKAGE_LEN + 500] ^= 1;
        for step in [1000, 524_288] {
            let (out, r) = open_range(&cipher, plain_len, 0, plain_len, step).await;
            let (client_gone, e) = r.unwrap_err();
            assert!(!client_gone && e.contains("decrypting"), "{e}");
            let got: Vec<u8> = out.0.iter().flat_map(|c| c.iter().copied()).collect();
            // Only whole frames of authenticated packages before it.
            assert!(got.len() as u64 <= 20 * p);
            assert!(got == plain[..got.len()]);
        }
        // A truncated stream is an error too.
        let mut out = Collect::default();
        let mut sink = PlainSink::new(&[7u8; 32], 0, 0, 12 * p, &mut out);
        for chunk in cipher[..10 * dare::PACKAGE_LEN + 100].chunks(4096) {
            sink.put(super::tests::chunk(chunk)).await.unwrap();
        }
        assert!(sink.finish().unwrap_err().1.contains("ended early"));
    }
}

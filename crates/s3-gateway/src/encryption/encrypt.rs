//! A write's body encrypted: `EncryptingReader` turns the plaintext into
//! DARE packages under the object (or part) key while the plaintext MD5
//! runs through the `md5x` hub, and at the end records the sealed ETag and
//! the ETag clients see.

use std::io;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use object::layer::{ObjectInfo, PartEtag, TrailingMetadata};
use sse::dare::{self, CipherSuite, Encryptor, PAYLOAD_LEN};
use sse::key::ObjectKey;
use tokio::io::{AsyncRead, ReadBuf};

use super::headers::Mode;
use super::keys::{Existing, NewKey, new_key};
use super::random;
use crate::error::S3Error;

/// Stores `plain` as `bucket/key` encrypted under a fresh key of `mode`:
/// `opts` is completed with the sealed key, the stored and plaintext sizes
/// (`plain_len` when the plaintext's length is known, else the plaintext
/// size is recorded from the ciphertext's) and the sealed ETag, which the
/// reader records in `trailing`. Gives the layer's answer with the ETag
/// clients see, the new key (for the response's headers) and `plain` back.
pub(crate) async fn put_encrypted<R: AsyncRead + Unpin + Send>(
    gw: &crate::service::Gateway,
    (bucket, key): (&str, &str),
    mode: &Mode,
    (plain, plain_len): (R, Option<u64>),
    opts: &mut object::layer::PutOptions,
    trailing: TrailingMetadata,
) -> Result<(object::layer::Result<ObjectInfo>, NewKey, R), S3Error> {
    let nk = new_key(mode, &gw.config.encryption, bucket, key)?;
    match plain_len {
        Some(n) => {
            opts.size = Some(dare::encrypted_len(n));
            opts.actual_size = Some(n);
        }
        None => {
            opts.size = None;
            opts.actual_size_of = Some(dare::decrypted_len);
        }
    }
    opts.internal = nk.internal.clone();
    opts.caller_etag = true;
    opts.trailing_metadata = Some(trailing.clone());
    let mut enc = EncryptingReader::new(plain, &nk.key, trailing, nk.mode.etag_is_md5())?;
    let res = gw.layer.put_object(bucket, key, &mut enc, opts).await;
    let seen = enc.etag.lock().unwrap_or_else(|p| p.into_inner()).take();
    let res = res.map(|mut info| {
        if let Some(e) = seen {
            info.etag = e;
        }
        info
    });
    Ok((res, nk, enc.into_inner()))
}

impl Existing {
    /// A reader encrypting part `number` of this encrypted upload under its
    /// part key, and the options that store it: ciphertext and plaintext
    /// sizes, and the ETag clients see (given by the reader at its end).
    pub(crate) fn part_writer<R>(
        &self,
        number: i64,
        plain: R,
        plain_len: u64,
    ) -> Result<(EncryptingReader<R>, object::layer::PartOptions), S3Error> {
        let part_key = ObjectKey(self.key.part_key(u32::try_from(number).unwrap_or(0)));
        let enc = EncryptingReader::new(
            plain,
            &part_key,
            TrailingMetadata::default(),
            self.etag_is_md5(),
        )?;
        let opts = object::layer::PartOptions {
            size: Some(dare::encrypted_len(plain_len)),
            actual_size: Some(plain_len),
            etag: Some(enc.etag.clone()),
            checksum: None,
        };
        Ok((enc, opts))
    }
}

/// An MD5 fed from a poll-based reader through [`md5x::Md5Hub`]: bytes are
/// gathered into 1 MiB blocks, and each full block is hashed in the hub's
/// SIMD lanes together with other uploads' blocks while the reader goes on
/// filling the next one (on the single-stream path, MD5 is the largest
/// cost of an encrypted PUT; `docs/bench-notes/sse.md`).
struct HubMd5 {
    hasher: Option<md5x::Hasher>,
    pending: Option<md5x::BlockUpdate>,
    buf: Vec<u8>,
    spare: Option<Vec<u8>>,
}

impl HubMd5 {
    /// Bytes gathered before a block goes to the hub.
    const BLOCK: usize = 1 << 20;

    fn new() -> Self {
        HubMd5 {
            hasher: Some(md5x::Md5Hub::global().hasher()),
            pending: None,
            buf: Vec::new(),
            spare: None,
        }
    }

    /// Takes what of `data` fits in the current block; returns how much.
    fn feed(&mut self, data: &[u8]) -> usize {
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(Self::BLOCK);
        }
        let n = (Self::BLOCK - self.buf.len()).min(data.len());
        self.buf.extend_from_slice(&data[..n]);
        n
    }

    /// Collects a finished block update, if any; `Pending` while one runs.
    fn poll_pending(&mut self, cx: &mut TaskContext<'_>) -> Poll<()> {
        if let Some(p) = &mut self.pending {
            let (hasher, block) = std::task::ready!(Pin::new(p).poll(cx));
            self.hasher = Some(hasher);
            self.spare = Some(block);
            self.pending = None;
        }
        Poll::Ready(())
    }

    /// Hands the gathered bytes to the hub (no update may be running).
    fn submit(&mut self) {
        let next = self.spare.take().map(|mut b| {
            b.clear();
            b
        });
        let block = std::mem::replace(&mut self.buf, next.unwrap_or_default());
        if let Some(h) = self.hasher.take() {
            self.pending = Some(h.update_block(block));
        }
    }

    /// `Ready` once [`feed`](Self::feed) can take bytes: a full block is
    /// handed to the hub, after the previous one is done.
    fn poll_room(&mut self, cx: &mut TaskContext<'_>) -> Poll<()> {
        loop {
            if self.buf.len() < Self::BLOCK {
                // Collect a finished update early, so its buffer is reused.
                let _ = self.poll_pending(cx);
                return Poll::Ready(());
            }
            std::task::ready!(self.poll_pending(cx));
            self.submit();
        }
    }

    /// The MD5 of everything fed (call once, at the end).
    fn poll_finish(&mut self, cx: &mut TaskContext<'_>) -> Poll<[u8; 16]> {
        loop {
            std::task::ready!(self.poll_pending(cx));
            if self.buf.is_empty() {
                let h = self
                    .hasher
                    .take()
                    .unwrap_or_else(|| md5x::Md5Hub::global().hasher());
                return Poll::Ready(h.finalize());
            }
            self.submit();
        }
    }
}

/// Encrypts a plaintext stream into DARE packages with the object key;
/// at its end, records the sealed ETag (MinIO's form) in the trailing
/// metadata and the ETag clients see in [`etag`](Self::etag).
pub(crate) struct EncryptingReader<R> {
    inner: R,
    enc: Encryptor,
    key: ObjectKey,
    plain: Vec<u8>,
    out: Vec<u8>,
    pos: usize,
    md5: HubMd5,
    /// Bytes at the start of `plain` already fed to `md5`.
    md5_fed: usize,
    digest: Option<[u8; 16]>,
    inner_done: bool,
    done: bool,
    trailing: TrailingMetadata,
    etag_is_md5: bool,
    /// The ETag clients see, once the stream ended: the plaintext MD5
    /// (SSE-S3), or the last 32 hex digits of the sealed ETag (SSE-C,
    /// SSE-KMS); see [`client_etag`](super::view::client_etag).
    pub etag: PartEtag,
}

impl<R> EncryptingReader<R> {
    /// `etag_is_md5`: clients see the plaintext MD5 as the ETag (SSE-S3).
    pub(crate) fn new(
        inner: R,
        key: &ObjectKey,
        trailing: TrailingMetadata,
        etag_is_md5: bool,
    ) -> Result<Self, S3Error> {
        Ok(EncryptingReader {
            inner,
            enc: Encryptor::new(&key.0, random()?, CipherSuite::Aes256Gcm),
            key: key.clone(),
            plain: Vec::with_capacity(PAYLOAD_LEN + 1),
            out: Vec::with_capacity(dare::PACKAGE_LEN),
            pos: 0,
            md5: HubMd5::new(),
            md5_fed: 0,
            digest: None,
            inner_done: false,
            done: false,
            trailing,
            etag_is_md5,
            etag: PartEtag::default(),
        })
    }

    pub(crate) fn into_inner(self) -> R {
        self.inner
    }

    fn seal(&mut self, last: bool) -> io::Result<()> {
        self.out.clear();
        self.pos = 0;
        let n = if last { self.plain.len() } else { PAYLOAD_LEN };
        if n > 0 {
            self.enc
                .seal_package(&self.plain[..n], last, &mut self.out)
                .map_err(|e| io::Error::other(S3Error::internal(e)))?;
        }
        self.plain.drain(..n);
        self.md5_fed -= n;
        if last {
            let digest = self
                .digest
                .ok_or_else(|| io::Error::other(S3Error::internal("the MD5 was not finished")))?;
            let sealed = self.key.seal_etag(
                &digest,
                random().map_err(io::Error::other)?,
                CipherSuite::Aes256Gcm,
            );
            let sealed = hex::encode(sealed);
            let seen = if self.etag_is_md5 {
                hex::encode(digest)
            } else {
                sealed[sealed.len() - 32..].to_owned()
            };
            self.trailing
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(("etag".to_owned(), sealed));
            *self.etag.lock().unwrap_or_else(|p| p.into_inner()) = Some(seen);
            self.done = true;
        }
        Ok(())
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EncryptingReader<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.pos < this.out.len() {
                let n = (this.out.len() - this.pos).min(buf.remaining());
                buf.put_slice(&this.out[this.pos..this.pos + n]);
                this.pos += n;
                return Poll::Ready(Ok(()));
            }
            if this.done {
                return Poll::Ready(Ok(()));
            }
            // The MD5 of the plaintext first: in 1 MiB blocks through the
            // multi-buffer hub, with other uploads' blocks.
            if this.md5_fed < this.plain.len() {
                std::task::ready!(this.md5.poll_room(cx));
                this.md5_fed += this.md5.feed(&this.plain[this.md5_fed..]);
                continue;
            }
            if this.plain.len() > PAYLOAD_LEN {
                this.seal(false)?;
                continue;
            }
            if this.inner_done {
                if this.digest.is_none() {
                    this.digest = Some(std::task::ready!(this.md5.poll_finish(cx)));
                }
                this.seal(true)?;
                continue;
            }
            // Read more plaintext.
            let start = this.plain.len();
            this.plain.resize(PAYLOAD_LEN + 1, 0);
            let mut rb = ReadBuf::new(&mut this.plain[start..]);
            match Pin::new(&mut this.inner).poll_read(cx, &mut rb) {
                Poll::Pending => {
                    this.plain.truncate(start);
                    return Poll::Pending;
                }
                Poll::Ready(Err(e)) => {
                    this.plain.truncate(start);
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(Ok(())) => {
                    let n = rb.filled().len();
                    this.plain.truncate(start + n);
                    if n == 0 {
                        this.inner_done = true;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use md5::{Digest as _, Md5};
    use sse::dare::Decryptor;

    use super::super::plaintext;
    use super::*;

    /// A reader that gives at most `step` bytes per read.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl AsyncRead for Trickle<'_> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut TaskContext<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let n = self.step.min(self.data.len()).min(buf.remaining());
            buf.put_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Poll::Ready(Ok(()))
        }
    }

    /// Encrypts `plain` read `step` bytes at a time: (ciphertext, sealed
    /// ETag, client ETag).
    async fn encrypt(plain: &[u8], step: usize, etag_is_md5: bool) -> (Vec<u8>, String, String) {
        use tokio::io::AsyncReadExt as _;
        let key = ObjectKey([5; 32]);
        let trailing = TrailingMetadata::default();
        let mut r = EncryptingReader::new(
            Trickle { data: plain, step },
            &key,
            trailing.clone(),
            etag_is_md5,
        )
        .unwrap();
        let mut cipher = Vec::new();
        r.read_to_end(&mut cipher).await.unwrap();
        let etag = r.etag.lock().unwrap().clone().unwrap();
        let sealed = trailing.lock().unwrap()[0].1.clone();
        (cipher, sealed, etag)
    }

    /// The encrypting reader's output opens to the plaintext and its ETags
    /// are right (the MD5 through the hub's 1 MiB blocks), for lengths
    /// around package and MD5-block boundaries, read in odd steps, with
    /// several streams at once so the hub's lanes combine them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn encrypting_reader_output_and_etags() {
        let p = PAYLOAD_LEN;
        let mib = 1 << 20;
        let lens = [
            0,
            1,
            p - 1,
            p,
            p + 1,
            mib - 1,
            mib,
            mib + 1,
            3 * mib + p + 5,
        ];
        let mut tasks = tokio::task::JoinSet::new();
        for (i, len) in lens.into_iter().enumerate() {
            for step in [4093, 65_537, 1 << 20] {
                tasks.spawn(async move {
                    let plain = plaintext(len + i);
                    let plain = &plain[i..];
                    let (cipher, sealed, etag) = encrypt(plain, step, i % 2 == 0).await;
                    let label = format!("len {len} step {step}");
                    assert_eq!(
                        cipher.len() as u64,
                        dare::encrypted_len(len as u64),
                        "{label}"
                    );
                    let opened = Decryptor::new(&[5; 32], 0).open_all(&cipher).unwrap();
                    assert!(opened == plain, "{label}");
                    let md5 = Md5::digest(plain);
                    let key = ObjectKey([5; 32]);
                    let unsealed = key.unseal_etag(&hex::decode(&sealed).unwrap()).unwrap();
                    assert_eq!(unsealed, md5.to_vec(), "{label}");
                    if i % 2 == 0 {
                        assert_eq!(etag, hex::encode(md5), "{label}");
                    } else {
                        assert_eq!(etag, sealed[sealed.len() - 32..], "{label}");
                    }
                });
            }
        }
        while let Some(r) = tasks.join_next().await {
            r.unwrap();
        }
    }
}

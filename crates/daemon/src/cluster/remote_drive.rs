//! Drives of other nodes: the [`Drive`] trait over the node RPC.
//!
//! [`RemoteDrive`] is the caller's side, one per drive of another node,
//! named by its index in the cluster's layout; `drive_server.rs` is the
//! callee's, serving this node's drives under the methods `drive.*`. Every
//! operation is one unary call (its arguments and answer encoded by
//! `wire.rs`) except the shard data:
//! - the streamed shard write, `drive.create_file`, whose request body
//!   carries the shard's bytes under HTTP/2 flow control while its answer
//!   says first whether the file opened, then, after the last byte, what
//!   `finish` returned. The caller's buffers are the body (no copy);
//! - the ranged read, `drive.read_at`, answered with a short head and then
//!   the buffer the drive read into (no copy); the caller copies the
//!   frames once, into its own buffer. A sequential reader is made of such
//!   calls. The unary `drive.read_file_at` (the bytes inside the answer)
//!   is still served, for callers of earlier builds during a rolling
//!   upgrade.
//!
//! Small calls are batched: the calls a request makes at once to the
//! drives of one node (the `xl.meta` of each of its drives, their
//! commits, ...) wait for the current task to yield, then leave as one
//! `drive.batch` call that the callee answers as the calls would have been
//! answered one by one ([`PeerBatch`]); a call alone goes as itself.
//! Shard data (ranged reads, streamed writes) and walks are never batched.
//!
//! Deadlines: the caller wraps each remote drive in a
//! [`drive::DeadlineDrive`], as it wraps its local drives, so a remote
//! operation is bounded by the same per-operation deadline; a node that
//! stops answering is found by the connection's pings within seconds, and
//! calls to it fail at once until it answers again. Errors cross the wire
//! as the drive error they were, so quorum decisions are the same for a
//! remote drive as for a local one; failures of the call itself (no
//! connection, deadline, broken stream) are drive faults.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use drive::{
    AlignedBuf, BoxFuture, DirEntryName, DiskInfo, Drive, DriveError, FileInfo, HealthReport,
    IoMode, ShardReader, ShardWriter, VolumeInfo, WalkOptions, WalkPage,
};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use rpc::{BodySender, Peer, PeerState, RpcError};
use uuid::Uuid;

use super::wire::{self, Dec, Enc, WireError};

/// Bytes one server-side write hands to the local drive at most (the
/// stream arrives in HTTP/2 frames of up to 256 KiB).
pub(super) const SERVER_CHUNK: usize = 512 << 10;
/// Request frames a streamed write queues ahead of the connection.
const WRITE_FRAMES: usize = 4;
/// Largest argument block of a streamed call.
pub(super) const MAX_ARGS: usize = 64 << 10;
/// Largest ranged read one call answers.
pub(super) const MAX_READ: usize = 64 << 20;
/// How long the server waits for the next bytes of a streamed write before
/// it gives the write up (the caller's own deadline is far shorter).
pub(super) const STREAM_IDLE: Duration = Duration::from_secs(120);
/// How long a writer whose stream was refused waits for the server's
/// reason.
const REASON_WAIT: Duration = Duration::from_secs(2);

pub(super) fn malformed(e: WireError) -> DriveError {
    DriveError::InvalidArgument(e.to_string())
}

/// A failed call as a drive fault: the drive cannot be reached, whatever
/// the drive itself would have said.
fn call_error(e: RpcError) -> DriveError {
    match e {
        RpcError::Timeout { after_ms, .. } => DriveError::Timeout(Duration::from_millis(after_ms)),
        RpcError::Unreachable { peer, reason } => {
            DriveError::Offline(format!("node {peer} is unreachable: {reason}"))
        }
        RpcError::Auth { .. } => DriveError::Offline(e.to_string()),
        RpcError::Broken { .. } | RpcError::Remote { .. } => DriveError::Io {
            op: "node rpc",
            source: std::io::Error::other(e.to_string()),
        },
    }
}

/// An answer: `[OK] payload` or `[ERR] error`.
pub(super) fn answer(result: Result<Enc, DriveError>) -> Bytes {
    let r = result.as_ref().map(|p| &p.0[..]);
    Bytes::from(wire::answer(r, wire::put_error).0)
}

/// The payload of an answer, or the error it carries.
fn open_answer(b: &[u8]) -> Result<&[u8], DriveError> {
    match wire::open(b).map_err(malformed)? {
        Ok(payload) => Ok(payload),
        Err(mut error) => Err(wire::get_error(&mut error).map_err(malformed)?),
    }
}

/// A length-prefixed message, as streamed answers and arguments are framed.
pub(super) fn framed(payload: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(4 + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    Bytes::from(out)
}

/// Reads length-prefixed messages out of a body, whatever its framing.
pub(super) struct Messages {
    body: Incoming,
    pending: BytesMut,
}

impl Messages {
    pub(super) fn new(body: Incoming) -> Messages {
        Messages {
            body,
            pending: BytesMut::new(),
        }
    }

    /// The drive's next answer on a streamed call (at most [`MAX_ARGS`]
    /// bytes, its status not yet opened); a body that ends first is an
    /// error saying `missing`.
    pub(super) async fn answer(&mut self, missing: &str) -> Result<Bytes, DriveError> {
        self.next(MAX_ARGS)
            .await
            .map_err(|e| stream_error(&e))?
            .ok_or_else(|| stream_error(missing))
    }

    /// The next message (`None` at the end of the body), at most `max`
    /// bytes.
    pub(super) async fn next(&mut self, max: usize) -> Result<Option<Bytes>, String> {
        loop {
            if self.pending.len() >= 4 {
                let n = u32::from_be_bytes([
                    self.pending[0],
                    self.pending[1],
                    self.pending[2],
                    self.pending[3],
                ]) as usize;
                if n > max {
                    return Err(format!("a message of {n} bytes (at most {max})"));
                }
                if self.pending.len() >= 4 + n {
                    self.pending.advance(4);
                    return Ok(Some(self.pending.split_to(n).freeze()));
                }
            }
            match self.body.frame().await {
                None if self.pending.is_empty() => return Ok(None),
                None => return Err("the stream ended inside a message".into()),
                Some(Err(e)) => return Err(e.to_string()),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        self.pending.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// Whatever followed the messages read so far, then the raw frames.
    pub(super) async fn raw(&mut self) -> Option<Result<Bytes, String>> {
        if !self.pending.is_empty() {
            return Some(Ok(self.pending.split().freeze()));
        }
        loop {
            match self.body.frame().await? {
                Err(e) => return Some(Err(e.to_string())),
                Ok(f) => {
                    if let Ok(data) = f.into_data() {
                        return Some(Ok(data));
                    }
                }
            }
        }
    }
}

/// Calls queued for one batch at most (a request touches at most the
/// drives of a set).
pub(super) const MAX_BATCH: usize = 128;

/// The calls to one node's drives, batched: calls made while the current
/// task runs leave together when it yields.
pub struct PeerBatch {
    pub(super) peer: Peer,
    queue: Mutex<Vec<Queued>>,
}

struct Queued {
    op: &'static str,
    args: Vec<u8>,
    done: tokio::sync::oneshot::Sender<Result<Bytes, DriveError>>,
}

impl PeerBatch {
    pub fn new(peer: Peer) -> Arc<PeerBatch> {
        Arc::new(PeerBatch {
            peer,
            queue: Mutex::new(Vec::new()),
        })
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Vec<Queued>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Calls `drive.<op>` with `args`, in a batch with the calls made to
    /// the same node before this task yields.
    async fn call(self: &Arc<Self>, op: &'static str, args: Vec<u8>) -> Result<Bytes, DriveError> {
        let (done, answer) = tokio::sync::oneshot::channel();
        let first = {
            let mut q = self.queue();
            q.push(Queued { op, args, done });
            q.len() == 1
        };
        if first {
            let me = Arc::clone(self);
            tokio::spawn(async move {
                // The calls the caller's task makes before it waits join.
                tokio::task::yield_now().await;
                me.flush().await;
            });
        }
        answer
            .await
            .unwrap_or_else(|_| Err(stream_error("the batched call was dropped")))
    }

    /// Sends what is queued: one call as itself, several as a batch.
    async fn flush(self: Arc<Self>) {
        loop {
            let batch: Vec<Queued> = {
                let mut q = self.queue();
                let n = q.len().min(MAX_BATCH);
                q.drain(..n).collect()
            };
            match batch.len() {
                0 => return,
                1 => {
                    let Some(one) = batch.into_iter().next() else {
                        return;
                    };
                    let me = Arc::clone(&self);
                    tokio::spawn(async move {
                        let r = me.single(one.op, one.args).await;
                        let _ = one.done.send(r);
                    });
                }
                _ => {
                    let me = Arc::clone(&self);
                    tokio::spawn(async move { me.send_batch(batch).await });
                }
            }
            if self.queue().is_empty() {
                return;
            }
        }
    }

    async fn single(&self, op: &str, args: Vec<u8>) -> Result<Bytes, DriveError> {
        let answer = self
            .peer
            .call(&format!("drive.{op}"), Bytes::from(args), None)
            .await
            .map_err(call_error)?;
        let start = answer.len() - open_answer(&answer)?.len();
        Ok(answer.slice(start..))
    }

    async fn send_batch(&self, batch: Vec<Queued>) {
        let mut e = Enc::new();
        e.u32(batch.len() as u32);
        for q in &batch {
            e.str(q.op).bytes(&q.args);
        }
        let answers = self
            .peer
            .call("drive.batch", Bytes::from(e.0), None)
            .await
            .map_err(call_error)
            .and_then(|b| split_batch(&b, batch.len()));
        match answers {
            Ok(answers) => {
                for (q, a) in batch.into_iter().zip(answers) {
                    let r = open_answer(&a).map(|p| a.slice(a.len() - p.len()..));
                    let _ = q.done.send(r);
                }
            }
            Err(err) => {
                let text = err.to_string();
                let fault = err.is_fault();
                for q in batch {
                    // Every call of a failed batch fails as the batch did.
                    let e = if fault {
                        DriveError::Offline(text.clone())
                    } else {
                        stream_error(&text)
                    };
                    let _ = q.done.send(Err(e));
                }
            }
        }
    }
}

/// The answers of a `drive.batch` call, `n` of them.
fn split_batch(b: &Bytes, n: usize) -> Result<Vec<Bytes>, DriveError> {
    let mut d = Dec::new(b);
    let count = d.u32().map_err(malformed)? as usize;
    if count != n {
        return Err(malformed(WireError(format!(
            "{count} answers to {n} calls"
        ))));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let a = d.bytes().map_err(malformed)?;
        // A view of the answer, not a copy.
        let start = a.as_ptr() as usize - b.as_ptr() as usize;
        out.push(b.slice(start..start + a.len()));
    }
    d.end().map_err(malformed)?;
    Ok(out)
}

/// A drive of another node.
pub struct RemoteDrive {
    batch: Arc<PeerBatch>,
    index: u32,
    label: String,
    id: Mutex<Option<Uuid>>,
}

impl std::fmt::Debug for RemoteDrive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteDrive")
            .field("drive", &self.label)
            .field("node", &self.batch.peer.name())
            .finish()
    }
}

impl RemoteDrive {
    /// Drive `index` of the layout (its endpoint `label`), served by the
    /// node `batch` calls.
    pub fn new(batch: Arc<PeerBatch>, index: u32, label: String) -> RemoteDrive {
        RemoteDrive {
            batch,
            index,
            label,
            id: Mutex::new(None),
        }
    }

    fn args(&self) -> Enc {
        let mut e = Enc::new();
        e.u32(self.index);
        e
    }

    /// A small call, batched with the calls to the same node's drives.
    async fn call(&self, op: &'static str, args: Enc) -> Result<Bytes, DriveError> {
        self.batch.call(op, args.0).await
    }

    /// A call that is never batched (shard data, walks).
    async fn call_alone(&self, op: &'static str, args: Enc) -> Result<Bytes, DriveError> {
        self.batch.single(op, args.0).await
    }

    async fn call_unit(&self, op: &'static str, args: Enc) -> Result<(), DriveError> {
        self.call(op, args).await.map(|_| ())
    }
}

impl Drive for RemoteDrive {
    fn id(&self) -> Option<Uuid> {
        *self.id.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_id(&self, id: Option<Uuid>) {
        *self.id.lock().unwrap_or_else(|e| e.into_inner()) = id;
    }

    fn label(&self) -> String {
        self.label.clone()
    }

    fn is_local(&self) -> bool {
        false
    }

    fn health(&self) -> HealthReport {
        let mut h = HealthReport::online();
        if self.batch.peer.state() == PeerState::Down {
            h.state = drive::DriveState::Offline;
        }
        h
    }

    fn disk_info(&self) -> BoxFuture<'_, drive::Result<DiskInfo>> {
        Box::pin(async move {
            let b = self.call("disk_info", self.args()).await?;
            wire::get_disk_info(&mut Dec::new(&b)).map_err(malformed)
        })
    }

    fn make_volume<'a>(&'a self, volume: &'a str) -> BoxFuture<'a, drive::Result<()>> {
        Box::pin(async move {
            let mut a = self.args();
            a.str(volume);
            self.call_unit("make_volume", a).await
        })
    }

    fn list_volumes(&self) -> BoxFuture<'_, drive::Result<Vec<VolumeInfo>>> {
        Box::pin(async move {
            let b = self.call("list_volumes", self.args()).await?;
            let mut d = Dec::new(&b);
            let n = d.u32().map_err(malformed)? as usize;
            let mut out = Vec::with_capacity(n.min(b.len()));
            for _ in 0..n {
                out.push(wire::get_volume(&mut d).map_err(malformed)?);
            }
            Ok(out)
        })
    }

    fn stat_volume<'a>(&'a self, volume: &'a str) -> BoxFuture<'a, drive::Result<VolumeInfo>> {
        Box::pin(async move {
            let mut a = self.args();
            a.str(volume);
            let b = self.call("stat_volume", a).await?;
            wire::get_volume(&mut Dec::new(&b)).map_err(malformed)
        })
    }

    fn delete_volume<'a>(
        &'a self,
        volume: &'a str,
        force: bool,
    ) -> BoxFuture<'a, drive::Result<()>> {
        Box::pin(async move {
            let mut a = self.args();
            a.str(volume).bool(force);
            self.call_unit("delete_volume", a).await
        })
    }

    fn read_all<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        limit: u64,
    ) -> BoxFuture<'a, drive::Result<Vec<u8>>> {
        Box::pin(async move {
            let mut a = self.args();
            a.str(volume).str(path).u64(limit);
            let b = self.call("read_all", a).await?;
            if b.len() as u64 > limit {
                return Err(DriveError::TooLarge {
                    size: b.len() as u64,
                    limit,
                });
            }
            Ok(b.to_vec())
        })
    }

    fn write_all<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        data: Vec<u8>,
    ) -> BoxFuture<'a, drive::Result<()>> {
        Box::pin(async move {
            let mut a = self.args();
            a.str(volume).str(path).bytes(&data);
            self.call_unit("write_all", a).await
        })
    }

    fn create_file<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        expected_size: Option<u64>,
    ) -> BoxFuture<'a, drive::Result<Box<dyn ShardWriter>>> {
        Box::pin(async move {
            let mut a = self.args();
            a.str(volume).str(path).opt_u64(expected_size);
            let (tx, body) = rpc::channel(WRITE_FRAMES);
            // The channel has room: the arguments are queued before the
            // call starts.
            let _ = tx.send(framed(&a.0)).await;
            let resp = self
                .batch
                .peer
                .stream("drive.create_file", body, None)
                .await
                .map_err(call_error)?;
            let mut answers = Messages::new(resp.into_body());
            let opened = answers.answer("the drive answered nothing").await?;
            open_answer(&opened)?;
            Ok(Box::new(RemoteWriter {
                tx: Some(tx),
                answers,
                written: 0,
                poisoned: false,
            }) as Box<dyn ShardWriter>)
        })
    }

    fn read_file_at<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        offset: u64,
        len: usize,
        mut buf: AlignedBuf,
    ) -> BoxFuture<'a, drive::Result<(AlignedBuf, usize)>> {
        Box::pin(async move {
            if len > buf.capacity() {
                return Err(DriveError::InvalidArgument(format!(
                    "read of {len} bytes into a buffer of {}",
                    buf.capacity()
                )));
            }
            let mut a = self.args();
            a.str(volume).str(path).u64(offset).u64(len as u64);
            let resp = self
                .batch
                .peer
                .stream("drive.read_at", rpc::full(framed(&a.0)), None)
                .await
                .map_err(call_error)?;
            let mut answer = Messages::new(resp.into_body());
            let head = answer.answer("the drive answered nothing").await?;
            let n = Dec::new(open_answer(&head)?).u64().map_err(malformed)?;
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            if n > len {
                return Err(malformed(WireError(format!(
                    "{n} bytes answered to a read of {len}"
                ))));
            }
            // The frames go straight into the caller's buffer: the one copy
            // between the connection and the reader.
            let mut filled = 0;
            while let Some(frame) = answer.raw().await {
                let frame = frame.map_err(|e| stream_error(&e))?;
                if frame.len() > n - filled {
                    return Err(malformed(WireError(format!(
                        "more than the {n} bytes announced for a read"
                    ))));
                }
                buf.capacity_mut()[filled..filled + frame.len()].copy_from_slice(&frame);
                filled += frame.len();
            }
            if filled != n {
                return Err(stream_error("the read's answer ended early"));
            }
            buf.set_len(n);
            Ok((buf, n))
        })
    }

    fn open_reader<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        offset: u64,
        len: Option<u64>,
    ) -> BoxFuture<'a, drive::Result<Box<dyn ShardReader>>> {
        Box::pin(async move {
            let info = self.stat_file(volume, path).await?;
            if info.is_dir {
                return Err(DriveError::IsDirectory);
            }
            let end = match len {
                Some(l) => offset.saturating_add(l),
                None => info.size.max(offset),
            };
            if offset > info.size || end > info.size {
                return Err(DriveError::OutOfRange {
                    offset,
                    len: end - offset,
                    size: info.size,
                });
            }
            Ok(Box::new(RemoteReader {
                drive: RemoteDrive {
                    batch: Arc::clone(&self.batch),
                    index: self.index,
                    label: self.label.clone(),
                    id: Mutex::new(self.id()),
                },
                volume: volume.to_owned(),
                path: path.to_owned(),
                offset,
                remaining: end - offset,
            }) as Box<dyn ShardReader>)
        })
    }

    fn rename<'a>(
        &'a self,
        src_volume: &'a str,
        src_path: &'a str,
        dst_volume: &'a str,
        dst_path: &'a str,
    ) -> BoxFuture<'a, drive::Result<()>> {
        Box::pin(async move {
            let mut a = self.args();
            a.str(src_volume)
                .str(src_path)
                .str(dst_volume)
                .str(dst_path);
            self.call_unit("rename", a).await
        })
    }

    fn delete<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        recursive: bool,
    ) -> BoxFuture<'a, drive::Result<()>> {
        Box::pin(async move {
            let mut a = self.args();
            a.str(volume).str(path).bool(recursive);
            self.call_unit("delete", a).await
        })
    }

    fn move_to_trash<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, drive::Result<()>> {
        Box::pin(async move {
            let mut a = self.args();
            a.str(volume).str(path);
            self.call_unit("move_to_trash", a).await
        })
    }

    fn empty_trash(&self, max_entries: usize) -> BoxFuture<'_, drive::Result<usize>> {
        Box::pin(async move {
            let mut a = self.args();
            a.u64(max_entries as u64);
            let b = self.call("empty_trash", a).await?;
            let n = Dec::new(&b).u64().map_err(malformed)?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }

    fn list_dir<'a>(
        &'a self,
        volume: &'a str,
        dir_path: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, drive::Result<Vec<DirEntryName>>> {
        Box::pin(async move {
            let mut a = self.args();
            a.str(volume).str(dir_path).u64(limit as u64);
            let b = self.call("list_dir", a).await?;
            let mut d = Dec::new(&b);
            let n = d.u32().map_err(malformed)? as usize;
            let mut out = Vec::with_capacity(n.min(limit).min(b.len()));
            for _ in 0..n {
                out.push(d.string().map_err(malformed)?);
            }
            Ok(out)
        })
    }

    fn stat_file<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, drive::Result<FileInfo>> {
        Box::pin(async move {
            let mut a = self.args();
            a.str(volume).str(path);
            let b = self.call("stat_file", a).await?;
            wire::get_file_info(&mut Dec::new(&b)).map_err(malformed)
        })
    }

    fn walk<'a>(&'a self, opts: &'a WalkOptions) -> BoxFuture<'a, drive::Result<WalkPage>> {
        Box::pin(async move {
            let mut a = self.args();
            wire::put_walk_options(&mut a, opts);
            let b = self.call_alone("walk", a).await?;
            wire::get_walk_page(&mut Dec::new(&b)).map_err(malformed)
        })
    }
}

fn stream_error(what: &str) -> DriveError {
    DriveError::Io {
        op: "remote shard stream",
        source: std::io::Error::other(what.to_owned()),
    }
}

/// A shard file being written on another node.
struct RemoteWriter {
    tx: Option<BodySender>,
    answers: Messages,
    written: u64,
    poisoned: bool,
}

impl RemoteWriter {
    /// Why the server stopped taking bytes: the error it answered.
    async fn reason(&mut self) -> DriveError {
        match tokio::time::timeout(REASON_WAIT, self.answers.next(MAX_ARGS)).await {
            Ok(Ok(Some(m))) => match open_answer(&m) {
                Err(e) => e,
                Ok(_) => stream_error("the drive ended the write early"),
            },
            Ok(Ok(None)) => stream_error("the drive ended the write without a reason"),
            Ok(Err(e)) => stream_error(&e),
            Err(_) => stream_error("the drive stopped taking bytes"),
        }
    }
}

impl RemoteWriter {
    /// Queues `buf` itself on the call's body (no copy): the connection
    /// writes from it, and it goes back to its pool once sent.
    async fn send(&mut self, buf: AlignedBuf) -> drive::Result<()> {
        if self.poisoned {
            return Err(DriveError::Poisoned);
        }
        let Some(tx) = &self.tx else {
            return Err(DriveError::Poisoned);
        };
        // Poisoned until the bytes are queued: a write cancelled by its
        // deadline leaves the stream in an unknown state.
        self.poisoned = true;
        let n = buf.len();
        if n > 0 && tx.send(Bytes::from_owner(buf)).await.is_err() {
            return Err(self.reason().await);
        }
        self.poisoned = false;
        self.written += n as u64;
        Ok(())
    }
}

impl ShardWriter for RemoteWriter {
    fn write(&mut self, buf: AlignedBuf) -> BoxFuture<'_, drive::Result<AlignedBuf>> {
        Box::pin(async move {
            self.send(buf).await?;
            Ok(AlignedBuf::empty())
        })
    }

    fn write_many(
        &mut self,
        bufs: Vec<AlignedBuf>,
    ) -> BoxFuture<'_, drive::Result<Vec<AlignedBuf>>> {
        Box::pin(async move {
            for buf in bufs {
                self.send(buf).await?;
            }
            Ok(Vec::new())
        })
    }

    fn finish(mut self: Box<Self>) -> BoxFuture<'static, drive::Result<u64>> {
        Box::pin(async move {
            if self.poisoned {
                return Err(DriveError::Poisoned);
            }
            // The end of the request body is the end of the file.
            self.tx = None;
            let m = self
                .answers
                .answer("the drive did not confirm the write")
                .await?;
            let size = Dec::new(open_answer(&m)?).u64().map_err(malformed)?;
            Ok(size)
        })
    }

    fn written(&self) -> u64 {
        self.written
    }

    fn io_mode(&self) -> drive::Result<IoMode> {
        // Whatever the remote drive uses, this side buffers.
        Ok(IoMode::Buffered)
    }
}

/// A range of a file on another node, read call by call.
struct RemoteReader {
    drive: RemoteDrive,
    volume: String,
    path: String,
    offset: u64,
    remaining: u64,
}

impl ShardReader for RemoteReader {
    fn read(&mut self, buf: AlignedBuf) -> BoxFuture<'_, drive::Result<AlignedBuf>> {
        Box::pin(async move {
            let want = (buf.capacity() as u64)
                .min(self.remaining)
                .min(MAX_READ as u64) as usize;
            if want == 0 {
                let mut buf = buf;
                buf.set_len(0);
                return Ok(buf);
            }
            let (buf, n) = self
                .drive
                .read_file_at(&self.volume, &self.path, self.offset, want, buf)
                .await?;
            if n == 0 {
                return Err(DriveError::OutOfRange {
                    offset: self.offset,
                    len: self.remaining,
                    size: self.offset,
                });
            }
            self.offset += n as u64;
            self.remaining -= n as u64;
            Ok(buf)
        })
    }

    fn remaining(&self) -> u64 {
        self.remaining
    }

    fn io_mode(&self) -> drive::Result<IoMode> {
        Ok(IoMode::Buffered)
    }
}

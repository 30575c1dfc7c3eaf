//! The callee's side of remote drives: this node's drives served to the
//! other nodes under the methods `drive.*` (see `remote_drive.rs` for the
//! calls and their encoding).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use drive::{AlignedBuf, BufferPool, Drive, DriveError, PoolClasses, ShardWriter};
use http::{Request, Response};
use hyper::body::Incoming;
use rpc::RpcBody;

use super::remote_drive::{
    MAX_ARGS, MAX_BATCH, MAX_READ, Messages, SERVER_CHUNK, STREAM_IDLE, answer, framed, malformed,
};
use super::wire::{self, Dec, Enc, WireError};

/// This node's drives, served to the other nodes.
pub struct DriveServer {
    /// Layout index -> drive.
    drives: HashMap<u32, Arc<dyn Drive>>,
    /// Buffers of ranged reads by capacity, reused: a read's buffer is
    /// sent as it is and comes back once the connection has sent it.
    read_pools: PoolClasses,
    /// Told the data directory of a version as a peer removes it from a
    /// drive here (see [`DriveServer::on_data_dir_removed`]).
    removed: std::sync::OnceLock<DataDirHook>,
}

/// What a [`DriveServer`] calls with the id of a version's data directory
/// that a peer is removing.
pub type DataDirHook = Arc<dyn Fn(&[u8; 16]) + Send + Sync>;

/// Capacities of ranged reads given pools, the largest pooled capacity
/// (other reads get a buffer of their own), buffers out per pool at most,
/// and the bytes a pool keeps idle at most (at least one buffer): at most
/// 64 MiB held idle in all.
const READ_POOL_CLASSES: usize = 8;
const READ_POOL_MAX_BUF: usize = 4 << 20;
const READ_POOL_OUT: usize = 64;
const READ_POOL_IDLE_BYTES: usize = 8 << 20;

/// The unary methods, as `drive.<name>`.
const UNARY: &[&str] = &[
    "disk_info",
    "make_volume",
    "list_volumes",
    "stat_volume",
    "delete_volume",
    "read_all",
    "write_all",
    "read_file_at",
    "rename",
    "delete",
    "move_to_trash",
    "empty_trash",
    "list_dir",
    "stat_file",
    "walk",
];

impl DriveServer {
    /// Serves `drives` (layout index, drive).
    pub fn new(drives: impl IntoIterator<Item = (u32, Arc<dyn Drive>)>) -> DriveServer {
        DriveServer {
            drives: drives.into_iter().collect(),
            read_pools: PoolClasses::new(READ_POOL_CLASSES, READ_POOL_OUT, READ_POOL_OUT)
                .max_buf_bytes(READ_POOL_MAX_BUF)
                .max_idle_bytes(READ_POOL_IDLE_BYTES),
            removed: std::sync::OnceLock::new(),
        }
    }

    /// Calls `hook` whenever a peer removes a directory named by a UUID
    /// (a version's data directory: every removal of a version's data is a
    /// recursive delete of `<object>/<data dir>` on each drive of its set)
    /// from a drive here, before removing it. The node's object layer
    /// drops what it cached of that version: the peer's layer forgets only
    /// its own cache. Set once, when the layer is open.
    pub fn on_data_dir_removed(&self, hook: DataDirHook) {
        let _ = self.removed.set(hook);
    }

    /// Adds the `drive.*` methods to `service`.
    pub fn register(self: &Arc<Self>, service: &mut rpc::Service) {
        for &op in UNARY {
            let me = Arc::clone(self);
            service.unary(&format!("drive.{op}"), move |_, body: Bytes| {
                let me = Arc::clone(&me);
                async move { Ok::<_, rpc::Failure>(answer(me.serve(op, &body).await)) }
            });
        }
        let me = Arc::clone(self);
        service.unary("drive.batch", move |_, body: Bytes| {
            let me = Arc::clone(&me);
            async move { me.serve_batch(body).await }
        });
        let me = Arc::clone(self);
        service.streaming("drive.read_at", move |_, req| {
            let me = Arc::clone(&me);
            async move { me.serve_read(req).await }
        });
        let me = Arc::clone(self);
        service.streaming("drive.create_file", move |_, req| {
            let me = Arc::clone(&me);
            async move { me.serve_create(req) }
        });
    }

    /// `drive.batch`: each call of the batch answered as if it came alone,
    /// all at once.
    async fn serve_batch(self: Arc<Self>, body: Bytes) -> Result<Bytes, rpc::Failure> {
        let bad = |e: WireError| rpc::Failure {
            status: 400,
            message: e.to_string(),
        };
        let mut d = Dec::new(&body);
        let n = d.u32().map_err(bad)? as usize;
        if n > MAX_BATCH {
            return Err(bad(WireError(format!(
                "a batch of {n} calls (at most {MAX_BATCH})"
            ))));
        }
        let mut calls = Vec::with_capacity(n);
        for _ in 0..n {
            let op = d.string().map_err(bad)?;
            let args = d.bytes().map_err(bad)?;
            let start = args.as_ptr() as usize - body.as_ptr() as usize;
            calls.push((op, body.slice(start..start + args.len())));
        }
        d.end().map_err(bad)?;
        let mut set = tokio::task::JoinSet::new();
        for (i, (op, args)) in calls.into_iter().enumerate() {
            let me = Arc::clone(&self);
            set.spawn(async move {
                let r = match UNARY.iter().find(|u| **u == op) {
                    Some(op) => me.serve(op, &args).await,
                    None => Err(DriveError::InvalidArgument(format!("no drive method {op}"))),
                };
                (i, answer(r))
            });
        }
        let mut answers = vec![Bytes::new(); n];
        while let Some(r) = set.join_next().await {
            if let Ok((i, a)) = r {
                answers[i] = a;
            }
        }
        let mut out = Enc::new();
        out.u32(n as u32);
        for a in &answers {
            out.bytes(a);
        }
        Ok(Bytes::from(out.0))
    }

    fn drive(&self, d: &mut Dec<'_>) -> Result<&Arc<dyn Drive>, DriveError> {
        let index = d.u32().map_err(malformed)?;
        self.drives.get(&index).ok_or_else(|| {
            DriveError::InvalidArgument(format!("drive {index} is not served by this node"))
        })
    }

    async fn serve(&self, op: &str, body: &[u8]) -> Result<Enc, DriveError> {
        let mut d = Dec::new(body);
        let drive = self.drive(&mut d)?;
        let mut out = Enc::new();
        let m = malformed;
        match op {
            "disk_info" => wire::put_disk_info(&mut out, &drive.disk_info().await?),
            "make_volume" => drive.make_volume(&d.string().map_err(m)?).await?,
            "list_volumes" => {
                let vols = drive.list_volumes().await?;
                out.u32(vols.len() as u32);
                for v in &vols {
                    wire::put_volume(&mut out, v);
                }
            }
            "stat_volume" => {
                wire::put_volume(&mut out, &drive.stat_volume(&d.string().map_err(m)?).await?)
            }
            "delete_volume" => {
                let vol = d.string().map_err(m)?;
                drive.delete_volume(&vol, d.bool().map_err(m)?).await?
            }
            "read_all" => {
                let (vol, path) = (d.string().map_err(m)?, d.string().map_err(m)?);
                let data = drive.read_all(&vol, &path, d.u64().map_err(m)?).await?;
                out.0.extend_from_slice(&data);
            }
            "write_all" => {
                let (vol, path) = (d.string().map_err(m)?, d.string().map_err(m)?);
                let data = d.bytes().map_err(m)?.to_vec();
                drive.write_all(&vol, &path, data).await?
            }
            "read_file_at" => {
                let (vol, path) = (d.string().map_err(m)?, d.string().map_err(m)?);
                let offset = d.u64().map_err(m)?;
                let len = usize::try_from(d.u64().map_err(m)?).unwrap_or(usize::MAX);
                if len > MAX_READ {
                    return Err(DriveError::InvalidArgument(format!(
                        "a read of {len} bytes (at most {MAX_READ} per call)"
                    )));
                }
                let buf = AlignedBuf::with_capacity(len.max(1))?;
                let (buf, n) = drive.read_file_at(&vol, &path, offset, len, buf).await?;
                out.0.reserve(n);
                out.0.extend_from_slice(&buf[..n]);
            }
            "rename" => {
                let (sv, sp) = (d.string().map_err(m)?, d.string().map_err(m)?);
                let (dv, dp) = (d.string().map_err(m)?, d.string().map_err(m)?);
                drive.rename(&sv, &sp, &dv, &dp).await?
            }
            "delete" => {
                let (vol, path) = (d.string().map_err(m)?, d.string().map_err(m)?);
                let recursive = d.bool().map_err(m)?;
                if recursive && let Some(hook) = self.removed.get() {
                    let last = path.trim_end_matches('/').rsplit('/').next();
                    if let Some(dir) = last.and_then(|l| uuid::Uuid::try_parse(l).ok()) {
                        hook(dir.as_bytes());
                    }
                }
                drive.delete(&vol, &path, recursive).await?
            }
            "move_to_trash" => {
                let (vol, path) = (d.string().map_err(m)?, d.string().map_err(m)?);
                drive.move_to_trash(&vol, &path).await?
            }
            "empty_trash" => {
                let max = usize::try_from(d.u64().map_err(m)?).unwrap_or(usize::MAX);
                out.u64(drive.empty_trash(max).await? as u64);
            }
            "list_dir" => {
                let (vol, dir) = (d.string().map_err(m)?, d.string().map_err(m)?);
                let limit = usize::try_from(d.u64().map_err(m)?).unwrap_or(usize::MAX);
                let names = drive.list_dir(&vol, &dir, limit).await?;
                out.u32(names.len() as u32);
                for n in &names {
                    out.str(n);
                }
            }
            "stat_file" => {
                let (vol, path) = (d.string().map_err(m)?, d.string().map_err(m)?);
                wire::put_file_info(&mut out, &drive.stat_file(&vol, &path).await?)
            }
            "walk" => {
                let opts = wire::get_walk_options(&mut d).map_err(m)?;
                wire::put_walk_page(&mut out, &drive.walk(&opts).await?)
            }
            other => {
                return Err(DriveError::InvalidArgument(format!(
                    "no drive method {other}"
                )));
            }
        }
        d.end().map_err(m)?;
        Ok(out)
    }

    /// A buffer for a ranged read of `len` bytes: from the pool of its
    /// capacity while it has one (no zeroing, no fresh pages).
    fn read_buffer(&self, len: usize) -> Result<AlignedBuf, DriveError> {
        match self
            .read_pools
            .pool(len)
            .as_ref()
            .and_then(BufferPool::try_get)
        {
            Some(buf) => buf,
            None => AlignedBuf::with_capacity(len.max(1)),
        }
    }

    /// `drive.read_at`: a ranged read whose bytes travel as the buffer the
    /// drive read them into. The answer is a framed `[OK] u64 n`, then `n`
    /// raw bytes; or a framed error.
    async fn serve_read(self: Arc<Self>, req: Request<Incoming>) -> Response<RpcBody> {
        let mut incoming = Messages::new(req.into_body());
        let read = async {
            let args = match tokio::time::timeout(STREAM_IDLE, incoming.next(MAX_ARGS)).await {
                Ok(Ok(Some(a))) => a,
                Ok(Err(e)) => return Err(malformed(WireError(e))),
                _ => return Err(malformed(WireError("no arguments".into()))),
            };
            let mut d = Dec::new(&args);
            let drive = self.drive(&mut d)?;
            let (vol, path) = (
                d.string().map_err(malformed)?,
                d.string().map_err(malformed)?,
            );
            let offset = d.u64().map_err(malformed)?;
            let len = usize::try_from(d.u64().map_err(malformed)?).unwrap_or(usize::MAX);
            d.end().map_err(malformed)?;
            if len > MAX_READ {
                return Err(DriveError::InvalidArgument(format!(
                    "a read of {len} bytes (at most {MAX_READ} per call)"
                )));
            }
            let buf = self.read_buffer(len)?;
            let (mut buf, n) = drive.read_file_at(&vol, &path, offset, len, buf).await?;
            buf.set_len(n);
            Ok(buf)
        };
        match read.await {
            Ok(buf) => {
                let mut head = Enc::new();
                head.u64(buf.len() as u64);
                let (tx, body) = rpc::channel(2);
                // The channel has room for both.
                let _ = tx.send(framed(&answer(Ok(head)))).await;
                if !buf.is_empty() {
                    let _ = tx.send(Bytes::from_owner(buf)).await;
                }
                Response::new(body)
            }
            Err(e) => Response::new(rpc::full(framed(&answer(Err(e))))),
        }
    }

    /// `drive.create_file`: answers at once with a streamed body; a task
    /// reads the arguments, opens the file, says whether it opened, writes
    /// what arrives and, at the end of the request, says what `finish`
    /// returned. A caller that goes away leaves a partial file in the
    /// temporary area, as a local writer dropped before `finish` does.
    fn serve_create(self: Arc<Self>, req: Request<Incoming>) -> Response<RpcBody> {
        let (tx, body) = rpc::channel(2);
        tokio::spawn(async move {
            let reply = |r: Result<Enc, DriveError>| framed(&answer(r));
            let mut incoming = Messages::new(req.into_body());
            let args = match tokio::time::timeout(STREAM_IDLE, incoming.next(MAX_ARGS)).await {
                Ok(Ok(Some(a))) => a,
                _ => return,
            };
            let opened = async {
                let mut d = Dec::new(&args);
                let drive = self.drive(&mut d)?;
                let (vol, path) = (
                    d.string().map_err(malformed)?,
                    d.string().map_err(malformed)?,
                );
                let size = d.opt_u64().map_err(malformed)?;
                d.end().map_err(malformed)?;
                drive.create_file(&vol, &path, size).await
            };
            let mut writer = match opened.await {
                Ok(w) => w,
                Err(e) => {
                    let _ = tx.send(reply(Err(e))).await;
                    return;
                }
            };
            if tx.send(reply(Ok(Enc::new()))).await.is_err() {
                return;
            }
            let result = write_stream(&mut incoming, writer.as_mut()).await;
            let result = match result {
                Ok(()) => writer.finish().await.map(|n| {
                    let mut e = Enc::new();
                    e.u64(n);
                    e
                }),
                Err(None) => return,
                Err(Some(e)) => Err(e),
            };
            let _ = tx.send(reply(result)).await;
        });
        Response::new(body)
    }
}

/// Writes the rest of a streamed request to `writer` in chunks of up to
/// [`SERVER_CHUNK`]. `Err(None)`: the caller went away (nothing to answer).
async fn write_stream(
    incoming: &mut Messages,
    writer: &mut dyn ShardWriter,
) -> Result<(), Option<DriveError>> {
    let mut buf = AlignedBuf::with_capacity(SERVER_CHUNK).map_err(Some)?;
    loop {
        let frame = match tokio::time::timeout(STREAM_IDLE, incoming.raw()).await {
            Ok(Some(Ok(data))) => data,
            Ok(None) => break,
            Ok(Some(Err(_))) | Err(_) => return Err(None),
        };
        let mut data = &frame[..];
        while !data.is_empty() {
            let took = buf.extend_from_slice(data);
            data = &data[took..];
            if buf.remaining() == 0 {
                buf = writer.write(buf).await.map_err(Some)?;
                if buf.capacity() == 0 {
                    // The writer kept the buffer (see ShardWriter::write).
                    buf = AlignedBuf::with_capacity(SERVER_CHUNK).map_err(Some)?;
                }
            }
        }
    }
    if !buf.is_empty() {
        writer.write(buf).await.map_err(Some)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use drive::{AlignedBuf, Drive, DriveError, LocalDrive, LocalDriveConfig, WalkOptions};
    use rpc::{ClusterKey, Gate, Peer, PeerConfig};
    use tokio::net::TcpListener;

    use super::DriveServer;
    use crate::cluster::remote_drive::{PeerBatch, RemoteDrive};

    fn key() -> ClusterKey {
        ClusterKey::derive("admin", "remote-drive-secret").unwrap()
    }

    /// A node serving `drive` as layout drive 7; returns its address and
    /// the accept task.
    async fn serve(drive: Arc<dyn Drive>) -> (String, tokio::task::JoinHandle<()>) {
        serve_server(Arc::new(DriveServer::new([(7u32, drive)]))).await
    }

    /// A node serving the drives of `server`.
    async fn serve_server(server: Arc<DriveServer>) -> (String, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let mut service = rpc::Service::new(Gate::new(key(), "n2", Duration::from_secs(60)));
        server.register(&mut service);
        let service = Arc::new(service);
        let accept = tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let service = Arc::clone(&service);
                tokio::spawn(async move {
                    let _ = rpc::serve_connection(sock, service).await;
                });
            }
        });
        (addr, accept)
    }

    /// A node serving a local drive at `dir` as layout drive 7.
    async fn serve_dir(dir: &std::path::Path) -> (String, tokio::task::JoinHandle<()>) {
        let drive = LocalDrive::open(dir.to_owned(), LocalDriveConfig::default())
            .await
            .unwrap();
        serve(Arc::new(drive)).await
    }

    fn peer(addr: &str) -> Peer {
        let cfg = PeerConfig {
            connect_timeout: Duration::from_millis(500),
            ping_interval: Duration::from_millis(200),
            ping_timeout: Duration::from_millis(400),
            backoff: (Duration::from_millis(50), Duration::from_millis(200)),
            ..PeerConfig::default()
        };
        Peer::new("n1", "n2", addr, Arc::new(key()), cfg)
    }

    /// Runs the same operations on a local drive and on a remote one (a
    /// local drive of its own behind the RPC) and returns what each
    /// answered, as text.
    async fn script(d: &dyn Drive) -> Vec<String> {
        let mut out = Vec::new();
        let mut log = |s: String| out.push(s);
        log(format!("{:?}", d.make_volume("bkt").await));
        log(format!("{:?}", d.make_volume("bkt").await));
        log(format!("{:?}", d.make_volume(".minio.sys/tmp").await));
        log(format!(
            "{:?}",
            d.list_volumes()
                .await
                .map(|v| v.into_iter().map(|v| v.name).collect::<Vec<_>>())
        ));
        log(format!("{:?}", d.stat_volume("nope").await.map(|v| v.name)));
        log(format!(
            "{:?}",
            d.write_all("bkt", "a/xl.meta", b"meta-a".to_vec()).await
        ));
        log(format!(
            "{:?}",
            d.read_all("bkt", "a/xl.meta", 1 << 20).await
        ));
        log(format!("{:?}", d.read_all("bkt", "a/xl.meta", 3).await));
        log(format!("{:?}", d.read_all("bkt", "missing", 10).await));
        log(format!("{:?}", d.read_all("bkt", "../x", 10).await));

        // A streamed shard of odd size in writes of odd sizes, then its
        // ranges back.
        let data: Vec<u8> = (0..1_300_007u32).map(|i| (i * 31 % 251) as u8).collect();
        let mut w = d
            .create_file("bkt", "a/part.1", Some(data.len() as u64))
            .await
            .unwrap();
        for chunk in data.chunks(300_001) {
            let buf = AlignedBuf::from_slice(chunk).unwrap();
            w.write(buf).await.unwrap();
        }
        log(format!("written {}", w.written()));
        log(format!("{:?}", w.finish().await));
        for (off, len) in [(0usize, 4096usize), (777, 70_001), (1_299_000, 1007)] {
            let buf = AlignedBuf::with_capacity(len).unwrap();
            let (buf, n) = d
                .read_file_at("bkt", "a/part.1", off as u64, len, buf)
                .await
                .unwrap();
            log(format!(
                "read {off}+{len}: {n} {}",
                buf[..n] == data[off..off + n]
            ));
        }
        // Past the end: fewer bytes.
        let buf = AlignedBuf::with_capacity(8192).unwrap();
        let r = d
            .read_file_at("bkt", "a/part.1", 1_300_000, 8192, buf)
            .await;
        log(format!("{:?}", r.map(|(_, n)| n)));
        let mut r = d
            .open_reader("bkt", "a/part.1", 100, Some(500_000))
            .await
            .unwrap();
        let mut got = Vec::new();
        while r.remaining() > 0 {
            let buf = r
                .read(AlignedBuf::with_capacity(65_536).unwrap())
                .await
                .unwrap();
            got.extend_from_slice(&buf);
        }
        log(format!(
            "reader {} {}",
            got.len(),
            got == data[100..500_100]
        ));
        log(format!(
            "{:?}",
            d.open_reader("bkt", "a/part.1", 1_300_000, Some(100))
                .await
                .err()
        ));
        // A write shorter than announced fails at finish.
        let mut w = d.create_file("bkt", "a/short", Some(10)).await.unwrap();
        w.write(AlignedBuf::from_slice(b"abc").unwrap())
            .await
            .unwrap();
        log(format!("{:?}", w.finish().await));
        log(format!(
            "{:?}",
            d.create_file("nope", "x", None).await.err()
        ));

        log(format!("{:?}", d.list_dir("bkt", "a", 100).await));
        log(format!(
            "{:?}",
            d.stat_file("bkt", "a/part.1")
                .await
                .map(|f| (f.size, f.is_dir))
        ));
        log(format!(
            "{:?}",
            d.rename("bkt", "a/part.1", "bkt", "b/part.1").await
        ));
        log(format!("{:?}", d.stat_file("bkt", "a/part.1").await.err()));
        log(format!(
            "{:?}",
            d.write_all("bkt", "b/xl.meta", b"meta-b".to_vec()).await
        ));
        let page = d
            .walk(&WalkOptions {
                volume: "bkt".into(),
                limit: 100,
                meta_head: 4096,
                meta_limit: 1 << 20,
                ..WalkOptions::default()
            })
            .await;
        log(format!("{page:?}"));
        log(format!("{:?}", d.delete("bkt", "b", false).await));
        log(format!("{:?}", d.delete("bkt", "b", true).await));
        log(format!("{:?}", d.move_to_trash("bkt", "a").await));
        log(format!("{:?}", d.list_dir("bkt", "", 100).await));
        log(format!("{:?}", d.delete_volume("bkt", false).await));
        log(format!("{:?}", d.stat_volume("bkt").await.err()));
        log(format!("{:?}", d.disk_info().await.map(|i| i.total > 0)));
        out
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_remote_drive_answers_as_the_local_one() {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let open =
            |p: &std::path::Path| LocalDrive::open(p.to_owned(), LocalDriveConfig::default());
        let local = open(dirs[0].path()).await.unwrap();
        let served: Arc<dyn Drive> = Arc::new(open(dirs[1].path()).await.unwrap());
        let (addr, accept) = serve(served).await;
        let remote = RemoteDrive::new(PeerBatch::new(peer(&addr)), 7, format!("http://{addr}/d7"));

        let want = script(&local).await;
        let got = script(&remote).await;
        assert_eq!(want.len(), got.len());
        for (w, g) in want.iter().zip(&got) {
            // I/O errors keep their text but not their operation's name.
            if w.starts_with("Err(Io") || w.starts_with("Some(Io") {
                assert!(g.contains("Io"), "{w} vs {g}");
            } else {
                assert_eq!(w, g);
            }
        }
        assert!(got.iter().any(|s| s.contains("VolumeExists")));
        assert!(got.iter().any(|s| s.contains("SizeMismatch")));

        // A drive this node does not serve, and a node that went away.
        let other = RemoteDrive::new(PeerBatch::new(peer(&addr)), 8, "d8".into());
        assert!(matches!(
            other.make_volume("x").await,
            Err(DriveError::InvalidArgument(_))
        ));
        accept.abort();
        let _ = accept.await;
        let gone = RemoteDrive::new(PeerBatch::new(peer(&addr)), 7, "d7".into());
        let e = gone.stat_volume("x").await.unwrap_err();
        assert!(e.is_fault(), "{e:?}");
    }

    /// Calls made at once to one node leave as one batch, each answered as
    /// it would have been alone. A current-thread runtime keeps the flush
    /// task from running on another worker before all eight are queued.
    #[tokio::test(flavor = "current_thread")]
    async fn calls_made_at_once_leave_as_one_batch() {
        let dir = tempfile::tempdir().unwrap();
        let (addr, _accept) = serve_dir(dir.path()).await;
        let batch = PeerBatch::new(peer(&addr));
        let d = RemoteDrive::new(Arc::clone(&batch), 7, "d7".into());
        d.make_volume("batched").await.unwrap();
        for i in 0..6 {
            d.write_all("batched", &format!("f{i}"), vec![i as u8; i * 100])
                .await
                .unwrap();
        }
        let calls_before = batch.peer.stats().calls;
        let mut reads: Vec<_> = (0..8)
            .map(|i| {
                Box::pin(d.read_all(
                    "batched",
                    Box::leak(format!("f{i}").into_boxed_str()),
                    1 << 20,
                ))
            })
            .collect();
        let mut out: Vec<Option<drive::Result<Vec<u8>>>> = (0..8).map(|_| None).collect();
        std::future::poll_fn(|cx| {
            for (f, o) in reads.iter_mut().zip(out.iter_mut()) {
                if o.is_none()
                    && let std::task::Poll::Ready(r) = f.as_mut().poll(cx)
                {
                    *o = Some(r);
                }
            }
            if out.iter().all(Option::is_some) {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
        .await;
        for (i, r) in out.into_iter().enumerate() {
            match r.unwrap() {
                Ok(b) => assert_eq!(b, vec![i as u8; i * 100]),
                Err(e) => assert!(
                    i >= 6 && matches!(e, DriveError::FileNotFound),
                    "{i}: {e:?}"
                ),
            }
        }
        assert_eq!(
            batch.peer.stats().calls - calls_before,
            1,
            "one batch for eight reads"
        );
    }

    /// A shard write to another node sends the caller's buffers themselves:
    /// `write` gives back no buffer, and each pooled one returns to its
    /// pool once the connection has sent it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn remote_shard_writes_send_the_buffers_themselves() {
        let dir = tempfile::tempdir().unwrap();
        let (addr, _accept) = serve_dir(dir.path()).await;
        let d = RemoteDrive::new(PeerBatch::new(peer(&addr)), 7, "d7".into());
        d.make_volume("zc").await.unwrap();
        let pool = drive::BufferPool::new(256 << 10, 4, 4).unwrap();
        let data: Vec<u8> = (0..3 * (256 << 10) + 999u32)
            .map(|i| (i * 7 % 253) as u8)
            .collect();
        let mut w = d
            .create_file("zc", "f", Some(data.len() as u64))
            .await
            .unwrap();
        let mut chunks = data.chunks(256 << 10);
        let first = chunks.next().unwrap();
        let mut buf = pool.get().await.unwrap();
        buf.extend_from_slice(first);
        let back = w.write(buf).await.unwrap();
        assert_eq!(back.capacity(), 0, "the writer kept the buffer");
        let mut bufs = Vec::new();
        for c in chunks {
            let mut b = pool.get().await.unwrap();
            b.extend_from_slice(c);
            bufs.push(b);
        }
        assert!(w.write_many(bufs).await.unwrap().is_empty());
        assert_eq!(w.finish().await.unwrap(), data.len() as u64);
        // Sent and confirmed: every buffer is back in the pool.
        assert_eq!(pool.outstanding(), 0);
        assert!(d.read_all("zc", "f", 1 << 22).await.unwrap() == data);

        // Ranged reads: the bytes, fewer at the end, none past it, and the
        // drive's own error.
        for (off, len) in [(0usize, 1usize), (4095, 300_001), (data.len() - 10, 4096)] {
            let buf = AlignedBuf::with_capacity(len).unwrap();
            let (buf, n) = d
                .read_file_at("zc", "f", off as u64, len, buf)
                .await
                .unwrap();
            assert_eq!(n, len.min(data.len() - off));
            assert!(buf[..] == data[off..off + n], "read {off}+{len}");
        }
        let buf = AlignedBuf::with_capacity(10).unwrap();
        let (buf, n) = d
            .read_file_at("zc", "f", data.len() as u64 + 5, 10, buf)
            .await
            .unwrap();
        assert_eq!((n, buf.len()), (0, 0));
        let buf = AlignedBuf::with_capacity(10).unwrap();
        assert!(matches!(
            d.read_file_at("zc", "missing", 0, 10, buf).await,
            Err(DriveError::FileNotFound)
        ));
    }

    #[tokio::test]
    async fn a_peer_removing_a_data_dir_is_told_to_the_hook() {
        let dir = tempfile::tempdir().unwrap();
        let drive = LocalDrive::open(dir.path().to_owned(), LocalDriveConfig::default())
            .await
            .unwrap();
        let server = Arc::new(DriveServer::new([(
            7u32,
            Arc::new(drive) as Arc<dyn Drive>,
        )]));
        let told = Arc::new(std::sync::Mutex::new(Vec::new()));
        let t = Arc::clone(&told);
        server.on_data_dir_removed(Arc::new(move |d| t.lock().unwrap().push(*d)));
        let (addr, _accept) = serve_server(server).await;
        let d = RemoteDrive::new(PeerBatch::new(peer(&addr)), 7, "d7".into());
        d.make_volume("bkt").await.unwrap();
        let id = uuid::Uuid::new_v4();
        for path in [
            format!("obj/{id}/part.1"),
            "obj/xl.meta".into(),
            "other/x".into(),
        ] {
            d.write_all("bkt", &path, b"data".to_vec()).await.unwrap();
        }
        // Not data directories: a file, a directory not named by a UUID.
        d.delete("bkt", "obj/xl.meta", false).await.unwrap();
        d.delete("bkt", "other", true).await.unwrap();
        assert!(told.lock().unwrap().is_empty());
        d.delete("bkt", &format!("obj/{id}"), true).await.unwrap();
        assert_eq!(*told.lock().unwrap(), vec![*id.as_bytes()]);
        assert!(matches!(
            d.stat_file("bkt", &format!("obj/{id}/part.1")).await,
            Err(DriveError::FileNotFound)
        ));
    }
}

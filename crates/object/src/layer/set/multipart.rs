//! The set's side of multipart uploads, in MinIO's layout.
//!
//! An upload lives on the drives of the object's set under
//! `.minio.sys/multipart/<sha256(bucket/key)>/<upload-id>/`: an `xl.meta`
//! holding the future version (its data directory, erasure layout and
//! metadata), and `<data-dir>/part.N` shard files written exactly like a
//! PUT's, each with a small `part.N.meta` recording its ETag and size.
//! Completing moves the data directory into the object's directory and
//! adds the version to the object's `xl.meta`, as a PUT commits, so the
//! completed object is byte-for-byte what MinIO writes. (The contents of
//! `part.N.meta` are Tessera's own: an upload still in flight is not meant
//! to be resumed by MinIO.)

use drive::DriveError;
use drive::format::{MULTIPART_VOLUME, TMP_VOLUME};
use sha2::{Digest, Sha256};
use tokio::io::AsyncRead;
use tokio::task::JoinSet;
use uuid::Uuid;

use super::commit::NewData;
use super::put::{PutPlan, TmpPart};
use super::quorum::check_write_quorum;
use super::version::{check_metadata, new_version};
use super::*;
use crate::layer::multipart::{
    MAX_PART_SIZE, MAX_PARTS, META_PART_CHECKSUMS, MIN_PART_SIZE, PartOptions, UploadInfo,
    UploadedPart,
};
use crate::layer::names::object_dir;
use crate::xlmeta::{ErasureParams, Version, XlMeta};

/// Where the key of an upload is kept in its `xl.meta` (removed on
/// completion).
const META_UPLOAD_KEY: &str = "x-tessera-internal-multipart-key";

/// Where a completed object records the upload it came from and a digest
/// of the part list that completed it, so a repeated complete of that
/// upload (an SDK retrying after a lost response) is recognised: one short
/// value per version, nothing kept elsewhere.
pub(crate) const META_COMPLETED_UPLOAD: &str = "x-tessera-internal-completed-upload";

/// The record [`META_COMPLETED_UPLOAD`] holds for an upload completed with
/// `parts`: the upload id and the SHA-256 of the part numbers and ETags
/// (quotes dropped, lowercase), so only the same part list matches.
pub(crate) fn completed_upload_record(upload_id: &str, parts: &[(i64, String)]) -> Vec<u8> {
    let mut h = Sha256::new();
    for (n, etag) in parts {
        h.update(format!("{n}:{};", etag.trim_matches('"').to_ascii_lowercase()).as_bytes());
    }
    format!("{upload_id} {}", hex::encode(h.finalize())).into_bytes()
}

/// Whether `s` is an ETag as parts have: 32 lowercase hex digits.
fn is_part_etag(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// `sha256(bucket/key)` in hex: the directory of a key's uploads.
fn upload_root(bucket: &str, key: &str) -> String {
    hex::encode(Sha256::digest(format!("{bucket}/{key}").as_bytes()))
}

fn check_upload_id(id: &str) -> Result<()> {
    if id.is_empty()
        || id.len() > 128
        || !id
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
    {
        return Err(Error::NoSuchUpload(id.chars().take(64).collect()));
    }
    Ok(())
}

fn part_meta_encode(p: &UploadedPart) -> Vec<u8> {
    let mut text = format!(
        "tessera-part v1\n{}\n{}\n{}\n{}\n{}\n",
        p.number, p.etag, p.size, p.mod_time_nanos, p.actual_size
    );
    if let Some((name, value)) = &p.checksum {
        text.push_str(&format!("{name} {value}\n"));
    }
    text.into_bytes()
}

fn part_meta_decode(b: &[u8]) -> Option<UploadedPart> {
    let s = std::str::from_utf8(b).ok()?;
    let mut l = s.lines();
    if l.next()? != "tessera-part v1" {
        return None;
    }
    let number = l.next()?.parse().ok()?;
    let etag = l.next()?.to_owned();
    if !is_part_etag(&etag) {
        return None;
    }
    let size = l.next()?.parse().ok()?;
    let mod_time_nanos = l.next()?.parse().ok()?;
    // Records written before the actual size was kept have none.
    let actual_size = match l.next() {
        Some(a) => a.parse().ok()?,
        None => size,
    };
    let checksum = match l.next() {
        Some(line) => {
            let (name, value) = line.split_once(' ')?;
            Some((name.to_owned(), value.to_owned()))
        }
        None => None,
    };
    Some(UploadedPart {
        number,
        etag,
        size,
        actual_size,
        mod_time_nanos,
        checksum,
    })
}

impl ErasureSet {
    /// Starts an upload; returns its id.
    pub async fn create_multipart(
        &self,
        bucket: &str,
        key: &str,
        opts: &PutOptions,
        deployment: Uuid,
    ) -> Result<String> {
        check_metadata(opts)?;
        let n = self.drives.len();
        let m = opts.parity.unwrap_or(self.default_parity());
        if m > n / 2 {
            return Err(Error::InvalidMetadata(format!(
                "parity {m} is not valid for a set of {n} drives"
            )));
        }
        let k = n - m;
        let distribution = placement::hash_order(placement::distribution_key(bucket, key), n);
        let erasure = ErasureParams {
            data_blocks: k as u8,
            parity_blocks: m as u8,
            block_size: BLOCK_SIZE as i64,
            distribution: distribution.iter().map(|&d| d as u8).collect(),
        };
        // Ids carry the deployment, as MinIO's do, and are URL-safe.
        let upload_id = format!("{}-{}", deployment.simple(), Uuid::new_v4().simple());
        let mut ov = new_version([0; 16], *Uuid::new_v4().as_bytes(), 0, erasure, opts, "");
        ov.part_numbers.clear();
        ov.part_sizes.clear();
        ov.part_actual_sizes = Some(Vec::new());
        if let Some(u) = ov.meta_user.as_mut() {
            u.remove(crate::xlmeta::META_ETAG);
        }
        ov.set_sys(META_UPLOAD_KEY, key.as_bytes().to_vec());
        let path = format!("{}/{upload_id}/{XL_META}", upload_root(bucket, key));
        let mut set = JoinSet::new();
        for (d, drive) in self.drives.iter().enumerate() {
            let mut ov = ov.clone();
            ov.erasure_index = i64::from(ov.erasure_dist[d]);
            let mut meta = XlMeta::new();
            meta.add_version(Version::object(ov, WRITTEN_BY))?;
            let bytes = meta.encode()?;
            let (drive, path) = (drive.clone(), path.clone());
            set.spawn(async move { drive.write_all(MULTIPART_VOLUME, &path, bytes).await });
        }
        let mut ok = 0;
        while let Some(r) = set.join_next().await {
            if matches!(r, Ok(Ok(()))) {
                ok += 1;
            }
        }
        if let Err(e) = check_write_quorum(ok, ErasureSet::write_quorum(k, m)) {
            self.abort_multipart(bucket, key, &upload_id).await.ok();
            return Err(e);
        }
        Ok(upload_id)
    }

    /// The upload's pending version, agreed by a quorum of drives.
    async fn upload_version(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<ObjectVersion<'static>> {
        check_upload_id(upload_id)?;
        let dir = format!("{}/{upload_id}", upload_root(bucket, key));
        let metas = self.read_metas(MULTIPART_VOLUME, &dir).await;
        match self.resolve(bucket, key, metas, None) {
            Ok(r) => r
                .version
                .as_object()
                .cloned()
                .ok_or_else(|| Error::NoSuchUpload(upload_id.into())),
            Err(e) if e.is_not_found() => Err(Error::NoSuchUpload(upload_id.into())),
            Err(e) => Err(e),
        }
    }

    /// The upload's pending version as an [`ObjectInfo`] (its metadata and
    /// internal metadata, such as an encrypted upload's sealed key).
    pub async fn upload_info(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<ObjectInfo> {
        let ov = self.upload_version(bucket, key, upload_id).await?;
        Ok(object_info(bucket, key, &Version::object(ov, 0), true))
    }

    /// Whether this set holds the upload (agreed by a read quorum).
    pub(crate) async fn has_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<bool> {
        match self.upload_version(bucket, key, upload_id).await {
            Ok(_) => Ok(true),
            Err(Error::NoSuchUpload(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Uploads (or replaces) one part.
    pub async fn upload_part<R: AsyncRead + Unpin + Send>(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: i64,
        body: &mut R,
        opts: &PartOptions,
    ) -> Result<UploadedPart> {
        let (size, actual) = (opts.size, opts.actual_size);
        if !(1..=MAX_PARTS).contains(&number) {
            return Err(Error::InvalidPartNumber(number));
        }
        if let Some(s) = size
            && s > MAX_PART_SIZE
        {
            return Err(Error::EntityTooLarge {
                size: s,
                limit: MAX_PART_SIZE,
            });
        }
        let ov = self.upload_version(bucket, key, upload_id).await?;
        let (k, m) = (ov.erasure_m as usize, ov.erasure_n as usize);
        let rs = self.coder(k, m)?;
        let distribution: Vec<usize> = ov.erasure_dist.iter().map(|&d| usize::from(d)).collect();
        let quorum = ErasureSet::write_quorum(k, m);
        let data_dir = Uuid::from_bytes(ov.data_dir).to_string();
        let tmp_id = Uuid::new_v4().to_string();
        let tmp_part = format!("{tmp_id}/part.{number}");
        let plan = PutPlan {
            rs: &rs,
            k,
            m,
            distribution: &distribution,
            size,
            max: MAX_PART_SIZE,
            want_md5: opts.etag.is_none(),
            quorum,
        };
        let tmp = TmpPart {
            id: &tmp_id,
            part: &tmp_part,
        };
        let streamed = self.stream_to_tmp(&plan, body, &tmp).await?;
        let (total, mut etag, failed) = (streamed.size, streamed.etag, streamed.failed);
        if let Some(given) = &opts.etag {
            let given = given.lock().unwrap_or_else(|p| p.into_inner()).take();
            match given.filter(|e| is_part_etag(e)) {
                Some(e) => etag = e,
                None => {
                    self.remove_tmp(&tmp_id).await;
                    return Err(Error::Internal(
                        "the body of a part ended without the ETag its reader owes".into(),
                    ));
                }
            }
        }
        // A checksum name or value that could break the record's lines is
        // not one the gateway verified: it is not kept.
        let checksum = opts
            .checksum
            .as_ref()
            .and_then(|t| t.lock().unwrap_or_else(|p| p.into_inner()).first().cloned())
            .filter(|(n, v)| {
                let clean = |s: &str| {
                    !s.is_empty() && s.len() <= 128 && s.bytes().all(|c| c.is_ascii_graphic())
                };
                clean(n) && clean(v)
            });
        let part = UploadedPart {
            number,
            etag,
            size: total,
            actual_size: actual.unwrap_or(total),
            mod_time_nanos: now_nanos(),
            checksum,
        };
        let base = format!("{}/{upload_id}/{data_dir}", upload_root(bucket, key));
        let meta_bytes = part_meta_encode(&part);
        let mut set = JoinSet::new();
        for (d, drive) in self.drives.iter().enumerate() {
            if failed[d] {
                continue;
            }
            let (drive, src) = (drive.clone(), tmp_part.clone());
            let dst = format!("{base}/part.{number}");
            let meta_path = format!("{base}/part.{number}.meta");
            let meta_bytes = meta_bytes.clone();
            set.spawn(async move {
                drive
                    .rename(TMP_VOLUME, &src, MULTIPART_VOLUME, &dst)
                    .await?;
                drive
                    .write_all(MULTIPART_VOLUME, &meta_path, meta_bytes)
                    .await
            });
        }
        let mut ok = 0;
        while let Some(r) = set.join_next().await {
            if matches!(r, Ok(Ok(()))) {
                ok += 1;
            }
        }
        self.remove_tmp(&tmp_id).await;
        check_write_quorum(ok, quorum)?;
        Ok(part)
    }

    /// The parts uploaded so far, by number, agreed by a read quorum.
    pub async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<Vec<UploadedPart>> {
        let ov = self.upload_version(bucket, key, upload_id).await?;
        let k = ov.erasure_m as usize;
        let data_dir = Uuid::from_bytes(ov.data_dir).to_string();
        let base = format!("{}/{upload_id}/{data_dir}", upload_root(bucket, key));
        let mut votes: std::collections::BTreeMap<(i64, String, u64), (usize, UploadedPart)> =
            std::collections::BTreeMap::new();
        for drive in &self.drives {
            let Ok(names) = drive.list_dir(MULTIPART_VOLUME, &base, 20_000).await else {
                continue;
            };
            for name in names.iter().filter(|n| n.ends_with(".meta")) {
                if let Ok(b) = drive
                    .read_all(MULTIPART_VOLUME, &format!("{base}/{name}"), 4096)
                    .await
                    && let Some(p) = part_meta_decode(&b)
                {
                    let e = votes
                        .entry((p.number, p.etag.clone(), p.size))
                        .or_insert((0, p));
                    e.0 += 1;
                }
            }
        }
        // Per number, the newest agreed upload of the part.
        let mut best: std::collections::BTreeMap<i64, UploadedPart> = Default::default();
        for (_, (count, p)) in votes {
            if count >= k {
                match best.get(&p.number) {
                    Some(b) if b.mod_time_nanos >= p.mod_time_nanos => {}
                    _ => {
                        best.insert(p.number, p);
                    }
                }
            }
        }
        Ok(best.into_values().collect())
    }

    /// Completes an upload from the listed parts (ascending numbers, each
    /// with the ETag its upload returned).
    pub async fn complete_multipart(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[(i64, String)],
        versioned: bool,
        opts: &CompleteOptions,
    ) -> Result<ObjectInfo> {
        if parts.is_empty() {
            return Err(Error::InvalidPart("no parts given".into()));
        }
        if parts.len() as i64 > MAX_PARTS {
            return Err(Error::InvalidPart(format!("{} parts", parts.len())));
        }
        for w in parts.windows(2) {
            if w[1].0 <= w[0].0 {
                return Err(Error::InvalidPartOrder);
            }
        }
        let ov = self.upload_version(bucket, key, upload_id).await?;
        let uploaded = self.list_parts(bucket, key, upload_id).await?;
        let mut chosen = Vec::with_capacity(parts.len());
        for (number, etag) in parts {
            let etag = etag.trim_matches('"').to_ascii_lowercase();
            let p = uploaded
                .iter()
                .find(|p| p.number == *number && p.etag == etag)
                .ok_or_else(|| Error::InvalidPart(format!("part {number} with ETag {etag}")))?;
            chosen.push(p.clone());
        }
        // Sizes once every part is known to exist: the size the client
        // uploaded (an encrypted part is stored larger than its plaintext).
        for p in &chosen[..chosen.len() - 1] {
            if p.actual_size < MIN_PART_SIZE {
                return Err(Error::EntityTooSmall {
                    part: p.number,
                    size: p.actual_size,
                });
            }
        }
        let mut md5s = Vec::with_capacity(16 * chosen.len());
        for p in &chosen {
            let bin = hex::decode(&p.etag).map_err(|e| Error::Internal(e.to_string()))?;
            md5s.extend_from_slice(&bin);
        }
        let etag = format!("{}-{}", hex::encode(md5x::digest(&md5s)), chosen.len());
        let total: u64 = chosen.iter().map(|p| p.size).sum();
        let actual_total: u64 = chosen.iter().map(|p| p.actual_size).sum();
        let mut version = ov.clone();
        version.version_id = if versioned {
            *Uuid::new_v4().as_bytes()
        } else {
            [0; 16]
        };
        version.mod_time = now_nanos();
        version.size = total as i64;
        version.part_numbers.clear();
        version.part_sizes.clear();
        version.part_actual_sizes = Some(Vec::new());
        version.part_etags = None;
        for p in &chosen {
            version.push_part(p.number, p.size as i64, p.actual_size as i64, None);
        }
        if let Some(sys) = version.meta_sys.as_mut() {
            sys.remove(META_UPLOAD_KEY);
        }
        version.set_sys(
            META_COMPLETED_UPLOAD,
            completed_upload_record(upload_id, parts),
        );
        version.set_sys(
            "X-Minio-Internal-actual-size",
            actual_total.to_string().into_bytes(),
        );
        version.set_user(crate::xlmeta::META_ETAG, etag.clone());
        // The parts' checksums, when every part has one of the same kind,
        // for GetObjectAttributes and GET of a part in checksum mode.
        if let Some((name, _)) = &chosen[0].checksum
            && chosen
                .iter()
                .all(|p| p.checksum.as_ref().is_some_and(|(n, _)| n == name))
        {
            let mut record = name.clone();
            for p in &chosen {
                if let Some((_, v)) = &p.checksum {
                    record.push('\n');
                    record.push_str(v);
                }
            }
            version.set_sys(META_PART_CHECKSUMS, record.into_bytes());
        }
        if let Some(f) = &opts.checksum {
            for (k, v) in (f.0)(&chosen).map_err(Error::Rejected)? {
                version.set_user(k, v);
            }
        }
        let info = object_info(bucket, key, &Version::object(version.clone(), 0), true);

        // Drop what the object will not use (parts not listed, part metas),
        // then commit like a PUT: data dir into place, version into xl.meta.
        let root = format!("{}/{upload_id}", upload_root(bucket, key));
        let data_dir = Uuid::from_bytes(ov.data_dir).to_string();
        // The data directory, moved into place by the commit.
        let src = format!("{root}/{data_dir}");
        let keep: Vec<String> = chosen
            .iter()
            .map(|p| format!("part.{}", p.number))
            .collect();
        let mut present = vec![true; self.drives.len()];
        for (d, drive) in self.drives.iter().enumerate() {
            match drive.list_dir(MULTIPART_VOLUME, &src, 40_000).await {
                Ok(names) => {
                    for name in names {
                        if !keep.contains(&name) {
                            let _ = drive
                                .delete(MULTIPART_VOLUME, &format!("{src}/{name}"), false)
                                .await;
                        }
                    }
                }
                Err(_) => present[d] = false,
            }
        }
        let failed: Vec<bool> = present.iter().map(|p| !p).collect();
        let quorum = ErasureSet::write_quorum(ov.erasure_m as usize, ov.erasure_n as usize);
        let data = NewData::Moved {
            volume: MULTIPART_VOLUME,
            path: &src,
            failed: &failed,
        };
        self.commit(bucket, &object_dir(key), version, data, quorum)
            .await?;
        self.abort_multipart(bucket, key, upload_id).await.ok();
        Ok(info)
    }

    /// Removes an upload and its parts.
    pub async fn abort_multipart(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        check_upload_id(upload_id)?;
        let root = upload_root(bucket, key);
        let path = format!("{root}/{upload_id}");
        let mut found = 0;
        for drive in &self.drives {
            if drive.stat_file(MULTIPART_VOLUME, &path).await.is_ok() {
                found += 1;
            }
            match drive.delete(MULTIPART_VOLUME, &path, true).await {
                Ok(()) | Err(DriveError::FileNotFound) => {}
                Err(e) => tracing::warn!(drive = %drive.label(), "abort upload: {e}"),
            }
        }
        if found == 0 {
            return Err(Error::NoSuchUpload(upload_id.into()));
        }
        Ok(())
    }

    /// Uploads in progress in `bucket` whose key starts with `prefix`,
    /// sorted by key then initiation.
    pub async fn list_uploads(&self, bucket: &str, prefix: &str) -> Result<Vec<UploadInfo>> {
        let mut out: std::collections::BTreeMap<(String, i64, String), usize> = Default::default();
        for drive in &self.drives {
            let Ok(roots) = drive.list_dir(MULTIPART_VOLUME, "", 100_000).await else {
                continue;
            };
            for r in roots.iter().filter_map(|r| r.strip_suffix('/')) {
                let Ok(ids) = drive.list_dir(MULTIPART_VOLUME, r, 10_000).await else {
                    continue;
                };
                for id in ids.iter().filter_map(|i| i.strip_suffix('/')) {
                    let Ok(b) = drive
                        .read_all(
                            MULTIPART_VOLUME,
                            &format!("{r}/{id}/{XL_META}"),
                            MAX_XL_META,
                        )
                        .await
                    else {
                        continue;
                    };
                    let Ok(meta) = XlMeta::decode(&b) else {
                        continue;
                    };
                    let Some(v) = meta.latest().and_then(|e| e.version().as_object().cloned())
                    else {
                        continue;
                    };
                    let Some(k) = v
                        .sys(META_UPLOAD_KEY)
                        .and_then(|k| std::str::from_utf8(k).ok())
                        .map(str::to_owned)
                    else {
                        continue;
                    };
                    if upload_root(bucket, &k) != r || !k.starts_with(prefix) {
                        continue;
                    }
                    *out.entry((k, v.mod_time, id.to_owned())).or_default() += 1;
                }
            }
        }
        let quorum = self.drives.len() - self.default_parity();
        Ok(out
            .into_iter()
            .filter(|(_, c)| *c >= quorum)
            .map(|((key, t, id), _)| UploadInfo {
                key,
                upload_id: id,
                initiated_nanos: t,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_meta_round_trip_and_rejects_garbage() {
        let p = UploadedPart {
            number: 7,
            etag: "0123456789abcdef0123456789abcdef".into(),
            size: 5 << 20,
            actual_size: (5 << 20) - 100,
            mod_time_nanos: 42,
            checksum: None,
        };
        assert_eq!(part_meta_decode(&part_meta_encode(&p)), Some(p.clone()));
        let with = UploadedPart {
            checksum: Some(("x-amz-checksum-crc32c".into(), "yZRlqg==".into())),
            ..p
        };
        assert_eq!(part_meta_decode(&part_meta_encode(&with)), Some(with));
        // A record without the actual size (older) reads as size.
        let old =
            part_meta_decode(b"tessera-part v1\n2\n0123456789abcdef0123456789abcdef\n10\n5\n")
                .unwrap();
        assert_eq!((old.size, old.actual_size), (10, 10));
        assert_eq!(part_meta_decode(b"garbage"), None);
        assert_eq!(
            part_meta_decode(b"tessera-part v1\n1\nnothex\n1\n1\n"),
            None
        );
    }

    #[test]
    fn upload_ids_are_checked() {
        assert!(check_upload_id("abc-DEF_123").is_ok());
        for bad in ["", "../x", "a/b", &"x".repeat(200)] {
            assert!(check_upload_id(bad).is_err(), "{bad}");
        }
    }
}

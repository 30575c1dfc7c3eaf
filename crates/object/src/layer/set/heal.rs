//! Heal of one version: every record on every drive verified, and what
//! is missing or corrupt rebuilt from `k` intact shards, one erasure block
//! in memory at a time, then committed on the drives that need it.

use bitrot::HASH_LEN;
use drive::format::TMP_VOLUME;
use drive::{AlignedBuf, DriveError};
use uuid::Uuid;

use super::super::join::join_all;
use super::block::{PartSource, inline_slice};
use super::get::located;
use super::*;
use crate::layer::names::object_dir;
use crate::xlmeta::{VersionKind, XlMeta};

/// What a heal writes besides metadata.
struct HealData<'a> {
    /// The object version healed.
    version: &'a ObjectVersion<'static>,
    /// The temp directory holding its rebuilt shard files.
    tmp_id: &'a str,
    /// Per drive, its rebuilt inline records (an inline object).
    inline_records: &'a [Option<Vec<u8>>],
}

impl ErasureSet {
    /// Heals one version of an object: every drive whose metadata disagrees
    /// or whose shards are missing or corrupt gets them rewritten from the
    /// intact ones. Copies of a version asked for by id (or the null
    /// version) that no quorum agrees on while every drive answers are
    /// removed (what a failed write or a delete that missed drives left).
    /// With `dry_run`, nothing is written or removed: the result tells
    /// what each drive holds (its `after` is its `before`). The caller
    /// holds the object's lock.
    ///
    /// Two passes, one erasure block in memory at a time: the first reads
    /// and verifies every shard record on every drive; the second, only if
    /// some drive needs shards, rebuilds them block by block from `k`
    /// intact shards and streams them to the temp area of each drive that
    /// needs them, which then gets the data directory and `xl.meta` like a
    /// PUT commits them.
    pub async fn heal(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
        dry_run: bool,
    ) -> Result<HealResult> {
        let dir = object_dir(key);
        let n = self.drives.len();
        let (metas, mut before) = self.read_metas_states(bucket, &dir).await;
        let defaults = (n - self.default_parity, self.default_parity);
        // The drives holding copies of the version asked for: fewer than
        // its read quorum while every drive answers are what a write that
        // failed, or a delete that missed drives, left behind.
        let asked = version.map(|v| v.bytes());
        let holders = asked.map_or_else(Vec::new, |v| super::quorum::holders_of(&metas.metas, &v));
        // Fewer holders than the version's read quorum, whatever their
        // copies say: its data cannot be read back, and the copies are
        // leftovers. With as many holders, copies that disagree (an edit
        // cut short) are kept for a heal that can tell them apart.
        let dangling = asked.zip(holders.first()).is_some_and(|(vid, &d)| {
            holders.len() < super::quorum::version_quorum(&metas.metas, d, &vid, n)
        });
        let kept = (dangling && metas.errors == 0).then(|| metas.metas.clone());
        let r = match self.resolve(bucket, key, metas, version) {
            Ok(r) => r,
            Err(e) if e.is_not_found() => {
                let (Some(kept), Some(vid)) = (kept, asked) else {
                    return Err(e);
                };
                // Only the holders have the version; what they hold goes.
                for (d, st) in before.iter_mut().enumerate() {
                    if !holders.contains(&d) && *st == DriveHealState::Ok {
                        *st = DriveHealState::Missing;
                    }
                }
                let mut after = before.clone();
                if dry_run {
                    return Ok(HealResult {
                        before,
                        after,
                        data_blocks: defaults.0,
                        parity_blocks: defaults.1,
                        ..HealResult::default()
                    });
                }
                let removed = self
                    .remove_copies(bucket, &dir, &vid, &kept, &holders)
                    .await;
                tracing::info!(%bucket, %key, drives = ?removed, "removed copies of a version no quorum agrees on");
                for &d in &removed {
                    after[d] = DriveHealState::Missing;
                }
                let failed = holders
                    .into_iter()
                    .filter(|d| !removed.contains(d))
                    .collect();
                return Ok(HealResult {
                    healed_drives: removed,
                    failed_drives: failed,
                    bytes: 0,
                    before,
                    after,
                    data_blocks: defaults.0,
                    parity_blocks: defaults.1,
                });
            }
            Err(e) => return Err(e),
        };
        let mut need: Vec<bool> = r.agree.iter().map(Option::is_none).collect();
        // A copy that decodes but does not agree lacks the version (or has
        // an older edit of it).
        for (st, needed) in before.iter_mut().zip(&need) {
            if *needed && *st == DriveHealState::Ok {
                *st = DriveHealState::Missing;
            }
        }
        let ov = match &r.version.kind {
            VersionKind::Object(o) => Some(o.clone()),
            _ => None,
        };
        let Some(ov) = ov else {
            // A delete marker: only metadata to copy.
            if dry_run || !need.iter().any(|x| *x) {
                return Ok(unwritten(before, defaults));
            }
            let h = self.heal_write(bucket, &dir, &r, &need, None).await?;
            return Ok(with_states(h, before, defaults));
        };
        let (k, m) = (
            usize::try_from(ov.erasure_m).unwrap_or(0),
            usize::try_from(ov.erasure_n).unwrap_or(0),
        );
        let block_size = u64::try_from(ov.erasure_block_size).unwrap_or(0);
        if k == 0 || k + m != n || block_size == 0 || block_size > 64 << 20 {
            return Err(Error::Internal(format!(
                "{bucket}/{key}: erasure {k}+{m}, block {block_size}, does not fit a set of {n}"
            )));
        }
        let rs = self.coder(k, m)?;
        // Drive -> shard index (0-based) it should hold, from the layout.
        let shard_of = |d: usize| usize::from(ov.erasure_dist.get(d).copied().unwrap_or(0));
        let holder = r.holders();
        let inline = ov.inline_data();
        let vid = r.version.version_id();
        let data_dir = Uuid::from_bytes(ov.data_dir).to_string();
        let shard_size = block_size.div_ceil(k as u64) as usize;
        let frames = |psize: u64| -> Result<bitrot::ShardFrame> {
            let layout = bitrot::ShardLayout::new(shard_size, shard_data_len(psize, k))
                .map_err(|e| Error::Internal(format!("layout: {e}")))?;
            Ok(bitrot::ShardFrame::new(layout, self.bitrot))
        };
        let parts: Vec<(i64, u64)> = ov
            .part_numbers
            .iter()
            .zip(&ov.part_sizes)
            .map(|(&pn, &ps)| (pn, u64::try_from(ps).unwrap_or(0)))
            .collect();

        // Pass 1: verify every record of every agreeing drive, the drives
        // at once (each its records in turn): a remote drive's reads are
        // round trips, and one drive after another would add them up.
        // When drives lack the version (a replaced drive, a write that
        // missed them), the rebuild reads and verifies `k` shards of each
        // block anyway: the others' files are only checked for their size
        // now, not read twice, and their records on the scanner's next pass.
        let deep = !need.iter().any(|x| *x);
        let frames = &frames;
        let (parts_ref, data_dir_ref, dir_ref, vid_ref, r_ref) =
            (&parts, &data_dir, &dir, &vid, &r);
        // The damage a drive's copy has, `Ok` when it is intact.
        let verify = |d: usize| async move {
            for &(pn, psize) in parts_ref {
                let Ok(frame) = frames(psize) else {
                    return DriveHealState::Corrupt;
                };
                if inline {
                    let payload = r_ref.metas[d]
                        .as_ref()
                        .and_then(|mt| mt.inline_data(vid_ref));
                    match payload {
                        Some(p) if inline_intact(p, &frame) => {}
                        Some(_) => return DriveHealState::Corrupt,
                        None => return DriveHealState::Missing,
                    }
                    continue;
                }
                let path = format!("{dir_ref}/{data_dir_ref}/part.{pn}");
                for b in (0..psize.div_ceil(block_size)).filter(|_| deep) {
                    let blk_len = (psize - b * block_size).min(block_size) as usize;
                    let len = HASH_LEN + blk_len.div_ceil(k);
                    let off = frame.layout().record_offset(b).unwrap_or(0);
                    let Ok(buf) = AlignedBuf::with_capacity(len) else {
                        return DriveHealState::Unknown;
                    };
                    match self.drives[d]
                        .read_file_at(bucket, &path, off, len, buf)
                        .await
                    {
                        Ok((buf, got))
                            if got == len
                                && frame.open(b, &buf.capacity_slice()[..len]).is_ok() => {}
                        Ok(_) | Err(DriveError::OutOfRange { .. }) => {
                            return DriveHealState::Corrupt;
                        }
                        Err(e) => return DriveHealState::of_error(&e),
                    }
                }
                // A file of another size than the layout says is damage
                // too (a longer one, or, when records were not read, a
                // shorter one).
                match self.drives[d].stat_file(bucket, &path).await {
                    Ok(st) if st.size != frame.layout().file_size() => {
                        return DriveHealState::Corrupt;
                    }
                    Ok(_) => {}
                    // An empty part may have no file at all.
                    Err(e) if e.is_not_found() && psize > 0 => return DriveHealState::Missing,
                    // Read errors of the records said it already, and an
                    // unreadable size alone is no proof of damage.
                    Err(_) => {}
                }
            }
            DriveHealState::Ok
        };
        let checked: Vec<usize> = (0..n).filter(|&d| !need[d]).collect();
        let checks: Vec<
            std::pin::Pin<Box<dyn std::future::Future<Output = DriveHealState> + Send + '_>>,
        > = checked.iter().map(|&d| Box::pin(verify(d)) as _).collect();
        for (d, found) in checked.into_iter().zip(join_all(checks).await) {
            let found = found.unwrap_or(DriveHealState::Unknown);
            if found != DriveHealState::Ok {
                need[d] = true;
                before[d] = found;
            }
        }
        let blocks = (k, m);
        if dry_run || !need.iter().any(|x| *x) {
            return Ok(unwritten(before, blocks).sized(ov.size));
        }
        let targets: Vec<usize> = (0..n).filter(|&d| need[d] && shard_of(d) >= 1).collect();

        // Pass 2: rebuild the targets' shards, streamed to their temp areas.
        let mut bad = need.clone();
        let tmp_id = Uuid::new_v4().to_string();
        let mut inline_recs: Vec<Option<Vec<u8>>> = vec![None; n];
        let mut failed = vec![false; n];
        for &(pn, psize) in &parts {
            let frame = frames(psize)?;
            let path = format!("{dir}/{data_dir}/part.{pn}");
            let mut writers: Vec<Option<Box<dyn drive::ShardWriter>>> = Vec::with_capacity(n);
            #[allow(clippy::needless_range_loop)] // `failed[d]` is set inside
            for d in 0..n {
                let w = if !inline && targets.contains(&d) && !failed[d] {
                    let tpath = format!("{tmp_id}/{data_dir}/part.{pn}");
                    match self.drives[d]
                        .create_file(TMP_VOLUME, &tpath, Some(frame.layout().file_size()))
                        .await
                    {
                        Ok(w) => Some(w),
                        Err(e) => {
                            tracing::warn!(drive = %self.drives[d].label(), "heal: {e}");
                            failed[d] = true;
                            None
                        }
                    }
                } else {
                    None
                };
                writers.push(w);
            }
            let blocks = psize.div_ceil(block_size);
            for b in 0..blocks {
                let blk_len = (psize - b * block_size).min(block_size) as usize;
                let sl = blk_len.div_ceil(k);
                let src = PartSource {
                    rs: &rs,
                    bucket,
                    path: &path,
                    resolved: &r,
                    holder: &holder,
                    frame: &frame,
                    inline,
                };
                let mut shards = self
                    .read_block(&src, b, sl, &mut bad)
                    .await
                    .map_err(|e| located(e, bucket, key, pn))?;
                // read_block completed the data shards; compute parity.
                {
                    let (data, parity) = shards.split_at_mut(k);
                    for p in parity.iter_mut() {
                        p.clear();
                        p.resize(sl, 0);
                    }
                    if sl > 0 {
                        let d: Vec<&[u8]> = data.iter().map(|x| &x[..]).collect();
                        let mut p: Vec<&mut [u8]> = parity.iter_mut().map(|x| &mut x[..]).collect();
                        rs.encode(&d, &mut p)?;
                    }
                }
                for &d in &targets {
                    let s = shard_of(d) - 1;
                    let mut rec = Vec::with_capacity(HASH_LEN + sl);
                    if sl > 0 {
                        rec.extend_from_slice(&self.bitrot.sum(&shards[s]));
                        rec.extend_from_slice(&shards[s]);
                    }
                    if inline {
                        inline_recs[d]
                            .get_or_insert_with(Vec::new)
                            .extend_from_slice(&rec);
                    } else if let Some(w) = writers[d].as_mut() {
                        let r2 = async {
                            let mut buf = AlignedBuf::with_capacity(rec.len().max(1))?;
                            buf.extend_from_slice(&rec);
                            w.write(buf).await.map(|_| ())
                        }
                        .await;
                        if let Err(e) = r2 {
                            tracing::warn!(drive = %self.drives[d].label(), "heal write: {e}");
                            failed[d] = true;
                            writers[d] = None;
                        }
                    }
                }
            }
            for (d, w) in writers.into_iter().enumerate() {
                if let Some(w) = w
                    && let Err(e) = w.finish().await
                {
                    tracing::warn!(drive = %self.drives[d].label(), "heal finish: {e}");
                    failed[d] = true;
                }
            }
        }
        let mut ok_need = need.clone();
        for d in 0..n {
            if failed[d] {
                ok_need[d] = false;
            }
        }
        let res = self
            .heal_write(
                bucket,
                &dir,
                &r,
                &ok_need,
                Some(HealData {
                    version: &ov,
                    tmp_id: &tmp_id,
                    inline_records: &inline_recs,
                }),
            )
            .await;
        for &d in &targets {
            let _ = self.drives[d].delete(TMP_VOLUME, &tmp_id, true).await;
        }
        // Drives whose shards could not be written are not whole either.
        res.map(|mut h| {
            h.failed_drives
                .extend((0..n).filter(|&d| need[d] && failed[d]));
            h.failed_drives.sort_unstable();
            with_states(h, before, blocks)
        })
    }

    /// Commits healed data (moved from the temp area, or inline records)
    /// and the agreed version into `xl.meta` on every drive in `need`.
    async fn heal_write(
        &self,
        bucket: &str,
        dir: &str,
        r: &Resolved,
        need: &[bool],
        data: Option<HealData<'_>>,
    ) -> Result<HealResult> {
        let vid = r.version.version_id();
        let path = format!("{dir}/{XL_META}");
        let (mut healed, mut failed) = (Vec::new(), Vec::new());
        // The drives that need the version are written at once (a replaced
        // node's drives are several round trips away each).
        let mut writes: Vec<
            std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + '_>>,
        > = Vec::new();
        let mut written = Vec::new();
        for (d, drive) in self.drives.iter().enumerate() {
            if !need[d] {
                continue;
            }
            let (vid, path, data) = (&vid, &path, &data);
            written.push(d);
            writes.push(Box::pin(async move {
                if drive.stat_volume(bucket).await.is_err() {
                    match drive.make_volume(bucket).await {
                        Ok(()) | Err(DriveError::VolumeExists) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                let mut meta = match drive.read_all(bucket, path, MAX_XL_META).await {
                    Ok(b) => XlMeta::decode(&b)
                        .map(XlMeta::into_owned)
                        .unwrap_or_else(|_| XlMeta::new()),
                    Err(_) => XlMeta::new(),
                };
                let _ = meta.remove_version(vid);
                meta.remove_inline_data(vid);
                let mut version = r.version.clone();
                if let Some(HealData {
                    version: ov,
                    tmp_id,
                    inline_records: inline_recs,
                }) = data
                {
                    let idx = i64::from(ov.erasure_dist.get(d).copied().unwrap_or(0));
                    if let Some(o) = version.as_object_mut() {
                        o.erasure_index = idx;
                    }
                    if ov.inline_data() {
                        let rec = inline_recs[d].clone().unwrap_or_default();
                        meta.set_inline_data(vid, rec);
                    } else {
                        let data_dir = Uuid::from_bytes(ov.data_dir).to_string();
                        let dst = format!("{dir}/{data_dir}");
                        let _ = drive.delete(bucket, &dst, true).await;
                        if !ov.part_numbers.is_empty() && ov.size > 0 {
                            drive
                                .rename(TMP_VOLUME, &format!("{tmp_id}/{data_dir}"), bucket, &dst)
                                .await?;
                        }
                    }
                }
                meta.add_version(version)?;
                drive.write_all(bucket, path, meta.encode()?).await?;
                Ok(())
            }));
        }
        for (d, res) in written.into_iter().zip(join_all(writes).await) {
            match res.unwrap_or_else(|| Err(Error::Internal("a heal write panicked".into()))) {
                Ok(()) => healed.push(d),
                Err(e) => {
                    tracing::warn!(drive = %self.drives[d].label(), "heal of {bucket}/{dir}: {e}");
                    failed.push(d);
                }
            }
        }
        let bytes = r
            .version
            .as_object()
            .map_or(0, |o| u64::try_from(o.size).unwrap_or(0));
        Ok(HealResult {
            healed_drives: healed,
            failed_drives: failed,
            bytes,
            ..HealResult::default()
        })
    }
}

/// The result of a heal that wrote nothing: every drive as it was found.
fn unwritten(before: Vec<DriveHealState>, (data, parity): (usize, usize)) -> HealResult {
    HealResult {
        after: before.clone(),
        before,
        data_blocks: data,
        parity_blocks: parity,
        ..HealResult::default()
    }
}

/// `h` with the drives' states: `before`, and after it the healed drives
/// intact, the others as they were.
fn with_states(
    mut h: HealResult,
    before: Vec<DriveHealState>,
    (data, parity): (usize, usize),
) -> HealResult {
    h.after = before.clone();
    for &d in &h.healed_drives {
        if let Some(st) = h.after.get_mut(d) {
            *st = DriveHealState::Ok;
        }
    }
    h.before = before;
    h.data_blocks = data;
    h.parity_blocks = parity;
    h
}

impl HealResult {
    /// This result with the size of the version it is about.
    fn sized(mut self, size: i64) -> HealResult {
        self.bytes = u64::try_from(size).unwrap_or(0);
        self
    }
}

/// Whether every record of an inline payload is intact.
fn inline_intact(payload: &[u8], frame: &bitrot::ShardFrame) -> bool {
    (0..frame.layout().blocks())
        .all(|b| inline_slice(payload, b, frame).is_some_and(|rec| frame.open(b, rec).is_ok()))
        && payload.len() as u64 == frame.layout().file_size()
}

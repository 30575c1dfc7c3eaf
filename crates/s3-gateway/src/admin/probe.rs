//! Probing drives for the admin info: each drive's state, id, place in the
//! format layout and space, read from the drive itself at the time of the
//! call.

use std::sync::Arc;
use std::time::Duration;

use drive::{Drive, DriveError, FormatErasureV3};

use super::info::{DriveInfo, DrivePlace, DriveState};

/// How long a drive may take to answer the probe before it is reported
/// offline (the health endpoints give their probe the same time).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Probes one drive at `place`: its file system's space (`statvfs`), its
/// `format.json` (the id in `xl.this`, the set and position it names for
/// the drive), and its state from both. A drive the deadline layer has
/// taken offline is not asked; one that does not answer within `timeout`
/// is offline. Where the format places the drive wins over `place`, whose
/// pool and indexes stay for a drive whose format was not read.
pub async fn probe_drive(drive: &dyn Drive, place: DrivePlace, timeout: Duration) -> DriveInfo {
    let mut info = DriveInfo::offline(place);
    if drive.health().state == drive::DriveState::Offline {
        return info;
    }
    let answered = tokio::time::timeout(timeout, async {
        (drive.disk_info().await, drive::load_format(drive).await)
    })
    .await;
    let Ok((space, format)) = answered else {
        return info;
    };
    // The layer records a drive's id once it has checked or written its
    // format, so a drive with an id had a format when it was opened.
    let had_format = drive.id().is_some();
    info.state = match &format {
        Ok(f) => placed(&mut info, f),
        Err(e) => state_of(e, had_format),
    };
    match space {
        Ok(s) => {
            info.total_bytes = Some(s.total);
            info.used_bytes = Some(s.used);
            info.available_bytes = Some(s.free);
            if s.files_total > 0 {
                info.used_inodes = Some(s.files_total.saturating_sub(s.files_free));
                info.free_inodes = Some(s.files_free);
            }
        }
        Err(e) if info.state == DriveState::Ok => info.state = state_of(&e, had_format),
        Err(_) => {}
    }
    info
}

/// Probes every drive of `drives` at once; the answers come in the same
/// order.
pub async fn probe_drives(
    drives: Vec<(Arc<dyn Drive>, DrivePlace)>,
    timeout: Duration,
) -> Vec<DriveInfo> {
    let mut out: Vec<DriveInfo> = drives
        .iter()
        .map(|(_, place)| DriveInfo::offline(place.clone()))
        .collect();
    let mut tasks = tokio::task::JoinSet::new();
    for (index, (drive, place)) in drives.into_iter().enumerate() {
        tasks.spawn(async move { (index, probe_drive(drive.as_ref(), place, timeout).await) });
    }
    // A probe task that panicked leaves its drive reported offline.
    while let Some(done) = tasks.join_next().await {
        if let Ok((index, info)) = done
            && let Some(slot) = out.get_mut(index)
        {
            *slot = info;
        }
    }
    out
}

/// Fills in what a readable format says of the drive; its state.
fn placed(info: &mut DriveInfo, format: &FormatErasureV3) -> DriveState {
    info.uuid = Some(format.xl.this.clone());
    match format.position() {
        Some(p) => {
            info.set_index = p.set;
            info.disk_index = p.disk;
            DriveState::Ok
        }
        // A format whose own drive id is not in its layout.
        None => DriveState::Corrupt,
    }
}

/// The state a drive's error puts it in. A drive without `format.json` is
/// `unformatted` only if it never had one: Tessera formats every drive
/// when it opens the layer and does not format them again while it runs,
/// so one that lost its format (wiped, or its directory removed) is out of
/// service until the server restarts, and is reported `offline`.
fn state_of(e: &DriveError, had_format: bool) -> DriveState {
    match e {
        DriveError::Unformatted if had_format => DriveState::Offline,
        DriveError::Unformatted => DriveState::Unformatted,
        DriveError::FileNotFound | DriveError::VolumeNotFound => DriveState::Offline,
        DriveError::Format(_)
        | DriveError::IsDirectory
        | DriveError::NotDirectory
        | DriveError::TooLarge { .. } => DriveState::Corrupt,
        DriveError::AccessDenied => DriveState::PermissionDenied,
        DriveError::Timeout(_)
        | DriveError::Offline(_)
        | DriveError::BackendStopped
        | DriveError::BackendUnavailable(_) => DriveState::Offline,
        e if e.is_fault() => DriveState::Faulty,
        _ => DriveState::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_madmin_states() {
        let io = || DriveError::Io {
            op: "read",
            source: std::io::Error::other("input/output error"),
        };
        let cases = [
            (DriveError::Unformatted, false, DriveState::Unformatted),
            (DriveError::Unformatted, true, DriveState::Offline),
            (DriveError::VolumeNotFound, true, DriveState::Offline),
            (DriveError::IsDirectory, true, DriveState::Corrupt),
            (DriveError::AccessDenied, true, DriveState::PermissionDenied),
            (
                DriveError::Timeout(Duration::from_secs(1)),
                true,
                DriveState::Offline,
            ),
            (
                DriveError::Offline("probe".into()),
                true,
                DriveState::Offline,
            ),
            (io(), true, DriveState::Faulty),
            (DriveError::DriveFull, true, DriveState::Unknown),
        ];
        for (e, had_format, want) in cases {
            assert_eq!(state_of(&e, had_format), want, "{e}");
        }
    }

    fn place() -> DrivePlace {
        DrivePlace {
            endpoint: "/d".into(),
            path: "/d".into(),
            pool: 0,
            set: 0,
            disk: 0,
        }
    }

    #[tokio::test]
    async fn a_local_drive_reports_its_format_and_space() {
        let dir = tempfile::tempdir().unwrap();
        let dirs: Vec<_> = (0..4).map(|i| dir.path().join(format!("d{i}"))).collect();
        let layer = object::layer::ObjectLayer::open_dirs(&dirs, Default::default())
            .await
            .unwrap();
        let drives: Vec<_> = layer
            .drives()
            .enumerate()
            .map(|(i, d)| {
                let mut p = place();
                p.disk = i;
                (d.clone(), p)
            })
            .collect();
        let infos = probe_drives(drives.clone(), PROBE_TIMEOUT).await;
        for (i, info) in infos.iter().enumerate() {
            assert_eq!(info.state, DriveState::Ok);
            assert_eq!(info.disk_index, i);
            assert!(info.total_bytes.unwrap() > 0);
            let format = drive::load_format(drives[i].0.as_ref()).await.unwrap();
            assert_eq!(info.uuid.as_deref(), Some(format.xl.this.as_str()));
        }
        // The drive's directory removed under the running layer.
        std::fs::remove_dir_all(&dirs[1]).unwrap();
        let gone = probe_drive(drives[1].0.as_ref(), drives[1].1.clone(), PROBE_TIMEOUT).await;
        assert_eq!(gone.state, DriveState::Offline);
        assert_eq!(gone.uuid, None);
        assert_eq!(gone.disk_index, 1);
    }
}

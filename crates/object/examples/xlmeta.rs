//! Inspect xl.meta files.
//!
//! ```text
//! cargo run -p object --example xlmeta -- dump DRIVE/bucket/object/xl.meta
//! cargo run -p object --example xlmeta -- inline OUT VERSION-ID D1/xl.meta D2/xl.meta ...
//! ```
//!
//! `dump` prints the journal and every version. `inline` reassembles a small
//! (inline) object from the xl.meta files of all drives of its erasure set,
//! given in set order: it concatenates the data shards (after each shard's
//! 32-byte bitrot hash) and writes the object's bytes to OUT. VERSION-ID is
//! a UUID or `null`. This is how `testdata/minio/extracted/*.metadata.bin`
//! were produced from MinIO's `.metadata.bin/xl.meta` files.

use std::process::ExitCode;

use object::xlmeta::XlMeta;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("dump") if args.len() == 2 => dump(&args[1]),
        Some("inline") if args.len() >= 4 => inline(&args[1], &args[2], &args[3..]),
        _ => Err("usage: xlmeta dump FILE | xlmeta inline OUT VERSION-ID FILE...".to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn read(path: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{path}: {e}"))
}

fn dump(path: &str) -> Result<(), String> {
    let buf = read(path)?;
    let m = XlMeta::decode(&buf).map_err(|e| format!("{path}: {e}"))?;
    println!(
        "format {}.{}  meta version {}  {} version(s)",
        m.format().major,
        m.format().minor,
        m.meta_version(),
        m.len()
    );
    for e in m.versions() {
        let h = e.header();
        println!(
            "- {:?} id={} mtime={} sig={} flags={:#04x} EcM={} EcN={}",
            h.version_type,
            object::xlmeta::inline_key(&h.version_id),
            h.mod_time,
            h.signature
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>(),
            h.flags.0,
            h.ec_m,
            h.ec_n,
        );
        println!("  {:?}", e.version());
    }
    for (k, v) in m.inline().iter() {
        println!("inline {k}: {} bytes", v.len());
    }
    Ok(())
}

fn inline(out: &str, version: &str, files: &[String]) -> Result<(), String> {
    let id: [u8; 16] = if version == "null" {
        [0; 16]
    } else {
        *uuid::Uuid::parse_str(version)
            .map_err(|e| format!("{version}: {e}"))?
            .as_bytes()
    };
    let bufs = files
        .iter()
        .map(|f| read(f))
        .collect::<Result<Vec<_>, _>>()?;
    let mut shards = Vec::new();
    let mut size = 0usize;
    for (f, buf) in files.iter().zip(&bufs) {
        let m = XlMeta::decode(buf).map_err(|e| format!("{f}: {e}"))?;
        let entry = m.find(&id).ok_or(format!("{f}: no version {version}"))?;
        let o = entry
            .version()
            .as_object()
            .ok_or(format!("{f}: not an object version"))?;
        let data_shards = usize::try_from(o.erasure_m).map_err(|_| "bad EcM")?;
        size = usize::try_from(o.size).map_err(|_| "bad size")?;
        if usize::try_from(o.erasure_index).is_ok_and(|i| (1..=data_shards).contains(&i)) {
            let shard = m.inline_data(&id).ok_or(format!("{f}: no inline data"))?;
            if shard.len() != 32 + size.div_ceil(data_shards) {
                return Err(format!("{f}: not a single-block inline shard"));
            }
            shards.push((o.erasure_index, shard[32..].to_vec()));
        }
    }
    shards.sort_by_key(|(i, _)| *i);
    let mut data: Vec<u8> = shards.into_iter().flat_map(|(_, s)| s).collect();
    if data.len() < size {
        return Err("not enough data shards".to_owned());
    }
    data.truncate(size);
    std::fs::write(out, &data).map_err(|e| format!("{out}: {e}"))
}

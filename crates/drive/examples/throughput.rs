//! Sequential shard-file throughput per backend.
//!
//! For each backend: write a file in 1 MiB aligned blocks through
//! `create_file` and `finish` (which fdatasyncs), drop the file's pages from
//! the page cache (`posix_fadvise(DONTNEED)`, so the read comes from the
//! disk), read it back through `open_reader` in 1 MiB blocks; repeat, and
//! print the median MiB/s of each.
//!
//! ```text
//! cargo run --release -p drive --example throughput -- [DIR] [--mib N] [--rounds R] [--readahead CHUNKS]
//! ```
//!
//! DIR (default: the current directory) should be on the disk to measure,
//! not on tmpfs; a temporary directory is created inside it and removed.
//! `--readahead` sets the io_uring reader's read-ahead depth in 1 MiB
//! chunks (default 2, as the drive's default; 0 disables it).

use std::path::PathBuf;
use std::time::Instant;

use drive::{Backend, BufferPool, Drive, LocalDrive, LocalDriveConfig};

const BLOCK: usize = 1 << 20;

struct Args {
    dir: PathBuf,
    mib: usize,
    rounds: usize,
    readahead: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        dir: PathBuf::from("."),
        mib: 256,
        rounds: 5,
        readahead: 2,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--mib" => {
                args.mib = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--mib needs a number")?
            }
            "--rounds" => {
                args.rounds = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--rounds needs a number")?
            }
            "--readahead" => {
                args.readahead = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--readahead needs a number")?
            }
            "-h" | "--help" => {
                return Err(
                    "usage: throughput [DIR] [--mib N] [--rounds R] [--readahead CHUNKS]".into(),
                );
            }
            other => args.dir = PathBuf::from(other),
        }
    }
    if args.mib == 0 || args.rounds == 0 {
        return Err("--mib and --rounds must be at least 1".into());
    }
    Ok(args)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn evict(path: &std::path::Path) -> std::io::Result<()> {
    let file = std::fs::File::open(path)?;
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)?;
    Ok(())
}

async fn run(backend: Backend, args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let base = tempfile::tempdir_in(&args.dir)?;
    let drive = LocalDrive::open(
        base.path().join("drive"),
        LocalDriveConfig::with_backend(backend),
    )
    .await?;
    drive.make_volume("bench").await?;
    let pool = BufferPool::new(BLOCK, 4, 4)?;
    let total = (args.mib * BLOCK) as u64;
    let (mut writes, mut reads) = (Vec::new(), Vec::new());
    let mut mode = None;
    for round in 0..args.rounds {
        let path = format!("obj/dd/part.{round}");
        let mut block = pool.get().await?;
        block.capacity_mut().fill(round as u8);
        let start = Instant::now();
        let mut writer = drive.create_file("bench", &path, Some(total)).await?;
        mode = Some(writer.io_mode()?);
        for _ in 0..args.mib {
            block.set_len(BLOCK);
            block = writer.write(block).await?;
        }
        writer.finish().await?;
        writes.push(args.mib as f64 / start.elapsed().as_secs_f64());

        evict(&drive.root().join("bench").join(&path))?;
        let start = Instant::now();
        let mut reader = drive.open_reader("bench", &path, 0, None).await?;
        let mut read = 0u64;
        loop {
            block = reader.read(block).await?;
            if block.is_empty() {
                break;
            }
            read += block.len() as u64;
        }
        if read != total {
            return Err(format!("read {read} bytes, expected {total}").into());
        }
        reads.push(args.mib as f64 / start.elapsed().as_secs_f64());
        drive.delete("bench", &path, false).await?;
    }
    let fs = drive
        .disk_info()
        .await?
        .fs_type
        .unwrap_or_else(|| "unknown".into());
    println!(
        "{:<12} fs={fs:<6} io={:<9} write+fdatasync median {:>8.0} MiB/s   read median {:>8.0} MiB/s   ({} x {} MiB)",
        drive.backend().to_string(),
        format!("{:?}", mode.unwrap_or(drive::IoMode::Buffered)),
        median(&mut writes),
        median(&mut reads),
        args.rounds,
        args.mib,
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        run(Backend::IoUring, &args).await?;
        run(Backend::ThreadPool, &args).await?;
        Ok(())
    })
}

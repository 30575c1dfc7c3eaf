//! Entry points shared by the cargo-fuzz targets in `fuzz/` and the stable
//! corpus regression tests.

use std::io::{Cursor, Read, Write};

use crate::{Bitrot, FrameReader, FrameWriter, ShardFrame, ShardLayout};

/// Shard frame reading. The first two bytes pick the shard size (1 to
/// 4096), the rest is a shard file as found on a drive: reading it never
/// panics. The rest framed by [`FrameWriter`] reads back unchanged, and the
/// same file with one byte flipped fails to read.
pub fn frame_read(data: &[u8]) {
    let Some((size, file)) = data.split_first_chunk::<2>() else {
        return;
    };
    let shard_size = usize::from(u16::from_le_bytes(*size) % 4096) + 1;
    if let Ok(layout) = ShardLayout::from_file_size(shard_size, file.len() as u64) {
        let mut reader = FrameReader::new(Cursor::new(file), ShardFrame::minio(layout));
        while let Ok(Some(_)) = reader.next_block() {}
    }

    let mut writer = FrameWriter::new(Vec::new(), Bitrot::minio(), shard_size);
    writer.write_all(file).expect("writing to memory");
    let mut framed = writer.finish().expect("writing to memory");
    let layout = ShardLayout::new(shard_size, file.len() as u64).expect("a valid layout");
    assert_eq!(layout.file_size(), framed.len() as u64);
    let mut back = Vec::new();
    FrameReader::new(Cursor::new(&framed), ShardFrame::minio(layout))
        .read_to_end(&mut back)
        .expect("a freshly framed file reads back");
    assert_eq!(back, file);
    if !framed.is_empty() {
        let at = usize::from(size[0]) * 257 % framed.len();
        framed[at] ^= 0x01;
        let mut sink = Vec::new();
        let read = FrameReader::new(Cursor::new(&framed), ShardFrame::minio(layout))
            .read_to_end(&mut sink);
        assert!(read.is_err(), "a flipped byte at {at} went unnoticed");
    }
}

#[cfg(test)]
#[path = "../../../fuzz/corpus.rs"]
mod corpus_files;

#[cfg(test)]
mod tests {
    use super::corpus_files::corpus;

    #[test]
    fn corpus_bitrot_frame() {
        for input in corpus("bitrot_frame") {
            super::frame_read(&input);
        }
    }
}

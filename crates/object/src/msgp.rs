//! A small MessagePack reader and writer that makes the same wire choices as
//! the Go `tinylib/msgp` code generator MinIO uses for its metadata.
//!
//! Byte-identical output matters here: MinIO hashes some of these encodings
//! (version signatures, the metadata CRC), so "an equivalent encoding" is not
//! good enough. The rules msgp follows, and which [`Writer`] reproduces:
//!
//! * signed integers (`int`, `int64`) use the smallest of positive fixint,
//!   negative fixint, `int8`/`int16`/`int32`/`int64`; a positive value above
//!   127 is written as a *signed* type (200 becomes `d1 00 c8`), never `uint8`;
//! * unsigned integers (`uint8`, `uint64`) use fixint or `uint8`..`uint64`;
//! * strings use fixstr, `str8`, `str16`, `str32`; binary uses `bin8`..`bin32`;
//! * maps and arrays use the fix form up to 15 entries, then the 16/32-bit form;
//! * `time.Time` is the msgp extension type 5: `c7 0c 05`, big-endian `i64`
//!   seconds, big-endian `u32` nanoseconds.
//!
//! The [`Reader`] never panics and never trusts a length: every length is
//! checked against the bytes that remain before anything is sliced or
//! allocated. It accepts any integer encoding whose value fits the requested
//! type (as msgp does), so files written by other encoders still decode.

use rmp::Marker;

/// Why a MessagePack value could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended inside a value (or a length points past its end).
    #[error("truncated input")]
    Truncated,
    /// A value of another type was found.
    #[error("expected {expected}, found marker 0x{marker:02x}")]
    TypeMismatch {
        /// What the decoder wanted.
        expected: &'static str,
        /// The marker byte that was found instead.
        marker: u8,
    },
    /// An integer did not fit the requested type.
    #[error("integer out of range")]
    OutOfRange,
    /// A fixed-size binary field had the wrong length.
    #[error("expected {expected} bytes, found {found}")]
    WrongLength {
        /// The required length.
        expected: usize,
        /// The length found.
        found: usize,
    },
    /// An extension value had an unexpected type or size.
    #[error("unexpected extension type {ext_type} of {len} bytes")]
    BadExtension {
        /// The extension type byte.
        ext_type: i8,
        /// The payload length.
        len: usize,
    },
}

/// A bounds-checked cursor over a MessagePack buffer.
///
/// Every `read_*` method either consumes exactly one value and returns it, or
/// returns an error; after an error the position is unspecified.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// A decoded integer of any MessagePack integer encoding.
#[derive(Debug, Clone, Copy)]
enum Int {
    Signed(i64),
    Unsigned(u64),
}

impl<'a> Reader<'a> {
    /// A reader positioned at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The unconsumed tail of the buffer.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// The whole underlying buffer.
    pub fn buffer(&self) -> &'a [u8] {
        self.buf
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(DecodeError::Truncated);
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn byte(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn be<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn len_u8(&mut self) -> Result<usize, DecodeError> {
        Ok(usize::from(self.byte()?))
    }

    fn len_u16(&mut self) -> Result<usize, DecodeError> {
        Ok(usize::from(u16::from_be_bytes(self.be()?)))
    }

    fn len_u32(&mut self) -> Result<usize, DecodeError> {
        usize::try_from(u32::from_be_bytes(self.be()?)).map_err(|_| DecodeError::OutOfRange)
    }

    /// The next marker byte, without consuming it.
    pub fn peek(&self) -> Result<u8, DecodeError> {
        self.buf
            .get(self.pos)
            .copied()
            .ok_or(DecodeError::Truncated)
    }

    /// Whether the next value is `nil`.
    pub fn is_nil(&self) -> bool {
        self.buf.get(self.pos) == Some(&Marker::Null.to_u8())
    }

    /// Consume a `nil`.
    pub fn read_nil(&mut self) -> Result<(), DecodeError> {
        let m = self.byte()?;
        if m == Marker::Null.to_u8() {
            Ok(())
        } else {
            Err(mismatch("nil", m))
        }
    }

    /// Consume a boolean.
    pub fn read_bool(&mut self) -> Result<bool, DecodeError> {
        let m = self.byte()?;
        match Marker::from_u8(m) {
            Marker::True => Ok(true),
            Marker::False => Ok(false),
            _ => Err(mismatch("bool", m)),
        }
    }

    fn read_any_int(&mut self) -> Result<Int, DecodeError> {
        let m = self.byte()?;
        Ok(match Marker::from_u8(m) {
            Marker::FixPos(v) => Int::Unsigned(u64::from(v)),
            Marker::FixNeg(v) => Int::Signed(i64::from(v)),
            Marker::U8 => Int::Unsigned(u64::from(self.byte()?)),
            Marker::U16 => Int::Unsigned(u64::from(u16::from_be_bytes(self.be()?))),
            Marker::U32 => Int::Unsigned(u64::from(u32::from_be_bytes(self.be()?))),
            Marker::U64 => Int::Unsigned(u64::from_be_bytes(self.be()?)),
            Marker::I8 => Int::Signed(i64::from(i8::from_be_bytes(self.be()?))),
            Marker::I16 => Int::Signed(i64::from(i16::from_be_bytes(self.be()?))),
            Marker::I32 => Int::Signed(i64::from(i32::from_be_bytes(self.be()?))),
            Marker::I64 => Int::Signed(i64::from_be_bytes(self.be()?)),
            _ => return Err(mismatch("integer", m)),
        })
    }

    /// Consume any integer encoding whose value fits an `i64`.
    pub fn read_i64(&mut self) -> Result<i64, DecodeError> {
        match self.read_any_int()? {
            Int::Signed(v) => Ok(v),
            Int::Unsigned(v) => i64::try_from(v).map_err(|_| DecodeError::OutOfRange),
        }
    }

    /// Consume any integer encoding whose value fits a `u64`.
    pub fn read_u64(&mut self) -> Result<u64, DecodeError> {
        match self.read_any_int()? {
            Int::Signed(v) => u64::try_from(v).map_err(|_| DecodeError::OutOfRange),
            Int::Unsigned(v) => Ok(v),
        }
    }

    /// Consume an integer that fits a `u8`.
    pub fn read_u8(&mut self) -> Result<u8, DecodeError> {
        u8::try_from(self.read_u64()?).map_err(|_| DecodeError::OutOfRange)
    }

    /// Consume an integer that fits a `u32`.
    pub fn read_u32(&mut self) -> Result<u32, DecodeError> {
        u32::try_from(self.read_u64()?).map_err(|_| DecodeError::OutOfRange)
    }

    /// Consume a string and return its raw bytes (msgp does not require UTF-8).
    pub fn read_str(&mut self) -> Result<&'a [u8], DecodeError> {
        let m = self.byte()?;
        let n = match Marker::from_u8(m) {
            Marker::FixStr(n) => usize::from(n),
            Marker::Str8 => self.len_u8()?,
            Marker::Str16 => self.len_u16()?,
            Marker::Str32 => self.len_u32()?,
            _ => return Err(mismatch("string", m)),
        };
        self.take(n)
    }

    /// Consume a binary value. A string is accepted too (the bytes are the
    /// same); the writer always emits binary.
    pub fn read_bin(&mut self) -> Result<&'a [u8], DecodeError> {
        let m = self.peek()?;
        let n = match Marker::from_u8(m) {
            Marker::Bin8 => {
                self.pos += 1;
                self.len_u8()?
            }
            Marker::Bin16 => {
                self.pos += 1;
                self.len_u16()?
            }
            Marker::Bin32 => {
                self.pos += 1;
                self.len_u32()?
            }
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                return self.read_str();
            }
            _ => return Err(mismatch("binary", m)),
        };
        self.take(n)
    }

    /// Consume a binary value of exactly `N` bytes.
    pub fn read_bin_array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let b = self.read_bin()?;
        <[u8; N]>::try_from(b).map_err(|_| DecodeError::WrongLength {
            expected: N,
            found: b.len(),
        })
    }

    /// Consume a map key: a string or a binary value, as msgp accepts both.
    pub fn read_key(&mut self) -> Result<&'a [u8], DecodeError> {
        match Marker::from_u8(self.peek()?) {
            Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => self.read_bin(),
            _ => self.read_str(),
        }
    }

    /// Consume an array header and return the element count.
    ///
    /// The count is not trusted: callers must not pre-allocate more than
    /// [`Reader::remaining`] elements (every element takes at least a byte).
    pub fn read_array_len(&mut self) -> Result<usize, DecodeError> {
        let m = self.byte()?;
        match Marker::from_u8(m) {
            Marker::FixArray(n) => Ok(usize::from(n)),
            Marker::Array16 => self.len_u16(),
            Marker::Array32 => self.len_u32(),
            _ => Err(mismatch("array", m)),
        }
    }

    /// Consume a map header and return the number of key/value pairs.
    pub fn read_map_len(&mut self) -> Result<usize, DecodeError> {
        let m = self.byte()?;
        match Marker::from_u8(m) {
            Marker::FixMap(n) => Ok(usize::from(n)),
            Marker::Map16 => self.len_u16(),
            Marker::Map32 => self.len_u32(),
            _ => Err(mismatch("map", m)),
        }
    }

    /// Consume an extension value and return its type and payload.
    pub fn read_ext(&mut self) -> Result<(i8, &'a [u8]), DecodeError> {
        let m = self.byte()?;
        let n = match Marker::from_u8(m) {
            Marker::FixExt1 => 1,
            Marker::FixExt2 => 2,
            Marker::FixExt4 => 4,
            Marker::FixExt8 => 8,
            Marker::FixExt16 => 16,
            Marker::Ext8 => self.len_u8()?,
            Marker::Ext16 => self.len_u16()?,
            Marker::Ext32 => self.len_u32()?,
            _ => return Err(mismatch("extension", m)),
        };
        let t = i8::from_be_bytes(self.be()?);
        Ok((t, self.take(n)?))
    }

    /// Consume a msgp `time.Time` (extension type 5: seconds and nanoseconds).
    pub fn read_time(&mut self) -> Result<MsgTime, DecodeError> {
        let (t, payload) = self.read_ext()?;
        if t != TIME_EXT || payload.len() != 12 {
            return Err(DecodeError::BadExtension {
                ext_type: t,
                len: payload.len(),
            });
        }
        let mut secs = [0u8; 8];
        secs.copy_from_slice(&payload[..8]);
        let mut nanos = [0u8; 4];
        nanos.copy_from_slice(&payload[8..]);
        Ok(MsgTime {
            secs: i64::from_be_bytes(secs),
            nanos: u32::from_be_bytes(nanos),
        })
    }

    /// Skip one complete value (of any type and nesting depth) and return
    /// its raw encoding.
    ///
    /// Iterative, so hostile nesting cannot overflow the stack; the pending
    /// element count is checked against the remaining input so a huge
    /// declared container fails fast.
    pub fn skip(&mut self) -> Result<&'a [u8], DecodeError> {
        let start = self.pos;
        let mut pending: usize = 1;
        while pending > 0 {
            pending -= 1;
            let m = self.byte()?;
            let (skip, children) = match Marker::from_u8(m) {
                Marker::FixPos(_)
                | Marker::FixNeg(_)
                | Marker::Null
                | Marker::True
                | Marker::False
                | Marker::Reserved => (0, 0),
                Marker::U8 | Marker::I8 => (1, 0),
                Marker::U16 | Marker::I16 => (2, 0),
                Marker::U32 | Marker::I32 | Marker::F32 => (4, 0),
                Marker::U64 | Marker::I64 | Marker::F64 => (8, 0),
                Marker::FixStr(n) => (usize::from(n), 0),
                Marker::Str8 | Marker::Bin8 => (self.len_u8()?, 0),
                Marker::Str16 | Marker::Bin16 => (self.len_u16()?, 0),
                Marker::Str32 | Marker::Bin32 => (self.len_u32()?, 0),
                Marker::FixExt1 => (2, 0),
                Marker::FixExt2 => (3, 0),
                Marker::FixExt4 => (5, 0),
                Marker::FixExt8 => (9, 0),
                Marker::FixExt16 => (17, 0),
                Marker::Ext8 => (self.len_u8()? + 1, 0),
                Marker::Ext16 => (self.len_u16()? + 1, 0),
                Marker::Ext32 => (self.len_u32()?.saturating_add(1), 0),
                Marker::FixArray(n) => (0, usize::from(n)),
                Marker::Array16 => (0, self.len_u16()?),
                Marker::Array32 => (0, self.len_u32()?),
                Marker::FixMap(n) => (0, 2 * usize::from(n)),
                Marker::Map16 => (0, 2 * self.len_u16()?),
                Marker::Map32 => (0, self.len_u32()?.saturating_mul(2)),
            };
            self.take(skip)?;
            pending = pending.saturating_add(children);
            // Every pending element needs at least one more byte.
            if pending > self.remaining() {
                return Err(DecodeError::Truncated);
            }
        }
        Ok(&self.buf[start..self.pos])
    }
}

fn mismatch(expected: &'static str, marker: u8) -> DecodeError {
    DecodeError::TypeMismatch { expected, marker }
}

/// The msgp extension type used for `time.Time`.
pub const TIME_EXT: i8 = 5;

/// A Go `time.Time` as msgp stores it: Unix seconds and nanoseconds, UTC.
///
/// Go's zero time (`time.Time{}`, "never set") is stored as
/// [`MsgTime::GO_ZERO`]: year 1, i.e. -62135596800 seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MsgTime {
    /// Seconds since the Unix epoch.
    pub secs: i64,
    /// Nanoseconds within the second (0..1e9 when written by Go).
    pub nanos: u32,
}

impl MsgTime {
    /// Go's zero `time.Time` (January 1, year 1, 00:00:00 UTC).
    pub const GO_ZERO: MsgTime = MsgTime {
        secs: -62_135_596_800,
        nanos: 0,
    };

    /// A time from Unix nanoseconds.
    pub fn from_unix_nanos(nanos: i64) -> Self {
        MsgTime {
            secs: nanos.div_euclid(1_000_000_000),
            // rem_euclid of a positive modulus is in 0..1e9, which fits u32.
            nanos: u32::try_from(nanos.rem_euclid(1_000_000_000)).unwrap_or(0),
        }
    }

    /// Whether this is Go's zero time.
    pub fn is_go_zero(&self) -> bool {
        *self == Self::GO_ZERO
    }

    /// Unix nanoseconds computed the way Go's `UnixNano` does (wrapping on
    /// overflow, which happens for the zero time).
    pub fn unix_nanos_wrapping(&self) -> i64 {
        self.secs
            .wrapping_mul(1_000_000_000)
            .wrapping_add(i64::from(self.nanos))
    }
}

/// Appends MessagePack values to a byte vector using msgp's encodings.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    /// The encoded bytes.
    pub buf: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// A writer that appends to `buf`.
    pub fn with_buffer(buf: Vec<u8>) -> Self {
        Self { buf }
    }

    /// The encoded bytes.
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }

    fn marker(&mut self, m: Marker) {
        self.buf.push(m.to_u8());
    }

    /// Append raw, already-encoded bytes.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// `nil`.
    pub fn nil(&mut self) {
        self.marker(Marker::Null);
    }

    /// A boolean.
    pub fn bool(&mut self, v: bool) {
        self.marker(if v { Marker::True } else { Marker::False });
    }

    /// A signed integer, encoded like msgp's `AppendInt64`.
    pub fn int(&mut self, v: i64) {
        if v >= 0 {
            if v <= i64::from(i8::MAX) {
                self.buf.push(v as u8);
            } else if let Ok(v) = i16::try_from(v) {
                self.marker(Marker::I16);
                self.buf.extend_from_slice(&v.to_be_bytes());
            } else if let Ok(v) = i32::try_from(v) {
                self.marker(Marker::I32);
                self.buf.extend_from_slice(&v.to_be_bytes());
            } else {
                self.marker(Marker::I64);
                self.buf.extend_from_slice(&v.to_be_bytes());
            }
        } else if v >= -32 {
            self.buf.push(v as i8 as u8);
        } else if let Ok(v) = i8::try_from(v) {
            self.marker(Marker::I8);
            self.buf.extend_from_slice(&v.to_be_bytes());
        } else if let Ok(v) = i16::try_from(v) {
            self.marker(Marker::I16);
            self.buf.extend_from_slice(&v.to_be_bytes());
        } else if let Ok(v) = i32::try_from(v) {
            self.marker(Marker::I32);
            self.buf.extend_from_slice(&v.to_be_bytes());
        } else {
            self.marker(Marker::I64);
            self.buf.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// An unsigned integer, encoded like msgp's `AppendUint64`.
    pub fn uint(&mut self, v: u64) {
        if v <= 0x7f {
            self.buf.push(v as u8);
        } else if let Ok(v) = u8::try_from(v) {
            self.marker(Marker::U8);
            self.buf.push(v);
        } else if let Ok(v) = u16::try_from(v) {
            self.marker(Marker::U16);
            self.buf.extend_from_slice(&v.to_be_bytes());
        } else if let Ok(v) = u32::try_from(v) {
            self.marker(Marker::U32);
            self.buf.extend_from_slice(&v.to_be_bytes());
        } else {
            self.marker(Marker::U64);
            self.buf.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// A `uint32` in its fixed five-byte form (`ce` + big-endian), as
    /// xl.meta 1.3 writes its CRC.
    pub fn uint32_fixed(&mut self, v: u32) {
        self.marker(Marker::U32);
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    fn len_header(&mut self, n: usize, fix: u8, fix_max: usize, m16: Marker, m32: Marker) {
        if n <= fix_max {
            self.buf.push(fix | n as u8);
        } else if let Ok(n) = u16::try_from(n) {
            self.marker(m16);
            self.buf.extend_from_slice(&n.to_be_bytes());
        } else {
            // Callers check lengths against u32::MAX before encoding; clamp
            // rather than panic if one slips through.
            self.marker(m32);
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            self.buf.extend_from_slice(&n.to_be_bytes());
        }
    }

    /// A string (raw bytes; msgp does not check UTF-8).
    pub fn str(&mut self, s: &[u8]) {
        match u8::try_from(s.len()) {
            Ok(n) if n <= 31 => self.buf.push(0xa0 | n),
            Ok(n) => {
                self.marker(Marker::Str8);
                self.buf.push(n);
            }
            Err(_) => self.len_header(s.len(), 0xa0, 31, Marker::Str16, Marker::Str32),
        }
        self.buf.extend_from_slice(s);
    }

    /// Binary data.
    pub fn bin(&mut self, b: &[u8]) {
        if let Ok(n) = u8::try_from(b.len()) {
            self.marker(Marker::Bin8);
            self.buf.push(n);
        } else if let Ok(n) = u16::try_from(b.len()) {
            self.marker(Marker::Bin16);
            self.buf.extend_from_slice(&n.to_be_bytes());
        } else {
            self.marker(Marker::Bin32);
            let n = u32::try_from(b.len()).unwrap_or(u32::MAX);
            self.buf.extend_from_slice(&n.to_be_bytes());
        }
        self.buf.extend_from_slice(b);
    }

    /// An array header for `n` elements.
    pub fn array_len(&mut self, n: usize) {
        self.len_header(n, 0x90, 15, Marker::Array16, Marker::Array32);
    }

    /// A map header for `n` key/value pairs.
    pub fn map_len(&mut self, n: usize) {
        self.len_header(n, 0x80, 15, Marker::Map16, Marker::Map32);
    }

    /// A msgp `time.Time` (extension type 5).
    pub fn time(&mut self, t: MsgTime) {
        self.marker(Marker::Ext8);
        self.buf.push(12);
        self.buf.push(TIME_EXT as u8);
        self.buf.extend_from_slice(&t.secs.to_be_bytes());
        self.buf.extend_from_slice(&t.nanos.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
        let mut w = Writer::new();
        f(&mut w);
        w.into_inner()
    }

    #[test]
    fn signed_ints_follow_msgp() {
        assert_eq!(enc(|w| w.int(0)), [0x00]);
        assert_eq!(enc(|w| w.int(127)), [0x7f]);
        // msgp writes positive values above 127 as signed types.
        assert_eq!(enc(|w| w.int(128)), [0xd1, 0x00, 0x80]);
        assert_eq!(enc(|w| w.int(207)), [0xd1, 0x00, 0xcf]);
        assert_eq!(enc(|w| w.int(32767)), [0xd1, 0x7f, 0xff]);
        assert_eq!(enc(|w| w.int(32768)), [0xd2, 0x00, 0x00, 0x80, 0x00]);
        assert_eq!(enc(|w| w.int(1 << 20)), [0xd2, 0x00, 0x10, 0x00, 0x00]);
        assert_eq!(enc(|w| w.int(1 << 31))[0], 0xd3);
        assert_eq!(enc(|w| w.int(-1)), [0xff]);
        assert_eq!(enc(|w| w.int(-32)), [0xe0]);
        assert_eq!(enc(|w| w.int(-33)), [0xd0, 0xdf]);
        assert_eq!(enc(|w| w.int(-129)), [0xd1, 0xff, 0x7f]);
        assert_eq!(enc(|w| w.int(i64::MIN))[0], 0xd3);
    }

    #[test]
    fn unsigned_ints_follow_msgp() {
        assert_eq!(enc(|w| w.uint(3)), [0x03]);
        assert_eq!(enc(|w| w.uint(200)), [0xcc, 200]);
        assert_eq!(enc(|w| w.uint(256)), [0xcd, 0x01, 0x00]);
        assert_eq!(enc(|w| w.uint(1 << 16)), [0xce, 0, 1, 0, 0]);
        assert_eq!(enc(|w| w.uint(1 << 32))[0], 0xcf);
    }

    #[test]
    fn strings_and_bins() {
        assert_eq!(enc(|w| w.str(b"ab")), [0xa2, b'a', b'b']);
        let s = vec![b'x'; 32];
        assert_eq!(&enc(|w| w.str(&s))[..2], [0xd9, 32]);
        let s = vec![b'x'; 256];
        assert_eq!(&enc(|w| w.str(&s))[..3], [0xda, 1, 0]);
        assert_eq!(&enc(|w| w.bin(&[1, 2]))[..], [0xc4, 2, 1, 2]);
        assert_eq!(&enc(|w| w.bin(&[0; 300]))[..3], [0xc5, 1, 44]);
        assert_eq!(enc(|w| w.map_len(17)), [0xde, 0, 17]);
        assert_eq!(enc(|w| w.array_len(4)), [0x94]);
    }

    #[test]
    fn round_trip_values() {
        let mut w = Writer::new();
        for v in [0i64, 1, -1, 127, 128, -33, 1 << 40, i64::MIN, i64::MAX] {
            w.int(v);
        }
        w.str(b"hello");
        w.bin(&[9; 70_000]);
        w.time(MsgTime { secs: 5, nanos: 7 });
        w.time(MsgTime::GO_ZERO);
        let buf = w.into_inner();
        let mut r = Reader::new(&buf);
        for v in [0i64, 1, -1, 127, 128, -33, 1 << 40, i64::MIN, i64::MAX] {
            assert_eq!(r.read_i64().unwrap(), v);
        }
        assert_eq!(r.read_str().unwrap(), b"hello");
        assert_eq!(r.read_bin().unwrap().len(), 70_000);
        assert_eq!(r.read_time().unwrap(), MsgTime { secs: 5, nanos: 7 });
        assert!(r.read_time().unwrap().is_go_zero());
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn skip_handles_nesting_and_rejects_lies() {
        let mut w = Writer::new();
        w.map_len(2);
        w.str(b"a");
        w.array_len(3);
        w.int(1);
        w.nil();
        w.map_len(1);
        w.str(b"k");
        w.bin(b"v");
        w.str(b"b");
        w.time(MsgTime { secs: 1, nanos: 2 });
        w.int(42);
        let buf = w.into_inner();
        let mut r = Reader::new(&buf);
        let raw = r.skip().unwrap();
        assert_eq!(raw.len(), buf.len() - 1);
        assert_eq!(r.read_i64().unwrap(), 42);

        // An array claiming four billion elements fails fast.
        let lie = [0xdd, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(Reader::new(&lie).skip(), Err(DecodeError::Truncated));
        // Deep nesting does not recurse.
        let deep = vec![0x91; 100_000];
        assert_eq!(Reader::new(&deep).skip(), Err(DecodeError::Truncated));
    }

    #[test]
    fn unsigned_and_signed_reads_are_range_checked() {
        let buf = [0xff]; // -1
        assert_eq!(Reader::new(&buf).read_u64(), Err(DecodeError::OutOfRange));
        let buf = [0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(Reader::new(&buf).read_i64(), Err(DecodeError::OutOfRange));
        let buf = [0xcd, 0x01, 0x00];
        assert_eq!(Reader::new(&buf).read_u8(), Err(DecodeError::OutOfRange));
        let buf = [0xd9, 10, b'a'];
        assert_eq!(Reader::new(&buf).read_str(), Err(DecodeError::Truncated));
    }

    #[test]
    fn time_conversions() {
        let t = MsgTime::from_unix_nanos(-1);
        assert_eq!(
            t,
            MsgTime {
                secs: -1,
                nanos: 999_999_999
            }
        );
        assert_eq!(t.unix_nanos_wrapping(), -1);
        assert_eq!(MsgTime::from_unix_nanos(1_500_000_000).nanos, 500_000_000);
    }
}

//! A sans-IO decoder of `aws-chunked` bodies: feed it the bytes of the body
//! as they arrive, get the payload bytes back (slices of the input, no
//! copy), and at the end the checksum trailers.
//!
//! Signed chunks (`<hex-size>;chunk-signature=<sig>\r\n<data>\r\n`) are
//! chained from the seed signature of the request: chunk *n* is signed over
//! `AWS4-HMAC-SHA256-PAYLOAD`, the request timestamp, the scope, the
//! signature of chunk *n-1*, the hash of the empty string and the hash of
//! its data. The body ends with a zero-sized chunk, then, in the trailer
//! modes, `name:value` trailer lines (and `x-amz-trailer-signature`, signed
//! over `AWS4-HMAC-SHA256-TRAILER` chained from the last chunk signature)
//! and an empty line. An empty line between the last chunk and the
//! trailers, as in AWS's published example, is accepted, and so is
//! minio-go's form (each trailer line ended by LF alone, the block closed
//! by an empty CRLF line, then the signature line in signed bodies, then
//! the final empty line), which MinIO accepts and minio-go sends when a
//! program turns its trailing headers on.
//!
//! Payload bytes are handed out as they arrive, before the signature of the
//! chunk that carries them is checked: a caller must treat what it
//! received as unauthenticated until [`ChunkedDecoder::finish`] returns
//! `Ok`, exactly as with a body checked against `x-amz-content-sha256`.
//! Signed chunks of up to 128 KiB are checked in groups of up to four
//! (their data copied aside until the group is full or a larger chunk or
//! the end comes, then hashed together), larger ones as their data passes;
//! either way in order, every one before the final chunk's and the
//! trailers' signatures. A request holds at most five such buffers.

use sha2::{Digest, Sha256};

use super::error::{AuthError, SignatureMismatch};
use super::payload::{ChecksumAlgorithm, Trailer, Trailers};
use super::signing::{CredentialScope, EMPTY_SHA256, Signature, SigningKey, sha256};

const PAYLOAD_ALGORITHM: &str = "AWS4-HMAC-SHA256-PAYLOAD";
const TRAILER_ALGORITHM: &str = "AWS4-HMAC-SHA256-TRAILER";
const CHUNK_SIGNATURE: &[u8] = b";chunk-signature=";
/// The largest signed chunk hashed in a group (SDKs send 64 KiB to 1 MiB;
/// minio-go and mc 64 KiB): up to [`GROUP_MAX_LANES`] such chunks are
/// held per request.
const GROUP_MAX_CHUNK: u64 = 128 << 10;
/// The most chunks hashed together.
const GROUP_MAX_LANES: usize = 4;
const TRAILER_SIGNATURE: &str = "x-amz-trailer-signature";

/// Bounds of what a chunked body may contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkLimits {
    /// Longest chunk header or trailer line, without its CRLF.
    pub max_line_len: usize,
    /// Largest chunk.
    pub max_chunk_size: u64,
    /// Most bytes of trailer lines in all.
    pub max_trailer_bytes: usize,
}

impl Default for ChunkLimits {
    /// 4 KiB lines (a signed chunk header is 81 bytes at most; MinIO
    /// uses the same bound), 16 MiB chunks (SDKs send 64 KiB to 1 MiB),
    /// 4 KiB of trailers (five checksums and a signature take under 400).
    fn default() -> Self {
        ChunkLimits {
            max_line_len: 4096,
            max_chunk_size: 16 << 20,
            max_trailer_bytes: 4096,
        }
    }
}

/// The chain of chunk signatures of one request.
#[derive(Debug, Clone)]
pub struct SignatureChain {
    key: SigningKey,
    amz_date: String,
    scope: String,
    previous: Signature,
}

impl SignatureChain {
    /// A chain starting at `seed` (the signature of the request itself),
    /// for the request timestamp `amz_date` (`YYYYMMDDTHHMMSSZ`) and
    /// `scope`, signed with `key`.
    pub fn new(
        key: SigningKey,
        amz_date: impl Into<String>,
        scope: &CredentialScope,
        seed: Signature,
    ) -> Self {
        SignatureChain {
            key,
            amz_date: amz_date.into(),
            scope: scope.to_string(),
            previous: seed,
        }
    }

    /// The signature of the last link (the seed before any chunk).
    pub fn previous(&self) -> Signature {
        self.previous
    }

    fn chunk_string_to_sign(&self, chunk_hash: &[u8; 32]) -> String {
        format!(
            "{PAYLOAD_ALGORITHM}\n{}\n{}\n{}\n{EMPTY_SHA256}\n{}",
            self.amz_date,
            self.scope,
            self.previous,
            hex::encode(chunk_hash)
        )
    }

    fn trailer_string_to_sign(&self, canonical_trailers: &[u8]) -> String {
        format!(
            "{TRAILER_ALGORITHM}\n{}\n{}\n{}\n{}",
            self.amz_date,
            self.scope,
            self.previous,
            hex::encode(sha256(canonical_trailers))
        )
    }

    /// The signature a chunk whose data hashes to `chunk_hash` must carry.
    pub fn chunk_signature(&self, chunk_hash: &[u8; 32]) -> Signature {
        self.key
            .sign(self.chunk_string_to_sign(chunk_hash).as_bytes())
    }

    /// The signature of trailers whose canonical form (`name:value\n`
    /// lines) is `canonical_trailers`.
    pub fn trailer_signature(&self, canonical_trailers: &[u8]) -> Signature {
        self.key
            .sign(self.trailer_string_to_sign(canonical_trailers).as_bytes())
    }

    /// Checks the signature of the chunk hashing to `chunk_hash` and, if it
    /// holds, advances the chain to it.
    fn verify_chunk(&mut self, chunk_hash: &[u8; 32], claimed: Signature) -> Result<(), AuthError> {
        let expected = self.chunk_signature(chunk_hash);
        if expected.ct_eq(&claimed) {
            self.previous = claimed;
            Ok(())
        } else {
            Err(self.mismatch(self.chunk_string_to_sign(chunk_hash), claimed))
        }
    }

    fn mismatch(&self, string_to_sign: String, claimed: Signature) -> AuthError {
        AuthError::SignatureDoesNotMatch(Box::new(SignatureMismatch {
            access_key: String::new(),
            signature_provided: claimed.to_hex(),
            string_to_sign,
            canonical_request: String::new(),
        }))
    }
}

/// What one call of [`ChunkedDecoder::decode`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded<'a> {
    /// How many bytes of the input were used; the caller passes the rest
    /// (and what follows) to the next call.
    pub consumed: usize,
    /// Payload bytes: a slice of the input, possibly empty.
    pub payload: &'a [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading a chunk header line.
    Header,
    /// Inside the data of a chunk.
    Data { remaining: u64 },
    /// After the data of a chunk: `seen` bytes of its CRLF read.
    DataCrlf { seen: u8 },
    /// After the last chunk, reading trailer lines.
    Trailer,
    /// After the last chunk of a body without trailers: its final CRLF.
    FinalCrlf { seen: u8 },
    /// The body is complete; nothing may follow.
    Done,
}

/// The incremental decoder of an `aws-chunked` body.
#[derive(Debug)]
pub struct ChunkedDecoder {
    chain: Option<SignatureChain>,
    /// `Some` in the trailer modes: the algorithms `x-amz-trailer` declared.
    declared_trailers: Option<Vec<ChecksumAlgorithm>>,
    decoded_length: Option<u64>,
    limits: ChunkLimits,
    state: State,
    line: Vec<u8>,
    hasher: Sha256,
    /// Signed chunks of at most [`GROUP_MAX_CHUNK`] bytes are hashed
    /// together, as many as the kernel has lanes (`sha256x`, whose SHA-NI
    /// kernel hashes four messages at about twice the speed of one): the
    /// data of the current chunk, and the chunks that wait for it with
    /// their claimed signatures, oldest first.
    group: Option<sha256x::Kernel>,
    buffering: bool,
    chunk_buf: Vec<u8>,
    held: Vec<(Vec<u8>, Signature)>,
    /// Buffers of verified chunks, reused.
    spare: Vec<Vec<u8>>,
    claimed: Option<Signature>,
    total: u64,
    trailer_bytes: usize,
    /// Whether the empty line some writers put between the last chunk and
    /// the trailers (as AWS's own example does) has been skipped.
    separator_skipped: bool,
    trailers: Trailers,
    trailer_signature: Option<Signature>,
    /// The line just read ended in LF alone (only trailer lines may).
    line_bare_lf: bool,
    /// Where a block of LF-terminated trailer lines stands.
    lf_block: LfBlock,
    error: Option<AuthError>,
}

/// minio-go's trailer block: lines ended by LF alone, closed by an empty
/// CRLF line, after which the final empty line (or, in a signed body, the
/// signature line) must still come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LfBlock {
    None,
    Open,
    Closed,
}

impl ChunkedDecoder {
    /// A decoder of signed chunks (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD`,
    /// or `...-PAYLOAD-TRAILER` when `trailers` is `Some`: the algorithms
    /// `x-amz-trailer` declared, the trailers then being signed too).
    /// `decoded_length` is `x-amz-decoded-content-length`.
    pub fn signed(
        chain: SignatureChain,
        decoded_length: Option<u64>,
        trailers: Option<Vec<ChecksumAlgorithm>>,
        limits: ChunkLimits,
    ) -> Self {
        ChunkedDecoder::new(Some(chain), decoded_length, trailers, limits)
    }

    /// A decoder of unsigned chunks with unsigned trailers
    /// (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`), `trailers` being the
    /// algorithms `x-amz-trailer` declared.
    pub fn unsigned(
        decoded_length: Option<u64>,
        trailers: Vec<ChecksumAlgorithm>,
        limits: ChunkLimits,
    ) -> Self {
        ChunkedDecoder::new(None, decoded_length, Some(trailers), limits)
    }

    fn new(
        chain: Option<SignatureChain>,
        decoded_length: Option<u64>,
        declared_trailers: Option<Vec<ChecksumAlgorithm>>,
        limits: ChunkLimits,
    ) -> Self {
        let group = chain
            .is_some()
            .then(sha256x::Kernel::detect)
            .filter(|k| k.lanes() >= 2);
        ChunkedDecoder {
            group,
            chain,
            declared_trailers,
            decoded_length,
            limits,
            state: State::Header,
            line: Vec::new(),
            hasher: Sha256::new(),
            buffering: false,
            chunk_buf: Vec::new(),
            held: Vec::new(),
            spare: Vec::new(),
            claimed: None,
            total: 0,
            trailer_bytes: 0,
            separator_skipped: false,
            trailers: Trailers::default(),
            trailer_signature: None,
            line_bare_lf: false,
            lf_block: LfBlock::None,
            error: None,
        }
    }

    /// Whether the chunks are signed.
    pub fn is_signed(&self) -> bool {
        self.chain.is_some()
    }

    /// The number of payload bytes handed out so far.
    pub fn decoded_len(&self) -> u64 {
        self.total
    }

    /// The declared payload length (`x-amz-decoded-content-length`).
    pub fn declared_len(&self) -> Option<u64> {
        self.decoded_length
    }

    /// Whether the whole body, trailers included, has been read and
    /// verified.
    pub fn is_done(&self) -> bool {
        self.state == State::Done && self.error.is_none()
    }

    /// Decodes from the start of `input`: consumes framing, and returns at
    /// most one run of payload bytes. Call again with the unconsumed rest.
    /// Every non-empty input makes progress (`consumed > 0`); input after
    /// the end of the body is an error. After an error every call returns
    /// it again.
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> Result<Decoded<'a>, AuthError> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let result = self.step(input);
        if let Err(error) = &result {
            self.error = Some(error.clone());
        }
        result
    }

    /// Decodes all of `input`, appending the payload to `out`.
    pub fn decode_into(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), AuthError> {
        while !input.is_empty() {
            let decoded = self.decode(input)?;
            out.extend_from_slice(decoded.payload);
            input = &input[decoded.consumed..];
        }
        Ok(())
    }

    /// At the end of the body: the trailers if the body was complete and
    /// every signature, the length and the trailers checked out.
    ///
    /// A body that ends right after its last trailer line (or last chunk)
    /// without the final empty line is accepted: everything signed has
    /// been verified by then.
    pub fn finish(mut self) -> Result<Trailers, AuthError> {
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        // Chunks still waiting for a full group (the body ended early) are
        // checked first: a forged chunk is reported as such.
        self.verify_held()?;
        match self.state {
            State::Done => Ok(self.trailers),
            State::Trailer if self.line.is_empty() && self.lf_block != LfBlock::Closed => {
                self.end_of_trailers()?;
                Ok(self.trailers)
            }
            State::FinalCrlf { seen: 0 } => Ok(self.trailers),
            _ => Err(AuthError::IncompleteBody {
                expected: self.decoded_length,
                provided: self.total,
            }),
        }
    }

    fn step<'a>(&mut self, input: &'a [u8]) -> Result<Decoded<'a>, AuthError> {
        let mut pos = 0;
        while pos < input.len() {
            match self.state {
                State::Data { remaining } => {
                    let available = input.len() - pos;
                    let n = usize::try_from(remaining).map_or(available, |r| r.min(available));
                    let data = &input[pos..pos + n];
                    if self.buffering {
                        self.chunk_buf.extend_from_slice(data);
                    } else if self.chain.is_some() {
                        self.hasher.update(data);
                    }
                    self.total += n as u64;
                    let remaining = remaining - n as u64;
                    self.state = State::Data { remaining };
                    if remaining == 0 {
                        self.end_of_chunk_data()?;
                        self.state = State::DataCrlf { seen: 0 };
                    }
                    return Ok(Decoded {
                        consumed: pos + n,
                        payload: data,
                    });
                }
                State::DataCrlf { seen } => {
                    let expected = if seen == 0 { b'\r' } else { b'\n' };
                    if input[pos] != expected {
                        return Err(AuthError::chunk_malformed(
                            "chunk data is not followed by CRLF",
                        ));
                    }
                    pos += 1;
                    self.state = if seen == 0 {
                        State::DataCrlf { seen: 1 }
                    } else {
                        State::Header
                    };
                }
                State::FinalCrlf { seen } => {
                    let expected = if seen == 0 { b'\r' } else { b'\n' };
                    if input[pos] != expected {
                        return Err(AuthError::chunk_malformed(
                            "the last chunk is not followed by CRLF",
                        ));
                    }
                    pos += 1;
                    self.state = if seen == 0 {
                        State::FinalCrlf { seen: 1 }
                    } else {
                        State::Done
                    };
                }
                State::Header => {
                    if let Some(line) = self.take_line(input, &mut pos)? {
                        self.chunk_header(&line)?;
                    }
                }
                State::Trailer => {
                    if let Some(line) = self.take_line(input, &mut pos)? {
                        self.trailer_line(&line)?;
                    }
                }
                State::Done => {
                    return Err(AuthError::chunk_malformed(
                        "data follows the end of the body",
                    ));
                }
            }
        }
        Ok(Decoded {
            consumed: pos,
            payload: &[],
        })
    }

    /// Accumulates a CRLF-terminated line; `Some(line)` without its CRLF
    /// once complete.
    fn take_line(&mut self, input: &[u8], pos: &mut usize) -> Result<Option<Vec<u8>>, AuthError> {
        let rest = &input[*pos..];
        let (piece, complete) = match rest.iter().position(|&b| b == b'\n') {
            Some(end) => (&rest[..end], true),
            None => (rest, false),
        };
        // The line may hold max_line_len bytes and then its '\r'.
        if self.line.len() + piece.len() > self.limits.max_line_len + 1 {
            return Err(match self.state {
                State::Trailer => AuthError::trailer_malformed("a trailer line is too long"),
                _ => AuthError::chunk_malformed("a chunk header line is too long"),
            });
        }
        self.line.extend_from_slice(piece);
        *pos += piece.len() + usize::from(complete);
        if !complete {
            return Ok(None);
        }
        let mut line = std::mem::take(&mut self.line);
        self.line_bare_lf = false;
        if line.last() == Some(&b'\r') {
            line.pop();
        } else if self.state == State::Trailer {
            self.line_bare_lf = true;
        } else {
            return Err(AuthError::chunk_malformed(
                "a chunk header does not end in CRLF",
            ));
        }
        Ok(Some(line))
    }

    fn chunk_header(&mut self, line: &[u8]) -> Result<(), AuthError> {
        let (size_hex, claimed) = if self.chain.is_some() {
            let split = line
                .windows(CHUNK_SIGNATURE.len())
                .position(|w| w == CHUNK_SIGNATURE)
                .ok_or_else(|| AuthError::chunk_malformed("a chunk has no chunk-signature"))?;
            let signature = std::str::from_utf8(&line[split + CHUNK_SIGNATURE.len()..])
                .ok()
                .and_then(Signature::from_hex)
                .ok_or_else(|| {
                    AuthError::chunk_malformed("a chunk-signature is not 64 hex digits")
                })?;
            (&line[..split], Some(signature))
        } else {
            (line, None)
        };
        if size_hex.is_empty() || size_hex.len() > 16 || !size_hex.iter().all(u8::is_ascii_hexdigit)
        {
            return Err(AuthError::chunk_malformed(
                "a chunk size is not a hex number",
            ));
        }
        let size = size_hex.iter().fold(0u64, |acc, &b| {
            let digit = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                _ => b - b'A' + 10,
            };
            (acc << 4) | u64::from(digit)
        });
        if size > self.limits.max_chunk_size {
            return Err(AuthError::chunk_malformed(
                "a chunk is larger than the limit",
            ));
        }
        if let Some(declared) = self.decoded_length
            && self.total.saturating_add(size) > declared
        {
            return Err(AuthError::IncompleteBody {
                expected: Some(declared),
                provided: self.total.saturating_add(size),
            });
        }
        self.claimed = claimed;
        if size > 0 {
            self.buffering = self.group.is_some() && size <= GROUP_MAX_CHUNK;
            if self.buffering {
                self.chunk_buf.clear();
            } else {
                // Chunks are verified in order: held ones go first.
                self.verify_held()?;
                self.hasher = Sha256::new();
            }
            self.state = State::Data { remaining: size };
            return Ok(());
        }
        // The last chunk: its signature covers no data.
        self.buffering = false;
        self.end_of_chunk_data()?;
        if let Some(declared) = self.decoded_length
            && self.total != declared
        {
            return Err(AuthError::IncompleteBody {
                expected: Some(declared),
                provided: self.total,
            });
        }
        self.state = if self.declared_trailers.is_some() {
            State::Trailer
        } else {
            State::FinalCrlf { seen: 0 }
        };
        Ok(())
    }

    fn end_of_chunk_data(&mut self) -> Result<(), AuthError> {
        let Some(claimed) = self.claimed.take() else {
            return Ok(());
        };
        if let (true, Some(kernel)) = (self.buffering, self.group) {
            let data = std::mem::replace(&mut self.chunk_buf, self.spare.pop().unwrap_or_default());
            self.held.push((data, claimed));
            if self.held.len() >= kernel.lanes().min(GROUP_MAX_LANES) {
                self.verify_held()?;
            }
            return Ok(());
        }
        self.verify_held()?;
        if let Some(chain) = self.chain.as_mut() {
            let hash: [u8; 32] = std::mem::take(&mut self.hasher).finalize().into();
            chain.verify_chunk(&hash, claimed)?;
        }
        Ok(())
    }

    /// Verifies the chunks waiting for a full group, in order, hashed
    /// together.
    fn verify_held(&mut self) -> Result<(), AuthError> {
        let (Some(chain), Some(kernel)) = (self.chain.as_mut(), self.group) else {
            return Ok(());
        };
        // A group at a time (`end_of_chunk_data` holds at most one), from
        // arrays: no allocation per group.
        while !self.held.is_empty() {
            let n = self.held.len().min(GROUP_MAX_LANES);
            let mut hashes = [[0u8; 32]; GROUP_MAX_LANES];
            let mut messages: [&[u8]; GROUP_MAX_LANES] = [&[]; GROUP_MAX_LANES];
            for (m, (d, _)) in messages.iter_mut().zip(&self.held[..n]) {
                *m = d;
            }
            kernel.digest_many(&messages[..n], &mut hashes[..n]);
            for ((mut data, claimed), hash) in self.held.drain(..n).zip(&hashes[..n]) {
                chain.verify_chunk(hash, claimed)?;
                data.clear();
                self.spare.push(data);
            }
        }
        Ok(())
    }

    fn trailer_line(&mut self, line: &[u8]) -> Result<(), AuthError> {
        if self.line_bare_lf {
            if line.is_empty() {
                return Err(AuthError::trailer_malformed(
                    "an empty trailer line ends in LF alone",
                ));
            }
            if self.lf_block == LfBlock::Closed {
                return Err(AuthError::trailer_malformed(
                    "a trailer line follows the end of the trailer block",
                ));
            }
            self.lf_block = LfBlock::Open;
        } else if line.is_empty() && self.lf_block == LfBlock::Open {
            self.lf_block = LfBlock::Closed;
            return Ok(());
        }
        let lines_expected = self.chain.is_some()
            || self
                .declared_trailers
                .as_ref()
                .is_some_and(|declared| !declared.is_empty());
        if line.is_empty() && lines_expected && self.trailer_bytes == 0 && !self.separator_skipped {
            // Trailer lines must follow: this is a separator before them.
            self.separator_skipped = true;
            return Ok(());
        }
        if line.is_empty() {
            self.end_of_trailers()?;
            self.state = State::Done;
            return Ok(());
        }
        self.trailer_bytes += line.len() + 2;
        if self.trailer_bytes > self.limits.max_trailer_bytes {
            return Err(AuthError::trailer_malformed("the trailers are too large"));
        }
        if self.trailer_signature.is_some() {
            return Err(AuthError::trailer_malformed(
                "x-amz-trailer-signature is not the last trailer",
            ));
        }
        let text = std::str::from_utf8(line)
            .map_err(|_| AuthError::trailer_malformed("a trailer is not text"))?;
        let (name, value) = text
            .split_once(':')
            .ok_or_else(|| AuthError::trailer_malformed("a trailer line has no ':'"))?;
        let value = value.trim_matches([' ', '\t']);
        if name.eq_ignore_ascii_case(TRAILER_SIGNATURE) {
            if self.chain.is_none() {
                return Err(AuthError::trailer_malformed(
                    "x-amz-trailer-signature in an unsigned body",
                ));
            }
            let signature = Signature::from_hex(value).ok_or_else(|| {
                AuthError::trailer_malformed("x-amz-trailer-signature is not 64 hex digits")
            })?;
            self.trailer_signature = Some(signature);
            return Ok(());
        }
        let algorithm = ChecksumAlgorithm::from_header_name(name)
            .ok_or_else(|| AuthError::trailer_malformed(format!("unsupported trailer {name:?}")))?;
        let declared = self.declared_trailers.as_deref().unwrap_or_default();
        if !declared.contains(&algorithm) {
            return Err(AuthError::trailer_malformed(format!(
                "trailer {} was not declared in x-amz-trailer",
                algorithm.header_name()
            )));
        }
        if self.trailers.get(algorithm).is_some() {
            return Err(AuthError::trailer_malformed(format!(
                "trailer {} is repeated",
                algorithm.header_name()
            )));
        }
        if !algorithm.is_valid_value(value) {
            return Err(AuthError::InvalidDigest {
                header: algorithm.header_name().to_owned(),
            });
        }
        self.trailers.push(Trailer {
            algorithm,
            value: value.to_owned(),
        });
        Ok(())
    }

    fn end_of_trailers(&mut self) -> Result<(), AuthError> {
        let declared = self.declared_trailers.as_deref().unwrap_or_default();
        if let Some(missing) = declared.iter().find(|a| self.trailers.get(**a).is_none()) {
            return Err(AuthError::trailer_malformed(format!(
                "trailer {} was declared but not sent",
                missing.header_name()
            )));
        }
        let Some(chain) = &self.chain else {
            return Ok(());
        };
        let claimed = self.trailer_signature.ok_or_else(|| {
            AuthError::trailer_malformed(
                "the trailers of a signed body have no x-amz-trailer-signature",
            )
        })?;
        // Signers canonicalise the trailers sorted by name, as headers;
        // one that signs them in the order sent is as authentic.
        let canonical = |sorted: bool| {
            let mut entries: Vec<&Trailer> = self.trailers.iter().collect();
            if sorted {
                entries.sort_by_key(|t| t.algorithm.header_name());
            }
            let mut out = Vec::new();
            for t in entries {
                out.extend_from_slice(t.algorithm.header_name().as_bytes());
                out.push(b':');
                out.extend_from_slice(t.value.as_bytes());
                out.push(b'\n');
            }
            out
        };
        let sorted = canonical(true);
        if chain.trailer_signature(&sorted).ct_eq(&claimed) {
            return Ok(());
        }
        let wire = canonical(false);
        if wire != sorted && chain.trailer_signature(&wire).ct_eq(&claimed) {
            return Ok(());
        }
        Err(chain.mismatch(chain.trailer_string_to_sign(&sorted), claimed))
    }
}

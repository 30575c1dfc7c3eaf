//! Checksums of multipart uploads, end to end: the algorithm and type an
//! upload is created with (`x-amz-checksum-algorithm`,
//! `x-amz-checksum-type`), the checks on each part, and the object's
//! checksum computed at completion from the parts' stored checksums (a
//! composite `<base64>-N`, or a full-object CRC combined from the part CRCs
//! and sizes without reading the data), and the stored checksum as the
//! answers name it.

use std::collections::BTreeMap;
use std::sync::Arc;

use object::layer::{PartsChecksum, UploadedPart};

use crate::auth::ChecksumAlgorithm;
use crate::checksum::{ObjectChecksum, base64_decode, base64_encode, combined_crc, composite};
use crate::error::S3Error;

/// Where an upload records the checksum it was created with (internal
/// metadata of the upload, kept by the completed object), as
/// `<ALGORITHM> <TYPE>`, e.g. `CRC32 COMPOSITE`.
pub(crate) const META_UPLOAD_CHECKSUM: &str = "x-tessera-internal-checksum";

/// The metadata entry of a multipart object's checksum type, stored with
/// the checksum itself.
pub(crate) const CHECKSUM_TYPE: &str = "x-amz-checksum-type";

/// S3's name of an algorithm (`x-amz-checksum-algorithm`, `ChecksumAlgorithm`).
pub(crate) fn algorithm_name(alg: ChecksumAlgorithm) -> &'static str {
    match alg {
        ChecksumAlgorithm::Crc32 => "CRC32",
        ChecksumAlgorithm::Crc32c => "CRC32C",
        ChecksumAlgorithm::Crc64Nvme => "CRC64NVME",
        ChecksumAlgorithm::Sha1 => "SHA1",
        ChecksumAlgorithm::Sha256 => "SHA256",
    }
}

pub(crate) fn algorithm_of(name: &str) -> Option<ChecksumAlgorithm> {
    ChecksumAlgorithm::ALL
        .into_iter()
        .find(|a| algorithm_name(*a).eq_ignore_ascii_case(name))
}

fn invalid(message: impl Into<String>) -> S3Error {
    S3Error::with_message("InvalidRequest", message)
}

/// The checksum an upload was created with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UploadChecksum {
    pub(crate) alg: ChecksumAlgorithm,
    /// S3's `FULL_OBJECT` type (a CRC of the whole object), else
    /// `COMPOSITE` (a checksum of the parts' checksums).
    pub(crate) full_object: bool,
}

impl UploadChecksum {
    /// `COMPOSITE` or `FULL_OBJECT`.
    pub(crate) fn type_name(self) -> &'static str {
        if self.full_object {
            "FULL_OBJECT"
        } else {
            "COMPOSITE"
        }
    }

    /// The checksum a CreateMultipartUpload asks for, with S3's rules: the
    /// type needs an algorithm; SHA-1 and SHA-256 are only COMPOSITE,
    /// CRC64NVME only FULL_OBJECT; without a type, CRC64NVME is FULL_OBJECT
    /// and the others COMPOSITE.
    pub(crate) fn from_headers(h: &http::HeaderMap) -> Result<Option<UploadChecksum>, S3Error> {
        let get = |name: &str| -> Result<Option<&str>, S3Error> {
            h.get(name)
                .map(|v| {
                    v.to_str()
                        .map_err(|_| invalid(format!("Value for {name} header is invalid.")))
                })
                .transpose()
        };
        let alg = get("x-amz-checksum-algorithm")?;
        let kind = get("x-amz-checksum-type")?;
        let Some(alg) = alg else {
            if kind.is_some() {
                return Err(invalid(
                    "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.",
                ));
            }
            return Ok(None);
        };
        let alg = algorithm_of(alg.trim()).ok_or_else(|| {
            invalid(
                "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]",
            )
        })?;
        let full_object = match kind.map(str::trim) {
            None => alg == ChecksumAlgorithm::Crc64Nvme,
            Some(k) if k.eq_ignore_ascii_case("FULL_OBJECT") => true,
            Some(k) if k.eq_ignore_ascii_case("COMPOSITE") => false,
            Some(_) => return Err(invalid("Value for x-amz-checksum-type header is invalid.")),
        };
        let allowed = match alg {
            ChecksumAlgorithm::Sha1 | ChecksumAlgorithm::Sha256 => !full_object,
            ChecksumAlgorithm::Crc64Nvme => full_object,
            ChecksumAlgorithm::Crc32 | ChecksumAlgorithm::Crc32c => true,
        };
        let out = UploadChecksum { alg, full_object };
        if !allowed {
            return Err(invalid(format!(
                "The {} checksum type cannot be used with the {} checksum algorithm.",
                out.type_name(),
                algorithm_name(alg).to_ascii_lowercase()
            )));
        }
        Ok(Some(out))
    }

    /// The internal metadata entry recording it on the upload.
    pub(crate) fn encode(self) -> Vec<u8> {
        format!("{} {}", algorithm_name(self.alg), self.type_name()).into_bytes()
    }

    /// The checksum an upload (or the object it completed into) was
    /// created with, from its internal metadata.
    pub(crate) fn of(internal: &BTreeMap<String, Vec<u8>>) -> Option<UploadChecksum> {
        let text = std::str::from_utf8(internal.get(META_UPLOAD_CHECKSUM)?).ok()?;
        let (alg, kind) = text.split_once(' ')?;
        Some(UploadChecksum {
            alg: algorithm_of(alg)?,
            full_object: kind == "FULL_OBJECT",
        })
    }

    /// Sets the headers that echo it (`x-amz-checksum-algorithm`,
    /// `x-amz-checksum-type`).
    pub(crate) fn headers(self, h: &mut http::HeaderMap) {
        h.insert(
            "x-amz-checksum-algorithm",
            http::HeaderValue::from_static(algorithm_name(self.alg)),
        );
        h.insert(
            CHECKSUM_TYPE,
            http::HeaderValue::from_static(self.type_name()),
        );
    }
}

/// Checks a part's checksum against the upload's algorithm: a part sent
/// with a checksum of another algorithm is refused, as S3 refuses it.
pub(crate) fn check_part(
    upload: Option<UploadChecksum>,
    part: Option<ChecksumAlgorithm>,
) -> Result<(), S3Error> {
    match (upload, part) {
        (Some(u), Some(p)) if u.alg != p => Err(invalid(format!(
            "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: {}",
            algorithm_name(u.alg).to_ascii_lowercase(),
            algorithm_name(p).to_ascii_lowercase()
        ))),
        _ => Ok(()),
    }
}

/// What a CompleteMultipartUpload asks of the object's checksum: the
/// upload's own (from its creation), the `x-amz-checksum-*` header, and the
/// checksums the request lists per part (by part number).
pub(crate) struct CompleteChecksum {
    pub(crate) upload: Option<UploadChecksum>,
    pub(crate) expected: Option<ObjectChecksum>,
    pub(crate) listed: Vec<(i64, Option<String>)>,
}

impl CompleteChecksum {
    /// The algorithm of the object's checksum, if it gets one: the
    /// upload's, else the header's; both named and different is refused.
    pub(crate) fn algorithm(&self) -> Result<Option<ChecksumAlgorithm>, S3Error> {
        match (&self.upload, &self.expected) {
            (Some(u), Some(e)) if u.alg != e.alg => Err(invalid(format!(
                "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: {}",
                algorithm_name(u.alg).to_ascii_lowercase(),
                algorithm_name(e.alg).to_ascii_lowercase()
            ))),
            (Some(u), _) => Ok(Some(u.alg)),
            (None, Some(e)) => Ok(Some(e.alg)),
            (None, None) => Ok(None),
        }
    }

    /// The object checksum's metadata entries for the parts chosen.
    pub(crate) fn compute(
        &self,
        chosen: &[UploadedPart],
    ) -> Result<Vec<(String, String)>, S3Error> {
        let Some(alg) = self.algorithm()? else {
            return Ok(Vec::new());
        };
        let decode = |v: &str| base64_decode(v.trim()).filter(|d| d.len() == alg.digest_len());
        let mut digests = Vec::with_capacity(chosen.len());
        for p in chosen {
            let stored = p
                .checksum
                .as_ref()
                .filter(|(name, _)| name.eq_ignore_ascii_case(alg.header_name()))
                .and_then(|(_, v)| decode(v));
            let listed = self
                .listed
                .iter()
                .find(|(n, _)| *n == p.number)
                .and_then(|(_, v)| v.as_deref());
            let listed = match listed {
                Some(v) => Some(decode(v).ok_or_else(|| S3Error::new("InvalidPart"))?),
                None => None,
            };
            let digest = match (stored, listed) {
                (Some(s), Some(l)) if s != l => {
                    return Err(S3Error::with_message(
                        "InvalidPart",
                        format!(
                            "The {} you specified for part {} did not match what was uploaded.",
                            super::checksum::part_element(alg),
                            p.number
                        ),
                    ));
                }
                (Some(s), _) => s,
                (None, Some(l)) if self.upload.is_none() => l,
                (None, _) => {
                    if self.upload.is_some() {
                        return Err(invalid(format!(
                            "The upload was created using a {} checksum. The complete request must include the checksum for each part. It was missing for part {} in the request.",
                            algorithm_name(alg).to_ascii_lowercase(),
                            p.number
                        )));
                    }
                    // An upload created without a checksum, whose parts
                    // carry none: the header cannot be checked, and the
                    // object gets no checksum.
                    return Ok(Vec::new());
                }
            };
            digests.push((digest, p.actual_size));
        }
        let n = digests.len();
        let parts: Vec<Vec<u8>> = digests.iter().map(|(d, _)| d.clone()).collect();
        let comp = composite(alg, &parts);
        let full = combined_crc(alg, &digests);
        // A header says which form it is: `-N` or the composite's value is
        // a composite, the CRC of the whole data a full-object checksum
        // (older clients send either, whatever type the upload was created
        // with); without one, the upload's type decides.
        let full_object = match (&self.expected, &self.upload) {
            (Some(e), _) => {
                e.parts.is_none() && comp != e.digest && full.as_ref() == Some(&e.digest)
            }
            (None, Some(u)) => u.full_object,
            (None, None) => false,
        };
        let (digest, value) = if full_object {
            let f = full.ok_or_else(|| S3Error::internal("no full-object form of a SHA"))?;
            let v = base64_encode(&f);
            (f, v)
        } else {
            let v = format!("{}-{n}", base64_encode(&comp));
            (comp, v)
        };
        if let Some(e) = &self.expected
            && (e.digest != digest || e.parts.is_some_and(|p| p != n || full_object))
        {
            return Err(S3Error::with_message(
                "BadDigest",
                format!(
                    "The {} you specified did not match the calculated checksum.",
                    alg.header_name()
                ),
            ));
        }
        let kind = if full_object {
            "FULL_OBJECT"
        } else {
            "COMPOSITE"
        };
        Ok(vec![
            (alg.header_name().to_owned(), value),
            (CHECKSUM_TYPE.to_owned(), kind.to_owned()),
        ])
    }

    /// The layer's completion hook computing it.
    pub(crate) fn into_hook(self) -> PartsChecksum {
        PartsChecksum(Arc::new(move |chosen: &[UploadedPart]| {
            self.compute(chosen)
                .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
        }))
    }
}

/// An object's stored checksum: its algorithm, value and type
/// (`COMPOSITE` for a multipart object without a recorded type, and
/// `FULL_OBJECT` for a single PUT, as S3 reports them).
pub(crate) fn stored_checksum(
    info: &object::layer::ObjectInfo,
) -> Option<(ChecksumAlgorithm, String, String)> {
    let (alg, value) = ChecksumAlgorithm::ALL.into_iter().find_map(|a| {
        info.metadata
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(a.header_name()))
            .map(|(_, v)| (a, v.clone()))
    })?;
    let kind = info
        .metadata
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(CHECKSUM_TYPE))
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| {
            if value.contains('-') {
                "COMPOSITE".to_owned()
            } else {
                "FULL_OBJECT".to_owned()
            }
        });
    Some((alg, value, kind))
}

/// A reader that computes a checksum of what passes through it and, at
/// the end of its input, records it as an `x-amz-checksum-*` entry in
/// `record` (which the object layer stores with the version): the new
/// checksum of a CopyObject that names `x-amz-checksum-algorithm`.
pub(crate) struct ChecksumReader<R> {
    inner: R,
    /// The algorithm and its running checksum, until the end is recorded.
    hashing: Option<(ChecksumAlgorithm, crate::checksum::Hasher)>,
    record: object::layer::TrailingMetadata,
}

impl<R> ChecksumReader<R> {
    /// Without an algorithm it only passes the bytes on.
    pub(crate) fn new(
        inner: R,
        alg: Option<ChecksumAlgorithm>,
        record: object::layer::TrailingMetadata,
    ) -> Self {
        ChecksumReader {
            inner,
            hashing: alg.map(|a| (a, crate::checksum::Hasher::new(a))),
            record,
        }
    }
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for ChecksumReader<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match std::pin::Pin::new(&mut this.inner).poll_read(cx, buf) {
            std::task::Poll::Ready(Ok(())) => {
                let new = &buf.filled()[before..];
                if new.is_empty() {
                    if buf.remaining() > 0
                        && let Some((alg, h)) = this.hashing.take()
                    {
                        this.record
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push((alg.header_name().to_owned(), h.finish_base64()));
                    }
                } else if let Some((_, h)) = this.hashing.as_mut() {
                    h.update(new);
                }
                std::task::Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::Hasher;

    fn headers(pairs: &[(&'static str, &'static str)]) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, http::HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn creation_rules() {
        let of = |pairs| UploadChecksum::from_headers(&headers(pairs));
        assert_eq!(of(&[]).unwrap(), None);
        let c = of(&[("x-amz-checksum-algorithm", "crc32")])
            .unwrap()
            .unwrap();
        assert_eq!((c.alg, c.full_object), (ChecksumAlgorithm::Crc32, false));
        let c = of(&[("x-amz-checksum-algorithm", "CRC64NVME")])
            .unwrap()
            .unwrap();
        assert!(c.full_object);
        let c = of(&[
            ("x-amz-checksum-algorithm", "CRC32C"),
            ("x-amz-checksum-type", "FULL_OBJECT"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            UploadChecksum::of(&BTreeMap::from([(
                META_UPLOAD_CHECKSUM.to_owned(),
                c.encode()
            )])),
            Some(c)
        );
        for bad in [
            &[("x-amz-checksum-type", "COMPOSITE")][..],
            &[("x-amz-checksum-algorithm", "MD5")],
            &[
                ("x-amz-checksum-algorithm", "SHA256"),
                ("x-amz-checksum-type", "FULL_OBJECT"),
            ],
            &[
                ("x-amz-checksum-algorithm", "CRC64NVME"),
                ("x-amz-checksum-type", "COMPOSITE"),
            ],
            &[
                ("x-amz-checksum-algorithm", "CRC32"),
                ("x-amz-checksum-type", "WHOLE"),
            ],
        ] {
            assert_eq!(of(bad).unwrap_err().code, "InvalidRequest", "{bad:?}");
        }
    }

    fn part(n: i64, data: &[u8], alg: ChecksumAlgorithm) -> UploadedPart {
        let mut h = Hasher::new(alg);
        h.update(data);
        UploadedPart {
            number: n,
            etag: "0".repeat(32),
            size: data.len() as u64,
            actual_size: data.len() as u64,
            mod_time_nanos: 0,
            checksum: Some((alg.header_name().to_owned(), h.finish_base64())),
        }
    }

    #[test]
    fn completion_computes_composite_and_full_object_checksums() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let (a, b) = data.split_at(6_000);
        let alg = ChecksumAlgorithm::Crc32c;
        let parts = [part(1, a, alg), part(2, b, alg)];
        let mut whole = Hasher::new(alg);
        whole.update(&data);
        let whole = whole.finish_base64();

        let full = CompleteChecksum {
            upload: Some(UploadChecksum {
                alg,
                full_object: true,
            }),
            expected: None,
            listed: vec![],
        };
        let got = full.compute(&parts).unwrap();
        assert_eq!(got[0], (alg.header_name().to_owned(), whole.clone()));
        assert_eq!(got[1].1, "FULL_OBJECT");

        let comp = CompleteChecksum {
            upload: Some(UploadChecksum {
                alg,
                full_object: false,
            }),
            expected: None,
            listed: vec![],
        };
        let got = comp.compute(&parts).unwrap();
        assert!(got[0].1.ends_with("-2"), "{got:?}");
        assert_eq!(got[1].1, "COMPOSITE");

        // A listed part checksum that differs from the stored one.
        let wrong = CompleteChecksum {
            upload: Some(UploadChecksum {
                alg,
                full_object: false,
            }),
            expected: None,
            listed: vec![(2, Some(parts[0].checksum.clone().unwrap().1))],
        };
        assert_eq!(wrong.compute(&parts).unwrap_err().code, "InvalidPart");

        // A part without a checksum in an upload that has one.
        let mut bare = parts.clone();
        bare[1].checksum = None;
        assert_eq!(comp.compute(&bare).unwrap_err().code, "InvalidRequest");

        // A header that does not match is BadDigest; one that does is kept.
        let digest = base64_decode(&whole).unwrap();
        let header = |digest: Vec<u8>| CompleteChecksum {
            upload: None,
            expected: Some(ObjectChecksum {
                alg,
                digest,
                parts: None,
            }),
            listed: vec![],
        };
        let got = header(digest.clone()).compute(&parts).unwrap();
        assert_eq!(
            (got[0].1.as_str(), got[1].1.as_str()),
            (whole.as_str(), "FULL_OBJECT")
        );
        let mut off = digest;
        off[0] ^= 1;
        assert_eq!(header(off).compute(&parts).unwrap_err().code, "BadDigest");
    }
}

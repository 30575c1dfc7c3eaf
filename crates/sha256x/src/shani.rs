//! SHA-256 with the SHA extensions (SHA-NI), several messages interleaved.
//!
//! `sha256rnds2` does two rounds, but each depends on the one before: one
//! message keeps the SHA unit waiting on latency (about 2 cycles per byte
//! on Zen 4, the speed of OpenSSL and the `sha2` crate there). Several
//! independent messages advanced in the same loop issue their rounds back
//! to back and use the unit's throughput instead. The rounds are the
//! standard SHA-NI sequence (Intel's "New Instructions Supporting the
//! Secure Hash Algorithm on Intel Architecture Processors", 2013): the
//! state as ABEF/CDGH halves, message words scheduled four at a time with
//! `sha256msg1`/`sha256msg2`.

use std::arch::x86_64::{
    __m128i, _mm_add_epi32, _mm_alignr_epi8, _mm_blend_epi16, _mm_loadu_si128, _mm_set_epi64x,
    _mm_sha256msg1_epu32, _mm_sha256msg2_epu32, _mm_sha256rnds2_epu32, _mm_shuffle_epi8,
    _mm_shuffle_epi32, _mm_storeu_si128,
};

use crate::portable::{BLOCK, K};

/// Messages one call advances together at most. On Zen 4 (`benches/
/// sha256`), one message runs at 1.5 GB/s on this code, two at 2.3, three
/// at 3.0 and four at 3.5 (the `sha2` crate: 1.8): four keep the unit
/// busy, at the cost of spilling some of the 16 xmm registers the SHA
/// instructions can address.
pub const LANES: usize = 4;

/// Advances `N` states by `blocks` blocks each, state `l` consuming
/// `data[l][..blocks * 64]`.
///
/// # Safety
/// The CPU must support `sha`, `sse2`, `ssse3` and `sse4.1`, and every
/// `data[l]` must hold at least `blocks * 64` bytes.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
pub unsafe fn compress<const N: usize>(
    states: &mut [[u32; 8]; N],
    data: [&[u8]; N],
    blocks: usize,
) {
    for d in &data {
        debug_assert!(d.len() >= blocks * BLOCK);
    }
    // Byte order of the message words: big-endian within each 32-bit word.
    let bswap = _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203);
    let mut abef = [bswap; N];
    let mut cdgh = [bswap; N];
    for l in 0..N {
        // SAFETY: `states[l]` is 8 u32s: two unaligned 16-byte loads.
        let (dcba, hgfe) = unsafe {
            (
                _mm_loadu_si128(states[l].as_ptr().cast::<__m128i>()),
                _mm_loadu_si128(states[l].as_ptr().add(4).cast::<__m128i>()),
            )
        };
        let cdab = _mm_shuffle_epi32(dcba, 0xb1);
        let efgh = _mm_shuffle_epi32(hgfe, 0x1b);
        abef[l] = _mm_alignr_epi8(cdab, efgh, 8);
        cdgh[l] = _mm_blend_epi16(efgh, cdab, 0xf0);
    }
    for blk in 0..blocks {
        let (abef0, cdgh0) = (abef, cdgh);
        let mut w = [[bswap; 4]; N];
        for g in 0..16 {
            // SAFETY: K has 64 words; 4 g + 3 < 64.
            let k = unsafe { _mm_loadu_si128(K.as_ptr().add(4 * g).cast::<__m128i>()) };
            for l in 0..N {
                let words = if g < 4 {
                    // SAFETY: the caller guarantees `blocks * 64` bytes in
                    // `data[l]`; this reads bytes blk*64 + 16g .. +16 of
                    // them.
                    let raw = unsafe {
                        _mm_loadu_si128(
                            data[l].as_ptr().add(blk * BLOCK + 16 * g).cast::<__m128i>(),
                        )
                    };
                    _mm_shuffle_epi8(raw, bswap)
                } else {
                    // W[4g..4g+4] from the four groups before it.
                    let m = &w[l];
                    let t = _mm_sha256msg1_epu32(m[g % 4], m[(g + 1) % 4]);
                    let t = _mm_add_epi32(t, _mm_alignr_epi8(m[(g + 3) % 4], m[(g + 2) % 4], 4));
                    _mm_sha256msg2_epu32(t, m[(g + 3) % 4])
                };
                w[l][g % 4] = words;
                let wk = _mm_add_epi32(words, k);
                cdgh[l] = _mm_sha256rnds2_epu32(cdgh[l], abef[l], wk);
                abef[l] = _mm_sha256rnds2_epu32(abef[l], cdgh[l], _mm_shuffle_epi32(wk, 0x0e));
            }
        }
        for l in 0..N {
            abef[l] = _mm_add_epi32(abef[l], abef0[l]);
            cdgh[l] = _mm_add_epi32(cdgh[l], cdgh0[l]);
        }
    }
    for l in 0..N {
        let feba = _mm_shuffle_epi32(abef[l], 0x1b);
        let dchg = _mm_shuffle_epi32(cdgh[l], 0xb1);
        let dcba = _mm_blend_epi16(feba, dchg, 0xf0);
        let hgfe = _mm_alignr_epi8(dchg, feba, 8);
        // SAFETY: `states[l]` is 8 u32s: two unaligned 16-byte stores.
        unsafe {
            _mm_storeu_si128(states[l].as_mut_ptr().cast::<__m128i>(), dcba);
            _mm_storeu_si128(states[l].as_mut_ptr().add(4).cast::<__m128i>(), hgfe);
        }
    }
}

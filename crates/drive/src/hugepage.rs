//! Buffer memory in transparent huge pages.
//!
//! Shard records go to the kernel straight from their buffers (`O_DIRECT`).
//! In 4 KiB pages every transfer pins each page on its own, and each page
//! is a scatter-gather segment of the block request, which carries at most
//! `max_segments` of them (254 on virtio-blk): a batch of records is split
//! into many requests. A buffer inside a 2 MiB huge page is physically
//! contiguous: one pin and one segment. Measured on 16 MiB PUTs: 1.44x the
//! MiB/s and 1.18x the MiB per CPU-second (docs/benchmarks.md).
//!
//! Buffers of at least [`MIN_BYTES`] are carved from *regions*: anonymous
//! mappings aligned to [`HUGE_PAGE`] and advised `MADV_HUGEPAGE` before
//! anything touches them, so the kernel backs them with huge pages when it
//! has free ones (and with small pages otherwise: nothing fails). Buffers
//! of one size are carved one after the other from the current region of
//! that size; a region is unmapped when the last buffer carved from it is
//! dropped. No range is ever carved twice, so a new buffer is fresh,
//! zeroed memory. The waste is a region's tail too short for one more
//! buffer (less than half of it for buffers up to half a region); a buffer
//! larger than a region gets a region of its own, rounded up to whole huge
//! pages.
//!
//! Off where the kernel has no transparent huge pages or its
//! `transparent_hugepage/enabled` is `never`, and after
//! [`set_huge_pages(false)`](set_huge_pages) (the daemon's
//! `TESSERA_HUGE_PAGES=off`); buffers then come from the global allocator.

use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::buf::ALIGN;

/// Size and alignment of a transparent huge page on x86-64 and of the
/// regions buffers are carved from.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// Smallest buffer carved from a region: smaller ones (`xl.meta`, small
/// objects) are few pages, and mostly not handed to `O_DIRECT`.
pub(crate) const MIN_BYTES: usize = 64 << 10;

/// Most buffer sizes with a current region of their own. Pools use a few
/// sizes; a process asking for more gets the extra sizes from the global
/// allocator rather than a map that grows.
const MAX_SIZES: usize = 16;

const UNSET: u8 = 0;
const ON: u8 = 1;
const OFF: u8 = 2;

/// The process-wide switch ([`set_huge_pages`]).
static SWITCH: AtomicU8 = AtomicU8::new(UNSET);

/// Turns carving large buffers from huge-page regions on or off for the
/// whole process, from the next allocation on (buffers already carved stay
/// where they are). On by default where the kernel offers transparent huge
/// pages.
pub fn set_huge_pages(on: bool) {
    SWITCH.store(if on { ON } else { OFF }, Ordering::Relaxed);
}

/// Whether large buffers are carved from huge-page regions: the switch is
/// on and the kernel offers transparent huge pages.
pub fn huge_pages() -> bool {
    SWITCH.load(Ordering::Relaxed) != OFF && kernel_offers_thp()
}

fn kernel_offers_thp() -> bool {
    static OFFERS: OnceLock<bool> = OnceLock::new();
    *OFFERS.get_or_init(|| {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|mode| thp_mode_allows_madvise(&mode))
    })
}

/// Whether a `transparent_hugepage/enabled` setting (the selected mode in
/// brackets) gives huge pages to `MADV_HUGEPAGE` mappings.
fn thp_mode_allows_madvise(mode: &str) -> bool {
    mode.contains("[always]") || mode.contains("[madvise]")
}

/// An anonymous mapping of `len` bytes (a multiple of [`HUGE_PAGE`]) at a
/// [`HUGE_PAGE`]-aligned address, unmapped on drop.
pub(crate) struct Region {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: a Region owns its mapping and only unmaps it on drop; the bytes
// are reached through the pieces carved from it, whose owners (`RawAlloc`)
// uphold Rust's aliasing rules themselves.
unsafe impl Send for Region {}
// SAFETY: as above; a shared Region hands out nothing but its address.
unsafe impl Sync for Region {}

impl Region {
    /// Maps a region of at least `bytes`, advised for huge pages. `None`
    /// when the kernel refuses the mapping.
    fn map(bytes: usize) -> Option<Region> {
        let len = bytes.checked_next_multiple_of(HUGE_PAGE)?;
        // Room to slide to an aligned start; the slack is unmapped below.
        let span = len.checked_add(HUGE_PAGE)?;
        // SAFETY: a new private anonymous mapping at an address of the
        // kernel's choosing: it aliases nothing.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return None;
        }
        let start = raw as usize;
        let base = start.next_multiple_of(HUGE_PAGE);
        let (head, tail) = (base - start, span - (base - start) - len);
        // SAFETY: both ranges lie inside the mapping just made, outside
        // [base, base + len), and nothing refers to them.
        unsafe {
            if head > 0 {
                libc::munmap(raw, head);
            }
            if tail > 0 {
                libc::munmap((base + len) as *mut libc::c_void, tail);
            }
        }
        // SAFETY: [base, base + len) is mapped and untouched. The advice
        // only changes which pages back it; failure (a kernel without
        // THP) leaves small pages, which is fine.
        unsafe {
            libc::madvise(base as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        Some(Region {
            base: NonNull::new(base as *mut u8)?,
            len,
        })
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `Region::map`, unmapped once; the
        // pieces carved from it hold an `Arc` of the region, so none is
        // alive when this runs.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

/// `capacity` bytes of a region, kept mapped while the piece lives.
pub(crate) struct Piece {
    pub(crate) ptr: NonNull<u8>,
    _region: Arc<Region>,
}

/// The current region of each buffer size, and how far it is carved.
#[derive(Default)]
pub(crate) struct Carver {
    current: Mutex<HashMap<usize, (Arc<Region>, usize)>>,
}

impl Carver {
    /// The process's carver.
    pub(crate) fn global() -> &'static Carver {
        static GLOBAL: OnceLock<Carver> = OnceLock::new();
        GLOBAL.get_or_init(Carver::default)
    }

    /// A fresh, zeroed, [`ALIGN`]-aligned piece of `capacity` bytes (a
    /// multiple of [`ALIGN`], at least [`MIN_BYTES`]). `None` when the size
    /// does not qualify, too many sizes have regions, or the kernel
    /// refuses a mapping: the caller allocates elsewhere.
    pub(crate) fn carve(&self, capacity: usize) -> Option<Piece> {
        if capacity < MIN_BYTES || !capacity.is_multiple_of(ALIGN) {
            return None;
        }
        if capacity > HUGE_PAGE / 2 {
            // One per region: a region of its own, carved whole.
            let region = Arc::new(Region::map(capacity)?);
            return Some(Piece {
                ptr: region.base,
                _region: region,
            });
        }
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((region, next)) = current.get_mut(&capacity)
            && *next + capacity <= region.len
        {
            // SAFETY: `next + capacity <= len`: inside the mapping.
            let ptr = unsafe { region.base.add(*next) };
            *next += capacity;
            return Some(Piece {
                ptr,
                _region: Arc::clone(region),
            });
        }
        if current.len() >= MAX_SIZES && !current.contains_key(&capacity) {
            return None;
        }
        // The old region (if any) lives on in the pieces carved from it.
        let region = Arc::new(Region::map(HUGE_PAGE)?);
        let piece = Piece {
            ptr: region.base,
            _region: Arc::clone(&region),
        };
        current.insert(capacity, (region, capacity));
        Some(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether all `len` bytes of `p` are `v`.
    fn all(p: &Piece, len: usize, v: u8) -> bool {
        // SAFETY: test: `len` bytes are carved for the piece, and nothing
        // writes them meanwhile.
        unsafe { std::slice::from_raw_parts(p.ptr.as_ptr(), len) }
            .iter()
            .all(|&x| x == v)
    }

    fn fill(p: &Piece, len: usize, v: u8) {
        // SAFETY: test: `len` bytes are carved for the piece, and no other
        // reference to them exists meanwhile.
        unsafe { std::ptr::write_bytes(p.ptr.as_ptr(), v, len) }
    }

    #[test]
    fn pieces_are_aligned_zeroed_and_apart() {
        let carver = Carver::default();
        let cap = 528 << 10;
        let pieces: Vec<Piece> = (0..7).map(|_| carver.carve(cap).unwrap()).collect();
        for (i, p) in pieces.iter().enumerate() {
            assert_eq!(p.ptr.as_ptr() as usize % ALIGN, 0);
            assert!(all(p, cap, 0), "piece {i} not zeroed");
            fill(p, cap, i as u8 + 1);
        }
        // Nobody wrote into another's bytes.
        for (i, p) in pieces.iter().enumerate() {
            assert!(all(p, cap, i as u8 + 1));
        }
        // Three 528 KiB pieces per 2 MiB region, at 2 MiB-aligned starts.
        let base = |p: &Piece| p.ptr.as_ptr() as usize;
        assert_eq!(base(&pieces[0]) % HUGE_PAGE, 0);
        assert_eq!(base(&pieces[1]), base(&pieces[0]) + cap);
        assert_eq!(base(&pieces[2]), base(&pieces[0]) + 2 * cap);
        assert_eq!(base(&pieces[3]) % HUGE_PAGE, 0);
        // Only the current region stays with the carver once all are gone.
        let first = Arc::downgrade(&pieces[0]._region);
        let current = Arc::downgrade(&pieces[6]._region);
        drop(pieces);
        assert!(
            first.upgrade().is_none(),
            "a full region outlived its pieces"
        );
        assert!(current.upgrade().is_some());
    }

    #[test]
    fn sizes_that_do_not_qualify_go_elsewhere() {
        let carver = Carver::default();
        assert!(carver.carve(MIN_BYTES - ALIGN).is_none());
        assert!(carver.carve(MIN_BYTES + 1).is_none());
        // Larger than half a region: a region of its own, whole pages.
        let big = carver.carve(HUGE_PAGE + ALIGN).unwrap();
        assert_eq!(big._region.len, 2 * HUGE_PAGE);
        assert_eq!(big.ptr.as_ptr() as usize % HUGE_PAGE, 0);
        assert!(all(&big, HUGE_PAGE + ALIGN, 0));
        // A bounded number of sizes with a current region.
        for i in 0..MAX_SIZES {
            assert!(carver.carve(MIN_BYTES + i * ALIGN).is_some());
        }
        assert!(carver.carve(MIN_BYTES + MAX_SIZES * ALIGN).is_none());
        assert!(carver.carve(MIN_BYTES).is_some(), "a known size still is");
    }

    #[test]
    fn the_kernel_setting_is_read_from_its_brackets() {
        assert!(thp_mode_allows_madvise("always [madvise] never\n"));
        assert!(thp_mode_allows_madvise("[always] madvise never\n"));
        assert!(!thp_mode_allows_madvise("always madvise [never]\n"));
        assert!(!thp_mode_allows_madvise(""));
    }
}

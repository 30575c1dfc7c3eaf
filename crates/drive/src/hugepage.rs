//! Buffer memory in transparent huge pages.
//!
//! Shard records go to the kernel straight from their buffers (`O_DIRECT`).
//! In 4 KiB pages every transfer pins each page on its own, and each page
//! is a scatter-gather segment of the block request, which carries at most
//! `max_segments` of them (254 on virtio-blk): a batch of records is split
//! into many requests. A buffer inside a 2 MiB huge page is physically
//! contiguous: one pin and one segment. Measured on 16 MiB PUTs, huge pages
//! on against `TESSERA_HUGE_PAGES=off` in one binary: 1.44x the MiB/s and
//! 1.18x the MiB per CPU-second (to measure again: `tessera-bench compare
//! --op put --obj-size 16MiB --concurrent 8` against two servers, one with
//! each setting; docs/bench-notes/put.md).
//!
//! A [`BufferPool`](crate::BufferPool)'s buffers of at least [`MIN_BYTES`]
//! (record buffers: one size per pool, kept for reuse; other buffers come
//! from the heap) are carved from *regions*: anonymous mappings aligned to
//! [`HUGE_PAGE`] and advised `MADV_HUGEPAGE` before anything touches them,
//! so the kernel backs them with huge pages when it has free ones (and with
//! small pages otherwise: nothing fails). The regions of one buffer size
//! form a slab: a buffer the pool frees goes back to its region and is
//! handed out again before anything new is carved, from the region with
//! the most buffers out, so that the others drain; a region with no buffer
//! out is unmapped. Memory is then the buffers out plus, per size, at most
//! the free pieces of partly used regions. The waste is a region's tail
//! too short for one more buffer (less than half of it for buffers up to
//! half a region); a buffer larger than that gets a region of its own,
//! rounded up to whole huge pages.
//!
//! Off where the kernel has no transparent huge pages or its
//! `transparent_hugepage/enabled` is `never`, and after
//! [`set_huge_pages(false)`](set_huge_pages) (the daemon's
//! `TESSERA_HUGE_PAGES=off`); buffers then come from the global allocator.

use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::buf::ALIGN;

/// Size and alignment of a transparent huge page on x86-64 and of the
/// regions buffers are carved from.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// Smallest buffer carved from a region: smaller ones (`xl.meta`, small
/// objects) are few pages, and mostly not handed to `O_DIRECT`.
pub(crate) const MIN_BYTES: usize = 64 << 10;

/// Most buffer sizes with a slab. Pools use a few sizes; a process asking
/// for more gets the extra sizes from the global allocator rather than a
/// map that grows.
const MAX_SIZES: usize = 16;

const UNSET: u8 = 0;
const ON: u8 = 1;
const OFF: u8 = 2;

/// The process-wide switch ([`set_huge_pages`]).
static SWITCH: AtomicU8 = AtomicU8::new(UNSET);

/// Bytes mapped in regions, all carvers together.
static MAPPED: AtomicUsize = AtomicUsize::new(0);

/// Bytes of the process's memory mapped in huge-page regions for buffers
/// (in use, or free in a region that still has buffers out).
pub fn huge_page_region_bytes() -> usize {
    MAPPED.load(Ordering::Relaxed)
}

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

/// Whether this kernel hands free memory back to its hypervisor: a virtio
/// balloon with free page reporting (`VIRTIO_BALLOON_F_REPORTING`), which
/// tells the host about every free block of 2 MiB or more, so that the host
/// can drop what backs it. The first touch of such a block afterwards costs
/// the host a fault per page, charged to the guest's CPU, and huge folios
/// are always allocated from such blocks: on a guest measured with it, a
/// cold GET filled in huge folios ([`LocalDriveConfig::huge_fill`](crate::LocalDriveConfig::huge_fill)) took
/// 3-4x the CPU of one filled by `read(2)`, 10 s after `drop_caches`
/// (docs/bench-notes/get.md). Read from
/// sysfs; `false` where there is no virtio bus.
pub fn free_page_reporting() -> bool {
    let Ok(devices) = std::fs::read_dir("/sys/bus/virtio/devices") else {
        return false;
    };
    devices.flatten().any(|d| {
        let read = |f: &str| std::fs::read_to_string(d.path().join(f)).unwrap_or_default();
        reports_free_pages(&read("device"), &read("features"))
    })
}

/// Whether a virtio device of sysfs's `device` and `features` (one `0` or
/// `1` per feature bit, bit 0 first) is a balloon (device 5) that reports
/// free pages (feature bit 5).
fn reports_free_pages(device: &str, features: &str) -> bool {
    device.trim() == "0x0005" && features.trim().as_bytes().get(5) == Some(&b'1')
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
        let region = Region {
            base: NonNull::new(base as *mut u8)?,
            len,
        };
        MAPPED.fetch_add(len, Ordering::Relaxed);
        Some(region)
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
        MAPPED.fetch_sub(self.len, Ordering::Relaxed);
    }
}

/// `capacity` bytes of a region. Dropping it gives the bytes back to its
/// carver (or unmaps its own region).
pub(crate) struct Piece {
    pub(crate) ptr: NonNull<u8>,
    home: Home,
}

enum Home {
    /// A region of its own (larger than half a region), unmapped with
    /// the piece.
    Own { _region: Region },
    /// Piece `index` of a region of `carver`'s slab of its size.
    Slab {
        carver: &'static Carver,
        size: usize,
        base: usize,
    },
}

impl Drop for Piece {
    fn drop(&mut self) {
        if let Home::Slab { carver, size, base } = self.home {
            carver.give_back(size, base, self.ptr.as_ptr() as usize);
        }
    }
}

/// The regions of one piece size.
struct Slab {
    /// Pieces per region (at least 2).
    per_region: usize,
    regions: Vec<SlabRegion>,
}

struct SlabRegion {
    region: Region,
    /// Indices of pieces given back, for reuse.
    free: Vec<usize>,
    /// Pieces carved so far (`0..carved` have been handed out).
    carved: usize,
    /// Pieces out now.
    live: usize,
}

/// Slabs of huge-page regions, one per piece size.
///
/// A piece given back is reused for the next piece of its size, taken from
/// the region with the most pieces out (so that the others drain), and a
/// region whose pieces are all back is unmapped. Reused pieces hold
/// whatever their last owner wrote: initialised memory, like a pool's
/// reused buffers (which are the only callers).
#[derive(Default)]
pub(crate) struct Carver {
    slabs: Mutex<HashMap<usize, Slab>>,
}

impl Carver {
    /// The process's carver.
    pub(crate) fn global() -> &'static Carver {
        static GLOBAL: OnceLock<Carver> = OnceLock::new();
        GLOBAL.get_or_init(Carver::default)
    }

    /// An [`ALIGN`]-aligned piece of `capacity` bytes (a multiple of
    /// [`ALIGN`], at least [`MIN_BYTES`]): fresh zeroed memory or a piece
    /// given back. `None` when the size does not qualify, too many sizes
    /// have slabs, or the kernel refuses a mapping: the caller allocates
    /// elsewhere.
    pub(crate) fn carve(&'static self, capacity: usize) -> Option<Piece> {
        if capacity < MIN_BYTES || !capacity.is_multiple_of(ALIGN) {
            return None;
        }
        if capacity > HUGE_PAGE / 2 {
            let region = Region::map(capacity)?;
            return Some(Piece {
                ptr: region.base,
                home: Home::Own { _region: region },
            });
        }
        let mut slabs = self.slabs.lock().unwrap_or_else(|p| p.into_inner());
        if slabs.len() >= MAX_SIZES && !slabs.contains_key(&capacity) {
            return None;
        }
        let slab = slabs.entry(capacity).or_insert_with(|| Slab {
            per_region: HUGE_PAGE / capacity,
            regions: Vec::new(),
        });
        // A piece given back, from the busiest region; else the next
        // uncarved one; else a new region.
        let reuse = slab
            .regions
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.free.is_empty())
            .max_by_key(|(_, r)| r.live)
            .map(|(i, _)| i);
        let (r, index) = match reuse {
            Some(r) => (r, slab.regions[r].free.pop()?),
            None => {
                let r = match slab.regions.iter().position(|r| r.carved < slab.per_region) {
                    Some(r) => r,
                    None => {
                        slab.regions.push(SlabRegion {
                            region: Region::map(HUGE_PAGE)?,
                            free: Vec::new(),
                            carved: 0,
                            live: 0,
                        });
                        slab.regions.len() - 1
                    }
                };
                let region = &mut slab.regions[r];
                region.carved += 1;
                (r, region.carved - 1)
            }
        };
        let region = &mut slab.regions[r];
        region.live += 1;
        // SAFETY: `index < per_region`, so the piece's `capacity` bytes
        // lie inside the region's `HUGE_PAGE` bytes.
        let ptr = unsafe { region.region.base.add(index * capacity) };
        Some(Piece {
            ptr,
            home: Home::Slab {
                carver: self,
                size: capacity,
                base: region.region.base.as_ptr() as usize,
            },
        })
    }

    /// Takes back the piece at `ptr` of size `size` from the region at
    /// `base`; unmaps the region when it was its last piece out.
    fn give_back(&self, size: usize, base: usize, ptr: usize) {
        let mut slabs = self.slabs.lock().unwrap_or_else(|p| p.into_inner());
        let Some(slab) = slabs.get_mut(&size) else {
            return;
        };
        let Some(r) = slab
            .regions
            .iter()
            .position(|r| r.region.base.as_ptr() as usize == base)
        else {
            return;
        };
        let region = &mut slab.regions[r];
        region.live -= 1;
        if region.live == 0 {
            // Unmapped on drop, with every piece back.
            slab.regions.swap_remove(r);
        } else {
            region.free.push((ptr - base) / size);
        }
    }

    /// Regions mapped for slabs, and pieces out (for tests).
    #[cfg(test)]
    fn counts(&self) -> (usize, usize) {
        let slabs = self.slabs.lock().unwrap();
        let regions = slabs.values().map(|s| s.regions.len()).sum();
        let live = slabs
            .values()
            .flat_map(|s| &s.regions)
            .map(|r| r.live)
            .sum();
        (regions, live)
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

    fn at(p: &Piece) -> usize {
        p.ptr.as_ptr() as usize
    }

    fn carver() -> &'static Carver {
        Box::leak(Box::default())
    }

    #[test]
    fn pieces_are_aligned_zeroed_and_apart() {
        let carver = carver();
        let cap = 528 << 10;
        let pieces: Vec<Piece> = (0..7).map(|_| carver.carve(cap).unwrap()).collect();
        for (i, p) in pieces.iter().enumerate() {
            assert_eq!(at(p) % ALIGN, 0);
            assert!(all(p, cap, 0), "piece {i} not zeroed");
            fill(p, cap, i as u8 + 1);
        }
        // Nobody wrote into another's bytes.
        for (i, p) in pieces.iter().enumerate() {
            assert!(all(p, cap, i as u8 + 1));
        }
        // Three 528 KiB pieces per 2 MiB region, at 2 MiB-aligned starts.
        assert_eq!(at(&pieces[0]) % HUGE_PAGE, 0);
        assert_eq!(at(&pieces[1]), at(&pieces[0]) + cap);
        assert_eq!(at(&pieces[2]), at(&pieces[0]) + 2 * cap);
        assert_eq!(at(&pieces[3]) % HUGE_PAGE, 0);
        assert_eq!(carver.counts(), (3, 7));
        // Every region is unmapped once its pieces are all back.
        drop(pieces);
        assert_eq!(carver.counts(), (0, 0));
    }

    #[test]
    fn pieces_given_back_are_reused_from_the_busiest_region() {
        let carver = carver();
        let cap = 512 << 10;
        // Two regions of four: a, then b.
        let mut a: Vec<Piece> = (0..4).map(|_| carver.carve(cap).unwrap()).collect();
        let mut b: Vec<Piece> = (0..4).map(|_| carver.carve(cap).unwrap()).collect();
        assert_eq!(carver.counts(), (2, 8));
        // b drains to one piece out, a gives one back.
        let b_kept = b.remove(0);
        drop(b);
        let a_freed = at(&a[1]);
        a.remove(1);
        assert_eq!(carver.counts(), (2, 4));
        // The next piece comes from a (three out), not b (one): b drains.
        let again = carver.carve(cap).unwrap();
        assert_eq!(at(&again), a_freed);
        fill(&again, cap, 9);
        // Then from b's free pieces; no new region while any is free.
        let more: Vec<Piece> = (0..3).map(|_| carver.carve(cap).unwrap()).collect();
        assert_eq!(carver.counts(), (2, 8));
        let b_base = at(&b_kept) - at(&b_kept) % HUGE_PAGE;
        assert!(more.iter().all(|p| at(p) - at(p) % HUGE_PAGE == b_base));
        drop((a, b_kept, again, more));
        assert_eq!(carver.counts(), (0, 0));
    }

    #[test]
    fn sizes_that_do_not_qualify_go_elsewhere() {
        let carver = carver();
        assert!(carver.carve(MIN_BYTES - ALIGN).is_none());
        assert!(carver.carve(MIN_BYTES + 1).is_none());
        // Larger than half a region: a region of its own, whole pages.
        let big = carver.carve(HUGE_PAGE + ALIGN).unwrap();
        assert!(matches!(&big.home, Home::Own { _region } if _region.len == 2 * HUGE_PAGE));
        assert_eq!(at(&big) % HUGE_PAGE, 0);
        assert!(all(&big, HUGE_PAGE + ALIGN, 0));
        assert_eq!(carver.counts(), (0, 0), "not in a slab");
        // A bounded number of sizes with slabs.
        let held: Vec<Piece> = (0..MAX_SIZES)
            .map(|i| carver.carve(MIN_BYTES + i * ALIGN).unwrap())
            .collect();
        assert!(carver.carve(MIN_BYTES + MAX_SIZES * ALIGN).is_none());
        assert!(carver.carve(MIN_BYTES).is_some(), "a known size still is");
        drop(held);
    }

    #[test]
    fn threads_carving_and_giving_back_never_share_a_byte() {
        let carver = carver();
        let sizes = [MIN_BYTES, 516 << 10, HUGE_PAGE / 2];
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                std::thread::spawn(move || {
                    // The test's own choices, seeded per thread.
                    let mut rng = fastrand::Rng::with_seed(t + 1);
                    let mut next = move || rng.u64(..);
                    let mut held: Vec<(Piece, usize, u8)> = Vec::new();
                    for i in 0..3000u64 {
                        let r = next();
                        if held.len() < 6 && (r % 3 != 0 || held.is_empty()) {
                            let cap = sizes[(r >> 8) as usize % sizes.len()];
                            let p = carver.carve(cap).unwrap();
                            assert_eq!(at(&p) % ALIGN, 0);
                            for (q, qcap, _) in &held {
                                let apart = at(&p) + cap <= at(q) || at(q) + qcap <= at(&p);
                                assert!(apart, "thread {t}: two pieces out overlap");
                            }
                            // A value of this thread's own: a piece that
                            // aliased another thread's would be overwritten.
                            let v = (t as u8) * 61 + (i % 60) as u8 + 1;
                            fill(&p, cap, v);
                            held.push((p, cap, v));
                        } else {
                            let (p, cap, v) = held.swap_remove((r >> 16) as usize % held.len());
                            assert!(
                                all(&p, cap, v),
                                "thread {t}: a piece was written by another"
                            );
                        }
                    }
                    for (p, cap, v) in held {
                        assert!(
                            all(&p, cap, v),
                            "thread {t}: a piece was written by another"
                        );
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(carver.counts(), (0, 0), "every region unmapped at the end");
    }

    #[test]
    fn free_page_reporting_from_sysfs_strings() {
        // The balloon of the machine this was measured on: bits 1, 2, 5
        // (statistics, deflate on OOM, free page reporting), 7 and 32
        // (VIRTIO_F_VERSION_1).
        let balloon = "0110010100000000000000000000000010000000000000000000000000000000\n";
        assert!(reports_free_pages("0x0005\n", balloon));
        // The same balloon without reporting; reporting bits on other
        // devices (a block device, 2) say nothing.
        let quiet = "0110000100000000000000000000000010000000000000000000000000000000\n";
        assert!(!reports_free_pages("0x0005\n", quiet));
        assert!(!reports_free_pages("0x0002\n", balloon));
        assert!(!reports_free_pages("", ""));
        assert!(!reports_free_pages("0x0005", "01100"));
    }

    #[test]
    fn the_kernel_setting_is_read_from_its_brackets() {
        assert!(thp_mode_allows_madvise("always [madvise] never\n"));
        assert!(thp_mode_allows_madvise("[always] madvise never\n"));
        assert!(!thp_mode_allows_madvise("always madvise [never]\n"));
        assert!(!thp_mode_allows_madvise(""));
    }
}

//! A bounded latency histogram in microseconds: exact below 128 us, then 64
//! buckets per power of two (relative error under 1/64 = 1.6%), up to 2^40
//! us (12.7 days; larger values are clamped). 2,304 counters whatever the
//! number of samples, so a long run cannot grow memory.

use serde::Serialize;

const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
const EXACT: u64 = 2 * SUB;
const MAX_EXP: u32 = 40;
/// Number of buckets.
pub const BUCKETS: usize = (EXACT + (MAX_EXP as u64 - SUB_BITS as u64) * SUB) as usize;
/// The largest value kept exactly in `max` (larger ones are clamped).
pub const MAX_VALUE: u64 = (1 << MAX_EXP) - 1;

#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

fn index(v: u64) -> usize {
    let v = v.min(MAX_VALUE);
    if v < EXACT {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= SUB_BITS + 1
    let shift = e - SUB_BITS;
    let sub = (v >> shift) - SUB;
    (EXACT + u64::from(e - SUB_BITS - 1) * SUB + sub) as usize
}

/// The lowest value and the width of bucket `i`.
fn bucket_range(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < EXACT {
        return (i, 1);
    }
    let j = i - EXACT;
    let e = (j / SUB) as u32 + SUB_BITS + 1;
    let sub = j % SUB;
    let shift = e - SUB_BITS;
    ((SUB + sub) << shift, 1 << shift)
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS],
            total: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    pub fn record(&mut self, micros: u64) {
        let v = micros.min(MAX_VALUE);
        self.counts[index(v)] += 1;
        self.total += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    pub fn min(&self) -> u64 {
        if self.total == 0 { 0 } else { self.min }
    }

    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum as f64 / self.total as f64
        }
    }

    /// The `q` quantile (`0 < q <= 1`) by nearest rank: the value of the
    /// sample of rank `ceil(q * n)`, given as the middle of its bucket
    /// (exact below 128 us), never above the largest sample nor below the
    /// smallest. 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let q = q.clamp(0.0, 1.0);
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, width) = bucket_range(i);
                let mid = lo + (width - 1) / 2;
                return mid.clamp(self.min, self.max);
            }
        }
        self.max
    }

    pub fn summary(&self) -> LatencySummary {
        let ms = |us: u64| us as f64 / 1000.0;
        LatencySummary {
            count: self.total,
            mean_ms: self.mean() / 1000.0,
            min_ms: ms(self.min()),
            p50_ms: ms(self.quantile(0.50)),
            p90_ms: ms(self.quantile(0.90)),
            p99_ms: ms(self.quantile(0.99)),
            max_ms: ms(self.max),
        }
    }
}

/// Latency figures in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ms: f64,
    pub min_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// The median of `values` (mean of the middle two for an even count);
/// `None` when empty. NaNs are ignored.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

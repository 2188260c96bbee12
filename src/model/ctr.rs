//! CTR features: statistics of categorical values (and their combinations)
//! learned at training time, stored per bucket hash, turned into one float per
//! document. Formulas follow CatBoost's `static_ctr_provider.cpp` and
//! `TModelCtr::Calc` (`online_ctr.h`), including their `float` arithmetic.

/// The CTR types CatBoost can put in a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CtrKind {
    Borders,
    Buckets,
    BinarizedTargetMeanValue,
    FloatTargetMeanValue,
    Counter,
    FeatureFreq,
}

impl CtrKind {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "Borders" => Self::Borders,
            "Buckets" => Self::Buckets,
            "BinarizedTargetMeanValue" => Self::BinarizedTargetMeanValue,
            "FloatTargetMeanValue" => Self::FloatTargetMeanValue,
            "Counter" => Self::Counter,
            "FeatureFreq" => Self::FeatureFreq,
            _ => return None,
        })
    }

    /// How the table stores a bucket.
    pub(crate) fn layout(self) -> TableLayout {
        match self {
            Self::Borders | Self::Buckets => TableLayout::ClassCounts,
            Self::BinarizedTargetMeanValue | Self::FloatTargetMeanValue => TableLayout::SumCount,
            Self::Counter | Self::FeatureFreq => TableLayout::Count,
        }
    }
}

/// What follows each bucket hash in `hash_map`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableLayout {
    /// One integer counter per target class (`hash_stride - 1` classes).
    ClassCounts,
    /// A float sum of targets and an integer count.
    SumCount,
    /// One integer counter; the table also has a `counter_denominator`.
    Count,
}

/// Bucket hash → bucket statistics: open addressing with linear probing,
/// each record holding the key and the values inline, so a lookup touches
/// one cache line in the common case. Built once at load; lookups never
/// allocate.
#[derive(Debug)]
pub(crate) struct CtrTable {
    /// Power-of-two many records of `record` words: the key's low and high
    /// halves, then the values (counters as `i32` bits; for SumCount the
    /// sum's `f32` bits, then the count).
    cells: Vec<u32>,
    record: usize,
    /// Records - 1.
    mask: usize,
    /// 64 - log2(records), for the home position.
    shift: u32,
    /// A key no bucket has: marks empty records.
    empty: u64,
    /// Integer counters per bucket (class counters, or the single count).
    stride: usize,
    pub(crate) counter_denominator: i32,
}

impl CtrTable {
    /// Builds a table of `keys.len()` buckets: bucket `i` has the counters
    /// `ints[i * stride..][..stride]` and, for SumCount, the sum `sums[i]`.
    /// Fails with the index of a repeated key.
    pub(crate) fn build(
        layout: TableLayout,
        stride: usize,
        keys: &[u64],
        ints: &[i32],
        sums: &[f32],
        counter_denominator: i32,
    ) -> Result<Self, usize> {
        let mut sorted = keys.to_vec();
        sorted.sort_unstable();
        let empty = absent_key(&sorted);
        let records = record_count(keys.len());
        let record = 2 + stride + usize::from(layout == TableLayout::SumCount);
        let mut cells = vec![0u32; records * record];
        for r in 0..records {
            cells[r * record] = empty as u32;
            cells[r * record + 1] = (empty >> 32) as u32;
        }
        let mut table = CtrTable {
            cells,
            record,
            mask: records - 1,
            shift: 64 - records.trailing_zeros(),
            empty,
            stride,
            counter_denominator,
        };
        for (i, &key) in keys.iter().enumerate() {
            let mut at = table.home(key);
            loop {
                let stored = table.key_at(at);
                if stored == empty {
                    break;
                }
                if stored == key {
                    return Err(i);
                }
                at = (at + 1) & table.mask;
            }
            let base = at * record;
            table.cells[base] = key as u32;
            table.cells[base + 1] = (key >> 32) as u32;
            let mut w = base + 2;
            if layout == TableLayout::SumCount {
                table.cells[w] = sums[i].to_bits();
                w += 1;
            }
            for (k, &v) in ints[i * stride..(i + 1) * stride].iter().enumerate() {
                table.cells[w + k] = v as u32;
            }
        }
        Ok(table)
    }

    /// The number of integer counters per bucket.
    pub(crate) fn stride(&self) -> usize {
        self.stride
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        // Keys are products of CatBoost's multiplicative hash, whose low bits
        // are weak; take high bits of a second multiplication.
        // Tables have at least two records, so the shift is below 64.
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    #[inline]
    fn key_at(&self, record: usize) -> u64 {
        let base = record * self.record;
        u64::from(self.cells[base]) | u64::from(self.cells[base + 1]) << 32
    }

    /// Every bucket's key, in storage order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        (0..=self.mask)
            .map(|r| self.key_at(r))
            .filter(|&key| key != self.empty)
    }

    /// The bucket of `key` (an offset into the table), if training saw it.
    pub(crate) fn find(&self, key: u64) -> Option<usize> {
        if key == self.empty {
            return None;
        }
        let mut at = self.home(key);
        loop {
            let stored = self.key_at(at);
            if stored == key {
                return Some(at * self.record + 2);
            }
            if stored == self.empty {
                return None;
            }
            at = (at + 1) & self.mask;
        }
    }

    /// Counter `k` of a bucket of a table without sums.
    #[cfg(test)]
    fn int(&self, bucket: usize, k: usize) -> i32 {
        self.cells[bucket + k] as i32
    }
}

/// The smallest key not in `sorted` (ascending): it marks empty records.
fn absent_key(sorted: &[u64]) -> u64 {
    let mut empty = 0u64;
    for &k in sorted {
        if k == empty {
            empty += 1;
        } else if k > empty {
            break;
        }
    }
    empty
}

/// Records of an open-addressing table of `keys` keys: a power of two, at
/// most a quarter full. A probe's cost is its length (each record compared
/// is a branch on the document's key), not the table's memory: up to half
/// full was 8 % slower on the 1000-tree bench model, and dropping the keys
/// whose bits equal an unseen key's (half the records, longer probes for
/// the documents' common keys) 18 % slower.
fn record_count(keys: usize) -> usize {
    (keys.max(1) * 4).next_power_of_two()
}

/// Bucket key → the condition bits of the CTRs that read that bucket.
///
/// A CTR's value depends only on its bucket, and the trees only ask whether
/// it is above each of its used borders: so at load, for every key of the
/// tables of one projection (CatBoost keeps one table per CTR type: a
/// projection with Borders and Counter CTRs has two, with the same keys
/// or nearly), the answers of all the projection's CTRs are computed once (with [`CtrCalc::value_at`], CatBoost's `float`
/// formula) and stored as a 64-bit pattern next to the key (the plan splits
/// wider lookups into 64-bit pieces). Per document a CTR lookup is then one
/// probe and one OR of the pattern into the condition bits: no division, no
/// border search. Same open addressing as [`CtrTable`]; empty records hold
/// the marker key and the pattern of unseen keys, so a probe ends at the
/// first record whose key is the key or the marker, and a document key that
/// happens to equal the marker gets the unseen pattern, as it should.
#[derive(Debug)]
pub(crate) struct BucketBits {
    records: Vec<[u64; 2]>,
    mask: usize,
    shift: u32,
    empty: u64,
}

impl BucketBits {
    /// A table of `keys` (sorted, distinct), each with `pattern(Some(key))`,
    /// and `pattern(None)` for unseen keys.
    pub(crate) fn build(keys: &[u64], mut pattern: impl FnMut(Option<u64>) -> u64) -> Self {
        let records = record_count(keys.len());
        let empty = absent_key(keys);
        let mut bits = BucketBits {
            records: vec![[empty, pattern(None)]; records],
            mask: records - 1,
            shift: 64 - records.trailing_zeros(),
            empty,
        };
        for &key in keys {
            let mut at = bits.home(key);
            while bits.records[at][0] != bits.empty {
                at = (at + 1) & bits.mask;
            }
            bits.records[at] = [key, pattern(Some(key))];
        }
        bits
    }

    /// Every key the table holds, in storage order (load time).
    pub(crate) fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.records
            .iter()
            .map(|r| r[0])
            .filter(move |&k| k != self.empty)
    }

    /// The pattern of `key`, `None` meaning a key training never saw (load
    /// time; per document use [`BucketBits::pattern`]).
    pub(crate) fn lookup(&self, key: Option<u64>) -> u64 {
        let key = key.unwrap_or(self.empty);
        self.pattern(key, self.home(key))
    }

    /// Where the probe for `key` starts.
    #[inline(always)]
    pub(crate) fn home(&self, key: u64) -> usize {
        // As CtrTable::home: high bits of a second multiplication.
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The record at `at` (a [`BucketBits::home`]), to prefetch.
    #[inline(always)]
    pub(crate) fn record(&self, at: usize) -> &[u64; 2] {
        &self.records[at & self.mask]
    }

    /// The condition bits for a document whose projection hashed to `key`,
    /// probing from `at = self.home(key)`.
    #[inline(always)]
    pub(crate) fn pattern(&self, key: u64, mut at: usize) -> u64 {
        loop {
            let [stored, pattern] = self.records[at & self.mask];
            if stored == key || stored == self.empty {
                return pattern;
            }
            at += 1;
        }
    }
}

/// Where a CTR's two numbers (count in class, total) are in its bucket,
/// decided once at load from the CTR type and the table's layout.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Counts {
    /// The float sum of targets, then the count: the mean-value CTRs.
    Mean,
    /// One counter over the table's `counter_denominator`: Counter,
    /// FeatureFreq.
    Counter,
    /// Two class counters: counter `good` over both (binary Borders and
    /// Buckets).
    Pair { good: usize },
    /// Counters `good.0..good.1` over all `classes` of them.
    Classes {
        good: (usize, usize),
        classes: usize,
    },
}

impl Counts {
    /// `static_ctr_provider.cpp`'s choice for `kind` over `table`: Borders
    /// counts the classes above the target border as "good", Buckets the
    /// target border's class.
    pub(crate) fn new(kind: CtrKind, target_border_idx: usize, table: &CtrTable) -> Self {
        let classes = table.stride();
        match kind {
            CtrKind::BinarizedTargetMeanValue | CtrKind::FloatTargetMeanValue => Self::Mean,
            CtrKind::Counter | CtrKind::FeatureFreq => Self::Counter,
            CtrKind::Borders if classes == 2 => Self::Pair { good: 1 },
            CtrKind::Buckets if classes == 2 => Self::Pair {
                good: target_border_idx,
            },
            CtrKind::Borders => Self::Classes {
                good: (target_border_idx + 1, classes),
                classes,
            },
            CtrKind::Buckets => Self::Classes {
                good: (target_border_idx, target_border_idx + 1),
                classes,
            },
        }
    }
}

/// One CTR feature of the model: a table plus the prior and the affine
/// transform CatBoost applies to the raw statistic.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CtrCalc {
    pub(crate) counts: Counts,
    pub(crate) prior_num: f32,
    pub(crate) prior_denom: f32,
    pub(crate) shift: f32,
    pub(crate) scale: f32,
}

impl CtrCalc {
    /// `TModelCtr::Calc`: all in `float`, as CatBoost computes it.
    #[inline]
    fn calc(&self, count_in_class: f32, total: f32) -> f32 {
        let ctr = (count_in_class + self.prior_num) / (total + self.prior_denom);
        (ctr + self.shift) * self.scale
    }

    /// The CTR value for a document whose projection hashed to `key`.
    #[cfg(test)]
    fn value(&self, table: &CtrTable, key: u64) -> f32 {
        self.value_at(table, table.find(key))
    }

    /// The CTR value for a document that fell in `bucket` of `table` (`None`:
    /// a value combination training never saw). Counter sums wrap in `i32`
    /// and are converted to `float` afterwards, as in CatBoost.
    #[inline(always)]
    pub(crate) fn value_at(&self, table: &CtrTable, bucket: Option<usize>) -> f32 {
        let Some(b) = bucket else {
            return match self.counts {
                Counts::Counter => self.calc(0.0, table.counter_denominator as f32),
                _ => self.calc(0.0, 0.0),
            };
        };
        let int = |k: usize| table.cells[b + k] as i32;
        match self.counts {
            Counts::Mean => self.calc(f32::from_bits(table.cells[b]), int(1) as f32),
            Counts::Counter => self.calc(int(0) as f32, table.counter_denominator as f32),
            Counts::Pair { good } => {
                self.calc(int(good) as f32, int(0).wrapping_add(int(1)) as f32)
            }
            Counts::Classes { good, classes } => {
                let sum =
                    |from: usize, to: usize| (from..to).fold(0i32, |s, k| s.wrapping_add(int(k)));
                self.calc(sum(good.0, good.1) as f32, sum(0, classes) as f32)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_finds_what_was_inserted_and_nothing_else() {
        // 0, 1 and u64::MAX are keys: the empty marker must avoid them.
        let keys: Vec<u64> = (0..100u64)
            .map(|k| k.wrapping_mul(0x4906_ba49_4954_cb65))
            .chain([1, u64::MAX])
            .collect();
        let ints: Vec<i32> = (0..keys.len() as i32).collect();
        let t = CtrTable::build(TableLayout::Count, 1, &keys, &ints, &[], 7).unwrap();
        for (i, &k) in keys.iter().enumerate() {
            let b = t.find(k).expect("inserted key is found");
            assert_eq!(t.int(b, 0), i as i32);
        }
        assert_eq!(t.find(12345), None);
        assert_eq!(t.find(2), None, "the empty marker itself is not a key");
        let dup = CtrTable::build(TableLayout::Count, 1, &[5, 6, 5], &[1, 2, 3], &[], 0);
        assert_eq!(dup.err(), Some(2), "duplicate keys are refused");
    }

    #[test]
    fn formulas_match_catboost_static_provider() {
        let calc = |kind, tbi, table: &CtrTable| CtrCalc {
            counts: Counts::new(kind, tbi, table),
            prior_num: 0.5,
            prior_denom: 1.0,
            shift: 0.0,
            scale: 15.0,
        };
        let two = CtrTable::build(TableLayout::ClassCounts, 2, &[9], &[3, 1], &[], 0).unwrap();
        assert_eq!(
            calc(CtrKind::Borders, 0, &two).value(&two, 9),
            (1.0 + 0.5) / (4.0 + 1.0) * 15.0
        );
        assert_eq!(
            calc(CtrKind::Buckets, 0, &two).value(&two, 9),
            (3.0 + 0.5) / (4.0 + 1.0) * 15.0
        );
        assert_eq!(
            calc(CtrKind::Borders, 0, &two).value(&two, 8),
            0.5 / 1.0 * 15.0
        );

        let three = CtrTable::build(TableLayout::ClassCounts, 3, &[9], &[1, 2, 4], &[], 0).unwrap();
        assert_eq!(
            calc(CtrKind::Borders, 0, &three).value(&three, 9),
            (6.0 + 0.5) / (7.0 + 1.0) * 15.0
        );
        assert_eq!(
            calc(CtrKind::Borders, 1, &three).value(&three, 9),
            (4.0 + 0.5) / (7.0 + 1.0) * 15.0
        );

        let counter = CtrTable::build(TableLayout::Count, 1, &[9], &[5], &[], 20).unwrap();
        assert_eq!(
            calc(CtrKind::Counter, 0, &counter).value(&counter, 9),
            (5.0 + 0.5) / (20.0 + 1.0) * 15.0
        );
        assert_eq!(
            calc(CtrKind::FeatureFreq, 0, &counter).value(&counter, 1),
            0.5 / 21.0 * 15.0
        );

        let mean = CtrTable::build(TableLayout::SumCount, 1, &[9], &[4], &[2.5], 0).unwrap();
        assert_eq!(
            calc(CtrKind::FloatTargetMeanValue, 0, &mean).value(&mean, 9),
            (2.5 + 0.5) / (4.0 + 1.0) * 15.0
        );
    }
}

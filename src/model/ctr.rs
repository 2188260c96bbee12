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

/// Marks an empty slot of [`CtrTable::slots`].
const EMPTY: u32 = u32::MAX;

/// Bucket hash → bucket statistics, open addressing with linear probing.
/// Built once at load; lookups never allocate.
#[derive(Debug)]
pub(crate) struct CtrTable {
    /// Power-of-two sized; each slot is an index into `keys`, or [`EMPTY`].
    slots: Vec<u32>,
    keys: Vec<u64>,
    /// `stride` integers per bucket (class counters or a single count).
    ints: Vec<i32>,
    /// Sums of the SumCount layout, one per bucket.
    sums: Vec<f32>,
    stride: usize,
    pub(crate) layout: TableLayout,
    pub(crate) counter_denominator: i32,
}

impl CtrTable {
    /// An empty table with room for `buckets` entries.
    pub(crate) fn with_capacity(
        layout: TableLayout,
        stride: usize,
        buckets: usize,
        counter_denominator: i32,
    ) -> Self {
        let capacity = (buckets.max(1) * 2).next_power_of_two();
        CtrTable {
            slots: vec![EMPTY; capacity],
            keys: Vec::with_capacity(buckets),
            ints: Vec::with_capacity(buckets * stride),
            sums: Vec::new(),
            stride,
            layout,
            counter_denominator,
        }
    }

    /// The number of integer counters per bucket.
    pub(crate) fn stride(&self) -> usize {
        self.stride
    }

    fn home(&self, key: u64) -> usize {
        // Keys are products of CatBoost's multiplicative hash, whose low bits
        // are weak; take high bits of a second multiplication.
        let bits = self.slots.len().trailing_zeros();
        if bits == 0 {
            return 0;
        }
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
    }

    /// Adds a bucket; `false` if the key is already present.
    pub(crate) fn insert(&mut self, key: u64, ints: &[i32], sum: f32) -> bool {
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        loop {
            match self.slots[at] {
                EMPTY => break,
                i if self.keys[i as usize] == key => return false,
                _ => at = (at + 1) & mask,
            }
        }
        self.slots[at] = self.keys.len() as u32;
        self.keys.push(key);
        self.ints.extend_from_slice(ints);
        if self.layout == TableLayout::SumCount {
            self.sums.push(sum);
        }
        true
    }

    /// The bucket index of `key`, if the training data had it.
    #[inline]
    pub(crate) fn find(&self, key: u64) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        loop {
            let i = self.slots[at];
            if i == EMPTY {
                return None;
            }
            if self.keys[i as usize] == key {
                return Some(i as usize);
            }
            at = (at + 1) & mask;
        }
    }

    #[inline]
    fn ints(&self, bucket: usize) -> &[i32] {
        &self.ints[bucket * self.stride..(bucket + 1) * self.stride]
    }
}

/// One CTR feature of the model: a table plus the prior and the affine
/// transform CatBoost applies to the raw statistic.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CtrCalc {
    pub(crate) kind: CtrKind,
    pub(crate) target_border_idx: usize,
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
    /// a value combination training never saw).
    #[inline]
    pub(crate) fn value_at(&self, table: &CtrTable, bucket: Option<usize>) -> f32 {
        match self.kind {
            CtrKind::BinarizedTargetMeanValue | CtrKind::FloatTargetMeanValue => match bucket {
                Some(b) => self.calc(table.sums[b], table.ints(b)[0] as f32),
                None => self.calc(0.0, 0.0),
            },
            CtrKind::Counter | CtrKind::FeatureFreq => {
                let denominator = table.counter_denominator as f32;
                match bucket {
                    Some(b) => self.calc(table.ints(b)[0] as f32, denominator),
                    None => self.calc(0.0, denominator),
                }
            }
            CtrKind::Buckets => match bucket {
                Some(b) => {
                    let counts = table.ints(b);
                    let total = counts.iter().fold(0i32, |a, &c| a.wrapping_add(c));
                    self.calc(counts[self.target_border_idx] as f32, total as f32)
                }
                None => self.calc(0.0, 0.0),
            },
            CtrKind::Borders => match bucket {
                Some(b) => {
                    let counts = table.ints(b);
                    if counts.len() > 2 {
                        // Classes above the target border count as "good".
                        let (below, above) = counts.split_at(self.target_border_idx + 1);
                        let good = above.iter().fold(0i32, |a, &c| a.wrapping_add(c));
                        let total = below.iter().fold(good, |a, &c| a.wrapping_add(c));
                        self.calc(good as f32, total as f32)
                    } else {
                        self.calc(counts[1] as f32, counts[0].wrapping_add(counts[1]) as f32)
                    }
                }
                None => self.calc(0.0, 0.0),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_finds_what_was_inserted_and_nothing_else() {
        let mut t = CtrTable::with_capacity(TableLayout::Count, 1, 100, 7);
        for k in 0..100u64 {
            assert!(t.insert(k.wrapping_mul(0x4906_ba49_4954_cb65), &[k as i32], 0.0));
        }
        assert!(!t.insert(0, &[1], 0.0), "duplicate keys are refused");
        for k in 0..100u64 {
            assert_eq!(
                t.find(k.wrapping_mul(0x4906_ba49_4954_cb65)),
                Some(k as usize)
            );
        }
        assert_eq!(t.find(12345), None);
        assert_eq!(t.find(u64::MAX), None);
    }

    #[test]
    fn formulas_match_catboost_static_provider() {
        let calc = |kind, tbi| CtrCalc {
            kind,
            target_border_idx: tbi,
            prior_num: 0.5,
            prior_denom: 1.0,
            shift: 0.0,
            scale: 15.0,
        };
        let mut two = CtrTable::with_capacity(TableLayout::ClassCounts, 2, 1, 0);
        two.insert(9, &[3, 1], 0.0);
        assert_eq!(
            calc(CtrKind::Borders, 0).value(&two, 9),
            (1.0 + 0.5) / (4.0 + 1.0) * 15.0
        );
        assert_eq!(
            calc(CtrKind::Buckets, 0).value(&two, 9),
            (3.0 + 0.5) / (4.0 + 1.0) * 15.0
        );
        assert_eq!(calc(CtrKind::Borders, 0).value(&two, 8), 0.5 / 1.0 * 15.0);

        let mut three = CtrTable::with_capacity(TableLayout::ClassCounts, 3, 1, 0);
        three.insert(9, &[1, 2, 4], 0.0);
        assert_eq!(
            calc(CtrKind::Borders, 0).value(&three, 9),
            (6.0 + 0.5) / (7.0 + 1.0) * 15.0
        );
        assert_eq!(
            calc(CtrKind::Borders, 1).value(&three, 9),
            (4.0 + 0.5) / (7.0 + 1.0) * 15.0
        );

        let mut counter = CtrTable::with_capacity(TableLayout::Count, 1, 1, 20);
        counter.insert(9, &[5], 0.0);
        assert_eq!(
            calc(CtrKind::Counter, 0).value(&counter, 9),
            (5.0 + 0.5) / (20.0 + 1.0) * 15.0
        );
        assert_eq!(
            calc(CtrKind::FeatureFreq, 0).value(&counter, 1),
            0.5 / 21.0 * 15.0
        );

        let mut mean = CtrTable::with_capacity(TableLayout::SumCount, 1, 1, 0);
        mean.insert(9, &[4], 2.5);
        assert_eq!(
            calc(CtrKind::FloatTargetMeanValue, 0).value(&mean, 9),
            (2.5 + 0.5) / (4.0 + 1.0) * 15.0
        );
    }
}

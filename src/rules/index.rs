//! Which rules of a stage can match a request at all, from what costs one
//! lookup to know: the method, the path's second byte, whether a bot is
//! claimed. Each is a bitset of the stage's rules, built at load; their
//! intersection is the rules evaluation visits, in order. A rule left
//! out would have failed [`Hot`]'s own first checks, which stay as they
//! are: the index changes only which rules are looked at, never an answer
//! (`index_agrees_with_visiting_every_rule` in the tests).

use super::hot::Hot;

/// The index of the rules `from..from + len`.
#[derive(Debug)]
pub(super) struct Index {
    from: usize,
    len: usize,
    /// 64-bit words per set.
    words: usize,
    /// Per bit position of `cond::method_bit` (0..16): the rules whose
    /// methods take it.
    method: Box<[u64]>,
    /// Per second byte of the path (256: the path `/`): the rules whose
    /// path condition admits it.
    second: Box<[u64]>,
    /// The rules without a bot condition.
    no_bot: Box<[u64]>,
}

/// Sets for a path that is not one (no path condition holds, and none is
/// ruled out by its second byte).
const NOT_A_PATH: usize = usize::MAX;

impl Index {
    pub(super) fn of(from: usize, hot: &[Hot]) -> Index {
        let words = hot.len().div_ceil(64).max(1);
        let mut method = vec![0u64; 16 * words];
        let mut second = vec![0u64; 257 * words];
        let mut no_bot = vec![0u64; words];
        let mut path = [0u8; 2];
        path[0] = b'/';
        for (i, h) in hot.iter().enumerate() {
            let (w, bit) = (i / 64, 1u64 << (i % 64));
            for m in 0..16 {
                if h.methods & (1 << m) != 0 {
                    method[m * words + w] |= bit;
                }
            }
            for b in 0..=255u8 {
                path[1] = b;
                if h.second.admits(&path) {
                    second[usize::from(b) * words + w] |= bit;
                }
            }
            if h.second.admits(b"/") {
                second[256 * words + w] |= bit;
            }
            if !h.bot {
                no_bot[w] |= bit;
            }
        }
        Index {
            from,
            len: hot.len(),
            words,
            method: method.into(),
            second: second.into(),
            no_bot: no_bot.into(),
        }
    }

    /// Whether the stage has no rule.
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first rule (absolute index) among those the index keeps for
    /// `method` (one `cond::method_bit` or `cond::OTHER_METHOD`),
    /// `path` (normalized, `None` if not a path or not read) and a bot
    /// claim, for which `test` holds.
    #[inline]
    pub(super) fn first(
        &self,
        method: u16,
        path: Option<&[u8]>,
        bot: bool,
        mut test: impl FnMut(usize) -> bool,
    ) -> Option<usize> {
        let m = method.trailing_zeros() as usize * self.words;
        let s = match path {
            None => NOT_A_PATH,
            Some(p) => p.get(1).map_or(256, |&b| usize::from(b)) * self.words,
        };
        for w in 0..self.words {
            let mut set = self.method[m + w];
            if s != NOT_A_PATH {
                set &= self.second[s + w];
            }
            if !bot {
                set &= self.no_bot[w];
            }
            while set != 0 {
                let i = self.from + w * 64 + set.trailing_zeros() as usize;
                if test(i) {
                    return Some(i);
                }
                set &= set - 1;
            }
        }
        None
    }
}

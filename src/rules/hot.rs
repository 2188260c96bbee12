//! A rule as evaluation reads it ([`Hot`]): the few checks that reject most
//! requests first, then the conditions. A leaf of `rules/`, read by the
//! evaluation in `mod.rs` and by the stage index (`index.rs`).

use super::cond::{self, Cond, Facts};
use super::rule::{Action, Rule};

/// What evaluation reads of a rule, kept together and small so that
/// skipping a rule costs a few instructions: checks that reject most
/// requests without a condition's dispatch, then the conditions.
#[derive(Debug)]
pub(super) struct Hot {
    /// [`cond::method_bit`]s the request's method must be among
    /// (`u16::MAX`: any); the method condition itself is left out of
    /// `conds` when these bits decide it alone.
    pub(super) methods: u16,
    /// The rule has a bot condition: a request claiming no bot fails it.
    pub(super) bot: bool,
    /// The second byte its path condition admits.
    pub(super) second: cond::Second,
    pub(super) conds: Box<[Cond]>,
    pub(super) action: Action,
}

impl Hot {
    pub(super) fn of(r: Rule) -> (Hot, Rule) {
        let mut conds = Vec::from(r.conds);
        let mut methods = u16::MAX;
        conds.retain(|c| match c {
            Cond::Method(m) => {
                methods = m.bits
                    | if m.others.is_empty() {
                        0
                    } else {
                        cond::OTHER_METHOD
                    };
                !m.others.is_empty()
            }
            _ => true,
        });
        let second = conds
            .iter()
            .find_map(|c| match c {
                Cond::Path(_, s) => Some(s.clone()),
                _ => None,
            })
            .unwrap_or_else(cond::Second::any);
        let hot = Hot {
            methods,
            bot: conds.iter().any(|c| matches!(c, Cond::Bot(_))),
            second,
            conds: conds.into(),
            action: r.action,
        };
        (
            hot,
            Rule {
                conds: Box::default(),
                ..r
            },
        )
    }

    #[inline]
    pub(super) fn matches(&self, f: &mut Facts<'_>) -> bool {
        self.methods & f.method != 0
            && !(self.bot && f.view.bot.is_none())
            && f.path.is_none_or(|p| self.second.admits(p))
            && self.conds.iter().all(|c| c.test(f))
    }
}

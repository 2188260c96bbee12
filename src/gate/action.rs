//! What a request comes to: one type for every outcome the gate gives,
//! nginx acts on, metrics count and replay reports.

use std::ffi::CStr;

/// What happens to one request. `$edgeguard_action` names it
/// ([`Action::as_str`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Not flagged (or mode `off`): proxied.
    Pass,
    /// Flagged, but the client is allowlisted: proxied.
    Allow,
    /// Flagged and logged (mode `log`): proxied.
    Log,
    /// Flagged and refused with the configured status (mode `block`, or a
    /// flagged request in mode `challenge` that cannot run a page).
    Block,
    /// Not scored while models are configured and `fail_closed` is set:
    /// 503.
    Unavailable,
    /// Flagged, but a valid clearance cookie lets it through.
    Cleared,
    /// A flagged navigation in mode `challenge`: served the challenge page.
    Challenge,
    /// A verified bot (User-Agent and address agree): proxied.
    Verified,
    /// A request to the challenge's endpoint while a challenge is
    /// configured: answered (a clearance cookie and a redirect, or the
    /// status), never proxied.
    Answer,
    /// Internal headers that nginx's Lua API cannot remove (names that are
    /// not RFC 9110 tokens): 400, rather than strip some and forward the
    /// rest.
    Refused,
}

impl Action {
    /// Every action, in the order of [`Action::index`].
    pub const ALL: [Action; 10] = [
        Action::Pass,
        Action::Allow,
        Action::Log,
        Action::Block,
        Action::Unavailable,
        Action::Cleared,
        Action::Challenge,
        Action::Verified,
        Action::Answer,
        Action::Refused,
    ];

    /// The name nginx sets in `$edgeguard_action` and logs.
    pub fn as_str(self) -> &'static str {
        // The names are ASCII.
        self.c_name().to_str().unwrap_or_default()
    }

    /// [`Action::as_str`], NUL-terminated (for the C ABI).
    pub fn c_name(self) -> &'static CStr {
        match self {
            Action::Pass => c"pass",
            Action::Allow => c"allow",
            Action::Log => c"log",
            Action::Block => c"block",
            Action::Unavailable => c"unavailable",
            Action::Cleared => c"cleared",
            Action::Challenge => c"challenge",
            Action::Verified => c"verified",
            Action::Answer => c"answer",
            Action::Refused => c"refused",
        }
    }

    /// The action named as in `$edgeguard_action`.
    pub fn from_name(name: &[u8]) -> Option<Action> {
        Action::ALL
            .into_iter()
            .find(|a| a.as_str().as_bytes() == name)
    }

    /// A dense index, for tables of counts.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether this action flags the request: a model (or a fake bot claim)
    /// judged it and the mode acted on that. Such a request gets the
    /// decision line, the score header and the variables even when it was
    /// not scored.
    pub fn flagged(self) -> bool {
        matches!(
            self,
            Action::Block | Action::Log | Action::Challenge | Action::Cleared
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_indices_are_dense() {
        for a in Action::ALL {
            assert_eq!(Action::from_name(a.as_str().as_bytes()), Some(a));
            assert_eq!(Action::ALL[a.index()], a);
        }
        assert_eq!(Action::from_name(b"deny"), None);
        let flagged: Vec<_> = Action::ALL.into_iter().filter(|a| a.flagged()).collect();
        use Action::*;
        assert_eq!(flagged, [Log, Block, Cleared, Challenge]);
    }
}

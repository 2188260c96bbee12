//! What a request comes to: one type for every outcome the gate gives,
//! nginx acts on and logs (`$edgeguard_action`), metrics count
//! (`edgeguard_decisions_total{action}`), replay reports, and the C ABI
//! numbers (`edgeguard_outcome`). A leaf: the gate, metrics, replay and
//! the boundary all read it, it reads none of them.

c_enum! {
    /// What happens to one request. Its word is `$edgeguard_action`, the
    /// decision line's `action=` and the metrics' `action` label. The
    /// numbers are in the metrics' exposition order.
    pub enum Outcome as "edgeguard_outcome" {
        /// Not flagged (or mode `off`): proxied.
        Pass = 0 => "pass",
        /// Flagged, but the client lies in an `allow` block: proxied.
        Allow = 1 => "allow",
        /// Flagged and logged (mode `log`): proxied.
        Log = 2 => "log",
        /// Flagged and refused with the configured status (mode `block`,
        /// a block rule).
        Block = 3 => "block",
        /// Not scored while models are configured and `fail_closed` is
        /// set: 503.
        Unavailable = 4 => "unavailable",
        /// A call failed: the shim answered 500. Never the gate's.
        Error = 5 => "error",
        /// Internal headers that nginx's Lua API cannot remove (names that
        /// are not RFC 9110 tokens): 400, rather than strip some and
        /// forward the rest.
        Refused = 6 => "refused",
        /// Flagged, but a valid clearance cookie lets it through.
        Cleared = 7 => "cleared",
        /// A flagged navigation in mode `challenge`: served the challenge
        /// page.
        Challenge = 8 => "challenge",
        /// A verified bot (User-Agent and address agree): proxied.
        Verified = 9 => "verified",
        /// A request to the challenge's endpoint while a challenge is
        /// configured: answered (a clearance cookie and a redirect, or the
        /// status), never proxied.
        Answer = 10 => "answer",
        /// A flagged request that must not get the page (a body, a
        /// `fetch()`, an API call) in mode `challenge`, or with only
        /// ambiguous evidence in mode `block`: answered with the configured
        /// `status` and an `application/problem+json` `challenge_required`
        /// document that points to the challenge. Nobody was blocked outright.
        ChallengeRequired = 11 => "challenge_required",
    }
}

impl Outcome {
    /// Whether this outcome flags the request: a model (or a fake bot
    /// claim) judged it and the mode acted on that. Such a request gets
    /// the decision line, the score header and the variables even when it
    /// was not scored.
    pub fn flagged(self) -> bool {
        matches!(
            self,
            Outcome::Block
                | Outcome::Log
                | Outcome::Challenge
                | Outcome::ChallengeRequired
                | Outcome::Cleared
        )
    }

    /// The outcomes the gate gives, in number order: all but the shim's
    /// [`Outcome::Error`] (what replay reports).
    pub fn of_gate() -> impl Iterator<Item = Outcome> {
        Outcome::ALL.into_iter().filter(|&o| o != Outcome::Error)
    }

    /// The width of this outcome's column in a table of counts: its word,
    /// and at least 10.
    pub fn column(self) -> usize {
        self.as_str().len().max(10)
    }

    /// Whether the request reached the point where its bot claim and
    /// clearance cookie are counted: not for a 503, an answer (judged on
    /// its own), a failure or a refusal.
    pub fn screened(self) -> bool {
        !matches!(
            self,
            Outcome::Unavailable | Outcome::Answer | Outcome::Error | Outcome::Refused
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_dense_and_names_round_trip() {
        for (i, o) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(o.index(), i);
            assert_eq!(Outcome::from_int(i as std::ffi::c_int), Some(o));
            assert_eq!(Outcome::from_name(o.as_str().as_bytes()), Some(o));
            assert_eq!(o.c_name().to_str(), Ok(o.as_str()));
        }
        assert_eq!(
            Outcome::from_int(Outcome::ALL.len() as std::ffi::c_int),
            None
        );
        assert_eq!(Outcome::from_int(-1), None);
        assert_eq!(Outcome::from_name(b"deny"), None);
        let flagged: Vec<_> = Outcome::ALL.into_iter().filter(|a| a.flagged()).collect();
        use Outcome::*;
        assert_eq!(flagged, [Log, Block, Cleared, Challenge, ChallengeRequired]);
    }

    #[test]
    fn the_c_declaration_names_every_number() {
        let c = Outcome::c_declaration();
        assert!(c.contains("  EDGEGUARD_OUTCOME_PASS = 0,\n"), "{c}");
        assert!(
            c.contains("  EDGEGUARD_OUTCOME_CHALLENGE_REQUIRED = 11,\n"),
            "{c}"
        );
        assert!(c.ends_with("} edgeguard_outcome;\n"), "{c}");
    }
}

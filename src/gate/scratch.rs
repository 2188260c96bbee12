//! The buffers one thread's runs write into, made once and reused: the
//! effects of a run borrow them until the next.

use super::location::Location;
use super::request::Incoming;
use crate::challenge::{self, PAGE_CAP, PROBLEM_CAP, SET_COOKIE_CAP};
use crate::clients::cookie;
use crate::config::text::Span;
use crate::headers::HeaderBuf;
use crate::scorer::MAX_MODELS;

/// The room of the answer's `Location`.
/// The room of the answer's `Location`: the return hop.
pub const LOCATION_CAP: usize = challenge::LOCATION_CAP;

/// One thread's buffers for [`super::run`]. Grows to the largest request
/// seen (header count, text room), then allocates no more.
#[derive(Debug)]
pub struct Scratch {
    pub(super) clear: Vec<u32>,
    pub(super) scores: [f64; MAX_MODELS],
    /// The score header's value, the variables' values, the log line.
    pub(super) text: Vec<u8>,
    /// Each model's value within the score header's value.
    pub(super) values: [Span; MAX_MODELS],
    /// The challenge page or a problem document, or the answer's
    /// `Set-Cookie` then `Location`.
    pub(super) body: Box<[u8]>,
    /// Whether the texts are written (nginx); replay wants decisions only.
    pub(super) texts: bool,
    /// What evaluating rules writes (a normalized path, folded text).
    pub(super) rules: crate::rules::NormalPath,
    /// The scores in the order the location's rules name the models,
    /// when it differs from the location's.
    pub(super) rule_scores: [f64; MAX_MODELS],
    /// Whether the site rules run (replay turns them off to see what the
    /// model would have done without them).
    pub(super) rules_on: bool,
    /// The client's headers of a request a trusted hop relayed
    /// (`crate::hop`).
    pub(super) hop: HeaderBuf,
    /// The client memory's `Set-Cookie` (`gate::clients`).
    pub(super) set_cookie: [u8; cookie::SET_COOKIE_ROOM],
}

impl Default for Scratch {
    fn default() -> Scratch {
        Scratch::new()
    }
}

impl Scratch {
    /// Buffers for 128 headers and 4 KiB of texts, grown when a request
    /// needs more.
    pub fn new() -> Scratch {
        Scratch {
            clear: vec![0; 128],
            scores: [0.0; MAX_MODELS],
            text: vec![0; 4096],
            values: [Span::default(); MAX_MODELS],
            body: vec![0; PAGE_CAP.max(PROBLEM_CAP).max(SET_COOKIE_CAP + LOCATION_CAP)]
                .into_boxed_slice(),
            texts: true,
            rules: crate::rules::NormalPath::new(),
            rule_scores: [0.0; MAX_MODELS],
            rules_on: true,
            hop: HeaderBuf::default(),
            set_cookie: [0; cookie::SET_COOKIE_ROOM],
        }
    }

    /// Whether the location's site rules run (on by default): replay runs
    /// a request a rule decided again with them off, to report what the
    /// model would have done without the rule.
    pub fn set_rules(&mut self, on: bool) {
        self.rules_on = on;
    }

    /// Buffers for runs whose effects are read for their decisions only
    /// (replay): no texts are written.
    pub fn decisions_only() -> Scratch {
        Scratch {
            texts: false,
            ..Scratch::new()
        }
    }

    /// Grows the buffers to fit `req` under `loc`.
    pub(super) fn fit(&mut self, loc: &Location, req: &Incoming<'_>) {
        let n = req.headers().len();
        let req = req.http();
        if self.clear.len() < n {
            self.clear.resize(n, 0);
        }
        if self.texts {
            let need = loc
                .text_room()
                .saturating_add(req.method().len())
                .saturating_add(req.uri().len())
                .saturating_add(req.client_addr().len());
            if self.text.len() < need {
                self.text.resize(need, 0);
            }
        }
    }
}

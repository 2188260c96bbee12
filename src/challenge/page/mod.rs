//! The challenge's pages: one template (`page.html`), one file of words
//! per locale (`locales/*.json`), compiled at load into, per locale and
//! per [`State`], a list of text runs and value slots, so that a request's
//! page is written into the caller's buffer without allocating.
//!
//! The bundled template and locales are in this directory
//! (`src/challenge/page/`), installed as examples under
//! `share/edgeguard/challenge/`; an operator replaces the template with
//! `challenge_template` and adds or overrides locales with
//! `challenge_locales` (a directory of `<tag>.json`). Both are checked at
//! load: an unknown placeholder, a missing required one, a bad locale file
//! is refused naming the file and the line, and the previous pages stay.
//!
//! The script (`solver.js`) is constant: its data travels in a JSON block
//! beside it, so its SHA-256 (and the styles') go in [`Pages::csp`], a
//! Content-Security-Policy without `'unsafe-inline'`.

mod error;
mod locale;
mod template;

use std::fmt;
use std::io::Write as _;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::endpoint::{write_html, write_pct, write_token_url, MAX_RETURN};
use super::token::TOKEN_TEXT;
use super::types::{header, TooSmall, ENDPOINT};
use crate::features::Request;
pub use error::PageError;
pub use locale::KEYS;
use locale::{Locale, SCRIPT_KEYS};
use template::{Cond, Node, Var};

/// Room enough for any page: a template whose pages could be longer is
/// refused at load.
pub const PAGE_CAP: usize = 65_536;
/// The longest request id written (longer or odd ones are left out).
pub const MAX_REQUEST_ID: usize = 64;
/// The longest `challenge_site` accepted, in bytes.
pub const MAX_SITE: usize = 100;
/// The longest `Host` written as the site's name.
const MAX_HOST: usize = 255;

/// The bundled template.
pub const TEMPLATE: &str = include_str!("page.html");
/// The page's script.
pub const SOLVER: &str = include_str!("solver.js");
/// The bundled locales: file name and text.
pub const LOCALES: [(&str, &str); 10] = [
    ("en.json", include_str!("locales/en.json")),
    ("de.json", include_str!("locales/de.json")),
    ("fr.json", include_str!("locales/fr.json")),
    ("es.json", include_str!("locales/es.json")),
    ("pt.json", include_str!("locales/pt.json")),
    ("it.json", include_str!("locales/it.json")),
    ("pl.json", include_str!("locales/pl.json")),
    ("ja.json", include_str!("locales/ja.json")),
    ("zh.json", include_str!("locales/zh.json")),
    ("ru.json", include_str!("locales/ru.json")),
];

/// Which page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// The proof of work (and, with the fallback on, the no-JavaScript
    /// refresh in a `<noscript>`).
    Challenge,
    /// Solves came back without the cookie: cookies are needed.
    CookiesNeeded,
    /// A no-JavaScript ticket followed before its wait was over.
    Wait,
}

impl State {
    /// Every page, in the order of [`State::index`].
    pub const ALL: [State; 3] = [State::Challenge, State::CookiesNeeded, State::Wait];

    /// The name in docs and tests.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Challenge => "challenge",
            State::CookiesNeeded => "cookies",
            State::Wait => "wait",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn cond(self) -> Cond {
        match self {
            State::Challenge => Cond::Challenge,
            State::CookiesNeeded => Cond::Cookies,
            State::Wait => Cond::Wait,
        }
    }

    /// The values a page of this state must write.
    fn required(self) -> &'static [(Var, &'static str)] {
        match self {
            State::Challenge => &[
                (Var::Lang, "lang"),
                (Var::Dir, "dir"),
                (Var::Solver, "solver"),
                (Var::Refresh, "refresh"),
                (Var::RequestId, "request_id"),
            ],
            State::CookiesNeeded => &[
                (Var::Lang, "lang"),
                (Var::Dir, "dir"),
                (Var::ReturnUrl, "return_url"),
                (Var::RequestId, "request_id"),
            ],
            State::Wait => &[
                (Var::Lang, "lang"),
                (Var::Dir, "dir"),
                (Var::NojsUrl, "nojs_url"),
                (Var::RequestId, "request_id"),
            ],
        }
    }
}

/// What one page is asked for: the request's parts the page shows.
#[derive(Clone, Copy, Debug)]
pub struct PageInput<'a> {
    /// Which page.
    pub state: State,
    /// The request's `Accept-Language` (empty: the default locale).
    pub accept_language: &'a [u8],
    /// The request's `Host`, the site's name without `challenge_site`.
    pub host: &'a [u8],
    /// The request's id (nginx's `$request_id`); empty: none shown.
    pub request_id: &'a [u8],
    /// The path and query to return to (not same-site: `/`).
    pub return_to: &'a [u8],
    /// Leading zero bits the nonce asks for.
    pub difficulty: u8,
    /// Solves so far that came back without the cookie.
    pub attempts: u8,
    /// [`State::Wait`]: the ticket being waited on.
    pub ticket: Option<&'a [u8]>,
    /// [`State::Wait`]: the seconds left.
    pub seconds: u8,
}

impl<'a> PageInput<'a> {
    /// The challenge page for `req` asking `difficulty` bits: its
    /// `Accept-Language`, `Host` and target; no request id.
    pub fn for_request(req: &Request<'a>, difficulty: u8) -> PageInput<'a> {
        PageInput {
            state: State::Challenge,
            accept_language: header(req, b"accept-language").unwrap_or_default(),
            host: header(req, b"host").unwrap_or_default(),
            request_id: b"",
            return_to: req.uri(),
            difficulty,
            attempts: 0,
            ticket: None,
            seconds: 0,
        }
    }
}

/// A value written per request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Nonce,
    Difficulty,
    RequestId,
    SiteHtml,
    SiteJson,
    ReturnHref,
    ReturnParam,
    TicketHref,
    TicketJson,
    Seconds,
}

/// A condition known only per request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runtime {
    Nojs,
    Reference,
}

/// One step of a compiled page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seg {
    /// Bytes of [`Pages::text`].
    Text(u32, u32),
    Slot(Slot),
    /// When the condition is `when`, go on at step `to`.
    Skip(Runtime, bool, u32),
}

/// One locale's three pages.
#[derive(Clone, Debug, PartialEq)]
struct Compiled {
    locale: Locale,
    pages: [Vec<Seg>; 3],
}

/// The compiled pages of one template and its locales.
#[derive(Clone, PartialEq)]
pub struct Pages {
    template: String,
    text: Vec<u8>,
    locales: Vec<Compiled>,
    default: usize,
    csp: String,
}

impl fmt::Debug for Pages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pages")
            .field("template", &self.template)
            .field(
                "locales",
                &self
                    .locales
                    .iter()
                    .map(|c| &c.locale.lang)
                    .collect::<Vec<_>>(),
            )
            .field("default", &self.locales[self.default].locale.lang)
            .finish()
    }
}

/// The values of one request's page.
pub(crate) struct Values<'a> {
    pub(crate) nonce: &'a [u8; TOKEN_TEXT],
    pub(crate) difficulty: u8,
    pub(crate) request_id: &'a [u8],
    pub(crate) site: Option<&'a [u8]>,
    pub(crate) host: &'a [u8],
    pub(crate) return_to: &'a [u8],
    pub(crate) ticket: Option<&'a [u8]>,
    pub(crate) seconds: u8,
}

impl Pages {
    /// The bundled template and locales, compiled once per process.
    pub fn bundled() -> Arc<Pages> {
        static BUNDLED: OnceLock<Arc<Pages>> = OnceLock::new();
        BUNDLED
            .get_or_init(|| {
                Arc::new(
                    Pages::parse(("page.html", TEMPLATE), &[], "en")
                        .expect("the bundled page and locales are checked by tests"),
                )
            })
            .clone()
    }

    /// Loads `template` (none: the bundled one) and the `*.json` files of
    /// `locales` (none: only the bundled ones), `default` being the tag
    /// of the locale a request without a match gets.
    pub fn load(
        template: Option<&Path>,
        locales: Option<&Path>,
        default: &str,
    ) -> Result<Pages, PageError> {
        let read = |p: &Path| {
            std::fs::read_to_string(p)
                .map_err(|e| PageError(format!("{}: cannot read: {e}", p.display())))
        };
        let tpl = match template {
            Some(p) => (p.display().to_string(), read(p)?),
            None => ("page.html".to_owned(), TEMPLATE.to_owned()),
        };
        let mut files = Vec::new();
        if let Some(dir) = locales {
            let entries = std::fs::read_dir(dir)
                .map_err(|e| PageError(format!("{}: cannot read: {e}", dir.display())))?;
            for entry in entries {
                let path = entry
                    .map_err(|e| PageError(format!("{}: cannot read: {e}", dir.display())))?
                    .path();
                if path.extension().is_some_and(|e| e == "json") {
                    files.push((path.display().to_string(), read(&path)?));
                }
            }
            files.sort();
        }
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        Pages::parse((&tpl.0, &tpl.1), &files, default)
    }

    /// Compiles a template (its file name, its text) with the bundled
    /// locales, overridden or added to by `locales` (file name, text).
    pub fn parse(
        template: (&str, &str),
        locales: &[(&str, &str)],
        default: &str,
    ) -> Result<Pages, PageError> {
        let nodes = template::parse(template.0, template.1)?;
        let mut all: Vec<Locale> = Vec::new();
        for (file, text) in LOCALES {
            all.push(Locale::parse(file, text, None)?);
        }
        for (file, text) in locales {
            let at = all.iter().position(|l| {
                let stem = Path::new(file)
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or_default();
                l.lang.eq_ignore_ascii_case(stem)
            });
            let parsed = Locale::parse(file, text, at.map(|i| &all[i]))?;
            match at {
                Some(i) => all[i] = parsed,
                None => all.push(parsed),
            }
        }
        let default = all
            .iter()
            .position(|l| l.lang.eq_ignore_ascii_case(default))
            .ok_or_else(|| {
                PageError(format!(
                    "challenge_default_locale: no locale \"{default}\" (there are {})",
                    all.iter()
                        .map(|l| l.lang.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
        let mut pages = Pages {
            template: template.0.to_owned(),
            text: Vec::new(),
            locales: Vec::new(),
            default,
            csp: csp(template.1),
        };
        for locale in all {
            let mut compiled = Compiled {
                locale,
                pages: Default::default(),
            };
            for state in State::ALL {
                let mut c = Compiler {
                    text: &mut pages.text,
                    segs: Vec::new(),
                    locale: &compiled.locale,
                    state,
                    seen: Vec::new(),
                    fence: 0,
                };
                c.nodes(&nodes);
                let (segs, seen) = (c.segs, c.seen);
                for (var, name) in state.required() {
                    if !seen.contains(var) {
                        return Err(PageError(format!(
                            "{}: the {} page has no {{{{{name}}}}} (every {} page needs {})",
                            template.0,
                            state.as_str(),
                            state.as_str(),
                            state
                                .required()
                                .iter()
                                .map(|(_, n)| format!("{{{{{n}}}}}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                }
                compiled.pages[state.index()] = segs;
            }
            pages.locales.push(compiled);
        }
        for c in &pages.locales {
            for state in State::ALL {
                let most = pages.max_len(c, state);
                if most > PAGE_CAP {
                    return Err(PageError(format!(
                        "{}: the {} page in {} can reach {most} bytes, more than {PAGE_CAP}",
                        template.0,
                        state.as_str(),
                        c.locale.lang
                    )));
                }
            }
        }
        Ok(pages)
    }

    /// The Content-Security-Policy the pages keep to: scripts and styles
    /// by their SHA-256 only, a worker from a `blob:` URL (the solver's),
    /// nothing else loaded, no framing.
    pub fn csp(&self) -> &str {
        &self.csp
    }

    /// The index of the locale a request without a match gets.
    pub fn default_index(&self) -> usize {
        self.default
    }

    /// The locales' tags, in load order (bundled, then added).
    pub fn locales(&self) -> impl Iterator<Item = &str> + Clone {
        self.locales.iter().map(|c| c.locale.lang.as_str())
    }

    /// The locale an `Accept-Language` value gets, by index.
    pub fn negotiate(&self, accept_language: &[u8]) -> usize {
        locale::negotiate(accept_language, self.locales(), self.default)
    }

    /// The tag of the locale at `index` (as [`Pages::negotiate`] gives).
    pub fn tag(&self, index: usize) -> &str {
        &self.locales[index].locale.lang
    }

    /// The name of the locale at `index`, in its own language.
    pub fn name(&self, index: usize) -> &str {
        &self.locales[index].locale.name
    }

    /// The most bytes a page can take: its text plus each slot's longest.
    fn max_len(&self, c: &Compiled, state: State) -> usize {
        let site = MAX_HOST
            .max(6 * MAX_SITE)
            .max(6 * c.locale.get("this_site").len());
        let ticket_url = ENDPOINT.len() + 3 + TOKEN_TEXT + 5 + 2 + 3 * MAX_RETURN;
        c.pages[state.index()]
            .iter()
            .map(|s| match *s {
                Seg::Text(a, b) => (b - a) as usize,
                Seg::Skip(..) => 0,
                Seg::Slot(slot) => match slot {
                    Slot::Nonce => TOKEN_TEXT,
                    Slot::Difficulty | Slot::Seconds => 3,
                    Slot::RequestId => MAX_REQUEST_ID,
                    Slot::SiteHtml | Slot::SiteJson => site,
                    Slot::ReturnHref => 6 * MAX_RETURN,
                    Slot::ReturnParam => 3 * MAX_RETURN,
                    Slot::TicketHref | Slot::TicketJson => ticket_url,
                },
            })
            .sum()
    }

    /// Writes a page into `out`. Allocates nothing.
    pub(crate) fn render(
        &self,
        locale: usize,
        state: State,
        v: &Values<'_>,
        out: &mut [u8],
    ) -> Result<usize, TooSmall> {
        let c = &self.locales[locale];
        let segs = &c.pages[state.index()];
        let cap = out.len();
        let mut w = &mut out[..];
        let request_id = if is_request_id(v.request_id) {
            v.request_id
        } else {
            b""
        };
        let mut i = 0;
        while i < segs.len() {
            match segs[i] {
                Seg::Text(a, b) => w.write_all(&self.text[a as usize..b as usize]),
                Seg::Skip(cond, when, to) => {
                    let holds = match cond {
                        Runtime::Nojs => v.ticket.is_some(),
                        Runtime::Reference => !request_id.is_empty(),
                    };
                    if holds == when {
                        i = to as usize;
                        continue;
                    }
                    Ok(())
                }
                Seg::Slot(slot) => self.slot(c, slot, v, request_id, &mut w),
            }
            .map_err(|_| TooSmall)?;
            i += 1;
        }
        Ok(cap - w.len())
    }

    fn slot(
        &self,
        c: &Compiled,
        slot: Slot,
        v: &Values<'_>,
        request_id: &[u8],
        w: &mut &mut [u8],
    ) -> std::io::Result<()> {
        let ticket = v.ticket.unwrap_or_default();
        match slot {
            Slot::Nonce => w.write_all(v.nonce),
            Slot::Difficulty => write!(w, "{}", v.difficulty),
            Slot::Seconds => write!(w, "{}", v.seconds),
            Slot::RequestId => w.write_all(request_id),
            Slot::SiteHtml | Slot::SiteJson => {
                let json = slot == Slot::SiteJson;
                let text = match (v.site, is_host(v.host)) {
                    (Some(s), _) => s,
                    (None, true) => v.host,
                    (None, false) => c.locale.get("this_site").as_bytes(),
                };
                if json {
                    write_json_str(w, text)
                } else {
                    write_html(w, text)
                }
            }
            Slot::ReturnHref => write_html(w, v.return_to),
            Slot::ReturnParam => write_pct(w, v.return_to),
            Slot::TicketHref if ticket.is_empty() => Ok(()),
            Slot::TicketHref => write_token_url(w, b't', ticket, v.return_to, b"&amp;"),
            Slot::TicketJson if ticket.is_empty() => Ok(()),
            Slot::TicketJson => write_token_url(w, b't', ticket, v.return_to, b"&"),
        }
    }
}

/// Whether `id` may be shown as a request id: 1 to [`MAX_REQUEST_ID`]
/// letters, digits, `-`, `_` or `.` (nginx's `$request_id` is 32 hex).
/// The page, the problem document and a block's `Edgeguard-Reference`
/// show only such an id, so none of them needs escaping.
pub fn is_request_id(id: &[u8]) -> bool {
    !id.is_empty()
        && id.len() <= MAX_REQUEST_ID
        && id
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Whether a `Host` may be shown as the site's name: a host name or an
/// address, with its port: letters, digits, `-`, `.`, `:`, `[`, `]`.
fn is_host(host: &[u8]) -> bool {
    !host.is_empty()
        && host.len() <= MAX_HOST
        && host
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b':' | b'[' | b']'))
}

/// Writes `s` as the inside of a JSON string that sits in an HTML
/// `<script>` element: quotes, backslashes and controls escaped, and `<`,
/// `>`, `&` as `\u003c`... so that nothing in it closes the element.
fn write_json_str(w: &mut impl std::io::Write, s: &[u8]) -> std::io::Result<()> {
    for &b in s {
        match b {
            b'"' => w.write_all(b"\\\"")?,
            b'\\' => w.write_all(b"\\\\")?,
            b'<' | b'>' | b'&' | b'\'' | 0..=0x1f | 0x7f => write!(w, "\\u{:04x}", b)?,
            _ => w.write_all(&[b])?,
        }
    }
    Ok(())
}

/// The policy of [`Pages::csp`]: the solver's and the template's styles'
/// hashes.
fn csp(template: &str) -> String {
    let hash = |s: &str| {
        let mut b64 = [0u8; 44];
        let n = STANDARD
            .encode_slice(Sha256::digest(s.as_bytes()), &mut b64)
            .expect("32 bytes are 44 characters");
        format!("'sha256-{}'", String::from_utf8_lossy(&b64[..n]))
    };
    let styles: Vec<String> = template::styles(template).into_iter().map(hash).collect();
    let style = if styles.is_empty() {
        "'none'".to_owned()
    } else {
        styles.join(" ")
    };
    format!(
        "default-src 'none'; script-src {}; style-src {style}; worker-src blob:; img-src data:; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        hash(SOLVER)
    )
}

/// Compiles one template for one locale and state.
struct Compiler<'a> {
    text: &'a mut Vec<u8>,
    segs: Vec<Seg>,
    locale: &'a Locale,
    state: State,
    seen: Vec<Var>,
    /// Text is not joined to a step before this one: a section ends there.
    fence: usize,
}

impl Compiler<'_> {
    /// Appends text, joining it to the text just before when it can.
    fn text(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let start = self.text.len() as u32;
        self.text.extend_from_slice(bytes);
        let end = self.text.len() as u32;
        let joinable = self.segs.len() > self.fence;
        match self.segs.last_mut() {
            Some(Seg::Text(_, b)) if joinable && *b == start => *b = end,
            _ => self.segs.push(Seg::Text(start, end)),
        }
    }

    /// Appends a section that only runs when `cond` is not `skip_when`.
    fn runtime(&mut self, cond: Runtime, skip_when: bool, body: impl FnOnce(&mut Self)) {
        let at = self.segs.len();
        self.segs.push(Seg::Skip(cond, skip_when, 0));
        body(self);
        let end = self.segs.len();
        self.segs[at] = Seg::Skip(cond, skip_when, end as u32);
        self.fence = end;
    }

    fn nodes(&mut self, nodes: &[Node]) {
        for n in nodes {
            match n {
                Node::Text(t) => self.text(t.as_bytes()),
                Node::Var(v, _) => self.var(*v),
                Node::Section(cond, inverted, body) => match cond {
                    Cond::Challenge | Cond::Cookies | Cond::Wait => {
                        if (*cond == self.state.cond()) != *inverted {
                            self.nodes(body);
                        }
                    }
                    Cond::Nojs => self.runtime(Runtime::Nojs, *inverted, |c| c.nodes(body)),
                    Cond::Reference => {
                        self.runtime(Runtime::Reference, *inverted, |c| c.nodes(body))
                    }
                },
            }
        }
    }

    /// A string of the locale, HTML-escaped, its placeholders as slots.
    fn string(&mut self, key: usize) {
        let s = self.locale.strings[key].clone();
        for piece in locale::pieces(&s) {
            match piece {
                Ok(t) => {
                    let mut buf = Vec::new();
                    let _ = write_html(&mut buf, t.as_bytes());
                    self.text(&buf);
                }
                Err("site") => self.segs.push(Seg::Slot(Slot::SiteHtml)),
                Err(_) => self.segs.push(Seg::Slot(Slot::Seconds)),
            }
        }
    }

    fn var(&mut self, v: Var) {
        self.seen.push(v);
        match v {
            Var::Lang => {
                let lang = self.locale.lang.clone();
                self.text(lang.as_bytes())
            }
            Var::Dir => self.text(self.locale.dir.as_bytes()),
            Var::Site => self.segs.push(Seg::Slot(Slot::SiteHtml)),
            Var::RequestId => self.segs.push(Seg::Slot(Slot::RequestId)),
            Var::ReturnUrl => self.segs.push(Seg::Slot(Slot::ReturnHref)),
            Var::NojsUrl => self.segs.push(Seg::Slot(Slot::TicketHref)),
            Var::Seconds => self.segs.push(Seg::Slot(Slot::Seconds)),
            Var::T(key) => self.string(key),
            Var::Refresh => match self.state {
                State::Challenge => self.runtime(Runtime::Nojs, false, |c| {
                    c.text(b"<noscript><meta http-equiv=\"refresh\" content=\"");
                    c.segs.push(Seg::Slot(Slot::Seconds));
                    c.text(b"; url=");
                    c.segs.push(Seg::Slot(Slot::TicketHref));
                    c.text(b"\"></noscript>");
                }),
                // No automatic refresh where JavaScript may run (axe-core's
                // meta-refresh rule, WCAG 2.2.1): the wait page offers the
                // link, and says when it works.
                State::Wait | State::CookiesNeeded => {}
            },
            Var::Solver if self.state == State::Challenge => self.solver(),
            Var::Solver => {}
        }
    }

    /// The JSON data block and the script:
    /// `{"n": nonce, "d": bits, "e": endpoint, "r": return (encoded),
    /// "t": ticket URL or "", "w": seconds, "site": name, "s": strings}`.
    fn solver(&mut self) {
        self.text(b"<script type=\"application/json\" id=\"edgeguard-data\">{\"n\":\"");
        self.segs.push(Seg::Slot(Slot::Nonce));
        self.text(b"\",\"d\":");
        self.segs.push(Seg::Slot(Slot::Difficulty));
        self.text(format!(",\"e\":\"{ENDPOINT}\",\"r\":\"").as_bytes());
        self.segs.push(Seg::Slot(Slot::ReturnParam));
        self.text(b"\",\"t\":\"");
        self.segs.push(Seg::Slot(Slot::TicketJson));
        self.text(b"\",\"w\":");
        self.segs.push(Seg::Slot(Slot::Seconds));
        self.text(b",\"site\":\"");
        self.segs.push(Seg::Slot(Slot::SiteJson));
        let mut s = Vec::from(&b"\",\"s\":{"[..]);
        for (i, key) in SCRIPT_KEYS.iter().enumerate() {
            if i > 0 {
                s.push(b',');
            }
            let _ = write!(s, "\"{key}\":\"");
            let _ = write_json_str(&mut s, self.locale.get(key).as_bytes());
            s.push(b'"');
        }
        s.extend_from_slice(b"}}</script>\n<script>");
        s.extend_from_slice(SOLVER.as_bytes());
        s.extend_from_slice(b"</script>");
        self.text(&s);
    }
}

#[cfg(test)]
mod tests;

//! What a User-Agent claims: the client family, its major version, the OS and
//! whether it says "mobile". A detector compares these claims with the rest of
//! the request, so the parser only needs to be right about what real clients
//! send, not about every historical UA.

use super::bytes::{bits16, leading_uint, padded, starts_with_ci};

/// The client family a User-Agent claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// No User-Agent header, or an empty one.
    None,
    /// Google Chrome or another Chromium build with an unbranded UA (Brave, Chromium).
    Chrome,
    /// Chrome's headless mode, which says so in its UA.
    HeadlessChrome,
    /// Microsoft Edge (Chromium).
    Edge,
    /// Opera (Chromium).
    Opera,
    /// Samsung Internet (Chromium).
    Samsung,
    /// Mozilla Firefox, including Firefox for iOS.
    Firefox,
    /// Apple Safari.
    Safari,
    /// A `Mozilla/` UA of no family above.
    OtherBrowser,
    /// curl.
    Curl,
    /// GNU Wget.
    Wget,
    /// Python `requests`.
    PythonRequests,
    /// Python `aiohttp`.
    Aiohttp,
    /// Python `httpx`.
    Httpx,
    /// Python's standard `urllib`.
    PythonUrllib,
    /// Go's `net/http`.
    Go,
    /// Java's `HttpURLConnection`/`HttpClient` or Apache HttpClient.
    Java,
    /// OkHttp (Android and JVM apps).
    Okhttp,
    /// Node.js (`fetch`/undici or `node-fetch`).
    Node,
    /// axios (Node.js).
    Axios,
    /// A UA that declares itself automated: crawler, spider, bot, or a
    /// contact URL, as crawlers and scrapers conventionally do.
    Bot,
    /// Anything else.
    Other,
}

impl Family {
    /// The categorical value of `ua_family`.
    pub fn name(self) -> &'static str {
        match self {
            Family::None => "none",
            Family::Chrome => "chrome",
            Family::HeadlessChrome => "headless-chrome",
            Family::Edge => "edge",
            Family::Opera => "opera",
            Family::Samsung => "samsung",
            Family::Firefox => "firefox",
            Family::Safari => "safari",
            Family::OtherBrowser => "other-browser",
            Family::Curl => "curl",
            Family::Wget => "wget",
            Family::PythonRequests => "python-requests",
            Family::Aiohttp => "python-aiohttp",
            Family::Httpx => "python-httpx",
            Family::PythonUrllib => "python-urllib",
            Family::Go => "go",
            Family::Java => "java",
            Family::Okhttp => "okhttp",
            Family::Node => "node",
            Family::Axios => "axios",
            Family::Bot => "bot",
            Family::Other => "other",
        }
    }

    /// Claims a browser engine, so browser headers (`sec-fetch-*`, `accept`
    /// with `text/html`, ...) are expected.
    pub fn is_browser(self) -> bool {
        matches!(
            self,
            Family::Chrome
                | Family::HeadlessChrome
                | Family::Edge
                | Family::Opera
                | Family::Samsung
                | Family::Firefox
                | Family::Safari
                | Family::OtherBrowser
        )
    }

    /// Claims a Chromium browser, so User-Agent client hints may be expected.
    pub fn is_chromium(self) -> bool {
        matches!(
            self,
            Family::Chrome
                | Family::HeadlessChrome
                | Family::Edge
                | Family::Opera
                | Family::Samsung
        )
    }
}

/// The operating system a User-Agent claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Os {
    /// No User-Agent.
    None,
    /// Windows.
    Windows,
    /// macOS.
    MacOs,
    /// Desktop Linux.
    Linux,
    /// Android.
    Android,
    /// iOS or iPadOS.
    Ios,
    /// ChromeOS.
    ChromeOs,
    /// Not named, or not one of the above.
    Other,
}

impl Os {
    /// The categorical value of `ua_os`.
    pub fn name(self) -> &'static str {
        match self {
            Os::None => "none",
            Os::Windows => "windows",
            Os::MacOs => "macos",
            Os::Linux => "linux",
            Os::Android => "android",
            Os::Ios => "ios",
            Os::ChromeOs => "chromeos",
            Os::Other => "other",
        }
    }

    /// The `sec-ch-ua-platform` value a Chromium browser on this OS sends
    /// (without quotes), when there is one.
    pub fn client_hint_platform(self) -> Option<&'static [u8]> {
        match self {
            Os::Windows => Some(b"Windows"),
            Os::MacOs => Some(b"macOS"),
            Os::Linux => Some(b"Linux"),
            Os::Android => Some(b"Android"),
            Os::Ios => Some(b"iOS"),
            Os::ChromeOs => Some(b"Chrome OS"),
            Os::None | Os::Other => None,
        }
    }
}

/// The claims of one User-Agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserAgent {
    /// Claimed client family, as schemas 1 to 3 read it (`ua_family`; the
    /// frozen legacy Lua engine computes the same): any `Mozilla/` UA
    /// claims a browser, a product token needs no version, a bot word may
    /// sit inside a word.
    pub family: Family,
    /// Claimed client family, as schema 4's `ua_claim`, the engines and the
    /// evidence read it: a browser names its product's version, or an
    /// engine's (`AppleWebKit/605.1.15`, `Gecko/20100101`); `OPiOS` is
    /// Opera; `bot` ends a word and an Android UA's device name (CUBOT) is
    /// no bot word.
    pub claim: Family,
    /// Major version of that family, when the UA spells one.
    pub major: Option<u32>,
    /// For Chromium families, the engine's major (`Chrome/`, `CriOS/` or
    /// `HeadlessChrome/`), which `sec-ch-ua` reports for the `Chromium`
    /// brand even when the branded version differs (Opera, Samsung).
    pub chromium: Option<u32>,
    /// Claimed operating system.
    pub os: Os,
    /// Whether the UA says `Mobile` (phones; Android tablets do not).
    pub mobile: bool,
    /// Whether the UA has the `wv` token of Android's WebView (`; wv)`):
    /// an app's embedded browser, which sent no client hints before
    /// Chromium 116.
    pub webview: bool,
    /// Whether the UA names an iOS browser (`CriOS`, `FxiOS`, `EdgiOS`,
    /// `OPiOS`): Apple's WebKit whatever the product and the OS it says,
    /// iPad's desktop `Macintosh` UA included (no client hints, Apple's
    /// network stack).
    pub ios_app: bool,
}

impl UserAgent {
    /// Whether the claimed browser runs Chromium's engine (and may send
    /// client hints): a Chromium claim that is not an iOS app.
    pub fn chromium_engine(&self) -> bool {
        self.claim.is_chromium() && !self.ios_app
    }
}

/// HTTP libraries announce themselves at the start of the UA, `name/version`.
const LIBRARY_PREFIXES: &[(&[u8], Family)] = &[
    (b"curl/", Family::Curl),
    (b"wget/", Family::Wget),
    (b"python-requests/", Family::PythonRequests),
    (b"python-httpx/", Family::Httpx),
    (b"python-urllib/", Family::PythonUrllib),
    (b"go-http-client/", Family::Go),
    (b"java/", Family::Java),
    (b"java-http-client/", Family::Java),
    (b"apache-httpclient/", Family::Java),
    (b"okhttp/", Family::Okhttp),
    (b"axios/", Family::Axios),
    (b"node-fetch", Family::Node),
    (b"undici", Family::Node),
];

/// Words automated clients put in their UA by convention, lower-case.
/// `+http` is the "contact URL" form (`+https://...`) crawlers use.
const BOT_WORDS: &[&[u8]] = &[
    b"bot",
    b"crawl",
    b"spider",
    b"slurp",
    b"scrapy",
    b"+http",
    b"facebookexternalhit",
    b"http://",
    b"https://",
];

/// `BOT_START[b]`: bit `k` is set when word `k` of [`BOT_WORDS`] starts
/// with byte `b` in either case.
const BOT_START: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut k = 0;
    while k < BOT_WORDS.len() {
        let first = BOT_WORDS[k][0];
        table[first as usize] |= 1 << k;
        table[first.to_ascii_uppercase() as usize] |= 1 << k;
        k += 1;
    }
    table
};

const _: () = assert!(BOT_WORDS.len() <= 16, "BOT_START holds 16 words");

/// `BOT_SECOND[b]`: bit `k` is set when word `k` of [`BOT_WORDS`] has `b`
/// as its second byte, in either case. With [`BOT_START`] it rules out most
/// positions whose byte starts a word (`c` in `Gecko`, `S` in `Safari`)
/// with one more table load.
const BOT_SECOND: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut k = 0;
    while k < BOT_WORDS.len() {
        let second = BOT_WORDS[k][1];
        table[second as usize] |= 1 << k;
        table[second.to_ascii_uppercase() as usize] |= 1 << k;
        k += 1;
    }
    table
};

/// Bytes [`Products::scan`] classifies at a time.
const CHUNK: usize = 16;

/// The distinct first-two-byte pairs of [`BOT_WORDS`] (`http://` and
/// `https://` share theirs), the first with bit 5 set (a letter
/// lower-cased), the second as written (a lower-case letter): one vector
/// comparison fewer per chunk than a pair per word.
const BOT_PAIRS: [(u8, u8); BOT_PAIR_COUNT] = {
    let mut pairs = [(0, 0); BOT_PAIR_COUNT];
    let mut n = 0;
    let mut k = 0;
    while k < BOT_WORDS.len() {
        let pair = bot_pair(k);
        if !bot_pair_seen(k) {
            pairs[n] = pair;
            n += 1;
        }
        k += 1;
    }
    pairs
};

const fn bot_pair(k: usize) -> (u8, u8) {
    (BOT_WORDS[k][0] | 0x20, BOT_WORDS[k][1])
}

/// Whether a word before `k` has word `k`'s pair.
const fn bot_pair_seen(k: usize) -> bool {
    let mut j = 0;
    while j < k {
        let (a, b) = (bot_pair(j), bot_pair(k));
        if a.0 == b.0 && a.1 == b.1 {
            return true;
        }
        j += 1;
    }
    false
}

const BOT_PAIR_COUNT: usize = {
    let mut n = 0;
    let mut k = 0;
    while k < BOT_WORDS.len() {
        if !bot_pair_seen(k) {
            n += 1;
        }
        k += 1;
    }
    n
};

/// For the first [`CHUNK`] bytes of `window` (its last byte is the one
/// after them, or a zero past the end of the UA): bit `j` of the first
/// mask is set when byte `j` is a token delimiter (space, `(`, `)`, `;`,
/// `,`, `/`), of the second when bytes `j` and `j + 1` may start a bot
/// word. The second is a filter: both bytes are compared with bit 5 set,
/// which also lets some control bytes through (`0x0b` for `+`); the
/// tables confirm each position.
///
/// Comparisons of every byte with constants, in a loop of fixed length
/// and no branches: the compiler turns it into vector compares.
#[inline(always)]
fn classify(window: &[u8; CHUNK + 1]) -> (u32, u32) {
    let mut delimiters = [0u8; CHUNK];
    let mut pairs = [0u8; CHUNK];
    // Two arrays, not `window[j + 1]`: with the overlapping reads the
    // compiler kept the loop scalar.
    let bytes: &[u8; CHUNK] = window[..CHUNK].try_into().expect("CHUNK bytes");
    let next: &[u8; CHUNK] = window[1..].try_into().expect("CHUNK bytes");
    for j in 0..CHUNK {
        let b = bytes[j];
        let delimiter =
            (b == b' ') | (b == b'(') | (b == b')') | (b == b';') | (b == b',') | (b == b'/');
        delimiters[j] = u8::from(delimiter);
        let (first, second) = (b | 0x20, next[j] | 0x20);
        let mut pair = false;
        for &(a, s) in &BOT_PAIRS {
            pair |= (first == a) & (second == s);
        }
        pairs[j] = u8::from(pair);
    }
    (bits16(delimiters), bits16(pairs))
}

/// Product tokens (`Name/version`) the family decision looks at.
const PRODUCTS: [&[u8]; 16] = [
    b"HeadlessChrome",
    b"Edg",
    b"EdgA",
    b"EdgiOS",
    b"OPR",
    b"SamsungBrowser",
    b"Firefox",
    b"FxiOS",
    b"CriOS",
    b"Chrome",
    b"Version",
    b"Safari",
    b"aiohttp",
    b"OPiOS",
    b"AppleWebKit",
    b"Gecko",
];
const HEADLESS: usize = 0;
const EDGE: [usize; 3] = [1, 2, 3];
const OPERA: usize = 4;
const SAMSUNG: usize = 5;
const FIREFOX: [usize; 2] = [6, 7];
const CRIOS: usize = 8;
const CHROME: usize = 9;
const VERSION: usize = 10;
const SAFARI: usize = 11;
const AIOHTTP: usize = 12;
const OPIOS: usize = 13;
/// The engines a browser claim of no known product must name, with a
/// version (`AppleWebKit/605.1.15`, `Gecko/20100101`).
const ENGINES: [usize; 2] = [14, 15];
/// The iOS browsers' tokens: Apple's WebKit on any OS they claim.
const IOS_APPS: [usize; 4] = [CRIOS, FIREFOX[1], EDGE[2], OPIOS];

/// The index in [`PRODUCTS`] of `token`, if it is one: the length and the
/// first byte pick the one candidate (distinct for every product, see the
/// test), and one comparison confirms it. Every `/` of a UA ends a token
/// looked up here; comparing it with each product in turn cost more than
/// the rest of the scan.
fn product(token: &[u8]) -> Option<usize> {
    // Each arm compares with a constant product, so the comparison is a
    // few loads of known size instead of a call to `bcmp`.
    #[inline(always)]
    fn is(token: &[u8], k: usize) -> Option<usize> {
        (token == PRODUCTS[k]).then_some(k)
    }
    match (token.len(), *token.first()?) {
        (14, b'H') => is(token, HEADLESS),
        (3, b'E') => is(token, EDGE[0]),
        (4, b'E') => is(token, EDGE[1]),
        (6, b'E') => is(token, EDGE[2]),
        (3, b'O') => is(token, OPERA),
        (14, b'S') => is(token, SAMSUNG),
        (7, b'F') => is(token, FIREFOX[0]),
        (5, b'F') => is(token, FIREFOX[1]),
        (5, b'C') => is(token, CRIOS),
        (6, b'C') => is(token, CHROME),
        (7, b'V') => is(token, VERSION),
        (6, b'S') => is(token, SAFARI),
        (7, b'a') => is(token, AIOHTTP),
        (5, b'O') => is(token, OPIOS),
        (11, b'A') => is(token, ENGINES[0]),
        (5, b'G') => is(token, ENGINES[1]),
        _ => None,
    }
}

/// Which [`PRODUCTS`] a UA names, with the major of the first occurrence,
/// whether it has a `Mobile` token, and whether it declares itself a bot.
struct Products {
    found: [bool; PRODUCTS.len()],
    major: [Option<u32>; PRODUCTS.len()],
    mobile: bool,
    /// A `wv` token: Android's WebView.
    webview: bool,
    /// The UA contains one of [`BOT_WORDS`] (ASCII case-insensitive),
    /// anywhere, inside a word too: what schemas 1 to 3 read.
    bot_any: bool,
    /// The same as whole words ([`bot_word_at`]) outside the first
    /// comment.
    bot: bool,
    /// The same inside the first comment, where an Android UA names the
    /// device (`CUBOT_X19`, `Cubot KINGKONG`: phones, not crawlers).
    bot_in_comment: bool,
    /// Where the first comment's bytes start and end ([`Products::comment`]).
    comment: Option<(usize, usize)>,
}

impl Products {
    /// One pass over the UA: tokens end at a space, `(`, `)`, `;`, `,` or
    /// `/`; a token ended by `/` is a product name followed by its version.
    /// The same pass looks for the bot words: each position is checked only
    /// against the words starting with its byte (see [`bot_word_at`]).
    ///
    /// The UA is classified 16 bytes at a time ([`classify`]: the
    /// delimiters, and the positions whose two bytes start a bot word), and
    /// only those positions are visited. A byte-at-a-time loop that skipped
    /// the other bytes with a table cost 1 660 instructions per request on
    /// the traffic fixture (UAs of 94 bytes), most of them in the skip.
    ///
    /// Out of line: inlined into the extraction, the loop ran out of
    /// registers and kept its counters on the stack.
    #[inline(never)]
    fn scan(ua: &[u8]) -> Self {
        let mut found = [false; PRODUCTS.len()];
        let mut major = [None; PRODUCTS.len()];
        // Locals, not fields of the result: stores through the result's
        // pointer on every delimiter cost more than the comparisons.
        let mut mobile = false;
        let mut webview = false;
        let mut bot_any = false;
        let mut bot = false;
        let mut bot_in_comment = false;
        // The first comment: after the first `(`, up to the next `)`.
        let mut open = None;
        let mut close = None;
        let mut start = 0;
        let mut base = 0;
        while base < ua.len() {
            let (mut delimiters, mut pairs) = match ua.get(base..base + CHUNK + 1) {
                Some(window) => classify(window.try_into().expect("CHUNK + 1 bytes")),
                None => {
                    // The last bytes, padded with zeros: a zero is no
                    // delimiter and no second byte of a word.
                    classify(&padded(&ua[base..], 0))
                }
            };
            while delimiters != 0 {
                let i = base + delimiters.trailing_zeros() as usize;
                delimiters &= delimiters - 1;
                let b = ua[i];
                let token = &ua[start..i];
                mobile |= token == b"Mobile";
                webview |= token == b"wv";
                match b {
                    b'/' => {
                        if let Some(k) = product(token) {
                            if !found[k] {
                                found[k] = true;
                                major[k] = leading_uint(&ua[i + 1..]);
                            }
                        }
                    }
                    b'(' if open.is_none() => open = Some(i + 1),
                    b')' if open.is_some() && close.is_none() => close = Some(i),
                    _ => {}
                }
                start = i + 1;
            }
            while pairs != 0 && !(bot_any && bot) {
                let i = base + pairs.trailing_zeros() as usize;
                pairs &= pairs - 1;
                // The filter compared the first byte without its case bit
                // only: the tables say exactly which words start here.
                let words = BOT_START[usize::from(ua[i])]
                    & ua.get(i + 1)
                        .map_or(0, |&next| BOT_SECOND[usize::from(next)]);
                let found = if words == 0 {
                    Found::None
                } else {
                    bot_word_at(ua, i, words)
                };
                bot_any |= found != Found::None;
                if found == Found::Word {
                    // Every delimiter of this chunk is seen: `open` and
                    // `close` are known up to here.
                    let in_comment = open.is_some_and(|o| i >= o) && close.is_none_or(|c| i < c);
                    if in_comment {
                        bot_in_comment = true;
                    } else {
                        bot = true;
                    }
                }
            }
            base += CHUNK;
        }
        mobile |= &ua[start..] == b"Mobile";
        webview |= &ua[start..] == b"wv";
        Products {
            found,
            major,
            mobile,
            webview,
            bot_any,
            bot,
            bot_in_comment,
            comment: open.map(|open| (open, close.unwrap_or(ua.len()))),
        }
    }

    /// The first comment of the UA this scan read, without its
    /// parentheses; `None` without a `(`.
    fn comment<'u>(&self, ua: &'u [u8]) -> Option<&'u [u8]> {
        self.comment.map(|(open, close)| &ua[open..close])
    }

    fn get(&self, k: usize) -> Option<Option<u32>> {
        self.found[k].then_some(self.major[k])
    }
}

/// Whether one of the bot words in `words` (bits of [`BOT_WORDS`], those
/// starting with `ua[i]`) starts at `i`, ASCII case-insensitive; as a
/// word, `bot` only where a word ends (`Googlebot/`, `SEBot-WA`, not
/// `Bottle`). The rest
/// of a word is compared only when its second byte matches too (`c`, `s`
/// and `h` start words and are common in browser UAs: `Chrome`, `Safari`,
/// `KHTML`).
fn bot_word_at(ua: &[u8], i: usize, mut words: u16) -> Found {
    let mut found = Found::None;
    while words != 0 {
        let w = BOT_WORDS[words.trailing_zeros() as usize];
        // `w[1]` is a lower-case letter (checked below), so setting bit
        // 5 is an exact case-insensitive comparison.
        if ua.len() - i >= w.len()
            && (ua[i + 1] | 0x20) == w[1]
            && ua[i + 2..i + w.len()].eq_ignore_ascii_case(&w[2..])
        {
            if w != BOT_WORDS[0] || !ua.get(i + w.len()).is_some_and(u8::is_ascii_alphabetic) {
                return Found::Word;
            }
            found = Found::InWord;
        }
        words &= words - 1;
    }
    found
}

/// What [`bot_word_at`] found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Found {
    None,
    /// `bot` with a letter after it (`Bottle`, `CUBOTx`): a bot word for
    /// schemas 1 to 3 only.
    InWord,
    /// A bot word.
    Word,
}

const _: () = {
    let mut k = 0;
    while k < BOT_WORDS.len() {
        assert!(
            BOT_WORDS[k].len() >= 2 && BOT_WORDS[k][1].is_ascii_lowercase(),
            "bot_word_at compares second bytes as lower-case letters"
        );
        k += 1;
    }
};

/// Parses what a User-Agent header value claims.
pub fn parse(ua: &[u8]) -> UserAgent {
    let ua = ua.trim_ascii();
    if ua.is_empty() {
        return UserAgent {
            family: Family::None,
            claim: Family::None,
            major: None,
            chromium: None,
            os: Os::None,
            mobile: false,
            webview: false,
            ios_app: false,
        };
    }
    let products = Products::scan(ua);
    let os = os(products.comment(ua));
    let (family, major) = family_and_major(ua, &products, Reading::Legacy);
    // An Android UA's first comment names the device, which may be a
    // CUBOT phone; elsewhere it is where crawlers say `compatible; XBot`.
    let bot = products.bot || (products.bot_in_comment && os != Os::Android);
    let (claim, _) = family_and_major(ua, &products, Reading::Claim { bot });
    let ios_app = IOS_APPS.iter().any(|&k| products.found[k]);
    let chromium = if family.is_chromium() {
        [HEADLESS, CHROME, CRIOS]
            .iter()
            .find_map(|&k| products.get(k))
            .flatten()
    } else {
        None
    };
    UserAgent {
        family,
        claim,
        major,
        chromium,
        os,
        mobile: products.mobile,
        webview: products.webview,
        ios_app,
    }
}

/// How [`family_and_major`] reads the products: as schemas 1 to 3 do, or
/// as the claim (with whether a bot word, as a whole word, was found).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    Legacy,
    Claim { bot: bool },
}

fn family_and_major(ua: &[u8], products: &Products, reading: Reading) -> (Family, Option<u32>) {
    let claim = reading != Reading::Legacy;
    // `ua` is not empty; most UAs start with `M` and skip every prefix on
    // the first byte.
    let first = ua[0].to_ascii_lowercase();
    for &(prefix, family) in LIBRARY_PREFIXES {
        if prefix[0] == first && starts_with_ci(ua, prefix) {
            return (family, leading_uint(&ua[prefix.len()..]));
        }
    }
    // Node's built-in fetch (undici) sends exactly "node".
    if ua.eq_ignore_ascii_case(b"node") {
        return (Family::Node, None);
    }
    // "Python/3.11 aiohttp/3.9.1": the library token is not the prefix.
    if let Some(v) = products.get(AIOHTTP) {
        return (Family::Aiohttp, v);
    }
    if let Some(v) = products.get(HEADLESS) {
        return (Family::HeadlessChrome, v);
    }
    // Crawlers usually embed a browser UA (Googlebot's smartphone UA says
    // Chrome), so the declaration wins over the engine tokens.
    let bot = match reading {
        Reading::Legacy => products.bot_any,
        Reading::Claim { bot } => bot,
    };
    if bot {
        return (Family::Bot, None);
    }
    // Branded Chromium browsers also carry `Chrome/`: they come first.
    let branded = [
        (EDGE[0], Family::Edge),
        (EDGE[1], Family::Edge),
        (EDGE[2], Family::Edge),
    ]
    .into_iter()
    .chain([(OPERA, Family::Opera), (SAMSUNG, Family::Samsung)])
    .chain(FIREFOX.map(|k| (k, Family::Firefox)))
    .chain(claim.then_some((OPIOS, Family::Opera)))
    .chain([(CRIOS, Family::Chrome), (CHROME, Family::Chrome)]);
    // A browser claim names its product's version: `Chrome/` alone says
    // nothing a script could not.
    for (k, family) in branded {
        match products.get(k) {
            Some(Some(v)) => return (family, Some(v)),
            Some(None) if !claim => return (family, None),
            _ => {}
        }
    }
    if let (Some(_), Some(Some(v))) = (products.get(SAFARI), products.get(VERSION)) {
        return (Family::Safari, Some(v));
    }
    // An unnamed browser (an in-app one, WebKitGTK without `Version/`)
    // still names its engine and version; `Mozilla/5.0`,
    // `Mozilla/5.0 (compatible)` or `Mozilla/5.0 (X11; Linux x86_64)`
    // alone claims nothing.
    let engine = ENGINES
        .iter()
        .any(|&k| matches!(products.get(k), Some(Some(_))));
    if (engine || !claim) && starts_with_ci(ua, b"mozilla/") {
        return (Family::OtherBrowser, None);
    }
    (Family::Other, None)
}

/// The OS named in the UA's first comment (`(Windows NT 10.0; Win64; x64)`),
/// where every browser and most clients put the platform.
///
/// One pass over the comment notes every platform word in it; the first
/// in priority order wins (iOS UAs say "like Mac OS X", Android UAs say
/// "Linux": order matters), as if each word were searched for in turn.
///
/// `comment` is [`Products::comment`]: the scan has seen the parentheses.
fn os(comment: Option<&[u8]>) -> Os {
    const ANDROID: u8 = 1;
    const IOS: u8 = 2;
    const CHROME_OS: u8 = 4;
    const MAC_OS: u8 = 8;
    const LINUX: u8 = 16;
    let Some(comment) = comment else {
        return Os::Other;
    };
    let mut seen = 0u8;
    for i in 0..comment.len() {
        let rest = &comment[i..];
        seen |= match rest[0] {
            b'W' if rest.starts_with(b"Windows") => return Os::Windows,
            b'A' if rest.starts_with(b"Android") => ANDROID,
            b'i' if rest.starts_with(b"iPhone")
                || rest.starts_with(b"iPad")
                || rest.starts_with(b"iPod") =>
            {
                IOS
            }
            b'C' if rest.starts_with(b"CrOS") => CHROME_OS,
            b'M' if rest.starts_with(b"Macintosh") || rest.starts_with(b"Mac OS X") => MAC_OS,
            b'L' if rest.starts_with(b"Linux") => LINUX,
            b'X' if rest.starts_with(b"X11") => LINUX,
            _ => 0,
        };
    }
    match seen & seen.wrapping_neg() {
        0 => Os::Other,
        ANDROID => Os::Android,
        IOS => Os::Ios,
        CHROME_OS => Os::ChromeOs,
        MAC_OS => Os::MacOs,
        _ => Os::Linux,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_user_agents() {
        use Family as F;
        let table: &[(&str, Family, Option<u32>, Os, bool)] = &[
            ("", F::None, None, Os::None, false),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36", F::Chrome, Some(147), Os::Windows, false),
            ("Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Mobile Safari/537.36", F::Chrome, Some(147), Os::Android, true),
            ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1", F::Chrome, Some(126), Os::Ios, true),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36 Edg/147.0.0.0", F::Edge, Some(147), Os::MacOs, false),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 OPR/110.0.0.0", F::Opera, Some(110), Os::Windows, false),
            ("Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36", F::Samsung, Some(25), Os::Android, true),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:150.0) Gecko/20100101 Firefox/150.0", F::Firefox, Some(150), Os::MacOs, false),
            ("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", F::Firefox, Some(128), Os::Linux, false),
            ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/26.4 Mobile/15E148 Safari/604.1", F::Safari, Some(26), Os::Ios, true),
            ("Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", F::Chrome, Some(120), Os::ChromeOs, false),
            ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.6778.33 Safari/537.36", F::HeadlessChrome, Some(131), Os::Linux, false),
            ("curl/8.5.0", F::Curl, Some(8), Os::Other, false),
            ("Wget/1.21.3", F::Wget, Some(1), Os::Other, false),
            ("python-requests/2.32.3", F::PythonRequests, Some(2), Os::Other, false),
            ("Python/3.11 aiohttp/3.9.5", F::Aiohttp, Some(3), Os::Other, false),
            ("python-httpx/0.27.0", F::Httpx, Some(0), Os::Other, false),
            ("Python-urllib/3.11", F::PythonUrllib, Some(3), Os::Other, false),
            ("Go-http-client/2.0", F::Go, Some(2), Os::Other, false),
            ("Java/17.0.9", F::Java, Some(17), Os::Other, false),
            ("Java-http-client/21.0.2", F::Java, Some(21), Os::Other, false),
            ("Apache-HttpClient/4.5.14 (Java/17.0.9)", F::Java, Some(4), Os::Other, false),
            ("okhttp/4.12.0", F::Okhttp, Some(4), Os::Other, false),
            ("node", F::Node, None, Os::Other, false),
            ("axios/1.7.2", F::Axios, Some(1), Os::Other, false),
            ("node-fetch/1.0 (+https://github.com/bitinn/node-fetch)", F::Node, None, Os::Other, false),
            ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", F::Bot, None, Os::Other, false),
            ("Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/41.0.2272.96 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", F::Bot, None, Os::Android, true),
            ("Scrapy/2.11.2 (+https://scrapy.org)", F::Bot, None, Os::Other, false),
            ("Mozilla/5.0 (compatible; Konqueror/3.5; Linux)", F::OtherBrowser, None, Os::Linux, false),
            ("PostmanRuntime/7.39.0", F::Other, None, Os::Other, false),
        ];
        for &(ua, family, major, os, mobile) in table {
            let got = parse(ua.as_bytes());
            assert_eq!(
                (got.family, got.major, got.os, got.mobile),
                (family, major, os, mobile),
                "{ua}"
            );
        }
    }

    /// Issue 38's cheap evasions and the people they must not catch: a
    /// browser claim names an engine and a version; every iOS browser is
    /// WebKit (iPad's desktop UA included); bot words are whole words and
    /// an Android device name (CUBOT) is none.
    #[test]
    fn browser_claims_engines_and_bot_words() {
        use super::super::orders::Engine;
        use Family as F;
        // (UA, the claim, its engine, whether Chromium's engine: client hints)
        let table: &[(&str, Family, Option<Engine>, bool)] = &[
            ("Mozilla/5.0", F::Other, None, false),
            ("Mozilla/5.0 (compatible)", F::Other, None, false),
            ("Mozilla/5.0 (X11; Linux x86_64)", F::Other, None, false),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/ Safari/", F::Other, None, false),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/x Chrome/x", F::Other, None, false),
            ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko)", F::OtherBrowser, Some(Engine::Other), false),
            ("Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101", F::OtherBrowser, Some(Engine::Other), false),
            // iPad's desktop mode: Chrome, Firefox, Edge and Opera are WebKit.
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Safari/604.1", F::Chrome, Some(Engine::WebKit), false),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/133.0 Safari/605.1.15", F::Firefox, Some(Engine::WebKit), false),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 EdgiOS/131.2903.86 Safari/605.1.15", F::Edge, Some(Engine::WebKit), false),
            ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1 OPiOS/16.0.15", F::Opera, Some(Engine::WebKit), false),
            ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1", F::Chrome, Some(Engine::WebKit), false),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36", F::Chrome, Some(Engine::Chromium), true),
            // CUBOT phones are people.
            ("Mozilla/5.0 (Linux; Android 10; CUBOT_X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", F::Chrome, Some(Engine::Chromium), true),
            ("Mozilla/5.0 (Linux; Android 9; Cubot KINGKONG 5 Pro Build/PPR1.180610.011) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36", F::Chrome, Some(Engine::Chromium), true),
            ("Mozilla/5.0 (Linux; Android 11; CUBOT) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", F::Chrome, Some(Engine::Chromium), true),
            // Crawlers still are, wherever they say so.
            ("Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", F::Bot, None, false),
            ("Mozilla/5.0 (compatible; bingbot/2.0)", F::Bot, None, false),
            ("SEBot-WA", F::Bot, None, false),
            ("UT-Dorkbot/1.0", F::Bot, None, false),
            ("MirrorWebCrawler", F::Bot, None, false),
            ("crawl4ai-adapter/1.0", F::Bot, None, false),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 SomeBot", F::Bot, None, false),
            // `bot` inside a word is not the word.
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Bottle/1", F::Chrome, Some(Engine::Chromium), true),
        ];
        for &(ua, claim, engine, chromium) in table {
            let got = parse(ua.as_bytes());
            assert_eq!(
                (got.claim, Engine::of(&got), got.chromium_engine()),
                (claim, engine, chromium),
                "{ua}"
            );
        }
        // Schemas 1 to 3 read the family as the legacy Lua engine does.
        for (ua, family) in [
            ("Mozilla/5.0", F::OtherBrowser),
            ("Mozilla/5.0 (Linux; Android 10; CUBOT_X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", F::Bot),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Safari/604.1", F::Chrome),
        ] {
            assert_eq!(parse(ua.as_bytes()).family, family, "{ua}");
        }
    }

    #[test]
    fn chromium_engine_versions() {
        let table: &[(&str, Option<u32>)] = &[
            ("Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 OPR/110.0.0.0", Some(124)),
            ("Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/131.0.0.0 Safari/537.36", Some(131)),
            ("Mozilla/5.0 (iPhone) AppleWebKit/605.1.15 CriOS/126.0 Mobile/15E148 Safari/604.1", Some(126)),
            ("Mozilla/5.0 (Linux; Android 14) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36", Some(121)),
            // Not Chromium: no engine version even with a Chrome token around.
            ("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0 Chrome/1", None),
            ("curl/8.5.0", None),
        ];
        for &(ua, want) in table {
            assert_eq!(parse(ua.as_bytes()).chromium, want, "{ua}");
        }
    }

    #[test]
    fn products_are_whole_tokens() {
        // "Chrome/" inside "HeadlessChrome/" or "XChrome/" is not Chrome.
        let p = Products::scan(b"Mozilla/5.0 XChrome/9 (x;Chrome/7) Version/3,Safari/1");
        assert_eq!(p.get(CHROME), Some(Some(7)));
        assert_eq!(p.get(VERSION), Some(Some(3)));
        assert_eq!(p.get(SAFARI), Some(Some(1)));
        assert_eq!(p.get(HEADLESS), None);
        assert!(!p.mobile);
        assert!(Products::scan(b"Mozilla/5.0 (Android 16; Mobile; rv:150.0)").mobile);
        assert!(Products::scan(b"x Mobile").mobile);
        assert!(!Products::scan(b"x Mobiles IEMobile/9").mobile);
        let bot = |ua: &[u8]| parse(ua).claim == Family::Bot;
        assert!(bot(b"Mozilla/5.0 (compatible; YandexBot/3.0)"));
        assert!(bot(b"x +HTTPS://a"));
        assert!(!bot(b"Mozilla/5.0 (Windows NT 10.0) Chrome/1 Safari/1"));
        assert!(!bot(b"bo"));
        assert!(bot(b"(bot"));
    }

    /// The platform words [`os`] looks for, in its priority order.
    const PLATFORM_WORDS: [&[u8]; 10] = [
        b"Windows",
        b"Android",
        b"iPhone",
        b"iPad",
        b"iPod",
        b"CrOS",
        b"Macintosh",
        b"Mac OS X",
        b"Linux",
        b"X11",
    ];

    /// The definition [`os`] implements: each platform word searched for
    /// in the comment in turn, the first found in priority order winning.
    fn os_by_word_search(c: &[u8]) -> Os {
        let has = |w: &[u8]| c.windows(w.len()).any(|win| win == w);
        if has(b"Windows") {
            Os::Windows
        } else if has(b"Android") {
            Os::Android
        } else if has(b"iPhone") || has(b"iPad") || has(b"iPod") {
            Os::Ios
        } else if has(b"CrOS") {
            Os::ChromeOs
        } else if has(b"Macintosh") || has(b"Mac OS X") {
            Os::MacOs
        } else if has(b"Linux") || has(b"X11") {
            Os::Linux
        } else {
            Os::Other
        }
    }

    /// The one-pass OS scan against the word-by-word search it replaced,
    /// on comments made of platform words, their fragments and case changes.
    #[test]
    fn os_agrees_with_searching_each_word_in_turn() {
        let os_of = |ua: &[u8]| os(Products::scan(ua).comment(ua));
        let naive = |ua: &[u8]| {
            let Some(open) = ua.iter().position(|&b| b == b'(') else {
                return Os::Other;
            };
            let rest = &ua[open + 1..];
            os_by_word_search(&rest[..rest.iter().position(|&b| b == b')').unwrap_or(rest.len())])
        };
        let words = &PLATFORM_WORDS;
        let mut pieces: Vec<Vec<u8>> =
            vec![b"".to_vec(), b"; ".to_vec(), b")".to_vec(), b"(".to_vec()];
        for w in words {
            pieces.push(w.to_vec());
            pieces.push(w.to_ascii_lowercase());
            pieces.push(w[..w.len() - 1].to_vec());
            pieces.push(w[1..].to_vec());
        }
        let mut checked = 0;
        for a in &pieces {
            for b in &pieces {
                for c in &pieces[..8] {
                    for prefix in [&b"Mozilla/5.0 ("[..], b"x", b"(X"] {
                        let ua = [prefix, &a[..], &b[..], &c[..]].concat();
                        assert_eq!(os_of(&ua), naive(&ua), "{:?}", String::from_utf8_lossy(&ua));
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 30_000);
        for ua in crate::features::corpus::values_of("user-agent") {
            let ua = ua.trim_ascii();
            assert_eq!(os_of(ua), naive(ua), "{:?}", String::from_utf8_lossy(ua));
        }
    }

    /// The one-pass OS search against the word-by-word one on random
    /// comments over the platform words' letters and random bytes, and on
    /// platform words glued at every offset.
    #[test]
    fn os_agrees_on_hostile_comments() {
        let naive = os_by_word_search;
        let alphabet = b"WAiCMLXindowsrOPhaceIdtuxX1 ;\x00\xff\x80";
        let mut rng = crate::features::corpus::Rng::new(0x05_ca11);
        for len in 0..70 {
            for _ in 0..500 {
                let c: Vec<u8> = (0..len)
                    .map(|_| alphabet[rng.below(alphabet.len())])
                    .collect();
                assert_eq!(os(Some(&c)), naive(&c), "{:?}", String::from_utf8_lossy(&c));
                let any: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                assert_eq!(os(Some(&any)), naive(&any), "{any:?}");
            }
        }
        for a in PLATFORM_WORDS {
            for b in PLATFORM_WORDS {
                for pad in 0..36 {
                    let c = [&vec![b'x'; pad][..], a, b";", b].concat();
                    assert_eq!(os(Some(&c)), naive(&c), "{:?}", String::from_utf8_lossy(&c));
                    assert_eq!(os(Some(&c[..c.len() - 1])), naive(&c[..c.len() - 1]));
                }
            }
        }
        assert_eq!(os(Some(b"")), Os::Other);
        assert_eq!(os(None), Os::Other);
    }

    #[test]
    fn bot_words_agree_with_a_naive_search() {
        let naive = |ua: &[u8]| oracle::declares_bot(ua).0;
        let mut pieces: Vec<Vec<u8>> = vec![b"x".to_vec(), b" ".to_vec(), b"Mozilla/5.0".to_vec()];
        for w in BOT_WORDS {
            pieces.push(w.to_vec());
            pieces.push(w.to_ascii_uppercase());
            pieces.push(w[..w.len() - 1].to_vec());
            pieces.push(w[1..].to_vec());
        }
        let mut checked = 0;
        for a in &pieces {
            for b in &pieces {
                for c in [&b""[..], b"t", b"Bo"] {
                    let ua = [&a[..], &b[..], c].concat();
                    assert_eq!(
                        Products::scan(&ua).bot,
                        naive(&ua),
                        "{:?}",
                        String::from_utf8_lossy(&ua)
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 4000);
    }

    /// The scan before it looked for bot words and picked products by
    /// length and first byte: products compared in turn, and a second pass
    /// for the bot words (`declares_bot`).
    mod oracle {
        use super::super::{leading_uint, BOT_WORDS, PRODUCTS};

        pub(super) struct Scan {
            pub(super) found: [bool; PRODUCTS.len()],
            pub(super) major: [Option<u32>; PRODUCTS.len()],
            pub(super) mobile: bool,
            pub(super) webview: bool,
            pub(super) bot_any: bool,
            pub(super) bot: bool,
            pub(super) bot_in_comment: bool,
        }

        pub(super) fn scan(ua: &[u8]) -> Scan {
            let mut p = Scan {
                found: [false; PRODUCTS.len()],
                major: [None; PRODUCTS.len()],
                mobile: false,
                webview: false,
                bot_any: false,
                bot: false,
                bot_in_comment: false,
            };
            (p.bot, p.bot_in_comment) = declares_bot(ua);
            p.bot_any = BOT_WORDS
                .iter()
                .any(|w| ua.windows(w.len()).any(|win| win.eq_ignore_ascii_case(w)));
            let mut start = 0;
            for (i, &b) in ua.iter().enumerate() {
                if !b" ();,/".contains(&b) {
                    continue;
                }
                let token = &ua[start..i];
                p.mobile |= token == b"Mobile";
                p.webview |= token == b"wv";
                if b == b'/' {
                    if let Some(k) = PRODUCTS.iter().position(|&name| name == token) {
                        if !p.found[k] {
                            p.found[k] = true;
                            p.major[k] = leading_uint(&ua[i + 1..]);
                        }
                    }
                }
                start = i + 1;
            }
            p.mobile |= &ua[start..] == b"Mobile";
            p.webview |= &ua[start..] == b"wv";
            p
        }

        // Every bot word at every position, ASCII case-insensitive (`bot`
        // not followed by a letter), outside and inside the first comment:
        // what the BOT_START/BOT_SECOND tables and `bot_word_at` must
        // agree with.
        pub(super) fn declares_bot(ua: &[u8]) -> (bool, bool) {
            let open = ua.iter().position(|&b| b == b'(').map(|o| o + 1);
            let close = open.map(|o| {
                o + ua[o..]
                    .iter()
                    .position(|&b| b == b')')
                    .unwrap_or(ua.len() - o)
            });
            let (mut outside, mut inside) = (false, false);
            for w in BOT_WORDS {
                for i in 0..ua.len().saturating_sub(w.len() - 1) {
                    let end = i + w.len();
                    if !ua[i..end].eq_ignore_ascii_case(w) {
                        continue;
                    }
                    if *w == b"bot" && ua.get(end).is_some_and(u8::is_ascii_alphabetic) {
                        continue;
                    }
                    match (open, close) {
                        (Some(o), Some(c)) if i >= o && i < c => inside = true,
                        _ => outside = true,
                    }
                }
            }
            (outside, inside)
        }
    }

    fn assert_scan_agrees(ua: &[u8]) {
        let (new, old) = (Products::scan(ua), oracle::scan(ua));
        let show = || String::from_utf8_lossy(ua).into_owned();
        assert_eq!(new.found, old.found, "{}", show());
        assert_eq!(new.major, old.major, "{}", show());
        assert_eq!(new.mobile, old.mobile, "{}", show());
        assert_eq!(new.webview, old.webview, "{}", show());
        assert_eq!(new.bot_any, old.bot_any, "{}", show());
        assert_eq!(new.bot, old.bot, "{}", show());
        // The scan stops looking once a word outside the comment decides.
        if !old.bot {
            assert_eq!(new.bot_in_comment, old.bot_in_comment, "{}", show());
        }
        // The comment as the OS lookup found it before the scan did.
        let comment = ua.iter().position(|&b| b == b'(').map(|open| {
            let rest = &ua[open + 1..];
            &rest[..rest.iter().position(|&b| b == b')').unwrap_or(rest.len())]
        });
        assert_eq!(new.comment(ua), comment, "{}", show());
    }

    #[test]
    fn every_product_is_found_by_length_and_first_byte() {
        for (k, name) in PRODUCTS.iter().enumerate() {
            assert_eq!(product(name), Some(k));
            assert_eq!(product(&name[1..]), None);
            if k != AIOHTTP {
                assert_eq!(product(&name.to_ascii_lowercase()), None);
            }
        }
        assert_eq!(product(b""), None);
    }

    /// The one-pass scan against the one it replaced, on every User-Agent
    /// of the fixtures and on strings glued from product names, delimiters,
    /// versions and bot words.
    #[test]
    fn scan_agrees_with_the_two_pass_scan() {
        let fixtures = crate::features::corpus::values_of("user-agent");
        assert!(fixtures.len() > 2000);
        for ua in &fixtures {
            assert_scan_agrees(ua);
            assert_scan_agrees(ua.trim_ascii());
        }
        let mut pieces: Vec<&[u8]> = vec![
            b" ",
            b"(",
            b")",
            b";",
            b",",
            b"/",
            b"Mobile",
            b"1",
            b"147.0",
            b"x",
            b"Mozilla/5.0",
            b"\xff",
            b"Gecko",
            b"KHTML",
        ];
        pieces.extend(PRODUCTS);
        pieces.extend(BOT_WORDS);
        let mut rng = crate::features::corpus::Rng::new(0x5eed_0a11);
        for _ in 0..100_000 {
            assert_scan_agrees(&rng.glue(&pieces, 12));
        }
    }

    /// The chunked scan against the plain one on bytes the glued pieces
    /// rarely give: random bytes of every kind (non-ASCII, control bytes
    /// that equal a delimiter or `+` but for bit 5), every length around
    /// the chunk size, bot words and products across chunk boundaries,
    /// nothing but delimiters, unmatched parentheses, and a huge UA.
    #[test]
    fn scan_agrees_on_hostile_bytes() {
        let mut rng = crate::features::corpus::Rng::new(0x0bad_5ca9);
        let alphabet: Vec<u8> =
            b" ();,/+:bBoOcCrRsSpPlLhHtTfFaAM\x00\x0b\x08\x09\x0c\x0f\x1b\x80\xa0\xffx1.".to_vec();
        for len in 0..80 {
            for _ in 0..300 {
                let any: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                assert_scan_agrees(&any);
                let biased: Vec<u8> = (0..len)
                    .map(|_| alphabet[rng.below(alphabet.len())])
                    .collect();
                assert_scan_agrees(&biased);
            }
        }
        let mut special: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b" ();,/".repeat(40),
            b"((((((((((((((((((((".to_vec(),
            b"))))))))))))))))))))(".to_vec(),
            b"x)(y".to_vec(),
            b"(".to_vec(),
            b")".to_vec(),
            b"Mobile".to_vec(),
            b"/Mobile/".to_vec(),
        ];
        // A word or a product at every offset around the chunk boundaries.
        let words: Vec<&[u8]> = BOT_WORDS
            .iter()
            .copied()
            .chain(PRODUCTS.iter().map(|p| &p[..]))
            .chain([&b"Chrome/147.0"[..], b"Mobile", b"Bo", b"+HTTPS://x"])
            .collect();
        for w in &words {
            for pad in 0..40 {
                let mut ua = vec![b'x'; pad];
                ua.extend_from_slice(w);
                special.push(ua.clone());
                ua.extend_from_slice(b" Mobile/1");
                special.push(ua.clone());
                special.push([&b"("[..], &ua[..]].concat());
            }
        }
        let mut huge = Vec::new();
        while huge.len() < 100_000 {
            huge.extend_from_slice(b"Mozilla/5.0 (X11; Linux x86_64) Chrome/1 \xff\x00");
        }
        special.push(huge.clone());
        huge.extend_from_slice(b"crawler Mobile");
        special.push(huge);
        for ua in &special {
            assert_scan_agrees(ua);
        }
    }

    #[test]
    fn family_classes() {
        assert!(Family::Chrome.is_chromium() && Family::Chrome.is_browser());
        assert!(Family::Firefox.is_browser() && !Family::Firefox.is_chromium());
        assert!(!Family::Curl.is_browser() && !Family::Bot.is_browser());
        assert_eq!(Os::ChromeOs.client_hint_platform(), Some(&b"Chrome OS"[..]));
        assert_eq!(Os::Other.client_hint_platform(), None);
    }
}

//! The challenge's pages and answers outside nginx, for the browser tests
//! (`tests/e2e/test_challenge_page.py`: axe-core, screenshots, every
//! locale) and the solve-time measurement (`scripts/pow-measure.py`), and
//! to preview a template and locales of one's own.
//!
//! ```text
//! challenge_page page [--state challenge|cookies|wait] [--accept-language V]
//!     [--difficulty N] [--nojs SECONDS] [--request-id ID] [--host H]
//!     [--return PATH] [--ua UA] [--ticket T] [--seconds N]
//!     [--template FILE] [--locales DIR] [--default-locale TAG]
//! challenge_page answer --uri TARGET [--ua UA] [--nojs SECONDS]
//! challenge_page csp [--template FILE]
//! ```
//!
//! `page` writes the page to stdout; `answer` checks an answer or a ticket
//! (as nginx would, at the current time, without a client address) and
//! prints `solved <proof> <difficulty>`, `early <seconds>` or `failed
//! <reason>`; `csp` prints the Content-Security-Policy of the pages. The
//! keys are the test fixture's (`tests/fixtures/challenge/secret`).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use edgeguard::challenge::{
    Answer, Challenge, Keys, PageInput, Pages, State, LOCATION_CAP, PAGE_CAP, SET_COOKIE_CAP,
};
use std::io::Write as _;

fn arg<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let keys = Keys::load(&root.join("tests/fixtures/challenge/secret")).expect("fixture keys");
    let pages = match Pages::load(
        arg(&args, "--template").map(Path::new),
        arg(&args, "--locales").map(Path::new),
        arg(&args, "--default-locale").unwrap_or("en"),
    ) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            eprintln!("challenge_page: {e}");
            return ExitCode::from(2);
        }
    };
    let mut ch = Challenge::with_pages(Arc::new(keys), pages);
    ch.nojs_wait = arg(&args, "--nojs").and_then(|s| s.parse().ok());
    let ua = arg(&args, "--ua").unwrap_or("").as_bytes();
    let client = ch.binding(None, ua, None);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut stdout = std::io::stdout().lock();
    match args.first().map(String::as_str) {
        Some("page") => {
            let state = match arg(&args, "--state").unwrap_or("challenge") {
                "cookies" => State::CookiesNeeded,
                "wait" => State::Wait,
                _ => State::Challenge,
            };
            let input = PageInput {
                state,
                accept_language: arg(&args, "--accept-language").unwrap_or("").as_bytes(),
                host: arg(&args, "--host").unwrap_or("").as_bytes(),
                request_id: arg(&args, "--request-id").unwrap_or("").as_bytes(),
                return_to: arg(&args, "--return").unwrap_or("/").as_bytes(),
                difficulty: arg(&args, "--difficulty")
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(16),
                attempts: 0,
                ticket: arg(&args, "--ticket").map(str::as_bytes),
                seconds: arg(&args, "--seconds")
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0),
            };
            let mut out = vec![0u8; PAGE_CAP];
            let n = ch
                .page(&input, &client, now, &mut out)
                .expect("PAGE_CAP is enough");
            stdout.write_all(&out[..n]).unwrap();
        }
        Some("answer") => {
            let uri = arg(&args, "--uri").unwrap_or("").as_bytes();
            let (mut sc, mut loc) = ([0u8; SET_COOKIE_CAP], [0u8; LOCATION_CAP]);
            let a = ch.answer(uri, &client, now, false, false, &mut sc, &mut loc);
            let line = match a.expect("the caps are enough") {
                Answer::Solved { proof, .. } => format!("solved {}", proof.as_str()),
                Answer::TooEarly { seconds } => format!("early {seconds}"),
                Answer::Failed(r) => format!("failed {}", r.as_str()),
            };
            writeln!(stdout, "{line}").unwrap();
        }
        Some("csp") => writeln!(stdout, "{}", ch.pages().csp()).unwrap(),
        _ => {
            eprintln!("usage: challenge_page page|answer|csp [options] (see the source's header)");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

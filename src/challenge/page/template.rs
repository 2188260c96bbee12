//! The page template's language: HTML with `{{…}}` tags.
//!
//! | tag | what |
//! |---|---|
//! | `{{name}}` | a value (the table in `docs/challenge.md`; [`Var`]) |
//! | `{{t.key}}` | a string of the request's locale (`locale.rs`'s `KEYS`), HTML-escaped |
//! | `{{#cond}}…{{/cond}}` | the text when `cond` holds ([`Cond`]) |
//! | `{{^cond}}…{{/cond}}` | the text when it does not |
//! | `{{! text }}` | a comment, left out |
//!
//! Anything else in `{{ }}` is refused at load, naming the file and the
//! line, as are sections left open or closed twice.

use super::error::PageError;
use super::locale::KEYS;

/// A value the template writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Var {
    /// The locale's tag (`<html lang>`).
    Lang,
    /// `ltr` or `rtl` (`<html dir>`).
    Dir,
    /// The site's name: `challenge_site`, else the request's `Host`.
    Site,
    /// The request's id (`$request_id`), for support.
    RequestId,
    /// The challenge's data and script (challenge page only).
    Solver,
    /// The no-JavaScript refresh, in a `<noscript>` of the challenge page
    /// (nothing on the others).
    Refresh,
    /// The path to return to, for links ("try again").
    ReturnUrl,
    /// The no-JavaScript ticket's URL, for links.
    NojsUrl,
    /// The no-JavaScript wait in seconds.
    Seconds,
    /// A string of the locale, by its index in `KEYS`.
    T(usize),
}

const VARS: [(&str, Var); 9] = [
    ("lang", Var::Lang),
    ("dir", Var::Dir),
    ("site", Var::Site),
    ("request_id", Var::RequestId),
    ("solver", Var::Solver),
    ("refresh", Var::Refresh),
    ("return_url", Var::ReturnUrl),
    ("nojs_url", Var::NojsUrl),
    ("seconds", Var::Seconds),
];

/// A condition a section depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cond {
    /// The challenge page.
    Challenge,
    /// The "cookies are needed" page.
    Cookies,
    /// The no-JavaScript wait page.
    Wait,
    /// The no-JavaScript fallback is on (a ticket is there).
    Nojs,
    /// The request has an id.
    Reference,
}

const CONDS: [(&str, Cond); 5] = [
    ("challenge", Cond::Challenge),
    ("cookies", Cond::Cookies),
    ("wait", Cond::Wait),
    ("nojs", Cond::Nojs),
    ("reference", Cond::Reference),
];

/// One piece of a parsed template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    /// Text, as written.
    Text(String),
    /// A value, and the line it is on.
    Var(Var, usize),
    /// A section: its condition, whether inverted (`^`), its body.
    Section(Cond, bool, Vec<Node>),
}

/// The names `{{…}}` may hold, for error messages.
fn known() -> String {
    let vars: Vec<&str> = VARS.iter().map(|(n, _)| *n).collect();
    let conds: Vec<&str> = CONDS.iter().map(|(n, _)| *n).collect();
    format!(
        "values {}, t.<key>; sections #/^ {}",
        vars.join(", "),
        conds.join(", ")
    )
}

/// Parses a template; `file` names it in errors.
pub(crate) fn parse(file: &str, text: &str) -> Result<Vec<Node>, PageError> {
    // The stack of open sections: (cond, inverted, its line, its body so far).
    let mut stack: Vec<(Cond, bool, usize, Vec<Node>)> = Vec::new();
    let mut top: Vec<Node> = Vec::new();
    let mut rest = text;
    let mut line = 1;
    let err = |line: usize, m: String| PageError(format!("{file}: line {line}: {m}"));
    check_styles(file, text)?;
    loop {
        let body = stack.last_mut().map_or(&mut top, |s| &mut s.3);
        let Some(open) = rest.find("{{") else {
            if !rest.is_empty() {
                body.push(Node::Text(rest.to_owned()));
            }
            break;
        };
        if open > 0 {
            body.push(Node::Text(rest[..open].to_owned()));
        }
        line += rest[..open].matches('\n').count();
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            return Err(err(line, "a \"{{\" without its \"}}\"".into()));
        };
        let tag = &after[..close];
        let tag_line = line;
        line += tag.matches('\n').count();
        rest = &after[close + 2..];
        if let Some(_comment) = tag.strip_prefix('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('#').or_else(|| tag.strip_prefix('^')) {
            let cond = CONDS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, c)| *c)
                .ok_or_else(|| {
                    err(
                        tag_line,
                        format!("unknown section {{{{{tag}}}}} ({})", known()),
                    )
                })?;
            stack.push((cond, tag.starts_with('^'), tag_line, Vec::new()));
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let Some((cond, inverted, _, nodes)) = stack.pop() else {
                return Err(err(
                    tag_line,
                    format!("{{{{{tag}}}}} closes no open section"),
                ));
            };
            let open_name = CONDS
                .iter()
                .find(|(_, c)| *c == cond)
                .map_or("", |(n, _)| *n);
            if name != open_name {
                return Err(err(
                    tag_line,
                    format!(
                        "{{{{{tag}}}}} closes {{{{{}{open_name}}}}}",
                        if inverted { '^' } else { '#' }
                    ),
                ));
            }
            let body = stack.last_mut().map_or(&mut top, |s| &mut s.3);
            body.push(Node::Section(cond, inverted, nodes));
            continue;
        }
        let var = if let Some(key) = tag.strip_prefix("t.") {
            KEYS.iter()
                .position(|(k, _)| *k == key)
                .map(Var::T)
                .ok_or_else(|| {
                    let keys: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
                    err(
                        tag_line,
                        format!(
                            "unknown string {{{{{tag}}}}} (the locales have {})",
                            keys.join(", ")
                        ),
                    )
                })?
        } else {
            VARS.iter()
                .find(|(n, _)| *n == tag)
                .map(|(_, v)| *v)
                .ok_or_else(|| {
                    err(
                        tag_line,
                        format!("unknown placeholder {{{{{tag}}}}} ({})", known()),
                    )
                })?
        };
        body.push(Node::Var(var, tag_line));
    }
    if let Some((cond, inverted, at, _)) = stack.pop() {
        let name = CONDS
            .iter()
            .find(|(_, c)| *c == cond)
            .map_or("", |(n, _)| *n);
        return Err(err(
            at,
            format!(
                "{{{{{}{name}}}}} is never closed",
                if inverted { '^' } else { '#' }
            ),
        ));
    }
    Ok(top)
}

/// Refuses tags inside `<style>`: the styles are hashed once for the
/// page's Content-Security-Policy, so they must be the same on every page.
fn check_styles(file: &str, text: &str) -> Result<(), PageError> {
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(start) = lower[from..].find("<style").map(|i| i + from) {
        let end = lower[start..]
            .find("</style")
            .map_or(text.len(), |i| i + start);
        if let Some(tag) = text[start..end].find("{{") {
            let line = text[..start + tag].matches('\n').count() + 1;
            return Err(PageError(format!(
                "{file}: line {line}: no {{{{…}}}} inside <style> (its hash is in the page's Content-Security-Policy)"
            )));
        }
        from = end.max(start + 1);
    }
    Ok(())
}

/// The `<style>` contents of a template, for their CSP hashes.
pub(crate) fn styles(text: &str) -> Vec<&str> {
    let lower = text.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(start) = lower[from..].find("<style").map(|i| i + from) {
        let Some(open_end) = lower[start..].find('>').map(|i| i + start + 1) else {
            break;
        };
        let end = lower[open_end..]
            .find("</style")
            .map_or(text.len(), |i| i + open_end);
        out.push(&text[open_end..end]);
        from = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(text: &str) -> String {
        parse("page.html", text).unwrap_err().0
    }

    #[test]
    fn tags_parse_into_a_tree() {
        let t = parse(
            "p",
            "a{{lang}}\n{{#nojs}}b{{t.retry}}{{/nojs}}{{! note }}{{^reference}}c{{/reference}}",
        )
        .unwrap();
        assert_eq!(
            t,
            [
                Node::Text("a".into()),
                Node::Var(Var::Lang, 1),
                Node::Text("\n".into()),
                Node::Section(
                    Cond::Nojs,
                    false,
                    vec![Node::Text("b".into()), Node::Var(Var::T(9), 2)]
                ),
                Node::Section(Cond::Reference, true, vec![Node::Text("c".into())]),
            ]
        );
    }

    #[test]
    fn bad_templates_name_file_and_line() {
        assert_eq!(
            e("<p>\n\n{{sitename}}"),
            "page.html: line 3: unknown placeholder {{sitename}} (values lang, dir, site, request_id, solver, refresh, return_url, nojs_url, seconds, t.<key>; sections #/^ challenge, cookies, wait, nojs, reference)"
        );
        assert!(e("\n{{t.nope}}").starts_with(
            "page.html: line 2: unknown string {{t.nope}} (the locales have title, heading"
        ));
        assert!(
            e("{{#maybe}}{{/maybe}}").starts_with("page.html: line 1: unknown section {{#maybe}}")
        );
        assert_eq!(
            e("{{#nojs}}\n{{/wait}}"),
            "page.html: line 2: {{/wait}} closes {{#nojs}}"
        );
        assert_eq!(
            e("x\n{{^nojs}}"),
            "page.html: line 2: {{^nojs}} is never closed"
        );
        assert_eq!(
            e("{{/nojs}}"),
            "page.html: line 1: {{/nojs}} closes no open section"
        );
        assert_eq!(
            e("a\nb {{lang"),
            "page.html: line 2: a \"{{\" without its \"}}\""
        );
        assert_eq!(
            e("{{ lang }}").split(" (").next().unwrap(),
            "page.html: line 1: unknown placeholder {{ lang }}"
        );
        assert!(e("<style>\n{{lang}}</style>")
            .starts_with("page.html: line 2: no {{…}} inside <style>"));
    }

    #[test]
    fn styles_are_found() {
        assert_eq!(
            styles("<STYLE media=x>a{}</style><p><style>b</style>"),
            ["a{}", "b"]
        );
        assert!(styles("<p>").is_empty());
    }
}

use super::*;

const NONCE: [u8; TOKEN_TEXT] = [b'N'; TOKEN_TEXT];

fn values<'a>() -> Values<'a> {
    Values {
        nonce: &NONCE,
        difficulty: 16,
        request_id: b"5f3ca1b2c3d4e5f60718293a4b5c6d7e",
        site: None,
        host: b"shop.example",
        return_to: b"/cart?id=7&x=1",
        ticket: None,
        seconds: 5,
    }
}

fn render(p: &Pages, locale: usize, state: State, v: &Values<'_>) -> String {
    let mut out = vec![0u8; PAGE_CAP];
    let n = p.render(locale, state, v, &mut out).unwrap();
    String::from_utf8(out[..n].to_vec()).unwrap()
}

fn html(s: &str) -> String {
    let mut v = Vec::new();
    write_html(&mut v, s.as_bytes()).unwrap();
    String::from_utf8(v).unwrap()
}

/// A locale's string as the page writes it: escaped, placeholders filled.
fn filled(l: &Locale, key: &str, site: &str, seconds: u8) -> String {
    html(
        &l.get(key)
            .replace("{site}", site)
            .replace("{seconds}", &seconds.to_string()),
    )
}

fn data_of(page: &str) -> serde_json::Value {
    let json = page
        .split("id=\"edgeguard-data\">")
        .nth(1)
        .unwrap()
        .split("</script>")
        .next()
        .unwrap();
    serde_json::from_str(json).unwrap()
}

/// Every bundled locale renders every page: its own `lang` and `dir`,
/// each of its strings where it belongs, nothing left unfilled.
#[test]
fn every_bundled_locale_renders_every_page() {
    let p = Pages::bundled();
    assert_eq!(p.locales().count(), LOCALES.len());
    let ticket = [b'T'; TOKEN_TEXT];
    for (i, c) in p.locales.iter().enumerate() {
        let l = &c.locale;
        for nojs in [false, true] {
            let v = Values {
                ticket: nojs.then_some(&ticket[..]),
                ..values()
            };
            for state in State::ALL {
                let page = render(&p, i, state, &v);
                let what = format!("{} {} nojs={nojs}", l.lang, state.as_str());
                assert!(
                    page.contains(&format!("<html lang=\"{}\" dir=\"ltr\">", l.lang)),
                    "{what}"
                );
                for left in ["{{", "}}", "{site}", "{seconds}"] {
                    let outside_data = page.split("id=\"edgeguard-data\"").next().unwrap();
                    assert!(!outside_data.contains(left), "{what}: {left}");
                }
                let has = |key: &str| page.contains(&filled(l, key, "shop.example", 5));
                assert!(has("reference"), "{what}");
                assert!(
                    page.contains("<code>5f3ca1b2c3d4e5f60718293a4b5c6d7e</code>"),
                    "{what}"
                );
                match state {
                    State::Challenge => {
                        for key in ["title", "heading", "lead", "why", "progress"] {
                            assert!(has(key), "{what}: {key}");
                        }
                        assert_eq!(
                            has("noscript_wait") && has("noscript_continue"),
                            nojs,
                            "{what}"
                        );
                        assert_eq!(has("noscript_none"), !nojs, "{what}");
                        assert_eq!(page.contains("<noscript><meta http-equiv=\"refresh\" content=\"5; url=/.edgeguard/challenge?t=TTTT"), nojs, "{what}");
                        let d = data_of(&page);
                        assert_eq!(d["n"].as_str().unwrap().len(), TOKEN_TEXT);
                        assert_eq!((d["d"].as_u64(), d["w"].as_u64()), (Some(16), Some(5)));
                        assert_eq!(d["r"], "%2Fcart%3Fid%3D7%26x%3D1");
                        assert_eq!(d["site"], "shop.example");
                        assert_eq!(d["t"].as_str().unwrap().is_empty(), !nojs);
                        for key in SCRIPT_KEYS {
                            assert_eq!(d["s"][key].as_str(), Some(l.get(key)), "{what}: {key}");
                        }
                        assert!(
                            page.contains("role=\"status\" aria-live=\"polite\""),
                            "{what}"
                        );
                    }
                    State::CookiesNeeded => {
                        assert!(
                            has("cookies_heading") && has("cookies_text") && has("retry"),
                            "{what}"
                        );
                        assert!(page.contains("href=\"/cart?id=7&amp;x=1\""), "{what}");
                        assert!(
                            !page.contains("edgeguard-data") && !page.contains("http-equiv"),
                            "{what}"
                        );
                    }
                    State::Wait => {
                        assert!(has("wait_heading") && has("wait_text"), "{what}");
                        assert!(!page.contains("edgeguard-data"), "{what}");
                        assert!(!page.contains("http-equiv"), "{what}: no automatic refresh");
                        if nojs {
                            assert!(
                                page.contains("<a href=\"/.edgeguard/challenge?t=TTTT"),
                                "{what}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// The bundled translations are complete and distinct: no locale repeats
/// English (a key copied and left untranslated), each names itself.
#[test]
fn bundled_translations_are_their_own() {
    let p = Pages::bundled();
    let en = &p.locales[p.negotiate(b"en")].locale;
    for c in &p.locales {
        let l = &c.locale;
        assert_eq!(l.strings.len(), KEYS.len());
        if l.lang == "en" {
            continue;
        }
        for (i, (key, _)) in KEYS.iter().enumerate() {
            assert_ne!(
                l.strings[i], en.strings[i],
                "{}: {key} is the English text",
                l.lang
            );
        }
        assert_ne!(l.name, l.lang, "{}: its name", l.lang);
    }
    let tags: Vec<&str> = p.locales().collect();
    assert_eq!(
        tags,
        ["en", "de", "fr", "es", "pt", "it", "pl", "ja", "zh", "ru"]
    );
}

#[test]
fn accept_language_picks_the_page_language() {
    let p = Pages::bundled();
    let tag = |h: &str| p.tag(p.negotiate(h.as_bytes())).to_owned();
    assert_eq!(tag("pt-BR,pt;q=0.9,en-US;q=0.8,en;q=0.7"), "pt");
    assert_eq!(tag("de-DE,de;q=0.9,en;q=0.8"), "de");
    assert_eq!(tag("zh-TW,zh;q=0.9"), "zh");
    assert_eq!(tag("ja-JP"), "ja");
    assert_eq!(tag("nl-NL,nl;q=0.9,fr;q=0.5"), "fr");
    assert_eq!(tag("nl"), "en");
    assert_eq!(tag(""), "en");
    let page = render(
        &p,
        p.negotiate(b"ru-RU,ru;q=0.9"),
        State::Challenge,
        &values(),
    );
    assert!(page.contains("<html lang=\"ru\"") && page.contains("Проверка браузера"));
}

/// An operator's locale directory overrides bundled strings and adds
/// locales; a new locale must be complete; mistakes name file and line.
#[test]
fn operator_locales_override_and_add() {
    let tpl = ("page.html", TEMPLATE);
    let de = (
        "/etc/edgeguard/locales/de.json",
        "{\"lang\": \"de\", \"strings\": {\"heading\": \"Einen Augenblick\"}}",
    );
    let en = LOCALES[0].1;
    let nl_text = en
        .replace("\"lang\": \"en\"", "\"lang\": \"nl\"")
        .replace("\"name\": \"English\"", "\"name\": \"Nederlands\"")
        .replace("Checking your browser", "Uw browser wordt gecontroleerd");
    let nl = ("/etc/edgeguard/locales/nl.json", nl_text.as_str());
    let p = Pages::parse(tpl, &[de, nl], "nl").unwrap();
    let page = render(&p, p.negotiate(b"de-AT"), State::Challenge, &values());
    assert!(
        page.contains("<h1 id=\"edgeguard-heading\">Einen Augenblick</h1>"),
        "{page}"
    );
    assert!(
        page.contains("Bevor Sie shop.example aufrufen"),
        "the rest stays bundled"
    );
    assert_eq!(p.tag(p.negotiate(b"")), "nl", "the default");
    assert_eq!(p.tag(p.negotiate(b"nl-BE")), "nl");
    assert_eq!(p.name(p.negotiate(b"nl")), "Nederlands");

    let err =
        |files: &[(&str, &str)], default: &str| Pages::parse(tpl, files, default).unwrap_err().0;
    assert_eq!(
        err(&[("x/sv.json", "{\"lang\": \"sv\", \"strings\": {\"title\": \"Kontroll\"}}")], "en"),
        "x/sv.json: strings.heading: missing (a new locale gives every key: title, heading, lead, why, progress, working, done, error_heading, error, retry, nojs_link, noscript_wait, noscript_continue, noscript_none, reference, cookies_heading, cookies_text, wait_heading, wait_text, this_site)"
    );
    assert_eq!(
        err(
            &[(
                "x/de.json",
                "{\"lang\": \"de\",\n \"strings\": {\n  \"lead\": \"Vor {sitename}\"}}"
            )],
            "en"
        ),
        "x/de.json: line 3: strings.lead: unknown placeholder {sitename} (this key takes {site})"
    );
    assert_eq!(
        err(
            &[(
                "x/de.json",
                "{\"lang\": \"de\",\n \"strings\": {\"headline\": \"x\"}}"
            )],
            "en"
        )
        .split(" (")
        .next()
        .unwrap(),
        "x/de.json: line 2: strings.headline: unknown key"
    );
    assert!(err(&[("x/de.json", "{\"lang\": \"de\",\n\n oops}")], "en")
        .starts_with("x/de.json: line 3: not JSON"));
    assert_eq!(
        err(&[("x/de.json", "{\"lang\": \"fr\"}")], "en"),
        "x/de.json: line 1: lang: \"fr\" in a file named de.json (name it fr.json)"
    );
    assert_eq!(
        err(
            &[("x/de.json", "{\"lang\": \"de\", \"dir\": \"down\"}")],
            "en"
        ),
        "x/de.json: line 1: dir: must be \"ltr\" or \"rtl\", got \"down\""
    );
    assert!(
        err(&[], "xx").starts_with("challenge_default_locale: no locale \"xx\" (there are en, de")
    );
    // A right-to-left locale gets dir="rtl".
    let ar_text = en
        .replace("\"lang\": \"en\"", "\"lang\": \"ar\"")
        .replace("\"dir\": \"ltr\"", "\"dir\": \"rtl\"");
    let p = Pages::parse(tpl, &[("x/ar.json", &ar_text)], "en").unwrap();
    assert!(render(&p, p.negotiate(b"ar"), State::Wait, &values())
        .contains("<html lang=\"ar\" dir=\"rtl\">"));
}

/// A template is checked at load: unknown tags by line, and every page
/// must write what it needs.
#[test]
fn templates_are_checked_at_load() {
    let e = |t: &str| Pages::parse(("my.html", t), &[], "en").unwrap_err().0;
    let without = |tag: &str| TEMPLATE.replacen(tag, "", 1);
    assert_eq!(
        e(&without("{{solver}}")),
        "my.html: the challenge page has no {{solver}} (every challenge page needs {{lang}}, {{dir}}, {{solver}}, {{refresh}}, {{request_id}})"
    );
    assert!(e(&without("{{return_url}}"))
        .starts_with("my.html: the cookies page has no {{return_url}}"));
    assert!(
        e(&without("{{refresh}}")).starts_with("my.html: the challenge page has no {{refresh}}")
    );
    let line = TEMPLATE[..TEMPLATE.find("{{t.why}}").unwrap()]
        .matches('\n')
        .count()
        + 1;
    assert_eq!(
        e(&TEMPLATE.replace("{{t.why}}", "{{t.whyy}}"))
            .split(" (")
            .next()
            .unwrap(),
        format!("my.html: line {line}: unknown string {{{{t.whyy}}}}")
    );
    // A minimal template of one's own works.
    let mine = "<html lang=\"{{lang}}\" dir=\"{{dir}}\"><head>{{refresh}}</head><body>\
                {{#challenge}}<h1>{{t.heading}}</h1>{{solver}}{{/challenge}}\
                {{#cookies}}<a href=\"{{return_url}}\">{{t.retry}}</a>{{/cookies}}\
                {{#wait}}<a href=\"{{nojs_url}}\">{{t.noscript_continue}}</a>{{/wait}}\
                <small>{{request_id}}</small></body></html>";
    let p = Pages::parse(("mine.html", mine), &[], "fr").unwrap();
    let page = render(&p, p.negotiate(b""), State::Challenge, &values());
    assert!(page.starts_with("<html lang=\"fr\" dir=\"ltr\"><head></head><body><h1>Vérification de votre navigateur</h1><script type=\"application/json\""), "{page}");
    assert!(p.csp().contains("style-src 'none'"), "{}", p.csp());
}

/// What comes from the request is shown only when harmless, and escaped.
#[test]
fn request_values_are_checked_and_escaped() {
    let p = Pages::bundled();
    let hostile = Values {
        host: b"<script>alert(1)</script>",
        request_id: b"id\"><script>",
        return_to: b"/a?\"x'<y>&z",
        ..values()
    };
    let page = render(&p, 0, State::CookiesNeeded, &hostile);
    assert!(
        !page.contains("<script>alert") && !page.contains("id\"><script>"),
        "{page}"
    );
    assert!(
        page.contains("Allow cookies for this site in your browser"),
        "{page}"
    );
    assert!(
        page.contains("href=\"/a?&quot;x&#39;&lt;y&gt;&amp;z\""),
        "{page}"
    );
    assert!(
        !page.contains("class=\"reference"),
        "an odd request id: no reference line"
    );
    let site = Values {
        site: Some(b"Caf\xc3\xa9 <Shop> & \"Co\""),
        ..values()
    };
    let page = render(&p, 0, State::Challenge, &site);
    assert!(
        page.contains("continue to Café &lt;Shop&gt; &amp; &quot;Co&quot;, your"),
        "{page}"
    );
    assert_eq!(data_of(&page)["site"], "Café <Shop> & \"Co\"");
    assert!(!page.split("</script>").next().unwrap().contains("<Shop>"));
    let none = Values {
        request_id: b"",
        ..values()
    };
    assert!(!render(&p, 0, State::Challenge, &none).contains("class=\"reference"));
}

/// The largest values still fit the bound computed at load, which fits
/// PAGE_CAP; a smaller buffer is an error, never a cut page.
#[test]
fn pages_are_bounded() {
    let p = Pages::bundled();
    let long_path: Vec<u8> = std::iter::once(b'/')
        .chain(std::iter::repeat_n(b'"', MAX_RETURN - 1))
        .collect();
    let ticket = [b'T'; TOKEN_TEXT];
    let site = "\"".repeat(MAX_SITE);
    let big = Values {
        return_to: &long_path,
        ticket: Some(&ticket),
        site: Some(site.as_bytes()),
        request_id: &[b'a'; MAX_REQUEST_ID],
        seconds: 60,
        difficulty: 24,
        ..values()
    };
    for (i, c) in p.locales.iter().enumerate() {
        for state in State::ALL {
            let mut out = vec![0u8; PAGE_CAP];
            let n = p.render(i, state, &big, &mut out).unwrap();
            assert!(
                n <= p.max_len(c, state) && p.max_len(c, state) <= PAGE_CAP,
                "{} {state:?}: {n}",
                c.locale.lang
            );
            let mut short = vec![0u8; n - 1];
            assert_eq!(p.render(i, state, &big, &mut short), Err(TooSmall));
        }
    }
    // A template that could outgrow PAGE_CAP is refused.
    let huge = TEMPLATE.replace("</body>", &format!("{}</body>", "x".repeat(PAGE_CAP)));
    assert!(Pages::parse(("huge.html", &huge), &[], "en")
        .unwrap_err()
        .0
        .contains("more than 65536"));
}

/// The policy allows exactly the script and the styles the pages carry.
#[test]
fn csp_names_the_script_and_styles_by_hash() {
    let p = Pages::bundled();
    let b64 = |s: &str| {
        let mut out = [0u8; 44];
        let n = STANDARD
            .encode_slice(Sha256::digest(s.as_bytes()), &mut out)
            .unwrap();
        String::from_utf8(out[..n].to_vec()).unwrap()
    };
    let page = render(&p, 0, State::Challenge, &values());
    let script = page
        .rsplit("<script>")
        .next()
        .unwrap()
        .split("</script>")
        .next()
        .unwrap();
    let style = page
        .split("<style>")
        .nth(1)
        .unwrap()
        .split("</style>")
        .next()
        .unwrap();
    let csp = p.csp();
    assert!(
        csp.contains(&format!("script-src 'sha256-{}';", b64(script))),
        "{csp}"
    );
    assert!(
        csp.contains(&format!("style-src 'sha256-{}';", b64(style))),
        "{csp}"
    );
    assert!(
        csp.starts_with("default-src 'none'; ") && !csp.contains("unsafe"),
        "{csp}"
    );
    // No inline handlers or style attributes, which a hash cannot allow.
    for bad in [" style=\"", " onload=", " onclick=", "javascript:"] {
        assert!(!page.contains(bad), "{bad}");
    }
}

#[test]
fn load_reads_files_and_names_them() {
    let dir = std::env::temp_dir().join(format!("edgeguard-pages-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("locales")).unwrap();
    std::fs::write(
        dir.join("page.html"),
        TEMPLATE.replace("{{t.why}}", "{{t.why}} (custom)"),
    )
    .unwrap();
    std::fs::write(
        dir.join("locales/fr.json"),
        "{\"lang\": \"fr\", \"strings\": {\"retry\": \"Recommencer\"}}",
    )
    .unwrap();
    std::fs::write(dir.join("locales/README"), "not a locale").unwrap();
    let p = Pages::load(
        Some(&dir.join("page.html")),
        Some(&dir.join("locales")),
        "en",
    )
    .unwrap();
    let fr = render(&p, p.negotiate(b"fr"), State::CookiesNeeded, &values());
    assert!(fr.contains(">Recommencer</a>"), "{fr}");
    assert!(render(&p, 0, State::Challenge, &values()).contains("for a while. (custom)"));
    let missing = Pages::load(Some(&dir.join("nope.html")), None, "en")
        .unwrap_err()
        .0;
    assert!(
        missing.starts_with(&format!("{}: cannot read", dir.join("nope.html").display())),
        "{missing}"
    );
    std::fs::write(dir.join("locales/de.json"), "{").unwrap();
    let bad = Pages::load(None, Some(&dir.join("locales")), "en")
        .unwrap_err()
        .0;
    assert!(
        bad.starts_with(&format!(
            "{}: line 1: not JSON",
            dir.join("locales/de.json").display()
        )),
        "{bad}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

use super::*;

/// The list edgeguard ships (workload a of the benchmark).
const SHIPPED: &[u8] = include_bytes!("../../nginx-conf/internal-headers.txt");
/// trie-hard's header fixture (workload b of the benchmark).
const TRIE_HARD: &[u8] = include_bytes!("../../benches/data/trie-hard-headers.txt");
/// Real request header names that an edge must let through.
const PUBLIC: &[u8] = include_bytes!("../../benches/data/request-headers.txt");

fn set(text: &str) -> HeaderSet {
    HeaderSet::parse("<test>", text.as_bytes()).unwrap()
}

fn headers<'a>(names: &[&'a [u8]]) -> Vec<Header<'a>> {
    names.iter().map(|n| Header::new(n, b"v")).collect()
}

#[test]
fn is_internal_table() {
    let set = set("x-user-id\nx-internal-*\nCF-Ray\nx_envoy_*\nx-a\n");
    let long_internal = [b"x-internal-".as_slice(), &[b'z'; 300]].concat();
    let long_exact = [b"x-user-id".as_slice(), &[b'z'; 300]].concat();
    let cases: &[(&[u8], bool)] = &[
        // exact names in every case and separator spelling
        (b"x-user-id", true),
        (b"X-User-Id", true),
        (b"X_USER_ID", true),
        (b"x_user-id", true),
        (b"cf-ray", true),
        (b"CF_RAY", true),
        (b"x-a", true),
        // a name that is a prefix of an internal name, and the reverse
        (b"x-user", false),
        (b"x-user-i", false),
        (b"x-user-ids", false),
        (b"x-user-id-", false),
        (b"x-", false),
        (b"x", false),
        (b"x-ab", false),
        (b"cf-rays", false),
        // prefix rules, including the bare prefix and `_` in the list entry
        (b"x-internal-", true),
        (b"x-internal-token", true),
        (b"X_Internal_Token", true),
        (b"x-envoy-original-path", true),
        (b"X-ENVOY-", true),
        (b"x-internal", false),
        (b"x-interna", false),
        (b"x-envoy", false),
        (b"xx-internal-a", false),
        // empty and 8-bit names
        (b"", false),
        (b"x-user-\xe9d", false),
        (b"x-user-id\xff", false),
        (b"\xffx-user-id", false),
        (b"x-internal-\xff", true),
        (b"x-user-id\0", false),
        // names past the length limit only match prefix rules
        (&long_internal, true),
        (&long_exact, false),
        // ordinary headers
        (b"accept", false),
        (b"user-agent", false),
        (b"x-forwarded-for", false),
    ];
    for &(name, expected) in cases {
        assert_eq!(set.is_internal(name), expected, "{:?}", name.escape_ascii());
    }
    assert_eq!(set.len(), 5);
    assert!(!set.is_empty());
}

#[test]
fn len_counts_distinct_rules() {
    let cases: &[(&str, usize)] = &[
        ("x-a\n", 1),
        ("x-a\nX_A\nx-a # again\n", 1),
        ("x-a\nx-a*\n", 2),
        ("x-a*\nX_A*\nx-b*\n", 2),
        ("x-a\nx-b\nx-c*\n", 3),
    ];
    for &(text, len) in cases {
        assert_eq!(set(text).len(), len, "{text:?}");
    }
}

#[test]
fn only_prefix_rules_or_only_exact_names() {
    let prefixes = set("x-internal-*\n");
    assert!(prefixes.is_internal(b"x-internal-a"));
    assert!(!prefixes.is_internal(b"x-other"));
    let exact = set("x-internal\n");
    assert!(exact.is_internal(b"x-internal"));
    assert!(!exact.is_internal(b"x-internal-a"));
}

fn find(set: &HeaderSet, headers: &[Header<'_>], clear: &mut [u32]) -> Matches {
    set.find_internal(headers, clear)
}

#[test]
fn find_internal_counts_repeats_once_in_clear() {
    let set = set("x-user-id\nx-internal-*\n");
    let request = headers(&[
        b"host",
        b"X-User-Id",
        b"accept",
        b"x-internal-a",
        b"x_user_id",
        b"x-user-id",
        b"X-INTERNAL-A",
        b"x-internal-b",
    ]);
    let mut clear = [u32::MAX; 8];
    let found = find(&set, &request, &mut clear);
    // `x_user_id` is internal (it folds to `x-user-id`) but nginx clears it
    // under its own name, so it needs an index of its own.
    assert_eq!(
        found,
        Matches {
            matched: 6,
            distinct: 4,
            unremovable: 0,
        }
    );
    assert_eq!(clear[..4], [1, 3, 4, 7]);
    assert!(
        clear[4..].iter().all(|&i| i == u32::MAX),
        "wrote past distinct"
    );
}

#[test]
fn find_internal_repeated_three_times() {
    let set = set("x-a\n");
    let request = headers(&[b"x-a", b"X-A", b"x-A", b"x_a", b"X_A"]);
    let mut clear = [0u32; 5];
    assert_eq!(
        find(&set, &request, &mut clear),
        Matches {
            matched: 5,
            distinct: 2,
            unremovable: 0,
        }
    );
    // One clear per spelling nginx tells apart.
    assert_eq!(clear[..2], [0, 3]);
}

#[test]
fn find_internal_with_short_clear_still_counts_everything() {
    let set = set("x-a\nx-b\nx-c\n");
    let request = headers(&[b"x-a", b"x-b", b"x-a", b"x-c", b"x-b", b"x-c", b"ok"]);
    for len in 0..=4 {
        let mut clear = vec![u32::MAX; len];
        let found = find(&set, &request, &mut clear);
        assert_eq!(
            found,
            Matches {
                matched: 6,
                distinct: 3,
                unremovable: 0,
            },
            "clear of {len}"
        );
        let expected = [0, 1, 3];
        let written = len.min(3);
        assert_eq!(clear[..written], expected[..written], "clear of {len}");
        assert!(clear[written..].iter().all(|&i| i == u32::MAX));
    }
}

#[test]
fn find_internal_on_requests_without_internal_headers() {
    let set = set("x-a\n");
    let mut clear = [7u32; 2];
    assert_eq!(find(&set, &[], &mut clear), Matches::default());
    let request = headers(&[b"", b"accept", b"x-ab"]);
    assert_eq!(find(&set, &request, &mut clear), Matches::default());
    // Null or negative keys from C: src/ffi/types.rs's tests (raw headers
    // are made there, where unsafe code is allowed).
    assert_eq!(clear, [7, 7]);
}

#[test]
fn load_names_the_path() {
    let dir = std::env::temp_dir().join(format!("edgeguard-headers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.txt");
    let bad = dir.join("bad.txt");
    let missing = dir.join("missing.txt");
    std::fs::write(&good, "x-a\nx-b*\n").unwrap();
    std::fs::write(&bad, "x-a\n\nx b\n").unwrap();

    assert_eq!(HeaderSet::load(&good).unwrap().len(), 2);

    let err = HeaderSet::load(&bad).unwrap_err();
    assert_eq!(err.line(), Some(3));
    assert!(
        err.to_string()
            .starts_with(&format!("{}:3: ", bad.display())),
        "{err}"
    );

    let err = HeaderSet::load(&missing).unwrap_err();
    assert!(err.is_io());
    assert_eq!(err.line(), None);
    assert!(
        err.to_string()
            .starts_with(&format!("{}: ", missing.display())),
        "{err}"
    );
    assert!(std::error::Error::source(&err).is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn header_set_can_be_shared_across_workers() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<HeaderSet>();
    let set = std::sync::Arc::new(set("x-a\n"));
    let other = std::sync::Arc::clone(&set);
    let seen = std::thread::spawn(move || other.is_internal(b"X_A"))
        .join()
        .unwrap();
    assert!(seen);
}

#[test]
fn shipped_list_parses_and_strips_no_standard_header() {
    let set = HeaderSet::parse("nginx-conf/internal-headers.txt", SHIPPED).unwrap();
    assert!(set.len() >= 100, "only {} rules", set.len());
    let identity: &[&[u8]] = &[
        b"x-user-id",
        b"x-authenticated-user",
        b"x-envoy-original-path",
        b"x-internal-anything",
        b"x-edge-anything",
        b"cf-connecting-ip",
        b"x-middleware-subrequest",
        b"impersonate-user",
    ];
    for &name in identity {
        assert!(
            set.is_internal(name),
            "{:?} is not stripped",
            name.escape_ascii()
        );
    }
    for name in lines(PUBLIC) {
        assert!(
            !set.is_internal(name),
            "{:?} would be stripped",
            name.escape_ascii()
        );
    }
}

#[test]
fn trie_hard_fixture_parses() {
    let set = HeaderSet::parse("trie-hard-headers.txt", TRIE_HARD).unwrap();
    assert_eq!(set.len(), lines(TRIE_HARD).count());
}

/// Non-empty, non-comment lines, first word only.
fn lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split(|&b| b == b'\n').filter_map(|line| {
        let line = line.trim_ascii();
        let word = line.split(u8::is_ascii_whitespace).next()?;
        (!word.is_empty() && !word.starts_with(b"#")).then_some(word)
    })
}

/// A deliberately plain matcher to check the fast one against.
struct Reference {
    exact: Vec<Vec<u8>>,
    prefixes: Vec<Vec<u8>>,
}

impl Reference {
    fn normalize(name: &[u8]) -> Vec<u8> {
        name.to_ascii_lowercase()
            .into_iter()
            .map(|b| if b == b'_' { b'-' } else { b })
            .collect()
    }

    fn new(text: &[u8]) -> Reference {
        let (mut exact, mut prefixes) = (Vec::new(), Vec::new());
        for word in lines(text) {
            match word.strip_suffix(b"*") {
                Some(prefix) => prefixes.push(Reference::normalize(prefix)),
                None => exact.push(Reference::normalize(word)),
            }
        }
        Reference { exact, prefixes }
    }

    fn is_internal(&self, name: &[u8]) -> bool {
        let name = Reference::normalize(name);
        self.exact.contains(&name) || self.prefixes.iter().any(|p| name.starts_with(p))
    }
}

/// Names near the rules (respelled, cut, extended, altered) and far from
/// them (random tokens, 8-bit bytes, over-long names).
fn generated_names(reference: &Reference, seed: u64, count: usize) -> Vec<Vec<u8>> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.";
    let mut rng = fastrand::Rng::with_seed(seed);
    let rules: Vec<&Vec<u8>> = reference.exact.iter().chain(&reference.prefixes).collect();
    let public: Vec<&[u8]> = lines(PUBLIC).collect();
    (0..count)
        .map(|_| {
            let base: Vec<u8> = match rng.usize(..3) {
                0 => rng.choice(&rules).unwrap().to_vec(),
                1 => rng.choice(&public).unwrap().to_vec(),
                _ => (0..1 + rng.usize(..40))
                    .map(|_| *rng.choice(ALPHABET).unwrap())
                    .collect(),
            };
            let mut name = base;
            match rng.usize(..9) {
                0 => {}
                1 => name.truncate(name.len().saturating_sub(1 + rng.usize(..3))),
                2 => name.extend((0..1 + rng.usize(..12)).map(|_| *rng.choice(ALPHABET).unwrap())),
                3 if !name.is_empty() => {
                    let at = rng.usize(..name.len());
                    name[at] = *rng.choice(ALPHABET).unwrap();
                }
                4 if !name.is_empty() => {
                    let at = rng.usize(..name.len());
                    name[at] = 0x80 | rng.u64(..) as u8;
                }
                5 => name.extend(std::iter::repeat_n(b'y', 200 + rng.usize(..120))),
                6 => name.clear(),
                _ => {}
            }
            for b in &mut name {
                match rng.usize(..4) {
                    0 => *b = b.to_ascii_uppercase(),
                    1 if *b == b'-' => *b = b'_',
                    _ => {}
                }
            }
            name
        })
        .collect()
}

fn cross_check(text: &[u8], seed: u64) {
    let set = HeaderSet::parse("<cross-check>", text).unwrap();
    let reference = Reference::new(text);
    let names = generated_names(&reference, seed, 40_000);
    let mut internal = 0;
    for name in &names {
        let expected = reference.is_internal(name);
        assert_eq!(set.is_internal(name), expected, "{:?}", name.escape_ascii());
        internal += usize::from(expected);
    }
    // Both outcomes must be well represented, or the check proves little.
    assert!(
        internal > names.len() / 10,
        "{internal} internal of {}",
        names.len()
    );
    assert!(
        internal < names.len() * 9 / 10,
        "{internal} internal of {}",
        names.len()
    );

    // find_internal agrees with the reference on whole requests, too.
    let mut rng = fastrand::Rng::with_seed(seed ^ 0xFEED);
    for _ in 0..2_000 {
        // A narrow window of names, so that requests repeat names.
        let start = rng.usize(..names.len() - 64);
        let window = &names[start..start + 64];
        let request: Vec<&[u8]> = (0..rng.usize(..40))
            .map(|_| rng.choice(window).unwrap().as_slice())
            .collect();
        let mut expected_clear = Vec::new();
        let mut matched = 0;
        for (i, name) in request.iter().enumerate() {
            if reference.is_internal(name) {
                matched += 1;
                let first = request[..i].iter().all(|e| !e.eq_ignore_ascii_case(name));
                if first {
                    expected_clear.push(i as u32);
                }
            }
        }
        let mut clear = vec![u32::MAX; 40];
        let found = find(&set, &headers(&request), &mut clear);
        assert_eq!(
            found,
            Matches {
                matched,
                distinct: expected_clear.len(),
                unremovable: 0,
            }
        );
        assert_eq!(clear[..found.distinct], expected_clear[..]);
    }
}

#[test]
fn cross_check_shipped_list_against_reference() {
    cross_check(SHIPPED, 0x5EED_0001);
}

#[test]
fn cross_check_trie_hard_fixture_against_reference() {
    cross_check(TRIE_HARD, 0x5EED_0002);
}

#[test]
fn find_internal_stops_deduplicating_past_the_limit() {
    // A hostile request: thousands of distinct internal names. Comparing each
    // with every earlier one is quadratic (0.5 s for 10 000 in release), so
    // past DEDUP_LIMIT names every entry is listed as is.
    let set = set("x-p-*\n");
    let mut names: Vec<Vec<u8>> = (0..10_000)
        .map(|i| format!("x-p-{i}").into_bytes())
        .collect();
    // Repeats of an early name: one before the limit is reached, one after.
    names.insert(10, b"X-P-0".to_vec());
    names.push(b"x-p-1".to_vec());
    let refs: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
    let request = headers(&refs);
    let mut clear = vec![u32::MAX; request.len()];
    let found = find(&set, &request, &mut clear);
    assert_eq!(found.matched, 10_002);
    // Only the repeat seen while deduplicating is folded away.
    assert_eq!(found.distinct, 10_001);
    assert_eq!(clear[..11], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11]);
    assert_eq!(clear[found.distinct - 1], 10_001);
}

#[test]
fn find_internal_counts_the_names_clear_header_cannot_remove() {
    // Every byte: an internal name with it after the prefix is unremovable
    // exactly when the byte is not an RFC 9110 token character (the bytes
    // lua-nginx-module's clear_header escapes: ngx_http_lua_escape_uri's
    // header_name table in 0.10.23).
    let set = set("x-internal-*\nx-user-id\n");
    let token = b"!#$%&'*+-.^_`|~";
    for b in 0..=255u8 {
        let name = [b"x-internal-".as_slice(), &[b], b"a"].concat();
        let request = headers(&[b"accept", name.as_slice(), b"x-user-id"]);
        let mut clear = [0u32; 3];
        let found = find(&set, &request, &mut clear);
        let is_token = b.is_ascii_alphanumeric() || token.contains(&b);
        assert_eq!(found.matched, 2, "byte {b:#04x}");
        assert_eq!(found.unremovable, usize::from(!is_token), "byte {b:#04x}");
    }
    // Repeats count each time; a non-internal odd name is not counted.
    let request = headers(&[
        b"x-internal-(",
        b"X-Internal-(",
        b"x-other-(",
        b"x-internal-\xe9",
    ]);
    let mut clear = [0u32; 4];
    let found = find(&set, &request, &mut clear);
    assert_eq!((found.matched, found.unremovable), (3, 3));
}

#[test]
fn an_exact_match_is_always_a_token() {
    // find_internal skips the token check on exact matches: folding turns
    // only token bytes into other bytes, and only into token bytes, so a
    // byte that folds to a token byte is one. Checked for every byte.
    for b in 0..=255u8 {
        if list::is_token_byte(matcher::fold(b)) {
            assert!(list::is_token_byte(b), "byte {b:#04x}");
        }
    }
    // And so every spelling of an exact internal name nginx can hold is
    // removable, one odd byte away is no match at all.
    let set = set("x-user-id\n");
    for b in 0..=255u8 {
        let name = [b"x-user".as_slice(), &[b], b"id"].concat();
        let found = find(&set, &headers(&[name.as_slice()]), &mut [0u32; 1]);
        assert_eq!(found.unremovable, 0, "byte {b:#04x}");
        assert_eq!(
            found.matched,
            usize::from(b == b'-' || b == b'_'),
            "byte {b:#04x}"
        );
    }
}

#[test]
fn extend_adds_rules_found_and_cleared_but_not_counted() {
    let base = set("x-internal-*\nx-user-id\n");
    let both = base.extend("score_header", b"X-Bot-Score").unwrap();
    assert_eq!((base.len(), both.len()), (2, 2));
    assert!(
        !both.is_internal(b"x-bot-score"),
        "extra names are not internal"
    );
    let request = headers(&[
        b"X_Bot_Score",
        b"accept",
        b"x-bot-score",
        b"X_User_Id",
        b"x-internal-(",
        b"x-bot-scores",
    ]);
    let mut clear = [u32::MAX; 6];
    let found = find(&both, &request, &mut clear);
    // Both score spellings are listed (nginx clears `_` and `-` apart), the
    // internal names too; only the internal ones are counted.
    assert_eq!(
        found,
        Matches {
            matched: 2,
            distinct: 4,
            unremovable: 1,
        }
    );
    assert_eq!(clear[..4], [0, 2, 3, 4]);
    // The base set is unchanged, and a second extension replaces the first.
    assert_eq!(find(&base, &request, &mut clear).distinct, 2);
    let other = both.extend("score_header", b"X-Other-Score").unwrap();
    assert_eq!(
        find(
            &other,
            &headers(&[b"x-bot-score", b"x_other_score"]),
            &mut clear
        )
        .distinct,
        1
    );
    // The extension is refused like any list, naming its source.
    let err = base
        .extend("score_header", b"X-Bot(Score")
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("score_header:1: "), "{err}");
    let err = base.extend("score_header", b"").unwrap_err().to_string();
    assert!(err.starts_with("score_header: no header names"), "{err}");
}

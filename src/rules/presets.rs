//! The presets a rules file can name (`{"preset": "feeds"}`). Their text is
//! the files in `nginx-conf/rules/`, which the package also installs (in
//! `share/edgeguard/rules/`) for people to read and copy: built into the
//! library, a preset cannot go missing or differ from its documentation.

/// Every preset: name and file text.
pub const PRESETS: &[(&str, &str)] = &[
    (
        "well-known",
        include_str!("../../nginx-conf/rules/well-known.json"),
    ),
    ("feeds", include_str!("../../nginx-conf/rules/feeds.json")),
    (
        "link-previews",
        include_str!("../../nginx-conf/rules/link-previews.json"),
    ),
    (
        "monitors",
        include_str!("../../nginx-conf/rules/monitors.json"),
    ),
    (
        "webhooks",
        include_str!("../../nginx-conf/rules/webhooks.json"),
    ),
];

/// The text of preset `name`.
pub fn preset(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The names, for error messages.
pub(crate) fn names() -> String {
    PRESETS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

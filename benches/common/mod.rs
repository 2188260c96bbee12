//! What several benches send: one Chrome navigation's head (a site's
//! cookies included) and the JA4 of its TLS hello.

/// Chrome 120's navigation over HTTP/2 and TLS, as nginx hands its
/// headers over (lower-case names).
pub const CHROME: &[(&str, &str)] = &[
    ("host", "www.example.com"),
    ("sec-ch-ua", "\"Not_A Brand\";v=\"8\", \"Chromium\";v=\"120\", \"Google Chrome\";v=\"120\""),
    ("sec-ch-ua-mobile", "?0"),
    ("sec-ch-ua-platform", "\"Linux\""),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"),
    ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"),
    ("sec-fetch-site", "same-origin"),
    ("sec-fetch-mode", "navigate"),
    ("sec-fetch-user", "?1"),
    ("sec-fetch-dest", "document"),
    ("referer", "https://www.example.com/"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-language", "en-GB,en;q=0.9"),
    ("cookie", "session=0123456789abcdef; theme=dark"),
];

/// Chrome's JA4 (BoringSSL).
pub const JA4: &[u8] = b"t13d1516h2_8daaf6152771_02713d6af862";

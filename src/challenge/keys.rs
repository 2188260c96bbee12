//! The `challenge_secret` file: the HMAC keys that sign clearance cookies
//! and challenge nonces.
//!
//! One key a line, as hex (`openssl rand -hex 32`), at least
//! [`MIN_KEY_BYTES`] bytes. Blank lines and lines starting with `#` are
//! skipped. A bad line refuses the whole file, naming the file and the
//! 1-based line; the key material is never printed.
//!
//! # Rotation
//!
//! The first key signs; every key verifies. Rotating without refusing a
//! single cookie, on any number of servers that reload at different times,
//! takes three reloads:
//!
//! 1. add the new key *below* the old one, everywhere: every server now
//!    accepts cookies signed with either, and still signs with the old;
//! 2. move the new key first, everywhere: new cookies are signed with it,
//!    and a server still at step 1 accepts them;
//! 3. after the longest cookie lifetime (`challenge_ttl`, and the no-JS
//!    lifetime when that fallback is on), remove the old key.
//!
//! Skipping step 1 on a fleet means a server that has not reloaded yet
//! refuses (`mac`) the cookies a reloaded one signs. A key removed too
//! early refuses the cookies it signed, which are then challenged again:
//! nobody is locked out, people solve one more page.
//!
//! The demo key shipped for `make run` (`nginx-conf/demo-challenge-secret`)
//! is public: [`Keys::has_demo_key`] tells the loader to warn.

use std::fmt;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub(crate) type HmacSha256 = Hmac<Sha256>;

/// The shortest key accepted, in bytes: SHA-256's output size, below which
/// an HMAC key adds no strength (RFC 2104, section 3).
pub const MIN_KEY_BYTES: usize = 32;
/// The longest key accepted, in bytes: SHA-256's block size (a longer HMAC
/// key is hashed down first, so it buys nothing).
pub const MAX_KEY_BYTES: usize = 64;
/// At most this many keys: each one is tried on a cookie that fails the
/// first, so the count bounds the work a forged cookie costs.
pub const MAX_KEYS: usize = 8;

/// The key of `nginx-conf/demo-challenge-secret`, the one `make run` and
/// the example configuration use. It is in a public repository, so anyone
/// can sign cookies with it: a server that lists it has no challenge.
const DEMO_KEY: [u8; 32] = [
    0x17, 0x15, 0x0c, 0x76, 0xf1, 0x45, 0x33, 0x84, 0x68, 0xad, 0x00, 0x93, 0x58, 0x12, 0xae, 0x93,
    0xfb, 0xa9, 0x42, 0xb8, 0x35, 0x68, 0x3e, 0x39, 0x5b, 0x27, 0x3e, 0x41, 0x8f, 0x21, 0x4c, 0x3d,
];

/// One key's bytes, inline (no heap per key), and the HMAC state keyed
/// with it: a MAC starts from a copy of it, saving the two SHA-256 blocks
/// of the padded key on every cookie checked.
#[derive(Clone)]
pub(crate) struct Key {
    bytes: [u8; MAX_KEY_BYTES],
    len: u8,
    keyed: HmacSha256,
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Key {}

impl Key {
    fn new(bytes: [u8; MAX_KEY_BYTES], len: u8) -> Key {
        let keyed = HmacSha256::new_from_slice(&bytes[..usize::from(len)])
            .expect("HMAC takes any key length");
        Key { bytes, len, keyed }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// A MAC keyed with this key, nothing fed to it yet.
    pub(crate) fn mac(&self) -> HmacSha256 {
        self.keyed.clone()
    }
}

/// The keys of one `challenge_secret` file, signing key first.
#[derive(Clone, PartialEq, Eq)]
pub struct Keys {
    path: PathBuf,
    keys: Vec<Key>,
}

/// Secrets stay out of logs and debug output.
impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keys")
            .field("path", &self.path)
            .field("count", &self.keys.len())
            .finish()
    }
}

/// Why a key file was refused: the message names the file and the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyError(pub String);

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KeyError {}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl Keys {
    /// Reads and parses the key file at `path`.
    pub fn load(path: &Path) -> Result<Keys, KeyError> {
        let text = std::fs::read(path)
            .map_err(|e| KeyError(format!("{}: cannot read: {e}", path.display())))?;
        Self::parse(path, &text)
    }

    /// Parses key file text; `path` names it in errors.
    pub fn parse(path: &Path, text: &[u8]) -> Result<Keys, KeyError> {
        let name = path.display();
        let mut keys = Vec::new();
        for (i, line) in text.split(|&b| b == b'\n').enumerate() {
            let line = line.trim_ascii();
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            let n = i + 1;
            let err = |m: &str| KeyError(format!("{name}: line {n}: {m}"));
            if line.len() % 2 != 0 {
                return Err(err("a key is hex digits in pairs (odd number of digits)"));
            }
            let len = line.len() / 2;
            if len < MIN_KEY_BYTES {
                return Err(err(&format!(
                    "key too short: {len} bytes, at least {MIN_KEY_BYTES} (`openssl rand -hex 32`)"
                )));
            }
            if len > MAX_KEY_BYTES {
                return Err(err(&format!(
                    "key too long: {len} bytes, at most {MAX_KEY_BYTES}"
                )));
            }
            let mut bytes = [0; MAX_KEY_BYTES];
            for (j, pair) in line.chunks_exact(2).enumerate() {
                match (hex_digit(pair[0]), hex_digit(pair[1])) {
                    (Some(h), Some(l)) => bytes[j] = h << 4 | l,
                    _ => return Err(err("a key is hex digits only (0-9, a-f)")),
                }
            }
            let key = Key::new(bytes, len as u8);
            if keys.contains(&key) {
                return Err(err("the same key twice"));
            }
            if keys.len() == MAX_KEYS {
                return Err(err(&format!("more than {MAX_KEYS} keys")));
            }
            keys.push(key);
        }
        if keys.is_empty() {
            return Err(KeyError(format!(
                "{name}: no key (one hex key a line, at least {MIN_KEY_BYTES} bytes)"
            )));
        }
        Ok(Keys {
            path: path.to_owned(),
            keys,
        })
    }

    /// Where the keys came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many keys verify.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Never true: a file without a key is refused.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key that signs.
    pub(crate) fn signing(&self) -> &Key {
        &self.keys[0]
    }

    /// Every key that verifies, signing key first.
    pub(crate) fn all(&self) -> &[Key] {
        &self.keys
    }

    /// Whether any key is the public demo key: the loader should warn at
    /// startup (`challenge_secret ... is the public demo key`), since with
    /// it anyone can mint a clearance for this server.
    pub fn has_demo_key(&self) -> bool {
        self.keys.iter().any(|k| k.as_bytes() == DEMO_KEY)
    }

    /// The warning the loader logs when [`Keys::has_demo_key`]: it names
    /// the file and says what to do.
    pub fn demo_key_warning(&self) -> Option<String> {
        self.has_demo_key().then(|| {
            format!(
                "{}: challenge_secret holds the public demo key (nginx-conf/demo-challenge-secret): \
                 anyone can mint clearance cookies for this server; make a key of your own with \
                 `openssl rand -hex 32`",
                self.path.display()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K1: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    fn parse(text: &str) -> Result<Keys, KeyError> {
        Keys::parse(Path::new("secret"), text.as_bytes())
    }

    #[test]
    fn keys_load_in_order_with_comments() {
        let k2 = K1.replace("00", "ff");
        let keys = parse(&format!("# rotated 2026-12-01\n\n{K1}\r\n  {k2}  \n")).unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys.signing().as_bytes()[1], 1);
        assert_eq!(keys.all()[1].as_bytes()[0], 0xff);
        assert!(!format!("{keys:?}").contains("0102"), "no key in Debug");
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let cases: &[(&str, &str)] = &[
            ("", "secret: no key"),
            ("# only a comment\n", "secret: no key"),
            ("abcd\n", "secret: line 1: key too short: 2 bytes"),
            (
                &format!("{K1}\n{}\n", &K1[1..]),
                "secret: line 2: a key is hex digits in pairs",
            ),
            (
                &format!("\n{}zz\n", &K1[2..]),
                "secret: line 2: a key is hex digits only",
            ),
            (
                &format!("{K1}{K1}{K1}\n"),
                "secret: line 1: key too long: 96 bytes",
            ),
            (
                &format!("{K1}\n{K1}\n"),
                "secret: line 2: the same key twice",
            ),
        ];
        for (text, want) in cases {
            let got = parse(text).unwrap_err().to_string();
            assert!(got.starts_with(want), "{text:?}: {got}");
            assert!(!got.contains("0102030405"), "{got}");
        }
        let many: String = (0..=MAX_KEYS)
            .map(|i| format!("{i:02x}{}\n", &K1[2..]))
            .collect();
        assert!(parse(&many)
            .unwrap_err()
            .0
            .contains("line 9: more than 8 keys"));
        assert!(Keys::load(Path::new("/nonexistent/secret"))
            .unwrap_err()
            .0
            .starts_with("/nonexistent/secret: cannot read"));
    }

    #[test]
    fn the_shipped_demo_key_is_recognised() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let demo = Keys::load(&root.join("nginx-conf/demo-challenge-secret")).unwrap();
        assert!(demo.has_demo_key());
        let w = demo.demo_key_warning().unwrap();
        assert!(
            w.contains("demo-challenge-secret: challenge_secret holds the public demo key"),
            "{w}"
        );
        assert!(
            !w.contains("17150c76"),
            "the key itself is never printed: {w}"
        );
        // Listed second (verifying only) it is still a hole.
        let line = std::fs::read_to_string(root.join("nginx-conf/demo-challenge-secret")).unwrap();
        let hex = line.lines().find(|l| !l.starts_with('#')).unwrap();
        assert!(parse(&format!("{K1}\n{hex}\n")).unwrap().has_demo_key());
        // Other keys, the test fixture's among them, are not.
        assert!(!parse(K1).unwrap().has_demo_key());
        let fixture = Keys::load(&root.join("tests/fixtures/challenge/secret")).unwrap();
        assert!(!fixture.has_demo_key() && fixture.demo_key_warning().is_none());
    }
}

//! The challenge page: small, self-contained (no external assets, no
//! cookies of its own), one inline script.
//!
//! The script looks for a counter whose SHA-256(nonce ":" counter) has the
//! nonce's leading zero bits. In a secure context (HTTPS, or
//! `http://localhost`/`127.0.0.1`) it uses WebCrypto (`crypto.subtle.digest`,
//! 64 digests in flight at a time, since each is a promise); elsewhere
//! `crypto.subtle` does not exist and it falls back to a SHA-256 written in
//! the page (its round constants computed from the primes, as FIPS 180-4
//! defines them, rather than spelt out). It then replaces the page with
//! the endpoint's URL, carrying the nonce, the counter and the page's own
//! path and query to come back to: `location.replace`, so the challenge
//! does not stay in the history.

use std::io::Write as _;

use super::{TooSmall, ENDPOINT};

/// Room enough for the page.
pub(crate) const CAP: usize = 4096;

const TEMPLATE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex,nofollow">
<title>Checking your browser</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34em;margin:4em auto;padding:0 1em;color:#222}</style>
</head><body>
<h1>Checking your browser</h1>
<p id="edgeguard-status">This takes a moment and needs JavaScript.</p>
<noscript><p>Please enable JavaScript and reload this page.</p></noscript>
<script>
(async function () {
  "use strict";
  var N = "@NONCE@", D = @DIFFICULTY@, P = "@ENDPOINT@";
  var st = document.getElementById("edgeguard-status"), te = new TextEncoder();
  function zeros(h) {
    var n = 0;
    for (var i = 0; i < h.length; i++) {
      if (h[i] === 0) { n += 8; continue; }
      return n + Math.clz32(h[i]) - 24;
    }
    return n;
  }
  var K = [], H0 = [];
  function frac(x) { return (x - Math.floor(x)) * 4294967296 | 0; }
  function sha256(m) {
    if (!K.length) {
      for (var p = 2; K.length < 64; p++) {
        var prime = true;
        for (var d = 2; d * d <= p; d++) if (p % d === 0) { prime = false; break; }
        if (!prime) continue;
        if (H0.length < 8) H0.push(frac(Math.sqrt(p)));
        K.push(frac(Math.cbrt(p)));
      }
    }
    var l = m.length, L = (l + 72) & ~63, b = new Uint8Array(L), w = new Int32Array(64);
    b.set(m); b[l] = 0x80;
    var bits = l * 8;
    b[L - 4] = bits >>> 24; b[L - 3] = bits >>> 16 & 255; b[L - 2] = bits >>> 8 & 255; b[L - 1] = bits & 255;
    var H = H0.slice(), i;
    for (var o = 0; o < L; o += 64) {
      for (i = 0; i < 16; i++) w[i] = b[o + 4 * i] << 24 | b[o + 4 * i + 1] << 16 | b[o + 4 * i + 2] << 8 | b[o + 4 * i + 3];
      for (i = 16; i < 64; i++) {
        var x = w[i - 15], y = w[i - 2];
        var s0 = (x >>> 7 | x << 25) ^ (x >>> 18 | x << 14) ^ (x >>> 3);
        var s1 = (y >>> 17 | y << 15) ^ (y >>> 19 | y << 13) ^ (y >>> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1 | 0;
      }
      var a = H[0], bb = H[1], c = H[2], dd = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
      for (i = 0; i < 64; i++) {
        var S1 = (e >>> 6 | e << 26) ^ (e >>> 11 | e << 21) ^ (e >>> 25 | e << 7);
        var t1 = h + S1 + (e & f ^ ~e & g) + K[i] + w[i] | 0;
        var S0 = (a >>> 2 | a << 30) ^ (a >>> 13 | a << 19) ^ (a >>> 22 | a << 10);
        var t2 = S0 + (a & bb ^ a & c ^ bb & c) | 0;
        h = g; g = f; f = e; e = dd + t1 | 0; dd = c; c = bb; bb = a; a = t1 + t2 | 0;
      }
      H[0] = H[0] + a | 0; H[1] = H[1] + bb | 0; H[2] = H[2] + c | 0; H[3] = H[3] + dd | 0;
      H[4] = H[4] + e | 0; H[5] = H[5] + f | 0; H[6] = H[6] + g | 0; H[7] = H[7] + h | 0;
    }
    var out = new Uint8Array(32);
    for (i = 0; i < 32; i++) out[i] = H[i >> 2] >>> (24 - 8 * (i & 3)) & 255;
    return out;
  }
  var found = -1, c0 = 0, j;
  if (window.isSecureContext && window.crypto && crypto.subtle) {
    while (found < 0) {
      var batch = [];
      for (j = 0; j < 64; j++) batch.push(crypto.subtle.digest("SHA-256", te.encode(N + ":" + (c0 + j))));
      var hs = await Promise.all(batch);
      for (j = 0; j < 64; j++) if (zeros(new Uint8Array(hs[j])) >= D) { found = c0 + j; break; }
      c0 += 64;
    }
  } else {
    for (; found < 0; c0++) if (zeros(sha256(te.encode(N + ":" + c0))) >= D) found = c0;
  }
  st.textContent = "Done, loading\u2026";
  location.replace(P + "?n=" + N + "&c=" + found + "&r=" + encodeURIComponent(location.pathname + location.search));
})();
</script>
</body></html>
"#;

/// Writes the page asking for `difficulty` bits of work over `nonce`.
pub(crate) fn render(nonce: &[u8], difficulty: u8, out: &mut [u8]) -> Result<usize, TooSmall> {
    let cap = out.len();
    let mut w = &mut out[..];
    let mut rest = TEMPLATE;
    while let Some(at) = rest.find('@') {
        let (text, marker) = rest.split_at(at);
        w.write_all(text.as_bytes()).map_err(|_| TooSmall)?;
        let end = marker[1..].find('@').map_or(marker.len(), |e| e + 2);
        let r = match &marker[..end] {
            "@NONCE@" => w.write_all(nonce),
            "@DIFFICULTY@" => write!(w, "{difficulty}"),
            "@ENDPOINT@" => w.write_all(ENDPOINT.as_bytes()),
            other => w.write_all(other.as_bytes()),
        };
        r.map_err(|_| TooSmall)?;
        rest = &marker[end..];
    }
    w.write_all(rest.as_bytes()).map_err(|_| TooSmall)?;
    Ok(cap - w.len())
}

//! `edgeguard tls`: the JA4 of recorded ClientHellos, computed by the code
//! nginx runs during the handshake.

use std::io::{self, BufRead, BufWriter, Write};
use std::process::ExitCode;

use edgeguard::tls::{ClientHello, Fingerprint, SortRoom};

/// The long description of `--help`.
pub const LONG_ABOUT: &str = "Reads one ClientHello per line, in hex: a TLS record (16 03 ..) or a
handshake message (01 ..). The hex is the line's last field; words before it
label the line and are printed as \"label\". Blank lines and lines starting
with # are skipped. Prints one JSON line per ClientHello:
  {\"ja4\": \"t13d1516h2_8daaf6152771_e5627efa2ab1\", \"ja4_r\": \"t13d1516h2_002f,...\",
   \"version\": \"0304\", \"ciphers\": 15, \"extensions\": 16, \"alpn\": \"h2\",
   \"grease\": true, \"family\": \"boringssl\"}
A line that is not a ClientHello is reported on stderr with its number and
the field at fault; the exit status is then 1.";

#[derive(clap::Args, Debug)]
#[command(override_usage = "edgeguard tls < clienthellos.hex")]
pub struct Args {}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    let s = s.as_bytes();
    if !s.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    s.chunks(2)
        .map(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|t| u8::from_str_radix(t, 16).ok())
                .ok_or_else(|| format!("not hex: {:?}", String::from_utf8_lossy(p)))
        })
        .collect()
}

/// The fingerprint of one line's bytes, as a JSON object.
fn describe(bytes: &[u8], scratch: &mut SortRoom) -> Result<serde_json::Value, String> {
    let hello = match bytes.first() {
        Some(1) => ClientHello::parse_handshake(bytes),
        _ => ClientHello::parse_record(bytes),
    }
    .map_err(|e| e.to_string())?;
    let fp = Fingerprint::compute(&hello, scratch);
    Ok(serde_json::json!({
        "ja4": fp.ja4(),
        "ja4_r": Fingerprint::raw(&hello, scratch),
        "version": format!("{:04x}", fp.version),
        "ciphers": fp.ciphers,
        "extensions": fp.extensions,
        "alpn": String::from_utf8_lossy(fp.alpn()),
        "grease": fp.grease,
        "family": fp.family.name(),
    }))
}

/// Runs the subcommand.
pub fn run(_args: Args) -> ExitCode {
    let mut scratch = SortRoom::default();
    let stdin = io::stdin();
    let mut out = BufWriter::new(io::stdout().lock());
    let mut failed = false;
    for (i, line) in stdin.lock().lines().enumerate() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                eprintln!("edgeguard tls: stdin: {e}");
                return ExitCode::from(1);
            }
        };
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (label, hex) = match t.rsplit_once(char::is_whitespace) {
            Some((label, hex)) => (Some(label.trim()), hex),
            None => (None, t),
        };
        match unhex(hex).and_then(|b| describe(&b, &mut scratch)) {
            Ok(mut v) => {
                if let Some(label) = label {
                    v["label"] = label.into();
                }
                if writeln!(out, "{v}").is_err() {
                    return ExitCode::from(1);
                }
            }
            Err(e) => {
                eprintln!("edgeguard tls: line {}: {e}", i + 1);
                failed = true;
            }
        }
    }
    if out.flush().is_err() || failed {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

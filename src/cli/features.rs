//! `edgeguard features`: the feature vectors of JSON Lines requests, in the
//! input format of `edgeguard predict`, computed by the code nginx runs.

use std::io::{self, BufRead, BufWriter, Write};
use std::process::ExitCode;

use edgeguard::features::{self, FeatureVector, CAT_FEATURES, FLOAT_FEATURES};
use edgeguard::replay::LineReader;

/// Prints the feature vectors of JSON Lines requests, in the input format of
/// `edgeguard predict`, computed by the code nginx runs.
/// The long description of `--help`.
pub const LONG_ABOUT: &str = "Reads one request per line:
  {\"method\": \"GET\", \"uri\": \"/a?b=1\", \"version\": \"1.1\", \"client\": \"203.0.113.7\",
   \"headers\": [[\"host\", \"x\"], [\"user-agent\", \"...\"]]}
(version: 1.0, 1.1, 2 or 3, as a number or a string, \"HTTP/\" allowed;
other fields are ignored; replay's reader, so both take the same lines)
and prints one line per request:
  {\"float\": [numbers, null for NaN], \"cat\": [\"strings\"]}
in schema order, as `edgeguard predict` reads it.";

#[derive(clap::Args, Debug)]
#[command(override_usage = "edgeguard features [--header] < requests.jsonl")]
pub struct Args {
    /// Print the feature names, {"float": [...], "cat": [...]}, and exit
    #[arg(long, visible_alias = "names")]
    header: bool,
}

/// One output line: `float` is `Option<f32>` for vectors (null for NaN)
/// and `&str` for the names line.
#[derive(serde::Serialize)]
struct Output<'a, F> {
    float: Vec<F>,
    cat: Vec<std::borrow::Cow<'a, str>>,
}

/// Runs the subcommand.
pub fn run(args: Args) -> ExitCode {
    if args.header {
        let names = Output {
            float: FLOAT_FEATURES.iter().map(|f| f.name).collect(),
            cat: CAT_FEATURES.iter().map(|f| f.name.into()).collect(),
        };
        println!(
            "{}",
            serde_json::to_string(&names).expect("names serialize")
        );
        return ExitCode::SUCCESS;
    }
    let stdin = io::stdin().lock();
    let stdout = io::stdout().lock();
    match convert(stdin, stdout) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(bad) => {
            eprintln!("edgeguard features: {bad} bad line(s)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("edgeguard features: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Converts every line, reporting bad ones on stderr; returns how many were
/// bad. Lines are read by replay's reader, so both accept the same lines.
fn convert(input: impl BufRead, output: impl Write) -> io::Result<usize> {
    let mut out = BufWriter::new(output);
    let mut reader = LineReader::new();
    let mut bad = 0;
    for (i, raw) in input.split(b'\n').enumerate() {
        let raw = raw?;
        if raw.trim_ascii().is_empty() {
            continue;
        }
        match reader.read(&raw) {
            Ok(req) => {
                // Borrows the line: one vector per line.
                let mut v = FeatureVector::new();
                features::extract(&req, &mut v);
                writeln!(out, "{}", vector_json(&v))?;
            }
            Err(e) => {
                bad += 1;
                eprintln!("edgeguard features: line {}: {e}", i + 1);
            }
        }
    }
    out.flush()?;
    Ok(bad)
}

fn vector_json(v: &FeatureVector<'_>) -> String {
    let output = Output {
        float: v
            .floats()
            .iter()
            .map(|&x| (!x.is_nan()).then_some(x))
            .collect(),
        // Categorical values are request bytes; nginx's scorer hashes them as
        // bytes, and the JSON output shows them as text (lossily where they
        // are not UTF-8).
        cat: v.cats().map(String::from_utf8_lossy).collect(),
    };
    serde_json::to_string(&output).expect("vectors serialize")
}

#[cfg(test)]
mod tests {
    use super::*;
    use edgeguard::features::{Cat, Float};

    #[test]
    fn converts_and_counts_bad_lines() {
        let input = concat!(
            r#"{"method":"GET","uri":"/","version":"1.1","client":"192.0.2.1","headers":[["user-agent","curl/8.5.0"],["accept","*/*"]],"label":1}"#,
            "\n\n",
            "not json\n",
            r#"{"method":"GET","uri":"/","version":"9"}"#,
            "\n",
            r#"{"method":"GET","uri":"/x.PHP","version":2}"#,
        );
        let mut out = Vec::new();
        let bad = convert(input.as_bytes(), &mut out).unwrap();
        assert_eq!(bad, 2);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0]["float"].as_array().unwrap().len(),
            FLOAT_FEATURES.len()
        );
        assert_eq!(
            lines[0]["cat"].as_array().unwrap().len(),
            CAT_FEATURES.len()
        );
        assert_eq!(lines[0]["cat"][Cat::UaFamily.index()], "curl");
        assert_eq!(lines[1]["cat"][Cat::UriExt.index()], "php");
        // No User-Agent: its length is NaN, printed as null.
        assert!(lines[1]["float"][Float::UaLen.index()].is_null());
    }
}

//! `edgeguard features`: the feature vectors of JSON Lines requests, in the
//! input format of `edgeguard predict`, computed by the code nginx runs; and
//! the learnt header-order table of people's requests (`--learn-orders`).

use std::io::{self, BufRead, BufWriter, Write};
use std::process::ExitCode;

use edgeguard::features::orders::{Engine, OrderCounts, OrderTable, ORDERS_KEY, SOFTWARE_CODES};
use edgeguard::features::{
    self, header_order, user_agent, FeatureSpec, FeatureVector, Request, CAT_FEATURES,
    FLOAT_FEATURES, SCHEMA_VERSIONS,
};
use edgeguard::replay::LineReader;

/// Prints the feature vectors of JSON Lines requests, in the input format of
/// `edgeguard predict`, computed by the code nginx runs.
/// The long description of `--help`.
pub const LONG_ABOUT: &str = "Reads one request per line:
  {\"method\": \"GET\", \"uri\": \"/a?b=1\", \"version\": \"1.1\", \"client\": \"203.0.113.7\",
   \"headers\": [[\"host\", \"x\"], [\"user-agent\", \"...\"]]}
(version: 1.0, 1.1, 2 or 3, as a number or a string, \"HTTP/\" allowed;
over TLS, \"edgeguard_ja4\" and \"edgeguard_tls_family\" as nginx logs them
give the TLS features of schema 3, which are null / \"none\" without;
other fields are ignored; replay's reader, so both take the same lines)
and prints one line per request:
  {\"float\": [numbers, null for NaN], \"cat\": [\"strings\"]}
(--names prints the names, and under \"evidence\" the float features that
are evidence of automation: schema 4's monotone features)
in vector order (every feature of every schema version; --schema N keeps
the features of version N, the columns a model of that version reads), as
`edgeguard predict` reads it.

With --learn-orders, counts the ordered header pairs of the requests (people's
browsers) per claimed browser engine and prints the order table models/train.py
stores in model_info[\"edgeguard.order_pairs\"].";

#[derive(clap::Args, Debug)]
#[command(
    override_usage = "edgeguard features [--orders FILE] [--schema N] < requests.jsonl\n       \
                      edgeguard features --header [--schema N]\n       \
                      edgeguard features --learn-orders [--min-count N] [--software] < human-requests.jsonl"
)]
pub struct Args {
    /// Print the feature names, {"float": [...], "cat": [...]}, and exit
    #[arg(long, visible_alias = "names", conflicts_with_all = ["orders", "learn_orders"])]
    header: bool,
    /// Only the features a model of feature schema N reads (names and vectors)
    #[arg(long, value_name = "N", value_parser = schema_version, conflicts_with = "learn_orders")]
    schema: Option<u32>,
    /// The learnt header-order table: a CatBoost JSON model (its
    /// model_info["edgeguard.order_pairs"]) or the table's text; without it
    /// `order_reversed_pairs` is null
    #[arg(long, value_name = "FILE", conflicts_with = "learn_orders")]
    orders: Option<String>,
    /// Learn the header-order table of the requests and print its text
    #[arg(long)]
    learn_orders: bool,
    /// With --learn-orders: keep pairs seen in N requests or more
    #[arg(long, value_name = "N", default_value_t = 1, requires = "learn_orders")]
    min_count: u32,
    /// With --learn-orders: the table of a schema-4 model, the orders of
    /// Chromium and Firefox only, among the headers a browser sends
    /// because of what it is (not the page's or the visit's)
    #[arg(long, requires = "learn_orders")]
    software: bool,
}

fn schema_version(text: &str) -> Result<u32, String> {
    let n: u32 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if SCHEMA_VERSIONS.contains(&n) {
        Ok(n)
    } else {
        Err(format!("versions are {SCHEMA_VERSIONS:?}"))
    }
}

/// One output line: `float` is `Option<f32>` for vectors (null for NaN)
/// and `&str` for the names line.
#[derive(serde::Serialize)]
struct Output<'a, F> {
    float: Vec<F>,
    cat: Vec<std::borrow::Cow<'a, str>>,
    /// Names line only: the float features that are evidence of automation
    /// (schema 4's monotone features, `features::EVIDENCE`), among those
    /// listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    evidence: Option<Vec<&'static str>>,
}

fn keep(schema: Option<u32>, spec: &FeatureSpec) -> bool {
    schema.is_none_or(|n| spec.in_schema(n))
}

/// Runs the subcommand.
pub fn run(args: Args) -> ExitCode {
    if args.header {
        let names = Output {
            float: FLOAT_FEATURES
                .iter()
                .filter(|f| keep(args.schema, f))
                .map(|f| f.name)
                .collect(),
            cat: CAT_FEATURES
                .iter()
                .filter(|f| keep(args.schema, f))
                .map(|f| f.name.into())
                .collect(),
            evidence: Some(
                FLOAT_FEATURES
                    .iter()
                    .filter(|f| keep(args.schema, f) && f.is_evidence())
                    .map(|f| f.name)
                    .collect(),
            ),
        };
        println!(
            "{}",
            serde_json::to_string(&names).expect("names serialize")
        );
        return ExitCode::SUCCESS;
    }
    let orders = match args.orders.as_deref().map(read_orders).transpose() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("edgeguard features: --orders {e}");
            return ExitCode::FAILURE;
        }
    };
    let stdin = io::stdin().lock();
    let stdout = io::stdout().lock();
    let result = if args.learn_orders {
        learn(stdin, stdout, args.min_count, args.software)
    } else {
        convert(stdin, stdout, orders.as_ref(), args.schema)
    };
    match result {
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

/// Reads `--orders FILE`: a model's metadata entry or the bare table text.
fn read_orders(path: &str) -> Result<OrderTable, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let table_text = if text.trim_start().starts_with('{') {
        let doc: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
        match doc["model_info"][ORDERS_KEY].as_str() {
            Some(t) => t.to_owned(),
            None => return Err(format!("{path}: model_info[\"{ORDERS_KEY}\"] is missing")),
        }
    } else {
        text
    };
    OrderTable::parse(table_text.trim()).map_err(|e| format!("{path}: {e}"))
}

/// Calls `f` with each good line's request; reports bad lines on stderr and
/// returns how many were bad. Lines are read by replay's reader, so both
/// accept the same lines.
fn each_request(
    input: impl BufRead,
    mut f: impl FnMut(&Request<'_>) -> io::Result<()>,
) -> io::Result<usize> {
    let mut reader = LineReader::new();
    let mut bad = 0;
    for (i, raw) in input.split(b'\n').enumerate() {
        let raw = raw?;
        if raw.trim_ascii().is_empty() {
            continue;
        }
        match reader.read(&raw) {
            Ok(req) => f(&req)?,
            Err(e) => {
                bad += 1;
                eprintln!("edgeguard features: line {}: {e}", i + 1);
            }
        }
    }
    Ok(bad)
}

/// Converts every line, reporting bad ones on stderr; returns how many were bad.
fn convert(
    input: impl BufRead,
    output: impl Write,
    orders: Option<&OrderTable>,
    schema: Option<u32>,
) -> io::Result<usize> {
    let mut out = BufWriter::new(output);
    let bad = each_request(input, |req| {
        // Borrows the line: one vector per line.
        let mut v = FeatureVector::new();
        features::extract_with(req, orders, &mut v);
        writeln!(out, "{}", vector_json(&v, schema))
    })?;
    out.flush()?;
    Ok(bad)
}

/// Learns the order table of the requests and prints its text.
fn learn(
    input: impl BufRead,
    mut output: impl Write,
    min_count: u32,
    software: bool,
) -> io::Result<usize> {
    let mut counts = OrderCounts::default();
    let bad = each_request(input, |req| {
        let ua = req
            .headers()
            .find(|(name, _)| name.eq_ignore_ascii_case(b"user-agent"))
            .map_or(&b""[..], |(_, v)| v);
        let engine = Engine::of(&user_agent::parse(ua));
        if let Some(engine) = engine.filter(|e| !software || e.software_orders()) {
            let codes: Vec<u8> = req
                .headers()
                .map(|(name, _)| header_order::code(name))
                .filter(|c| !software || SOFTWARE_CODES.contains(c))
                .collect();
            counts.add(engine, &codes);
        }
        Ok(())
    })?;
    writeln!(output, "{}", counts.table(min_count).to_text())?;
    Ok(bad)
}

fn vector_json(v: &FeatureVector<'_>, schema: Option<u32>) -> String {
    let output = Output {
        float: v
            .floats()
            .iter()
            .zip(FLOAT_FEATURES)
            .filter(|(_, spec)| keep(schema, spec))
            .map(|(&x, _)| (!x.is_nan()).then_some(x))
            .collect(),
        // Categorical values are request bytes; nginx's scorer hashes them as
        // bytes, and the JSON output shows them as text (lossily where they
        // are not UTF-8).
        cat: v
            .cats()
            .zip(CAT_FEATURES)
            .filter(|(_, spec)| keep(schema, spec))
            .map(|(c, _)| String::from_utf8_lossy(c))
            .collect(),
        evidence: None,
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
        let bad = convert(input.as_bytes(), &mut out, None, None).unwrap();
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

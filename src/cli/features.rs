//! `edgeguard features`: the feature vectors of JSON Lines requests, in the
//! input format of `edgeguard predict`, computed by the code nginx runs.

use std::io::{self, BufRead, BufWriter, Write};
use std::process::ExitCode;

use edgeguard::features::orders::{Engine, OrderCounts, OrderTable, ORDERS_KEY};
use edgeguard::features::{
    self, header_order, user_agent, FeatureSpec, FeatureVector, Request, CAT_FEATURES,
    FLOAT_FEATURES, SCHEMA_VERSIONS,
};
use edgeguard::request::edgeguard_header;
use serde::Deserialize;

const USAGE: &str = "usage: edgeguard features [--orders FILE] [--schema N] < requests.jsonl
       edgeguard features --names [--schema N]
       edgeguard features --learn-orders [--min-count N] < human-requests.jsonl

Reads one request per line:
  {\"method\": \"GET\", \"uri\": \"/a?b=1\", \"version\": \"1.1\", \"client\": \"203.0.113.7\",
   \"headers\": [[\"host\", \"x\"], [\"user-agent\", \"...\"]]}
(version: 1.0, 1.1, 2 or 3, as a number or a string, \"HTTP/\" allowed;
other fields are ignored) and prints one line per request:
  {\"float\": [numbers, null for NaN], \"cat\": [\"strings\"]}
in vector order (every feature of every schema version), as `edgeguard
predict` reads it.

options:
  --orders FILE      the learnt header-order table: a CatBoost JSON model
                     (its model_info[\"edgeguard.order_pairs\"]) or the table's
                     text; without it `order_reversed_pairs` is null
  --header, --names  print the feature names, {\"float\": [...], \"cat\": [...]}, and exit
  --schema N         only the features a model of schema N reads (names and
                     vectors; schema order, which is the order models/train.py
                     trains on); default: every feature of every version
  --learn-orders     count ordered header pairs per claimed browser engine over
                     the requests (people's browsers) and print the table text
  --min-count N      with --learn-orders: keep pairs seen in N requests or more (default 1)
";

#[derive(Default)]
struct Options {
    names: bool,
    schema: Option<u32>,
    orders: Option<String>,
    learn: bool,
    min_count: Option<u32>,
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut o = Options::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |what: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{arg} needs {what}"))
        };
        match arg.as_str() {
            "--header" | "--names" => o.names = true,
            "--learn-orders" => o.learn = true,
            "--orders" => o.orders = Some(value("a file")?),
            "--schema" => {
                let v = value("a version")?;
                let n: u32 = v
                    .parse()
                    .map_err(|_| format!("--schema {v}: not a number"))?;
                if !SCHEMA_VERSIONS.contains(&n) {
                    return Err(format!("--schema {n}: versions are {SCHEMA_VERSIONS:?}"));
                }
                o.schema = Some(n);
            }
            "--min-count" => {
                let v = value("a count")?;
                o.min_count = Some(
                    v.parse()
                        .map_err(|_| format!("--min-count {v}: not a count"))?,
                );
            }
            _ => return Err(format!("unknown argument {arg}")),
        }
    }
    if o.schema.is_some() && o.learn {
        return Err("--schema does not go with --learn-orders".into());
    }
    if o.min_count.is_some() && !o.learn {
        return Err("--min-count goes with --learn-orders".into());
    }
    if o.names as u8 + o.learn as u8 + o.orders.is_some() as u8 > 1 {
        return Err("--names, --learn-orders and --orders exclude each other".into());
    }
    Ok(o)
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

/// One input line. Unknown fields (labels) are ignored.
#[derive(Deserialize)]
struct Line {
    method: String,
    uri: String,
    version: Version,
    #[serde(default)]
    client: String,
    #[serde(default)]
    headers: Vec<(String, String)>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Version {
    Number(f64),
    Text(String),
}

impl Version {
    /// nginx's `r->http_version` scaled to 10, 11, 20, 30.
    fn scaled(&self) -> Result<u16, String> {
        let x = match self {
            Version::Number(x) => *x,
            Version::Text(s) => {
                let t = s.trim();
                let t = match t.get(..5) {
                    Some(p) if p.eq_ignore_ascii_case("http/") => &t[5..],
                    _ => t,
                };
                t.parse::<f64>()
                    .map_err(|_| format!("version: cannot read {s:?}"))?
            }
        };
        let scaled = (x * 10.0).round();
        match scaled as u16 {
            v @ (9 | 10 | 11 | 20 | 30) if scaled == f64::from(v) => Ok(v),
            _ => Err(format!("version: unsupported HTTP version {x}")),
        }
    }
}

/// One output line: `float` is `Option<f32>` for vectors (null for NaN)
/// and `&str` for the names line.
#[derive(serde::Serialize)]
struct Output<'a, F> {
    float: Vec<F>,
    cat: Vec<std::borrow::Cow<'a, str>>,
}

/// Runs the subcommand with the arguments after its name.
pub fn run(args: &[String]) -> ExitCode {
    if matches!(args, [a] if a == "--help" || a == "-h") {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let options = match parse_options(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("edgeguard features: {e}");
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if options.names {
        let keep = |f: &&FeatureSpec| options.schema.map_or(true, |v| f.in_schema(v));
        let names = Output {
            float: FLOAT_FEATURES.iter().filter(keep).map(|f| f.name).collect(),
            cat: CAT_FEATURES
                .iter()
                .filter(keep)
                .map(|f| f.name.into())
                .collect(),
        };
        println!(
            "{}",
            serde_json::to_string(&names).expect("names serialize")
        );
        return ExitCode::SUCCESS;
    }
    let orders = match options.orders.as_deref().map(read_orders).transpose() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("edgeguard features: --orders {e}");
            return ExitCode::FAILURE;
        }
    };
    let stdin = io::stdin().lock();
    let stdout = io::stdout().lock();
    let result = if options.learn {
        learn(stdin, stdout, options.min_count.unwrap_or(1))
    } else {
        convert(stdin, stdout, orders.as_ref(), options.schema)
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

/// Calls `f` with each good line's request; reports bad lines on stderr and
/// returns how many were bad.
fn each_request(
    input: impl BufRead,
    mut f: impl FnMut(&Request<'_>) -> io::Result<()>,
) -> io::Result<usize> {
    let mut bad = 0;
    for (i, raw) in input.split(b'\n').enumerate() {
        let raw = raw?;
        if raw.trim_ascii().is_empty() {
            continue;
        }
        let line: Result<Line, String> = serde_json::from_slice(&raw).map_err(|e| e.to_string());
        let version = line.and_then(|l| l.version.scaled().map(|v| (l, v)));
        match version {
            Ok((line, version)) => {
                let headers: Vec<edgeguard_header> = line
                    .headers
                    .iter()
                    .map(|(k, v)| edgeguard_header::new(k.as_bytes(), v.as_bytes()))
                    .collect();
                // SAFETY: the headers view strings of `line`, which outlives `req`.
                let req = unsafe {
                    Request::new(
                        line.method.as_bytes(),
                        line.uri.as_bytes(),
                        version,
                        line.client.as_bytes(),
                        &headers,
                    )
                };
                f(&req)?;
            }
            Err(msg) => {
                bad += 1;
                eprintln!("edgeguard features: line {}: {msg}", i + 1);
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
        writeln!(out, "{}", vector_line(req, orders, schema))
    })?;
    out.flush()?;
    Ok(bad)
}

/// Learns the order table of the requests and prints its text.
fn learn(input: impl BufRead, mut output: impl Write, min_count: u32) -> io::Result<usize> {
    let mut counts = OrderCounts::default();
    let bad = each_request(input, |req| {
        let ua = req
            .headers()
            .find(|(name, _)| name.eq_ignore_ascii_case(b"user-agent"))
            .map_or(&b""[..], |(_, v)| v);
        if let Some(engine) = Engine::of(&user_agent::parse(ua)) {
            let codes: Vec<u8> = req
                .headers()
                .map(|(name, _)| header_order::code(name))
                .collect();
            counts.add(engine, &codes);
        }
        Ok(())
    })?;
    writeln!(output, "{}", counts.table(min_count).to_text())?;
    Ok(bad)
}

fn vector_line(req: &Request<'_>, orders: Option<&OrderTable>, schema: Option<u32>) -> String {
    let mut v = FeatureVector::new();
    features::extract_with(req, orders, &mut v);
    let keep = |spec: &FeatureSpec| schema.map_or(true, |n| spec.in_schema(n));
    let output = Output {
        float: v
            .floats()
            .iter()
            .zip(FLOAT_FEATURES)
            .filter(|(_, spec)| keep(spec))
            .map(|(&x, _)| (!x.is_nan()).then_some(x))
            .collect(),
        // Every value is a sub-slice of a JSON string cut at ASCII bytes, or
        // ASCII written by the extractor, so this is always UTF-8.
        cat: v
            .cats()
            .zip(CAT_FEATURES)
            .filter(|(_, spec)| keep(spec))
            .map(|(c, _)| String::from_utf8_lossy(c))
            .collect(),
    };
    serde_json::to_string(&output).expect("vectors serialize")
}

#[cfg(test)]
mod tests {
    use super::*;
    use edgeguard::features::{Cat, Float};

    #[test]
    fn versions() {
        let ok: &[(&str, u16)] = &[
            ("1.1", 11),
            ("HTTP/1.0", 10),
            ("http/2.0", 20),
            ("2", 20),
            ("3", 30),
            (" HTTP/3 ", 30),
        ];
        for &(s, want) in ok {
            assert_eq!(Version::Text(s.into()).scaled(), Ok(want), "{s}");
        }
        assert_eq!(Version::Number(1.1).scaled(), Ok(11));
        assert_eq!(Version::Number(2.0).scaled(), Ok(20));
        for bad in ["1.2", "HTTP/", "x", "4", "-1", "1e9"] {
            assert!(Version::Text(bad.into()).scaled().is_err(), "{bad}");
        }
        assert!(Version::Number(f64::NAN).scaled().is_err());
        assert!(Version::Number(1.15).scaled().is_err());
    }

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

//! `edgeguard predict`: score JSON Lines documents with a CatBoost model.
//!
//! ```text
//! edgeguard predict --model M.json [--prediction-type raw|probability|class]
//!                   [--backend native|official] < docs.jsonl
//! ```
//!
//! Each input line is `{"float": [..], "cat": [".."]}`: floats are numbers,
//! `null` or `"nan"` for NaN, `"inf"` / `"-inf"`; categorical values are
//! strings, hashed as CatBoost hashes them. Each document prints one line of
//! values separated by single spaces. A bad line prints nothing on stdout, an
//! error naming its line number on stderr, and makes the exit status 1; the
//! other lines are still scored. Usage errors exit with 2.

use std::io::{BufRead, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use edgeguard::model::{apply_prediction_type, cat_hash, Evaluator, Model, PredictionType};
use serde_json::Value;

/// Scores JSON Lines documents with a CatBoost model.
/// The long description of `--help`.
pub const LONG_ABOUT: &str =
    "Each input line is {\"float\": [..], \"cat\": [\"..\"]}: floats are numbers, \
null or \"nan\" for NaN, \"inf\" / \"-inf\"; categorical values are strings, \
hashed as CatBoost hashes them. Each document prints one line of values \
separated by single spaces. A bad line prints an error naming its line \
number and makes the exit status 1; usage errors exit with 2.";

#[derive(clap::Args, Debug)]
#[command(
    override_usage = "edgeguard predict --model M.json [--prediction-type raw|probability|class] \
                      [--backend native|official] < documents.jsonl"
)]
pub struct Args {
    /// The CatBoost JSON model
    #[arg(long, value_name = "M.json", required = true)]
    model: String,
    /// raw, probability or class
    #[arg(long, value_name = "TYPE", value_parser = prediction_type, default_value = "raw")]
    prediction_type: PredictionType,
    /// native, or official (a build with `--features official`)
    #[arg(long, value_parser = backend, default_value = "native")]
    backend: Official,
}

/// `--backend`: whether it is the official library.
#[derive(Clone, Copy, Debug)]
struct Official(bool);

fn prediction_type(v: &str) -> Result<PredictionType, String> {
    PredictionType::parse(v)
        .ok_or_else(|| format!("unknown prediction type {v:?} (raw, probability or class)"))
}

fn backend(v: &str) -> Result<Official, String> {
    match v {
        "native" => Ok(Official(false)),
        "official" => Ok(Official(true)),
        other => Err(format!("unknown backend {other:?} (native or official)")),
    }
}

/// The model behind either backend.
enum Backend {
    Native(Box<Model>),
    /// Only raw values come through [`Evaluator`]; the prediction type is then
    /// applied with the C API's semantics.
    #[cfg_attr(not(feature = "official"), allow(dead_code))]
    Official(Box<dyn Evaluator>),
}

#[cfg(feature = "official")]
fn load_official(path: &str) -> Result<Backend, String> {
    edgeguard::model::official::OfficialModel::load(Path::new(path))
        .map(|m| Backend::Official(Box::new(m)))
        .map_err(|e| e.to_string())
}

#[cfg(not(feature = "official"))]
fn load_official(_path: &str) -> Result<Backend, String> {
    Err("--backend official needs a build with `--features official` (the official CatBoost library)".into())
}

/// Parses one document; NaN is `null` or `"nan"`, infinities `"inf"`/`"-inf"`.
fn document(line: &str) -> Result<(Vec<f32>, Vec<String>), String> {
    let doc: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let array = |key: &str| {
        doc.get(key)
            .and_then(Value::as_array)
            .ok_or_else(|| format!("\"{key}\" must be an array"))
    };
    let floats = array("float")?
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Null => Ok(f32::NAN),
            Value::Number(n) => Ok(n.as_f64().unwrap_or(f64::NAN) as f32),
            Value::String(s) => match s.as_str() {
                "nan" | "NaN" => Ok(f32::NAN),
                "inf" | "+inf" | "Infinity" => Ok(f32::INFINITY),
                "-inf" | "-Infinity" => Ok(f32::NEG_INFINITY),
                _ => Err(format!("float[{i}]: {s:?} is not a number")),
            },
            _ => Err(format!(
                "float[{i}]: expected a number, null, \"inf\" or \"-inf\""
            )),
        })
        .collect::<Result<Vec<f32>, String>>()?;
    let cats = array("cat")?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("cat[{i}]: expected a string"))
        })
        .collect::<Result<Vec<String>, String>>()?;
    Ok((floats, cats))
}

fn score(backend: &Backend, ty: PredictionType, line: &str) -> Result<Vec<f64>, String> {
    let (floats, cats) = document(line)?;
    let hashes: Vec<i32> = cats.iter().map(|c| cat_hash(c.as_bytes()) as i32).collect();
    match backend {
        Backend::Native(model) => {
            let mut out = vec![0.0; model.output_len(ty)];
            model
                .predict(&floats, &hashes, ty, &mut out)
                .map_err(|e| e.to_string())?;
            Ok(out)
        }
        Backend::Official(model) => {
            let mut out = vec![0.0; model.dimension()];
            model
                .predict_raw(&floats, &hashes, &mut out)
                .map_err(|e| e.to_string())?;
            apply_prediction_type(ty, &mut out);
            if ty == PredictionType::Class {
                out.truncate(1);
            }
            Ok(out)
        }
    }
}

/// Runs the subcommand.
pub fn run(options: Args) -> ExitCode {
    let loaded = if options.backend.0 {
        load_official(&options.model)
    } else {
        Model::load(Path::new(&options.model))
            .map(|m| Backend::Native(Box::new(m)))
            .map_err(|e| e.to_string())
    };
    let backend = match loaded {
        Ok(b) => b,
        Err(e) => {
            eprintln!("edgeguard predict: {e}");
            return ExitCode::from(2);
        }
    };
    if let Backend::Native(model) = &backend {
        if !model.supports(options.prediction_type) {
            eprintln!(
                "edgeguard predict: {}: prediction type {} is not meaningful for a {} model",
                options.model,
                options.prediction_type,
                model.objective()
            );
            return ExitCode::from(2);
        }
    }

    let stdin = std::io::stdin().lock();
    let mut stdout = BufWriter::new(std::io::stdout().lock());
    let mut failed = false;
    for (n, line) in stdin.lines().enumerate() {
        let number = n + 1;
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                eprintln!("edgeguard predict: line {number}: cannot read: {e}");
                failed = true;
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match score(&backend, options.prediction_type, &line) {
            Ok(values) => {
                let text: Vec<String> = values.iter().map(|v| format!("{v}")).collect();
                if writeln!(stdout, "{}", text.join(" ")).is_err() {
                    return ExitCode::FAILURE;
                }
            }
            Err(e) => {
                eprintln!("edgeguard predict: line {number}: {e}");
                failed = true;
            }
        }
    }
    if stdout.flush().is_err() || failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

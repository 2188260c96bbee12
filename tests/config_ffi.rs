//! The configuration object through the C ABI decides exactly as replay's
//! `Config` does: nginx (through the shim) and `edgeguard replay` run one
//! rule. Also the per-location override and the errors' codes, from Rust.

use std::ffi::{c_char, CStr, CString};
use std::net::IpAddr;
use std::path::PathBuf;
use std::ptr::{null, null_mut};

use edgeguard::ffi::config::*;
use edgeguard::ffi::edgeguard_result as R;
use edgeguard::ffi::edgeguard_str;
use edgeguard::ffi::location::*;
use edgeguard::ffi::scorer::edgeguard_request;
use edgeguard::load::Config;
use edgeguard::outcome::Outcome;

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A configuration from configure{}-style JSON, or the code and message.
fn config(json: &str) -> Result<*mut edgeguard_config, (R, String)> {
    let mut out = null_mut();
    let mut err = [0 as c_char; 512];
    let rc = unsafe {
        edgeguard_config_new(
            json.as_ptr(),
            json.len(),
            c"edgeguard.configure".as_ptr(),
            null(),
            &mut out,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    match rc {
        R::Ok => Ok(out),
        rc => Err((
            rc,
            unsafe { CStr::from_ptr(err.as_ptr()) }
                .to_string_lossy()
                .into_owned(),
        )),
    }
}

/// A location of `cfg` bound to `names` with their own thresholds, given
/// its scores (as the legacy engine's is).
fn policy(cfg: *const edgeguard_config, names: &[&str], own: &[f64]) -> *mut edgeguard_location {
    let c: Vec<CString> = names.iter().map(|n| CString::new(*n).unwrap()).collect();
    let ptrs: Vec<*const c_char> = c.iter().map(|s| s.as_ptr()).collect();
    let mut out = null_mut();
    let rc = unsafe {
        edgeguard_location_new(
            cfg,
            null(),
            ptrs.as_ptr(),
            own.as_ptr(),
            names.len(),
            null(),
            &mut out,
            null_mut(),
            0,
        )
    };
    assert_eq!(rc, R::Ok);
    out
}

/// The effects of a request from `addr` with `scores`.
fn decide(p: *const edgeguard_location, scores: &[f64], addr: IpAddr) -> edgeguard_effects {
    let client = addr.to_string();
    let req = edgeguard_request {
        method: edgeguard_str::from_slice(b"GET"),
        uri: edgeguard_str::from_slice(b"/"),
        client_addr: edgeguard_str::from_slice(client.as_bytes()),
        http_version: 11,
        headers: null(),
        headers_len: 0,
        tls: null(),
        request_id: edgeguard::ffi::edgeguard_str::EMPTY,
        peer_addr: edgeguard::ffi::edgeguard_str::EMPTY,
    };
    let given = edgeguard_given {
        scores: scores.as_ptr(),
        scores_len: scores.len(),
        removed: 0,
        unremovable: 0,
    };
    let mut scratch = null_mut();
    let mut d: edgeguard_effects = unsafe { std::mem::zeroed() };
    d.model = -7;
    let rc = unsafe {
        edgeguard_scratch_new(&mut scratch);
        let rc = edgeguard_location_run(p, null(), &req, &given, 0, 0, scratch, &mut d);
        edgeguard_scratch_free(scratch);
        rc
    };
    assert_eq!(rc, R::Ok);
    d
}

#[test]
fn the_c_abi_decides_as_replay_does() {
    let file = manifest().join("tests/fixtures/replay/config.json");
    let replay = Config::load(&file).unwrap();
    let scorer = replay.scorer().unwrap();
    let names: Vec<&str> = (0..scorer.model_count())
        .map(|i| scorer.model_name(i).unwrap())
        .collect();
    let own: Vec<f64> = (0..scorer.model_count())
        .map(|i| scorer.threshold(i).unwrap_or(f64::NAN))
        .collect();
    let cfg = config(&format!(r#"{{"config": "{}"}}"#, file.display())).unwrap();
    let p = policy(cfg, &names, &own);
    let addrs: Vec<IpAddr> = ["10.1.2.3", "192.0.2.1", "2001:db8::1", "::ffff:10.0.0.1"]
        .iter()
        .map(|a| a.parse().unwrap())
        .collect();
    let mut seen = [0usize; 4];
    for i in 0..=20 {
        for j in 0..=20 {
            let scores = [f64::from(i) / 20.0, f64::from(j) / 20.0];
            for &addr in &addrs {
                let want = replay.policy().decide(&scores, addr.to_string().as_bytes());
                let got = decide(p, &scores, addr);
                let action = match got.action {
                    Outcome::Pass => Outcome::Pass,
                    Outcome::Allow => Outcome::Allow,
                    Outcome::Log => Outcome::Log,
                    Outcome::Block => Outcome::Block,
                    Outcome::Unavailable => {
                        panic!("scored requests are never unavailable")
                    }
                    other => panic!("{other:?}: needs a challenge or verified bots"),
                };
                assert_eq!(action, want.action, "{scores:?} {addr}");
                assert_eq!(got.model, want.flagged_by.map_or(-1, |m| m as i32));
                seen[action.index()] += 1;
                if let Some(m) = want.flagged_by {
                    assert_eq!(Some(got.threshold), replay.policy().threshold(m));
                }
                // The status of a blocked request is the configured one.
                let status = if action == Outcome::Block { 403 } else { 0 };
                assert_eq!(got.status, status);
            }
        }
    }
    assert!(
        seen[Outcome::Pass.index()] > 0
            && seen[Outcome::Allow.index()] > 0
            && seen[Outcome::Block.index()] > 0,
        "{seen:?}"
    );
    unsafe {
        edgeguard_location_free(p);
        edgeguard_config_free(cfg);
    }
}

#[test]
fn a_location_overrides_mode_and_one_threshold_only() {
    let cfg = config(r#"{"models": {"bot": "b.json", "spoof": "s.json"}, "mode": "block", "thresholds": {"bot": 0.9}}"#)
        .unwrap();
    let json = r#"{"mode": "log", "thresholds": {"spoof": 0.5}}"#;
    let mut loc = null_mut();
    let rc = unsafe {
        edgeguard_config_new_for_location(
            cfg,
            json.as_ptr(),
            json.len(),
            null(),
            &mut loc,
            null_mut(),
            0,
        )
    };
    assert_eq!(rc, R::Ok);
    let resolved = unsafe { CStr::from_ptr(edgeguard_config_json(loc)) }
        .to_str()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(resolved).unwrap();
    assert_eq!(v["mode"], "log");
    assert_eq!(
        v["thresholds"],
        serde_json::json!({"bot": 0.9, "spoof": 0.5})
    );
    let p = policy(loc, &["bot", "spoof"], &[0.1, 0.1]);
    let here: IpAddr = "192.0.2.1".parse().unwrap();
    assert_eq!(decide(p, &[0.95, 0.0], here).action, Outcome::Log);
    assert_eq!(
        decide(p, &[0.5, 0.0], here).action,
        Outcome::Pass,
        "bot keeps 0.9"
    );
    let d = decide(p, &[0.0, 0.5], here);
    assert_eq!((d.action, d.model, d.threshold), (Outcome::Log, 1, 0.5));
    unsafe {
        edgeguard_location_free(p);
        edgeguard_config_free(loc);
        edgeguard_config_free(cfg);
    }
}

#[test]
fn errors_say_whose_they_are() {
    let (rc, msg) = config(r#"{"allow": ["10.0.0.0/8", "10.0.0.0/33"]}"#).unwrap_err();
    assert_eq!(rc, R::InvalidArgument);
    assert_eq!(
        msg,
        "edgeguard.configure: allow[1]: prefix length 33 too long in '10.0.0.0/33'"
    );
    let dir = std::env::temp_dir().join(format!("edgeguard-config-ffi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("edgeguard.json");
    std::fs::write(&file, r#"{"allow": ["10.0.0.0/33"]}"#).unwrap();
    let (rc, msg) = config(&format!(r#"{{"config": "{}"}}"#, file.display())).unwrap_err();
    assert_eq!(rc, R::ConfigInvalid);
    assert_eq!(
        msg,
        format!(
            "{}: allow[0]: prefix length 33 too long in '10.0.0.0/33'",
            file.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let (rc, msg) = config(&format!(r#"{{"config": "{}"}}"#, file.display())).unwrap_err();
    assert_eq!(rc, R::Io);
    assert!(msg.contains("cannot read the configuration file"), "{msg}");
}

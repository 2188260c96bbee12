//! The committed C header must be exactly what cbindgen generates from the
//! current source; run `make header` (EDGEGUARD_UPDATE_HEADER=1) to refresh it.

use std::path::Path;

use edgeguard::ffi::c_enum_declarations;

#[test]
fn committed_header_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut config =
        cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    // The enums `c_enum!` declares (cbindgen does not expand macros): their
    // declarations come from the enums themselves, ahead of the items that
    // use them.
    config.after_includes = Some(format!("\n{}", c_enum_declarations().trim_end()));
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_src(root.join("src/ffi/mod.rs"))
        .with_config(config)
        .generate()
        .expect("cbindgen failed on src/")
        .write(&mut generated);
    let path = root.join("include/edgeguard.h");
    if std::env::var_os("EDGEGUARD_UPDATE_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("write include/edgeguard.h");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/edgeguard.h is stale: run `make header` and commit the result"
    );
}

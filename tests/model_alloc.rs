//! Predictions allocate nothing: counted with dhat around the hot calls.

use std::path::Path;

use edgeguard::ffi::edgeguard_result;
use edgeguard::ffi::edgeguard_str;
use edgeguard::ffi::model::{
    edgeguard_model_free, edgeguard_model_new_from_file, edgeguard_model_predict_strings,
};
use edgeguard::model::{cat_hash, Evaluator, Model, PredictionType};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catboost")
        .join(name)
}

fn main() {
    predictions_do_not_allocate();
    println!("model_alloc: 1 passed, 0 failed");
}

/// One test function: dhat allows one profiler at a time.
fn predictions_do_not_allocate() {
    let _profiler = dhat::Profiler::builder().testing().build();
    for name in [
        "binary_ctr.json",
        "multiclass_cat.json",
        "regression_deep.json",
        "regression_cat.json",
    ] {
        let loading = dhat::HeapStats::get().total_blocks;
        let model = Model::load(&fixture(name)).unwrap();
        assert!(
            dhat::HeapStats::get().total_blocks > loading,
            "dhat sees the loader's allocations"
        );
        let floats = vec![0.25f32; model.float_feature_count()];
        let names: Vec<String> = (0..model.cat_feature_count())
            .map(|i| format!("value-{i}"))
            .collect();
        let strings: Vec<&[u8]> = names.iter().map(|s| s.as_bytes()).collect();
        let hashes: Vec<i32> = strings.iter().map(|s| cat_hash(s) as i32).collect();
        let c_strings: Vec<edgeguard_str> = strings
            .iter()
            .map(|s| edgeguard_str::from_slice(s))
            .collect();
        let mut out = vec![0.0; model.dimension()];
        let types: Vec<PredictionType> = [
            PredictionType::Raw,
            PredictionType::Probability,
            PredictionType::Class,
        ]
        .into_iter()
        .filter(|&t| model.supports(t))
        .collect();
        let path = std::ffi::CString::new(fixture(name).to_str().unwrap()).unwrap();
        let mut handle = std::ptr::null_mut();
        assert_eq!(
            unsafe {
                edgeguard_model_new_from_file(path.as_ptr(), &mut handle, std::ptr::null_mut(), 0)
            },
            edgeguard_result::Ok
        );

        let before = dhat::HeapStats::get().total_blocks;
        for _ in 0..50 {
            for &ty in &types {
                model.predict(&floats, &hashes, ty, &mut out).unwrap();
                model
                    .predict_strings(&floats, &strings, ty, &mut out)
                    .unwrap();
            }
            model.predict_raw(&floats, &hashes, &mut out).unwrap();
            let r = unsafe {
                edgeguard_model_predict_strings(
                    handle,
                    floats.as_ptr(),
                    floats.len(),
                    c_strings.as_ptr(),
                    c_strings.len(),
                    0,
                    out.as_mut_ptr(),
                    out.len(),
                )
            };
            assert_eq!(r, edgeguard_result::Ok);
            // Refused predictions allocate nothing either.
            assert!(model
                .predict(&floats[1..], &hashes, PredictionType::Raw, &mut out)
                .is_err());
        }
        let after = dhat::HeapStats::get().total_blocks;
        assert_eq!(
            after,
            before,
            "{name}: predictions allocated {} blocks",
            after - before
        );
        unsafe { edgeguard_model_free(handle) };
    }
}

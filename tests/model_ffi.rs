//! The model exports of the C ABI, called as C would call them.

use std::ffi::{c_char, CStr, CString};
use std::path::Path;
use std::ptr::{null, null_mut};

use edgeguard::ffi::edgeguard_result;
use edgeguard::ffi::edgeguard_str;
use edgeguard::ffi::model::*;
use edgeguard::model::{cat_hash, Model, PredictionType};

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catboost")
        .join(name)
        .display()
        .to_string()
}

fn load(name: &str) -> *mut edgeguard_model {
    let path = CString::new(fixture(name)).unwrap();
    let mut model = null_mut();
    let r = unsafe { edgeguard_model_new_from_file(path.as_ptr(), &mut model, null_mut(), 0) };
    assert_eq!(r, edgeguard_result::Ok);
    assert!(!model.is_null());
    model
}

fn message(buf: &[c_char]) -> String {
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// A document of the binary fixture: floats, categorical strings.
fn document() -> (Vec<f32>, Vec<&'static str>) {
    (
        vec![0.3, f32::NAN, -1.5],
        vec!["ua3", "asn7", "path1", "m1"],
    )
}

#[test]
fn load_from_file_reports_counts_and_predicts_like_the_rust_api() {
    let handle = load("binary_ctr.json");
    let model = Model::load(Path::new(&fixture("binary_ctr.json"))).unwrap();
    unsafe {
        assert_eq!(edgeguard_model_float_feature_count(handle), 3);
        assert_eq!(edgeguard_model_cat_feature_count(handle), 4);
        assert_eq!(edgeguard_model_dimension(handle), 1);
    }
    let (floats, cats) = document();
    let hashes: Vec<i32> = cats.iter().map(|c| cat_hash(c.as_bytes()) as i32).collect();
    let strs: Vec<edgeguard_str> = cats
        .iter()
        .map(|c| edgeguard_str::from_slice(c.as_bytes()))
        .collect();
    for (ty, n) in [
        (PredictionType::Raw, 0),
        (PredictionType::Probability, 1),
        (PredictionType::Class, 2),
    ] {
        let mut want = [0.0];
        model.predict(&floats, &hashes, ty, &mut want).unwrap();
        let mut got = [f64::NAN];
        let r = unsafe {
            edgeguard_model_predict(
                handle,
                floats.as_ptr(),
                3,
                hashes.as_ptr(),
                4,
                n,
                got.as_mut_ptr(),
                1,
            )
        };
        assert_eq!(r, edgeguard_result::Ok);
        assert_eq!(got, want, "{ty}");
        let mut got = [f64::NAN];
        let r = unsafe {
            edgeguard_model_predict_strings(
                handle,
                floats.as_ptr(),
                3,
                strs.as_ptr(),
                4,
                n,
                got.as_mut_ptr(),
                1,
            )
        };
        assert_eq!(r, edgeguard_result::Ok);
        assert_eq!(got, want, "{ty} from strings");
    }
    unsafe { edgeguard_model_free(handle) };
}

#[test]
fn prediction_type_numbers_are_the_enum_values() {
    assert_eq!(PredictionType::Raw as i32, 0);
    assert_eq!(PredictionType::Probability as i32, 1);
    assert_eq!(PredictionType::Class as i32, 2);
}

#[test]
fn load_errors_name_the_file_and_field_and_fit_the_buffer() {
    let mut model = null_mut();
    let mut buf = [0x55 as c_char; 256];
    let missing = CString::new("/nonexistent/bot.json").unwrap();
    let r = unsafe {
        edgeguard_model_new_from_file(missing.as_ptr(), &mut model, buf.as_mut_ptr(), buf.len())
    };
    assert_eq!(r, edgeguard_result::Io);
    assert!(model.is_null(), "nothing is published on error");
    assert!(
        message(&buf).starts_with("/nonexistent/bot.json: cannot open"),
        "{}",
        message(&buf)
    );

    let bad = br#"{"features_info": {}, "oblivious_trees": [{"leaf_values": [1, 2, 3], "splits": [{"split_index": 0, "split_type": "FloatFeature"}]}]}"#;
    let name = CString::new("bot.json").unwrap();
    let r = unsafe {
        edgeguard_model_new_from_buffer(
            bad.as_ptr(),
            bad.len(),
            name.as_ptr(),
            &mut model,
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    assert_eq!(r, edgeguard_result::ModelInvalid);
    assert!(model.is_null());
    assert!(
        message(&buf).starts_with("bot.json: oblivious_trees[0].leaf_values: 3 values"),
        "{}",
        message(&buf)
    );

    let mut tiny = [0x55 as c_char; 5];
    let r = unsafe {
        edgeguard_model_new_from_buffer(
            bad.as_ptr(),
            bad.len(),
            name.as_ptr(),
            &mut model,
            tiny.as_mut_ptr(),
            tiny.len(),
        )
    };
    assert_eq!(r, edgeguard_result::ModelInvalid);
    assert_eq!(message(&tiny), "bot.");
    let r = unsafe {
        edgeguard_model_new_from_buffer(
            bad.as_ptr(),
            bad.len(),
            name.as_ptr(),
            &mut model,
            null_mut(),
            99,
        )
    };
    assert_eq!(
        r,
        edgeguard_result::ModelInvalid,
        "a null errbuf is allowed"
    );
}

#[test]
fn load_from_buffer_accepts_a_fixture() {
    let bytes = std::fs::read(fixture("multiclass_cat.json")).unwrap();
    let name = CString::new("multiclass").unwrap();
    let mut model = null_mut();
    let r = unsafe {
        edgeguard_model_new_from_buffer(
            bytes.as_ptr(),
            bytes.len(),
            name.as_ptr(),
            &mut model,
            null_mut(),
            0,
        )
    };
    assert_eq!(r, edgeguard_result::Ok);
    assert_eq!(unsafe { edgeguard_model_dimension(model) }, 3);
    unsafe { edgeguard_model_free(model) };
}

#[test]
fn null_pointers_are_refused_everywhere() {
    let path = CString::new(fixture("binary_ctr.json")).unwrap();
    let name = CString::new("x").unwrap();
    let mut model = null_mut();
    unsafe {
        assert_eq!(
            edgeguard_model_new_from_file(null(), &mut model, null_mut(), 0),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_model_new_from_file(path.as_ptr(), null_mut(), null_mut(), 0),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_model_new_from_buffer(null(), 10, name.as_ptr(), &mut model, null_mut(), 0),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_model_new_from_buffer(b"{}".as_ptr(), 2, null(), &mut model, null_mut(), 0),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_model_new_from_buffer(
                b"{}".as_ptr(),
                2,
                name.as_ptr(),
                null_mut(),
                null_mut(),
                0
            ),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_model_new_from_buffer(null(), 0, name.as_ptr(), &mut model, null_mut(), 0),
            edgeguard_result::ModelInvalid,
            "an empty buffer is not a model"
        );
        assert!(model.is_null());
        edgeguard_model_free(null_mut());
        assert_eq!(edgeguard_model_float_feature_count(null()), 0);
        assert_eq!(edgeguard_model_cat_feature_count(null()), 0);
        assert_eq!(edgeguard_model_dimension(null()), 0);
    }

    let handle = load("binary_ctr.json");
    let (floats, _) = document();
    let hashes = [0i32; 4];
    let strs = [edgeguard_str::from_slice(b""); 4];
    let mut out = [7.0];
    unsafe {
        let p = out.as_mut_ptr();
        assert_eq!(
            edgeguard_model_predict(null(), floats.as_ptr(), 3, hashes.as_ptr(), 4, 0, p, 1),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_model_predict(handle, null(), 3, hashes.as_ptr(), 4, 0, p, 1),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_model_predict(handle, floats.as_ptr(), 3, null(), 4, 0, p, 1),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_model_predict(
                handle,
                floats.as_ptr(),
                3,
                hashes.as_ptr(),
                4,
                0,
                null_mut(),
                1
            ),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_model_predict_strings(null(), floats.as_ptr(), 3, strs.as_ptr(), 4, 0, p, 1),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_model_predict_strings(handle, null(), 3, strs.as_ptr(), 4, 0, p, 1),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_model_predict_strings(handle, floats.as_ptr(), 3, null(), 4, 0, p, 1),
            edgeguard_result::NullParameter
        );
        assert_eq!(
            edgeguard_model_predict_strings(
                handle,
                floats.as_ptr(),
                3,
                strs.as_ptr(),
                4,
                0,
                null_mut(),
                1
            ),
            edgeguard_result::NullParameter
        );
        // Null arrays with a zero count are empty arrays: here the wrong count.
        assert_eq!(
            edgeguard_model_predict(handle, null(), 0, hashes.as_ptr(), 4, 0, p, 1),
            edgeguard_result::FeatureCount
        );
        edgeguard_model_free(handle);
    }
    assert_eq!(out, [7.0], "nothing written on error");
}

#[test]
fn bad_arguments_get_their_codes_and_write_nothing() {
    let handle = load("binary_ctr.json");
    let regression = load("regression_deep.json");
    let (floats, _) = document();
    let hashes = [0i32; 4];
    let mut out = [7.0, 7.0];
    unsafe {
        let p = out.as_mut_ptr();
        for bad_type in [-1, 3, 100] {
            assert_eq!(
                edgeguard_model_predict(
                    handle,
                    floats.as_ptr(),
                    3,
                    hashes.as_ptr(),
                    4,
                    bad_type,
                    p,
                    2
                ),
                edgeguard_result::InvalidArgument
            );
        }
        assert_eq!(
            edgeguard_model_predict(handle, floats.as_ptr(), 2, hashes.as_ptr(), 4, 0, p, 2),
            edgeguard_result::FeatureCount
        );
        assert_eq!(
            edgeguard_model_predict(handle, floats.as_ptr(), 3, hashes.as_ptr(), 3, 0, p, 2),
            edgeguard_result::FeatureCount
        );
        assert_eq!(
            edgeguard_model_predict(handle, floats.as_ptr(), 3, hashes.as_ptr(), 4, 0, p, 0),
            edgeguard_result::BufferTooSmall
        );
        let six = [0.5f32; 6];
        assert_eq!(
            edgeguard_model_predict(regression, six.as_ptr(), 6, null(), 0, 1, p, 2),
            edgeguard_result::InvalidArgument,
            "a regression has no probability"
        );
        assert_eq!(
            edgeguard_model_predict(regression, six.as_ptr(), 6, null(), 0, 0, p, 2),
            edgeguard_result::Ok
        );
        edgeguard_model_free(handle);
        edgeguard_model_free(regression);
    }
    assert_eq!(out[1], 7.0, "only the model's dimension is written");
}

#[test]
fn cat_hash_export_matches_the_rust_hash() {
    unsafe {
        assert_eq!(edgeguard_cat_hash(b"Moscow".as_ptr(), 6), 605_890_862);
        assert_eq!(edgeguard_cat_hash(null(), 0), cat_hash(b"") as i32);
        assert_eq!(edgeguard_cat_hash(null(), 5), cat_hash(b"") as i32);
    }
}

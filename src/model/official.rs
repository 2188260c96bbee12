//! The official CatBoost model library (`libcatboostmodel.so`) as an
//! [`Evaluator`] backend, compiled only with `--features official`.
//!
//! This is the reference the native evaluator is checked against and the
//! baseline it is benchmarked against; it is not meant for the nginx hot path:
//! every prediction goes through C++ code that allocates on the heap, and every
//! call takes a process-wide lock (see [`LIBRARY`]).
//!
//! The bindings come from `catboost-sys`, which runs bindgen on a copy of
//! CatBoost 1.0.4's `c_api.h` it ships itself and links `-lcatboostmodel`
//! without a search path: building needs only libclang, linking needs
//! `LIBRARY_PATH` (and running `LD_LIBRARY_PATH`) pointing at the library that
//! `scripts/build-libcatboostmodel.sh` builds from CatBoost 1.2.7. The
//! functions used here have the same signatures in both headers.
//!
//! Only CatBoost binary models (`.cbm`) load: `LoadFullModelFromFile` always
//! reads the binary format. A JSON model is reported as
//! [`OfficialError::JsonModel`]; convert it with
//! `catboost.CatBoost().load_model("m.json", format="json").save_model("m.cbm")`.

// A binding to a C library: each call is an audited unsafe block below.
#![allow(unsafe_code)]

use std::ffi::{c_int, CStr, CString};
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard, PoisonError};

use catboost_sys as sys;

use super::error::ShapeError;
use super::evaluator::Evaluator;

/// Serializes every library call that can fail, up to reading its message.
///
/// The C API keeps the last error message in one process-wide string
/// (`Singleton<TErrorMessageHolder>` in `c_api.cpp`, not thread-local): two
/// failing calls on different threads would write that C++ string
/// concurrently, and a reader could copy another thread's message. Holding
/// this lock from the call until the message is copied makes both impossible.
/// Uncontended, it costs a few nanoseconds against microseconds of prediction.
static LIBRARY: Mutex<()> = Mutex::new(());

fn library_lock() -> MutexGuard<'static, ()> {
    // The lock guards no Rust data, so a panic while it was held left nothing
    // half-updated on our side.
    LIBRARY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The library's message for the call that just failed. Taking the guard
/// proves the caller still holds [`LIBRARY`].
fn last_error(_held: &MutexGuard<'static, ()>) -> String {
    // SAFETY: GetErrorString takes no arguments and returns the holder's
    // buffer (`TString::data()`, NUL-terminated), which only a failing call
    // rewrites; the held lock excludes those until we have copied it.
    let message = unsafe { sys::GetErrorString() };
    if message.is_null() {
        return String::from("(the library gave no message)");
    }
    // SAFETY: non-null, NUL-terminated, alive until the lock is released.
    unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned()
}

/// Why the official library could not load a model or make a prediction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OfficialError {
    /// The path holds a NUL byte, so it cannot be passed to C.
    Path(PathBuf),
    /// The library could not create an empty model handle.
    Create,
    /// The file is a JSON model; the C API reads CatBoost binary models only.
    JsonModel(PathBuf),
    /// The library refused the model file.
    Load {
        /// The file given to [`OfficialModel::load`].
        path: PathBuf,
        /// The library's `GetErrorString()`.
        message: String,
    },
    /// The model loaded but cannot be set to raw formula values.
    Setup {
        /// The file given to [`OfficialModel::load`].
        path: PathBuf,
        /// The library's `GetErrorString()`.
        message: String,
    },
    /// The arguments do not fit the model; the library was not called.
    Predict(ShapeError),
    /// The library failed a prediction whose arguments fit the model.
    Library {
        /// The library's `GetErrorString()`.
        message: String,
    },
}

impl fmt::Display for OfficialError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Path(path) => write!(f, "{}: path contains a NUL byte", path.display()),
            Self::Create => f.write_str("official CatBoost library: cannot create a model handle"),
            Self::JsonModel(path) => write!(
                f,
                "{}: a JSON model; the official CatBoost library loads only binary models (.cbm)",
                path.display()
            ),
            Self::Load { path, message } => write!(
                f,
                "{}: official CatBoost library cannot load it: {message}",
                path.display()
            ),
            Self::Setup { path, message } => write!(
                f,
                "{}: official CatBoost library cannot evaluate raw formula values: {message}",
                path.display()
            ),
            Self::Predict(error) => error.fmt(f),
            Self::Library { message } => {
                write!(
                    f,
                    "official CatBoost library failed a prediction: {message}"
                )
            }
        }
    }
}

impl std::error::Error for OfficialError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Predict(error) => Some(error),
            _ => None,
        }
    }
}

impl From<ShapeError> for OfficialError {
    fn from(error: ShapeError) -> Self {
        Self::Predict(error)
    }
}

/// A model loaded by the official CatBoost library.
///
/// Feature counts are the library's `GetFloatFeaturesCount` and
/// `GetCatFeaturesCount`: the highest float (categorical) feature index the
/// model knows plus one, unused features included, as [`Evaluator`] requires.
#[derive(Debug)]
pub struct OfficialModel {
    /// Owned `TFullModel*`; freed in [`Drop`].
    handle: NonNull<sys::ModelCalcerHandle>,
    float_count: usize,
    cat_count: usize,
    dimension: usize,
    tree_count: usize,
}

// SAFETY (Send): the handle owns a heap-allocated C++ model with no thread
// affinity (no thread-locals, no thread-bound resources), so it may be used
// and deleted from any thread.
unsafe impl Send for OfficialModel {}
// SAFETY (Sync): the methods taking `&self` either read the counts cached at
// load time or call the library with `LIBRARY` held, so the C++ model is never
// entered from two threads at once; we rely neither on `TFullModel::Calc`'s own
// thread safety nor on its lazy evaluator creation (done at load instead).
unsafe impl Sync for OfficialModel {}

impl OfficialModel {
    /// Loads a CatBoost binary model (`.cbm`) and prepares it to evaluate raw
    /// formula values.
    pub fn load(path: &Path) -> Result<Self, OfficialError> {
        let c_path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| OfficialError::Path(path.to_path_buf()))?;

        let held = library_lock();
        // SAFETY: no arguments; returns a new handle or null.
        let handle =
            NonNull::new(unsafe { sys::ModelCalcerCreate() }).ok_or(OfficialError::Create)?;
        // From here on, an early return frees the handle.
        let mut model = Self {
            handle,
            float_count: 0,
            cat_count: 0,
            dimension: 0,
            tree_count: 0,
        };

        // SAFETY: a live handle and a NUL-terminated path that outlives the call.
        if !unsafe { sys::LoadFullModelFromFile(model.raw(), c_path.as_ptr()) } {
            let message = last_error(&held);
            drop(held);
            return Err(if starts_like_json(path) {
                OfficialError::JsonModel(path.to_path_buf())
            } else {
                OfficialError::Load {
                    path: path.to_path_buf(),
                    message,
                }
            });
        }

        // Raw formula values are the library's default, but the default lives
        // in the evaluator, which the library creates lazily on first use;
        // setting it now creates the evaluator here rather than inside the
        // first prediction, and pins the output type whatever the default.
        // SAFETY: a live handle holding a loaded model; the enum value comes
        // from the bindings.
        let raw = sys::EApiPredictionType_APT_RAW_FORMULA_VAL;
        if !unsafe { sys::SetPredictionType(model.raw(), raw) } {
            return Err(OfficialError::Setup {
                path: path.to_path_buf(),
                message: last_error(&held),
            });
        }

        // SAFETY: a live handle holding a loaded model; these only read it.
        unsafe {
            model.float_count = sys::GetFloatFeaturesCount(model.raw());
            model.cat_count = sys::GetCatFeaturesCount(model.raw());
            model.dimension = sys::GetDimensionsCount(model.raw());
            model.tree_count = sys::GetTreeCount(model.raw());
        }
        Ok(model)
    }

    /// How many trees the model has.
    pub fn tree_count(&self) -> usize {
        self.tree_count
    }

    /// [`Evaluator::predict_raw`], with a library failure reported as an
    /// error instead of a panic.
    ///
    /// Calls `CalcModelPredictionWithHashedCatFeatures` for one document (the
    /// C API has no single-document variant taking hashes). Nothing is
    /// written to `out` when the arguments do not fit the model.
    pub fn try_predict_raw(
        &self,
        floats: &[f32],
        cats: &[i32],
        out: &mut [f64],
    ) -> Result<(), OfficialError> {
        self.check(floats, cats, out)?;
        let mut float_row = floats.as_ptr();
        // i32 and C int are the same type on every target the library builds for.
        let mut cat_row = cats.as_ptr().cast::<c_int>();

        let held = library_lock();
        // SAFETY: a live handle; one row of exactly `float_count` floats and
        // one of exactly `cat_count` hashes (checked above), each row pointer
        // alive for the call (the library reads through them, never writes);
        // `out` holds at least `dimension` doubles, the result size for one
        // document. A row of zero length is never dereferenced by the library.
        let ok = unsafe {
            sys::CalcModelPredictionWithHashedCatFeatures(
                self.raw(),
                1,
                &mut float_row,
                floats.len(),
                &mut cat_row,
                cats.len(),
                out.as_mut_ptr(),
                self.dimension,
            )
        };
        if ok {
            Ok(())
        } else {
            Err(OfficialError::Library {
                message: last_error(&held),
            })
        }
    }

    fn check(&self, floats: &[f32], cats: &[i32], out: &[f64]) -> Result<(), ShapeError> {
        ShapeError::check(
            (self.float_count, floats.len()),
            (self.cat_count, cats.len()),
            (self.dimension, out.len()),
        )
    }

    fn raw(&self) -> *mut sys::ModelCalcerHandle {
        self.handle.as_ptr()
    }
}

impl Evaluator for OfficialModel {
    fn float_feature_count(&self) -> usize {
        self.float_count
    }

    fn cat_feature_count(&self) -> usize {
        self.cat_count
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    /// # Panics
    ///
    /// If the library fails a prediction whose arguments fit the model, which
    /// [`Evaluator`] has no error for; use
    /// [`OfficialModel::try_predict_raw`] to get that as an error.
    ///
    /// Unlike the native evaluator, the library allocates on the C++ heap
    /// during every prediction (see `scripts/official-allocs.sh`).
    fn predict_raw(&self, floats: &[f32], cats: &[i32], out: &mut [f64]) -> Result<(), ShapeError> {
        match self.try_predict_raw(floats, cats, out) {
            Ok(()) => Ok(()),
            Err(OfficialError::Predict(error)) => Err(error),
            Err(error) => panic!("{error}"),
        }
    }
}

impl Drop for OfficialModel {
    fn drop(&mut self) {
        // SAFETY: the handle came from ModelCalcerCreate and is deleted once;
        // deleting never writes the shared error message.
        unsafe { sys::ModelCalcerDelete(self.raw()) }
    }
}

/// CatBoost's hash of one categorical value, computed by the official
/// library (`GetStringCatFeatureHash`): the value [`Evaluator::predict_raw`]
/// takes, as `u32` like the native hash (pass it `as i32`).
pub fn cat_hash(bytes: &[u8]) -> u32 {
    // SAFETY: reads exactly `len` bytes from a live slice; the library only
    // hashes them (no error path, so no shared message is written).
    let hash = unsafe { sys::GetStringCatFeatureHash(bytes.as_ptr().cast(), bytes.len()) };
    // The C API returns the 32-bit hash as a C int; keep the bits.
    hash as u32
}

/// Whether the file's first non-blank byte opens a JSON object; only used to
/// explain a load failure.
fn starts_like_json(path: &Path) -> bool {
    let mut head = [0_u8; 64];
    let Ok(read) = File::open(path).and_then(|mut file| file.read(&mut head)) else {
        return false;
    };
    head[..read].iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'{')
}

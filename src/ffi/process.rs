//! What this process is serving, kept where an nginx reload cannot reset it.
//!
//! nginx runs `init_by_lua` in a new Lua VM on every reload (HUP), so the
//! shim starts each reload knowing nothing of what the running workers score
//! with. The library is different: the master's new VM loads it before the
//! old VM is closed, so it stays mapped and its statics survive. The shim
//! records here whether the configuration in force scores with all of its
//! models, and refuses a reload whose models fail to load while that is true:
//! nginx then keeps the old workers and their models instead of starting new
//! workers that score nothing.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

static MODELS_IN_FORCE: AtomicBool = AtomicBool::new(false);

/// Records whether the configuration just put in force scores with every
/// model it names (nonzero), or not (zero: it names none, or they failed to
/// load and requests pass unscored).
#[no_mangle]
pub extern "C" fn edgeguard_process_set_models_in_force(in_force: c_int) {
    ffi_panic_boundary! {
        MODELS_IN_FORCE.store(in_force != 0, Ordering::Relaxed)
    }
}

/// 1 if the configuration last put in force in this process (by any Lua VM
/// that loaded this library) scores with every model it names, else 0.
#[no_mangle]
pub extern "C" fn edgeguard_process_models_in_force() -> c_int {
    ffi_panic_boundary! {
        c_int::from(MODELS_IN_FORCE.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_reads_back_what_was_set() {
        edgeguard_process_set_models_in_force(7);
        assert_eq!(edgeguard_process_models_in_force(), 1);
        edgeguard_process_set_models_in_force(0);
        assert_eq!(edgeguard_process_models_in_force(), 0);
        edgeguard_process_set_models_in_force(-1);
        assert_eq!(edgeguard_process_models_in_force(), 1);
        edgeguard_process_set_models_in_force(0);
    }
}

# Sourced by the scripts that build against or run the official CatBoost
# library: puts the library that build-libcatboostmodel.sh builds on the link
# path (catboost-sys emits `-lcatboostmodel` with no search directory) and on
# the loader's path. LIBRARY_PATH rather than RUSTFLAGS=-L: changing RUSTFLAGS
# would rebuild every crate.
#
# `cargo check --features official` needs none of this: catboost-sys's build
# script only runs bindgen (libclang, from apt's libclang-dev) on the c_api.h
# it ships itself, and checking never links.

EDGEGUARD_CACHE="${EDGEGUARD_CACHE:-$HOME/.cache/edgeguard}"
CATBOOST_LIB_DIR="$EDGEGUARD_CACHE/catboost-1.2.7/lib"
export LIBRARY_PATH="$CATBOOST_LIB_DIR${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$CATBOOST_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

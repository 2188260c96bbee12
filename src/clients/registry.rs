//! One client memory per name and configuration, for the process's life.
//!
//! nginx's master runs `init_by_lua` again on every reload, in a new Lua
//! VM; the library stays loaded (the new VM loads it before the old one
//! closes, `ffi::process`), and so does this registry. A reload that asks
//! for the memory it had gets the same memory back, and the workers it
//! forks see what the old workers recorded. A reload that changes the size,
//! the window or the hash key gets a new, empty memory (the old one stays
//! mapped in the master until it exits: a changed size costs both sizes
//! until a restart). A restart starts empty: the memory is anonymous, not
//! a file (`shm` says why).
//!
//! Open it in the master (`init_by_lua`), before the workers fork: a
//! memory opened in a worker is that worker's alone.

use std::sync::Mutex;

use super::shm;
use super::table::{ClientMemory, Config};

/// The memories opened in this process, by name and configuration.
static OPEN: Mutex<Vec<(String, Config, ClientMemory)>> = Mutex::new(Vec::new());

/// The memory named `name` made with `config`: the one this process made
/// before (by an earlier configuration, before a reload), else a new one
/// mapped shared with every process forked after this call.
pub fn open(name: &str, config: &Config) -> Result<ClientMemory, String> {
    let words = config.words()?;
    let mut open = OPEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, _, memory)) = open.iter().find(|(n, c, _)| n == name && c == config) {
        return Ok(memory.clone());
    }
    let region = shm::shared_words(words)
        .map_err(|e| format!("client memory '{name}' of {} bytes: {e}", words * 8))?;
    let memory = ClientMemory::attach(region, config)?;
    open.push((name.to_owned(), *config, memory.clone()));
    Ok(memory)
}

/// The name nginx's memory is opened under: one per process.
pub const NAME: &str = "edgeguard";

/// The memory a configuration asks for (`config`, the resolved options'
/// `client_memory`; none: off), opened under [`NAME`]: the loader's one
/// call, in the master at configure time.
pub fn configured(config: Option<&Config>) -> Result<Option<ClientMemory>, String> {
    config.map(|c| open(NAME, c)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::{ClientKey, Event, Fetch, Prefix, Width};

    #[test]
    fn the_same_name_and_configuration_give_the_same_memory() {
        let config = Config {
            bytes: 1 << 20,
            ..Config::default()
        };
        let key = ClientKey {
            prefix: Prefix::of([198, 51, 100, 1].into(), Width::Network),
            fingerprint: b"fp",
        };
        let first = open("registry-test", &config).unwrap();
        first
            .observe(&key, &Event::request(Fetch::Navigation, b"/"), 1_000_000)
            .unwrap();
        // A reload's new configuration asks again.
        let again = open("registry-test", &config).unwrap();
        assert!(again.same_memory(&first));
        assert_eq!(again.view(&key, 1_000_000).unwrap().navigations, 1);
        for (name, other) in [
            ("registry-test-2", config),
            (
                "registry-test",
                Config {
                    bytes: 2 << 20,
                    ..config
                },
            ),
            (
                "registry-test",
                Config {
                    epoch_secs: 60,
                    ..config
                },
            ),
        ] {
            let m = open(name, &other).unwrap();
            assert!(!m.same_memory(&first), "{name} {other:?}");
            assert!(!m.view(&key, 1_000_000).unwrap().known);
        }
        assert!(open(
            "registry-test",
            &Config {
                bytes: 10,
                ..config
            }
        )
        .is_err());
    }
}

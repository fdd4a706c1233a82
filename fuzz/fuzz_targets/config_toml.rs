//! `local.toml` and `config.toml`, split at the first 0xFF byte, loaded against a small fixed
//! project (`Sources::new(..).local(..).config(..).load()`): never a panic, never an empty error
//! message; a loaded configuration resolves its secrets.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kaged_mcp_fuzz::config::config_toml(data));

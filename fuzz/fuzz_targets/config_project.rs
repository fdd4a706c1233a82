//! `project.yaml`, `project.local.yaml` and `local.toml`, packed into one input and split at
//! each 0xFF byte, loaded with `Sources::new(..).overlay(..).local(..).load()`: never a panic,
//! never an empty error message; a loaded configuration resolves its secrets.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kaged_mcp_fuzz::config::config_project(data));

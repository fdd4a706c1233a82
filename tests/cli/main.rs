//! The built `kaged-mcp` binary, one test binary (needs the `cli` feature): `check`, the session
//! commands and `shell`, Streamable HTTP servers, lifecycle edges and every exit code, the
//! operator's input (`--arg`, ad-hoc servers, `--log-level`, `ping`, pasteable hints).

#[path = "../common/mod.rs"]
mod common;

mod bounded;
mod check;
mod env_secret;
mod eras;
mod hostile;
mod http;
mod import;
mod input;
mod inspect;
mod interrupts;
mod lifecycle;
mod operator;
mod pins;
mod protocol;
mod session;
mod shell;
mod skills;
mod tasks;

//! OAuth 2.1, one test binary: end to end against `tests/servers/oauth_server.py`, and no token
//! or client secret in the logs.
//!
//! `secret_logs` installs this binary's one global `tracing` subscriber
//! (`Captured::install_trace`), which also receives the events of the tests running beside it in
//! this process (they only widen what it checks); no other test here may install one (a second
//! would panic).

#[path = "../common/mod.rs"]
mod common;

// Runs the built `kaged-mcp` binary, which exists only with the `cli` feature.
#[cfg(feature = "cli")]
mod e2e;
// Servers sending secrets where they do not belong (issue 48).
mod hostile;
mod refresh;
mod secret_logs;
// Workload identity and DPoP; its `auth status` test runs the binary too.
#[cfg(feature = "cli")]
mod workload;

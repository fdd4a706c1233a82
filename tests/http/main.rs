//! Streamable HTTP and the 2026-07-28 revision, one test binary: real peers, the fault server,
//! no secret in its logs, era negotiation, catalog freshness, multi round-trip requests and what
//! a refusal says.
//!
//! `secret_logs` installs this binary's one global `tracing` subscriber
//! (`Captured::install_trace`), which also receives the events of the tests running beside it in
//! this process (they only widen what it checks); no other test here may install one (a second
//! would panic): a test that reads its own logs uses `Captured::install_local`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../sse_harness/mod.rs"]
mod sse_harness;

mod after_handshake;
mod cache_hints;
mod eras;
mod fault;
mod mrtr;
mod peers;
mod refusals;
mod secret_logs;
mod tasks;

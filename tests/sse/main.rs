//! The legacy SSE transport, one test binary: real peers, the fault server, the client over it,
//! and no secret in its logs.
//!
//! `secret_logs` installs this binary's one global `tracing` subscriber
//! (`Captured::install_trace`), which also receives the events of the tests running beside it in
//! this process (they only widen what it checks); no other test here may install one (a second
//! would panic).

#[path = "../common/mod.rs"]
mod common;
#[path = "../sse_harness/mod.rs"]
mod sse_harness;

mod client;
mod fault;
mod peers;
mod secret_logs;

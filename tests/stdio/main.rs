//! The stdio transport and the client over it, one test binary: real peers, misbehaving
//! servers, the transport on its own. (Bounded memory is `tests/stdio_memory.rs`, a binary of
//! its own: it reads this process's peak memory, so nothing else may run beside it.)

#[path = "../common/mod.rs"]
mod common;

mod faults;
mod peers;
mod transport;

//! [`ServerState`]: what the daemon can read about a server.

use std::fmt;

/// The state of one server's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerState {
    /// Not started yet: it starts on first use.
    Idle,
    /// Starting for the first time (spawn and `initialize` in progress).
    Starting,
    /// Ready for calls.
    Ready,
    /// After a failure: a restart is in progress or will begin on the next call after the
    /// backoff.
    Restarting,
    /// Failed too many times in a row; calls fail fast until re-enabled.
    Failed,
    /// Disabled by the embedder or shut down; calls fail fast until re-enabled.
    Disabled,
}

impl ServerState {
    /// The lower-case name: `idle`, `starting`, `ready`, `restarting`, `failed`, `disabled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Starting => "starting",
            Self::Ready => "ready",
            Self::Restarting => "restarting",
            Self::Failed => "failed",
            Self::Disabled => "disabled",
        }
    }
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

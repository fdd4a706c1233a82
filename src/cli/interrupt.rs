//! SIGINT and SIGTERM, and how a command ends: every command that talks to servers listens
//! for both from its first moment, so an interrupt never leaves a server running.
//!
//! - `call` and `shell` drop what is in flight (the client queues `notifications/cancelled`
//!   for each request, `tasks/cancel` for a task), then shut the session down within
//!   [`INTERRUPT_SHUTDOWN`] ([`Session::shutdown_within`]: what was queued is written, stdio
//!   servers leave or are terminated and reaped, HTTP sessions are ended with `DELETE`);
//! - the other commands stop where they are; their servers are killed as the session drops;
//! - a second signal while the session shuts down ends the process at once (what is left is
//!   killed).
//!
//! One line on stderr says which signal interrupted the command, and it exits with
//! 128 + the signal's number: 130 (SIGINT) or 143 (SIGTERM).
//!
//! A one-shot command that ran to its end shuts its session down within
//! [`ONE_SHOT_SHUTDOWN`]: a server that stays after stdin closes (one whose timers keep it
//! alive) is terminated rather than waited for.

use std::future::Future;
use std::time::Duration;

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::session::Session;

/// How long an interrupted command gives its servers to leave.
pub(super) const INTERRUPT_SHUTDOWN: Duration = Duration::from_millis(1500);

/// How long a one-shot command (not `shell`) gives its servers to leave once it has its
/// answer: a third to exit after stdin closes, a third after SIGTERM, then SIGKILL.
pub(super) const ONE_SHOT_SHUTDOWN: Duration = Duration::from_millis(240);

/// The signal that interrupted a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Interrupt {
    /// SIGINT (Ctrl-C).
    Int,
    /// SIGTERM.
    Term,
}

impl Interrupt {
    /// 128 + the signal's number, as a shell reports a process the signal ended.
    pub(super) fn exit_code(self) -> u8 {
        match self {
            Self::Int => 130,
            Self::Term => 143,
        }
    }

    /// The signal's name.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Int => "SIGINT",
            Self::Term => "SIGTERM",
        }
    }

    /// Prints the one line that says the command was interrupted, and what became of it.
    pub(super) fn announce(self, what: &str) {
        eprintln!("interrupted ({}): {what}", self.name());
    }
}

/// The command's listeners for SIGINT and SIGTERM. Installed inside the runtime, before
/// anything starts; one that cannot be installed is never heard (the signal then keeps its
/// default action).
pub(super) struct Signals {
    int: Option<Signal>,
    term: Option<Signal>,
}

impl Signals {
    /// Listens from now on.
    pub(super) fn listen() -> Self {
        Self {
            int: signal(SignalKind::interrupt()).ok(),
            term: signal(SignalKind::terminate()).ok(),
        }
    }

    /// The next SIGINT or SIGTERM.
    pub(super) async fn recv(&mut self) -> Interrupt {
        let int = async {
            if let Some(s) = &mut self.int {
                if s.recv().await.is_some() {
                    return Interrupt::Int;
                }
            }
            std::future::pending().await
        };
        let term = async {
            if let Some(s) = &mut self.term {
                if s.recv().await.is_some() {
                    return Interrupt::Term;
                }
            }
            std::future::pending().await
        };
        tokio::select! {
            i = int => i,
            t = term => t,
        }
    }

    /// Runs `body` unless a signal comes first: then `Err` with it, and `body` is dropped
    /// (a call in it is cancelled; a session it owns kills its servers).
    pub(super) async fn until<F: Future>(&mut self, body: F) -> Result<F::Output, Interrupt> {
        tokio::select! {
            out = body => Ok(out),
            signal = self.recv() => Err(signal),
        }
    }

    /// Shuts `session` down after `signal` (within [`INTERRUPT_SHUTDOWN`], or at once on a
    /// second signal) and returns the exit code.
    pub(super) async fn interrupted(&mut self, session: Session, signal: Interrupt) -> u8 {
        signal.announce("cancelled what was in flight; the servers are shut down");
        if let Err(again) = self
            .until(session.shutdown_within(INTERRUPT_SHUTDOWN))
            .await
        {
            tracing::debug!(
                signal = again.name(),
                "a second signal: the servers are killed"
            );
        }
        signal.exit_code()
    }
}

/// Runs a command's `body` on the command runtime, listening for SIGINT and SIGTERM from its
/// start: a signal drops the body (its session kills its servers), prints the line and
/// returns 130 or 143. For the commands with nothing in flight worth cancelling on the wire
/// (`call` and `shell` handle interrupts themselves).
pub(super) fn block_on(body: impl Future<Output = u8>) -> u8 {
    super::start::runtime().block_on(async {
        let mut signals = Signals::listen();
        match signals.until(body).await {
            Ok(code) => code,
            Err(signal) => {
                signal.announce("stopped; its servers were killed");
                signal.exit_code()
            }
        }
    })
}

/// Ends a one-shot command's session: within [`ONE_SHOT_SHUTDOWN`].
pub(super) async fn end(session: Session) {
    session.shutdown_within(ONE_SHOT_SHUTDOWN).await;
}

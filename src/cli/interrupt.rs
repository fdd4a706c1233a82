//! SIGINT and SIGTERM, and how a command ends: every command that talks to servers listens
//! for both from its first moment, so an interrupt never leaves a server running.
//!
//! - `call` and `shell` drop what is in flight (the client queues `notifications/cancelled`
//!   for each request, `tasks/cancel` for a task), then shut the session down within
//!   [`INTERRUPT_SHUTDOWN`] ([`Session::shutdown_within`]: what was queued is written, stdio
//!   servers leave or are terminated and reaped, HTTP sessions are ended with `DELETE`);
//! - the other commands (run by [`block_on`]) stop where they are, which drops what they have
//!   in flight (queueing its cancellation), and their session is shut down the same way
//!   (through the [`SessionCloser`] the start remembered);
//! - a second signal while the session shuts down ends the process at once (what is left is
//!   killed).
//!
//! One line on stderr says which signal interrupted the command, and it exits with
//! 128 + the signal's number: 130 (SIGINT) or 143 (SIGTERM).
//!
//! A command that gave up on a task (interrupted, timed out) first waits, at most
//! [`CANCEL_GRACE`], for its `tasks/cancel` to be answered while the session is still open,
//! and once the servers are shut down prints one line per cancel no server confirmed
//! ([`tell_unconfirmed`]): `could not cancel task …`, naming the server, the task and why.
//!
//! A one-shot command that ran to its end shuts its session down within
//! [`ONE_SHOT_SHUTDOWN`]: a server that stays after stdin closes (one whose timers keep it
//! alive) is terminated rather than waited for.

use std::future::Future;
use std::time::Duration;

use tokio::signal::unix::{signal, Signal, SignalKind};

use std::sync::{Mutex, OnceLock, PoisonError};

use crate::escape::visible;
use crate::session::{Session, SessionCloser};

/// How long an interrupted command gives its servers to leave.
pub(super) const INTERRUPT_SHUTDOWN: Duration = Duration::from_millis(1500);

/// How long a command that gave up on a task waits for the server to answer its
/// `tasks/cancel` before it shuts the session down (with [`INTERRUPT_SHUTDOWN`], the 2 s an
/// interrupted command allows itself).
pub(super) const CANCEL_GRACE: Duration = Duration::from_millis(500);

/// After the shutdown, how long the cancels still awaited get to see their session's end.
const CANCEL_AFTER_CLOSE: Duration = Duration::from_millis(50);

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
        let code = self.shut_down(session.closer(), signal).await;
        drop(session);
        code
    }

    /// What [`interrupted`](Self::interrupted) and [`block_on`] do after `signal`: the line,
    /// the cancels given [`CANCEL_GRACE`], the servers [`INTERRUPT_SHUTDOWN`] (a second signal
    /// ends both waits), then the cancels not confirmed.
    async fn shut_down(&mut self, closer: SessionCloser, signal: Interrupt) -> u8 {
        signal.announce("cancelled what was in flight; the servers are shut down");
        let polite = async {
            closer.settle_cancels(CANCEL_GRACE).await;
            closer.clone().shutdown_within(INTERRUPT_SHUTDOWN).await;
        };
        if let Err(again) = self.until(polite).await {
            tracing::debug!(
                signal = again.name(),
                "a second signal: the servers are killed"
            );
        } else {
            closer.settle_cancels(CANCEL_AFTER_CLOSE).await;
        }
        tell_unconfirmed(&closer);
        signal.exit_code()
    }
}

/// Prints one line on stderr per `tasks/cancel` no server confirmed (refused, not sent, not
/// answered): that task may still run. Server-supplied text is escaped.
pub(super) fn tell_unconfirmed(closer: &SessionCloser) {
    for c in closer.unconfirmed_cancels() {
        eprintln!(
            "could not cancel task `{}` on `{}`: {}; it may still run",
            visible(&c.task_id),
            c.server,
            visible(&c.reason.to_string())
        );
    }
}

/// Runs a command's `body` on the command runtime, listening for SIGINT and SIGTERM from its
/// start: a signal drops the body (its requests in flight queue their cancellation), shuts
/// the session it started down within [`INTERRUPT_SHUTDOWN`] (a second signal: at once),
/// prints the line and returns 130 or 143. (`call` and `shell` handle interrupts themselves.)
pub(super) fn block_on(body: impl Future<Output = u8>) -> u8 {
    runtime().block_on(async {
        let mut signals = Signals::listen();
        let out = signals.until(body).await;
        // The body is dropped by now: its requests in flight queued their cancellation.
        let closer = started()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match (out, closer) {
            (Ok(code), _) => code,
            (Err(signal), Some(closer)) => signals.shut_down(closer, signal).await,
            (Err(signal), None) => {
                signal.announce("stopped before any server started");
                signal.exit_code()
            }
        }
    })
}

/// The session the running command started, for [`block_on`] to shut down after a signal.
fn started() -> &'static Mutex<Option<SessionCloser>> {
    static STARTED: OnceLock<Mutex<Option<SessionCloser>>> = OnceLock::new();
    STARTED.get_or_init(|| Mutex::new(None))
}

/// Remembers the session a command started ([`super::start::start`] calls it), so that an
/// interrupt shuts its servers down in order, whichever command was running.
pub(super) fn remember(session: &Session) {
    *started().lock().unwrap_or_else(PoisonError::into_inner) = Some(session.closer());
}

/// The runtime every command runs its session on. The command line is a child subreaper
/// on it ([`become_subreaper`](crate::transport::stdio::become_subreaper)): a stdio server's
/// `setsid` descendants whose parent exits become its children, and end with that server
/// (the reaper runs on a thread of its own, not on this runtime).
pub(super) fn runtime() -> tokio::runtime::Runtime {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime can always be built");
    if let Err(e) = crate::transport::stdio::become_subreaper() {
        tracing::debug!(error = %e, "not a child subreaper");
    }
    runtime
}

/// Ends a one-shot command's session: the `tasks/cancel` of a call it gave up on (timed out)
/// get [`CANCEL_GRACE`] to be answered, the servers [`ONE_SHOT_SHUTDOWN`]; then a line for
/// each cancel not confirmed.
pub(super) async fn end(session: Session) {
    started()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let closer = session.closer();
    closer.settle_cancels(CANCEL_GRACE).await;
    session.shutdown_within(ONE_SHOT_SHUTDOWN).await;
    closer.settle_cancels(CANCEL_AFTER_CLOSE).await;
    tell_unconfirmed(&closer);
}

//! `kaged-mcp shell`: one session, then one command per line until `quit` or the end of input.
//!
//! The verbs ([`verbs`]) take the arguments of the commands of the same names, parsed by the
//! same clap types; `help` lists them and `help VERB` shows one's arguments. An answer goes to
//! stdout; in text mode a failure is an `error:` line on stderr, with `--json` every answer,
//! a failure included, is one line of JSON on stdout. `call` shows its progress and its notes
//! (an error result, a result cut to the cap) on stderr as the one-shot `call` does. A failing
//! command never ends the shell.
//!
//! On a terminal ([`terminal`]): line editing, history in the state directory, completion of
//! verbs, tools and servers ([`complete`]), and a server's elicitation answered with a form
//! ([`form`]). Otherwise stdin is read line by line and elicitation stays refused.
//!
//! SIGTERM during a command cancels what it has in flight and ends the shell (see
//! [`super::interrupt`]), as SIGINT does when the input is a pipe or a file (a script). On a
//! terminal, Ctrl-C during a command ends that command (its call is cancelled on the wire, a
//! form it opened is closed) and the shell goes on; at the prompt it only clears the line.

mod answer;
mod complete;
mod form;
mod terminal;
mod verbs;

use std::io::{IsTerminal, Write};
use std::sync::{Arc, RwLock};

use tower::BoxError;

use crate::client::elicitation::{ElicitRequest, ElicitationService};
use crate::session::Session;

use super::interrupt::{tell_unconfirmed, Interrupt, Signals, CANCEL_GRACE};
use super::output::Failure;
use super::start::{runtime, start_lasting, Scope, Who};
use super::{ServerArgs, EXIT_OK};
use complete::Names;
use terminal::{Asker, Read};

/// Where the lines come from.
enum Input {
    /// A terminal: rustyline, one prompt at a time.
    Terminal {
        asker: Asker,
        names: Arc<RwLock<Names>>,
    },
    /// A pipe or a file.
    Piped(tokio::sync::mpsc::Receiver<String>),
}

impl Input {
    /// The terminal's reader when stdin is one (and it can be set up), else stdin's lines.
    fn open() -> Self {
        if std::io::stdin().is_terminal() {
            let names = Arc::new(RwLock::new(Names {
                verbs: verbs::names(),
                ..Names::default()
            }));
            match terminal::spawn(Arc::clone(&names)) {
                Ok(asker) => return Input::Terminal { asker, names },
                Err(e) => eprintln!("warning: no line editing: {e}"),
            }
        }
        Input::Piped(terminal::piped())
    }

    /// The elicitation handler of a terminal: a form asked on it, for the command running
    /// now (`current`).
    fn elicitation(&self, current: &form::Current) -> Option<ElicitationService> {
        let Input::Terminal { asker, .. } = self else {
            return None;
        };
        let asker = asker.clone();
        let current = current.clone();
        Some(ElicitationService::new(tower::service_fn(
            move |req: ElicitRequest| {
                let asker = asker.clone();
                let current = current.clone();
                async move { Ok::<_, BoxError>(form::ask(&asker, &current, req).await) }
            },
        )))
    }

    /// Whether the lines come from a person at a terminal.
    fn is_terminal(&self) -> bool {
        matches!(self, Input::Terminal { .. })
    }

    /// Completion's names from the session as it is now (the catalog changes).
    fn refresh(&self, session: &Session, who: &Who<'_>) {
        let Input::Terminal { names, .. } = self else {
            return;
        };
        let tools = super::catalog_cmds::catalog(session, who)
            .map(|t| t.into_iter().map(|t| t.name).collect())
            .unwrap_or_default();
        let servers = session.status().into_iter().map(|s| s.server).collect();
        if let Ok(mut n) = names.write() {
            n.tools = tools;
            n.servers = servers;
        }
    }

    /// The next line; `None` at the end of input.
    async fn next(&mut self) -> Option<String> {
        match self {
            Input::Piped(rx) => rx.recv().await,
            Input::Terminal { asker, .. } => loop {
                match asker.line("kaged-mcp> ", true).await {
                    Read::Line(l) => return Some(l),
                    Read::Interrupted => continue,
                    Read::End => return None,
                }
            },
        }
    }
}

/// `kaged-mcp shell`: one command per line, one answer each, until `quit` or EOF; SIGINT or
/// SIGTERM cancels the command in flight and ends the shell.
pub(super) fn run(args: &ServerArgs, who: Who<'_>, json: bool, verbose: bool) -> u8 {
    runtime().block_on(async {
        // Listening from the start: an interrupt never leaves a server running, and one
        // during a command cancels what it has in flight.
        let mut signals = Signals::listen();
        let mut input = Input::open();
        let current = form::Current::default();
        let elicitation = input.elicitation(&current);
        let (session, _) = match signals
            .until(start_lasting(args, Scope::All, true, verbose, elicitation))
            .await
        {
            Ok(Ok(s)) => s,
            Ok(Err(f)) => return f.exit(json, verbose),
            Err(signal) => {
                signal.announce("stopped while the servers started; they were killed");
                return signal.exit_code();
            }
        };
        let shell = answer::Shell {
            session: &session,
            who,
            json,
            verbose,
            current,
        };
        loop {
            input.refresh(&session, &shell.who);
            let line = match signals.until(input.next()).await {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(signal) => return signals.interrupted(session, signal).await,
            };
            let begun = shell.current.begin();
            let done = signals.until(line_of(&shell, &line)).await;
            // The command ended: a form it opened ends with it.
            drop(begun);
            match done {
                Ok(false) => {}
                Ok(true) => break,
                // A person's Ctrl-C ends the command, not the shell.
                Err(Interrupt::Int) if input.is_terminal() => {
                    eprintln!("interrupted (SIGINT): the command was cancelled; the shell goes on");
                }
                Err(signal) => return signals.interrupted(session, signal).await,
            }
            // A task the command gave up on (timed out, Ctrl-C): its cancel is answered, or
            // the shell says so before the next prompt.
            let closer = session.closer();
            match signals.until(closer.settle_cancels(CANCEL_GRACE)).await {
                // A person's Ctrl-C only ends the wait.
                Ok(_) | Err(Interrupt::Int) if input.is_terminal() => tell_unconfirmed(&closer),
                Ok(_) => tell_unconfirmed(&closer),
                Err(signal) => return signals.interrupted(session, signal).await,
            }
        }
        let closer = session.closer();
        session.shutdown().await;
        tell_unconfirmed(&closer);
        EXIT_OK
    })
}

/// Runs one line; `true` when it asks to quit.
async fn line_of(shell: &answer::Shell<'_>, line: &str) -> bool {
    let line = line.trim();
    if line.is_empty() {
        return false;
    }
    let verb = match verbs::parse(line) {
        Ok(verbs::ShellVerb::Quit) => return true,
        Ok(v) => v,
        Err(e) => {
            shell.fail(Failure::usage(e));
            return false;
        }
    };
    let mut out = Vec::new();
    let done = shell.answer(verb, &mut out).await;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(&out);
    let _ = stdout.flush();
    drop(stdout);
    match done {
        Ok(done) => {
            for e in &done.errors {
                shell.fail(Failure::of(e));
            }
            for note in &done.notes {
                eprintln!("{note}");
            }
        }
        Err(f) => shell.fail(f),
    }
    let _ = std::io::stdout().flush();
    false
}

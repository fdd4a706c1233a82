//! The shell's input: on a terminal, rustyline on a thread of its own (line editing, history
//! in the state directory, completion from [`super::complete`]), asked for one line at a time
//! so that between two prompts the terminal is free for an elicitation form
//! ([`super::form`]); otherwise stdin read line by line, as a script gives it.
//!
//! Either way the reading happens off the runtime, which keeps serving the servers (pings,
//! `list_changed`, restarts) while the operator types.

use std::io::BufRead;
use std::path::Path;
use std::sync::{Arc, RwLock};

use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{Config, Editor};
use tokio::sync::{mpsc, oneshot};

use super::complete::{history_path, Helper, Names};

/// What reading a line gave.
#[derive(Debug)]
pub(super) enum Read {
    /// A line, without its end.
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// The end of input (Ctrl-D), or the terminal failed.
    End,
}

/// A request for one line.
struct Ask {
    prompt: String,
    /// Whether the line goes to the history (the shell's commands, not a form's answers).
    history: bool,
    reply: oneshot::Sender<Read>,
}

/// A handle on the terminal's reader: asks it for a line. Cheap to clone.
#[derive(Debug, Clone)]
pub(super) struct Asker {
    tx: mpsc::UnboundedSender<Ask>,
}

impl Asker {
    /// One line read after `prompt`; `history`: kept in the history.
    pub(super) async fn line(&self, prompt: &str, history: bool) -> Read {
        let (reply, answer) = oneshot::channel();
        let ask = Ask {
            prompt: prompt.to_owned(),
            history,
            reply,
        };
        if self.tx.send(ask).is_err() {
            return Read::End;
        }
        answer.await.unwrap_or(Read::End)
    }
}

/// Starts the terminal's reader: rustyline with the shell's completion over `names`, and the
/// history file (when the state directory can be found; a history that cannot be read or
/// written is told once and the shell goes on without it).
pub(super) fn spawn(names: Arc<RwLock<Names>>) -> Result<Asker, String> {
    let config = Config::builder()
        .auto_add_history(false)
        .history_ignore_space(true)
        .max_history_size(1000)
        .map_err(|e| e.to_string())?
        .build();
    let mut editor: Editor<Helper, FileHistory> =
        Editor::with_config(config).map_err(|e| format!("the terminal: {e}"))?;
    editor.set_helper(Some(Helper { names }));
    let history = history_path(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
        .and_then(|p| match prepare(&p) {
            Ok(()) => Some(p),
            Err(e) => {
                eprintln!("warning: no history: {}: {e}", p.display());
                None
            }
        });
    if let Some(p) = &history {
        // A new file has nothing to load.
        let _ = editor.load_history(p);
    }
    let (tx, rx) = mpsc::unbounded_channel::<Ask>();
    std::thread::spawn(move || {
        serve(rx, |ask| match editor.readline(&ask.prompt) {
            Ok(line) => {
                if ask.history && !line.trim().is_empty() {
                    keep(&mut editor, history.as_deref(), &line);
                }
                Read::Line(line)
            }
            Err(ReadlineError::Interrupted) => Read::Interrupted,
            Err(_) => Read::End,
        });
    });
    Ok(Asker { tx })
}

/// The reader's loop: each ask is read with `readline` and answered. An ask whose asker left
/// before its prompt was shown is skipped; a line typed at the prompt of an asker that left
/// meanwhile (a form whose call ended) answers the next ask instead of being lost, so the
/// shell gets the command the operator typed (`quit` included).
fn serve(mut rx: mpsc::UnboundedReceiver<Ask>, mut readline: impl FnMut(&Ask) -> Read) {
    let mut leftover: Option<Read> = None;
    while let Some(ask) = rx.blocking_recv() {
        if ask.reply.is_closed() {
            continue;
        }
        let read = match leftover.take() {
            Some(read) => read,
            None => readline(&ask),
        };
        if let Err(Read::Line(line)) = ask.reply.send(read) {
            leftover = Some(Read::Line(line));
        }
    }
}

/// Adds `line` to the history and appends it to the file.
fn keep(editor: &mut Editor<Helper, FileHistory>, file: Option<&Path>, line: &str) {
    let _ = editor.add_history_entry(line);
    if let Some(p) = file {
        let _ = editor.append_history(p);
        let _ = restrict(p);
    }
}

/// Creates the history's directory (0700) and file (0600), or makes an existing file 0600:
/// the lines may hold arguments an operator would not show others.
fn prepare(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    restrict(path)
}

/// Makes `path` readable and writable by its owner only.
fn restrict(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(test)]
impl Asker {
    /// An asker whose lines come from `readline` (a test's operator), on a thread.
    pub(super) fn with_reader(readline: impl FnMut(&str) -> Read + Send + 'static) -> Self {
        let (tx, rx) = mpsc::unbounded_channel::<Ask>();
        let mut readline = readline;
        std::thread::spawn(move || serve(rx, |ask| readline(&ask.prompt)));
        Self { tx }
    }
}

/// Lines from stdin that is not a terminal: read on a thread, one at a time, as before.
pub(super) fn piped() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel::<String>(1);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc as std_mpsc;
    use std::time::Duration;

    /// A line typed at the prompt of an asker that gave up (a form whose call ended) is the
    /// shell's next line, not lost: `quit` typed then ends the shell (issue 49 point 4; before,
    /// the line went to the form that was gone, and the shell waited for another).
    #[tokio::test]
    async fn a_line_typed_for_an_asker_that_left_goes_to_the_next_one() {
        let (prompted_tx, prompted) = std_mpsc::channel::<String>();
        let (typed, typed_rx) = std_mpsc::channel::<String>();
        let asker = Asker::with_reader(move |prompt| {
            prompted_tx.send(prompt.to_owned()).unwrap();
            typed_rx.recv().map_or(Read::End, Read::Line)
        });
        // The form asks, its prompt is shown, then the form is dropped (its call ended).
        let mut form = Box::pin(asker.line("  name (text): ", false));
        assert!(
            tokio::time::timeout(Duration::from_millis(50), form.as_mut())
                .await
                .is_err(),
            "nothing typed yet"
        );
        assert_eq!(prompted.recv().unwrap(), "  name (text): ");
        drop(form);
        // The shell asks for its next line; the operator types `quit` (at the form's prompt).
        let shell = tokio::spawn({
            let asker = asker.clone();
            async move { asker.line("kaged-mcp> ", true).await }
        });
        typed.send("quit".into()).unwrap();
        let read = tokio::time::timeout(Duration::from_secs(10), shell)
            .await
            .expect("the shell got its line")
            .unwrap();
        assert!(matches!(&read, Read::Line(l) if l == "quit"), "{read:?}");
    }
}

//! Completion on a terminal: the verbs, a verb's long options, tool names
//! (`mcp.<server>.<tool>`, from the session's catalog) where a verb takes a tool, and server
//! keys where it takes a server. [`candidates`] is a pure function of the line and the
//! [`Names`] known; [`Helper`] hands it to rustyline. Also where the history file lives.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::Context;

/// What completion offers besides the verbs: refreshed from the session between lines.
#[derive(Debug, Clone, Default)]
pub(super) struct Names {
    /// The verbs (`help` lists them in this order).
    pub(super) verbs: Vec<String>,
    /// The tools of the catalog (the agent's, with `--agent`).
    pub(super) tools: Vec<String>,
    /// The servers' keys.
    pub(super) servers: Vec<String>,
}

/// What the word at `index` (1 for the first after the verb) of `verb` is.
fn slot(verb: &str, index: usize) -> Option<Slot> {
    match (verb, index) {
        ("help", 1) => Some(Slot::Verb),
        ("call" | "describe", 1) => Some(Slot::Tool),
        ("tools" | "status", _) => Some(Slot::Server),
        (
            "enable" | "ping" | "resources" | "prompts" | "skills" | "read" | "prompt" | "complete"
            | "skill",
            1,
        ) => Some(Slot::Server),
        _ => None,
    }
}

/// What a word names.
enum Slot {
    Verb,
    Tool,
    Server,
}

/// The completions of the word before `pos` in `line`: where it starts, and the candidates
/// that extend it, sorted.
pub(super) fn candidates(names: &Names, line: &str, pos: usize) -> (usize, Vec<String>) {
    let before = line.get(..pos).unwrap_or(line);
    let start = before.rfind(char::is_whitespace).map_or(0, |i| {
        i + before[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[start..];
    let words: Vec<&str> = before[..start].split_whitespace().collect();
    let pool: Vec<String> = match words.first() {
        None => names.verbs.clone(),
        Some(verb) if word.starts_with('-') => super::verbs::options(verb),
        Some(verb) => match slot(verb, words.len()) {
            Some(Slot::Verb) => names.verbs.clone(),
            Some(Slot::Tool) => names.tools.clone(),
            Some(Slot::Server) => names.servers.clone(),
            None => Vec::new(),
        },
    };
    let mut out: Vec<String> = pool.into_iter().filter(|c| c.starts_with(word)).collect();
    out.sort();
    out.dedup();
    (start, out)
}

/// The shell's rustyline helper: completion from the shared [`Names`], nothing else.
pub(super) struct Helper {
    /// Updated by the shell between lines, read while the operator types.
    pub(super) names: Arc<RwLock<Names>>,
}

impl Completer for Helper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let names = match self.names.read() {
            Ok(n) => n.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        Ok(candidates(&names, line, pos))
    }
}

impl Hinter for Helper {
    type Hint = String;
}

impl Highlighter for Helper {}

impl Validator for Helper {}

impl rustyline::Helper for Helper {}

/// Where the shell keeps its history: `$XDG_STATE_HOME/kaged-mcp/history`, else
/// `$HOME/.local/state/kaged-mcp/history` (a relative or empty variable is ignored, as the XDG
/// specification says); `None` when neither is set.
pub(super) fn history_path(
    xdg_state_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let absolute = |v: Option<std::ffi::OsString>| {
        v.map(PathBuf::from)
            .filter(|p| p.is_absolute() && !p.as_os_str().is_empty())
    };
    let state = absolute(xdg_state_home)
        .or_else(|| absolute(home).map(|h| h.join(".local").join("state")))?;
    Some(state.join("kaged-mcp").join("history"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names {
            verbs: super::super::verbs::names(),
            tools: vec![
                "mcp.demo.echo".into(),
                "mcp.demo.add".into(),
                "mcp.fs.read".into(),
            ],
            servers: vec!["demo".into(), "fs".into()],
        }
    }

    #[test]
    fn the_first_word_completes_to_verbs() {
        assert_eq!(
            candidates(&names(), "", 0),
            (
                0,
                names()
                    .verbs
                    .into_iter()
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect()
            )
        );
        assert_eq!(
            candidates(&names(), "st", 2),
            (0, vec!["status".to_owned()])
        );
        assert_eq!(
            candidates(&names(), "pro", 3),
            (0, vec!["prompt".to_owned(), "prompts".to_owned()])
        );
        assert_eq!(
            candidates(&names(), "help ca", 7),
            (5, vec!["call".to_owned()])
        );
    }

    #[test]
    fn call_and_describe_complete_tool_names() {
        assert_eq!(
            candidates(&names(), "call mcp.demo.", 14),
            (
                5,
                vec!["mcp.demo.add".to_owned(), "mcp.demo.echo".to_owned()]
            )
        );
        assert_eq!(
            candidates(&names(), "describe mcp.f", 14),
            (9, vec!["mcp.fs.read".to_owned()])
        );
        // Only the first word after the verb is a tool.
        assert!(candidates(&names(), "call mcp.demo.echo mcp", 22)
            .1
            .is_empty());
    }

    #[test]
    fn server_verbs_complete_server_keys_and_options_complete_from_clap() {
        assert_eq!(
            candidates(&names(), "tools demo f", 12),
            (11, vec!["fs".to_owned()])
        );
        assert_eq!(
            candidates(&names(), "ping d", 6),
            (5, vec!["demo".to_owned()])
        );
        assert_eq!(
            candidates(&names(), "read fs ", 8),
            (8, Vec::<String>::new())
        );
        assert_eq!(
            candidates(&names(), "call mcp.demo.echo --ar", 23),
            (19, vec!["--arg".to_owned(), "--args".to_owned()])
        );
        // The cursor inside the line: only what is before it counts.
        assert_eq!(
            candidates(&names(), "ping d -c 3", 6),
            (5, vec!["demo".to_owned()])
        );
    }

    #[test]
    fn the_history_lives_in_the_state_directory() {
        let p =
            |x: Option<&str>, h: Option<&str>| history_path(x.map(Into::into), h.map(Into::into));
        assert_eq!(
            p(Some("/s"), Some("/h")),
            Some(PathBuf::from("/s/kaged-mcp/history"))
        );
        assert_eq!(
            p(Some("relative"), Some("/h")),
            Some(PathBuf::from("/h/.local/state/kaged-mcp/history"))
        );
        assert_eq!(p(Some(""), None), None);
    }
}

//! What pinning found, told to the operator once per server: the session's [`PinEvent`]s are
//! gathered while it starts, then told as one `warning:` line per server (what differs of the
//! server itself, how many tools are held or registered all the same and which, and the
//! command that shows why), so an updated server costs one line, not one per tool. What the
//! command itself is about (the tool a `call` or `describe` names, a server `tools` names
//! whose tools are all held) is left out of those lines: the command tells it last, alone.
//! Events after the start (a `tools/list_changed` in the shell) are told as they come, one
//! line each.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::pin::Verdict;
use crate::registry::ServerCatalog;
use crate::session::PinEvent;

use super::hints;

/// How many tool names a line names per kind of difference before `and N more`.
const NAMES_SHOWN: usize = 5;

/// The events of a session, gathered until [`PinNotes::told`] and told as they come after.
#[derive(Debug, Default)]
pub(super) struct PinNotes {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Whether the start is over: events are then told at once.
    live: bool,
    gathered: Vec<PinEvent>,
}

impl PinNotes {
    /// A new gatherer, to share with the session's hook.
    pub(super) fn new() -> Arc<Self> {
        Arc::default()
    }

    /// What the session's hook does with `event`: keeps it during the start, tells it after.
    pub(super) fn hear(&self, event: &PinEvent) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.live {
            drop(state);
            for line in lines(std::slice::from_ref(event)) {
                eprintln!("warning: {}", hints::line(&line));
            }
        } else {
            state.gathered.push(event.clone());
        }
    }

    /// Ends the start: the events gathered, to tell; later ones are told as they come.
    pub(super) fn told(&self) -> Vec<PinEvent> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.live = true;
        std::mem::take(&mut state.gathered)
    }
}

/// What pinning found of one server.
#[derive(Debug, Default)]
struct ServerNote {
    /// What differs of the server itself (`server version`, `instructions`, …).
    differences: Vec<String>,
    /// The tools held, with why.
    held: Vec<(String, Verdict)>,
    /// The tools registered all the same (`pins = "warn"`), with why.
    registered: Vec<(String, Verdict)>,
}

/// The operator's lines for `events`, one per server (in the servers' order), each without
/// its `warning: ` and with its hint still to make pasteable ([`hints::line`]).
pub(super) fn lines(events: &[PinEvent]) -> Vec<String> {
    let mut servers: BTreeMap<&str, ServerNote> = BTreeMap::new();
    for event in events {
        match event {
            PinEvent::Tool {
                server,
                tool,
                verdict,
                held,
            } => {
                let note = servers.entry(server).or_default();
                let list = if *held {
                    &mut note.held
                } else {
                    &mut note.registered
                };
                list.push((tool.clone(), verdict.clone()));
            }
            PinEvent::Server {
                server,
                differences,
            } => servers
                .entry(server)
                .or_default()
                .differences
                .extend(differences.iter().cloned()),
        }
    }
    servers
        .into_iter()
        .map(|(server, note)| note.line(server))
        .collect()
}

impl ServerNote {
    /// `server `s`: <what differs>; <held>; <registered>; review with …`.
    fn line(&self, server: &str) -> String {
        let mut clauses = Vec::new();
        if !self.differences.is_empty() {
            let alone = self.held.is_empty() && self.registered.is_empty();
            clauses.push(format!(
                "differs from mcp.lock in {}{}",
                self.differences.join(", "),
                if alone {
                    " (its tools are judged one by one)"
                } else {
                    ""
                }
            ));
        }
        if !self.held.is_empty() {
            clauses.push(format!(
                "{} held ({})",
                count(self.held.len()),
                kinds(server, &self.held)
            ));
        }
        if !self.registered.is_empty() {
            clauses.push(format!(
                "{} registered although {} from mcp.lock (pins = \"warn\"; {})",
                count(self.registered.len()),
                if self.registered.len() == 1 {
                    "it differs"
                } else {
                    "they differ"
                },
                kinds(server, &self.registered)
            ));
        }
        format!(
            "server `{server}`: {}; {}",
            clauses.join("; "),
            Verdict::approve_with(server)
        )
    }
}

/// `1 tool`, `3 tools`.
fn count(n: usize) -> String {
    format!("{n} tool{}", if n == 1 { "" } else { "s" })
}

/// The tools grouped by how they differ: `changed: `a`, `b`; new or renamed: `c``, or, for a
/// difference of the whole server (no lock, a server not in it), its reason alone.
fn kinds(server: &str, tools: &[(String, Verdict)]) -> String {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for (tool, verdict) in tools {
        let label = match verdict {
            Verdict::Changed { .. } => "changed".to_owned(),
            Verdict::NotInLock => "new or renamed".to_owned(),
            other => other.reason(server),
        };
        match groups.iter_mut().find(|(l, _)| *l == label) {
            Some((_, names)) => names.push(tool),
            None => groups.push((label, vec![tool])),
        }
    }
    let told: Vec<String> = groups
        .into_iter()
        .map(|(label, names)| match label.as_str() {
            "changed" | "new or renamed" => format!("{label}: {}", names_of(&names)),
            _ => label,
        })
        .collect();
    told.join("; ")
}

/// `` `a`, `b` ``, or the first [`NAMES_SHOWN`] and `and N more`.
fn names_of(names: &[&str]) -> String {
    let shown: Vec<String> = names
        .iter()
        .take(NAMES_SHOWN)
        .map(|n| format!("`{n}`"))
        .collect();
    let more = names.len().saturating_sub(NAMES_SHOWN);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// Whether pinning holds every tool `catalog` has (and there is one to hold).
pub(super) fn all_held(catalog: &ServerCatalog) -> bool {
    catalog.tools.is_empty() && !catalog.held.is_empty()
}

/// The operator's line for a server whose tools are all held (what `tools SERVER` fails with).
pub(super) fn all_held_line(server: &str, catalog: &ServerCatalog) -> String {
    let held: Vec<(String, Verdict)> = catalog
        .held
        .iter()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    format!(
        "server `{server}`: every tool it lists is held by pinning, {} ({}); {}",
        count(held.len()),
        kinds(server, &held),
        Verdict::approve_with(server)
    )
}

/// The line of a tool registered although it differs (`pins = "warn"`): what a `call` of it
/// says, alone, after the servers' lines.
pub(super) fn registered_line(server: &str, tool: &str, verdict: &Verdict) -> String {
    format!(
        "server `{server}`: tool `{tool}` is registered (pins = \"warn\") although: {}; {}",
        verdict.reason(server),
        Verdict::approve_with(server)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(tool: &str, verdict: Verdict, held: bool) -> PinEvent {
        PinEvent::Tool {
            server: "s".into(),
            tool: tool.into(),
            verdict,
            held,
        }
    }

    fn changed() -> Verdict {
        Verdict::Changed {
            fields: vec!["description"],
        }
    }

    #[test]
    fn fifteen_held_tools_are_one_line_naming_five() {
        let events: Vec<PinEvent> = (0..15)
            .map(|i| tool(&format!("t{i:02}"), changed(), true))
            .collect();
        assert_eq!(
            lines(&events),
            ["server `s`: 15 tools held (changed: `t00`, `t01`, `t02`, `t03`, `t04` and 10 more); \
              review with `kaged-mcp lock --check s`, which prints the command that approves what it shows"]
        );
    }

    #[test]
    fn the_server_its_held_and_its_registered_tools_share_one_line() {
        let events = [
            PinEvent::Server {
                server: "s".into(),
                differences: vec!["server version".into()],
            },
            tool("a", changed(), true),
            tool("b", Verdict::NotInLock, true),
            tool("c", Verdict::NotInLock, false),
            PinEvent::Tool {
                server: "r".into(),
                tool: "x".into(),
                verdict: Verdict::ServerNotInLock,
                held: true,
            },
        ];
        assert_eq!(
            lines(&events),
            [
                "server `r`: 1 tool held (server `r` is not in mcp.lock); review with \
                 `kaged-mcp lock --check r`, which prints the command that approves what it shows",
                "server `s`: differs from mcp.lock in server version; 2 tools held (changed: `a`; \
                 new or renamed: `b`); 1 tool registered although it differs from mcp.lock \
                 (pins = \"warn\"; new or renamed: `c`); review with `kaged-mcp lock --check s`, \
                 which prints the command that approves what it shows",
            ]
        );
    }

    #[test]
    fn events_after_the_start_are_not_gathered() {
        let notes = PinNotes::new();
        notes.hear(&tool("a", changed(), true));
        assert_eq!(notes.told().len(), 1);
        assert!(notes.told().is_empty());
    }
}

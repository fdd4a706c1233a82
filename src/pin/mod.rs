//! Tool-definition pinning: the catalog an operator approved is the catalog agents get.
//!
//! Agents read a tool's description and schema as instructions, so a server that changes
//! them after an operator approved it (a compromised package update, a re-pointed URL, a
//! "rug pull") changes what every agent does. `kaged-mcp lock` writes what each server lists
//! into `mcp.lock` beside `project.yaml` ([`Lock`]); at every session start and every
//! `notifications/tools/list_changed` each tool is compared with it ([`ServerPins`]), and
//! under `pins = "enforce"` a tool whose definition changed, or that the lock does not
//! know, is held out of the catalog ([`crate::registry::ServerCatalog::held`]).
//!
//! Beside this file: `canonical.rs` (the pinned form and its RFC 8785 digest), `lockfile.rs`
//! (the file), `diff.rs` (what changed, as an operator reviews it), `report.rs` (the
//! comparison of a whole project that `kaged-mcp lock --check` prints).

mod canonical;
mod diff;
mod lockfile;
mod report;

use std::fmt;
use std::str::FromStr;

pub use self::canonical::{canonical_bytes, definition_of, digest, tool_digest, PINNED_FIELDS};
pub use self::diff::{changed_fields, changes, write_changes, Change};
pub use self::lockfile::{
    Lock, LockError, LockedIdentity, LockedServer, LockedTool, Reached, LOCK_FILE, LOCK_VERSION,
    MAX_LOCK_BYTES,
};
pub use self::report::{
    identity_differences, LockReport, ServerReport, ServerState, ToolReport, ToolState,
};

use crate::protocol::ToolInfo;

/// How a server's catalog is held to `mcp.lock`: `pins` under `[mcp.<key>]` in local.toml,
/// else under `[mcp]` in config.toml, else `enforce` when the project has an `mcp.lock` and
/// `off` when it has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PinPolicy {
    /// A tool that differs from the lock is held: not registered, its calls refused.
    Enforce,
    /// Every tool is registered; each difference is one warning per session.
    Warn,
    /// Nothing is compared.
    Off,
}

impl PinPolicy {
    /// The name as written in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            PinPolicy::Enforce => "enforce",
            PinPolicy::Warn => "warn",
            PinPolicy::Off => "off",
        }
    }
}

impl fmt::Display for PinPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PinPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "enforce" => Ok(PinPolicy::Enforce),
            "warn" => Ok(PinPolicy::Warn),
            "off" => Ok(PinPolicy::Off),
            other => Err(format!(
                "expected \"enforce\", \"warn\" or \"off\", found \"{}\"",
                other.escape_debug()
            )),
        }
    }
}

/// A tool's standing against `mcp.lock`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Nothing is compared (`pins = "off"`, or no lock and no policy asking for one).
    Unpinned,
    /// The definition is the one in the lock.
    Pinned,
    /// The definition differs from the lock's in these fields ([`PINNED_FIELDS`]).
    Changed {
        /// The fields that differ.
        fields: Vec<&'static str>,
    },
    /// The lock has the server but not this tool: a new tool, or a renamed one (a rename is
    /// a removal and an addition).
    NotInLock,
    /// The lock does not have the server.
    ServerNotInLock,
    /// `pins = "enforce"` or `"warn"` is set, but the project has no `mcp.lock`.
    NoLock,
}

impl Verdict {
    /// Whether the tool differs from what was approved (anything but pinned or unpinned).
    pub fn differs(&self) -> bool {
        !matches!(self, Verdict::Unpinned | Verdict::Pinned)
    }

    /// A short word for status output and JSON: `unpinned`, `pinned`, `changed`,
    /// `not_in_lock`, `server_not_in_lock`, `no_lock`.
    pub fn kind(&self) -> &'static str {
        match self {
            Verdict::Unpinned => "unpinned",
            Verdict::Pinned => "pinned",
            Verdict::Changed { .. } => "changed",
            Verdict::NotInLock => "not_in_lock",
            Verdict::ServerNotInLock => "server_not_in_lock",
            Verdict::NoLock => "no_lock",
        }
    }

    /// Why the tool differs, as a clause for an operator (empty for one that does not).
    pub fn reason(&self, server: &str) -> String {
        match self {
            Verdict::Unpinned | Verdict::Pinned => String::new(),
            Verdict::Changed { fields } => format!(
                "its definition changed since mcp.lock was written ({})",
                fields.join(", ")
            ),
            Verdict::NotInLock => "it is not in mcp.lock (a new tool, or a renamed one)".to_owned(),
            Verdict::ServerNotInLock => format!("server `{server}` is not in mcp.lock"),
            Verdict::NoLock => "pins are on but the project has no mcp.lock".to_owned(),
        }
    }

    /// Where the change is reviewed, and approved: `lock --check` prints the command that
    /// pins exactly what it showed (`kaged-mcp lock SERVER --expect DIGEST`).
    pub fn approve_with(server: &str) -> String {
        format!(
            "review with `kaged-mcp lock --check {server}`, which prints the command that approves what it shows"
        )
    }
}

/// What the project's lock says of one server, to judge its tools by
/// ([`Config::server_pins`](crate::config::Config::server_pins)).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ServerPins<'a> {
    /// The server's policy.
    pub policy: PinPolicy,
    /// The project's lock, if it has one.
    pub lock: Option<&'a Lock>,
    /// The server's key.
    pub server: &'a str,
}

impl<'a> ServerPins<'a> {
    /// The lock's entry for the server.
    pub fn entry(&self) -> Option<&'a LockedServer> {
        self.lock.and_then(|l| l.servers.get(self.server))
    }

    /// The verdict on `tool` as listed now.
    pub fn verdict(&self, tool: &ToolInfo) -> Verdict {
        if self.policy == PinPolicy::Off {
            return Verdict::Unpinned;
        }
        let Some(lock) = self.lock else {
            return Verdict::NoLock;
        };
        let Some(entry) = lock.servers.get(self.server) else {
            return Verdict::ServerNotInLock;
        };
        let Some(locked) = entry.tools.get(&tool.name) else {
            return Verdict::NotInLock;
        };
        if tool_digest(tool) == locked.sha256 {
            Verdict::Pinned
        } else {
            Verdict::Changed {
                fields: changed_fields(&locked.definition, &definition_of(tool)),
            }
        }
    }

    /// Whether a tool with `verdict` is held out of the catalog.
    pub fn holds(&self, verdict: &Verdict) -> bool {
        self.policy == PinPolicy::Enforce && verdict.differs()
    }

    /// The instructions agents and embedders may see, given those the server `sent`, and
    /// whether the server's are held: agents read instructions as they read tool
    /// descriptions, so under `pins = "enforce"` a changed text is held like a changed tool
    /// and the approved one (or none, for a server the lock does not have) is what is seen
    /// until `kaged-mcp lock` approves the new one. Under `warn` and `off` the server's own.
    pub fn instructions(&self, sent: Option<&str>) -> (Option<String>, bool) {
        if self.policy != PinPolicy::Enforce {
            return (sent.map(str::to_owned), false);
        }
        match self.entry() {
            Some(locked) if locked.instructions.as_deref() == sent => {
                (sent.map(str::to_owned), false)
            }
            Some(locked) => (locked.instructions.clone(), true),
            None => (None, sent.is_some()),
        }
    }
}

//! [`TaskMode`]: which tool calls run as MCP tasks (`local.toml` `[mcp.<key>] tasks`). It lives
//! with the configuration, which the client and the session read, so the configuration depends
//! on nothing of them (see [`crate::client::tasks`] for how a task is followed).

use std::fmt;
use std::str::FromStr;

/// Which calls of a server's tools run as tasks: `local.toml` `[mcp.<key>] tasks`.
///
/// A tool says whether it can run as a task (`execution.taskSupport`: `forbidden`, the default,
/// `optional` or `required`). A 2025-11-25 server runs a call as a task only when the client asks
/// (`params.task`); a 2026-07-28 server decides itself, and only for a client that declared the
/// tasks extension.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskMode {
    /// Task-augment only the tools that require it (the default); a 2026-07-28 server is told
    /// the client speaks the tasks extension.
    #[default]
    Required,
    /// Also task-augment the tools that merely allow it (`optional`).
    Prefer,
    /// Never: the client does not speak tasks, and a tool that requires them is not
    /// registered.
    Off,
}

impl TaskMode {
    /// The name used in `local.toml` (`required`, `prefer`, `off`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Required => "required",
            Self::Prefer => "prefer",
            Self::Off => "off",
        }
    }

    /// Whether the client speaks tasks at all.
    pub fn enabled(self) -> bool {
        !matches!(self, Self::Off)
    }
}

impl fmt::Display for TaskMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TaskMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "required" => Ok(Self::Required),
            "prefer" => Ok(Self::Prefer),
            "off" => Ok(Self::Off),
            other => Err(format!(
                "unknown task mode {other:?}; expected \"required\", \"prefer\" or \"off\""
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_named() {
        for mode in [TaskMode::Required, TaskMode::Prefer, TaskMode::Off] {
            assert_eq!(mode.as_str().parse::<TaskMode>(), Ok(mode));
        }
        assert_eq!(TaskMode::default(), TaskMode::Required);
        let err = "always".parse::<TaskMode>().unwrap_err();
        assert!(
            err.contains("\"always\"") && err.contains("\"prefer\""),
            "{err}"
        );
    }
}

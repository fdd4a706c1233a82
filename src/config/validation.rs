//! [`Validation`]: which side of a tool call is checked against the tool's JSON Schemas
//! (`local.toml` `[mcp.<key>] validate`). It lives with the configuration, which the stack
//! reads, so the configuration depends on nothing of the stack (see
//! [`validate`](crate::validate) for what is checked and how).

use std::fmt;
use std::str::FromStr;

/// What the validation layer checks for a server's calls: `local.toml` `[mcp.<key>] validate`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Validation {
    /// Arguments against `inputSchema` and results against `outputSchema` (the default).
    #[default]
    Both,
    /// Arguments only.
    Arguments,
    /// Structured results only.
    Results,
    /// Nothing: no schema is compiled.
    Off,
}

impl Validation {
    /// The name used in `local.toml` (`both`, `arguments`, `results`, `off`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Both => "both",
            Self::Arguments => "arguments",
            Self::Results => "results",
            Self::Off => "off",
        }
    }

    /// Arguments are checked.
    pub fn arguments(self) -> bool {
        matches!(self, Self::Both | Self::Arguments)
    }

    /// Results are checked.
    pub fn results(self) -> bool {
        matches!(self, Self::Both | Self::Results)
    }
}

impl fmt::Display for Validation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Validation {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "both" => Ok(Self::Both),
            "arguments" => Ok(Self::Arguments),
            "results" => Ok(Self::Results),
            "off" => Ok(Self::Off),
            other => Err(format!(
                "unknown validation {other:?}; expected \"both\", \"arguments\", \"results\" or \"off\""
            )),
        }
    }
}

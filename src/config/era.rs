//! [`EraPreference`]: the operator's choice of protocol era for a server (`local.toml`
//! `[mcp.<key>] era`). It lives with the configuration, which the client reads, so the
//! configuration depends on nothing of the client.

use std::fmt;
use std::str::FromStr;

/// Which protocol era the client may speak with a server: `local.toml` `[mcp.<key>] era`
/// (see [`client::era`](crate::client::era) for what each means).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EraPreference {
    /// Probe with `server/discover`, fall back to `initialize`.
    #[default]
    Auto,
    /// `initialize` only.
    Legacy,
    /// `server/discover` and per-request `_meta` only.
    Modern,
}

impl EraPreference {
    /// The name used in `local.toml` (`auto`, `legacy`, `modern`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Legacy => "legacy",
            Self::Modern => "modern",
        }
    }
}

impl fmt::Display for EraPreference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EraPreference {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "legacy" => Ok(Self::Legacy),
            "modern" => Ok(Self::Modern),
            other => Err(format!(
                "unknown era {other:?}; expected \"auto\", \"legacy\" or \"modern\""
            )),
        }
    }
}

//! Which protocol era a session speaks, and the probe that finds out.
//!
//! The 2026-07-28 revision ("modern") has no `initialize`: every request carries its version
//! and the client's capabilities in `_meta`. Earlier revisions ("legacy") agree on a version
//! once, with `initialize`. A server may speak either or both. The operator chooses per server
//! ([`EraPreference`], `era` under `[mcp.<server>]` in `local.toml`):
//!
//! - **`auto`** (the default): the client sends `server/discover` first, as a modern request.
//!   A `DiscoverResult` listing a modern version this client speaks makes the session modern
//!   (an answer without `supportedVersions` is no `DiscoverResult`).
//!   A modern error (`-32020`…`-32022`) means a modern server: an `UnsupportedProtocolVersion`
//!   listing only legacy versions leads to `initialize`; any other is the start's error. Any
//!   other answer (an error of any code, an HTTP refusal without a modern error in its body, a
//!   result that is no `DiscoverResult`), no answer within [`ClientOptions::probe_timeout`], or
//!   a server that exits on the probe, means a legacy server: the client goes on with
//!   `initialize` on the same connection, or on a new one when the server closed it (a stdio
//!   server that exits on a request before `initialize` is started again; that exit is no
//!   crash to the supervisor). The outcome is kept for the life of the client: a server found
//!   legacy is not probed again at a restart, unless a start in that era fails; with an
//!   [`EraMemory`](super::EraMemory) it is kept between runs too (see
//!   [`era_memory`](super::era_memory)).
//! - **`legacy`**: `initialize` at once, no probe (what round 1 did).
//! - **`modern`**: `server/discover` must answer as a modern server, else the start fails with
//!   [`ErrorKind::NotModern`](crate::client::ErrorKind::NotModern).
//!
//! The 2024-11-05 HTTP+SSE transport carries only legacy revisions
//! ([`Transport::speaks_modern`](crate::transport::Transport::speaks_modern)): `auto` means
//! `legacy` there, and `modern` is refused by the configuration check.
//!
//! [`ClientOptions::probe_timeout`]: super::ClientOptions::probe_timeout

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::error::ClientError;
use super::rpc::RpcSession;
use crate::client::Kind;
use crate::protocol::lifecycle::unnamed_server;
use crate::protocol::modern::{
    choose_version, is_modern_error, is_supported_modern_version, ModernMeta,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::protocol::{DiscoverResult, InitializeResult};

pub use crate::config::EraPreference;

/// The era a session speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// An `initialize` handshake agreed on a version (2025-11-25 and earlier).
    Legacy,
    /// Every request carries its version in `_meta` (2026-07-28).
    Modern,
}

impl Era {
    /// `legacy` or `modern`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Legacy => "legacy",
            Self::Modern => "modern",
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the probe found.
#[derive(Debug)]
pub(crate) enum Probe {
    /// A modern server speaking `version`: the session is modern; the handshake-shaped
    /// summary of its `DiscoverResult`.
    Modern(InitializeResult),
    /// A legacy server (why, for the log); `closed` when it ended the connection, so
    /// `initialize` needs a new one.
    Legacy { why: String, closed: bool },
    /// The start fails.
    Failed(ClientError),
}

/// Sends `server/discover` on `session` and reads the answer (see the [module docs](self)).
pub(crate) async fn probe(
    session: &Arc<RpcSession>,
    meta: &ModernMeta,
    timeout: Duration,
) -> Probe {
    let (id, rx) = match session.discover(meta) {
        Ok(sent) => sent,
        // The server exited before the probe could be written: as if it exited on it.
        Err(e) => {
            let e = session.exit_behind(e).await;
            return match e.parts() {
                Kind::Exited { reason, .. } => Probe::Legacy {
                    why: format!("the server {reason} before server/discover"),
                    closed: true,
                },
                _ => Probe::Failed(e),
            };
        }
    };
    let answer = match tokio::time::timeout(timeout, rx).await {
        Err(_) => {
            session.forget(id);
            return Probe::Legacy {
                why: format!(
                    "no answer to server/discover within {} ms",
                    timeout.as_millis()
                ),
                closed: false,
            };
        }
        Ok(Err(_)) => {
            return Probe::Legacy {
                why: "the connection ended during server/discover".into(),
                closed: true,
            }
        }
        Ok(Ok(answer)) => answer,
    };
    let server = &session.server;
    match answer {
        // A server that answers every method it does not know with an empty result (some
        // test servers do) has not answered as a modern one.
        Ok(discover) if discover.supported_versions.is_empty() => Probe::Legacy {
            why: "server/discover was answered without supportedVersions".into(),
            closed: false,
        },
        Ok(discover) => {
            let supported = discover.supported_versions.clone();
            from_versions(server, &supported, Some(discover))
        }
        Err(e) => refused(server, e),
    }
}

/// What a probe answered with an error says about the server's era.
fn refused(server: &Arc<str>, e: ClientError) -> Probe {
    match e.parts() {
        Kind::JsonRpc {
            code,
            message,
            data,
        } => {
            let code = *code;
            if code == UNSUPPORTED_PROTOCOL_VERSION {
                let supported: Vec<String> = data
                    .as_ref()
                    .and_then(|d| d.get("supported"))
                    .and_then(|s| serde_json::from_value(s.clone()).ok())
                    .unwrap_or_default();
                return from_versions(server, &supported, None);
            }
            if is_modern_error(code) {
                return Probe::Failed(ClientError::new(
                    Arc::clone(server),
                    None,
                    Kind::ProtocolViolation {
                        detail: format!(
                            "server/discover was refused with modern error {code}: {message}"
                        ),
                    },
                ));
            }
            Probe::Legacy {
                why: format!("server/discover was answered error {code}: {message}"),
                closed: false,
            }
        }
        // A server that answered the probe with a refusal (a 4xx without a modern error in
        // its body: that would have come as a JSON-RPC error above) is a legacy one. One that
        // could not be reached, an authorization that failed, a 401/403: no answer about the
        // era, the start fails as any would.
        Kind::SendFailed { failure }
            if !failure.is_permanent()
                && failure
                    .http_status()
                    .is_some_and(|s| (400..500).contains(&s)) =>
        {
            Probe::Legacy {
                why: format!(
                    "server/discover was refused ({}): {}",
                    failure.http_status().unwrap_or_default(),
                    failure.message()
                ),
                closed: false,
            }
        }
        // `202 Accepted` to a request is no 2026-07-28 answer (a modern server answers on the
        // response); a legacy server may mean to answer on its GET stream after `initialize`.
        Kind::SendFailed { failure } if failure.http_status() == Some(202) => Probe::Legacy {
            why: format!(
                "server/discover was accepted without an answer (202): {}",
                failure.message()
            ),
            closed: false,
        },
        Kind::Exited { reason, .. } => Probe::Legacy {
            why: format!("the server {reason} on server/discover"),
            closed: true,
        },
        Kind::ConnectionClosed { detail } => Probe::Legacy {
            why: format!("the connection closed on server/discover: {detail}"),
            closed: true,
        },
        Kind::ProtocolViolation { .. } => Probe::Legacy {
            why: format!("server/discover was not answered with a DiscoverResult ({e})"),
            closed: false,
        },
        _ => Probe::Failed(e),
    }
}

/// The outcome for a server that lists `supported`.
fn from_versions(
    server: &Arc<str>,
    supported: &[String],
    discover: Option<DiscoverResult>,
) -> Probe {
    match choose_version(supported) {
        Some(version) if is_supported_modern_version(version) => {
            let discover = discover.unwrap_or_else(|| DiscoverResult {
                supported_versions: supported.to_vec(),
                capabilities: serde_json::Value::Null,
                instructions: None,
                result_type: None,
                meta: None,
            });
            Probe::Modern(InitializeResult {
                protocol_version: version.to_owned(),
                server_info: discover.server_info().unwrap_or_else(unnamed_server),
                capabilities: discover.capabilities,
                instructions: discover.instructions,
            })
        }
        Some(_) => Probe::Legacy {
            why: format!(
                "it lists only legacy versions ({}) for server/discover",
                supported.join(", ")
            ),
            closed: false,
        },
        None => Probe::Failed(ClientError::new(
            Arc::clone(server),
            None,
            Kind::NoCommonVersion {
                supported: supported.to_vec(),
            },
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preferences_parse_and_print() {
        for p in [
            EraPreference::Auto,
            EraPreference::Legacy,
            EraPreference::Modern,
        ] {
            assert_eq!(p.as_str().parse::<EraPreference>().unwrap(), p);
        }
        assert_eq!(EraPreference::default(), EraPreference::Auto);
        let e = "Modern".parse::<EraPreference>().unwrap_err();
        assert!(e.contains("\"auto\", \"legacy\" or \"modern\""), "{e}");
    }

    #[test]
    fn versions_decide_the_era() {
        let s: Arc<str> = "s".into();
        let v = |l: &[&str]| l.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert!(matches!(
            from_versions(&s, &v(&["2024-11-05", "2026-07-28"]), None),
            Probe::Modern(r) if r.protocol_version == "2026-07-28"
        ));
        assert!(matches!(
            from_versions(&s, &v(&["2025-06-18"]), None),
            Probe::Legacy { closed: false, .. }
        ));
        assert!(matches!(
            from_versions(&s, &v(&["2027-01-01"]), None),
            Probe::Failed(e) if e.kind() == crate::client::ErrorKind::NoCommonVersion
        ));
    }
}

//! The server's log: `logging/setLevel`, sent at each start when the operator set a level and
//! the server offers `logging` (2026-07-28 carries the level in every request's `_meta`
//! instead), and `notifications/message`, logged at the matching level.

use std::sync::Arc;

use serde::de::IgnoredAny;
use serde_json::Value;

use super::inbound;
use super::router::Router;
use super::rpc::RpcSession;
use crate::protocol::method::LogMessage;
use crate::protocol::notifications::LoggingMessageParams;
use crate::protocol::LoggingLevel;

/// Registers the logging feature: every `notifications/message` is logged.
pub(super) fn register(router: &mut Router) {
    router.notification::<LogMessage, LoggingMessageParams>(|session, params| {
        log_server_message(&session.server, &params);
    });
}

/// Sends `logging/setLevel` with `level` on a session that just started, when its server
/// offers `logging`; bounded by `limit`. A failure is logged at WARN and ends nothing: the
/// server keeps its own level.
pub(super) async fn set_log_level(
    session: &Arc<RpcSession>,
    level: LoggingLevel,
    limit: std::time::Duration,
) {
    let sent = match session.set_log_level(level) {
        Ok((rx, guard)) => guard.answer_within::<IgnoredAny>(rx, limit).await.map(drop),
        Err(e) => Err(e),
    };
    match sent {
        Ok(()) => tracing::debug!(
            server = &*session.server,
            ?level,
            "logging/setLevel answered"
        ),
        Err(e) => tracing::warn!(
            server = &*session.server,
            error = %e,
            "logging/setLevel failed; the server logs at its own level (`log_level` in local.toml)"
        ),
    }
}

/// Logs a server's `notifications/message` at the matching level.
fn log_server_message(server: &str, params: &LoggingMessageParams) {
    let text = match &params.data {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let text = inbound::excerpt(text.as_bytes());
    let logger = params.logger.as_deref().unwrap_or("");
    // `level` is the server's own name for it (the CLI's `--log-level` shows it as sent).
    let level = params.level.map_or("info", LoggingLevel::name);
    match params.level {
        Some(LoggingLevel::Debug) => {
            tracing::debug!(server, logger, level, message = %text, "server log")
        }
        Some(LoggingLevel::Info | LoggingLevel::Notice) | None => {
            tracing::info!(server, logger, level, message = %text, "server log");
        }
        Some(LoggingLevel::Warning) => {
            tracing::warn!(server, logger, level, message = %text, "server log")
        }
        Some(_) => tracing::error!(server, logger, level, message = %text, "server log"),
    }
}

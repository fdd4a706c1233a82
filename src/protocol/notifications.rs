//! The notifications the client reads (`progress`, `message`, `tools/list_changed`,
//! `subscriptions/acknowledged`) and writes (`initialized`, `cancelled`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::jsonrpc::RequestId;

/// The `_meta` key of every message on a `subscriptions/listen` stream: the listen request's id.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// What the client reads of `notifications/subscriptions/acknowledged`: which subscription it
/// acknowledges.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct AcknowledgedParams {
    /// `_meta`.
    #[serde(rename = "_meta", default)]
    pub meta: Option<SubscriptionMeta>,
    /// What the server agreed to honour (a subset of what was asked).
    #[serde(default)]
    pub notifications: Option<AcknowledgedFilter>,
}

/// The part of an acknowledged `subscriptions/listen` filter the client reads.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AcknowledgedFilter {
    /// The resource URIs whose updates the server will send (absent: none).
    #[serde(default)]
    pub resource_subscriptions: Option<Vec<String>>,
}

/// The `_meta` of a message on a `subscriptions/listen` stream.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct SubscriptionMeta {
    /// The id of the `subscriptions/listen` request.
    #[serde(rename = "io.modelcontextprotocol/subscriptionId", default)]
    pub subscription_id: Option<RequestId>,
}

/// The parameters of `notifications/progress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ProgressParams {
    /// The token the client put in the request's `_meta.progressToken` (the request id).
    pub progress_token: RequestId,
    /// Progress so far; increases with each notification.
    #[serde(default)]
    pub progress: f64,
    /// The total, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// A human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The parameters of `notifications/cancelled` as the client writes them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CancelledParams<'a> {
    pub(crate) request_id: u64,
    pub(crate) reason: &'a str,
}

/// The severity of a server's log message (RFC 5424 levels, as MCP names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LoggingLevel {
    /// Every level's name, least severe first.
    pub const NAMES: [&'static str; 8] = [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ];

    /// The level's name, as MCP writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }

    /// The level named `name` (as MCP writes it: `debug` … `emergency`).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "debug" => Self::Debug,
            "info" => Self::Info,
            "notice" => Self::Notice,
            "warning" => Self::Warning,
            "error" => Self::Error,
            "critical" => Self::Critical,
            "alert" => Self::Alert,
            "emergency" => Self::Emergency,
            _ => return None,
        })
    }
}

/// The parameters of `notifications/message`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct LoggingMessageParams {
    /// The severity; an unknown level reads as `None` and is logged at INFO.
    #[serde(default, deserialize_with = "lenient_level")]
    pub level: Option<LoggingLevel>,
    /// The logger's name, if given.
    #[serde(default)]
    pub logger: Option<String>,
    /// The message: any JSON value.
    #[serde(default)]
    pub data: Value,
}

fn lenient_level<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<LoggingLevel>, D::Error> {
    let value = Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_integer_and_float_values() {
        let p: ProgressParams =
            serde_json::from_str(r#"{"progressToken":3,"progress":1,"total":2.5,"message":"m"}"#)
                .unwrap();
        assert_eq!(p.progress_token, RequestId::Number(3));
        assert!((p.total.unwrap() - 2.5).abs() < f64::EPSILON);
    }

    #[test]
    fn every_level_reads_back_from_its_name() {
        for name in LoggingLevel::NAMES {
            let level = LoggingLevel::from_name(name).unwrap();
            assert_eq!(level.name(), name);
            assert_eq!(serde_json::to_value(level).unwrap(), name);
        }
        assert_eq!(LoggingLevel::from_name("WARNING"), None);
    }

    #[test]
    fn logging_message_with_an_unknown_level_still_reads() {
        let m: LoggingMessageParams =
            serde_json::from_str(r#"{"level":"chatty","data":{"a":1}}"#).unwrap();
        assert_eq!(m.level, None);
        let m: LoggingMessageParams =
            serde_json::from_str(r#"{"level":"warning","logger":"db","data":"x"}"#).unwrap();
        assert_eq!(m.level, Some(LoggingLevel::Warning));
    }

    #[test]
    fn cancelled_names_the_request() {
        let p = CancelledParams {
            request_id: 9,
            reason: "caller stopped waiting",
        };
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"requestId":9,"reason":"caller stopped waiting"}"#
        );
    }
}

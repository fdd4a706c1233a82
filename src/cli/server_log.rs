//! `--log-level`: the servers' log messages (`notifications/message`) on stderr, one line
//! each, `SERVER: LEVEL: MESSAGE`, whatever `-v` says.
//!
//! The client logs each message as one `server log` event of target
//! `kaged_mcp::client::logging` with the fields `server`, `logger`, `level` (the server's name
//! for it) and `message` (its first 200 bytes); this layer prints those events, and the `-v`
//! log leaves them out so a message is told once.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use crate::transport::text::clean;

/// The target of the client's `server log` events.
const TARGET: &str = "kaged_mcp::client::logging";

/// Whether `meta` is a server's log message.
pub(super) fn is_server_log(meta: &Metadata<'_>) -> bool {
    meta.is_event() && meta.target() == TARGET && meta.fields().field("logger").is_some()
}

/// Prints each server log message on stderr.
#[derive(Debug, Clone, Copy)]
pub(super) struct ServerLog;

/// The fields of one event.
#[derive(Default)]
struct Fields {
    server: String,
    level: String,
    messages: Vec<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "server" => value.clone_into(&mut self.server),
            "level" => value.clone_into(&mut self.level),
            "message" => self.messages.push(value.to_owned()),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.messages.push(format!("{value:?}"));
        }
    }
}

impl<S: Subscriber> Layer<S> for ServerLog {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if !is_server_log(event.metadata()) {
            return;
        }
        let mut f = Fields::default();
        event.record(&mut f);
        // The event's own words are `server log`; the server's text is the other `message`.
        let Some(text) = f.messages.iter().rev().find(|m| *m != "server log") else {
            return;
        };
        eprintln!(
            "{}: {}: {}",
            clean(&f.server, 100),
            clean(&f.level, 20),
            clean(text, 400)
        );
    }
}

//! How every command fails: a [`Failure`] carries the exit code, a kind and the operator's
//! line; [`Failure::exit`] prints it as `error:` lines on stderr and, with `--json`, as the one
//! JSON object every command prints on stdout, `{"error": {"kind", "message", …}}`.

use serde_json::{json, Map, Value};

use crate::Error;

use super::{EXIT_CONFIG, EXIT_FAILED};

/// What the `--help` of every command that prints JSON says of its exit codes and failures.
pub(super) const JSON_EXIT_CODES: &str = "\
Exit codes: 0 success; 1 a call, a server or the session failed; 2 a usage or configuration \
error (an unknown server, bad arguments, a project that does not load).
With --json a failure is one object on stdout, {\"error\": {\"kind\", \"message\", …}} (kind: \
`usage`, `config`, or the library's error kind such as `call_failed`, `timeout`, \
`unknown_server`), and its `error:` lines on stderr.";

/// Why a command failed: its exit code, the kind of failure (`usage`, `config`, or
/// [`Error::kind`]), the operator's lines and any fields the command adds (`server`, `tool`).
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) code: u8,
    pub(super) kind: &'static str,
    /// One `error:` line each; the JSON `message` joins them with `; `.
    pub(super) lines: Vec<String>,
    /// The whole chain, printed with `-v` when it says more than the lines.
    detail: Option<String>,
    fields: Map<String, Value>,
}

impl Failure {
    /// A failure of exit code `code`, kind `kind`, told by `message`.
    pub(super) fn new(code: u8, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            kind,
            lines: vec![message.into()],
            detail: None,
            fields: Map::new(),
        }
    }

    /// A usage error (exit 2): a bad argument, an unknown name.
    pub(super) fn usage(message: impl Into<String>) -> Self {
        Self::new(EXIT_CONFIG, "usage", message)
    }

    /// A configuration that does not load (exit 2), one line per error.
    pub(super) fn config(lines: Vec<String>) -> Self {
        Self {
            lines,
            ..Self::new(EXIT_CONFIG, "config", "")
        }
    }

    /// A failure of the library: exit 2 for what the operator's configuration or login must
    /// change (an undeclared server, a login to make), 1 otherwise.
    pub(super) fn of(e: &Error) -> Self {
        let code = match e {
            Error::UnknownServer { .. } | Error::LoginRequired { .. } | Error::Config(_) => {
                EXIT_CONFIG
            }
            _ => EXIT_FAILED,
        };
        let mut f = Self::new(code, e.kind(), e.reason());
        let full = e.to_string();
        if full != f.lines[0] {
            f.detail = Some(full);
        }
        if let Some(server) = e.server() {
            f = f.with("server", server);
        }
        f
    }

    /// With `key` set in the JSON object (`server`, `tool`, `check`); a key already set stays.
    pub(super) fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.fields
            .entry(key.to_owned())
            .or_insert_with(|| value.into());
        self
    }

    /// The same failure with its lines and its chain shown as
    /// [`visible`](crate::escape::visible) text: for a failure whose words a server chose (a
    /// skill's name, a refusal's detail), so no control or invisible code point reaches the
    /// terminal.
    pub(super) fn escaped(mut self) -> Self {
        for line in &mut self.lines {
            *line = crate::escape::visible(line).into_owned();
        }
        self.detail = self.detail.map(|d| crate::escape::visible(&d).into_owned());
        self
    }

    /// With exit code `code` instead.
    pub(super) fn code(mut self, code: u8) -> Self {
        self.code = code;
        self
    }

    /// The same failure told inside the shell: its hints name the shell's verbs
    /// ([`super::hints::fix_in_shell`]).
    pub(super) fn in_shell(mut self) -> Self {
        for line in &mut self.lines {
            *line = super::hints::fix_in_shell(line);
        }
        self.detail = self.detail.map(|d| super::hints::fix_in_shell(&d));
        self
    }

    /// The operator's line (the lines joined by `; `).
    pub(super) fn message(&self) -> String {
        self.lines.join("; ")
    }

    /// `{"error": {"kind", "message", …fields}}`: the one JSON form of every failure.
    pub(super) fn json(&self) -> Value {
        let mut error = Map::new();
        error.insert("kind".into(), Value::from(self.kind));
        error.insert(
            "message".into(),
            Value::from(super::hints::fix(&self.message())),
        );
        for (k, v) in &self.fields {
            error.entry(k.clone()).or_insert_with(|| v.clone());
        }
        json!({ "error": error })
    }

    /// Prints the failure (the JSON object on stdout with `json`, the `error:` lines on
    /// stderr either way, the chain too with `verbose`) and returns its exit code.
    pub(super) fn exit(&self, json: bool, verbose: bool) -> u8 {
        if json {
            println!("{}", crate::escape::json(&self.json().to_string()));
        }
        self.tell(verbose);
        self.code
    }

    /// The `error:` lines on stderr, and with `verbose` the whole chain.
    pub(super) fn tell(&self, verbose: bool) {
        for line in &self.lines {
            eprintln!("error: {}", super::hints::line(line));
        }
        if let Some(d) = self.detail.as_ref().filter(|_| verbose) {
            eprintln!("  detail: {}", super::hints::line(d));
        }
    }
}

/// clap's message, up to its usage block, on one line (without its `error: `).
pub(super) fn clap_message(e: &clap::Error) -> String {
    let text = e.to_string();
    let said: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:"))
        .filter(|l| !l.is_empty())
        .collect();
    said.join(" ").trim_start_matches("error: ").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_is_one_object_with_kind_and_message() {
        let f = Failure::config(vec!["a".into(), "b".into()]).with("server", "s");
        assert_eq!(
            f.json(),
            json!({"error": {"kind": "config", "message": "a; b", "server": "s"}})
        );
        assert_eq!(f.code, EXIT_CONFIG);
        let f = Failure::of(&Error::UnknownServer { server: "x".into() });
        assert_eq!(f.json()["error"]["kind"], "unknown_server");
        assert_eq!(f.json()["error"]["server"], "x");
        assert_eq!(f.code, EXIT_CONFIG);
        // A field never replaces the kind or the message.
        let f = Failure::usage("bad").with("kind", "other");
        assert_eq!(f.json()["error"]["kind"], "usage");
    }
}

//! The transport table: every name `transport:` accepts, the kind it stands for, and the keys
//! each kind brings. A transport is a row here, not a string matched in the validators; its
//! fields are read in [`super::servers`] and its public shape is
//! [`TransportConfig`](super::TransportConfig).

/// The transports, as `transport:` names them: `(name, kind)`. `http` is another name for
/// `streamable-http`, as other MCP hosts write it.
pub(super) const TRANSPORT_NAMES: &[(&str, TransportKind)] = &[
    ("stdio", TransportKind::Stdio),
    ("sse", TransportKind::Sse),
    ("streamable-http", TransportKind::StreamableHttp),
    ("http", TransportKind::StreamableHttp),
];

/// A transport, without its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TransportKind {
    Stdio,
    Sse,
    StreamableHttp,
}

impl TransportKind {
    /// The kind `transport:` means by `name`, if it is one of [`TRANSPORT_NAMES`].
    pub(super) fn lookup(name: &str) -> Option<Self> {
        TRANSPORT_NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, k)| *k)
    }

    /// The canonical name, as [`TransportConfig::name`](super::TransportConfig::name) gives it.
    pub(super) fn name(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Sse => "sse",
            TransportKind::StreamableHttp => "streamable-http",
        }
    }

    /// An example `url:` of a remote transport, for the message about a missing one.
    pub(super) fn example_url(self) -> &'static str {
        match self {
            TransportKind::Sse => "https://example.com/sse",
            TransportKind::Stdio | TransportKind::StreamableHttp => "https://example.com/mcp",
        }
    }

    /// The keys of this transport's own fields.
    pub(super) fn keys(self) -> &'static [&'static str] {
        match self {
            TransportKind::Stdio => STDIO_KEYS,
            TransportKind::Sse | TransportKind::StreamableHttp => HTTP_KEYS,
        }
    }
}

/// The keys every server may have, whatever its transport.
pub const COMMON_KEYS: &[&str] = &["transport", "auth", "tools", "skills", "roots"];
/// The keys of a `stdio` server's own fields.
pub const STDIO_KEYS: &[&str] = &["command", "cwd", "env"];
/// The keys of an `sse` or `streamable-http` server's own fields.
pub const HTTP_KEYS: &[&str] = &["url", "headers"];

/// `stdio`, `sse`, `streamable-http` (or `http`), for messages.
pub(super) fn transport_choices() -> String {
    let names: Vec<String> = TRANSPORT_NAMES
        .iter()
        .map(|(n, _)| format!("`{n}`"))
        .collect();
    names.join(", ")
}

//! Table-driven suite of bad configurations: each must fail with an error that names the right
//! file, key path and (for YAML and TOML) line.

use kaged_mcp::config::{ConfigError, Sources};

struct Case {
    name: &'static str,
    project: &'static str,
    overlay: Option<&'static str>,
    local: Option<&'static str>,
    config: Option<&'static str>,
    file: &'static str,
    key: &'static str,
    line: Option<usize>,
    says: &'static str,
    /// The configuration loads, and the error is its server's, reported by
    /// `Config::resolve_secrets` (which a session starting that server calls): a missing secret.
    at_start: bool,
}

const fn p(
    name: &'static str,
    project: &'static str,
    key: &'static str,
    line: usize,
    says: &'static str,
) -> Case {
    Case {
        name,
        project,
        overlay: None,
        local: None,
        config: None,
        file: "project.yaml",
        key,
        line: Some(line),
        says,
        at_start: false,
    }
}

/// [`p`] for an error of one server, at its start (see [`Case::at_start`]).
const fn at_start(
    name: &'static str,
    project: &'static str,
    key: &'static str,
    line: usize,
    says: &'static str,
) -> Case {
    Case {
        at_start: true,
        ..p(name, project, key, line, says)
    }
}

const STDIO: &str = "mcp:\n  db:\n    transport: stdio\n    command: [node, db.js]\n";

fn cases() -> Vec<Case> {
    vec![
        // Another client's server block is refused, naming where servers go (issue 36 point 10:
        // `mcpServers:` was accepted with 0 servers and exit 0).
        p(
            "claude_code_mcp_servers",
            "mcpServers:\n  fs:\n    command: npx\n",
            "mcpServers",
            1,
            "declare each server under `mcp:`",
        ),
        p(
            "codex_mcp_servers",
            "mcp:\n  db:\n    transport: stdio\n    command: [node, db.js]\nmcp_servers:\n  x:\n    command: y\n",
            "mcp_servers",
            5,
            "Codex's format",
        ),
        // --- the mcp block and server keys
        p("mcp is a list", "mcp: [a, b]\n", "mcp", 1, "expected a mapping"),
        p("mcp is a string", "mcp: nope\n", "mcp", 1, "expected a mapping"),
        p("server key with uppercase", "mcp:\n  GitHub:\n    transport: stdio\n    command: [x]\n", "mcp.GitHub", 2, "not a valid server key"),
        p("server key of one char", "mcp:\n  a:\n    transport: stdio\n    command: [x]\n", "mcp.a", 2, "not a valid server key"),
        p("server key starting with a digit", "mcp:\n  1db:\n    transport: stdio\n    command: [x]\n", "mcp.1db", 2, "not a valid server key"),
        p("server key ending with a dash", "mcp:\n  db-:\n    transport: stdio\n    command: [x]\n", "mcp.db-", 2, "not a valid server key"),
        p("server key of 33 chars", "mcp:\n  abcdefghijklmnopqrstuvwxyzabcdefg:\n    transport: stdio\n    command: [x]\n", "mcp.abcdefghijklmnopqrstuvwxyzabcdefg", 2, "not a valid server key"),
        p("server key with a dot", "mcp:\n  my.db:\n    transport: stdio\n    command: [x]\n", "mcp.my.db", 2, "not a valid server key"),
        p("server is a list", "mcp:\n  db: [1]\n", "mcp.db", 2, "expected a mapping"),
        p("server is null in the base file", "mcp:\n  db:\n", "mcp.db", 2, "expected a mapping"),
        // --- transport
        p("transport missing", "mcp:\n  db:\n    command: [x]\n", "mcp.db.transport", 2, "transport` is required"),
        p("transport websocket", "mcp:\n  db:\n    transport: websocket\n", "mcp.db.transport", 3, "unsupported transport `websocket`; supported transports are `stdio`, `sse`, `streamable-http`, `http`"),
        p("transport is a number", "mcp:\n  db:\n    transport: 3\n", "mcp.db.transport", 3, "expected one of `stdio`, `sse`, `streamable-http`, `http`"),
        p("streamable-http without url", "mcp:\n  db:\n    transport: streamable-http\n", "mcp.db.url", 2, "a streamable-http server needs `url`, such as https://example.com/mcp"),
        p("http without url", "mcp:\n  db:\n    transport: http\n", "mcp.db.url", 2, "a streamable-http server needs `url`"),
        p("streamable-http with a command", "mcp:\n  db:\n    transport: streamable-http\n    url: http://x/mcp\n    command: [x]\n", "mcp.db.command", 5, "`command` belongs to `transport: stdio`, not to a streamable-http server"),
        p("streamable-http url not http", "mcp:\n  db:\n    transport: streamable-http\n    url: ftp://x/mcp\n", "mcp.db.url", 4, "the scheme must be http or https"),
        p("stdio with a url", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    url: http://x/mcp\n", "mcp.db.url", 5, "`url` belongs to `transport: sse` or `streamable-http`, not to a stdio server"),
        // --- stdio fields
        p("command missing", "mcp:\n  db:\n    transport: stdio\n", "mcp.db.command", 2, "needs `command`"),
        p("command is a string", "mcp:\n  db:\n    transport: stdio\n    command: node db.js\n", "mcp.db.command", 4, "found a string"),
        p("command empty", "mcp:\n  db:\n    transport: stdio\n    command: []\n", "mcp.db.command", 4, "must not be empty"),
        p("command with an empty string", "mcp:\n  db:\n    transport: stdio\n    command: [node, '']\n", "mcp.db.command[1]", 4, "must not be empty"),
        p("command with a number", "mcp:\n  db:\n    transport: stdio\n    command: [node, 3]\n", "mcp.db.command[1]", 4, "expected a string"),
        p("command with a map", "mcp:\n  db:\n    transport: stdio\n    command:\n      - node\n      - {a: 1}\n", "mcp.db.command[1]", 6, "expected a string"),
        p("cwd absolute", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    cwd: /etc\n", "mcp.db.cwd", 5, "is absolute"),
        p("cwd escaping", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    cwd: tools/../../etc\n", "mcp.db.cwd", 5, "escapes the project root"),
        p("cwd parent", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    cwd: ..\n", "mcp.db.cwd", 5, "escapes the project root"),
        p("cwd empty", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    cwd: ''\n", "mcp.db.cwd", 5, "must not be empty"),
        p("cwd a list", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    cwd: [a]\n", "mcp.db.cwd", 5, "expected a string"),
        p("env a list", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    env: [A=1]\n", "mcp.db.env", 5, "expected a mapping"),
        p("env value a list", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    env:\n      A: [1]\n", "mcp.db.env.A", 6, "expected a string"),
        p("env name with =", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    env:\n      'A=B': x\n", "mcp.db.env.A=B", 6, "not a valid environment variable name"),
        p("env secret_ref a number", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    env:\n      TOKEN: {secret_ref: 3}\n", "mcp.db.env.TOKEN.secret_ref", 6, "expected a string, found an integer"),
        p("env secret_ref not dotted", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    env:\n      TOKEN: {secret_ref: 'a..b'}\n", "mcp.db.env.TOKEN.secret_ref", 6, "not a dotted path"),
        p("env value a mapping of another key", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    env:\n      TOKEN: {other: x}\n", "mcp.db.env.TOKEN.other", 6, "unknown key `other`; a value is a string or `{ secret_ref: a.b }`"),
        p("env value a secret_ref and another key", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    env:\n      TOKEN:\n        secret_ref: s.token\n        value: x\n", "mcp.db.env.TOKEN.value", 8, "unknown key `value`"),
        p("env value an empty mapping", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    env:\n      TOKEN: {}\n", "mcp.db.env.TOKEN", 6, "missing `secret_ref`"),
        at_start("env secret without local.toml", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    env:\n      TOKEN: {secret_ref: s.token}\n", "mcp.db.env.TOKEN", 6, "server `db` needs secret `s.token` for its environment variable `TOKEN`, which is not set in ./local.toml: add `token = \"…\"` under [secrets.s]"),
        Case {
            local: Some("[secrets.s]\nother = \"x\"\n"),
            ..at_start("env secret missing from local.toml", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    env:\n      PLAIN: a\n      TOKEN:\n        secret_ref: s.token\n", "mcp.db.env.TOKEN", 8, "needs secret `s.token` for its environment variable `TOKEN`, which is not set in local.toml")
        },
        Case {
            overlay: Some("mcp:\n  db:\n    env:\n      TOKEN: {secret_ref: ops.token}\n"),
            file: "project.local.yaml",
            ..at_start("env secret of the overlay missing", STDIO, "mcp.db.env.TOKEN", 4, "needs secret `ops.token`")
        },
        p("url on a stdio server", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    url: http://x\n", "mcp.db.url", 5, "belongs to `transport: sse`"),
        p("headers on a stdio server", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    headers: {A: b}\n", "mcp.db.headers", 5, "belongs to `transport: sse`"),
        // --- sse fields
        p("url missing", "mcp:\n  gh:\n    transport: sse\n", "mcp.gh.url", 2, "needs `url`"),
        p("url relative", "mcp:\n  gh:\n    transport: sse\n    url: /mcp\n", "mcp.gh.url", 4, "not an absolute URL"),
        p("url ftp", "mcp:\n  gh:\n    transport: sse\n    url: ftp://example.com/x\n", "mcp.gh.url", 4, "http or https"),
        p("url a number", "mcp:\n  gh:\n    transport: sse\n    url: 3\n", "mcp.gh.url", 4, "expected a string"),
        p("command on an sse server", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    command: [x]\n", "mcp.gh.command", 5, "belongs to `transport: stdio`"),
        p("cwd on an sse server", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    cwd: tools\n", "mcp.gh.cwd", 5, "belongs to `transport: stdio`"),
        p("header name with a space", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    headers:\n      'X Flag': a\n", "mcp.gh.headers.X Flag", 6, "not a valid HTTP header name"),
        p("header value with LF", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    headers:\n      X-Flag: \"a\\nInjected: b\"\n", "mcp.gh.headers.X-Flag", 6, "CR or LF"),
        p("header value with CR", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    headers:\n      X-Flag: \"a\\rb\"\n", "mcp.gh.headers.X-Flag", 6, "CR or LF"),
        p("static header colliding with bearer auth", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    headers:\n      authorization: Bearer x\n    auth: { type: bearer, secret_ref: a.b }\n", "mcp.gh.headers.authorization", 6, "collides with the auth header"),
        p("static header colliding with a custom auth header", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    auth: { type: header, header_name: X-API-Key, secret_ref: a.b }\n    headers:\n      x-api-key: nope\n", "mcp.gh.headers.x-api-key", 7, "collides with the auth header"),
        p("headers a list", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    headers: [a]\n", "mcp.gh.headers", 5, "expected a mapping"),
        // --- unknown keys
        p("unknown server key", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    comand: [y]\n", "mcp.db.comand", 5, "unknown key `comand`"),
        p("unknown tools key", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    tools:\n      allowed: [a]\n", "mcp.db.tools.allowed", 6, "unknown key `allowed`"),
        p("unknown auth key", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    auth:\n      type: bearer\n      secret_ref: a.b\n      token: x\n", "mcp.gh.auth.token", 8, "unknown key `token`"),
        // --- auth
        p("auth type missing", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    auth:\n      secret_ref: a.b\n", "mcp.gh.auth.type", 5, "`type` is `bearer`, `header` or `oauth`"),
        p("auth oauth unknown key", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    auth:\n      type: oauth\n      provider: github\n      scopes: [repo, 'read:org']\n", "mcp.gh.auth.provider", 7, "unknown key `provider`"),
        p("auth oauth on stdio", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    auth: { type: oauth }\n", "mcp.db.auth.type", 5, "applies to `sse` and `streamable-http`"),
        p("auth oauth client_credentials without a client", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      grant: client_credentials\n", "mcp.gh.auth.client_id", 5, "needs a pre-registered `client_id`"),
        p("auth oauth secret without a client", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      secret_ref: a.b\n", "mcp.gh.auth.client_id", 5, "needs a pre-registered `client_id`"),
        p("auth oauth unknown method", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      token_endpoint_auth_method: tls_client_auth\n", "mcp.gh.auth.token_endpoint_auth_method", 7, "unknown method `tls_client_auth`"),
        p("auth oauth private_key_jwt without a key", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      client_id: c\n      token_endpoint_auth_method: private_key_jwt\n", "mcp.gh.auth.private_key_ref", 5, "needs `private_key_ref`"),
        p("auth oauth metadata url over http", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      client_metadata_url: http://c.test/client.json\n", "mcp.gh.auth.client_metadata_url", 7, "must be https with a path"),
        p("auth oauth scope with a space", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      scopes: ['a b']\n", "mcp.gh.auth.scopes[0]", 7, "is not one scope"),
        p("auth oauth unknown grant", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      grant: password\n", "mcp.gh.auth.grant", 7, "unknown grant `password`"),
        p("auth oauth jwt_bearer without an assertion file", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      grant: jwt_bearer\n", "mcp.gh.auth.assertion_file", 5, "`grant: jwt_bearer` needs `assertion_file`"),
        p("auth oauth relative assertion file", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      grant: jwt_bearer\n      assertion_file: token.jwt\n", "mcp.gh.auth.assertion_file", 8, "is not an absolute path"),
        p("auth oauth assertion file without jwt_bearer", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      assertion_file: /var/run/secrets/token\n", "mcp.gh.auth.assertion_file", 7, "only read by `grant: jwt_bearer`"),
        p("auth oauth dpop not a boolean", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      dpop: sometimes\n", "mcp.gh.auth.dpop", 7, "expected true or false"),
        p("auth oauth identity provider without a token endpoint", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      grant: jwt_bearer\n      identity_provider:\n        id_token_file: /run/kaged/id-token\n", "mcp.gh.auth.identity_provider.token_endpoint", 8, "the IdP's token endpoint"),
        p("auth oauth identity provider over http", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      grant: jwt_bearer\n      identity_provider:\n        token_endpoint: http://idp.test/token\n        id_token_file: /run/kaged/id-token\n", "mcp.gh.auth.identity_provider.token_endpoint", 9, "must be https"),
        p("auth oauth issuer over http", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      issuer: http://as.test\n", "mcp.gh.auth.issuer", 7, "the authorization server's issuer must be https (http only on a loopback address"),
        p("auth oauth issuer on a look-alike of localhost", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      issuer: http://localhost.evil.test/as\n", "mcp.gh.auth.issuer", 7, "must be https"),
        p("auth oauth issuer not a URL", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      issuer: as.test\n", "mcp.gh.auth.issuer", 7, "not a URL"),
        p("auth oauth identity provider and an assertion file", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      grant: jwt_bearer\n      assertion_file: /run/token\n      identity_provider:\n        token_endpoint: https://idp.test/token\n        id_token_file: /run/kaged/id-token\n", "mcp.gh.auth.identity_provider", 9, "not both"),
        p("auth oauth identity provider unknown key", "mcp:\n  gh:\n    transport: http\n    url: https://x.test/mcp\n    auth:\n      type: oauth\n      grant: jwt_bearer\n      identity_provider:\n        token_endpoint: https://idp.test/token\n        id_token_file: /run/kaged/id-token\n        audience: x\n", "mcp.gh.auth.identity_provider.audience", 11, "unknown key `audience`"),
        p("auth basic", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    auth:\n      type: basic\n      secret_ref: a.b\n", "mcp.gh.auth.type", 6, "unknown auth type `basic`"),
        p("auth secret_ref missing", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    auth:\n      type: bearer\n", "mcp.gh.auth.secret_ref", 5, "missing"),
        p("auth secret_ref not dotted", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    auth:\n      type: bearer\n      secret_ref: 'a..b'\n", "mcp.gh.auth.secret_ref", 7, "not a dotted path"),
        p("auth secret_ref empty", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    auth:\n      type: bearer\n      secret_ref: ''\n", "mcp.gh.auth.secret_ref", 7, "must not be empty"),
        p("auth header_name invalid", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    auth:\n      type: header\n      header_name: 'X API'\n      secret_ref: a.b\n", "mcp.gh.auth.header_name", 7, "not a valid HTTP header name"),
        p("auth bearer with another header", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    auth:\n      type: bearer\n      header_name: X-Key\n      secret_ref: a.b\n", "mcp.gh.auth.header_name", 7, "always uses `Authorization`"),
        p("auth a string", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    auth: bearer\n", "mcp.gh.auth", 5, "expected a mapping"),
        // --- tools filter
        p("tools enabled a string", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    tools:\n      enabled: 'yes'\n", "mcp.db.tools.enabled", 6, "expected true or false"),
        p("tools allow a string", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    tools:\n      allow: 'a*'\n", "mcp.db.tools.allow", 6, "expected a list of strings"),
        p("tools allow bad glob", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    tools:\n      allow: ['repo.[']\n", "mcp.db.tools.allow[0]", 6, "not a valid glob"),
        p("skills deny bad glob", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    skills:\n      deny: ['pdf-[']\n", "mcp.db.skills.deny[0]", 6, "not a valid glob"),
        p("skills filter unknown key", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    skills:\n      only: [a]\n", "mcp.db.skills.only", 6, "unknown key"),
        p("agent skills grant not a map", "mcp: {}\nprimary:\n  skills:\n    \"mcp.db.x\": true\n", "primary.skills.\"mcp.db.x\"", 4, "expected"),
        p("tools deny bad glob", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    tools:\n      deny:\n        - ok\n        - 'a{b'\n", "mcp.db.tools.deny[1]", 8, "not a valid glob"),
        p("tools a list", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    tools: [a]\n", "mcp.db.tools", 5, "expected a mapping"),
        // --- agents' grants
        p("grant not a map", "primary:\n  tools:\n    'mcp.db.query': true\n", "primary.tools.\"mcp.db.query\"", 3, "expected { enabled"),
        p("grant enabled a string", "primary:\n  tools:\n    'mcp.db.query': { enabled: 'on' }\n", "primary.tools.\"mcp.db.query\".enabled", 3, "expected true or false"),
        p("grant unknown key", "primary:\n  tools:\n    'mcp.db.query': { enable: true }\n", "primary.tools.\"mcp.db.query\".enable", 3, "unknown key `enable`"),
        p("grant bad glob", "primary:\n  tools:\n    'mcp.db.[q': { enabled: true }\n", "primary.tools.\"mcp.db.[q\"", 3, "not a valid glob"),
        p("grant with a space", "primary:\n  tools:\n    'mcp.db query': { enabled: true }\n", "primary.tools.\"mcp.db query\"", 3, "cannot appear"),
        p("grant with an empty segment", "primary:\n  tools:\n    'mcp..db': { enabled: true }\n", "primary.tools.\"mcp..db\"", 3, "empty name segment"),
        p("subagent grant not a map", "primary:\n  subagents:\n    researcher:\n      tools:\n        'mcp.gh.issue.list': yes\n", "primary.subagents.researcher.tools.\"mcp.gh.issue.list\"", 5, "expected { enabled"),
        p("tools block a list", "primary:\n  tools: [a]\n", "primary.tools", 2, "expected a mapping"),
        // --- YAML itself
        p("duplicate server key", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n  db:\n    transport: stdio\n    command: [y]\n", "mcp.db", 5, "duplicate key `db` (first defined at line 2)"),
        p("syntax error", "mcp:\n  db: [x\n", "", 3, "invalid YAML"),
        p("tab indentation", "mcp:\n\tdb: {}\n", "", 2, "invalid YAML"),
        p("two documents", "mcp: {}\n---\nmcp: {}\n", "", 2, "more than one YAML document"),
        p("a list as a key", "mcp:\n  ? [a, b]\n  : x\n", "", 2, "mapping keys must be plain strings"),
        p("root is a list", "- a\n- b\n", "", 1, "expected a mapping"),
        p("alias to unknown anchor", "mcp: *nowhere\n", "", 1, "invalid YAML"),
        // --- duplicate keys name their key path, at every depth
        p("duplicate top-level key", "mcp: {}\nname: x\nmcp: {}\n", "mcp", 3, "duplicate key `mcp` (first defined at line 1)"),
        p("duplicate transport", "mcp:\n  github:\n    transport: sse\n    transport: stdio\n", "mcp.github.transport", 4, "duplicate key `transport` (first defined at line 3)"),
        p("duplicate key in a flow server", "mcp:\n  db: { transport: stdio, transport: sse }\n", "mcp.db.transport", 2, "duplicate key `transport` (first defined at line 2)"),
        p("duplicate header", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    headers:\n      X-A: a\n      X-A: b\n", "mcp.gh.headers.X-A", 7, "duplicate key `X-A` (first defined at line 6)"),
        p("duplicate env variable", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    env:\n      A: '1'\n      B: '2'\n      A: '3'\n", "mcp.db.env.A", 8, "duplicate key `A` (first defined at line 6)"),
        p("duplicate auth key", "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    auth:\n      type: bearer\n      secret_ref: a.b\n      secret_ref: a.c\n", "mcp.gh.auth.secret_ref", 8, "duplicate key `secret_ref` (first defined at line 7)"),
        p("duplicate tools filter key", "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    tools:\n      allow: [a]\n      allow: [b]\n", "mcp.db.tools.allow", 7, "duplicate key `allow` (first defined at line 6)"),
        p("duplicate key in a list item", "mcp:\n  db:\n    transport: stdio\n    command:\n      - node\n      - {a: 1, a: 2}\n", "mcp.db.command[1].a", 6, "duplicate key `a`"),
        p("duplicate grant", "primary:\n  tools:\n    'mcp.db.query': { enabled: true }\n    'mcp.db.query': { enabled: false }\n", "primary.tools.\"mcp.db.query\"", 4, "duplicate key `mcp.db.query` (first defined at line 3)"),
        p("duplicate enabled in a grant", "primary:\n  tools:\n    'mcp.db.query':\n      enabled: true\n      enabled: false\n", "primary.tools.\"mcp.db.query\".enabled", 5, "duplicate key `enabled` (first defined at line 4)"),
        p("duplicate subagent grant", "primary:\n  subagents:\n    researcher:\n      tools:\n        mcp.gh: { enabled: true }\n        mcp.gh: { enabled: false }\n", "primary.subagents.researcher.tools.\"mcp.gh\"", 6, "duplicate key `mcp.gh` (first defined at line 5)"),
        p("duplicate subagent", "primary:\n  subagents:\n    researcher: {}\n    researcher: {}\n", "primary.subagents.researcher", 4, "duplicate key `researcher` (first defined at line 3)"),
        p("duplicate key in a block not ours", "cage:\n  net:\n    allow: [a]\n    allow: [b]\n", "cage.net.allow", 4, "duplicate key `allow` (first defined at line 3)"),
        Case {
            overlay: Some("mcp:\n  db:\n    env:\n      A: x\n      A: y\n"),
            file: "project.local.yaml",
            ..p("overlay duplicate env variable", STDIO, "mcp.db.env.A", 5, "duplicate key `A` (first defined at line 4)")
        },
        Case {
            overlay: Some("mcp:\n  db: null\n  db: null\n"),
            file: "project.local.yaml",
            ..p("overlay duplicate server", STDIO, "mcp.db", 3, "duplicate key `db` (first defined at line 2)")
        },
        Case {
            local: Some("[mcp.db]\ndisabled = true\n\n[mcp.db]\ntimeout_ms = 3\n"),
            file: "local.toml",
            ..p("local duplicate table", STDIO, "mcp.db", 4, "duplicate key `db` (first defined at line 1)")
        },
        Case {
            local: Some("mcp.db.disabled = true\nmcp.db.disabled = false\n"),
            file: "local.toml",
            ..p("local duplicate dotted key", STDIO, "mcp.db.disabled", 2, "duplicate key `disabled` (first defined at line 1)")
        },
        Case {
            local: Some("[mcp]\ndb = { disabled = true, \"disabled\" = false }\n"),
            file: "local.toml",
            ..p("local duplicate key in an inline table", STDIO, "mcp.db.disabled", 2, "duplicate key `disabled` (first defined at line 2)")
        },
        Case {
            local: Some("[secrets.api_keys]\ngithub = \"sk-one\"\ngithub = \"sk-two\"\n"),
            file: "local.toml",
            ..p("local duplicate secret", STDIO, "secrets.api_keys.github", 3, "duplicate key `github` (first defined at line 2)")
        },
        Case {
            local: Some("[secrets.api_keys]\ngithub = \"sk-one\"\n[secrets]\napi_keys.github = \"sk-two\"\n"),
            file: "local.toml",
            ..p("local secret table redefined by a dotted key", STDIO, "secrets.api_keys", 4, "duplicate key `api_keys` (first defined at line 1)")
        },
        Case {
            local: Some("[[hooks]]\nname = \"a\"\n[[hooks]]\nname = \"b\"\nname = \"c\"\n"),
            file: "local.toml",
            ..p("local duplicate key in an array of tables", STDIO, "hooks[1].name", 5, "duplicate key `name` (first defined at line 4)")
        },
        Case {
            local: Some("[mcp.db]\nera = \"2026\"\n"),
            file: "local.toml",
            ..p("local era unknown", STDIO, "mcp.db.era", 2, "unknown era \"2026\"; expected \"auto\", \"legacy\" or \"modern\"")
        },
        Case {
            local: Some("[mcp.db]\nprobe_timeout_ms = 0\n"),
            file: "local.toml",
            ..p("local probe timeout zero", STDIO, "mcp.db.probe_timeout_ms", 2, "must be a positive number of milliseconds, found 0")
        },
        Case {
            local: Some("[mcp.db]\nprobe_timeout_ms = \"10s\"\n"),
            file: "local.toml",
            ..p("local probe timeout not an integer", STDIO, "mcp.db.probe_timeout_ms", 2, "expected a positive integer (milliseconds), found a string")
        },
        Case {
            local: Some("[mcp.db]\nvalidate = \"always\"\n"),
            file: "local.toml",
            ..p("local validate unknown", STDIO, "mcp.db.validate", 2, "unknown validation \"always\"; expected \"both\", \"arguments\", \"results\" or \"off\"")
        },
        Case {
            local: Some("[mcp.db]\nvalidate = false\n"),
            file: "local.toml",
            ..p("local validate not a string", STDIO, "mcp.db.validate", 2, "expected \"both\", \"arguments\", \"results\" or \"off\", found a boolean")
        },
        Case {
            local: Some("[mcp.db]\ntasks = \"always\"\n"),
            file: "local.toml",
            ..p("local tasks unknown", STDIO, "mcp.db.tasks", 2, "unknown task mode \"always\"; expected \"required\", \"prefer\" or \"off\"")
        },
        Case {
            local: Some("[mcp.db]\ntasks = 1\n"),
            file: "local.toml",
            ..p("local tasks not a string", STDIO, "mcp.db.tasks", 2, "expected \"required\", \"prefer\" or \"off\", found an integer")
        },
        Case {
            local: Some("[mcp.db]\nera = true\n"),
            file: "local.toml",
            ..p("local era not a string", STDIO, "mcp.db.era", 2, "expected \"auto\", \"legacy\" or \"modern\", found a boolean")
        },
        Case {
            local: Some("[mcp.db]\nera = \"modern\"\n"),
            file: "local.toml",
            line: None,
            ..p("local era modern on sse", "mcp:\n  db:\n    transport: sse\n    url: http://x/sse\n", "mcp.db.era", 0, "uses the sse transport (2024-11-05 HTTP+SSE), which carries only legacy MCP; era \"modern\" needs stdio or streamable-http")
        },
        Case {
            config: Some("[mcp]\nmax_in_flight = 1\nmax_in_flight = 2\n"),
            file: "config.toml",
            ..p("config duplicate key", STDIO, "mcp.max_in_flight", 3, "duplicate key `max_in_flight` (first defined at line 2)")
        },
        // --- the overlay
        Case {
            overlay: Some("mcp:\n  db:\n    transport: carrier-pigeon\n"),
            file: "project.local.yaml",
            ..p("overlay sets a bad transport", STDIO, "mcp.db.transport", 3, "unsupported transport")
        },
        Case {
            overlay: Some("mcp:\n  db:\n    url: https://x.test/sse\n"),
            file: "project.local.yaml",
            ..p("overlay adds url to a stdio server", STDIO, "mcp.db.url", 3, "belongs to `transport: sse`")
        },
        Case {
            overlay: Some("mcp:\n  db:\n    command: [x\n"),
            file: "project.local.yaml",
            ..p("overlay syntax error", STDIO, "", 4, "invalid YAML")
        },
        // --- local.toml
        Case {
            local: Some("[mcp.db]\ndisabled = \"yes\"\n"),
            file: "local.toml",
            ..p("local disabled a string", STDIO, "mcp.db.disabled", 2, "expected true or false")
        },
        Case {
            local: Some("[mcp.db]\ntimeout_ms = 0\n"),
            file: "local.toml",
            ..p("local timeout zero", STDIO, "mcp.db.timeout_ms", 2, "positive")
        },
        Case {
            local: Some("[mcp.db]\ntimeout_ms = -5\n"),
            file: "local.toml",
            ..p("local timeout negative", STDIO, "mcp.db.timeout_ms", 2, "positive")
        },
        Case {
            local: Some("[mcp.db]\ntimeout_ms = \"30s\"\n"),
            file: "local.toml",
            ..p("local timeout a string", STDIO, "mcp.db.timeout_ms", 2, "expected a positive integer")
        },
        Case {
            local: Some("[mcp.db]\ntimeout = 30\n"),
            file: "local.toml",
            ..p("local unknown key", STDIO, "mcp.db.timeout", 2, "unknown key `timeout`")
        },
        Case {
            local: Some("[secrets.api_keys]\nexample = 42\n"),
            file: "local.toml",
            ..p("local secret a number", STDIO, "secrets.api_keys.example", 2, "a secret must be a string")
        },
        Case {
            local: Some("[mcp.db]\ndisabled = true\ndisabled = false\n"),
            file: "local.toml",
            ..p("local duplicate key", STDIO, "mcp.db.disabled", 3, "duplicate key `disabled` (first defined at line 2)")
        },
        Case {
            local: Some("mcp = 3\n"),
            file: "local.toml",
            ..p("local mcp not a table", STDIO, "mcp", 1, "expected a table")
        },
        // --- config.toml
        Case {
            config: Some("[mcp]\nresult_max_bytes = 0\n"),
            file: "config.toml",
            ..p("config cap zero", STDIO, "mcp.result_max_bytes", 2, "out of range")
        },
        Case {
            config: Some("[mcp]\ndefault_timeout_ms = \"30\"\n"),
            file: "config.toml",
            ..p("config timeout a string", STDIO, "mcp.default_timeout_ms", 2, "expected an integer")
        },
        Case {
            config: Some("[mcp]\nresult_cap = 10\n"),
            file: "config.toml",
            ..p("config unknown key", STDIO, "mcp.result_cap", 2, "unknown key `result_cap`")
        },
        Case {
            config: Some("[mcp\n"),
            file: "config.toml",
            ..p("config syntax error", STDIO, "", 1, "invalid TOML")
        },
    ]
}

fn load(c: &Case) -> Result<kaged_mcp::config::Config, kaged_mcp::config::ConfigErrors> {
    let mut s = Sources::new(c.project);
    if let Some(o) = c.overlay {
        s = s.overlay(o);
    }
    if let Some(l) = c.local {
        s = s.local(l);
    }
    if let Some(k) = c.config {
        s = s.config(k);
    }
    s.load()
}

#[test]
fn every_bad_configuration_names_file_key_and_line() {
    let cases = cases();
    assert!(cases.len() >= 50, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for c in &cases {
        let errs = match (load(c), c.at_start) {
            (Ok(config), true) => match config.resolve_secrets() {
                Ok(_) => {
                    failures.push(format!("{}: its secrets resolved without error", c.name));
                    continue;
                }
                Err(e) => e,
            },
            (Err(e), true) => {
                failures.push(format!(
                    "{}: not its server's error but the load's: {e}",
                    c.name
                ));
                continue;
            }
            (Ok(_), false) => {
                failures.push(format!("{}: loaded without error", c.name));
                continue;
            }
            (Err(e), false) => e,
        };
        let hit = errs.iter().any(|e: &ConfigError| {
            e.file.to_str() == Some(c.file)
                && e.key_path == c.key
                && e.location.map(|l| l.line) == c.line
                && e.message.contains(c.says)
        });
        if !hit {
            failures.push(format!(
                "{}: wanted {}:{:?}: {}: …{}…, got:\n    {}",
                c.name,
                c.file,
                c.line,
                c.key,
                c.says,
                errs.to_string().replace('\n', "\n    ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn several_errors_in_one_file_are_reported_together() {
    let errs = Sources::new(
        "mcp:\n  Bad:\n    transport: stdio\n  db:\n    transport: ftp\n  gh:\n    transport: sse\n    url: nope\n",
    )
    .load()
    .unwrap_err();
    let keys: Vec<&str> = errs.iter().map(|e| e.key_path.as_str()).collect();
    assert!(keys.contains(&"mcp.Bad"), "{keys:?}");
    assert!(keys.contains(&"mcp.db.transport"), "{keys:?}");
    assert!(keys.contains(&"mcp.gh.url"), "{keys:?}");
}

#[test]
fn seventeen_servers_are_too_many() {
    let mut y = String::from("mcp:\n");
    for i in 0..17 {
        y.push_str(&format!(
            "  s{i:02}:\n    transport: stdio\n    command: [x]\n"
        ));
    }
    let errs = Sources::new(y).load().unwrap_err();
    assert!(
        errs.iter()
            .any(|e| e.key_path == "mcp" && e.message.contains("at most 16")),
        "{errs}"
    );
}

#[test]
fn a_missing_secret_names_the_server_and_the_ref() {
    let c = Sources::new(
        "mcp:\n  gh:\n    transport: sse\n    url: https://x.test/sse\n    auth:\n      type: bearer\n      secret_ref: api_keys.github\n",
    )
    .local("[secrets.api_keys]\nother = \"x\"\n")
    .load()
    .unwrap();
    let errs = c.resolve_secrets().unwrap_err();
    let e = &errs.errors()[0];
    assert_eq!(e.key_path, "secrets.api_keys.github");
    assert!(e.message.contains("server `gh`"), "{e}");
    assert!(e.message.contains("api_keys.github"), "{e}");
}

/// One server's missing `env` secret is that server's error alone (issue 49 point 6): the
/// configuration loads, the other server's secret is filled in, and the secrets of a session
/// that starts the other server only resolve; a session starting both is refused naming the
/// one server, as for a missing `auth` secret.
#[test]
fn a_missing_env_secret_is_its_servers_error_alone() {
    let c = Sources::new(
        "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    env:\n      TOKEN: {secret_ref: s.db}\n  notes:\n    transport: stdio\n    command: [y]\n    env:\n      TOKEN: {secret_ref: s.notes}\n",
    )
    .local("[secrets.s]\nnotes = \"n-1\"\n")
    .load()
    .unwrap();
    let env = |key: &str| match &c.project.server(key).unwrap().transport {
        kaged_mcp::config::TransportConfig::Stdio(s) => s.env["TOKEN"].expose().map(str::to_owned),
        _ => unreachable!(),
    };
    assert_eq!(env("notes").as_deref(), Some("n-1"));
    assert_eq!(env("db"), None);
    let errs = c.resolve_secrets().unwrap_err();
    let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0]
            .starts_with("project.yaml:6:27: mcp.db.env.TOKEN: server `db` needs secret `s.db`"),
        "{shown:?}"
    );
    let mut notes_only = c.clone();
    notes_only.project.servers.retain(|s| s.key == "notes");
    notes_only.resolve_secrets().unwrap();
    // Disabled, the server needs none.
    let disabled = Sources::new(
        "mcp:\n  db:\n    transport: stdio\n    command: [x]\n    env:\n      TOKEN: {secret_ref: s.db}\n",
    )
    .local("[mcp.db]\ndisabled = true\n")
    .load()
    .unwrap();
    disabled.resolve_secrets().unwrap();
}

#[test]
fn errors_never_contain_a_secret_value() {
    let r = Sources::new(STDIO)
        .local("[secrets.api_keys]\nexample = [\"sk-live-VERYSECRET\"]\n")
        .load();
    let errs = r.unwrap_err();
    let shown = format!("{errs} {errs:?}");
    assert!(!shown.contains("VERYSECRET"), "{shown}");
}

#[test]
fn a_duplicate_key_reads_like_every_other_error() {
    let errs = Sources::new("mcp:\n  github:\n    transport: sse\n    transport: stdio\n")
        .load()
        .unwrap_err();
    assert_eq!(
        errs.to_string(),
        "project.yaml:4:5: mcp.github.transport: duplicate key `transport` (first defined at line 3)"
    );
    let errs = Sources::new(STDIO)
        .local("[mcp.db]\ndisabled = true\ndisabled = false\n")
        .load()
        .unwrap_err();
    assert_eq!(
        errs.to_string(),
        "local.toml:3:1: mcp.db.disabled: duplicate key `disabled` (first defined at line 2)"
    );
}

#[test]
fn a_duplicate_secret_never_shows_its_value() {
    let errs = Sources::new(STDIO)
        .local("[secrets.api_keys]\ngithub = \"sk-live-ONE\"\n\"github\" = \"sk-live-TWO\"\n")
        .load()
        .unwrap_err();
    let shown = format!("{errs} {errs:?}");
    assert!(shown.contains("secrets.api_keys.github"), "{shown}");
    assert!(!shown.contains("sk-live"), "{shown}");
}

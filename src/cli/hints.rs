//! Hints that work when pasted. The library's messages name commands (`run kaged-mcp auth
//! login fmo`, `kaged-mcp lock --check X`, `kaged-mcp tools`) without knowing the project; the
//! CLI rewrites each one it prints with [`pasteable`]: what chose the servers is added after
//! the command's verb (the `--project DIR` that was used, and `--local`/`--config` when they
//! were given; for an ad-hoc server its `--url` or, at the end of the command, its `-- CMD`),
//! and inside the shell a command the shell has is named by its verb alone.

use std::path::Path;
use std::sync::OnceLock;

/// The commands of `kaged-mcp`, whose mention in a message is a hint to rewrite.
const VERBS: &[&str] = &[
    "check",
    "tools",
    "describe",
    "call",
    "status",
    "shell",
    "resources",
    "read",
    "prompts",
    "prompt",
    "complete",
    "skills",
    "skill",
    "lock",
    "ping",
    "auth",
];

/// The verbs `kaged-mcp shell` answers itself, with the arguments of the commands.
const SHELL_VERBS: &[&str] = &[
    "tools",
    "describe",
    "call",
    "status",
    "ping",
    "resources",
    "read",
    "prompts",
    "prompt",
    "complete",
    "skills",
    "skill",
];

/// The verbs that take no ad-hoc server (`check` and `auth` read a project, `lock` writes its
/// lock): a hint naming one is left without the ad-hoc server's arguments.
const NOT_ADHOC: &[&str] = &["check", "auth", "lock"];

/// What chose the servers of this process, as words a pasted command needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Context {
    /// Whether the server is ad hoc (given on the command line).
    adhoc: bool,
    /// The options that follow the verb, quoted for a shell (`--project DIR --local FILE`).
    flags: String,
    /// What ends the command: an ad-hoc stdio server's `-- CMD ARGS…`, quoted for a shell.
    trailing: String,
}

/// `word` quoted for a POSIX shell when it must be.
fn quote(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| word.to_owned(), |q| q.into_owned())
}

/// `path` quoted for a POSIX shell.
fn quote_path(path: &Path) -> String {
    quote(&path.to_string_lossy())
}

impl Context {
    /// A project: `--project DIR`, with `--local FILE` and `--config FILE` when given.
    pub(super) fn project(dir: &Path, local: Option<&Path>, config: Option<&Path>) -> Self {
        let mut flags = format!("--project {}", quote_path(dir));
        for (flag, path) in [("--local", local), ("--config", config)] {
            if let Some(path) = path {
                flags.push_str(&format!(" {flag} {}", quote_path(path)));
            }
        }
        Self {
            adhoc: false,
            flags,
            trailing: String::new(),
        }
    }

    /// An ad-hoc server: `--url URL` (without its user info or query, where credentials
    /// travel; never a `--header`, whose values are secrets), `--transport sse` when `sse`,
    /// `--name N` and `--config FILE` as given, or its `-- CMD ARGS…` at the end.
    pub(super) fn adhoc(
        url: Option<&str>,
        sse: bool,
        name: Option<&str>,
        command: &[String],
        config: Option<&Path>,
    ) -> Self {
        let mut flags = Vec::new();
        if let Some(url) = url {
            flags.push(format!(
                "--url {}",
                quote(&crate::protocol::uri::redact_uri(url))
            ));
            if sse {
                flags.push("--transport sse".to_owned());
            }
        }
        if let Some(name) = name {
            flags.push(format!("--name {}", quote(name)));
        }
        if let Some(config) = config {
            flags.push(format!("--config {}", quote_path(config)));
        }
        let trailing = if command.is_empty() {
            String::new()
        } else {
            let words: Vec<String> = command.iter().map(|w| quote(w)).collect();
            format!("-- {}", words.join(" "))
        };
        Self {
            adhoc: true,
            flags: flags.join(" "),
            trailing,
        }
    }
}

/// What chose this process's servers, once known.
static CONTEXT: OnceLock<Context> = OnceLock::new();

/// Records what chose the servers of the command; the first one recorded stays.
pub(super) fn set_context(context: Context) {
    let _ = CONTEXT.set(context);
}

/// `message` with its hints made pasteable for a one-shot command.
pub(super) fn fix(message: &str) -> String {
    pasteable(message, CONTEXT.get(), false)
}

/// One line for a person: `message` with its hints made pasteable ([`fix`]) and every control,
/// invisible or direction-changing code point a server put in it shown escaped
/// ([`crate::escape::visible`]; a newline too, so no server text forges a line of ours).
pub(super) fn line(message: &str) -> String {
    crate::escape::visible(&fix(message)).into_owned()
}

/// `message` with its hints made pasteable inside the shell.
pub(super) fn fix_in_shell(message: &str) -> String {
    pasteable(message, CONTEXT.get(), true)
}

/// The word of `text` at its start: ASCII letters and `-`.
fn word(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '-'))
        .unwrap_or(text.len());
    &text[..end]
}

/// Rewrites each `kaged-mcp VERB` of `message`: in the `shell`, a verb the shell has loses its
/// `kaged-mcp `; otherwise, with a `context`, its flags follow the verb (`auth`'s subcommand
/// included) and an ad-hoc server's `-- CMD` ends the command (at its closing backtick, or the
/// end of the line), unless they are there already. Any other `kaged-mcp` (the program's name
/// in a sentence) is left as it is. Applying it twice changes nothing more.
pub(super) fn pasteable(message: &str, context: Option<&Context>, shell: bool) -> String {
    const NAME: &str = "kaged-mcp ";
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(NAME) {
        // `kaged-mcp` must start a word: `xkaged-mcp tools` is not a hint.
        let before = rest[..at].chars().next_back();
        let starts_word = before.is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
        let after = &rest[at + NAME.len()..];
        let verb = word(after);
        let verb_ends = after[verb.len()..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric() && c != '_');
        out.push_str(&rest[..at]);
        if !starts_word || !verb_ends || !VERBS.contains(&verb) {
            out.push_str(NAME);
            rest = after;
            continue;
        }
        if shell && SHELL_VERBS.contains(&verb) {
            rest = after;
            continue;
        }
        // `auth login SERVER`: the flag follows the subcommand.
        let mut command_len = verb.len();
        if verb == "auth" {
            if let Some(sub) = after[command_len..].strip_prefix(' ') {
                let sub = word(sub);
                if ["login", "status", "logout"].contains(&sub) {
                    command_len += 1 + sub.len();
                }
            }
        }
        out.push_str(NAME);
        out.push_str(&after[..command_len]);
        rest = &after[command_len..];
        let Some(context) = context.filter(|c| !(c.adhoc && NOT_ADHOC.contains(&verb))) else {
            continue;
        };
        // The command's end: its closing backtick, or the end of its line.
        let end = if before == Some('`') {
            rest.find('`')
        } else {
            rest.find('\n')
        }
        .unwrap_or(rest.len());
        let command = &rest[..end];
        let done = if context.flags.is_empty() {
            context.trailing.is_empty() || command.ends_with(&context.trailing)
        } else {
            command.starts_with(&format!(" {}", context.flags))
        };
        if done {
            continue;
        }
        if !context.flags.is_empty() {
            out.push(' ');
            out.push_str(&context.flags);
        }
        if !context.trailing.is_empty() {
            out.push_str(command);
            out.push(' ');
            out.push_str(&context.trailing);
            rest = &rest[end..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(dir: &str) -> Option<Context> {
        Some(Context::project(Path::new(dir), None, None))
    }

    #[test]
    fn hints_carry_the_project_after_the_verb() {
        let p = project("/srv/my proj");
        let p = p.as_ref();
        assert_eq!(
            pasteable("server `fmo` needs an OAuth login: run `kaged-mcp auth login fmo`", p, false),
            "server `fmo` needs an OAuth login: run `kaged-mcp auth login --project '/srv/my proj' fmo`"
        );
        assert_eq!(
            pasteable(
                "review with `kaged-mcp lock --check s`, which prints the command that approves what it shows",
                project("proj").as_ref(),
                false
            ),
            "review with `kaged-mcp lock --project proj --check s`, which prints the command that approves what it shows"
        );
        assert_eq!(
            pasteable(
                "(`kaged-mcp tools` lists the catalog)",
                project("p").as_ref(),
                false
            ),
            "(`kaged-mcp tools --project p` lists the catalog)"
        );
        assert_eq!(
            pasteable(
                "after review, approve with: kaged-mcp lock",
                project("p").as_ref(),
                false
            ),
            "after review, approve with: kaged-mcp lock --project p"
        );
    }

    #[test]
    fn the_program_named_in_a_sentence_and_messages_without_a_project_are_left_alone() {
        let p = project("p");
        let p = p.as_ref();
        for m in [
            "needs kaged-mcp built with its `http` feature",
            "version 9 is not one this kaged-mcp reads",
            "kaged-mcp is logged in. You can close this tab.",
            "kaged-mcp toolsx",
            "xkaged-mcp tools",
        ] {
            assert_eq!(pasteable(m, p, false), m);
        }
        let m = "run `kaged-mcp auth login fmo`";
        assert_eq!(pasteable(m, None, false), m);
    }

    #[test]
    fn the_shell_names_its_own_verbs_and_the_project_for_the_others() {
        let p = project("p");
        let p = p.as_ref();
        assert_eq!(
            pasteable("(`kaged-mcp tools` lists the catalog)", p, true),
            "(`tools` lists the catalog)"
        );
        assert_eq!(
            pasteable("`kaged-mcp lock --check s` shows why", p, true),
            "`kaged-mcp lock --project p --check s` shows why"
        );
    }

    #[test]
    fn rewriting_twice_changes_nothing_more() {
        let p = project("p");
        let p = p.as_ref();
        let m = "run `kaged-mcp auth login fmo`; `kaged-mcp tools` lists them";
        let once = pasteable(m, p, true);
        assert_eq!(pasteable(&once, p, true), once);
        assert_eq!(pasteable(&once, p, false), once);
        let once = pasteable(m, p, false);
        assert_eq!(pasteable(&once, p, false), once);
    }

    /// The hint context of an ad-hoc server given `url` or `command`, and `name`.
    fn adhoc(
        url: Option<&str>,
        command: &[&str],
        name: Option<&str>,
        config: Option<&Path>,
    ) -> Context {
        let command: Vec<String> = command.iter().map(|w| (*w).to_owned()).collect();
        Context::adhoc(url, false, name, &command, config)
    }

    #[test]
    fn an_adhoc_stdio_servers_hint_ends_with_its_command() {
        let c = adhoc(None, &["node", "my server.js"], None, None);
        let m = "no tool `x` is registered; `kaged-mcp tools adhoc` lists the tools of `adhoc`";
        let once = pasteable(m, Some(&c), false);
        assert_eq!(
            once,
            "no tool `x` is registered; `kaged-mcp tools adhoc -- node 'my server.js'` lists the tools of `adhoc`"
        );
        assert_eq!(pasteable(&once, Some(&c), false), once);
        // Without backticks the command ends with its line.
        assert_eq!(
            pasteable("see: kaged-mcp tools\nnext", Some(&c), false),
            "see: kaged-mcp tools -- node 'my server.js'\nnext"
        );
        // The verbs that take no ad-hoc server are left as they are.
        let m = "`kaged-mcp lock --check adhoc` shows why";
        assert_eq!(pasteable(m, Some(&c), false), m);
    }

    #[test]
    fn an_adhoc_url_servers_hint_carries_its_url_without_credentials_and_its_config() {
        let c = adhoc(
            Some("http://u:pw@127.0.0.1:9/mcp?key=k1"),
            &[],
            Some("fm"),
            Some(Path::new("/etc/k.toml")),
        );
        let once = pasteable("(`kaged-mcp tools` lists the catalog)", Some(&c), false);
        assert_eq!(
            once,
            "(`kaged-mcp tools --url 'http://127.0.0.1:9/mcp?…' --name fm --config /etc/k.toml` lists the catalog)"
        );
        for secret in ["pw", "k1"] {
            assert!(!once.contains(secret), "{once}");
        }
        assert_eq!(pasteable(&once, Some(&c), false), once);
    }

    #[test]
    fn a_projects_hint_carries_the_local_and_config_files_given() {
        let c = Context::project(
            Path::new("p"),
            Some(Path::new("my local.toml")),
            Some(Path::new("c.toml")),
        );
        let once = pasteable("(`kaged-mcp tools` lists the catalog)", Some(&c), false);
        assert_eq!(
            once,
            "(`kaged-mcp tools --project p --local 'my local.toml' --config c.toml` lists the catalog)"
        );
        assert_eq!(pasteable(&once, Some(&c), false), once);
    }
}

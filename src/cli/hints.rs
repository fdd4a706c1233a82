//! Hints that work when pasted. The library's messages name commands (`run kaged-mcp auth
//! login fmo`, `kaged-mcp lock --check X`, `kaged-mcp tools`) without knowing the project; the
//! CLI rewrites each one it prints with [`pasteable`]: the `--project DIR` that was used is
//! added after the command's verb, and inside the shell a command the shell has is named by
//! its verb alone.

use std::path::{Path, PathBuf};
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

/// The project this process uses (given with `--project`, or found upward), once known.
static PROJECT: OnceLock<PathBuf> = OnceLock::new();

/// Records the project the command uses; the first one recorded stays.
pub(super) fn set_project(dir: &Path) {
    let _ = PROJECT.set(dir.to_path_buf());
}

/// `message` with its hints made pasteable for a one-shot command.
pub(super) fn fix(message: &str) -> String {
    pasteable(message, PROJECT.get().map(PathBuf::as_path), false)
}

/// One line for a person: `message` with its hints made pasteable ([`fix`]) and every control,
/// invisible or direction-changing code point a server put in it shown escaped
/// ([`crate::escape::visible`]; a newline too, so no server text forges a line of ours).
pub(super) fn line(message: &str) -> String {
    crate::escape::visible(&fix(message)).into_owned()
}

/// `message` with its hints made pasteable inside the shell.
pub(super) fn fix_in_shell(message: &str) -> String {
    pasteable(message, PROJECT.get().map(PathBuf::as_path), true)
}

/// The word of `text` at its start: ASCII letters and `-`.
fn word(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '-'))
        .unwrap_or(text.len());
    &text[..end]
}

/// Rewrites each `kaged-mcp VERB` of `message`: in the `shell`, a verb the shell has loses its
/// `kaged-mcp `; otherwise, with a `project`, `--project DIR` (quoted for a shell when it must
/// be) follows the verb (`auth`'s subcommand included), unless a `--project` already does. Any
/// other `kaged-mcp` (the program's name in a sentence) is left as it is. Applying it twice
/// changes nothing more.
pub(super) fn pasteable(message: &str, project: Option<&Path>, shell: bool) -> String {
    const NAME: &str = "kaged-mcp ";
    let dir = project.map(|p| {
        let text = p.to_string_lossy();
        shlex::try_quote(&text).map_or_else(|_| text.to_string(), |q| q.into_owned())
    });
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(NAME) {
        // `kaged-mcp` must start a word: `xkaged-mcp tools` is not a hint.
        let starts_word = rest[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
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
        if let Some(dir) = &dir {
            if !rest.starts_with(" --project") {
                out.push_str(" --project ");
                out.push_str(dir);
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_carry_the_project_after_the_verb() {
        let p = Some(Path::new("/srv/my proj"));
        assert_eq!(
            pasteable("server `fmo` needs an OAuth login: run `kaged-mcp auth login fmo`", p, false),
            "server `fmo` needs an OAuth login: run `kaged-mcp auth login --project '/srv/my proj' fmo`"
        );
        assert_eq!(
            pasteable(
                "review with `kaged-mcp lock --check s`, which prints the command that approves what it shows",
                Some(Path::new("proj")),
                false
            ),
            "review with `kaged-mcp lock --project proj --check s`, which prints the command that approves what it shows"
        );
        assert_eq!(
            pasteable(
                "(`kaged-mcp tools` lists the catalog)",
                Some(Path::new("p")),
                false
            ),
            "(`kaged-mcp tools --project p` lists the catalog)"
        );
        assert_eq!(
            pasteable(
                "after review, approve with: kaged-mcp lock",
                Some(Path::new("p")),
                false
            ),
            "after review, approve with: kaged-mcp lock --project p"
        );
    }

    #[test]
    fn the_program_named_in_a_sentence_and_messages_without_a_project_are_left_alone() {
        let p = Some(Path::new("p"));
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
        let p = Some(Path::new("p"));
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
        let p = Some(Path::new("p"));
        let m = "run `kaged-mcp auth login fmo`; `kaged-mcp tools` lists them";
        let once = pasteable(m, p, true);
        assert_eq!(pasteable(&once, p, true), once);
        assert_eq!(pasteable(&once, p, false), once);
        let once = pasteable(m, p, false);
        assert_eq!(pasteable(&once, p, false), once);
    }
}

//! The reference in `docs/` keeps up with the code: every command and long option the
//! `kaged-mcp` binary offers (walked through its `--help`) has its row in docs/cli.md, and
//! every key the configuration parsers accept (`kaged_mcp::config::keys`, the lists their
//! "unknown key" messages print) is in docs/configuration.md. A verb, an option or a key added
//! without documentation fails here.

use std::process::Command;

use kaged_mcp::config::keys;

#[path = "common/cli.rs"]
mod cli;
use cli::OutputBounded;

const CLI_DOC: &str = include_str!("../docs/cli.md");
const CONFIG_DOC: &str = include_str!("../docs/configuration.md");

/// The `--help` of the command `path` (`[]` for the binary itself).
fn help(path: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kaged-mcp"))
        .args(path)
        .arg("--help")
        .output_bounded();
    assert!(out.status.success(), "kaged-mcp {path:?} --help: {out:?}");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommands a help text lists under `Commands:` (clap's own `help` left out).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The long options a help text lists (`--project`, `--count` of `-c, --count`), without
/// clap's `--help` and `--version`.
fn long_options(help: &str) -> Vec<String> {
    let mut options = Vec::new();
    for line in help.lines() {
        let line = line.trim_start();
        let line = match line.strip_prefix('-') {
            Some(rest) if !rest.starts_with('-') => match rest.split_once(", ") {
                Some((_, long)) => long,
                None => continue,
            },
            _ => line,
        };
        let Some(name) = line.strip_prefix("--") else {
            continue;
        };
        let name: String = name
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if !name.is_empty() && name != "help" && name != "version" {
            let option = format!("--{name}");
            if !options.contains(&option) {
                options.push(option);
            }
        }
    }
    options
}

/// Every command path (`["auth", "login"]`) with its long options, walked from the top.
fn command_tree() -> Vec<(Vec<String>, Vec<String>)> {
    let mut out = Vec::new();
    let mut todo: Vec<Vec<String>> = subcommands(&help(&[]))
        .into_iter()
        .map(|verb| vec![verb])
        .collect();
    while let Some(path) = todo.pop() {
        let text = help(&path);
        for sub in subcommands(&text) {
            let mut child = path.clone();
            child.push(sub);
            todo.push(child);
        }
        out.push((path, long_options(&text)));
    }
    out.sort();
    out
}

/// Whether `text` holds `word` not followed by a letter, digit, `-` or `_` (so `--arg` is not
/// found in `--args`, nor `era` in `era_setting`).
fn holds(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        !text[at + word.len()..]
            .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

/// The section whose heading line starts with `heading`, up to the next heading of the same or
/// a higher level (headings inside code blocks do not count).
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let level = heading.chars().take_while(|c| *c == '#').count();
    let start = doc
        .find(&format!("\n{heading}"))
        .unwrap_or_else(|| panic!("no section `{heading}`"))
        + 1;
    let mut in_code = false;
    let mut at = start;
    for (i, line) in doc[start..].split_inclusive('\n').enumerate() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        let is_heading = hashes > 0 && line[hashes..].starts_with(' ');
        if i > 0 && !in_code && is_heading && hashes <= level {
            break;
        }
        at += line.len();
    }
    &doc[start..at]
}

/// The line of the command table that documents `kaged-mcp PATH`.
fn command_row<'a>(doc: &'a str, path: &[String]) -> Option<&'a str> {
    let start = format!("| `kaged-mcp {}", path.join(" "));
    doc.lines().find(|line| {
        line.strip_prefix(&start)
            .is_some_and(|rest| rest.starts_with([' ', '`']))
    })
}

/// What docs/cli.md lacks: each command without its row in the command table, each long
/// option in neither its command's row nor the options every command shares.
fn undocumented_cli(doc: &str, tree: &[(Vec<String>, Vec<String>)]) -> Vec<String> {
    let shared = section(doc, "## Options every command shares");
    let mut missing = Vec::new();
    for (path, options) in tree {
        let command = format!("kaged-mcp {}", path.join(" "));
        let Some(row) = command_row(doc, path) else {
            missing.push(format!("a row for `{command}` in the command table"));
            continue;
        };
        for option in options {
            if !holds(row, option) && !holds(shared, option) {
                missing.push(format!("`{option}` of `{command}`"));
            }
        }
    }
    missing
}

/// Whether `text` holds `name` as the start of a documented key: followed by the closing
/// backtick, a `.` (a table's `auth.type` documents `auth`) or a `:` (`{ enabled: bool }`).
fn names(text: &str, name: &str) -> bool {
    text.match_indices(name)
        .any(|(at, _)| text[at + name.len()..].starts_with(['`', '.', ':']))
}

/// What docs/configuration.md lacks: each key, looked for in the section of its file and in
/// the form its table writes it (`| `url``, `| `auth.grant``, `` `[mcp.<key>] era` ``).
fn undocumented_config(doc: &str) -> Vec<String> {
    let project = section(doc, "## `project.yaml`");
    let local = section(doc, "## `local.toml`");
    let daemon = section(doc, "## `config.toml`");
    let server_keys = [keys::SERVER_COMMON, keys::SERVER_STDIO, keys::SERVER_HTTP].concat();
    let auth_keys = [keys::AUTH_STATIC, keys::AUTH_OAUTH].concat();
    let in_project = |form: String| ("project.yaml", project, form);
    let wanted = server_keys
        .iter()
        .map(|k| in_project(format!("| `{k}")))
        .chain(auth_keys.iter().map(|k| in_project(format!("| `auth.{k}"))))
        // The `identity_provider` block's keys, named in its row.
        .chain(
            keys::AUTH_IDENTITY_PROVIDER
                .iter()
                .map(|k| in_project(format!("`{k}"))),
        )
        .chain(
            keys::SERVER_TOOLS
                .iter()
                .map(|k| in_project(format!("| `tools.{k}"))),
        )
        .chain(
            keys::AGENT_GRANT
                .iter()
                .map(|k| in_project(format!("`{{ {k}"))),
        )
        .chain(
            keys::LOCAL_SERVER
                .iter()
                .map(|k| ("local.toml", local, format!("`[mcp.<key>] {k}"))),
        )
        .chain(
            keys::DAEMON_MCP
                .iter()
                .map(|k| ("config.toml", daemon, format!("| `{k}"))),
        );
    wanted
        .filter(|(_, text, form)| !names(text, form))
        .map(|(file, _, form)| format!("{form}` in the {file} section"))
        .collect()
}

#[test]
fn every_command_and_long_option_is_in_docs_cli() {
    let tree = command_tree();
    let has = |p: &[&str]| tree.iter().any(|(path, _)| path == p);
    assert!(
        has(&["call"]) && has(&["auth", "login"]),
        "the walk found {tree:?}"
    );
    let options: usize = tree.iter().map(|(_, o)| o.len()).sum();
    assert!(options > 50, "the walk found {options} options: {tree:?}");
    let missing = undocumented_cli(CLI_DOC, &tree);
    assert!(
        missing.is_empty(),
        "docs/cli.md lacks:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_configuration_key_is_in_docs_configuration() {
    assert!(keys::DAEMON_MCP.contains(&"result_max_bytes") && keys::LOCAL_SERVER.contains(&"era"));
    let missing = undocumented_config(CONFIG_DOC);
    assert!(
        missing.is_empty(),
        "docs/configuration.md lacks:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_command_option_or_key_removed_from_the_docs_is_missed() {
    let tree = vec![(vec!["ping".to_owned()], vec!["--count".to_owned()])];
    let row = command_row(CLI_DOC, &tree[0].0).expect("ping's row");
    assert!(undocumented_cli(CLI_DOC, &tree).is_empty());
    let without_option = CLI_DOC.replace(row, &row.replace("--count", "--cnt"));
    assert_eq!(
        undocumented_cli(&without_option, &tree),
        ["`--count` of `kaged-mcp ping`"]
    );
    let without_row = CLI_DOC.replace(row, "");
    assert_eq!(
        undocumented_cli(&without_row, &tree),
        ["a row for `kaged-mcp ping` in the command table"]
    );
    let without_key = CONFIG_DOC.replace("`[mcp.<key>] probe_timeout_ms`", "`probe_timeout_ms`");
    assert_eq!(
        undocumented_config(&without_key),
        ["`[mcp.<key>] probe_timeout_ms` in the local.toml section"]
    );
    assert!(holds("`--args JSON`", "--args") && !holds("`--args JSON`", "--arg"));
}

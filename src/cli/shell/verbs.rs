//! The shell's verbs: one clap subcommand each, over the command line's own argument types
//! ([`verb_args`](super::super::verb_args), [`protocol_cmds`](super::super::protocol_cmds),
//! [`skills_cmds`](super::super::skills_cmds)), so a verb takes in the shell what its command
//! takes on the command line. A line is split into words as a POSIX shell splits them (quotes
//! and backslashes, by `shlex`), except the older `call TOOL {…}`, whose JSON is taken as it
//! is. `help` and `help VERB` are rendered from the same definitions, so they cannot drift.

use clap::{Args, CommandFactory, Parser, Subcommand};
use serde_json::{json, Value};

use super::super::protocol_cmds::Verb;
use super::super::skills_cmds::{SkillArgs, SkillsArgs};
use super::super::verb_args::{CallArgs, DescribeArgs, PingArgs, ServersArgs};

/// One line of the shell, parsed by clap.
#[derive(Debug, Parser)]
#[command(
    name = "kaged-mcp shell",
    no_binary_name = true,
    disable_help_flag = true,
    disable_help_subcommand = true,
    disable_version_flag = true
)]
struct Line {
    #[command(subcommand)]
    verb: ShellVerb,
}

/// What a shell line asks for.
#[derive(Debug, Clone, Subcommand)]
pub(super) enum ShellVerb {
    /// List the verbs, or show one verb's arguments.
    Help {
        /// The verb.
        verb: Option<String>,
    },
    /// The catalog: each tool with its parameters, hints and first line of description.
    Tools(ServersArgs),
    /// One tool: title, description, parameter table, output schema, annotations.
    Describe(DescribeArgs),
    /// Call one tool through the full stack; its progress on stderr while it runs.
    Call(CallLine),
    /// Each server's state, identity, capabilities and counters.
    Status(ServersArgs),
    /// Enable a server (a disabled one, or one that failed) and start it.
    Enable {
        /// The server's key.
        server: String,
    },
    /// Send a server MCP pings and print their round-trip times.
    Ping(PingArgs),
    #[command(flatten)]
    Protocol(Verb),
    /// The skills the servers serve (SEP-2640): server, name and description.
    Skills(SkillsArgs),
    /// Load one skill, verify it and print its SKILL.md (or one of its files).
    Skill(SkillArgs),
    /// End the shell (as `exit` and the end of input do).
    #[command(alias = "exit")]
    Quit,
}

/// `call`'s arguments in the shell: the command line's, and the JSON object as a word of its
/// own.
#[derive(Debug, Clone, Args)]
pub(super) struct CallLine {
    /// The command line's arguments of `call`.
    #[command(flatten)]
    pub(super) call: CallArgs,
    /// The arguments as a JSON object, instead of `--args`. Right after the tool and starting
    /// with `{`, the rest of the line is the JSON as it is (no quoting needed).
    #[arg(value_name = "JSON")]
    pub(super) json: Option<String>,
}

/// Parses a shell line (not empty) into its verb, or the one-line usage error.
pub(super) fn parse(line: &str) -> Result<ShellVerb, String> {
    if let Some(call) = unsplit_call(line) {
        return Ok(call);
    }
    let words = shlex::split(line).ok_or("a quote is not closed")?;
    let Some(first) = words.first() else {
        return Err("an empty line".to_owned());
    };
    let command = Line::command();
    if command.find_subcommand(first).is_none() {
        return Err(format!(
            "unknown command `{}`; `help` lists the verbs",
            crate::transport::text::clean(first, 100)
        ));
    }
    // `call --help` is `help call`.
    if words[1..].iter().any(|w| w == "--help" || w == "-h") {
        return Ok(ShellVerb::Help {
            verb: Some(first.clone()),
        });
    }
    match Line::try_parse_from(&words) {
        Ok(l) => Ok(l.verb),
        Err(e) => Err(format!(
            "{}; `help {first}` shows its arguments",
            super::super::output::clap_message(&e)
        )),
    }
}

/// `call TOOL {…}`: the older form, the JSON after the tool taken as it is.
fn unsplit_call(line: &str) -> Option<ShellVerb> {
    let rest = line.trim().strip_prefix("call")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let (tool, json) = rest.trim_start().split_once(char::is_whitespace)?;
    let json = json.trim();
    if !json.starts_with('{') {
        return None;
    }
    Some(ShellVerb::Call(CallLine {
        call: CallArgs {
            tool: tool.to_owned(),
            args: None,
            arg: Vec::new(),
            quiet: false,
        },
        json: Some(json.to_owned()),
    }))
}

/// The verbs' names, in the order `help` lists them (aliases left out).
pub(super) fn names() -> Vec<String> {
    Line::command()
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect()
}

/// The long options of `verb` (`--args`, `--arg`, …), for completion.
pub(super) fn options(verb: &str) -> Vec<String> {
    Line::command()
        .find_subcommand(verb)
        .map(|c| {
            c.get_arguments()
                .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
                .collect()
        })
        .unwrap_or_default()
}

/// A verb's usage line without `Usage: `, as clap renders it (`call [OPTIONS] <TOOL> [JSON]`).
fn usage(c: &clap::Command) -> String {
    let text = c.clone().render_usage().to_string();
    text.trim().trim_start_matches("Usage:").trim().to_owned()
}

/// The text of `help`: a line per verb, its usage and what it does.
pub(super) fn list() -> String {
    let command = Line::command();
    let rows: Vec<(String, String)> = command
        .get_subcommands()
        .map(|c| {
            let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
            (usage(c), about)
        })
        .collect();
    let width = rows
        .iter()
        .map(|(u, _)| u.chars().count())
        .max()
        .unwrap_or(0);
    let mut text = String::from("verbs (`help VERB` shows one's arguments):\n");
    for (u, about) in rows {
        text.push_str(&format!("  {u:<width$}  {about}\n"));
    }
    text
}

/// The text of `help VERB`: clap's help of that verb; `None` for no such verb.
pub(super) fn verb_help(verb: &str) -> Option<String> {
    let command = Line::command();
    let c = command.find_subcommand(verb)?;
    Some(
        c.clone()
            .disable_help_flag(true)
            .render_long_help()
            .to_string(),
    )
}

/// `help --json`: `{"verbs": [{"name", "usage", "about"}]}`.
pub(super) fn list_json() -> Value {
    let command = Line::command();
    let verbs: Vec<Value> = command
        .get_subcommands()
        .map(|c| {
            json!({
                "name": c.get_name(),
                "usage": usage(c),
                "about": c.get_about().map(|a| a.to_string()),
            })
        })
        .collect();
    json!({ "verbs": verbs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_line_is_well_formed() {
        Line::command().debug_assert();
    }

    #[test]
    fn lines_split_like_a_shell_and_parse_with_the_command_line_types() {
        let verb = parse(r#"prompt everything args-prompt --args '{"city": "Paris"}'"#).unwrap();
        assert!(matches!(&verb, ShellVerb::Protocol(Verb::Prompt(a))
            if a.args.as_deref() == Some(r#"{"city": "Paris"}"#)));
        let verb = parse(r#"complete s --prompt p name "" --context "{\"a\": \"b c\"}""#).unwrap();
        assert!(matches!(&verb, ShellVerb::Protocol(Verb::Complete(a))
            if a.prefix.is_empty() && a.context.as_deref() == Some(r#"{"a": "b c"}"#)));
        let verb = parse("read everything demo://x --out /tmp/f").unwrap();
        assert!(matches!(verb, ShellVerb::Protocol(Verb::Read(a)) if a.out.is_some()));
        assert_eq!(
            parse("read s 'unclosed").unwrap_err(),
            "a quote is not closed"
        );
        let err = parse("complete everything name x").unwrap_err();
        assert!(
            (err.contains("--prompt") || err.contains("--template"))
                && err.contains("`help complete`"),
            "{err}"
        );
    }

    #[test]
    fn call_takes_the_command_lines_arguments_and_the_older_json() {
        let verb =
            parse(r#"call mcp.s.t --args '{"a": "b c"}' --arg n=2 --arg='s=x y' -q"#).unwrap();
        let ShellVerb::Call(c) = verb else {
            panic!("{verb:?}")
        };
        assert_eq!(c.call.tool, "mcp.s.t");
        assert_eq!(c.call.args.as_deref(), Some(r#"{"a": "b c"}"#));
        assert_eq!(c.call.arg, ["n=2", "s=x y"]);
        assert!(c.call.quiet && c.json.is_none());
        let ShellVerb::Call(c) = parse(r#"call mcp.s.t {"message": "one two"}"#).unwrap() else {
            panic!()
        };
        assert_eq!(c.json.as_deref(), Some(r#"{"message": "one two"}"#));
        let ShellVerb::Call(c) = parse(r#"call mcp.s.t '{"n": 1}' --arg m=x"#).unwrap() else {
            panic!()
        };
        assert_eq!(c.json.as_deref(), Some(r#"{"n": 1}"#));
        assert_eq!(c.call.arg, ["m=x"]);
        assert!(parse("call").unwrap_err().contains("<TOOL>"));
        assert!(
            matches!(parse("call --help").unwrap(), ShellVerb::Help { verb: Some(v) } if v == "call")
        );
    }

    #[test]
    fn the_other_verbs_take_their_commands_arguments() {
        assert!(
            matches!(parse("tools a b").unwrap(), ShellVerb::Tools(s) if s.servers == ["a", "b"])
        );
        assert!(matches!(parse("status").unwrap(), ShellVerb::Status(s) if s.servers.is_empty()));
        assert!(
            matches!(parse("describe mcp.a.b").unwrap(), ShellVerb::Describe(d) if d.tool == "mcp.a.b")
        );
        assert!(matches!(parse("ping a -c 2 -i 0").unwrap(),
            ShellVerb::Ping(p) if p.server.as_deref() == Some("a") && p.count == 2 && p.interval == 0.0));
        assert!(
            matches!(parse("skill a b --file x").unwrap(), ShellVerb::Skill(s) if s.file.is_some())
        );
        assert!(matches!(parse("exit").unwrap(), ShellVerb::Quit));
        assert!(parse("frobnicate")
            .unwrap_err()
            .starts_with("unknown command `frobnicate`"));
    }

    #[test]
    fn help_lists_every_verb_once_with_its_usage() {
        let text = list();
        for verb in names() {
            assert_eq!(
                text.lines()
                    .filter(|l| l.trim_start().starts_with(&format!("{verb} ")) || l.trim() == verb)
                    .count(),
                1,
                "{verb}: {text}"
            );
        }
        assert!(text.contains("call [OPTIONS] <TOOL> [JSON]"), "{text}");
        let call = verb_help("call").unwrap();
        assert!(
            call.contains("--arg <KEY=VALUE>") && call.contains("--quiet"),
            "{call}"
        );
        assert!(!call.contains("--help"), "{call}");
        assert!(verb_help("nope").is_none());
        assert!(options("call").contains(&"--args".to_owned()));
    }
}

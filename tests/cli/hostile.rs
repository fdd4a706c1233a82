//! Every command against a server every string of which tries to drive the terminal
//! (`tests/servers/hostile_server.py`: CR, ANSI erase and cursor-up, BEL, DEL, a C1 CSI,
//! newlines, tabs, zero-width, bidi-override and tag characters in every name, key,
//! description, value, result, error, log line and stderr line it sends): no raw control byte
//! but the CLI's own line breaks and tabs, and no invisible or direction-changing code point,
//! reaches stdout or stderr (issue 48).

use std::path::Path;

use common::cli::{project, run};
use common::peers;
use serde_json::Value;

use crate::common;

/// The code points a terminal acts on or does not draw, listed here independently of the
/// library's own table: C0 controls but `\n` and `\t` (the CLI's own line breaks and
/// columns), DEL, C1 controls, zero-width and bidi formatting, the BOM, tag characters.
fn raw_hidden(text: &str) -> Vec<(usize, char)> {
    text.char_indices()
        .filter(|&(_, c)| {
            let n = u32::from(c);
            (n < 0x20 && c != '\n' && c != '\t')
                || (0x7f..=0x9f).contains(&n)
                || (0x200b..=0x200f).contains(&n)
                || (0x202a..=0x202e).contains(&n)
                || (0x2066..=0x2069).contains(&n)
                || n == 0xfeff
                || (0xe0000..=0xe007f).contains(&n)
        })
        .collect()
}

fn assert_clean(what: &str, out: &common::cli::Out) {
    for (stream, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let found = raw_hidden(text);
        assert!(
            found.is_empty(),
            "{what}: {stream} carries raw {:?}:\n{text:?}",
            found.iter().take(5).collect::<Vec<_>>()
        );
        // The server's newline never starts a line of its own, but in a body that is the
        // server's text (a result, a resource, a prompt message), whose lines are kept.
        let body = stream == "stdout"
            && ["call", "read", "prompt"]
                .iter()
                .any(|v| what.starts_with(v));
        assert!(
            body || !text.lines().any(|l| l.starts_with("FORGED")),
            "{what}: {stream} has a forged line:\n{text}"
        );
    }
}

fn hostile_project(flip: &Path) -> tempfile::TempDir {
    let script = peers::server_script("hostile_server.py");
    let yaml = format!(
        "mcp:\n  hx:\n    transport: stdio\n    command: [python3, {}, --flip, {}]\n",
        Value::String(script.to_string_lossy().into_owned()),
        Value::String(flip.to_string_lossy().into_owned()),
    );
    project(&yaml, "")
}

#[test]
fn no_command_lets_a_server_string_drive_the_terminal() {
    let scratch = tempfile::tempdir().unwrap();
    let flip = scratch.path().join("flip");
    let dir = hostile_project(&flip);
    let d = dir.path();
    let commands: Vec<Vec<&str>> = vec![
        vec!["check"],
        vec!["tools"],
        vec!["tools", "-v"],
        vec!["describe", "mcp.hx.echo"],
        vec!["describe", "mcp.hx.nope"],
        vec!["call", "mcp.hx.echo", "--args", "{}"],
        vec!["call", "mcp.hx.fail", "--args", "{}"],
        vec!["call", "mcp.hx.rpcfail", "--args", "{}"],
        vec![
            "call",
            "mcp.hx.echo",
            "--args",
            "{}",
            "--log-level",
            "debug",
        ],
        vec!["status"],
        vec!["status", "-v"],
        vec!["ping", "hx", "-c", "1"],
        vec!["resources", "hx"],
        vec!["read", "hx", "h://r/1"],
        vec!["prompts", "hx"],
        vec!["prompt", "hx", "p", "--arg", "a=1"],
        vec!["complete", "hx", "--prompt", "p", "a", "x"],
        vec!["tools", "--json"],
        vec!["describe", "mcp.hx.echo", "--json"],
        vec!["call", "mcp.hx.echo", "--args", "{}", "--json"],
        vec!["status", "--json"],
        vec!["resources", "hx", "--json"],
        vec!["skills"],
        vec!["lock", "--check"],
        vec!["lock"],
        vec!["lock", "--check"],
    ];
    let mut ran = 0;
    for args in &commands {
        let o = run(args, d);
        assert_clean(&args.join(" "), &o);
        assert_ne!(o.code, Some(2), "{args:?} is a usage error: {}", o.stderr);
        ran += 1;
    }
    // The server changes: the review of its changes, and an update refused without a digest.
    std::fs::write(&flip, "").unwrap();
    for args in [
        &["lock", "--check"][..],
        &["lock", "--check", "--json"],
        &["lock"],
        &["tools"],
        &["status"],
        &["call", "mcp.hx.echo", "--args", "{}"],
    ] {
        let o = run(args, d);
        assert_clean(&args.join(" "), &o);
        ran += 1;
    }
    let o = run(&["lock", "--check"], d);
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(o.stdout.contains(r"\u{1b}[2K\u{1b}[1A"), "{}", o.stdout);
    assert!(o.stdout.contains(r"\u{202e}"), "{}", o.stdout);
    assert!(o.stdout.contains(" hx --expect sha256:"), "{}", o.stdout);
    // The shell, fed the same commands.
    let o = common::cli::shell(
        d,
        &[],
        &[
            "tools",
            "describe mcp.hx.echo",
            "call mcp.hx.echo {}",
            "status",
            "quit",
        ],
    );
    assert_clean("shell", &o);
    assert!(ran > 20);
}

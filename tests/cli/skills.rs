//! `kaged-mcp skills` and `kaged-mcp skill` against `tests/servers/skills_server.py`: the
//! listing, a verified SKILL.md and a supporting file on stdout, and a tampered skill refused
//! with exit 1, naming its check in text and in JSON.

use common::cli::{project, run, OutputBounded};
use serde_json::Value;

use crate::common;

fn skills_yaml(mode: &str) -> String {
    let script = common::peers::server_script("skills_server.py");
    format!(
        "mcp:\n  skills:\n    transport: stdio\n    command: [python3, {}, --mode, {mode}]\n",
        Value::String(script.to_string_lossy().into_owned())
    )
}

#[test]
fn skills_are_listed_and_a_skill_is_printed_verified() {
    let dir = project(&skills_yaml("ok"), "");
    let o = run(&["skills"], dir.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "skills\tpdf-processing\tExtract, fill, and assemble PDF documents\nskills\tnotes\tKeep notes\n"
    );
    let o = run(&["skills", "skills", "--json"], dir.path());
    let listed: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(listed[0]["name"], "pdf-processing");
    assert_eq!(
        listed[0]["files"][1]["uri"],
        "skill://pdf-processing/references/FORMS.md"
    );

    let o = run(&["skill", "skills", "pdf-processing"], dir.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stdout.starts_with("---\nname: pdf-processing\n"),
        "{}",
        o.stdout
    );
    let o = run(
        &[
            "skill",
            "skills",
            "pdf-processing",
            "--file",
            "references/FORMS.md",
        ],
        dir.path(),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout, "Supporting content: how to fill a form.\n");
    let o = run(&["skill", "nope", "pdf-processing"], dir.path());
    assert_eq!(o.code, Some(2), "an undeclared server: {}", o.stderr);
}

#[test]
fn a_tampered_skill_exits_1_naming_the_check() {
    for check in ["digest", "size", "frontmatter"] {
        let dir = project(&skills_yaml(check), "");
        let o = run(&["skill", "skills", "pdf-processing"], dir.path());
        assert_eq!(o.code, Some(1), "{check}: {}", o.stderr);
        assert!(
            o.stdout.is_empty(),
            "{check}: nothing of it printed: {}",
            o.stdout
        );
        assert!(
            o.stderr.contains(&format!("failed its {check} check")),
            "{check}: {}",
            o.stderr
        );
        assert_eq!(
            o.stderr.lines().count(),
            1,
            "{check}: one line: {}",
            o.stderr
        );
        let o = run(
            &[
                "skill",
                "skills",
                "pdf-processing",
                "--file",
                "references/FORMS.md",
                "--json",
            ],
            dir.path(),
        );
        assert_eq!(o.code, Some(1), "{check}");
        let err: Value = serde_json::from_str(o.stdout.trim()).unwrap();
        assert_eq!(err["error"]["check"], check, "{}", o.stdout);
        assert!(!o.stdout.contains("Supporting content"), "{check}");
    }
}

/// A skill the project denies by name is denied by its URI too (issue 48): `skill SERVER URI`
/// resolves the URI to the listed skill and the project's filter judges its listed name.
#[test]
fn a_skill_denied_by_name_is_refused_by_its_uri() {
    let yaml = format!(
        "{}    skills:\n      deny: [secret-exfil]\n",
        skills_yaml("hostile")
    );
    let dir = project(&yaml, "");
    let o = run(&["skills", "skills"], dir.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(!o.stdout.contains("secret-exfil"), "{}", o.stdout);
    for args in [
        &["skill", "skills", "skill://secret-exfil/SKILL.md"][..],
        &[
            "skill",
            "skills",
            "skill://secret-exfil/SKILL.md",
            "--file",
            "SKILL.md",
        ],
        &["skill", "skills", "secret-exfil"],
    ] {
        let o = run(args, dir.path());
        assert_eq!(o.code, Some(1), "{args:?}: {}", o.stderr);
        assert!(o.stdout.is_empty(), "{args:?}: {}", o.stdout);
        assert!(
            o.stderr
                .contains("skill `mcp.skills.secret-exfil` is not granted")
                && o.stderr.contains("`skills.deny`"),
            "{args:?}: {}",
            o.stderr
        );
    }
    // The listed URI of a skill the filter lets through is that skill.
    let o = run(
        &["skill", "skills", "skill://pdf-processing/SKILL.md"],
        dir.path(),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.starts_with("---\nname: pdf-processing\n"));
}

/// A line that only starts with `---` does not end the frontmatter (issue 48): the field after
/// it is seen and the skill refused by its frontmatter check.
#[test]
fn a_frontmatter_line_starting_with_dashes_is_refused() {
    for mode in ["dashes", "dashx"] {
        let dir = project(&skills_yaml(mode), "");
        let o = run(&["skill", "skills", "pdf-processing"], dir.path());
        assert_eq!(o.code, Some(1), "{mode}: {}", o.stderr);
        assert!(o.stdout.is_empty(), "{mode}: {}", o.stdout);
        assert!(
            o.stderr.contains("failed its frontmatter check"),
            "{mode}: {}",
            o.stderr
        );
    }
}

/// Whether `s` holds a raw control character other than a line break or `allowed`, or a bidi
/// or zero-width code point.
fn raw_hidden(s: &str, allowed: &[char]) -> Option<char> {
    s.chars()
        .find(|&c| c != '\n' && !allowed.contains(&c) && kaged_mcp::escape::is_hidden(c))
}

const EVIL_NAME: &str = "evil\u{1b}[2K\u{202e}-name\u{200b}";

/// `skills` and `skill` print a server's names, descriptions, text and refusals escaped
/// (issue 48): no raw control, bidi or zero-width code point reaches stdout or stderr.
#[test]
fn skills_and_skill_print_no_raw_control_or_bidi_code_point() {
    let dir = project(&skills_yaml("hostile"), "");
    let o = run(&["skills", "skills"], dir.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    // The separators are the only tabs.
    assert_eq!(raw_hidden(&o.stdout, &['\t']), None, "{:?}", o.stdout);
    assert!(
        o.stdout.contains(
            "skills\tevil\\u{1b}[2K\\u{202e}-name\\u{200b}\tHarmless\\r\\u{1b}[1A\\u{1b}[2Kforged line\\nsecond\\u{2066}\\u{202e}\n"
        ),
        "{:?}",
        o.stdout
    );
    assert_eq!(
        o.stdout.lines().count(),
        6,
        "one line a skill: {:?}",
        o.stdout
    );

    let o = run(&["skill", "skills", EVIL_NAME], dir.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(raw_hidden(&o.stdout, &[]), None, "{:?}", o.stdout);
    assert!(
        o.stdout
            .ends_with("Body \\u{1b}[31mred\\u{1b}[0m \\u{202e}evil\\u{202c}\\r\\u{1b}[1Aover\n"),
        "{:?}",
        o.stdout
    );
    // A refusal's words (the server's name and file among them) are escaped too.
    for args in [
        &["skill", "skills", EVIL_NAME, "--file", "no\u{1b}[2Jsuch"][..],
        &["skill", "skills", "no\u{1b}[2J\u{202e}such"],
    ] {
        let o = run(args, dir.path());
        assert_eq!(o.code, Some(1), "{}", o.stderr);
        assert_eq!(raw_hidden(&o.stderr, &[]), None, "{:?}", o.stderr);
        assert!(o.stderr.contains("\\u{1b}[2J"), "{:?}", o.stderr);
    }
}

/// The bytes of the hostile server's binary support file (`tests/servers/skills_server.py`).
const LOGO: &[u8] = b"\x89PNG\r\n\x1a\n\x00\xff\xfe\x1b[2J\x80\xc3 end\x00";

/// A binary support file is written byte for byte (issue 48): to `--out`, to a stdout that is
/// not a terminal, in base64 with `--json`; never a lossy conversion, and never drawn on a
/// terminal (the shell's answers are a terminal's).
#[test]
fn a_binary_file_is_written_exactly_and_never_to_a_terminal() {
    let dir = project(&skills_yaml("hostile"), "");
    let args = ["skill", "skills", "bundle", "--file", "assets/logo.bin"];
    let raw = common::cli::kaged()
        .args(&args[..1])
        .arg("--project")
        .arg(dir.path())
        .args(&args[1..])
        .output_bounded();
    assert_eq!(raw.status.code(), Some(0));
    assert_eq!(
        raw.stdout, LOGO,
        "stdout that is not a terminal: the exact bytes"
    );

    let file = dir.path().join("logo.bin");
    let out = file.to_str().unwrap();
    let o = run(&[&args[..], &["--out", out]].concat(), dir.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    assert_eq!(std::fs::read(&file).unwrap(), LOGO);
    // SKILL.md to --out: its exact bytes, not the escaped text stdout shows.
    let md = dir.path().join("evil.md");
    let o = run(
        &["skill", "skills", EVIL_NAME, "--out", md.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .ends_with("Body \u{1b}[31mred\u{1b}[0m \u{202e}evil\u{202c}\r\u{1b}[1Aover\n"));

    let o = run(&[&args[..], &["--json"]].concat(), dir.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let answer: Value = serde_json::from_str(&o.stdout).unwrap();
    use base64::Engine as _;
    let blob = base64::engine::general_purpose::STANDARD
        .decode(answer["blob"].as_str().unwrap())
        .unwrap();
    assert_eq!(blob, LOGO);
    assert!(answer.get("text").is_none(), "{answer}");

    let o = common::cli::shell(
        dir.path(),
        &[],
        &["skill skills bundle --file assets/logo.bin"],
    );
    assert!(
        o.stderr.contains(
            "skill://bundle/assets/logo.bin is binary (22 bytes): write it with --out FILE"
        ),
        "{}",
        o.stderr
    );
    assert!(!o.stdout.contains("PNG"), "{:?}", o.stdout);
}

/// The project of the skills server run with `args`.
fn skills_yaml_with(args: &[&str]) -> String {
    let script = common::peers::server_script("skills_server.py");
    let mut command = vec![Value::String(script.to_string_lossy().into_owned())];
    command.extend(args.iter().map(|a| Value::String((*a).to_owned())));
    format!(
        "mcp:\n  skills:\n    transport: stdio\n    command: [python3, {}]\n",
        command
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A skills server without `tools` (ext-skills as its README builds one) starts (issue 49):
/// `status` exits 0 and says what it offers, its skills are listed and loaded; a server that
/// declares no list starts too.
#[test]
fn a_skills_server_without_tools_starts_and_status_says_what_it_offers() {
    let dir = project(
        &skills_yaml_with(&["--caps", "no-tools", "--require-client-extension"]),
        "",
    );
    let o = run(&["status"], dir.path());
    assert_eq!(o.code, Some(0), "{}{}", o.stdout, o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert!(
        lines[0].starts_with("skills\tready\t0 tools\tlegacy "),
        "{}",
        o.stdout
    );
    assert!(
        lines.contains(&"  offers: resources, skills"),
        "{}",
        o.stdout
    );
    let o = run(&["skills"], dir.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout.lines().count(), 2, "{}", o.stdout);
    let o = run(&["skill", "skills", "notes"], dir.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.starts_with("---\nname: notes\n"), "{}", o.stdout);
    let o = run(&["status", "--json"], dir.path());
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v[0]["offers"], serde_json::json!(["resources", "skills"]));

    let dir = project(&skills_yaml_with(&["--caps", "none"]), "");
    let o = run(&["status"], dir.path());
    assert_eq!(o.code, Some(0), "{}{}", o.stdout, o.stderr);
    assert!(
        o.stdout
            .contains("  offers: nothing to list (no tools, resources, prompts or skills)\n"),
        "{}",
        o.stdout
    );
}

/// An unlisted skill is loaded by `skills/get` (issue 49); one the server does not serve says
/// so in one plain line; a `--file` typo says the skill lists no such file, not that a check
/// failed.
#[test]
fn an_unlisted_skill_loads_and_an_unknown_one_or_file_says_so_plainly() {
    let dir = project(&skills_yaml_with(&["--mode", "partial"]), "");
    let o = run(&["skills"], dir.path());
    assert_eq!(
        o.stdout.lines().count(),
        1,
        "a partial listing: {}",
        o.stdout
    );
    let o = run(&["skill", "skills", "notes"], dir.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.starts_with("---\nname: notes\n"), "{}", o.stdout);
    let o = run(&["skill", "skills", "skill://notes/SKILL.md"], dir.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);

    let o = run(&["skill", "skills", "pdf-processing2"], dir.path());
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert_eq!(
        o.stderr,
        "error: server `skills`: skills/get: serves no skill `pdf-processing2`: skills/list does \
         not list it, and skills/get skill://pdf-processing2/SKILL.md was answered -32602: Not a \
         skill served by this server: skill://pdf-processing2/SKILL.md\n"
    );

    let o = run(
        &[
            "skill",
            "skills",
            "pdf-processing",
            "--file",
            "references/FORM.md",
        ],
        dir.path(),
    );
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert_eq!(
        o.stderr,
        "error: server `skills`: resources/read: skill `pdf-processing` lists no file \
         `references/FORM.md`; nothing of it was read\n"
    );
    let o = run(
        &[
            "skill",
            "skills",
            "pdf-processing",
            "--file",
            "references/FORM.md",
            "--json",
        ],
        dir.path(),
    );
    let err: Value = serde_json::from_str(o.stdout.trim()).unwrap();
    assert_eq!(err["error"]["check"], "not_listed", "{}", o.stdout);
}

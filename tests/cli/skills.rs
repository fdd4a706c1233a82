//! `kaged-mcp skills` and `kaged-mcp skill` against `tests/servers/skills_server.py`: the
//! listing, a verified SKILL.md and a supporting file on stdout, and a tampered skill refused
//! with exit 1, naming its check in text and in JSON.

use common::cli::{project, run};
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

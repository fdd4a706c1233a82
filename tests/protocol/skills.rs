//! Skills over MCP (SEP-2640) against `tests/servers/skills_server.py`: listed without reading a
//! file, loaded on demand and verified before any use (size, digest, frontmatter), and a
//! refused skill has none of its files read after it. The server records every
//! `resources/read` in a log, so what was read (and what was not) is seen from the server's
//! side.

use kaged_mcp::client::{ClientOptions, ErrorKind, McpClient, SkillCheck};

/// The client of a skills server in `mode`, and the file its reads are logged to.
fn skills_client(mode: &str) -> (McpClient, tempfile::NamedTempFile) {
    let log = tempfile::NamedTempFile::new().unwrap();
    let command = vec![
        "python3".to_owned(),
        crate::common::peers::server_script("skills_server.py")
            .to_string_lossy()
            .into_owned(),
        "--mode".to_owned(),
        mode.to_owned(),
        "--log".to_owned(),
        log.path().to_string_lossy().into_owned(),
    ];
    let client = crate::stdio_client("skills", &command, ClientOptions::default());
    (client, log)
}

/// The URIs the server was asked to read, in order.
fn reads(log: &tempfile::NamedTempFile) -> Vec<String> {
    std::fs::read_to_string(log.path())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

const PDF: &str = "skill://pdf-processing/SKILL.md";
const FORMS: &str = "skill://pdf-processing/references/FORMS.md";

#[tokio::test]
async fn skills_are_listed_without_reading_a_file_and_loaded_verified_on_demand() {
    let (client, log) = skills_client("ok");
    let skills = client.list_skills().await.unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["pdf-processing", "notes"]);
    assert_eq!(
        skills[0].description(),
        Some("Extract, fill, and assemble PDF documents")
    );
    // Listed twice (the second from the session's cache, ttlMs 60 s): nothing read.
    client.list_skills().await.unwrap();
    assert!(reads(&log).is_empty(), "no prefetch: {:?}", reads(&log));

    let loaded = client.load_skill("pdf-processing").await.unwrap();
    assert!(loaded.skill_md.text().unwrap().contains("Skill body"));
    assert_eq!(reads(&log), [PDF], "loading reads SKILL.md only");
    let forms = client
        .read_skill_file("pdf-processing", "references/FORMS.md")
        .await
        .unwrap();
    assert_eq!(forms.uri, FORMS);
    assert_eq!(
        forms.text(),
        Some("Supporting content: how to fill a form.\n")
    );
    // A frontmatter with a nested mapping, a list and a number compares as values.
    let notes = client.load_skill("notes").await.unwrap();
    assert_eq!(notes.entry.name(), "notes");

    let unknown = client.load_skill("no-such-skill").await.unwrap_err();
    assert!(unknown.kind() == ErrorKind::NotOffered, "{unknown}");
    let unlisted = client
        .read_skill_file("pdf-processing", "../notes/SKILL.md")
        .await
        .unwrap_err();
    assert!(
        matches!(unlisted.skill_check(), Some((SkillCheck::NotListed, ..))),
        "{unlisted}"
    );
    client.shutdown().await;
}

/// The listing is kept per session for its `ttlMs` (60 s here): listing, resolving and loading
/// again within it send no second `skills/list`.
#[tokio::test]
async fn a_listing_is_read_once_within_its_ttl() {
    let lists = tempfile::NamedTempFile::new().unwrap();
    let command = vec![
        "python3".to_owned(),
        crate::common::peers::server_script("skills_server.py")
            .to_string_lossy()
            .into_owned(),
        "--list-log".to_owned(),
        lists.path().to_string_lossy().into_owned(),
    ];
    let client = crate::stdio_client("skills", &command, ClientOptions::default());
    let sent = || {
        std::fs::read_to_string(lists.path())
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!(client.list_skills().await.unwrap().len(), 2);
    assert_eq!(sent(), 1);
    assert_eq!(client.list_skills().await.unwrap().len(), 2);
    client.load_skill("pdf-processing").await.unwrap();
    client.resolve_skill("notes").await.unwrap();
    assert_eq!(sent(), 1, "answered from the session's cache");
    client.shutdown().await;
}

#[tokio::test]
async fn a_tampered_skill_is_refused_naming_its_check_and_no_file_is_read_after_it() {
    for (mode, check) in [
        ("digest", SkillCheck::Digest),
        ("size", SkillCheck::Size),
        ("frontmatter", SkillCheck::Frontmatter),
    ] {
        let (client, log) = skills_client(mode);
        client.list_skills().await.unwrap();
        assert!(reads(&log).is_empty(), "{mode}: no prefetch");
        let err = client
            .read_skill_file("pdf-processing", "references/FORMS.md")
            .await
            .unwrap_err();
        match err.skill_check() {
            Some((refused, skill, file)) => {
                assert_eq!(refused, check, "{mode}: {err}");
                assert_eq!((skill, file), ("pdf-processing", PDF), "{mode}");
            }
            None => panic!("{mode}: {err}"),
        }
        assert!(
            err.reason()
                .contains(&format!("failed its {} check", check.as_str())),
            "{mode}: {}",
            err.reason()
        );
        // SKILL.md was read and refused; the supporting file never was.
        assert_eq!(reads(&log), [PDF], "{mode}");
        // The other skill of the same server is not affected.
        client.load_skill("notes").await.unwrap();
        client.shutdown().await;
    }
}

/// A frontmatter is parsed, not scanned (issue 48): a line that only starts with `---` is YAML
/// inside it, so the field after it (`allowed-tools: Bash`) is seen and the skill refused, though
/// its size and digest are the listing's own.
#[tokio::test]
async fn a_line_that_only_starts_with_dashes_does_not_end_the_frontmatter() {
    for mode in ["dashes", "dashx"] {
        let (client, log) = skills_client(mode);
        let err = client.load_skill("pdf-processing").await.unwrap_err();
        match err.skill_check() {
            Some((check, skill, file)) => {
                assert_eq!(check, SkillCheck::Frontmatter, "{mode}: {err}");
                assert_eq!((skill, file), ("pdf-processing", PDF), "{mode}");
            }
            None => panic!("{mode}: {err}"),
        }
        if mode == "dashes" {
            assert!(err.reason().contains("`---evil`"), "{}", err.reason());
        }
        let err = client
            .read_skill_file("pdf-processing", "references/FORMS.md")
            .await
            .unwrap_err();
        assert!(err.skill_check().is_some(), "{mode}: {err}");
        assert_eq!(reads(&log), [PDF, PDF], "{mode}: FORMS.md never read");
        client.shutdown().await;
    }
}

/// A session on the skills server with `extra` under the server in project.yaml and `agents`
/// as the project's `primary:` block; the file its reads are logged to.
async fn skills_session(
    extra: &str,
    agents: &str,
) -> (
    kaged_mcp::Session,
    tempfile::NamedTempFile,
    tempfile::TempDir,
) {
    skills_session_in("ok", extra, agents).await
}

/// [`skills_session`] on the skills server in `mode`.
async fn skills_session_in(
    mode: &str,
    extra: &str,
    agents: &str,
) -> (
    kaged_mcp::Session,
    tempfile::NamedTempFile,
    tempfile::TempDir,
) {
    let log = tempfile::NamedTempFile::new().unwrap();
    let command = serde_json::to_string(&[
        "python3".to_owned(),
        crate::common::peers::server_script("skills_server.py")
            .to_string_lossy()
            .into_owned(),
        "--mode".to_owned(),
        mode.to_owned(),
        "--log".to_owned(),
        log.path().to_string_lossy().into_owned(),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("project.yaml"),
        format!("mcp:\n  skills:\n    transport: stdio\n    command: {command}\n{extra}{agents}"),
    )
    .unwrap();
    let config = kaged_mcp::config::load(&kaged_mcp::config::ConfigPaths::new(dir.path())).unwrap();
    let session = kaged_mcp::Session::start(config).await.unwrap();
    (session, log, dir)
}

/// A server's `skills:` filter keeps a skill out of the listing and out of loading, reading
/// nothing for it (issue 39: "skills are granted to agents like tools").
#[tokio::test]
async fn the_servers_skills_filter_keeps_a_skill_out_of_listing_and_loading() {
    let (session, log, _dir) = skills_session("    skills:\n      deny: [notes]\n", "").await;
    let listed = session.skills("skills").await.unwrap();
    let names: Vec<&str> = listed.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["pdf-processing"]);
    let err = session.load_skill("skills", "notes").await.unwrap_err();
    assert_eq!(err.kind(), "skill_not_granted", "{err}");
    assert_eq!(
        err.to_string(),
        "skill `mcp.skills.notes` is not granted: the project's `skills.deny` (mcp.skills.skills.deny in project.yaml) keeps it out"
    );
    assert!(reads(&log).is_empty(), "nothing read: {:?}", reads(&log));
    session
        .load_skill("skills", "pdf-processing")
        .await
        .unwrap();
    session.shutdown().await;
}

/// An agent's `skills:` grants enable skills by `mcp.<server>.<skill>`, as tool grants do; an
/// agent without a `skills:` block is granted none; a refusal reads nothing.
#[tokio::test]
async fn an_agent_loads_only_the_skills_its_grants_enable() {
    let agents = "primary:\n  tools: {}\n  skills:\n    \"mcp.skills.pdf-*\": { enabled: true }\n  subagents:\n    helper:\n      tools: {}\n";
    let (session, log, _dir) = skills_session("", agents).await;
    let mine = session.skills_for("primary", "skills").await.unwrap();
    let names: Vec<&str> = mine.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["pdf-processing"]);
    let err = session
        .load_skill_as("primary", "skills", "notes")
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "agent `primary`: skill `mcp.skills.notes` is not granted: no key of its `skills:` grants enables `mcp.skills.notes`"
    );
    let err = session
        .skill_file_as("helper", "skills", "pdf-processing", "references/FORMS.md")
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("it has no `skills:` grants"),
        "{err}"
    );
    assert!(reads(&log).is_empty(), "nothing read: {:?}", reads(&log));
    let loaded = session
        .load_skill_as("primary", "skills", "pdf-processing")
        .await
        .unwrap();
    assert!(loaded.skill_md.text().unwrap().contains("Skill body"));
    assert!(session
        .skills_for("helper", "skills")
        .await
        .unwrap()
        .is_empty());
    session.shutdown().await;
}

const SECRET: &str = "skill://secret-exfil/SKILL.md";

/// A skill the project's filter denies by name is denied by its URI too (issue 48): the URI is
/// resolved to the listed skill, whose name the filter judges; nothing of it is read.
#[tokio::test]
async fn a_skill_denied_by_name_is_refused_when_asked_for_by_its_uri() {
    let (session, log, _dir) =
        skills_session_in("hostile", "    skills:\n      deny: [secret-exfil]\n", "").await;
    let listed = session.skills("skills").await.unwrap();
    assert!(listed.iter().all(|s| s.name() != "secret-exfil"));
    for name in ["secret-exfil", SECRET] {
        let err = session.load_skill("skills", name).await.unwrap_err();
        assert_eq!(err.kind(), "skill_not_granted", "{name}: {err}");
        assert!(
            err.to_string().starts_with(
                "skill `mcp.skills.secret-exfil` is not granted: the project's `skills.deny`"
            ),
            "{name}: {err}"
        );
        let err = session
            .skill_file("skills", name, "SKILL.md")
            .await
            .unwrap_err();
        assert_eq!(err.kind(), "skill_not_granted", "{name}: {err}");
    }
    assert!(reads(&log).is_empty(), "nothing read: {:?}", reads(&log));
    // A listed URI of a skill the filter lets through is accepted as that skill.
    let loaded = session.load_skill("skills", PDF).await.unwrap();
    assert_eq!(loaded.entry.name(), "pdf-processing");
    // A URI nobody lists is not offered.
    let err = session
        .load_skill("skills", "skill://secret-exfil/../pdf-processing/SKILL.md")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("does not list it"), "{err}");
    assert_eq!(reads(&log), [PDF]);
    session.shutdown().await;
}

/// An agent whose grants switch a skill off is refused it by its URI too (issue 48), while a
/// URI of a skill it is granted loads that skill.
#[tokio::test]
async fn an_agent_refused_a_skill_by_name_is_refused_it_by_its_uri() {
    let agents = "primary:\n  tools: {}\n  skills:\n    mcp.skills: { enabled: true }\n    mcp.skills.secret-exfil: { enabled: false }\n";
    let (session, log, _dir) = skills_session_in("hostile", "", agents).await;
    let mine = session.skills_for("primary", "skills").await.unwrap();
    assert!(mine.iter().all(|s| s.name() != "secret-exfil"));
    for name in ["secret-exfil", SECRET] {
        let err = session
            .load_skill_as("primary", "skills", name)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "agent `primary`: skill `mcp.skills.secret-exfil` is not granted: no key of its `skills:` grants enables `mcp.skills.secret-exfil`",
            "{name}"
        );
        let err = session
            .skill_file_as("primary", "skills", name, "SKILL.md")
            .await
            .unwrap_err();
        assert_eq!(err.kind(), "skill_not_granted", "{name}: {err}");
    }
    assert!(reads(&log).is_empty(), "nothing read: {:?}", reads(&log));
    let loaded = session
        .load_skill_as("primary", "skills", PDF)
        .await
        .unwrap();
    assert_eq!(loaded.entry.name(), "pdf-processing");
    session.shutdown().await;
}

/// A grant key names a skill whole (issue 48): `mcp.skills.notes` grants `notes`, not a skill
/// the server names `notes.exfil` to ride on it as a tool name rides on a dotted prefix; a
/// server-wide key still grants every skill of the server.
#[tokio::test]
async fn a_grant_of_a_skill_does_not_cover_a_skill_named_below_it_at_a_dot() {
    let agents = "primary:\n  tools: {}\n  skills:\n    mcp.skills.notes: { enabled: true }\n  subagents:\n    helper:\n      tools: {}\n      skills:\n        mcp.skills: { enabled: true }\n";
    let (session, log, _dir) = skills_session_in("hostile", "", agents).await;
    let mine = session.skills_for("primary", "skills").await.unwrap();
    let names: Vec<&str> = mine.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["notes"]);
    for name in ["notes.exfil", "skill://notes.exfil/SKILL.md"] {
        let err = session
            .load_skill_as("primary", "skills", name)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "agent `primary`: skill `mcp.skills.notes.exfil` is not granted: its grant key `mcp.skills.notes` names another skill: a skill's name is matched whole",
            "{name}"
        );
    }
    assert!(reads(&log).is_empty(), "nothing read: {:?}", reads(&log));
    session
        .load_skill_as("primary", "skills", "notes")
        .await
        .unwrap();
    let loaded = session
        .load_skill_as("helper", "skills", "notes.exfil")
        .await
        .unwrap();
    assert_eq!(loaded.entry.name(), "notes.exfil");
    session.shutdown().await;
}

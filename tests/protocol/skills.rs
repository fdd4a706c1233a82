//! Skills over MCP (SEP-2640) against `tests/servers/skills_server.py`: listed without reading a
//! file, loaded on demand and verified before any use (size, digest, frontmatter), and a
//! refused skill has none of its files read after it. The server records every
//! `resources/read` in a log, so what was read (and what was not) is seen from the server's
//! side.

use kaged_mcp::client::{ClientOptions, ErrorKind, McpClient, SkillCheck};

/// The client of a skills server in `mode`, and the file its reads are logged to.
fn skills_client(mode: &str) -> (McpClient, tempfile::NamedTempFile) {
    skills_client_with(&["--mode", mode])
}

/// The command of the skills server with `args`, logging its reads to `log`.
fn skills_command(args: &[&str], log: &tempfile::NamedTempFile) -> Vec<String> {
    let mut command = vec![
        "python3".to_owned(),
        crate::common::peers::server_script("skills_server.py")
            .to_string_lossy()
            .into_owned(),
        "--log".to_owned(),
        log.path().to_string_lossy().into_owned(),
    ];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    command
}

/// A client of the skills server run with `args`, and the file its reads are logged to.
fn skills_client_with(args: &[&str]) -> (McpClient, tempfile::NamedTempFile) {
    let log = tempfile::NamedTempFile::new().unwrap();
    let command = skills_command(args, &log);
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
    skills_session_with(&["--mode", mode], extra, agents).await
}

/// [`skills_session`] on the skills server run with `args`.
async fn skills_session_with(
    args: &[&str],
    extra: &str,
    agents: &str,
) -> (
    kaged_mcp::Session,
    tempfile::NamedTempFile,
    tempfile::TempDir,
) {
    let log = tempfile::NamedTempFile::new().unwrap();
    let command = serde_json::to_string(&skills_command(args, &log)).unwrap();
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

const NOTES: &str = "skill://notes/SKILL.md";

/// A skills server that declares no `tools` (as ext-skills' README builds one) starts, in both
/// eras (issue 49): `tools/list` is not sent, `status` says what it offers, its skills are
/// listed and loaded. The server refuses `skills/*` unless the client declared the extension.
#[tokio::test]
async fn a_skills_server_without_tools_starts_and_serves_its_skills_in_both_eras() {
    for era in ["legacy", "modern"] {
        let args = [
            "--caps",
            "no-tools",
            "--era",
            era,
            "--require-client-extension",
        ];
        let (session, log, _dir) = skills_session_with(&args, "", "").await;
        let failures: Vec<String> = session
            .start_failures()
            .into_iter()
            .map(|f| f.detail)
            .collect();
        assert!(failures.is_empty(), "{era}: {failures:?}");
        let status = &session.status()[0];
        assert_eq!(status.state, "ready", "{era}");
        assert_eq!(status.era, Some(era), "{era}");
        assert_eq!(status.tools, 0, "{era}");
        assert_eq!(status.offers, ["resources", "skills"], "{era}");
        let listed = session.skills("skills").await.unwrap();
        let names: Vec<&str> = listed.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["pdf-processing", "notes"], "{era}");
        let loaded = session.load_skill("skills", "notes").await.unwrap();
        assert_eq!(loaded.entry.name(), "notes");
        assert_eq!(reads(&log), [NOTES], "{era}");
        session.shutdown().await;
    }
}

/// A server that declares none of tools, resources, prompts or skills still starts, and none
/// of those lists is asked of it (the server answers each with -32601).
#[tokio::test]
async fn a_server_that_declares_no_list_starts_and_is_asked_for_none() {
    let (session, log, _dir) = skills_session_with(&["--caps", "none"], "", "").await;
    let failures: Vec<String> = session
        .start_failures()
        .into_iter()
        .map(|f| f.detail)
        .collect();
    assert!(failures.is_empty(), "{failures:?}");
    let status = &session.status()[0];
    assert_eq!(status.state, "ready");
    assert!(status.offers.is_empty(), "{:?}", status.offers);
    assert!(session.skills("skills").await.unwrap().is_empty());
    assert!(session.resources("skills").await.unwrap().0.is_empty());
    let err = session.load_skill("skills", "notes").await.unwrap_err();
    assert!(err.to_string().contains("does not offer skills"), "{err}");
    assert!(reads(&log).is_empty());
    session.shutdown().await;
}

/// A skill the listing lacks is got by `skills/get` and verified as a listed one (issue 49):
/// by its name or its URI, in both eras; its files are read only after that; a skill the
/// server does not serve either says so in one clear line.
#[tokio::test]
async fn an_unlisted_skill_is_got_by_skills_get_and_verified_as_a_listed_one() {
    for era in ["legacy", "modern"] {
        let args = [
            "--mode",
            "partial",
            "--era",
            era,
            "--require-client-extension",
        ];
        let (client, log) = skills_client_with(&args);
        let names: Vec<String> = client
            .list_skills()
            .await
            .unwrap()
            .iter()
            .map(|s| s.name().to_owned())
            .collect();
        assert_eq!(names, ["pdf-processing"], "{era}: a partial listing");
        let loaded = client.load_skill("notes").await.unwrap();
        assert_eq!(loaded.entry.uri, NOTES, "{era}");
        assert!(loaded
            .skill_md
            .text()
            .unwrap()
            .contains("Write things down."));
        let by_uri = client.load_skill(NOTES).await.unwrap();
        assert_eq!(by_uri.entry.name(), "notes", "{era}");
        let file = client.read_skill_file("notes", "SKILL.md").await.unwrap();
        assert_eq!(file.uri, NOTES);
        assert_eq!(reads(&log), [NOTES, NOTES, NOTES], "{era}");

        let unknown = client.load_skill("no-such-skill").await.unwrap_err();
        assert_eq!(unknown.kind(), ErrorKind::NotOffered, "{era}: {unknown}");
        assert_eq!(
            unknown.reason(),
            "serves no skill `no-such-skill`: skills/list does not list it, and skills/get \
             skill://no-such-skill/SKILL.md was answered -32602: Not a skill served by this \
             server: skill://no-such-skill/SKILL.md",
            "{era}"
        );
        // Neither a skill name nor a SKILL.md URI: not asked.
        let odd = client.load_skill("no such/skill").await.unwrap_err();
        assert!(
            odd.reason()
                .contains("neither a skill name nor a SKILL.md URI"),
            "{era}: {}",
            odd.reason()
        );
        assert_eq!(reads(&log).len(), 3, "{era}: nothing more read");
        client.shutdown().await;
    }
}

/// A `skills/get` answer for another skill than the one asked for is refused before anything
/// is read (issue 49): another URI (`notes` answered with pdf-processing's entry), or the URI
/// asked with another name (`secret-exfil` answered as `notes`, to ride on its grant).
#[tokio::test]
async fn a_skills_get_answer_for_another_skill_is_refused_and_nothing_is_read() {
    let (client, log) = skills_client("getswap");
    for (asked, detail) in [
        (
            "notes",
            "skills/get skill://notes/SKILL.md answered the skill at skill://pdf-processing/SKILL.md",
        ),
        (
            SECRET,
            "skills/get skill://secret-exfil/SKILL.md answered a skill named `notes`, not `secret-exfil`",
        ),
    ] {
        let err = client.load_skill(asked).await.unwrap_err();
        match err.skill_check() {
            Some((check, _, _)) => assert_eq!(check, SkillCheck::Mismatched, "{asked}: {err}"),
            None => panic!("{asked}: {err}"),
        }
        assert!(err.reason().contains(detail), "{asked}: {}", err.reason());
        let err = client
            .read_skill_file(asked, "SKILL.md")
            .await
            .unwrap_err();
        assert!(err.skill_check().is_some(), "{asked}: {err}");
    }
    assert!(reads(&log).is_empty(), "nothing read: {:?}", reads(&log));
    client.shutdown().await;
}

/// A skill got by `skills/get` is judged by the project's filter and an agent's grants as a
/// listed one (issue 49), by the name the server's answer gives; a refusal reads nothing.
#[tokio::test]
async fn an_unlisted_skill_is_filtered_and_granted_by_its_answered_name() {
    let agents = "primary:\n  tools: {}\n  skills:\n    mcp.skills.notes: { enabled: true }\n";
    let (session, log, _dir) = skills_session_in(
        "partial",
        "    skills:\n      deny: [secret-exfil]\n",
        agents,
    )
    .await;
    for name in ["secret-exfil", SECRET] {
        let err = session.load_skill("skills", name).await.unwrap_err();
        assert_eq!(err.kind(), "skill_not_granted", "{name}: {err}");
        assert!(err.to_string().contains("`skills.deny`"), "{name}: {err}");
    }
    let loaded = session
        .load_skill_as("primary", "skills", "notes")
        .await
        .unwrap();
    assert_eq!(loaded.entry.uri, NOTES);
    assert_eq!(reads(&log), [NOTES]);
    session.shutdown().await;

    // The answer's name `notes` for the URI of secret-exfil is refused, grant or not.
    let (session, log, _dir) = skills_session_in("getswap", "", agents).await;
    let err = session
        .load_skill_as("primary", "skills", SECRET)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("mismatched"), "{err}");
    assert!(reads(&log).is_empty(), "{:?}", reads(&log));
    session.shutdown().await;
}

/// A supporting file read after an honest `SKILL.md` is verified too, and what the read
/// returned decides: a tampered file (same size, one word changed) fails its digest check; a
/// blob that is not base64 and a read with no contents are `unreadable`; a good base64 blob
/// of the listed bytes is accepted as those bytes. Each refusal names the skill, the file and
/// the check; `SKILL.md` and the file were each read once, and the session goes on.
#[tokio::test]
async fn a_supporting_file_is_verified_whatever_the_read_returned() {
    for (mode, refusal) in [
        (
            "support",
            Some((SkillCheck::Digest, "failed its digest check")),
        ),
        (
            "badblob",
            Some((SkillCheck::Unreadable, "its blob is not base64")),
        ),
        (
            "empty",
            Some((SkillCheck::Unreadable, "the read returned no contents")),
        ),
        ("blob", None),
    ] {
        let (client, log) = skills_client(mode);
        let read = client
            .read_skill_file("pdf-processing", "references/FORMS.md")
            .await;
        match (refusal, read) {
            (Some((check, words)), Err(err)) => {
                assert_eq!(err.kind(), ErrorKind::SkillRefused, "{mode}: {err}");
                assert_eq!(
                    err.skill_check(),
                    Some((check, "pdf-processing", FORMS)),
                    "{mode}: {err}"
                );
                assert!(err.reason().contains(words), "{mode}: {}", err.reason());
            }
            (None, Ok(forms)) => {
                assert_eq!(forms.uri, FORMS);
                assert_eq!(
                    forms.text(),
                    Some("Supporting content: how to fill a form.\n"),
                    "{mode}"
                );
            }
            (expected, got) => panic!("{mode}: expected {expected:?}, got {got:?}"),
        }
        assert_eq!(reads(&log), [PDF, FORMS], "{mode}");
        client.load_skill("notes").await.unwrap();
        client.shutdown().await;
    }
}

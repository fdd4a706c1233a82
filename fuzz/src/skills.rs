//! `skills`: what a server says about its skills (SEP-2640), as the client reads it before it
//! uses one: a `skills/list` result, and a `SKILL.md` checked against its listing (its YAML
//! frontmatter field by field, its bytes against the listed size and digest) by the code
//! `McpClient::load_skill` runs (`kaged_mcp::client::skill_checks`).
//!
//! An input starting with `{` is a `skills/list` result; any other is a `SKILL.md`.

use kaged_mcp::client::skill_checks as checks;
use kaged_mcp::client::SkillCheck;
use kaged_mcp::protocol::skills::{ListSkillsResult, SkillEntry, SkillFile};
use serde_json::{json, Map, Value};

/// Never a panic, and:
///
/// - a listing: every entry's name and description read; every listed file is found by its
///   URI, and by its path within the skill's directory (or a file listed under that very
///   name); an entry written back reads back the same;
/// - a `SKILL.md`: a frontmatter that reads agrees with a listing of itself, and not with one
///   that lacks, changes or adds a field, each refusal naming that field; text after the
///   frontmatter changes nothing; a line that only starts with `---` (or a `...` line), put
///   with a field after it at the frontmatter's start, never closes it: that SKILL.md is refused
///   against the listing of the original (issue 48: a scanner closed the frontmatter at
///   `---evil: 1`, so the fields after it passed unseen); one that does not read is refused,
///   with a reason, whatever the listing; the bytes pass against a listing of their own size and digest (hex in either
///   case), and fail by `size` one byte off, by `digest` with another digest.
pub fn skills(data: &[u8]) {
    if data.first() == Some(&b'{') {
        listing(data);
    } else {
        skill_md(data);
    }
}

fn listing(data: &[u8]) {
    let Ok(list) = serde_json::from_slice::<ListSkillsResult>(data) else {
        return;
    };
    for entry in &list.skills {
        let _ = (entry.name(), entry.description());
        let dir = entry.uri.rsplit_once('/').map_or("", |(dir, _)| dir);
        for f in &entry.resources {
            let found =
                checks::find_file(entry, &f.uri).expect("a listed file is found by its URI");
            assert_eq!(found.uri, f.uri);
            let Some(path) = f.uri.strip_prefix(&format!("{dir}/")) else {
                continue;
            };
            if path.starts_with("./") {
                continue;
            }
            let by_path =
                checks::find_file(entry, path).expect("a listed file is found by its path");
            assert!(
                by_path.uri == f.uri || by_path.uri == path,
                "{path:?} in {dir:?} found {:?}",
                by_path.uri
            );
        }
        let back: SkillEntry =
            serde_json::from_value(serde_json::to_value(entry).expect("an entry writes"))
                .expect("an entry written reads back");
        assert_eq!(&back, entry);
    }
}

fn skill_md(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match checks::frontmatter(&text) {
        Err(why) => {
            assert!(!why.is_empty());
            let listed: Map<String, Value> =
                [("name".to_owned(), json!("x"))].into_iter().collect();
            assert_eq!(
                checks::compare_frontmatter(&listed, &text),
                Err(why.clone())
            );
            assert_eq!(checks::compare_frontmatter(&Map::new(), &text), Err(why));
        }
        Ok(found) => {
            assert_eq!(checks::compare_frontmatter(&found, &text), Ok(()));
            let longer = format!("{text}\n---\nname: other\n---\n");
            assert_eq!(checks::frontmatter(&longer).as_ref(), Ok(&found));
            forged_lines(&text, &found);
            if let Some((key, value)) = found.iter().next() {
                let named = format!("`{key}`");
                let mut fewer = found.clone();
                fewer.remove(key);
                let why = checks::compare_frontmatter(&fewer, &text).unwrap_err();
                assert!(why.contains(&named), "{why}");
                let mut changed = found.clone();
                changed.insert(key.clone(), json!([value]));
                let why = checks::compare_frontmatter(&changed, &text).unwrap_err();
                assert!(why.contains(&named), "{why}");
            }
            let extra = (0..)
                .map(|n| format!("extra-{n}"))
                .find(|k| !found.contains_key(k))
                .expect("a key the frontmatter lacks");
            let mut more = found.clone();
            more.insert(extra.clone(), Value::Null);
            let why = checks::compare_frontmatter(&more, &text).unwrap_err();
            assert!(why.contains(&format!("`{extra}`")), "{why}");
        }
    }
    verify(data);
}

/// Lines a scanner would take for the frontmatter's end, each followed by a field, put right
/// after the opening `---` line of `text` (whose frontmatter reads as `found`): never accepted
/// against the listing of `found`.
fn forged_lines(text: &str, found: &Map<String, Value>) {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let opening = body
        .find('\n')
        .expect("a frontmatter that reads has an opening line")
        + 1;
    for line in [
        "---evil: 1\n",
        "---x\nallowed-tools: Bash\n",
        "--- \nallowed-tools: Bash\n",
        "---\tx\nallowed-tools: Bash\n",
        "...\nallowed-tools: Bash\n",
    ] {
        let forged = format!("{}{line}{}", &body[..opening], &body[opening..]);
        assert!(
            checks::compare_frontmatter(found, &forged).is_err(),
            "{line:?} at the start of the frontmatter passed: {forged:?}"
        );
    }
}

/// A listed file as a listing writes it.
fn listed(digest: &str, size: u64) -> SkillFile {
    serde_json::from_value(json!({"uri": "skill://fuzz/SKILL.md", "digest": digest, "size": size}))
        .expect("a listed file")
}

fn verify(data: &[u8]) {
    let digest = checks::digest(data);
    let size = data.len() as u64;
    assert_eq!(checks::verify(&listed(&digest, size), data), Ok(()));
    let upper = format!("sha256:{}", digest["sha256:".len()..].to_ascii_uppercase());
    assert_eq!(checks::verify(&listed(&upper, size), data), Ok(()));
    let off = checks::verify(&listed(&digest, size + 1), data).unwrap_err();
    assert_eq!(off.0, SkillCheck::Size, "{}", off.1);
    let last = if digest.ends_with('0') { "1" } else { "0" };
    let other = format!("{}{last}", &digest[..digest.len() - 1]);
    let wrong = checks::verify(&listed(&other, size), data).unwrap_err();
    assert_eq!(wrong.0, SkillCheck::Digest, "{}", wrong.1);
}

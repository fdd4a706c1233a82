//! Skills over MCP (SEP-2640, `io.modelcontextprotocol/skills`): the first feature written on
//! the client tier by feature: this module and one line in [`McpClient::new`].
//!
//! - **Listed, never prefetched.** [`McpClient::list_skills`] asks `skills/list` of a server
//!   that declares the extension (none otherwise) and keeps the list as long as its `ttlMs`
//!   says, per session; nothing is read on connection, on listing or on approval.
//! - **Loaded on demand, verified before any use.** [`McpClient::load_skill`] reads the
//!   skill's `SKILL.md` (`resources/read`) and checks, in this order, its size, its SHA-256
//!   digest and its YAML frontmatter (field by field against the listed frontmatter) before
//!   it hands back a byte. [`McpClient::read_skill_file`] loads the skill first, so a refused
//!   `SKILL.md` refuses the skill and no supporting file is read after it; the file itself is
//!   checked against its own listed size and digest.
//! - **A refusal names its check**: [`ErrorKind::SkillRefused`](crate::client::ErrorKind::SkillRefused) with a [`SkillCheck`]
//!   (`size`, `digest`, `frontmatter`, `not_listed`, `unreadable`, `ambiguous`, `mismatched`),
//!   and uses none of the content.
//! - **Named, then resolved against the listing.** A skill is asked for by its listed name or
//!   its listed `SKILL.md` URI; [`McpClient::resolve_skill`] turns either into the listed entry,
//!   so the session's filters and grants judge the listed name, whatever string was given.
//! - **An unlisted skill is got, then checked alike.** A listing may be partial: a skill it
//!   lacks is asked of `skills/get` (by its URI, or a name as `skill://<name>/SKILL.md`), and
//!   the answer must be that skill (the same URI, the name asked for) before its name is
//!   judged and its files are verified against that entry as against a listed one
//!   ([`SkillCheck::Mismatched`] otherwise).
//! - **Frontmatter parsed, not scanned.** A bare `---` line opens and closes it; what is
//!   between is one YAML document read by the project's strict reader, and any difference from
//!   the listed frontmatter (a field missing, changed or added) refuses the skill.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use super::error::{ClientError, SkillCheck};
use super::router::Router;
use super::McpClient;
use crate::client::Kind;
use crate::protocol::method::{GetSkill, ListSkills, Request as _};
use crate::protocol::params::{PaginatedParams, ResourceRequestParams};
use crate::protocol::skills::{offers_skills, SkillEntry, SkillFile};
use crate::protocol::ResourceContents;

/// Registers the skills feature: each session keeps its own listing cache.
pub(super) fn register(router: &mut Router) {
    router.session_state::<Listing>();
}

/// A session's last `skills/list`, kept until its `ttlMs` runs out.
#[derive(Debug, Default)]
struct Listing(Mutex<Option<(Instant, Arc<[SkillEntry]>)>>);

/// A skill's file, read and verified against its entry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillContent {
    /// The file's URI, as listed.
    pub uri: String,
    /// Its MIME type, when the server said.
    pub mime_type: Option<String>,
    /// Its bytes (a text's UTF-8 bytes), verified.
    pub bytes: Vec<u8>,
}

impl SkillContent {
    /// The content as text, when it is UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

/// A loaded skill: its entry and its verified `SKILL.md`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoadedSkill {
    /// The skill as listed.
    pub entry: SkillEntry,
    /// Its `SKILL.md`, verified.
    pub skill_md: SkillContent,
}

impl McpClient {
    /// The server's skills (`skills/list`), kept per session as long as the server's `ttlMs`
    /// says; empty when the server does not declare the skills extension. No skill file is
    /// read.
    ///
    /// # Errors
    /// [`ErrorKind::RequestTimeout`](crate::client::ErrorKind::RequestTimeout); [`ErrorKind::JsonRpc`](crate::client::ErrorKind::JsonRpc); any error of the session.
    pub async fn list_skills(&self) -> Result<Arc<[SkillEntry]>, ClientError> {
        let session = self.shared.session().await?;
        if !self.offers_skills() {
            return Ok(Arc::from([]));
        }
        let cache = session.state::<Listing>();
        if let Some(Listing(kept)) = cache {
            let kept = kept
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some((until, skills)) = &*kept {
                if Instant::now() < *until {
                    return Ok(Arc::clone(skills));
                }
            }
        }
        let listed = self.request::<ListSkills>(PaginatedParams::first()).await?;
        let skills: Arc<[SkillEntry]> = listed.skills.into();
        if let (Some(Listing(kept)), Some(ttl)) = (cache, listed.ttl_ms.filter(|t| *t > 0)) {
            *kept
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((
                Instant::now() + Duration::from_millis(ttl),
                Arc::clone(&skills),
            ));
        }
        Ok(skills)
    }

    /// Whether the server declared the skills extension when the session started.
    fn offers_skills(&self) -> bool {
        self.shared
            .lock()
            .init
            .as_ref()
            .is_some_and(|init| offers_skills(&init.capabilities))
    }

    /// The skill `name` names: the one skill listed under that name (its frontmatter's
    /// `name`), or else the one whose `SKILL.md` is listed at that URI; for a skill the listing
    /// lacks, the entry `skills/get` answers (asked by the URI given, or for a skill name by
    /// `skill://<name>/SKILL.md`), once it is the skill asked for: the same URI, and the name
    /// given (for a URI, the last segment of its path). Whatever the caller gave, what comes
    /// back is the server's entry, so a filter or a grant is checked against the entry's name
    /// ([`SkillEntry::name`]), never against the string given. Nothing is read but the
    /// listing (and the `skills/get` answer).
    ///
    /// # Errors
    /// [`ErrorKind::NotOffered`](crate::client::ErrorKind::NotOffered) for a skill the server
    /// neither lists nor serves by `skills/get` (or a server without the skills extension);
    /// [`ErrorKind::SkillRefused`](crate::client::ErrorKind::SkillRefused) with
    /// [`SkillCheck::Ambiguous`] when two listed skills answer to it, with
    /// [`SkillCheck::Mismatched`] when `skills/get` answers another skill; the errors of
    /// [`list_skills`](Self::list_skills) and of `skills/get`.
    pub async fn resolve_skill(&self, name: &str) -> Result<SkillEntry, ClientError> {
        let skills = self.list_skills().await?;
        match resolve(&skills, name) {
            Ok(entry) => Ok(entry.clone()),
            Err(Some(first)) => Err(refused(
                &self.shared.server,
                first,
                &first.uri,
                SkillCheck::Ambiguous,
                format!(
                    "more than one listed skill answers to {:?}",
                    crate::escape::visible(name)
                ),
            )),
            Err(None) => self.get_unlisted(name).await,
        }
    }

    /// The entry of a skill the listing lacks, by `skills/get` (a listing may be partial):
    /// asked by the URI given, or for a skill name by `skill://<name>/SKILL.md`. The answer
    /// must be the skill asked for: the same URI, and a frontmatter `name` that is the name
    /// given (asked by URI: the last segment of its path, as SEP-2640 requires of a skill's
    /// path). Nothing is read.
    async fn get_unlisted(&self, name: &str) -> Result<SkillEntry, ClientError> {
        let server = &self.shared.server;
        if !self.offers_skills() {
            return Err(self.not_offered(ListSkills::METHOD, name, "skills"));
        }
        let unknown = |request: Option<&super::error::RequestRef>, why: String| {
            ClientError::new(
                Arc::clone(server),
                request.cloned(),
                Kind::UnknownSkill {
                    name: crate::transport::text::redact_uri(name).into(),
                    why: why.into(),
                },
            )
        };
        let Some((uri, expected)) = skill_get_uri(name) else {
            return Err(unknown(
                None,
                "skills/list does not list it, and it is neither a skill name nor a SKILL.md \
                 URI to ask skills/get for"
                    .into(),
            ));
        };
        let answer = match self
            .request::<GetSkill>(ResourceRequestParams::new(uri.clone()))
            .await
        {
            Ok(answer) => answer.skill,
            // -32602: not a skill the server serves; -32601: a server without skills/get.
            Err(e) if matches!(e.code(), Some(-32602 | -32601)) => {
                return Err(unknown(
                    e.request(),
                    format!(
                        "skills/list does not list it, and skills/get {} was answered {}: {}",
                        crate::transport::text::redact_uri(&uri),
                        e.code().unwrap_or_default(),
                        e.message().unwrap_or_default()
                    ),
                ));
            }
            Err(e) => return Err(e),
        };
        let mismatch =
            |detail: String| refused(server, &answer, &uri, SkillCheck::Mismatched, detail);
        if answer.uri != uri {
            return Err(mismatch(format!(
                "skills/get {} answered the skill at {}",
                crate::transport::text::redact_uri(&uri),
                crate::transport::text::redact_uri(&answer.uri)
            )));
        }
        if answer.name() != expected {
            return Err(mismatch(format!(
                "skills/get {} answered a skill named `{}`, not `{expected}`",
                crate::transport::text::redact_uri(&uri),
                answer.name()
            )));
        }
        Ok(answer)
    }

    /// Loads the skill `name` ([`resolve_skill`](Self::resolve_skill): its listed name, or its
    /// listed `SKILL.md` URI): reads its `SKILL.md` and verifies its size, digest and
    /// frontmatter against the listing (size, then digest, then frontmatter).
    ///
    /// # Errors
    /// [`ErrorKind::SkillRefused`](crate::client::ErrorKind::SkillRefused) naming the check that failed (nothing of the content is
    /// returned); [`ErrorKind::NotOffered`](crate::client::ErrorKind::NotOffered) for a skill the server does not list; the errors
    /// of [`resolve_skill`](Self::resolve_skill) and of the read.
    pub async fn load_skill(&self, name: &str) -> Result<LoadedSkill, ClientError> {
        let entry = self.resolve_skill(name).await?;
        self.load_entry(entry).await
    }

    /// Reads the file `file` of the skill `name` (a listed URI, or a path within the skill
    /// such as `references/FORMS.md`), after loading the skill: a skill whose `SKILL.md` is
    /// refused has none of its files read. The file is verified against its listed size and
    /// digest.
    ///
    /// # Errors
    /// As [`load_skill`](Self::load_skill); [`ErrorKind::SkillRefused`](crate::client::ErrorKind::SkillRefused) with
    /// [`SkillCheck::NotListed`] for a file the skill does not list.
    pub async fn read_skill_file(
        &self,
        name: &str,
        file: &str,
    ) -> Result<SkillContent, ClientError> {
        let entry = self.resolve_skill(name).await?;
        self.read_entry_file(entry, file).await
    }

    /// Loads the skill `entry` of this server's listing ([`resolve_skill`](Self::resolve_skill)):
    /// its `SKILL.md` read and verified against it.
    pub(crate) async fn load_entry(&self, entry: SkillEntry) -> Result<LoadedSkill, ClientError> {
        let skill_md = self.read_verified(&entry, &entry.uri).await?;
        let text = skill_md.text().ok_or_else(|| {
            refused(
                &self.shared.server,
                &entry,
                &entry.uri,
                SkillCheck::Frontmatter,
                "SKILL.md is not UTF-8 text".into(),
            )
        })?;
        if let Err(detail) = compare_frontmatter(&entry.frontmatter, text) {
            return Err(refused(
                &self.shared.server,
                &entry,
                &entry.uri,
                SkillCheck::Frontmatter,
                detail,
            ));
        }
        Ok(LoadedSkill { entry, skill_md })
    }

    /// The file `file` of the skill `entry` of this server's listing, read and verified after
    /// the skill was loaded.
    pub(crate) async fn read_entry_file(
        &self,
        entry: SkillEntry,
        file: &str,
    ) -> Result<SkillContent, ClientError> {
        let loaded = self.load_entry(entry).await?;
        let entry = &loaded.entry;
        let Some(listed) = find_file(entry, file) else {
            return Err(refused(
                &self.shared.server,
                entry,
                file,
                SkillCheck::NotListed,
                "the skill lists no such file".into(),
            ));
        };
        if listed.uri == entry.uri {
            return Ok(loaded.skill_md);
        }
        let uri = listed.uri.clone();
        self.read_verified(entry, &uri).await
    }

    /// Reads `uri` of `entry` and checks it against its listed size and digest.
    async fn read_verified(
        &self,
        entry: &SkillEntry,
        uri: &str,
    ) -> Result<SkillContent, ClientError> {
        let server = &self.shared.server;
        let Some(listed) = entry.file(uri) else {
            return Err(refused(
                server,
                entry,
                uri,
                SkillCheck::NotListed,
                "the skill's resources do not list it".into(),
            ));
        };
        let read = self.read_resource(uri).await?;
        let content = read
            .contents
            .iter()
            .find(|c| content_uri(c) == uri)
            .or_else(|| read.contents.first())
            .ok_or_else(|| {
                refused(
                    server,
                    entry,
                    uri,
                    SkillCheck::Unreadable,
                    "the read returned no contents".into(),
                )
            })?;
        let (bytes, mime_type) = match content {
            ResourceContents::Text(t) => (t.text.as_bytes().to_vec(), t.mime_type.clone()),
            ResourceContents::Blob(b) => {
                match base64::engine::general_purpose::STANDARD.decode(&b.blob) {
                    Ok(bytes) => (bytes, b.mime_type.clone()),
                    Err(e) => {
                        return Err(refused(
                            server,
                            entry,
                            uri,
                            SkillCheck::Unreadable,
                            format!("its blob is not base64: {e}"),
                        ))
                    }
                }
            }
        };
        verify(listed, &bytes)
            .map_err(|(check, detail)| refused(server, entry, uri, check, detail))?;
        Ok(SkillContent {
            uri: uri.to_owned(),
            mime_type,
            bytes,
        })
    }
}

/// The URI of one content of a read.
fn content_uri(c: &ResourceContents) -> &str {
    match c {
        ResourceContents::Text(t) => &t.uri,
        ResourceContents::Blob(b) => &b.uri,
    }
}

/// The one listed skill `name` names: by its listed name, else by its listed `SKILL.md` URI.
/// `Err(Some(first))` when two skills answer to it alike, `Err(None)` when none does.
fn resolve<'a>(
    skills: &'a [SkillEntry],
    name: &str,
) -> Result<&'a SkillEntry, Option<&'a SkillEntry>> {
    let by_name = |s: &&SkillEntry| s.name() == name;
    let by_uri = |s: &&SkillEntry| s.uri == name;
    for answers in [&by_name as &dyn Fn(&&SkillEntry) -> bool, &by_uri] {
        let mut found = skills.iter().filter(|s| answers(s));
        if let Some(first) = found.next() {
            return match found.next() {
                None => Ok(first),
                Some(_) => Err(Some(first)),
            };
        }
    }
    Err(None)
}

/// The most bytes of a URI sent to `skills/get`.
const MAX_SKILL_URI: usize = 2048;

/// What to ask `skills/get` for `name`, and the skill name the answer must carry: a skill
/// name (`[A-Za-z0-9][A-Za-z0-9._-]{0,63}`, the Agent Skills names and a little more) is asked
/// as `skill://<name>/SKILL.md`; a URI (`scheme://…/SKILL.md`, of any scheme, without
/// whitespace, controls or invisible code points) as it is, its skill's name being the last
/// segment of its path. Anything else is not asked.
fn skill_get_uri(name: &str) -> Option<(String, String)> {
    let is_name = |n: &str| {
        n.len() <= 64
            && n.starts_with(|c: char| c.is_ascii_alphanumeric())
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    if is_name(name) {
        return Some((format!("skill://{name}/SKILL.md"), name.to_owned()));
    }
    let (scheme, rest) = name.split_once("://")?;
    let plain = |c: char| !c.is_whitespace() && !crate::escape::is_hidden(c);
    if name.len() > MAX_SKILL_URI
        || scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        || !rest.chars().all(plain)
    {
        return None;
    }
    let dir = rest.strip_suffix("/SKILL.md")?;
    let last = dir.rsplit('/').next().unwrap_or(dir);
    is_name(last).then(|| (name.to_owned(), last.to_owned()))
}

/// The listed file `file` names: a listed URI, or a path within the skill's directory.
fn find_file<'a>(entry: &'a SkillEntry, file: &str) -> Option<&'a SkillFile> {
    if let Some(listed) = entry.file(file) {
        return Some(listed);
    }
    let dir = entry.uri.rsplit_once('/').map_or("", |(dir, _)| dir);
    let path = file.trim_start_matches("./");
    entry
        .resources
        .iter()
        .find(|f| f.uri == format!("{dir}/{path}"))
}

/// The refusal of `entry`'s file `uri` by `check`.
fn refused(
    server: &Arc<str>,
    entry: &SkillEntry,
    uri: &str,
    check: SkillCheck,
    detail: String,
) -> ClientError {
    ClientError::new(
        Arc::clone(server),
        None,
        Kind::SkillRefused {
            skill: entry.name().into(),
            file: uri.into(),
            check,
            detail: detail.into(),
        },
    )
}

/// Checks `bytes` against the listed size, then the listed digest.
fn verify(listed: &SkillFile, bytes: &[u8]) -> Result<(), (SkillCheck, String)> {
    let size = bytes.len() as u64;
    if size != listed.size {
        return Err((
            SkillCheck::Size,
            format!("it is {size} bytes; the listing says {}", listed.size),
        ));
    }
    let digest = hex(&Sha256::digest(bytes));
    let expected = listed
        .digest
        .strip_prefix("sha256:")
        .map(str::to_ascii_lowercase);
    match expected {
        Some(expected) if expected == digest => Ok(()),
        Some(expected) => Err((
            SkillCheck::Digest,
            format!("its SHA-256 is {digest}; the listing says {expected}"),
        )),
        None => Err((
            SkillCheck::Digest,
            format!(
                "the listing's digest {:?} is not sha256:<hex>",
                listed.digest
            ),
        )),
    }
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Compares the YAML frontmatter of `skill_md` with the listed one, field by field: the same
/// fields with the same values, or the first difference in words.
fn compare_frontmatter(listed: &Map<String, Value>, skill_md: &str) -> Result<(), String> {
    let found = frontmatter(skill_md)?;
    for (key, value) in listed {
        match found.get(key) {
            None => {
                return Err(format!(
                    "its frontmatter has no `{key}`, which the listing has"
                ))
            }
            Some(v) if v != value => {
                return Err(format!(
                    "its frontmatter's `{key}` differs from the listing's"
                ));
            }
            Some(_) => {}
        }
    }
    match found.keys().find(|k| !listed.contains_key(*k)) {
        Some(extra) => Err(format!(
            "its frontmatter has `{extra}`, which the listing has not"
        )),
        None => Ok(()),
    }
}

/// The YAML frontmatter of a `SKILL.md`, as JSON: the text between a first line that is
/// exactly `---` and the next line that is exactly `---` (either may end in `\r\n`; the second
/// may end the file), read as one YAML document with the project's strict reader (a duplicate
/// key, a second document, an alias bomb are refused). A line that only starts with `---`
/// (`---evil: 1`, `--- x`) is YAML inside the frontmatter, not its end.
fn frontmatter(skill_md: &str) -> Result<Map<String, Value>, String> {
    let text = skill_md.strip_prefix('\u{feff}').unwrap_or(skill_md);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if !is_marker(first) || !first.ends_with('\n') {
        return Err("it does not start with a `---` frontmatter line".into());
    }
    let start = first.len();
    let mut end = start;
    loop {
        let Some(line) = lines.next() else {
            return Err("its frontmatter has no closing `---` line".into());
        };
        if is_marker(line) {
            break;
        }
        end += line.len();
    }
    let key_path: crate::config::yaml::KeyPath =
        |steps| crate::config::yaml::write_path(steps, |_| false);
    let node = crate::config::yaml::parse(
        &text[start..end],
        std::path::Path::new("SKILL.md"),
        key_path,
    )
    .map_err(|e| match e.location {
        // The frontmatter starts on the file's second line.
        Some(at) => format!(
            "its frontmatter is not valid YAML (line {} of SKILL.md): {}",
            at.line + 1,
            e.message
        ),
        None => format!("its frontmatter is not valid YAML: {}", e.message),
    })?;
    match yaml_to_json(&node)? {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        _ => Err("its frontmatter is not a mapping".into()),
    }
}

/// Whether `line` (with its line break, if any) is a bare `---` line.
fn is_marker(line: &str) -> bool {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line) == "---"
}

/// A YAML node as JSON; a number JSON cannot hold (`.nan`, `.inf`) is refused rather than
/// read as something else.
fn yaml_to_json(node: &crate::config::yaml::Node) -> Result<Value, String> {
    use crate::config::yaml::Value as Y;
    Ok(match &node.value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(*b),
        Y::Int(i) => Value::from(*i),
        Y::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| {
                format!(
                    "its frontmatter has the number {f} (line {} of SKILL.md), which a listing \
                     cannot hold",
                    node.loc.line + 1
                )
            })?,
        Y::Str(s) => Value::String(s.clone()),
        Y::Seq(items) => Value::Array(items.iter().map(yaml_to_json).collect::<Result<_, _>>()?),
        Y::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|e| Ok((e.key.clone(), yaml_to_json(&e.value)?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}

/// The checks a skill's files go through before use, as [`McpClient::load_skill`] and
/// [`McpClient::read_skill_file`] run them: for the `skills` fuzz target and its regression
/// tests only (`fuzz/README.md`), not an API.
#[doc(hidden)]
pub mod checks {
    use serde_json::{Map, Value};

    use crate::client::SkillCheck;
    use crate::protocol::skills::{SkillEntry, SkillFile};

    /// The YAML frontmatter of a `SKILL.md`, as JSON, or why it has none.
    pub fn frontmatter(skill_md: &str) -> Result<Map<String, Value>, String> {
        super::frontmatter(skill_md)
    }

    /// `SKILL.md`'s frontmatter against the listed one: the first difference in words.
    pub fn compare_frontmatter(listed: &Map<String, Value>, skill_md: &str) -> Result<(), String> {
        super::compare_frontmatter(listed, skill_md)
    }

    /// A file's bytes against its listed size, then its listed digest.
    pub fn verify(listed: &SkillFile, bytes: &[u8]) -> Result<(), (SkillCheck, String)> {
        super::verify(listed, bytes)
    }

    /// The listed file `file` names (a listed URI, or a path within the skill's directory).
    pub fn find_file<'a>(entry: &'a SkillEntry, file: &str) -> Option<&'a SkillFile> {
        super::find_file(entry, file)
    }

    /// `sha256:<lower-case hex>` of `bytes`, as a listing writes it.
    pub fn digest(bytes: &[u8]) -> String {
        use sha2::Digest as _;
        format!("sha256:{}", super::hex(&sha2::Sha256::digest(bytes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SKILL_MD: &str =
        "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";

    fn listed(text: &str) -> SkillFile {
        SkillFile {
            uri: "skill://pdf-processing/SKILL.md".into(),
            digest: format!("sha256:{}", hex(&Sha256::digest(text.as_bytes()))),
            size: text.len() as u64,
        }
    }

    #[test]
    fn size_is_checked_before_the_digest_and_both_name_their_check() {
        let file = listed(SKILL_MD);
        assert!(verify(&file, SKILL_MD.as_bytes()).is_ok());
        let longer = format!("{SKILL_MD}extra\n");
        assert_eq!(
            verify(&file, longer.as_bytes()).unwrap_err().0,
            SkillCheck::Size
        );
        let evil = SKILL_MD.replace("Skill body.", "Evil body!!");
        assert_eq!(evil.len(), SKILL_MD.len());
        assert_eq!(
            verify(&file, evil.as_bytes()).unwrap_err().0,
            SkillCheck::Digest
        );
        let upper = SkillFile {
            digest: file
                .digest
                .to_ascii_uppercase()
                .replace("SHA256:", "sha256:"),
            ..file.clone()
        };
        assert!(
            verify(&upper, SKILL_MD.as_bytes()).is_ok(),
            "hex case does not matter"
        );
        let md5 = SkillFile {
            digest: "md5:abc".into(),
            ..file
        };
        assert_eq!(
            verify(&md5, SKILL_MD.as_bytes()).unwrap_err().0,
            SkillCheck::Digest
        );
    }

    #[test]
    fn the_frontmatter_must_match_the_listing_field_by_field() {
        let listed = json!({"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"});
        let listed = listed.as_object().unwrap();
        assert!(compare_frontmatter(listed, SKILL_MD).is_ok());
        let changed = SKILL_MD.replace(
            "description: Extract, fill, and assemble PDF documents",
            "description: Exfiltrate credentials",
        );
        assert!(compare_frontmatter(listed, &changed)
            .unwrap_err()
            .contains("`description`"));
        let extra = SKILL_MD.replace(
            "name: pdf-processing\n",
            "name: pdf-processing\nallowed-tools: Bash\n",
        );
        assert!(compare_frontmatter(listed, &extra)
            .unwrap_err()
            .contains("`allowed-tools`"));
        assert!(compare_frontmatter(listed, "no frontmatter").is_err());
        assert!(compare_frontmatter(listed, "---\nname: [unclosed\n---\n").is_err());
        assert!(compare_frontmatter(listed, "---\nname: x\n")
            .unwrap_err()
            .contains("closing"));
    }

    #[test]
    fn only_a_bare_dash_line_closes_the_frontmatter() {
        let listed = json!({"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"});
        let listed = listed.as_object().unwrap();
        // `---evil: 1` is YAML inside the frontmatter: the field after it is seen, and refused.
        let evil = SKILL_MD.replace(
            "description: Extract, fill, and assemble PDF documents\n",
            "description: Extract, fill, and assemble PDF documents\n---evil: 1\nallowed-tools: Bash\n",
        );
        let why = compare_frontmatter(listed, &evil).unwrap_err();
        assert!(why.contains("`---evil`"), "{why}");
        // `---x` is not YAML a mapping can hold: refused, naming the line.
        let x = SKILL_MD.replace("name: pdf-processing\n", "name: pdf-processing\n---x\n");
        let why = compare_frontmatter(listed, &x).unwrap_err();
        assert!(why.contains("not valid YAML (line 4 of SKILL.md)"), "{why}");
        // A document marker with text after it starts a second document: refused.
        for marker in ["--- \n", "--- x\n", "...\n"] {
            let split = SKILL_MD.replace(
                "description: Extract",
                &format!("{marker}allowed-tools: Bash\ndescription: Extract"),
            );
            assert!(compare_frontmatter(listed, &split).is_err(), "{marker:?}");
        }
        // A body that starts with `---x` after the frontmatter changes nothing.
        let body = format!("{SKILL_MD}---x\n---\n");
        assert!(compare_frontmatter(listed, &body).is_ok());
        // CRLF lines, and a closing line that ends the file.
        let crlf = SKILL_MD.replace('\n', "\r\n");
        assert!(compare_frontmatter(listed, &crlf).is_ok(), "CRLF");
        let at_end = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---";
        assert!(compare_frontmatter(listed, at_end).is_ok());
        // The opening line is bare too.
        assert!(compare_frontmatter(listed, &format!("-{SKILL_MD}")).is_err());
        assert!(compare_frontmatter(listed, &SKILL_MD.replacen("---", "--- ", 1)).is_err());
    }

    #[test]
    fn a_number_json_cannot_hold_does_not_pass_for_another_value() {
        let listed = json!({"name": "x", "version": null});
        let listed = listed.as_object().unwrap();
        assert!(compare_frontmatter(listed, "---\nname: x\nversion: ~\n---\n").is_ok());
        for nan in [".nan", ".inf", "-.inf"] {
            let md = format!("---\nname: x\nversion: {nan}\n---\n");
            let why = compare_frontmatter(listed, &md).unwrap_err();
            assert!(why.contains("line 3 of SKILL.md"), "{nan}: {why}");
        }
    }

    #[test]
    fn a_duplicate_key_or_a_second_document_is_refused() {
        let listed = json!({"name": "x", "description": "good"});
        let listed = listed.as_object().unwrap();
        let twice = "---\nname: x\ndescription: good\ndescription: evil\n---\n";
        assert!(compare_frontmatter(listed, twice)
            .unwrap_err()
            .contains("duplicate key"));
    }

    #[test]
    fn a_skill_resolves_by_its_listed_name_then_its_listed_uri_and_never_two() {
        let entry = |uri: &str, name: &str| -> SkillEntry {
            serde_json::from_value(json!({"uri": uri, "frontmatter": {"name": name}})).unwrap()
        };
        let skills = [
            entry("skill://pdf/SKILL.md", "pdf"),
            entry("skill://secret/SKILL.md", "secret"),
            // Named like another skill's URI: the name answers first.
            entry("skill://odd/SKILL.md", "skill://pdf/SKILL.md"),
            entry("skill://twin-a/SKILL.md", "twin"),
            entry("skill://twin-b/SKILL.md", "twin"),
        ];
        assert_eq!(resolve(&skills, "pdf").unwrap().name(), "pdf");
        assert_eq!(
            resolve(&skills, "skill://secret/SKILL.md").unwrap().name(),
            "secret",
            "a URI resolves to the listed skill, whose name is then judged"
        );
        assert_eq!(
            resolve(&skills, "skill://pdf/SKILL.md").unwrap().uri,
            "skill://odd/SKILL.md"
        );
        assert_eq!(
            resolve(&skills, "twin").unwrap_err().unwrap().uri,
            "skill://twin-a/SKILL.md"
        );
        assert!(resolve(&skills, "skill://nope/SKILL.md")
            .unwrap_err()
            .is_none());
        assert!(resolve(&skills, "secret/SKILL.md").unwrap_err().is_none());
    }

    #[test]
    fn a_file_is_found_by_its_uri_or_its_path_in_the_skill() {
        let entry: SkillEntry = serde_json::from_value(json!({
            "uri": "skill://pdf/SKILL.md", "frontmatter": {"name": "pdf"},
            "resources": [{"uri": "skill://pdf/SKILL.md", "digest": "sha256:00", "size": 1},
                          {"uri": "skill://pdf/references/FORMS.md", "digest": "sha256:00", "size": 1}]
        }))
        .unwrap();
        assert_eq!(
            find_file(&entry, "references/FORMS.md").unwrap().uri,
            "skill://pdf/references/FORMS.md"
        );
        assert_eq!(
            find_file(&entry, "skill://pdf/SKILL.md").unwrap().uri,
            "skill://pdf/SKILL.md"
        );
        assert!(find_file(&entry, "../other/SKILL.md").is_none());
    }
}

//! Skills granted like tools: a server's `skills:` filter in project.yaml (`enabled`, `allow`
//! and `deny` globs over skill names) decides what is listed and may be loaded at all, and an
//! agent's `skills:` grants (`primary.skills`, `primary.subagents.<name>.skills`, keys over
//! `mcp.<server>.<skill>` as tool grants are) decide which of those the agent may load. An agent
//! without a `skills:` block is granted none. A refusal reads nothing from the server.

use std::sync::Arc;

use super::protocol::request_error;
use super::Session;
use crate::client::{LoadedSkill, McpClient, SkillContent};
use crate::config::GrantPattern;
use crate::protocol::method::{ListSkills, ReadResource, Request as _};
use crate::protocol::skills::SkillEntry;
use crate::registry::grants;
use crate::Error;

impl Session {
    /// The rule of the project that keeps skill `name` of `server` out (`skills.deny`,
    /// `skills.allow`, `skills.enabled: false`), if one does.
    pub(super) fn skill_rule(&self, server: &str, name: &str) -> Option<String> {
        let config = self.config.project.server(server)?;
        config
            .skills
            .refusal(name)
            .map(|rule| rule.replacen("tools", "skills", 1))
    }

    /// `Ok` when `agent` (or the daemon, `None`) may load skill `name` of `server`.
    pub(super) fn check_skill(
        &self,
        agent: Option<&str>,
        server: &str,
        name: &str,
    ) -> Result<(), Error> {
        if let Some(rule) = self.skill_rule(server, name) {
            return Err(Error::SkillNotGranted {
                agent: None,
                server: server.to_owned(),
                skill: name.to_owned(),
                why: format!(
                    "the project's `{rule}` (mcp.{server}.{} in project.yaml) keeps it out",
                    rule.split(':').next().unwrap_or(&rule)
                ),
            });
        }
        let Some(agent) = agent else {
            return Ok(());
        };
        let full = format!("mcp.{server}.{name}");
        let decided = self
            .config
            .project
            .agents
            .skills_for(agent)
            .and_then(|g| grants::resolve(g, &full));
        // A dotted key covers the names below it (`mcp.s.notes` covers `mcp.s.notes.x`): right
        // for a server's key, wrong inside a skill's name, which is one word. A key that
        // reaches into the name grants that name only, never a skill named `notes.x`.
        let server_key = format!("mcp.{server}");
        if let Some(g) = decided.filter(|g| {
            g.enabled
                && matches!(g.kind, GrantPattern::Name)
                && g.pattern != full
                && g.pattern.len() > server_key.len()
        }) {
            return Err(Error::SkillNotGranted {
                agent: Some(agent.to_owned()),
                server: server.to_owned(),
                skill: name.to_owned(),
                why: format!(
                    "its grant key `{}` names another skill: a skill's name is matched whole",
                    g.pattern
                ),
            });
        }
        if decided.is_some_and(|g| g.enabled) {
            Ok(())
        } else {
            Err(Error::SkillNotGranted {
                agent: Some(agent.to_owned()),
                server: server.to_owned(),
                skill: name.to_owned(),
                why: if self.config.project.agents.skills_for(agent).is_some() {
                    format!("no key of its `skills:` grants enables `{full}`")
                } else {
                    "it has no `skills:` grants in project.yaml, which grants none".to_owned()
                },
            })
        }
    }

    /// The skills of `server` that `agent` may load: those [`skills`](Self::skills) lists that
    /// its `skills:` grants enable.
    ///
    /// # Errors
    /// As [`skills`](Self::skills).
    pub async fn skills_for(&self, agent: &str, server: &str) -> Result<Arc<[SkillEntry]>, Error> {
        let listed = self.skills(server).await?;
        Ok(listed
            .iter()
            .filter(|s| self.check_skill(Some(agent), server, s.name()).is_ok())
            .cloned()
            .collect())
    }

    /// The listed skill `name` names on `server`, once the project's filter and the grants of
    /// `agent` (none for the daemon) allow its listed name; and the client to load it with.
    async fn granted_skill(
        &self,
        agent: Option<&str>,
        server: &str,
        name: &str,
    ) -> Result<(&McpClient, SkillEntry), Error> {
        let client = self.client(server)?;
        let entry = client
            .resolve_skill(name)
            .await
            .map_err(|e| request_error(server, ListSkills::METHOD, e))?;
        self.check_skill(agent, server, entry.name())?;
        Ok((client, entry))
    }

    /// [`load_skill`](Self::load_skill) on behalf of `agent` (`None`: the daemon's).
    pub(super) async fn load_skill_for(
        &self,
        agent: Option<&str>,
        server: &str,
        name: &str,
    ) -> Result<LoadedSkill, Error> {
        let (client, entry) = self.granted_skill(agent, server, name).await?;
        client
            .load_entry(entry)
            .await
            .map_err(|e| request_error(server, ReadResource::METHOD, e))
    }

    /// [`skill_file`](Self::skill_file) on behalf of `agent` (`None`: the daemon's).
    pub(super) async fn skill_file_for(
        &self,
        agent: Option<&str>,
        server: &str,
        name: &str,
        file: &str,
    ) -> Result<SkillContent, Error> {
        let (client, entry) = self.granted_skill(agent, server, name).await?;
        client
            .read_entry_file(entry, file)
            .await
            .map_err(|e| request_error(server, ReadResource::METHOD, e))
    }

    /// [`load_skill`](Self::load_skill) on behalf of `agent`: refused, reading no file, unless
    /// its `skills:` grants enable `mcp.<server>.<listed name>` (the skill named, or the skill
    /// whose listed `SKILL.md` URI was given).
    ///
    /// # Errors
    /// [`Error::SkillNotGranted`], or as [`load_skill`](Self::load_skill).
    pub async fn load_skill_as(
        &self,
        agent: &str,
        server: &str,
        name: &str,
    ) -> Result<LoadedSkill, Error> {
        self.load_skill_for(Some(agent), server, name).await
    }

    /// [`skill_file`](Self::skill_file) on behalf of `agent`, granted as
    /// [`load_skill_as`](Self::load_skill_as).
    ///
    /// # Errors
    /// [`Error::SkillNotGranted`], or as [`skill_file`](Self::skill_file).
    pub async fn skill_file_as(
        &self,
        agent: &str,
        server: &str,
        name: &str,
        file: &str,
    ) -> Result<SkillContent, Error> {
        self.skill_file_for(Some(agent), server, name, file).await
    }
}

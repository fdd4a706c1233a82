//! The rest of the client protocol through the session: resources (listed, read and capped at
//! the server's result cap, subscribed), prompts and completions, by server key, for the
//! daemon and the CLI; and the read an agent makes of a resource a tool result linked or
//! embedded, checked against its grants before any server is contacted.
//!
//! # Who may read a server's resources
//! An agent may read the resources of the server `S` when its `tools:` grants enable at least
//! one of `S`'s tools in the current catalog (`mcp.S.<tool>`, by exact name, dot-boundary
//! prefix or glob, the most specific key deciding, as for calls). A server none of whose tools
//! the agent may call is closed to it, resources included: [`Error::ResourceNotGranted`],
//! and no request is sent. A server that lists no tools is readable by the daemon
//! ([`Session::read_resource`]) only. The `mcp.` namespace stays reserved: nothing here
//! registers a tool.

use serde_json::{Map, Value};

use super::Session;
use crate::client::ErrorKind;
use crate::client::{ClientError, LoadedSkill, McpClient, ServerChange, SkillContent};
use crate::protocol::jsonrpc::METHOD_NOT_FOUND;
use crate::protocol::method::{
    Complete, GetPrompt, ListPrompts, ListResourceTemplates, ListResources, ListSkills,
    Notification, ReadResource, Request, SubscribeResource, UnsubscribeResource,
};
use crate::protocol::skills::SkillEntry;
use crate::protocol::{
    Completion, CompletionRef, GetPromptResult, Prompt, ReadResourceResult, Resource,
    ResourceTemplate,
};
use crate::registry::grants;
use crate::Error;

impl Session {
    /// The running client of `server`.
    ///
    /// # Errors
    /// [`Error::UnknownServer`] for a key the project does not declare (or the session did not
    /// start); [`Error::LoginRequired`] for an OAuth server that needs a login;
    /// [`Error::ServerNotReady`] for a server disabled in `local.toml` or one that could not be
    /// built (a root that does not resolve, a missing token), with its error.
    pub fn client(&self, server: &str) -> Result<&McpClient, Error> {
        let s = self
            .servers
            .get(server)
            .ok_or_else(|| Error::UnknownServer {
                server: server.to_owned(),
            })?;
        if let Some(client) = &s.client {
            return Ok(client);
        }
        #[cfg(feature = "oauth")]
        if s.oauth.as_ref().is_some_and(|o| o.needs_login()) {
            return Err(Error::LoginRequired {
                server: server.to_owned(),
            });
        }
        let status = self.status().into_iter().find(|st| st.server == server);
        Err(Error::ServerNotReady {
            server: server.to_owned(),
            state: status
                .as_ref()
                .map_or_else(|| "failed".to_owned(), |st| st.state.clone()),
            last_error: status.and_then(|st| st.last_error),
        })
    }

    /// The resources and resource templates of `server` (both empty when it does not offer
    /// `resources`).
    ///
    /// # Errors
    /// As [`client`](Self::client); [`Error::Request`] naming the method when a list fails.
    pub async fn resources(
        &self,
        server: &str,
    ) -> Result<(Vec<Resource>, Vec<ResourceTemplate>), Error> {
        let client = self.client(server)?;
        let resources = client
            .list_resources()
            .await
            .map_err(|e| request_error(server, ListResources::METHOD, e))?;
        // A server that offers resources but no templates may refuse the list: it has none.
        let templates = match client.list_resource_templates().await {
            Err(e) if e.code() == Some(METHOD_NOT_FOUND) && e.kind() == ErrorKind::JsonRpc => {
                Vec::new()
            }
            listed => {
                listed.map_err(|e| request_error(server, ListResourceTemplates::METHOD, e))?
            }
        };
        Ok((resources, templates))
    }

    /// Reads the resource `uri` of `server`, capped at the result cap (`result_max_bytes`):
    /// text cut with the marker and `truncated` set, a blob over the cap refused whole (see
    /// [`ReadResourceResult::cap`]). No grant is checked: this is the daemon's (or the
    /// operator's) read; an agent's goes through [`read_resource_as`](Self::read_resource_as).
    ///
    /// # Errors
    /// As [`client`](Self::client); [`Error::Request`] when the read fails;
    /// [`Error::ReadTooLarge`] for blobs over the cap.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, Error> {
        let client = self.client(server)?;
        let mut read = client
            .read_resource(uri)
            .await
            .map_err(|e| request_error(server, ReadResource::METHOD, e))?;
        let cap = self.config.daemon.result_max_bytes;
        read.cap(cap).map_err(|source| Error::ReadTooLarge {
            server: server.to_owned(),
            source,
        })?;
        Ok(read)
    }

    /// Reads, for `agent`, the resource `uri` of `server`: what a tool result of that server
    /// linked (`resource_link`) or embedded (`resource`), read back. Checked against the agent's
    /// grants first (see [Who may read a server's resources](Session#who-may-read-a-servers-resources)); then as
    /// [`read_resource`](Self::read_resource).
    ///
    /// # Errors
    /// [`Error::UnknownAgent`]; [`Error::ResourceNotGranted`] (no server contacted); as
    /// [`read_resource`](Self::read_resource).
    pub async fn read_resource_as(
        &self,
        agent: &str,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, Error> {
        let granted = self.grants(agent)?;
        // The catalog's keys are the tools' full names, `mcp.<server>.<tool>`.
        let may_read = self
            .registry
            .server_catalog(server)
            .is_some_and(|c| c.tools.keys().any(|name| grants::is_granted(granted, name)));
        if !may_read {
            return Err(Error::ResourceNotGranted {
                agent: agent.to_owned(),
                server: server.to_owned(),
                uri: uri.to_owned(),
            });
        }
        self.read_resource(server, uri).await
    }

    /// Subscribes to the updates of the resource `uri` of `server`; they arrive on
    /// [`changes`](Self::changes). Kept across the server's restarts.
    ///
    /// # Errors
    /// As [`client`](Self::client); [`Error::Request`] when the server does not offer
    /// subscriptions or refuses.
    pub async fn subscribe_resource(&self, server: &str, uri: &str) -> Result<(), Error> {
        self.client(server)?
            .subscribe_resource(uri)
            .await
            .map_err(|e| request_error(server, SubscribeResource::METHOD, e))
    }

    /// Ends the subscription to `uri` of `server`.
    ///
    /// # Errors
    /// As [`subscribe_resource`](Self::subscribe_resource).
    pub async fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<(), Error> {
        self.client(server)?
            .unsubscribe_resource(uri)
            .await
            .map_err(|e| request_error(server, UnsubscribeResource::METHOD, e))
    }

    /// The changes `server` announces: updates of subscribed resources, resource and prompt
    /// list changes (see [`McpClient::changes`]).
    ///
    /// # Errors
    /// As [`client`](Self::client).
    pub fn changes(
        &self,
        server: &str,
    ) -> Result<tokio::sync::broadcast::Receiver<ServerChange>, Error> {
        Ok(self.client(server)?.changes())
    }

    /// The prompts of `server` (empty when it does not offer `prompts`).
    ///
    /// # Errors
    /// As [`client`](Self::client); [`Error::Request`] when the list fails.
    pub async fn prompts(&self, server: &str) -> Result<Vec<Prompt>, Error> {
        self.client(server)?
            .list_prompts()
            .await
            .map_err(|e| request_error(server, ListPrompts::METHOD, e))
    }

    /// The prompt `name` of `server` with `arguments` (strings, as the specification has them).
    ///
    /// # Errors
    /// As [`client`](Self::client); [`Error::Request`] when the server refuses (an unknown
    /// prompt, a missing argument) or fails.
    pub async fn prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Option<&Map<String, Value>>,
    ) -> Result<GetPromptResult, Error> {
        self.client(server)?
            .get_prompt(name, arguments)
            .await
            .map_err(|e| request_error(server, GetPrompt::METHOD, e))
    }

    /// The values `server` offers for the argument `argument` of `reference`, typed so far as
    /// `value`, given the arguments already `chosen`.
    ///
    /// # Errors
    /// As [`client`](Self::client); [`Error::Request`] when the server does not offer
    /// `completions`, refuses or fails.
    pub async fn complete(
        &self,
        server: &str,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        chosen: Option<&Map<String, Value>>,
    ) -> Result<Completion, Error> {
        self.client(server)?
            .complete(reference, argument, value, chosen)
            .await
            .map_err(|e| request_error(server, Complete::METHOD, e))
    }

    /// The skills `server` lists (SEP-2640; empty when it does not declare the extension), less
    /// those the project's `skills:` filter of the server keeps out. No skill file is read.
    ///
    /// # Errors
    /// As [`client`](Self::client); [`Error::Request`] when the list fails.
    pub async fn skills(&self, server: &str) -> Result<std::sync::Arc<[SkillEntry]>, Error> {
        let listed = self
            .client(server)?
            .list_skills()
            .await
            .map_err(|e| request_error(server, ListSkills::METHOD, e))?;
        // The project's `skills:` filter of the server: what it keeps out is not listed (the
        // cached list is handed on as it is when the filter keeps everything).
        let kept: Vec<&SkillEntry> = listed
            .iter()
            .filter(|s| self.skill_rule(server, s.name()).is_none())
            .collect();
        if kept.len() == listed.len() {
            return Ok(listed);
        }
        Ok(kept.into_iter().cloned().collect())
    }

    /// The skill `name` of `server` (its listed name, or its listed `SKILL.md` URI), loaded:
    /// resolved against the listing ([`McpClient::resolve_skill`]), judged by its listed name
    /// against the server's `skills:` filter, then its `SKILL.md` read and verified (size,
    /// digest, frontmatter) against the listing ([`McpClient::load_skill`]).
    ///
    /// # Errors
    /// [`Error::SkillNotGranted`] for a skill the server's `skills:` filter keeps out, by name
    /// or by URI (no file is read); as [`client`](Self::client); [`Error::Request`] whose
    /// source is [`ErrorKind::NotOffered`] for a skill the server does not list, or
    /// [`ErrorKind::SkillRefused`] (naming the check) for a skill that fails verification.
    pub async fn load_skill(&self, server: &str, name: &str) -> Result<LoadedSkill, Error> {
        self.load_skill_for(None, server, name).await
    }

    /// The file `file` of the skill `name` of `server`, read and verified after the skill was
    /// resolved, judged and loaded as by [`load_skill`](Self::load_skill)
    /// ([`McpClient::read_skill_file`]).
    ///
    /// # Errors
    /// As [`load_skill`](Self::load_skill).
    pub async fn skill_file(
        &self,
        server: &str,
        name: &str,
        file: &str,
    ) -> Result<SkillContent, Error> {
        self.skill_file_for(None, server, name, file).await
    }

    /// Sends a request of kind `R` with `params` to `server` and returns its result: the
    /// generic entry ([`McpClient::request`]), for a method no helper here covers (an
    /// extension's, with a [`Request`] type of the embedder's own). No grant is checked: this is
    /// the daemon's (or the operator's) request.
    ///
    /// # Errors
    /// As [`client`](Self::client); [`Error::Request`] naming the method when the request
    /// fails.
    pub async fn request<R: Request>(
        &self,
        server: &str,
        params: R::Params,
    ) -> Result<R::Result, Error> {
        self.client(server)?
            .request::<R>(params)
            .await
            .map_err(|e| request_error(server, R::METHOD, e))
    }

    /// Sends the notification `N` with `params` to `server` ([`McpClient::notify`]).
    ///
    /// # Errors
    /// As [`client`](Self::client); [`Error::Request`] naming the method when the server could
    /// not be started.
    pub async fn notify<N: Notification>(
        &self,
        server: &str,
        params: Map<String, Value>,
    ) -> Result<(), Error> {
        self.client(server)?
            .notify::<N>(params)
            .await
            .map_err(|e| request_error(server, N::METHOD, e))
    }
}

/// The session's error for a failed request of `method` to `server`.
pub(super) fn request_error(server: &str, method: &'static str, source: ClientError) -> Error {
    Error::Request {
        server: server.to_owned(),
        method,
        source: Box::new(source),
    }
}

//! The server's prompts and completions as the client reads them: `prompts/list` (through
//! [`pages`](super::pages)), `prompts/get`, `completion/complete` for a prompt's arguments and a
//! resource template's variables; `notifications/prompts/list_changed` reaches
//! [`McpClient::changes`].

use std::sync::Arc;

use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use super::error::ClientError;
use super::resources::Subscriptions;
use super::router::Router;
use super::{McpClient, ServerChange};
use crate::protocol::method::{Complete, GetPrompt, PromptsListChanged, Request as _};
use crate::protocol::prompts::ListPromptsPage;
use crate::protocol::{Completion, CompletionRef, GetPromptResult, Prompt};

/// Registers the prompts feature: a change of the prompt list is announced on `changes`.
pub(super) fn register(router: &mut Router, changes: &Arc<Subscriptions>) {
    let changes = Arc::clone(changes);
    router.notification::<PromptsListChanged, IgnoredAny>(move |session, _| {
        tracing::debug!(server = &*session.server, "server says its prompts changed");
        // No receiver is no error: nobody listens yet.
        let _ = changes.changes.send(ServerChange::PromptsListChanged);
    });
}

impl McpClient {
    /// Lists the server's prompts, following `nextCursor` to the end (bounded and guarded as
    /// [`list_tools`](Self::list_tools)). Empty when the server does not offer `prompts`.
    ///
    /// # Errors
    /// [`ErrorKind::Pagination`](crate::client::ErrorKind::Pagination), [`ErrorKind::RequestTimeout`](crate::client::ErrorKind::RequestTimeout), or any error of the
    /// session.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        let session = self.shared.session().await?;
        if !self.offers("prompts") {
            return Ok(Vec::new());
        }
        self.follow_pages::<ListPromptsPage>(&session, |_| {}).await
    }

    /// Gets the prompt `name` with `arguments` (`prompts/get`; the specification's arguments
    /// are strings), bounded by the request timeout (each round of a 2026-07-28
    /// `input_required` exchange, see [`mrtr`](super::mrtr)).
    ///
    /// # Errors
    /// [`ErrorKind::RequestTimeout`](crate::client::ErrorKind::RequestTimeout); [`ErrorKind::JsonRpc`](crate::client::ErrorKind::JsonRpc) when the server refuses (an
    /// unknown prompt, a missing required argument); any error of the session.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<&Map<String, Value>>,
    ) -> Result<GetPromptResult, ClientError> {
        let session = self.shared.session().await?;
        let limit = self.shared.options.request_timeout;
        super::mrtr::with_input::<GetPrompt, _>(&session, limit, |retry| {
            session.get_prompt(name, arguments, retry)
        })
        .await
    }

    /// Completes the argument `argument` of `reference` (a prompt's argument, or a resource
    /// template's variable) typed so far as `value` (`completion/complete`); `chosen` are the
    /// arguments already chosen (`context.arguments`), which a server may use to narrow the
    /// values. Bounded by the request timeout.
    ///
    /// # Errors
    /// [`ErrorKind::NotOffered`](crate::client::ErrorKind::NotOffered) when the server does not offer `completions` (nothing is
    /// sent; a 2024-11-05 server, which cannot declare it, is asked); [`ErrorKind::RequestTimeout`](crate::client::ErrorKind::RequestTimeout); [`ErrorKind::JsonRpc`](crate::client::ErrorKind::JsonRpc); any error of the
    /// session.
    pub async fn complete(
        &self,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        chosen: Option<&Map<String, Value>>,
    ) -> Result<Completion, ClientError> {
        let session = self.shared.session().await?;
        // `completions` came with 2025-03-26: a 2024-11-05 server cannot declare it, and its
        // own answer (-32601 or values) says whether it completes.
        let predates = self.protocol_version().as_deref() == Some("2024-11-05");
        if !predates && !self.offers("completions") {
            let name = match reference {
                CompletionRef::Prompt { name } => name,
                CompletionRef::ResourceTemplate { uri } => uri,
            };
            return Err(self.not_offered(Complete::METHOD, name, "completions"));
        }
        let (rx, guard) = session.complete(reference, argument, value, chosen)?;
        let answer = guard
            .answer_within(rx, self.shared.options.request_timeout)
            .await?;
        Ok(answer.completion)
    }
}

//! The server's prompts and completions as the client reads them: `prompts/list` (through
//! [`pages`](super::pages)), `prompts/get`, `completion/complete` for a prompt's arguments and a
//! resource template's variables, and `logging/setLevel`, sent at each start when the operator
//! set a level and the server offers `logging`.

use crate::protocol::method::{Complete, GetPrompt, Request as _};
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use super::error::ClientError;
use super::rpc::RpcSession;
use super::McpClient;
use crate::protocol::prompts::ListPromptsPage;
use crate::protocol::{Completion, CompletionRef, GetPromptResult, LoggingLevel, Prompt};

impl McpClient {
    /// Lists the server's prompts, following `nextCursor` to the end (bounded and guarded as
    /// [`list_tools`](Self::list_tools)). Empty when the server does not offer `prompts`.
    ///
    /// # Errors
    /// [`ClientError::Pagination`], [`ClientError::RequestTimeout`], or any error of the
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
    /// [`ClientError::RequestTimeout`]; [`ClientError::JsonRpc`] when the server refuses (an
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
    /// [`ClientError::NotOffered`] when the server does not offer `completions` (nothing is
    /// sent; a 2024-11-05 server, which cannot declare it, is asked); [`ClientError::RequestTimeout`]; [`ClientError::JsonRpc`]; any error of the
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

/// Sends `logging/setLevel` with `level` on a session that just started, when its server
/// offers `logging`; bounded by `limit`. A failure is logged at WARN and ends nothing: the
/// server keeps its own level.
pub(super) async fn set_log_level(
    session: &std::sync::Arc<RpcSession>,
    level: LoggingLevel,
    limit: std::time::Duration,
) {
    let sent = match session.set_log_level(level) {
        Ok((rx, guard)) => guard.answer_within::<IgnoredAny>(rx, limit).await.map(drop),
        Err(e) => Err(e),
    };
    match sent {
        Ok(()) => tracing::debug!(
            server = &*session.server,
            ?level,
            "logging/setLevel answered"
        ),
        Err(e) => tracing::warn!(
            server = &*session.server,
            error = %e,
            "logging/setLevel failed; the server logs at its own level (`log_level` in local.toml)"
        ),
    }
}

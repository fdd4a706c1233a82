//! Every JSON-RPC method the client speaks, typed: one unit struct per request kind, per
//! notification and per request a server sends, as `lsp_types::request` does it. A method's
//! name exists once, here, as its type's `METHOD`; the generic entry sends a request as
//! `request::<R>(R::Params)` and gets back `R::Result`, and the session dispatches what arrives
//! by these constants.
//!
//! # Example
//! ```
//! use kaged_mcp::protocol::method::{CallTool, Notification, Request, ToolsListChanged};
//!
//! assert_eq!(CallTool::METHOD, "tools/call");
//! assert_eq!(ToolsListChanged::METHOD, "notifications/tools/list_changed");
//! fn result_of<R: Request>(_: &str) -> std::any::TypeId where R::Result: 'static {
//!     std::any::TypeId::of::<R::Result>()
//! }
//! assert_eq!(result_of::<CallTool>("x"), std::any::TypeId::of::<kaged_mcp::protocol::CallAnswer>());
//! ```

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Serialize;
use serde_json::{Map, Value};

use super::params::{
    CallToolRequestParams, CompleteRequestParams, GetPromptRequestParams, PaginatedParams,
    ResourceRequestParams, SetLevelRequestParams, TaskRequestParams, UpdateTaskRequestParams,
};
use super::prompts::{CompleteResult, GetPromptResult, ListPromptsPage};
use super::resources::{ListResourcesPage, ListTemplatesPage, ReadResourceResult};
use super::skills::{GetSkillResult, ListSkillsResult};
use super::tasks::TaskState;
use super::{CallAnswer, DiscoverResult, InitializeResult, ListToolsResult};

/// A request kind: its method, what a caller gives as its `params`, and what its `result`
/// decodes into.
pub trait Request {
    /// The JSON-RPC method, e.g. `tools/call`.
    const METHOD: &'static str;
    /// What a caller gives as its `params` ([`super::params`]): it serializes to a JSON object
    /// (or, `()`, to nothing), into which the session adds the era's `_meta`. A kind of an
    /// embedder's own may take `Map<String, Value>`.
    type Params: Serialize + Send + Sync;
    /// What the `result` of its answer decodes into (for a request a 2026-07-28 server may
    /// answer `input_required`, the complete answer's result).
    type Result: DeserializeOwned + Send + 'static;
}

/// A notification kind (either direction): its method.
pub trait Notification {
    /// The JSON-RPC method, e.g. `notifications/progress`.
    const METHOD: &'static str;
}

/// A request a server sends to the client: its method (the client answers it through its
/// server→client request stack, [`crate::client::server_requests`]).
pub trait ServerRequestKind {
    /// The JSON-RPC method, e.g. `roots/list`.
    const METHOD: &'static str;
}

macro_rules! requests {
    ($($(#[$doc:meta])* $name:ident = $method:literal ($params:ty) => $result:ty;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name;
        impl Request for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
            type Result = $result;
        }
    )*};
}

macro_rules! notifications {
    ($trait:ident: $($(#[$doc:meta])* $name:ident = $method:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name;
        impl $trait for $name {
            const METHOD: &'static str = $method;
        }
    )*};
}

requests! {
    /// `initialize`: the legacy handshake (never cancelled).
    Initialize = "initialize" (Map<String, Value>) => InitializeResult;
    /// `ping`, sent by the client.
    Ping = "ping" (()) => IgnoredAny;
    /// `server/discover`: the era probe, and a 2026-07-28 session's first request.
    Discover = "server/discover" (()) => DiscoverResult;
    /// `subscriptions/listen` (2026-07-28): a stream of the notifications it names; its answer
    /// ends the stream.
    Listen = "subscriptions/listen" (Map<String, Value>) => IgnoredAny;
    /// `tools/list`, one page.
    ListTools = "tools/list" (PaginatedParams) => ListToolsResult;
    /// `tools/call` (the hot path writes its own parameters).
    CallTool = "tools/call" (CallToolRequestParams) => CallAnswer;
    /// `resources/list`, one page.
    ListResources = "resources/list" (PaginatedParams) => ListResourcesPage;
    /// `resources/templates/list`, one page.
    ListResourceTemplates = "resources/templates/list" (PaginatedParams) => ListTemplatesPage;
    /// `resources/read`.
    ReadResource = "resources/read" (ResourceRequestParams) => ReadResourceResult;
    /// `resources/subscribe` (legacy; 2026-07-28 subscribes through [`Listen`]).
    SubscribeResource = "resources/subscribe" (ResourceRequestParams) => IgnoredAny;
    /// `resources/unsubscribe` (legacy).
    UnsubscribeResource = "resources/unsubscribe" (ResourceRequestParams) => IgnoredAny;
    /// `prompts/list`, one page.
    ListPrompts = "prompts/list" (PaginatedParams) => ListPromptsPage;
    /// `prompts/get`.
    GetPrompt = "prompts/get" (GetPromptRequestParams) => GetPromptResult;
    /// `completion/complete`.
    Complete = "completion/complete" (CompleteRequestParams) => CompleteResult;
    /// `logging/setLevel` (legacy; 2026-07-28 carries the level in every request's `_meta`).
    SetLevel = "logging/setLevel" (SetLevelRequestParams) => IgnoredAny;
    /// `tasks/get`: a task's state.
    GetTask = "tasks/get" (TaskRequestParams) => TaskState;
    /// `tasks/result` (2025-11-25): the result of a finished task.
    TaskResult = "tasks/result" (TaskRequestParams) => CallAnswer;
    /// `tasks/update` (2026-07-28): answers to a task's input requests.
    UpdateTask = "tasks/update" (UpdateTaskRequestParams) => IgnoredAny;
    /// `tasks/cancel`.
    CancelTask = "tasks/cancel" (TaskRequestParams) => IgnoredAny;
    /// `skills/list` (the `io.modelcontextprotocol/skills` extension, SEP-2640).
    ListSkills = "skills/list" (PaginatedParams) => ListSkillsResult;
    /// `skills/get` (SEP-2640): the entry of one skill by the URI of its `SKILL.md`, listed or
    /// not.
    GetSkill = "skills/get" (ResourceRequestParams) => GetSkillResult;
}

notifications! { Notification:
    /// `notifications/initialized`, sent once after a successful `initialize`.
    Initialized = "notifications/initialized";
    /// `notifications/cancelled`, sent when a caller stops waiting for a request.
    Cancelled = "notifications/cancelled";
    /// `notifications/progress`.
    Progress = "notifications/progress";
    /// `notifications/message`, a log message from the server.
    LogMessage = "notifications/message";
    /// `notifications/tools/list_changed`.
    ToolsListChanged = "notifications/tools/list_changed";
    /// `notifications/resources/updated`: a subscribed resource changed.
    ResourceUpdated = "notifications/resources/updated";
    /// `notifications/resources/list_changed`.
    ResourcesListChanged = "notifications/resources/list_changed";
    /// `notifications/prompts/list_changed`.
    PromptsListChanged = "notifications/prompts/list_changed";
    /// `notifications/subscriptions/acknowledged` (2026-07-28): the first message of a
    /// `subscriptions/listen` stream.
    SubscriptionsAcknowledged = "notifications/subscriptions/acknowledged";
    /// `notifications/tasks/status` (2025-11-25): a task's new state.
    TaskStatus = "notifications/tasks/status";
    /// `notifications/tasks` (2026-07-28): a task's new state.
    TasksChanged = "notifications/tasks";
}

notifications! { ServerRequestKind:
    /// `ping` from the server, answered `{}`.
    ServerPing = "ping";
    /// `sampling/createMessage`, always refused (ADR-0043 §5).
    CreateMessage = "sampling/createMessage";
    /// `roots/list`: answered with the project's roots when it declares any, otherwise
    /// "method not found".
    ListRoots = "roots/list";
    /// `elicitation/create`: passed to the elicitation handler when one is plugged in
    /// ([`crate::client::elicitation`]), otherwise answered "method not found".
    CreateElicitation = "elicitation/create";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_name_is_distinct_within_its_kind() {
        let requests = [
            Initialize::METHOD,
            Ping::METHOD,
            Discover::METHOD,
            Listen::METHOD,
            ListTools::METHOD,
            CallTool::METHOD,
            ListResources::METHOD,
            ListResourceTemplates::METHOD,
            ReadResource::METHOD,
            SubscribeResource::METHOD,
            UnsubscribeResource::METHOD,
            ListPrompts::METHOD,
            GetPrompt::METHOD,
            Complete::METHOD,
            SetLevel::METHOD,
            GetTask::METHOD,
            TaskResult::METHOD,
            UpdateTask::METHOD,
            CancelTask::METHOD,
            ListSkills::METHOD,
            GetSkill::METHOD,
        ];
        let mut seen = std::collections::HashSet::new();
        for m in requests {
            assert!(seen.insert(m), "{m} twice");
            assert!(!m.starts_with("notifications/"), "{m}");
        }
    }
}

//! Lists followed page by page (`tools/list`, `resources/list`, `resources/templates/list`,
//! `prompts/list`): each page bounded by the request timeout, `nextCursor` followed to the end,
//! and the same guard for every list: a cursor that comes back twice, more than
//! [`MAX_PAGES`] pages or more than [`MAX_ITEMS`] items end it with
//! [`ErrorKind::Pagination`](crate::client::ErrorKind::Pagination).

use crate::client::Kind;
use crate::protocol::method::{
    ListPrompts, ListResourceTemplates, ListResources, ListTools, Request,
};
use std::collections::HashSet;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::error::ClientError;
use super::rpc::RpcSession;
use super::McpClient;
use crate::protocol::prompts::{ListPromptsPage, Prompt};
use crate::protocol::resources::{
    ListResourcesPage, ListTemplatesPage, Resource, ResourceTemplate,
};
use crate::protocol::{ListToolsResult, ToolInfo};

/// The most pages followed of any list.
pub const MAX_PAGES: usize = 100;

/// The most items accepted from one list of one server.
pub const MAX_ITEMS: usize = 10_000;

/// One page of a list: its items and the cursor of the next page.
pub(super) trait Page: DeserializeOwned + Send + 'static {
    /// The request that lists it.
    type Request: Request<Result = Self>;
    /// What the list holds.
    type Item;
    /// What its items are called, in an error (`tools`, `resources`, …).
    const NOUN: &'static str;
    /// The page's items and `nextCursor`.
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>);
}

impl Page for ListToolsResult {
    type Item = ToolInfo;
    type Request = ListTools;
    const NOUN: &'static str = "tools";
    fn into_parts(self) -> (Vec<ToolInfo>, Option<String>) {
        (self.tools, self.next_cursor)
    }
}

impl Page for ListResourcesPage {
    type Item = Resource;
    type Request = ListResources;
    const NOUN: &'static str = "resources";
    fn into_parts(self) -> (Vec<Resource>, Option<String>) {
        (self.resources, self.next_cursor)
    }
}

impl Page for ListTemplatesPage {
    type Item = ResourceTemplate;
    type Request = ListResourceTemplates;
    const NOUN: &'static str = "resource templates";
    fn into_parts(self) -> (Vec<ResourceTemplate>, Option<String>) {
        (self.resource_templates, self.next_cursor)
    }
}

impl Page for ListPromptsPage {
    type Item = Prompt;
    type Request = ListPrompts;
    const NOUN: &'static str = "prompts";
    fn into_parts(self) -> (Vec<Prompt>, Option<String>) {
        (self.prompts, self.next_cursor)
    }
}

impl McpClient {
    /// Follows the list `P` on `session` to its end (see the [module docs](self)); `on_page`
    /// sees each page before its items are taken.
    pub(super) async fn follow_pages<P: Page>(
        &self,
        session: &Arc<RpcSession>,
        mut on_page: impl FnMut(&P),
    ) -> Result<Vec<P::Item>, ClientError> {
        let pagination = |detail: String| {
            ClientError::of(
                &self.shared.server,
                Kind::Pagination {
                    method: P::Request::METHOD,
                    detail,
                },
            )
        };
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        let limit = self.shared.options.request_timeout;
        for page in 1..=MAX_PAGES {
            let (rx, guard) = session.list_page::<P::Request>(cursor.as_deref())?;
            let result = guard.answer_within(rx, limit).await?;
            on_page(&result);
            let (page_items, next) = result.into_parts();
            items.extend(page_items);
            if items.len() > MAX_ITEMS {
                return Err(pagination(format!("more than {MAX_ITEMS} {}", P::NOUN)));
            }
            match next {
                Some(next) if !next.is_empty() => {
                    if !seen.insert(next.clone()) {
                        return Err(pagination(format!(
                            "the cursor {next:?} came back twice (page {page})"
                        )));
                    }
                    cursor = Some(next);
                }
                _ => return Ok(items),
            }
        }
        Err(pagination(format!("more than {MAX_PAGES} pages")))
    }
}

//! The server's resources as the client reads them: `resources/list` and
//! `resources/templates/list` (through [`pages`](super::pages)), `resources/read`, and
//! subscriptions to a resource's updates, kept across restarts: `resources/subscribe` and
//! `resources/unsubscribe` in the legacy era, one `subscriptions/listen` stream naming every
//! subscribed URI in the 2026-07-28 era ([`listen`](super::listen)). What the server says
//! changed reaches the embedder through [`McpClient::changes`].

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::broadcast;

use super::error::ClientError;
use super::listen::ListenState;
use super::router::Router;
use super::rpc::RpcSession;
use super::McpClient;
use crate::client::Kind;
use crate::protocol::method::{
    Listen, ReadResource, Request, ResourceUpdated, ResourcesListChanged, SubscribeResource,
    UnsubscribeResource,
};
use crate::protocol::resources::{ListResourcesPage, ListTemplatesPage, ResourceUpdatedParams};
use crate::protocol::{ReadResourceResult, Resource, ResourceTemplate};
use crate::transport::text::redact_uri;

/// How many changes a receiver of [`McpClient::changes`] may fall behind before it misses
/// some (it then reads [`broadcast::error::RecvError::Lagged`]).
pub const CHANGES_CAPACITY: usize = 256;

/// A change a server announced: a subscribed resource was updated, or one of its lists
/// changed. See [`McpClient::changes`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerChange {
    /// `notifications/resources/updated`: the resource at `uri` changed (read it again).
    ResourceUpdated {
        /// The resource's URI, as the server sent it.
        uri: String,
    },
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
}

/// Registers the resources feature: an update of a subscribed resource (or of a sub-resource
/// of one) and a change of the resource list are announced on `subscriptions`' changes.
pub(super) fn register(router: &mut Router, subscriptions: &Arc<Subscriptions>) {
    let updates = Arc::clone(subscriptions);
    router.notification::<ResourceUpdated, ResourceUpdatedParams>(move |session, updated| {
        if updates.covers(&updated.uri) {
            tracing::debug!(server = &*session.server, uri = %redact_uri(&updated.uri), "server says a resource changed");
            // No receiver is no error: nobody listens yet.
            let _ = updates
                .changes
                .send(ServerChange::ResourceUpdated { uri: updated.uri });
        } else {
            tracing::debug!(
                server = &*session.server,
                uri = %redact_uri(&updated.uri),
                "update of a resource not subscribed to; ignored"
            );
        }
    });
    let lists = Arc::clone(subscriptions);
    router.notification::<ResourcesListChanged, serde::de::IgnoredAny>(move |session, _| {
        tracing::debug!(
            server = &*session.server,
            "server says its resources changed"
        );
        let _ = lists.changes.send(ServerChange::ResourcesListChanged);
    });
}

/// The resources a client is subscribed to, and the sender of its changes.
#[derive(Debug)]
pub(crate) struct Subscriptions {
    /// The subscribed URIs, sent again to every new session.
    uris: std::sync::Mutex<BTreeSet<String>>,
    /// Bumped (under the [`uris`](Self::uris) lock) when the set changes: a modern session's
    /// resource stream is opened again with the new set.
    pub(crate) generation: tokio::sync::watch::Sender<u64>,
    /// What a modern resource stream made of the set's latest generation it settled.
    pub(crate) settled: tokio::sync::watch::Sender<Settled>,
    /// Where every session sends the changes it hears.
    pub(crate) changes: broadcast::Sender<ServerChange>,
}

/// How a modern resource stream settled a generation of the subscribed set.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settled {
    /// The generation.
    pub(crate) generation: u64,
    /// The URIs the server's acknowledgement names (`None`: the stream ended with the set
    /// empty, or was refused).
    pub(crate) honored: Option<Arc<BTreeSet<String>>>,
    /// Why the stream was refused.
    pub(crate) refused: Option<ClientError>,
}

impl Default for Subscriptions {
    fn default() -> Self {
        Self {
            uris: std::sync::Mutex::default(),
            generation: tokio::sync::watch::Sender::new(0),
            settled: tokio::sync::watch::Sender::new(Settled::default()),
            changes: broadcast::Sender::new(CHANGES_CAPACITY),
        }
    }
}

impl Subscriptions {
    /// The subscribed URIs.
    pub(crate) fn uris(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }

    /// Whether an update of `uri` is one the client asked for: `uri` is subscribed, or is a
    /// sub-resource of one that is (the specification lets a server say so), so an update
    /// that overtook an unsubscription, or one nobody asked for, reaches nobody.
    pub(crate) fn covers(&self, uri: &str) -> bool {
        self.lock().iter().any(|s| {
            uri == s
                || uri
                    .strip_prefix(s.as_str())
                    .is_some_and(|rest| s.ends_with('/') || rest.starts_with('/'))
        })
    }

    /// Tells the embedder that every subscribed resource may have changed (a gap in which an
    /// update could have been missed: a restart, a stream cut and opened again).
    pub(crate) fn announce_all(&self) {
        for uri in self.uris() {
            let _ = self.changes.send(ServerChange::ResourceUpdated { uri });
        }
    }

    /// Changes the set with `change` (`true` when it changed it) and bumps the generation under
    /// the same lock; returns the new generation, or `None` when nothing changed.
    fn change(&self, change: impl FnOnce(&mut BTreeSet<String>) -> bool) -> Option<u64> {
        let mut set = self.lock();
        if !change(&mut set) {
            return None;
        }
        let mut generation = 0;
        self.generation.send_modify(|g| {
            *g = g.wrapping_add(1);
            generation = *g;
        });
        drop(set);
        Some(generation)
    }

    /// Whether a resource stream loop that saw generation `seen` may end: only when the set
    /// has not changed since, and then `running` is lowered under the set's lock, so a
    /// subscription either sees it lowered (and starts a loop) or its change is seen here.
    pub(crate) fn may_end(&self, running: &std::sync::atomic::AtomicBool, seen: u64) -> bool {
        let _set = self.lock();
        if *self.generation.borrow() != seen {
            return false;
        }
        running.store(false, std::sync::atomic::Ordering::Release);
        true
    }

    /// A modern resource stream settled the set's `generation` (see [`Settled`]).
    pub(crate) fn settle(
        &self,
        generation: u64,
        honored: Option<BTreeSet<String>>,
        refused: Option<ClientError>,
    ) {
        self.settled.send_if_modified(|s| {
            if s.generation > generation {
                return false;
            }
            *s = Settled {
                generation,
                honored: honored.map(Arc::new),
                refused,
            };
            true
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.uris
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl McpClient {
    /// Lists the server's resources, following `nextCursor` to the end (each page bounded by
    /// [`ClientOptions::request_timeout`](super::ClientOptions::request_timeout), the
    /// pagination guarded as [`list_tools`](Self::list_tools)'s). Empty when the server does not
    /// offer `resources`.
    ///
    /// # Errors
    /// [`ErrorKind::Pagination`](crate::client::ErrorKind::Pagination), [`ErrorKind::RequestTimeout`](crate::client::ErrorKind::RequestTimeout), or any error of the
    /// session.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        let session = self.shared.session().await?;
        if !self.offers("resources") {
            return Ok(Vec::new());
        }
        self.follow_pages::<ListResourcesPage>(&session, |_| {})
            .await
    }

    /// Lists the server's resource templates, as [`list_resources`](Self::list_resources)
    /// lists its resources.
    ///
    /// # Errors
    /// As [`list_resources`](Self::list_resources).
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        let session = self.shared.session().await?;
        if !self.offers("resources") {
            return Ok(Vec::new());
        }
        self.follow_pages::<ListTemplatesPage>(&session, |_| {})
            .await
    }

    /// Reads the resource at `uri` (`resources/read`), bounded by the request timeout (each
    /// round of a 2026-07-28 `input_required` exchange, see [`mrtr`](super::mrtr)). The
    /// contents come as the server sent them: capping them is the caller's (the
    /// [`Session`](crate::Session)'s read caps them at the daemon's `result_max_bytes`, see
    /// [`ReadResourceResult::cap`]).
    ///
    /// # Errors
    /// [`ErrorKind::RequestTimeout`](crate::client::ErrorKind::RequestTimeout); [`ErrorKind::JsonRpc`](crate::client::ErrorKind::JsonRpc) when the server refuses (an
    /// unknown URI is -32002 in the specification); any error of the session.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        let session = self.shared.session().await?;
        let limit = self.shared.options.request_timeout;
        super::mrtr::with_input::<ReadResource, _>(&session, limit, |retry| {
            session.read_resource(uri, retry)
        })
        .await
    }

    /// Subscribes to the updates of the resource at `uri`: each one reaches
    /// [`changes`](Self::changes) as [`ServerChange::ResourceUpdated`]. The subscription is the
    /// client's: it is sent again to every new session (after a restart). In the legacy era it
    /// is `resources/subscribe` (the server must offer `resources.subscribe`); in the
    /// 2026-07-28 era the session's resource stream (`subscriptions/listen` with
    /// `resourceSubscriptions`) is opened again with this URI added.
    ///
    /// # Errors
    /// [`ErrorKind::NotOffered`](crate::client::ErrorKind::NotOffered) when the server does not offer resource
    /// subscriptions (nothing is kept); the errors of the request otherwise (the subscription
    /// is kept, and sent again at the next start).
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        let session = self.shared.session().await?;
        if !self.offers_subscriptions() {
            return Err(self.not_offered(SubscribeResource::METHOD, uri, "resources.subscribe"));
        }
        let subscriptions = &self.shared.subscriptions;
        let added = subscriptions.change(|set| set.insert(uri.to_owned()));
        if session.is_modern() {
            // Already subscribed: wait for the set as it is to be settled all the same.
            let generation = added.unwrap_or_else(|| *subscriptions.generation.borrow());
            self.shared.listen_for_resources(&session);
            let settled = self.stream_settled(&session, generation, Some(uri)).await;
            if settled.is_err() && subscriptions.change(|set| set.remove(uri)).is_some() {
                // The other URIs keep a stream (the refused one ended it).
                self.shared.listen_for_resources(&session);
            }
            return settled;
        }
        if added.is_none() {
            return Ok(());
        }
        self.ask_about::<SubscribeResource>(&session, uri)
            .await
            .map(drop)
    }

    /// Waits, within the request timeout, until a modern resource stream has settled the set's
    /// `generation` (or a later one): acknowledged by the server, or ended because the set is
    /// empty. Only then is an update of a URI just added sure to come, and one of a URI just
    /// removed sure not to. With `uri` (a subscription), a stream refused, or acknowledged
    /// without `uri`, fails it.
    async fn stream_settled(
        &self,
        session: &RpcSession,
        generation: u64,
        uri: Option<&str>,
    ) -> Result<(), ClientError> {
        let limit = self.shared.options.request_timeout;
        let mut settled = self.shared.subscriptions.settled.subscribe();
        let waited =
            tokio::time::timeout(limit, settled.wait_for(|s| s.generation >= generation)).await;
        let s = match waited {
            Ok(Ok(s)) => s.clone(),
            // The sender lives as long as the client.
            Ok(Err(_)) => return Ok(()),
            Err(_) => {
                let stream = session
                    .state::<ListenState>()
                    .and_then(ListenState::resource_stream_id);
                return Err(match stream {
                    None => ClientError::of(
                        &self.shared.server,
                        Kind::ConnectionClosed {
                            detail: "no resource subscription stream could be opened in time"
                                .into(),
                        },
                    ),
                    Some(id) => ClientError::new(
                        Arc::clone(&self.shared.server),
                        Some(RpcSession::request_ref(id, Listen::METHOD)),
                        Kind::RequestTimeout { after: limit },
                    ),
                });
            }
        };
        let Some(uri) = uri else {
            return Ok(());
        };
        if let Some(refused) = s.refused {
            return Err(refused);
        }
        match &s.honored {
            Some(honored) if !honored.contains(uri) => Err(self.not_offered(
                Listen::METHOD,
                uri,
                "updates of this resource (its acknowledgement left it out)",
            )),
            _ => Ok(()),
        }
    }

    /// Ends the subscription to `uri` (`resources/unsubscribe` in the legacy era; the
    /// resource stream opened again without it in the 2026-07-28 era). Nothing is sent when the
    /// client was not subscribed, or has no session running (a new one will not be told), and
    /// nothing is started.
    ///
    /// # Errors
    /// The errors of the request (the subscription is forgotten either way).
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        let Some(generation) = self.shared.subscriptions.change(|set| set.remove(uri)) else {
            return Ok(());
        };
        let running = {
            let sup = self.shared.lock();
            sup.session
                .clone()
                .filter(|s| sup.is_ready_with(s) && !s.is_closed())
        };
        let Some(session) = running else {
            return Ok(());
        };
        if session.is_modern() {
            let running = session.state::<ListenState>().is_some_and(|state| {
                state
                    .resource_stream_running
                    .load(std::sync::atomic::Ordering::Acquire)
            });
            if !running {
                return Ok(());
            }
            return self.stream_settled(&session, generation, None).await;
        }
        self.ask_about::<UnsubscribeResource>(&session, uri)
            .await
            .map(drop)
    }

    /// The URIs the client is subscribed to.
    pub fn subscribed_resources(&self) -> Vec<String> {
        self.shared.subscriptions.uris()
    }

    /// A receiver of the changes the server announces ([`ServerChange`]): updates of
    /// subscribed resources and changes of the resource and prompt lists, from every session
    /// of this client. Tool list changes go to [`tools_changed`](Self::tools_changed). A
    /// receiver that falls more than [`CHANGES_CAPACITY`] behind misses the oldest.
    pub fn changes(&self) -> broadcast::Receiver<ServerChange> {
        self.shared.subscriptions.changes.subscribe()
    }

    /// Sends a request `R` about `uri` on `session` and awaits its answer within the request
    /// timeout.
    async fn ask_about<R: Request>(
        &self,
        session: &Arc<RpcSession>,
        uri: &str,
    ) -> Result<R::Result, ClientError> {
        let (rx, guard) = session.about_resource::<R>(uri)?;
        guard
            .answer_within(rx, self.shared.options.request_timeout)
            .await
    }

    /// Whether the server offers resource subscriptions (`resources.subscribe`, in either era:
    /// in 2026-07-28 it says the server honours `resourceSubscriptions` on
    /// `subscriptions/listen`).
    fn offers_subscriptions(&self) -> bool {
        self.shared
            .lock()
            .init
            .as_ref()
            .is_some_and(|init| init.capabilities["resources"]["subscribe"] == true)
    }

    /// Whether the server's capabilities (as its start found them) name `capability`.
    pub(super) fn offers(&self, capability: &str) -> bool {
        self.shared
            .lock()
            .init
            .as_ref()
            .is_some_and(|init| init.capabilities.get(capability).is_some())
    }

    /// The error for a request the server's capabilities do not offer.
    pub(super) fn not_offered(
        &self,
        method: &'static str,
        name: &str,
        capability: &str,
    ) -> ClientError {
        ClientError::of(
            &self.shared.server,
            Kind::NotOffered {
                method,
                name: crate::transport::text::redact_uri(name).into(),
                capability: capability.into(),
            },
        )
    }
}

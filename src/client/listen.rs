//! The `subscriptions/listen` streams of a 2026-07-28 session: one for the list changes the
//! server offers (tools, prompts, resources), opened at start for the session's life, and one
//! naming every resource the client is subscribed to, opened again whenever that set changes.
//! Each is opened again after a pause when it ends or is cut while the session lives, and
//! given up on a refusal ([`listen_refused`]). What the streams carry takes the path of a
//! legacy server's notifications.

use std::sync::atomic::{AtomicBool, Ordering};

use serde::de::IgnoredAny;
use serde::Serialize;

use super::catalog::tools_may_have_changed;
use super::error::ErrorClass;
use super::resources::Subscriptions;
use super::router::Router;
use super::rpc::Receiver;
use super::*;
use crate::protocol::method::{Listen, Request as _, SubscriptionsAcknowledged};
use crate::protocol::modern::RequestMeta;
use crate::protocol::notifications::AcknowledgedParams;
use crate::telemetry::Outcome;
use crate::transport::RequestHead;

/// Registers the listen feature: each session keeps a [`ListenState`], and a stream's
/// acknowledgement (`notifications/subscriptions/acknowledged`) has a reopened list stream's
/// lists read again and settles the resource stream's set.
pub(super) fn register(
    router: &mut Router,
    tools_changed: &Arc<watch::Sender<u64>>,
    subscriptions: &Arc<Subscriptions>,
) {
    let tools_changed = Arc::clone(tools_changed);
    let subscriptions = Arc::clone(subscriptions);
    router
        .session_state::<ListenState>()
        .notification::<SubscriptionsAcknowledged, AcknowledgedParams>(move |session, ack| {
            let id = ack
                .meta
                .as_ref()
                .and_then(|m| m.subscription_id.as_ref()?.as_u64());
            if let (Some(id), Some(state)) = (id, session.state::<ListenState>()) {
                state.acknowledged(session, id, ack, &tools_changed, &subscriptions);
            }
        });
}

/// What one session's `subscriptions/listen` streams need remembered: the listen feature's
/// per-session state ([`Router::session_state`]).
#[derive(Debug, Default)]
pub(crate) struct ListenState {
    /// The id of a reopened list stream whose acknowledgement should have the tool list read
    /// again.
    relist_on: Mutex<Option<u64>>,
    /// The session's resource stream, once one was sent.
    resources: Mutex<Option<ResourceStream>>,
    /// The list changes the list stream asked for.
    lists_asked: Mutex<ListsAsked>,
    /// The resource stream is running ([`Shared::listen_for_resources`]).
    pub(crate) resource_stream_running: AtomicBool,
}

/// A session's resource stream (`subscriptions/listen` naming the subscribed URIs).
#[derive(Debug, Clone, Copy)]
struct ResourceStream {
    /// Its request id.
    id: u64,
    /// The generation of the set it names, which its acknowledgement settles
    /// ([`Subscriptions::settle`]).
    generation: u64,
    /// Its acknowledgement announces every subscribed resource as changed (a stream opened
    /// again after a cut).
    announce: bool,
}

/// The list changes (prompts, resources) a list stream asked for: announced when a reopened
/// list stream is acknowledged, as the tool list is read again.
#[derive(Debug, Clone, Copy, Default)]
struct ListsAsked {
    prompts: bool,
    resources: bool,
}

/// Locks `m`; its values are replaced whole, so a poisoned one is still consistent.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ListenState {
    /// The id of the session's resource stream, if one was sent.
    pub(crate) fn resource_stream_id(&self) -> Option<u64> {
        lock(&self.resources).map(|r| r.id)
    }

    /// The server acknowledged the `subscriptions/listen` stream `id`: a reopened list stream
    /// has the tool list read again and its other list changes announced (a change may have
    /// come in the gap); the resource stream settles the generation of the set it names, with
    /// the URIs the server agreed to honour.
    fn acknowledged(
        &self,
        session: &RpcSession,
        id: u64,
        ack: AcknowledgedParams,
        tools_changed: &watch::Sender<u64>,
        subscriptions: &Subscriptions,
    ) {
        let relist = {
            let mut relist_on = lock(&self.relist_on);
            relist_on.take_if(|on| *on == id).is_some()
        };
        tracing::debug!(
            server = &*session.server,
            subscription_id = id,
            relist,
            "subscription acknowledged"
        );
        if relist {
            tools_may_have_changed(tools_changed);
            let asked = *lock(&self.lists_asked);
            // No receiver is no error: nobody listens yet.
            if asked.prompts {
                let _ = subscriptions.changes.send(ServerChange::PromptsListChanged);
            }
            if asked.resources {
                let _ = subscriptions
                    .changes
                    .send(ServerChange::ResourcesListChanged);
            }
        }
        let Some(stream) = *lock(&self.resources) else {
            return;
        };
        if stream.id != id {
            return;
        }
        let honored = ack
            .notifications
            .and_then(|n| n.resource_subscriptions)
            .unwrap_or_default();
        subscriptions.settle(stream.generation, Some(honored.into_iter().collect()), None);
        if stream.announce {
            subscriptions.announce_all();
        }
    }
}

/// Opens a modern `subscriptions/listen` stream on `session` for the notifications `filter`
/// asks for (list changes, which take the legacy path once received, and the updates of
/// subscribed resources); the receiver completes when the subscription ends, and it stays in
/// the request table until then (or until abandoned by its id). With `relist` (a stream opened
/// again), its acknowledgement has the tool list read again: only then is a change sure to be
/// heard, so one made while no stream was open is not missed. A stream of resource
/// subscriptions gives `resources`: the generation of the set it names, and whether its
/// acknowledgement announces every subscribed resource as changed. Its id is kept with them
/// before it can reach the server, so its acknowledgement settles that generation.
fn send_listen(
    session: &RpcSession,
    state: &ListenState,
    filter: &ListenFilter,
    relist: bool,
    resources: Option<(u64, bool)>,
) -> Result<(u64, Receiver<IgnoredAny>), ClientError> {
    if filter.prompts_list_changed || filter.resources_list_changed {
        *lock(&state.lists_asked) = ListsAsked {
            prompts: filter.prompts_list_changed,
            resources: filter.resources_list_changed,
        };
    }
    let params = ListenParams {
        meta: session.meta(),
        notifications: filter,
    };
    let head = RequestHead::new(Listen::METHOD).protocol_version(session.declared_version());
    // Set before the request can reach the server, so its acknowledgement finds it.
    let mut on_id = |id| {
        if relist {
            *lock(&state.relist_on) = Some(id);
        }
        if let Some((generation, announce)) = resources {
            *lock(&state.resources) = Some(ResourceStream {
                id,
                generation,
                announce,
            });
        }
    };
    session.send_typed(Listen::METHOD, head, Some(&params), &mut on_id)
}

/// `subscriptions/listen` parameters.
#[derive(Debug, Serialize)]
struct ListenParams<'a> {
    #[serde(rename = "_meta")]
    meta: RequestMeta<'a>,
    notifications: &'a ListenFilter,
}

/// The notifications a `subscriptions/listen` stream asks for (2026-07-28): list changes
/// (each asked only when the server offers it), and the updates of subscribed resources.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListenFilter {
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) tools_list_changed: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) prompts_list_changed: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) resources_list_changed: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) resource_subscriptions: Vec<String>,
}

impl ListenFilter {
    /// The list changes `capabilities` (a server's) offer: `tools`, `prompts` and `resources`
    /// with `listChanged: true`.
    pub(crate) fn list_changes(capabilities: &serde_json::Value) -> Self {
        let offers = |what: &str| capabilities[what]["listChanged"] == true;
        Self {
            tools_list_changed: offers("tools"),
            prompts_list_changed: offers("prompts"),
            resources_list_changed: offers("resources"),
            resource_subscriptions: Vec::new(),
        }
    }

    /// Nothing to listen for.
    pub(crate) fn is_empty(&self) -> bool {
        !self.tools_list_changed
            && !self.prompts_list_changed
            && !self.resources_list_changed
            && self.resource_subscriptions.is_empty()
    }
}

/// The pause before a `subscriptions/listen` stream that ended is opened again; it doubles
/// with each stream that ends within [`LISTEN_STEADY`], up to [`LISTEN_MAX_PAUSE`], and each
/// pause is drawn between half of that and all of it (equal jitter).
pub const LISTEN_FIRST_PAUSE: Duration = Duration::from_secs(1);

/// The longest pause before a `subscriptions/listen` stream is opened again.
pub const LISTEN_MAX_PAUSE: Duration = Duration::from_secs(60);

/// A `subscriptions/listen` stream that lasted this long was a working one: the next pause
/// is [`LISTEN_FIRST_PAUSE`] again (a proxy that cuts idle streams every 30 s costs a 1 s gap
/// each time), and a JSON-RPC error that ends it is no refusal.
pub const LISTEN_STEADY: Duration = Duration::from_secs(10);

/// Whether `error`, ending a `subscriptions/listen` that lasted `lasted`, means the server (or
/// what stands before it) refuses the subscription, so asking again would only repeat it: a
/// JSON-RPC error within [`LISTEN_STEADY`], or an HTTP refusal (`401`/`403` and any other
/// `4xx` but `408`, `425` and `429`, or `202` with no answer). A cut, an error after a working
/// stream, a `5xx` or a request that could not be sent are not.
pub(super) fn listen_refused(error: &ClientError, lasted: Duration) -> bool {
    match (error.class(), error.send_failure()) {
        (ErrorClass::Refused, _) => lasted < LISTEN_STEADY,
        (ErrorClass::SendFailed, Some(failure)) => {
            failure.is_permanent()
                || match failure.http_status() {
                    Some(202) => true,
                    Some(status) => (400..500).contains(&status) && !is_transient_status(status),
                    None => false,
                }
        }
        _ => false,
    }
}

/// What a stream listens for.
enum Stream {
    /// The list changes in the filter (fixed for the session's life).
    Lists(ListenFilter),
    /// The updates of the subscribed resources (the set as it is at each opening); ends when
    /// the set is empty.
    Resources,
}

impl Shared {
    /// Keeps a `subscriptions/listen` stream open for a modern server that offers list
    /// changes (`filter`), for the life of `session`. A stream that ends while the session
    /// lives (the server ended it, or the transport cut it: an idle timeout, a proxy), or that
    /// could not be sent, is opened again after a pause ([`LISTEN_FIRST_PAUSE`], doubling up
    /// to [`LISTEN_MAX_PAUSE`]; the first again after a stream that lasted [`LISTEN_STEADY`]);
    /// its acknowledgement has the tool list read again, since a change may have come in the
    /// gap. A refusal ([`listen_refused`]) ends it for the session.
    pub(super) fn listen_for_changes(&self, session: &Arc<RpcSession>, filter: ListenFilter) {
        if !filter.is_empty() {
            self.keep_listening(session, Stream::Lists(filter));
        }
    }

    /// Keeps the stream of `session`'s resource subscriptions open (once per session: a
    /// second call only has it opened again with the set as it is now), as
    /// [`listen_for_changes`](Self::listen_for_changes) keeps its own; it ends with the session,
    /// on a refusal, or when no resource is subscribed any more.
    pub(super) fn listen_for_resources(&self, session: &Arc<RpcSession>) {
        let Some(state) = session.state::<ListenState>() else {
            return;
        };
        if !state.resource_stream_running.swap(true, Ordering::AcqRel) {
            self.keep_listening(session, Stream::Resources);
        }
    }

    fn keep_listening(&self, session: &Arc<RpcSession>, stream: Stream) {
        let mut listener = Listener {
            what: match stream {
                Stream::Lists(_) => "list changes",
                Stream::Resources => "resource updates",
            },
            server: Arc::clone(&self.server),
            session: Arc::downgrade(session),
            set_changed: self.subscriptions.generation.subscribe(),
            subscriptions: Arc::clone(&self.subscriptions),
            stream,
            // Equal jitter: between half the doubling pause and all of it.
            backoff: JitteredBackoff::new(LISTEN_FIRST_PAUSE, LISTEN_MAX_PAUSE)
                .expect("the listen pauses are valid")
                .jitter(Jitter::Equal),
            retry: 0,
            reopened: false,
            cut: false,
        };
        tokio::spawn(async move { while listener.once().await == Flow::Again {} });
    }
}

/// Whether a stream's loop goes on.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    /// Open the stream again.
    Again,
    /// The session ended, the stream was refused, or no resource is subscribed any more.
    Stop,
}

/// How waiting for a stream's end ended.
enum Waited {
    /// The stream ended: its answer, or the error that ended it.
    Ended(Result<IgnoredAny, ClientError>),
    /// The subscribed set changed first.
    SetChanged,
    /// The session (or the client) went away.
    Gone,
}

/// One `subscriptions/listen` stream of a session, kept open (see
/// [`Shared::listen_for_changes`]).
struct Listener {
    what: &'static str,
    server: Arc<str>,
    session: std::sync::Weak<RpcSession>,
    subscriptions: Arc<Subscriptions>,
    stream: Stream,
    set_changed: watch::Receiver<u64>,
    backoff: JitteredBackoff,
    retry: u32,
    /// The stream was opened before (its acknowledgement has the lists read again).
    reopened: bool,
    /// The last resource stream was cut (not ended for a new set).
    cut: bool,
}

impl Listener {
    /// Opens the stream once, waits for its end, and pauses before the next opening.
    async fn once(&mut self) -> Flow {
        let Some(live) = self.session.upgrade() else {
            return Flow::Stop;
        };
        let Some((filter, generation)) = self.what_to_open() else {
            return self.nothing_to_open(&live);
        };
        let opened = Instant::now();
        // Only the list stream's acknowledgement has the tool list read again.
        let relist = self.reopened && filter.tools_list_changed;
        let Some(state) = live.state::<ListenState>() else {
            return Flow::Stop;
        };
        let sent = send_listen(&live, state, &filter, relist, generation);
        drop(live);
        let outcome = match sent {
            Ok((id, rx)) => match self.wait(id, rx).await {
                Waited::Ended(outcome) => outcome,
                Waited::SetChanged => return Flow::Again,
                Waited::Gone => return Flow::Stop,
            },
            // Not sent (the bound on requests in flight, a full stdio pipe, or the session's
            // end, seen just below): tried again like a cut.
            Err(e) => Err(e),
        };
        match self.session.upgrade() {
            Some(live) if !live.is_closed() => {}
            _ => return Flow::Stop,
        }
        self.ended(outcome, generation, opened.elapsed()).await
    }

    /// The filter of the next opening, and for the resource stream the generation of the set
    /// it names and whether its acknowledgement announces every resource; `None` when no
    /// resource is subscribed.
    fn what_to_open(&mut self) -> Option<(ListenFilter, Option<(u64, bool)>)> {
        match &self.stream {
            Stream::Lists(filter) => Some((filter.clone(), None)),
            Stream::Resources => {
                let generation = *self.set_changed.borrow_and_update();
                let uris = self.subscriptions.uris();
                if uris.is_empty() {
                    return None;
                }
                let filter = ListenFilter {
                    resource_subscriptions: uris,
                    ..ListenFilter::default()
                };
                // A stream opened again after a cut: an update may have come in the gap.
                Some((filter, Some((generation, self.cut))))
            }
        }
    }

    /// No resource is subscribed: the stream ends if the set stayed empty, else it looks again.
    fn nothing_to_open(&mut self, live: &RpcSession) -> Flow {
        let generation = *self.set_changed.borrow();
        let Some(state) = live.state::<ListenState>() else {
            return Flow::Stop;
        };
        if self
            .subscriptions
            .may_end(&state.resource_stream_running, generation)
        {
            self.subscriptions.settle(generation, None, None);
            return Flow::Stop;
        }
        Flow::Again
    }

    /// Waits for the end of stream `id`, or for the resource set to change first (this
    /// stream is then abandoned for one with the new set).
    async fn wait(&mut self, id: u64, rx: Receiver<IgnoredAny>) -> Waited {
        let resources = matches!(self.stream, Stream::Resources);
        tokio::select! {
            answer = rx => match answer {
                Ok(outcome) => Waited::Ended(outcome),
                Err(_) => Waited::Gone,
            },
            changed = self.set_changed.changed(), if resources => {
                // The set changed: this stream ends, one with the new set opens.
                if let Some(live) = self.session.upgrade() {
                    live.abandon(id, Outcome::Abandoned);
                }
                if changed.is_err() {
                    return Waited::Gone;
                }
                self.cut = false;
                Waited::SetChanged
            }
        }
    }

    /// The stream ended with `outcome` after `lasted`: a refusal ends it (the resource
    /// stream's waiters fail), anything else pauses and opens it again.
    async fn ended(
        &mut self,
        outcome: Result<IgnoredAny, ClientError>,
        generation: Option<(u64, bool)>,
        lasted: Duration,
    ) -> Flow {
        let (server, what) = (&*self.server, self.what);
        if lasted >= LISTEN_STEADY {
            self.retry = 0;
        }
        let pause = self.backoff.delay(self.retry);
        let pause_ms = pause.as_millis() as u64;
        match &outcome {
            Err(e) if listen_refused(e, lasted) => {
                let Some((generation, _)) = generation else {
                    tracing::warn!(server, error = %e, what, "the server refused subscriptions/listen; changes are seen at the ttl or a restart");
                    return Flow::Stop;
                };
                // The subscriptions waiting on this set fail, and remove their URIs; a set
                // changed meanwhile is asked for at once.
                tracing::warn!(server, error = %e, what, "the server refused subscriptions/listen for the subscribed resources");
                self.subscriptions.settle(generation, None, Some(e.clone()));
                let subscriptions = &self.subscriptions;
                return match self.session.upgrade() {
                    Some(live)
                        if !live.state::<ListenState>().is_some_and(|state| {
                            subscriptions.may_end(&state.resource_stream_running, generation)
                        }) =>
                    {
                        self.cut = false;
                        Flow::Again
                    }
                    _ => Flow::Stop,
                };
            }
            Ok(_) => tracing::info!(
                server,
                pause_ms,
                what,
                "the server ended a subscriptions/listen stream; opening it again"
            ),
            Err(e) => tracing::info!(
                server,
                error = %e,
                pause_ms,
                what,
                "a subscriptions/listen stream was cut; opening it again"
            ),
        }
        self.cut = true;
        if matches!(self.stream, Stream::Resources) {
            // A change of the set does not wait out the pause.
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                changed = self.set_changed.changed() => if changed.is_err() { return Flow::Stop },
            }
        } else {
            tokio::time::sleep(pause).await;
        }
        self.retry = self.retry.saturating_add(1);
        self.reopened = true;
        Flow::Again
    }
}

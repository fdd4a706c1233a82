//! Dispatch by method, and the state a feature keeps per session: the seam between the JSON-RPC
//! session and the protocol's features.
//!
//! A client's features (the catalog, tasks, resources and subscriptions, prompts, logging)
//! each register, once per client, a handler for every notification they read and the
//! per-session state they keep ([`Router`]); each session the client starts consults the table
//! for every notification it reads (as async-lsp's `Router` keyed by `lsp_types` methods) and
//! carries the features' state in a map by type ([`SessionState`], as `http::Extensions`). The
//! session itself knows ids, the pending table, sending, cancellation and this dispatch, and
//! nothing about any feature: adding one is a module with a `register` function and one line in
//! [`McpClient::new`](super::McpClient::new).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::Value;

use super::rpc::RpcSession;
use crate::protocol::method::Notification;

/// A notification's handler: the session it arrived on, and its `params` as sent.
type Handler = Box<dyn Fn(&RpcSession, Option<&RawValue>) + Send + Sync>;

/// Makes one feature's state for a new session.
type MakeState = Box<dyn Fn() -> (TypeId, Box<dyn Any + Send + Sync>) + Send + Sync>;

/// Reads the result of a `tools/call` answered after its caller gave up; `true` when it acted
/// on it.
type LateAnswer = Box<dyn Fn(&Arc<RpcSession>, &Value) -> bool + Send + Sync>;

/// The handlers and per-session state of a client's features. See the [module docs](self).
#[derive(Default)]
pub(crate) struct Router {
    notifications: HashMap<&'static str, Handler>,
    states: Vec<MakeState>,
    late_answer: Option<LateAnswer>,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut methods: Vec<_> = self.notifications.keys().collect();
        methods.sort();
        f.debug_struct("Router")
            .field("notifications", &methods)
            .field("states", &self.states.len())
            .field("late_answer", &self.late_answer.is_some())
            .finish()
    }
}

impl Router {
    /// Handles the notification `N` with `handler`, given its params decoded into `P` (a
    /// notification without params decodes from `{}`; one whose params do not decode is
    /// logged and ignored). Several handlers of one method all run, in the order registered.
    pub(crate) fn notification<N, P>(
        &mut self,
        handler: impl Fn(&RpcSession, P) + Send + Sync + 'static,
    ) -> &mut Self
    where
        N: Notification,
        P: DeserializeOwned,
    {
        let decoded: Handler = Box::new(move |session, params| {
            let raw = params.map_or("{}", RawValue::get);
            match serde_json::from_str::<P>(raw) {
                Ok(params) => handler(session, params),
                Err(e) => tracing::warn!(
                    server = &*session.server,
                    method = N::METHOD,
                    error = %e,
                    "malformed notification; ignored"
                ),
            }
        });
        let handler = match self.notifications.remove(N::METHOD) {
            Some(first) => Box::new(move |session: &RpcSession, params: Option<&RawValue>| {
                first(session, params);
                decoded(session, params);
            }),
            None => decoded,
        };
        self.notifications.insert(N::METHOD, handler);
        self
    }

    /// Gives every session a `T` of its own, made by `T::default()`, found with
    /// [`SessionState::get`].
    pub(crate) fn session_state<T: Default + Send + Sync + 'static>(&mut self) -> &mut Self {
        self.session_state_with(T::default)
    }

    /// Gives every session the `T` that `make` makes (a clone of something the client shares
    /// between its sessions, say), found with [`SessionState::get`].
    pub(crate) fn session_state_with<T: Send + Sync + 'static>(
        &mut self,
        make: impl Fn() -> T + Send + Sync + 'static,
    ) -> &mut Self {
        self.states
            .push(Box::new(move || (TypeId::of::<T>(), Box::new(make()))));
        self
    }

    /// Hands the result of a `tools/call` answered after its caller gave up to `handler` (the
    /// tasks feature cancels a task nobody follows); one handler per client.
    pub(crate) fn late_answer(
        &mut self,
        handler: impl Fn(&Arc<RpcSession>, &Value) -> bool + Send + Sync + 'static,
    ) -> &mut Self {
        self.late_answer = Some(Box::new(handler));
        self
    }

    /// Runs the late-answer handler on `result`; `true` when it acted on it.
    pub(crate) fn on_late_answer(&self, session: &Arc<RpcSession>, result: &Value) -> bool {
        self.late_answer
            .as_ref()
            .is_some_and(|handler| handler(session, result))
    }

    /// Runs the handler of `method`, if any feature registered one.
    pub(crate) fn dispatch(&self, session: &RpcSession, method: &str, params: Option<&RawValue>) {
        match self.notifications.get(method) {
            Some(handler) => handler(session, params),
            None => tracing::trace!(server = &*session.server, method, "notification ignored"),
        }
    }

    /// The features' state for a new session.
    pub(crate) fn new_state(&self) -> SessionState {
        SessionState(self.states.iter().map(|make| make()).collect())
    }
}

/// The state the features keep for one session, one value per type. See the
/// [module docs](self).
#[derive(Default)]
pub(crate) struct SessionState(HashMap<TypeId, Box<dyn Any + Send + Sync>>);

impl SessionState {
    /// The session's `T`, when a feature registered one ([`Router::session_state`]).
    pub(crate) fn get<T: 'static>(&self) -> Option<&T> {
        self.0.get(&TypeId::of::<T>())?.downcast_ref()
    }
}

impl fmt::Debug for SessionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionState")
            .field("values", &self.0.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::method::{Progress, ToolsListChanged};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_state_is_found_by_its_type_and_is_the_sessions_own() {
        #[derive(Default)]
        struct Counter(AtomicU64);
        let mut router = Router::default();
        router.session_state::<Counter>();
        let (a, b) = (router.new_state(), router.new_state());
        a.get::<Counter>()
            .unwrap()
            .0
            .fetch_add(1, Ordering::Relaxed);
        assert_eq!(a.get::<Counter>().unwrap().0.load(Ordering::Relaxed), 1);
        assert_eq!(b.get::<Counter>().unwrap().0.load(Ordering::Relaxed), 0);
        assert!(a.get::<String>().is_none());
    }

    #[test]
    fn every_handler_of_a_method_runs_with_its_params_and_malformed_ones_run_none() {
        #[derive(serde::Deserialize)]
        struct Step {
            progress: u64,
        }
        let seen = Arc::new(AtomicU64::new(0));
        let mut router = Router::default();
        for add in [1, 10] {
            let seen = Arc::clone(&seen);
            router.notification::<Progress, Step>(move |_, step| {
                assert_eq!(step.progress, 3);
                seen.fetch_add(add, Ordering::Relaxed);
            });
        }
        {
            let seen = Arc::clone(&seen);
            router.notification::<ToolsListChanged, serde::de::IgnoredAny>(move |_, _| {
                seen.fetch_add(100, Ordering::Relaxed);
            });
        }
        let session = crate::client::rpc::tests::bare_session();
        let params = RawValue::from_string(r#"{"progress":3}"#.into()).unwrap();
        router.dispatch(&session, Progress::METHOD, Some(&params));
        assert_eq!(seen.load(Ordering::Relaxed), 11);
        // No params: decoded from `{}`.
        router.dispatch(&session, ToolsListChanged::METHOD, None);
        assert_eq!(seen.load(Ordering::Relaxed), 111);
        let bad = RawValue::from_string(r#"{"progress":"three"}"#.into()).unwrap();
        router.dispatch(&session, Progress::METHOD, Some(&bad));
        router.dispatch(&session, "notifications/unknown", None);
        assert_eq!(seen.load(Ordering::Relaxed), 111);
    }
}

//! Supervision: the server's state machine (`Idle → Starting → Ready → Restarting →
//! Failed`, or `Disabled`), one start attempt at a time (connect, era, handshake), restarts
//! after a jittered backoff, and what the end of a session means for it.

use super::rpc::SessionEvent;
use super::*;
use crate::client::Kind;
use crate::protocol::method::SubscribeResource;

/// The supervision state, behind a synchronous mutex never held across an await.
pub(super) struct Supervisor {
    pub(super) state: ServerState,
    /// Bumped by every start attempt, shutdown and disable; stale events are ignored.
    pub(super) generation: u64,
    pub(super) session: Option<Arc<RpcSession>>,
    pub(super) connection: Option<Box<dyn Connection>>,
    pub(super) attempt_running: bool,
    pub(super) waiters: Vec<oneshot::Sender<Result<Arc<RpcSession>, ClientError>>>,
    pub(super) failures: u32,
    pub(super) next_attempt: Option<Instant>,
    pub(super) ready_at: Option<Instant>,
    /// The last failure in full, with its chain of causes (logs, `-v`).
    pub(super) last_error: Option<String>,
    /// The same failure as the operator's line ([`ClientError::reason`]).
    pub(super) last_reason: Option<String>,
    /// The first line a session of this client read that was not JSON-RPC, if any.
    pub(super) stdout_noise: Option<String>,
    pub(super) init: Option<Arc<InitializeResult>>,
    /// The era of the last successful start, kept for the client's life (see [`era`]).
    pub(super) era: Option<Era>,
    /// Whether the [era memory](super::era_memory) holds `legacy` (read when the client was built, or written
    /// since by this client).
    pub(super) era_remembered: bool,
    /// Until when the last `tools/list` is fresh, by its pages' `ttlMs` (2026-07-28 cache
    /// hints); `None` when it named no positive ttl, or once its expiry was signalled.
    pub(super) tools_fresh_until: Option<Instant>,
}

impl Supervisor {
    /// Whether `session` is the ready one (not an older one, nor a probe's that never was).
    pub(super) fn is_ready_with(&self, session: &RpcSession) -> bool {
        self.state == ServerState::Ready
            && self
                .session
                .as_ref()
                .is_some_and(|s| std::ptr::eq(Arc::as_ptr(s), session))
    }
}

/// How a call gets its session.
pub(super) enum Acquire {
    Ready(Arc<RpcSession>),
    Wait(oneshot::Receiver<Result<Arc<RpcSession>, ClientError>>),
    Fail(ClientError),
}

/// Fails what is in flight on `session` after the client ended it.
pub(super) fn session_close_requested(session: &RpcSession, detail: &str) {
    use crate::transport::InboundHandler;
    session.on_closed(CloseReason::new(detail).requested());
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, Supervisor> {
        // Every critical section leaves the state consistent; a poisoned lock is still usable.
        self.sup
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The ready session, waiting for a start-up when needed.
    pub(super) async fn session(self: &Arc<Self>) -> Result<Arc<RpcSession>, ClientError> {
        match self.acquire() {
            Acquire::Ready(session) => Ok(session),
            Acquire::Fail(e) => Err(e),
            Acquire::Wait(rx) => rx.await.unwrap_or_else(|_| {
                Err(ClientError::of(
                    &self.server,
                    Kind::ConnectionClosed {
                        detail: "the start-up was abandoned".into(),
                    },
                ))
            }),
        }
    }

    /// The session for a call: ready, being started (wait), or not to be had (fail fast).
    pub(super) fn acquire(self: &Arc<Self>) -> Acquire {
        let mut sup = self.lock();
        match sup.state {
            ServerState::Ready => {
                if let Some(session) = &sup.session {
                    return Acquire::Ready(Arc::clone(session));
                }
            }
            ServerState::Failed => {
                return Acquire::Fail(ClientError::of(
                    &self.server,
                    Kind::ServerFailed {
                        failures: sup.failures,
                        last_error: sup.last_reason.clone().unwrap_or_default(),
                    },
                ));
            }
            ServerState::Disabled => {
                return Acquire::Fail(ClientError::of(&self.server, Kind::Disabled));
            }
            ServerState::Idle | ServerState::Starting | ServerState::Restarting => {}
        }
        if !sup.attempt_running {
            // The restart may begin at once, or after the rest of the backoff when the call
            // may wait that long (its timeout still bounds it); else the call fails at once,
            // saying when the next attempt is.
            let mut delay = None;
            if let Some(at) = sup.next_attempt {
                let now = Instant::now();
                if now < at {
                    if at - now > self.options.wait_for_restart {
                        return Acquire::Fail(ClientError::of(
                            &self.server,
                            Kind::BackingOff {
                                retry_in: at - now,
                                last_error: sup.last_reason.clone().unwrap_or_default(),
                            },
                        ));
                    }
                    delay = Some(at);
                }
            }
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return Acquire::Fail(ClientError::of(&self.server, Kind::NoRuntime));
            };
            sup.attempt_running = true;
            sup.generation += 1;
            let new_state = if sup.failures == 0 && sup.ready_at.is_none() {
                ServerState::Starting
            } else {
                ServerState::Restarting
            };
            let restart = new_state == ServerState::Restarting;
            self.set_state(&mut sup, new_state);
            let generation = sup.generation;
            match delay {
                None => {
                    self.count_restart(restart);
                    drop(runtime.spawn(Arc::clone(self).attempt(generation)));
                }
                Some(at) => {
                    // Weak: a client dropped while the backoff runs starts nothing.
                    let this = Arc::downgrade(self);
                    drop(runtime.spawn(async move {
                        tokio::time::sleep_until(at).await;
                        let Some(this) = this.upgrade() else { return };
                        // Shut down, disabled or re-enabled meanwhile: that answered the
                        // waiters.
                        if this.lock().generation != generation {
                            return;
                        }
                        this.count_restart(restart);
                        this.attempt(generation).await;
                    }));
                }
            }
        }
        let (tx, rx) = oneshot::channel();
        sup.waiters.push(tx);
        Acquire::Wait(rx)
    }

    /// Counts a start attempt that is a restart (see [`McpClient::restarts`]).
    pub(super) fn count_restart(&self, restart: bool) {
        if restart {
            self.restarts
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    pub(super) fn set_state(&self, sup: &mut Supervisor, state: ServerState) {
        if sup.state != state {
            tracing::info!(server = &*self.server, from = %sup.state, to = %state, "MCP server state");
            sup.state = state;
        }
    }

    /// One start attempt: connect, `initialize`, `notifications/initialized`.
    pub(super) async fn attempt(self: Arc<Self>, generation: u64) {
        let result = self.connect_and_initialize(generation).await;
        let mut sup = self.lock();
        if sup.generation != generation {
            // Shut down or disabled meanwhile; `stop` already answered the waiters.
            return;
        }
        sup.attempt_running = false;
        let waiters = std::mem::take(&mut sup.waiters);
        match result {
            Ok((session, init, era)) => {
                tracing::info!(
                    server = &*self.server,
                    era = %era,
                    protocol_version = %init.protocol_version,
                    server_name = %init.server_info.name,
                    server_version = %init.server_info.version,
                    "MCP server ready"
                );
                sup.session = Some(Arc::clone(&session));
                sup.init = Some(Arc::new(init));
                sup.era = Some(era);
                // The era memory is written only when what it holds changes.
                let legacy = era == Era::Legacy;
                let memory = self.era_memory().filter(|_| sup.era_remembered != legacy);
                if memory.is_some() {
                    sup.era_remembered = legacy;
                }
                sup.ready_at = Some(Instant::now());
                sup.next_attempt = None;
                self.set_state(&mut sup, ServerState::Ready);
                drop(sup);
                for waiter in waiters {
                    let _ = waiter.send(Ok(Arc::clone(&session)));
                }
                // After the waiters: their calls need not wait for the file.
                match memory {
                    Some(memory) if legacy => {
                        let written = memory.remember_legacy();
                        self.lock().era_remembered = written;
                    }
                    Some(memory) => memory.forget(),
                    None => {}
                }
            }
            Err(e) => {
                let connection = sup.connection.take();
                sup.session = None;
                // The era is found again at the next start only when the failure is about it
                // (a server that changed); a server that crashes at start keeps the era its
                // probe found, so each restart spawns it once, not twice.
                let mut forget = None;
                if e.is_about_the_era() {
                    sup.era = None;
                    forget = self
                        .era_memory()
                        .filter(|_| std::mem::take(&mut sup.era_remembered));
                }
                let permanent = e.restart_cannot_fix(self.options.era != EraPreference::Auto);
                // Refused (auth, foreign endpoint): no restart loop, failed at once.
                self.register_failure(&mut sup, e.reason(), e.to_string(), permanent);
                drop(sup);
                drop(connection);
                if let Some(memory) = forget {
                    memory.forget();
                }
                for waiter in waiters {
                    let _ = waiter.send(Err(e.clone()));
                }
            }
        }
    }

    /// What a session that just started is sent before it is ready, so before anything else the
    /// client asks: in the legacy era the operator's log level (`logging/setLevel`, when the
    /// server offers `logging`) and the client's resource subscriptions again (a new session
    /// knows none of them), one `resources/subscribe` each, concurrently; in the modern era the
    /// resource stream, until it is acknowledged (the level rides each request's `_meta`). All
    /// within the request timeout; a failure is a WARN and ends nothing. After a restart, every
    /// subscribed resource is announced as changed (an update may have been missed), and so
    /// are the server's prompt and resource lists.
    pub(super) async fn prepare(
        self: &Arc<Self>,
        session: &Arc<RpcSession>,
        capabilities: &serde_json::Value,
    ) {
        let limit = self.options.request_timeout;
        let uris = self.subscriptions.uris();
        let subscribable = capabilities["resources"]["subscribe"] == true;
        if self.restarts.load(std::sync::atomic::Ordering::Relaxed) > 0 {
            self.subscriptions.announce_all();
            if capabilities.get("resources").is_some() {
                let _ = self
                    .subscriptions
                    .changes
                    .send(ServerChange::ResourcesListChanged);
            }
            if capabilities.get("prompts").is_some() {
                let _ = self
                    .subscriptions
                    .changes
                    .send(ServerChange::PromptsListChanged);
            }
        }
        if session.is_modern() {
            if uris.is_empty() || !subscribable {
                return;
            }
            let generation = *self.subscriptions.generation.borrow();
            let mut settled = self.subscriptions.settled.subscribe();
            self.listen_for_resources(session);
            let acked =
                tokio::time::timeout(limit, settled.wait_for(|s| s.generation >= generation)).await;
            if !matches!(acked, Ok(Ok(ref s)) if s.refused.is_none()) {
                tracing::warn!(server = &*self.server, "the resource subscriptions were not acknowledged at start; their updates may be missed until they are");
            }
            return;
        }
        let level = self
            .options
            .log_level
            .filter(|_| capabilities.get("logging").is_some());
        let set_level = async {
            if let Some(level) = level {
                super::logging::set_log_level(session, level, limit).await;
            }
        };
        let uris = if subscribable { uris } else { Vec::new() };
        let resubscribed = uris.iter().map(|uri| async move {
            let sent = match session.about_resource::<SubscribeResource>(uri) {
                Ok((rx, guard)) => guard.answer_within(rx, limit).await.map(drop),
                Err(e) => Err(e),
            };
            if let Err(e) = sent {
                tracing::warn!(server = &*session.server, uri = %crate::transport::text::redact_uri(uri), error = %e, "the resource subscription could not be sent again after the start");
            }
        });
        futures::future::join(set_level, futures::future::join_all(resubscribed)).await;
    }

    /// Opens a connection with a new session on it.
    pub(super) async fn connect(
        self: &Arc<Self>,
        generation: u64,
    ) -> Result<Arc<RpcSession>, ClientError> {
        let client = Arc::downgrade(self);
        let events: rpc::OnEvent = Arc::new(move |session, event| {
            let Some(shared) = client.upgrade() else {
                return;
            };
            match event {
                SessionEvent::Closed(reason) => shared.session_closed(session, reason),
                // On a task: the connection must not be dropped from inside `on_frame`.
                SessionEvent::EraRefused => {
                    if let Some(session) = session.handle() {
                        tokio::spawn(async move { shared.era_refused(&session) });
                    }
                }
                SessionEvent::Noise(line) => {
                    // Kept as an operator may see it: a token-shaped run is hidden.
                    let line = crate::transport::redact_tokens(line);
                    shared.lock().stdout_noise = Some(line);
                }
                SessionEvent::Unreachable { failure, answers } => {
                    if let Some(session) = session.handle() {
                        let failure = failure.clone();
                        tokio::spawn(
                            async move { shared.unreachable(&session, &failure, answers) },
                        );
                    }
                }
            }
        });
        let session = RpcSession::new(
            Arc::clone(&self.server),
            generation,
            events,
            self.server_requests.clone(),
            rpc::SessionSettings {
                max_in_flight: self.options.max_in_flight,
                elicitation: self.options.elicitation_handler.is_some(),
                mirrors_headers: self.transport.mirrors_headers(),
                param_headers: Arc::clone(&self.param_headers),
                task_ttl: self.options.task_ttl,
                tasks_declared: self.options.tasks.enabled(),
                telemetry: Arc::new(crate::telemetry::SessionTelemetry::new(
                    self.transport.peer(),
                )),
                router: Arc::clone(&self.router),
            },
        );
        let ctx = ConnectContext {
            server: Arc::clone(&self.server),
            frame_limit: self.options.frame_limit,
            handler: Arc::clone(&session) as _,
        };
        let connection = self
            .transport
            .connect(ctx)
            .await
            .map_err(|source| ClientError::of(&self.server, Kind::ConnectFailed { source }))?;
        let replaced = {
            let mut sup = self.lock();
            if sup.generation != generation {
                return Err(ClientError::of(&self.server, Kind::Disabled));
            }
            sup.connection.replace(connection)
        };
        // A probe's connection the server closed: gone for good.
        drop(replaced);
        Ok(session)
    }

    /// [`connect_and_initialize`](Self::connect_and_initialize), once.
    pub(super) async fn start_in_era(
        self: &Arc<Self>,
        generation: u64,
    ) -> Result<(Arc<RpcSession>, InitializeResult, Era), ClientError> {
        let preference = self.options.era;
        let remembered = self.lock().era;
        let meta = match (&self.modern_meta, self.transport.speaks_modern()) {
            (Some(meta), true) => Some(Arc::clone(meta)),
            _ => None,
        };
        let probe_with = match preference {
            EraPreference::Legacy => None,
            EraPreference::Modern => match &meta {
                Some(meta) => Some(meta),
                None => {
                    return Err(ClientError::of(
                        &self.server,
                        Kind::NotModern {
                            detail: format!(
                                "its transport ({}) carries only legacy MCP",
                                self.transport.describe()
                            ),
                        },
                    ))
                }
            },
            EraPreference::Auto if remembered == Some(Era::Legacy) => None,
            EraPreference::Auto => meta.as_ref(),
        };
        let mut session = self.connect(generation).await?;
        if let Some(meta) = probe_with {
            let started = std::time::Instant::now();
            let probe = era::probe(&session, meta, self.options.probe_timeout);
            match self.unless_not_mcp(&session, probe).await? {
                era::Probe::Modern(init) => {
                    tracing::info!(
                        server = &*self.server,
                        protocol_version = %init.protocol_version,
                        probe_ms = started.elapsed().as_millis() as u64,
                        "server/discover: the server speaks the modern era"
                    );
                    session.dialect().speak_modern(Arc::clone(meta));
                    session.telemetry().agreed(&init.protocol_version, None);
                    self.listen_for_changes(
                        &session,
                        listen::ListenFilter::list_changes(&init.capabilities),
                    );
                    self.prepare(&session, &init.capabilities).await;
                    return Ok((session, init, Era::Modern));
                }
                era::Probe::Failed(e) => {
                    self.lock().era = None;
                    return Err(e);
                }
                era::Probe::Legacy { why, closed } => {
                    if preference == EraPreference::Modern {
                        return Err(ClientError::of(
                            &self.server,
                            Kind::NotModern { detail: why },
                        ));
                    }
                    tracing::info!(
                        server = &*self.server,
                        reason = %why,
                        probe_ms = started.elapsed().as_millis() as u64,
                        reconnect = closed,
                        "server/discover: the server speaks the legacy era; initialize follows"
                    );
                    // Kept whatever comes of this start, unless its failure is about the era.
                    {
                        let mut sup = self.lock();
                        if sup.generation == generation {
                            sup.era = Some(Era::Legacy);
                        }
                    }
                    if closed {
                        session = self.connect(generation).await?;
                    }
                }
            }
        }
        let init = self
            .unless_not_mcp(&session, self.initialize(&session))
            .await??;
        self.prepare(&session, &init.capabilities).await;
        Ok((session, init, Era::Legacy))
    }

    /// `handshake`, unless the server (a process) shows first that it is no MCP server: a line
    /// on stdout that is not JSON-RPC, then none that is within [`ClientOptions::noise_grace`]. The error names the
    /// command and that line (escaped, token-shaped runs hidden).
    async fn unless_not_mcp<T>(
        &self,
        session: &Arc<RpcSession>,
        handshake: impl std::future::Future<Output = T>,
    ) -> Result<T, ClientError> {
        if !matches!(self.transport.peer(), crate::transport::Peer::Pipe) {
            // Only a process's stdout carries what a program prints.
            return Ok(handshake.await);
        }
        let grace = self.options.noise_grace;
        tokio::select! {
            done = handshake => Ok(done),
            line = session.not_mcp(grace) => {
                let line = crate::transport::redact_tokens(&line);
                Err(ClientError::of(
                    &self.server,
                    Kind::ProtocolViolation {
                        detail: format!(
                            "`{}` wrote `{line}` on stdout and no JSON-RPC message within {} \
                             ms after it: it is not an MCP server, or it logs to stdout (an MCP \
                             server must log to stderr)",
                            crate::escape::visible(&self.transport.describe()),
                            grace.as_millis()
                        ),
                    },
                ))
            }
        }
    }

    /// The legacy handshake: `initialize`, `notifications/initialized`.
    pub(super) async fn initialize(
        self: &Arc<Self>,
        session: &Arc<RpcSession>,
    ) -> Result<InitializeResult, ClientError> {
        let (id, rx) =
            match session.initialize(&self.options.client_info, self.options.capabilities()) {
                Ok(sent) => sent,
                Err(e) => return Err(session.exit_behind(e).await),
            };
        let init = match tokio::time::timeout(self.options.initialize_timeout, rx).await {
            Ok(Ok(answer)) => answer?,
            Ok(Err(_)) => {
                return Err(ClientError::of(
                    &self.server,
                    Kind::ConnectionClosed {
                        detail: "the session ended during initialize".into(),
                    },
                ))
            }
            Err(_) => {
                let err = ClientError::of(
                    &self.server,
                    Kind::InitializeTimeout {
                        after: self.options.initialize_timeout,
                    },
                );
                session.gave_up(id, &err);
                return Err(err);
            }
        };
        if !is_supported_version(&init.protocol_version) {
            tracing::warn!(server = &*self.server, version = %init.protocol_version, "server chose an unsupported protocol version");
            return Err(ClientError::of(
                &self.server,
                Kind::UnsupportedProtocolVersion {
                    version: init.protocol_version,
                },
            ));
        }
        if let Some(connection) = &self.lock().connection {
            connection.negotiated(&init.protocol_version);
            session
                .telemetry()
                .agreed(&init.protocol_version, connection.session_digest());
        }
        let roots_before = self.roots_answered.get();
        session.initialized();
        if self.options.roots.is_some() {
            self.await_roots(session, roots_before).await;
        }
        Ok(init)
    }

    /// After `notifications/initialized`, with roots set: waits until the server has had them,
    /// or shows it did not ask, within [`ClientOptions::roots_wait`] (see [`roots`]: a `ping`
    /// round trip; when a `roots/list` came before its answer, a second one and four more of
    /// its length, at least 25 ms).
    async fn await_roots(&self, session: &Arc<RpcSession>, before: u64) {
        use crate::protocol::method::{Ping, Request as _};
        let ping = || async {
            let head = crate::transport::RequestHead::new(Ping::METHOD);
            // An error answer is an answer too: it came after what the server read before it.
            if let Ok((rx, guard)) = session.request::<Ping>(head, None::<&()>) {
                let _ = guard.answer_within(rx, self.options.roots_wait).await;
            }
        };
        let waited = tokio::time::timeout(self.options.roots_wait, async {
            ping().await;
            let asked = self.roots_answered.get() != before;
            if asked {
                let sent = tokio::time::Instant::now();
                ping().await;
                // The server applies the roots on its own time after it read our answer
                // (server-filesystem: a `realpath` and a `stat` per root, off its event loop),
                // and nothing on the wire says when it is done: give it a few of its own
                // round trips more, so a loaded machine (slower round trips) waits longer.
                let settle = (sent.elapsed() * ROOTS_SETTLE_ROUND_TRIPS).max(ROOTS_SETTLE_MIN);
                tokio::time::sleep(settle).await;
            }
            asked
        })
        .await;
        tracing::debug!(
            server = &*self.server,
            asked = *waited.as_ref().unwrap_or(&false),
            within_bound = waited.is_ok(),
            "roots: the first call may go"
        );
    }

    /// Counts a failure: the next attempt after a backoff, or the failed state after
    /// [`max_consecutive_failures`](ClientOptions::max_consecutive_failures) in a row, or at
    /// once when the failure is `permanent` (a refusal trying again cannot fix). `reason` is
    /// the operator's line, `chain` the whole error; `failures` always counts the real ones.
    pub(super) fn register_failure(
        &self,
        sup: &mut Supervisor,
        reason: String,
        chain: String,
        permanent: bool,
    ) {
        sup.failures = sup.failures.saturating_add(1);
        sup.last_error = Some(chain);
        sup.last_reason = Some(reason);
        let last_error = sup.last_error.as_deref().unwrap_or("");
        if permanent {
            sup.next_attempt = None;
            tracing::error!(
                server = &*self.server,
                failures = sup.failures,
                last_error,
                "MCP server refused the client in a way a restart cannot fix; marked failed at \
                 once, calls fail fast until it is re-enabled"
            );
            self.set_state(sup, ServerState::Failed);
        } else if sup.failures >= self.options.max_consecutive_failures {
            sup.next_attempt = None;
            tracing::error!(
                server = &*self.server,
                failures = sup.failures,
                last_error,
                "MCP server marked failed; calls fail fast until it is re-enabled"
            );
            self.set_state(sup, ServerState::Failed);
        } else {
            let delay = self
                .options
                .restart_delay(sup.failures, self.restart_rng.clone());
            sup.next_attempt = Some(Instant::now() + delay);
            tracing::info!(
                server = &*self.server,
                failures = sup.failures,
                backoff_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                last_error,
                "MCP server will be restarted on the next call after the backoff"
            );
            self.set_state(sup, ServerState::Restarting);
        }
    }

    /// The connection of `session` ended. Only the ready session's end counts: a session that
    /// never became the ready one (an era probe whose server exited on it, say) is no crash.
    pub(crate) fn session_closed(&self, session: &RpcSession, reason: &CloseReason) {
        let mut sup = self.lock();
        if !sup.is_ready_with(session) {
            return;
        }
        let connection = sup.connection.take();
        let answered = sup.session.take().is_some_and(|s| s.answered_a_call());
        let lived = sup
            .ready_at
            .map(|at| at.elapsed())
            .unwrap_or(Duration::ZERO);
        if reason.session_expired && (answered || lived >= self.options.stable_after) {
            // Not a failure: the server ended a session that worked and expects a new one,
            // which the next call starts at once. (One that expires before it ever answered a
            // call, behind a load balancer without sticky sessions say, counts as a failure
            // below, so it backs off and is marked failed in the end.)
            tracing::info!(server = &*self.server, reason = %reason.message, "MCP server ended the session; a new one starts on the next call");
            sup.failures = 0;
            sup.next_attempt = None;
            self.set_state(&mut sup, ServerState::Restarting);
            drop(sup);
            drop(connection);
            return;
        }
        // A connection that lived long, or on which the server answered a call, worked: its
        // end starts a new count (a proxy that cuts SSE streams every few seconds, or a server
        // that dies after each answer, stays usable instead of being marked failed).
        if lived >= self.options.stable_after || answered {
            sup.failures = 0;
        }
        tracing::warn!(server = &*self.server, reason = %reason.message, "MCP server connection ended");
        let line = format!(
            "{}{}",
            reason.message,
            super::error::last_stderr_line(reason.stderr_tail())
        );
        self.register_failure(&mut sup, line, format!("{reason}"), false);
        drop(sup);
        drop(connection);
    }

    /// The ready `session` was refused its protocol version mid-life (see
    /// `RpcSession::era_refused`): it ends, as a failure, and the era is found again at the
    /// next start.
    pub(crate) fn era_refused(&self, session: &RpcSession) {
        let mut sup = self.lock();
        if !sup.is_ready_with(session) {
            return;
        }
        sup.era = None;
        sup.session = None;
        let connection = sup.connection.take();
        let reason = format!(
            "refused protocol version {MODERN_PROTOCOL_VERSION} in a modern session (-32022); \
             its era is found again at the next start"
        );
        let chain = format!("MCP server `{}` {reason}", self.server);
        self.register_failure(&mut sup, reason, chain, false);
        drop(sup);
        drop(connection);
    }

    /// A request on the ready `session` could not connect to the server (no connection could
    /// be made at all): the server is down (killed, restarting, unplugged), so the session
    /// ends as if its connection had, counted as a failure like a crash (`status` says
    /// `restarting`, then `failed` after
    /// [`max_consecutive_failures`](ClientOptions::max_consecutive_failures) in a row), and
    /// the next call starts a new session after the backoff. Unless the server answered
    /// anything on the session since (`answers` was the count when the request failed): then
    /// it is reachable (a retry went through, a connect blip passed) and the session stays.
    /// Requests still in flight on an ended session fail as `ConnectionClosed`: they may have
    /// reached the server, so they are not sent again.
    pub(crate) fn unreachable(
        &self,
        session: &RpcSession,
        failure: &crate::transport::SendFailure,
        answers: u64,
    ) {
        let mut sup = self.lock();
        if !sup.is_ready_with(session) || session.answers() != answers {
            return;
        }
        let ended = sup.session.take();
        let connection = sup.connection.take();
        let answered = ended.as_ref().is_some_and(|s| s.answered_a_call());
        let lived = sup
            .ready_at
            .map(|at| at.elapsed())
            .unwrap_or(Duration::ZERO);
        if lived >= self.options.stable_after || answered {
            sup.failures = 0;
        }
        tracing::warn!(server = &*self.server, reason = %failure, "MCP server unreachable; the session ends");
        self.register_failure(
            &mut sup,
            failure.message().to_owned(),
            format!("MCP server `{}`: {failure}", self.server),
            false,
        );
        drop(sup);
        if let Some(ended) = ended {
            session_close_requested(
                &ended,
                &format!(
                    "the session ended: another request could not connect ({})",
                    failure.message()
                ),
            );
        }
        drop(connection);
    }

    /// Moves to `state` (disabled), ending the session and answering waiters.
    pub(super) fn stop(
        &self,
        state: ServerState,
    ) -> (Option<Arc<RpcSession>>, Option<Box<dyn Connection>>) {
        let mut sup = self.lock();
        sup.generation += 1;
        sup.attempt_running = false;
        sup.next_attempt = None;
        let session = sup.session.take();
        let connection = sup.connection.take();
        let waiters = std::mem::take(&mut sup.waiters);
        self.set_state(&mut sup, state);
        drop(sup);
        for waiter in waiters {
            let _ = waiter.send(Err(ClientError::of(&self.server, Kind::Disabled)));
        }
        (session, connection)
    }
}

/// After a server asked for the roots, how many of its `ping` round trips the first call
/// waits more, for the server to apply them (see `await_roots`).
const ROOTS_SETTLE_ROUND_TRIPS: u32 = 4;

/// The least of that wait.
const ROOTS_SETTLE_MIN: Duration = Duration::from_millis(25);

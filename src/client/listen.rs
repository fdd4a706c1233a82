//! The `subscriptions/listen` streams of a 2026-07-28 session: one for the list changes the
//! server offers (tools, prompts, resources), opened at start for the session's life, and one
//! naming every resource the client is subscribed to, opened again whenever that set changes.
//! Each is opened again after a pause when it ends or is cut while the session lives, and
//! given up on a refusal ([`listen_refused`]). What the streams carry takes the path of a
//! legacy server's notifications.

use super::rpc::ListenFilter;
use super::*;
use crate::telemetry::Outcome;
use std::sync::atomic::Ordering;

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
    match error {
        ClientError::JsonRpc { .. } => lasted < LISTEN_STEADY,
        ClientError::SendFailed { failure, .. } => {
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
        if !session.resource_stream.swap(true, Ordering::AcqRel) {
            self.keep_listening(session, Stream::Resources);
        }
    }

    fn keep_listening(&self, session: &Arc<RpcSession>, stream: Stream) {
        let server = Arc::clone(&self.server);
        let session = Arc::downgrade(session);
        let subscriptions = Arc::clone(&self.subscriptions);
        let what = match stream {
            Stream::Lists(_) => "list changes",
            Stream::Resources => "resource updates",
        };
        tokio::spawn(async move {
            // Equal jitter: between half the doubling pause and all of it.
            let mut backoff = JitteredBackoff::new(LISTEN_FIRST_PAUSE, LISTEN_MAX_PAUSE)
                .expect("the listen pauses are valid")
                .jitter(Jitter::Equal);
            let mut retry = 0;
            let mut reopened = false;
            // The last resource stream was cut (not ended for a new set).
            let mut cut = false;
            let mut set_changed = subscriptions.generation.subscribe();
            loop {
                let Some(live) = session.upgrade() else {
                    return;
                };
                let (filter, generation) = match &stream {
                    Stream::Lists(filter) => (filter.clone(), None),
                    Stream::Resources => {
                        let generation = *set_changed.borrow_and_update();
                        let uris = subscriptions.uris();
                        if uris.is_empty() {
                            if subscriptions.may_end(&live.resource_stream, generation) {
                                subscriptions.settle(generation, None, None);
                                return;
                            }
                            continue;
                        }
                        let filter = ListenFilter {
                            resource_subscriptions: uris,
                            ..ListenFilter::default()
                        };
                        // A stream opened again after a cut: an update may have come in the gap.
                        (filter, Some((generation, cut)))
                    }
                };
                let opened = Instant::now();
                // Only the list stream's acknowledgement has the tool list read again.
                let relist = reopened && filter.tools_list_changed;
                let sent = live.listen(&filter, relist, generation);
                drop(live);
                let outcome = match sent {
                    Ok((id, rx)) => {
                        let resources = matches!(stream, Stream::Resources);
                        tokio::select! {
                            answer = rx => match answer {
                                Ok(outcome) => outcome,
                                Err(_) => return,
                            },
                            changed = set_changed.changed(), if resources => {
                                // The set changed: this stream ends, one with the new set opens.
                                if let Some(live) = session.upgrade() {
                                    live.abandon(id, Outcome::Abandoned);
                                }
                                if changed.is_err() {
                                    return;
                                }
                                cut = false;
                                continue;
                            }
                        }
                    }
                    // Not sent (the bound on requests in flight, a full stdio pipe, or the
                    // session's end, seen just below): tried again like a cut.
                    Err(e) => Err(e),
                };
                match session.upgrade() {
                    Some(live) if !live.is_closed() => {}
                    _ => return,
                }
                let lasted = opened.elapsed();
                if lasted >= LISTEN_STEADY {
                    retry = 0;
                }
                let pause = backoff.delay(retry);
                let pause_ms = pause.as_millis() as u64;
                match &outcome {
                    Err(e) if listen_refused(e, lasted) => {
                        let Some((generation, _)) = generation else {
                            tracing::warn!(server = &*server, error = %e, what, "the server refused subscriptions/listen; changes are seen at the ttl or a restart");
                            return;
                        };
                        // The subscriptions waiting on this set fail, and remove their URIs;
                        // a set changed meanwhile is asked for at once.
                        tracing::warn!(server = &*server, error = %e, what, "the server refused subscriptions/listen for the subscribed resources");
                        subscriptions.settle(generation, None, Some(e.clone()));
                        match session.upgrade() {
                            Some(live)
                                if !subscriptions.may_end(&live.resource_stream, generation) =>
                            {
                                cut = false;
                                continue;
                            }
                            _ => return,
                        }
                    }
                    Ok(_) => tracing::info!(
                        server = &*server,
                        pause_ms,
                        what,
                        "the server ended a subscriptions/listen stream; opening it again"
                    ),
                    Err(e) => tracing::info!(
                        server = &*server,
                        error = %e,
                        pause_ms,
                        what,
                        "a subscriptions/listen stream was cut; opening it again"
                    ),
                }
                cut = true;
                if matches!(stream, Stream::Resources) {
                    // A change of the set does not wait out the pause.
                    tokio::select! {
                        () = tokio::time::sleep(pause) => {}
                        changed = set_changed.changed() => if changed.is_err() { return },
                    }
                } else {
                    tokio::time::sleep(pause).await;
                }
                retry = retry.saturating_add(1);
                reopened = true;
            }
        });
    }
}

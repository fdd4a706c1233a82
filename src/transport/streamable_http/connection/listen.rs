//! The GET stream: what the server sends on its own, opened after the handshake and opened
//! again (jittered backoff) while the session lives; requests wait for its first answer.

use super::*;

/// The first wait before opening the GET stream again; it doubles up to [`MAX_GET_BACKOFF`],
/// each wait drawn between half of that and all of it.
const FIRST_GET_BACKOFF: Duration = Duration::from_secs(1);
const MAX_GET_BACKOFF: Duration = Duration::from_secs(60);

impl Conn {
    /// Keeps the stream of server-initiated messages open while the session lives.
    pub(super) async fn listen(self: Arc<Self>) {
        // Not before `notifications/initialized` was POSTed: a server may refuse a stream
        // before it.
        self.initialized().await;
        // Equal jitter: between half the doubling pause and all of it.
        let mut backoff = JitteredBackoff::new(FIRST_GET_BACKOFF, MAX_GET_BACKOFF)
            .expect("the GET pauses are valid")
            .jitter(Jitter::Equal);
        let mut attempt = 0;
        let mut last: Option<String> = None;
        let mut retry: Option<Duration> = None;
        loop {
            let opened = self.open_get(last.as_deref()).await;
            self.get_settled.send_replace(true);
            match opened {
                Ok(mut body) => {
                    tracing::debug!(server = %self.server, "GET stream open");
                    let mut parser = EventParser::new(self.limit);
                    parser.seed(last.clone(), retry);
                    let (end, got_events) = self.pump(&mut body, &mut parser, None).await;
                    if let StreamEnd::Cut(why) = end {
                        tracing::debug!(server = %self.server, "GET stream {why}");
                    }
                    last = parser.last_event_id().map(str::to_owned);
                    retry = parser.retry();
                    if got_events {
                        attempt = 0;
                    }
                }
                Err(Listen::NotOffered(status, None)) => {
                    tracing::debug!(server = %self.server, status = %status, "the server offers no GET stream");
                    self.no_get_stream.store(true, Ordering::Release);
                    return;
                }
                Err(Listen::NotOffered(status, Some(problem))) => {
                    // A redirect (never followed) or a refusal of the credentials: the operator
                    // has something to fix, so it is said as for any other request.
                    tracing::warn!(server = %self.server, status = %status, problem = %problem, "GET stream refused; the session goes on without it");
                    self.no_get_stream.store(true, Ordering::Release);
                    return;
                }
                Err(Listen::Expired) => return self.expire(None, "the GET"),
                Err(Listen::Failed(why)) => {
                    tracing::warn!(server = %self.server, problem = %why, backoff_ms = backoff.ceiling(attempt).as_millis() as u64, "GET stream could not be opened; trying again");
                }
            }
            let pause = backoff.delay(attempt);
            let wait = retry.map_or(pause, |r| clamp_retry(r).max(pause));
            tokio::time::sleep(wait).await;
            attempt = attempt.saturating_add(1);
        }
    }

    async fn open_get(&self, last: Option<&str>) -> Result<Body, Listen> {
        let how = Exchange {
            what: "the GET",
            timeout: Some(self.inner.connect_timeout),
            idempotent: true,
            url: &self.inner.url,
            first: None,
        };
        let make = || self.request(Method::GET, &ACCEPT_STREAM, Bytes::new(), last, None);
        let outcome = exchange(&self.inner.http, how, make).await;
        let response = match outcome {
            Outcome::Answered(response) => response,
            Outcome::Expired => return Err(Listen::Expired),
            mut refused => {
                if let Some(body) = refused.take_body() {
                    drain_soon(body).await;
                }
                // A refusal that passes, or no answer, is tried again; any other (405, 401,
                // a redirect) says there is no stream to have, and why when it is one to fix.
                let status = refused.status().filter(|_| !refused.is_transient());
                let failure = refused.into_failure("the GET", &self.inner.auth_hint);
                return Err(match status {
                    Some(status) => Listen::NotOffered(
                        status,
                        failure.is_permanent().then(|| failure.to_string()),
                    ),
                    None => Listen::Failed(failure.to_string()),
                });
            }
        };
        if !matches!(content_type(&response), ContentType::EventStream) {
            return Err(Listen::NotOffered(response.status(), None));
        }
        Ok(response.into_body())
    }

    /// Waits until `notifications/initialized` was POSTed (at once before the handshake is
    /// done, when there is nothing to wait for yet).
    pub(super) async fn initialized(&self) {
        self.queue
            .wait_sent(self.initialized_seq.load(Ordering::Acquire))
            .await;
    }

    /// After the handshake, waits (at most the connect timeout, which also bounds the GET)
    /// until the first GET was answered; at once before the handshake and once it was.
    pub(super) async fn get_answered(&self) {
        if self.initialized_seq.load(Ordering::Acquire) == 0 || *self.get_settled.borrow() {
            return;
        }
        let mut settled = self.get_settled.subscribe();
        let _ = tokio::time::timeout(self.inner.connect_timeout, settled.wait_for(|s| *s)).await;
    }
}

enum Listen {
    /// Refused for good; with the operator's line when the refusal is one to fix (a redirect,
    /// the credentials), not for a plain `405` or an answer that is no event stream.
    NotOffered(StatusCode, Option<String>),
    Expired,
    Failed(String),
}

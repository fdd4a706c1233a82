//! [`ClientOptions`]: the knobs of one client session and its supervision.

use std::fmt;
use std::time::Duration;

use kaged_mcp_layers::retry::{Jitter, JitterRng, JitteredBackoff};

use crate::config::TaskMode;
use crate::protocol::{Implementation, LoggingLevel};
use crate::transport::DEFAULT_FRAME_LIMIT;

use super::elicitation::ElicitationService;
use super::era::EraPreference;
use super::era_memory::EraMemory;
use super::roots::Root;
use super::server_requests::ServerRequestService;

/// The default [`ClientOptions::noise_grace`]: 5 s.
pub const DEFAULT_NOISE_GRACE: Duration = Duration::from_secs(5);

/// How a [`McpClient`](super::McpClient) runs and supervises its server.
///
/// Build with the setters, `ClientOptions::default().frame_limit(1 << 20)`, or set a field
/// of a default value; more knobs may come (the struct is `#[non_exhaustive]`).
#[derive(Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// The longest message accepted from the server (default 16 MiB). A longer one fails the
    /// call it answers and is discarded; the stream stays in sync.
    pub frame_limit: usize,
    /// The first restart delay after a failure (default 1 s); it doubles with each consecutive
    /// failure.
    pub backoff_base: Duration,
    /// The longest restart delay (default 60 s).
    pub backoff_cap: Duration,
    /// How a restart delay is drawn below its ceiling
    /// ([`backoff_delay`](Self::backoff_delay)), by
    /// [`JitteredBackoff`](kaged_mcp_layers::retry::JitteredBackoff) (default
    /// [`Jitter::Equal`]: between half the ceiling and the ceiling, so the servers of a daemon
    /// that crashed together, or many daemons behind one server, do not restart in step).
    pub backoff_jitter: Jitter,
    /// After this many consecutive failures the server is marked failed (default 5).
    pub max_consecutive_failures: u32,
    /// A session that lived at least this long after `initialize`, or on which the server
    /// answered a `tools/call` (a result that decoded, or a JSON-RPC error), ends a run of
    /// failures: its crash counts as the first of a new
    /// run (default 30 s). A shorter-lived one that answered no call counts as a crash "soon
    /// after" start-up.
    pub stable_after: Duration,
    /// How long the server gets to answer `initialize` (default 30 s).
    pub initialize_timeout: Duration,
    /// How long the server gets to answer each request the client sends on its own, outside
    /// the stack's timeout: every `tools/list` page (default 60 s; the session sets it to the
    /// server's `timeout_ms`). One that is not answered in time is cancelled and fails with
    /// [`RequestTimeout`](super::ErrorKind::RequestTimeout).
    pub request_timeout: Duration,
    /// The bound on requests in flight; past it calls fail fast with
    /// [`TooManyInFlight`](super::ErrorKind::TooManyInFlight) (default 1024). The standard
    /// stack's limit ([`StackSettings::max_in_flight`](crate::stack::StackSettings::max_in_flight),
    /// 64 by default) makes calls over *it* wait instead, as long as it is below this bound
    /// ([`Session`](crate::Session) raises this bound to the limit + 64 when needed).
    pub max_in_flight: usize,
    /// `clientInfo` sent in `initialize` (default: this crate's name and version).
    pub client_info: Implementation,
    /// The handler of server→client requests below `RejectSampling` (default:
    /// [`DefaultServerRequests`](super::server_requests::DefaultServerRequests): `ping`
    /// answered, everything else "method not found"). Sampling is refused whatever is set here.
    pub server_request_handler: Option<ServerRequestService>,
    /// The handler of `elicitation/create` (default: none, so elicitation is not advertised
    /// and is answered "method not found"). When set, `initialize` advertises form-mode
    /// elicitation and accepted forms get the schema's defaults for omitted fields; see
    /// [`elicitation`](super::elicitation).
    pub elicitation_handler: Option<ElicitationService>,
    /// How long a call may wait for a restart whose backoff is still running (default 0: it
    /// fails at once with [`BackingOff`](super::ErrorKind::BackingOff)). A call that
    /// arrives while the server waits out its backoff waits for the restart and goes through
    /// when the backoff still to run is at most this; the session sets it to the server's call
    /// timeout, which then bounds the wait. A call never waits on a failed server.
    pub wait_for_restart: Duration,
    /// Which protocol era to speak (default [`EraPreference::Auto`]: probe with
    /// `server/discover`, fall back to `initialize`; see [`era`](super::era)).
    pub era: EraPreference,
    /// How long the era probe waits for `server/discover` to be answered before taking the
    /// server for a legacy one that ignores requests before `initialize` (default 10 s). It
    /// covers the server's start-up (a Python server takes 2–3 s to answer its first request),
    /// so it is not short; real legacy servers answer the probe with an error at once, and the
    /// outcome is kept for the client's life.
    pub probe_timeout: Duration,
    /// How long a start waits, after the server wrote a line that is not a JSON-RPC message
    /// before any that is, for one that is (default 5 s): a banner followed by JSON-RPC is
    /// tolerated, a program that printed text and then nothing MCP fails its start then,
    /// naming what it printed, instead of at the end of the startup timeout.
    pub noise_grace: Duration,
    /// Where the era the probe found is remembered between runs (default none: every start
    /// of a legacy server probes first). With [`EraPreference::Auto`], a memory that says
    /// `legacy` skips the probe; see [`era_memory`](super::era_memory).
    pub era_memory: Option<EraMemory>,
    /// Which calls run as MCP tasks (default [`TaskMode::Required`]: only tools that require
    /// it, and a 2026-07-28 server is told the client speaks the tasks extension); see
    /// [`tasks`](super::tasks).
    pub tasks: TaskMode,
    /// How long a server should keep a task the client asked for (2025-11-25 `params.task.ttl`,
    /// default 10 min, the stack's progress cap; the session sets it to the longer of that cap
    /// and the server's call timeout, so no call outlives its task).
    pub task_ttl: Duration,
    /// The level the server is asked to log at (`logging/setLevel`, sent at each start when
    /// the server offers `logging`; default none: the server's own level). Its messages reach
    /// `tracing` at the matching level either way.
    pub log_level: Option<LoggingLevel>,
    /// The roots the server may see (default none: the `roots` capability is not advertised
    /// and `roots/list` is refused); see [`roots`](super::roots).
    pub roots: Option<Vec<Root>>,
    /// With [`roots`](Self::roots) set, how long a legacy start may wait for the server to
    /// ask for them and take the answer in, before the first call is sent (default 2 s; see
    /// [`roots`](super::roots)). A server that does not ask costs one `ping` round trip.
    pub roots_wait: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            frame_limit: DEFAULT_FRAME_LIMIT,
            backoff_base: Duration::from_secs(1),
            backoff_cap: Duration::from_secs(60),
            backoff_jitter: Jitter::Equal,
            max_consecutive_failures: 5,
            stable_after: Duration::from_secs(30),
            initialize_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            max_in_flight: 1024,
            client_info: Implementation::this_client(),
            server_request_handler: None,
            elicitation_handler: None,
            wait_for_restart: Duration::ZERO,
            era: EraPreference::Auto,
            probe_timeout: Duration::from_secs(10),
            noise_grace: DEFAULT_NOISE_GRACE,
            era_memory: None,
            tasks: TaskMode::Required,
            task_ttl: Duration::from_secs(600),
            log_level: None,
            roots: None,
            roots_wait: Duration::from_secs(2),
        }
    }
}

impl ClientOptions {
    /// Sets the frame limit.
    #[must_use]
    pub fn frame_limit(mut self, bytes: usize) -> Self {
        self.frame_limit = bytes;
        self
    }

    /// Sets the restart backoff: first delay and cap.
    #[must_use]
    pub fn backoff(mut self, base: Duration, cap: Duration) -> Self {
        self.backoff_base = base;
        self.backoff_cap = cap;
        self
    }

    /// Sets [`backoff_jitter`](Self::backoff_jitter).
    #[must_use]
    pub fn backoff_jitter(mut self, jitter: Jitter) -> Self {
        self.backoff_jitter = jitter;
        self
    }

    /// Sets how many consecutive failures mark the server failed.
    #[must_use]
    pub fn max_consecutive_failures(mut self, n: u32) -> Self {
        self.max_consecutive_failures = n;
        self
    }

    /// Sets the `initialize` timeout.
    #[must_use]
    pub fn initialize_timeout(mut self, timeout: Duration) -> Self {
        self.initialize_timeout = timeout;
        self
    }

    /// Sets [`stable_after`](Self::stable_after).
    #[must_use]
    pub fn stable_after(mut self, after: Duration) -> Self {
        self.stable_after = after;
        self
    }

    /// Sets [`max_in_flight`](Self::max_in_flight).
    #[must_use]
    pub fn max_in_flight(mut self, limit: usize) -> Self {
        self.max_in_flight = limit;
        self
    }

    /// Sets [`client_info`](Self::client_info).
    #[must_use]
    pub fn client_info(mut self, info: Implementation) -> Self {
        self.client_info = info;
        self
    }

    /// Sets [`request_timeout`](Self::request_timeout).
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets the handler of server→client requests (below `RejectSampling`).
    #[must_use]
    pub fn server_request_handler(mut self, handler: ServerRequestService) -> Self {
        self.server_request_handler = Some(handler);
        self
    }

    /// Sets the elicitation handler, which turns elicitation on (see
    /// [`elicitation_handler`](Self::elicitation_handler)).
    #[must_use]
    pub fn elicitation_handler(mut self, handler: ElicitationService) -> Self {
        self.elicitation_handler = Some(handler);
        self
    }

    /// Sets [`log_level`](Self::log_level).
    #[must_use]
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Sets [`roots_wait`](Self::roots_wait).
    #[must_use]
    pub fn roots_wait(mut self, wait: Duration) -> Self {
        self.roots_wait = wait;
        self
    }

    /// Sets [`roots`](Self::roots), which turns the `roots` capability on.
    #[must_use]
    pub fn roots(mut self, roots: Vec<Root>) -> Self {
        self.roots = Some(roots);
        self
    }

    /// The client's capabilities as these options make them (see
    /// [`client_capabilities`](crate::protocol::lifecycle::client_capabilities)), with the
    /// skills extension declared (`extensions["io.modelcontextprotocol/skills"]`, in
    /// `initialize` and in a 2026-07-28 request's `_meta` alike): the client speaks
    /// `skills/list` and `skills/get` ([`McpClient::load_skill`](crate::client::McpClient::load_skill)).
    pub(crate) fn capabilities(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut capabilities = crate::protocol::lifecycle::client_capabilities(
            self.elicitation_handler.is_some(),
            self.roots.is_some(),
        );
        crate::protocol::lifecycle::declare_extension(
            &mut capabilities,
            crate::protocol::skills::SKILLS_EXTENSION,
        );
        capabilities
    }

    /// Sets [`era`](Self::era).
    #[must_use]
    pub fn era(mut self, era: EraPreference) -> Self {
        self.era = era;
        self
    }

    /// Sets [`noise_grace`](Self::noise_grace).
    #[must_use]
    pub fn noise_grace(mut self, grace: Duration) -> Self {
        self.noise_grace = grace;
        self
    }

    /// Sets [`probe_timeout`](Self::probe_timeout).
    #[must_use]
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// Sets [`era_memory`](Self::era_memory).
    #[must_use]
    pub fn era_memory(mut self, memory: EraMemory) -> Self {
        self.era_memory = Some(memory);
        self
    }

    /// Sets which calls run as tasks.
    #[must_use]
    pub fn tasks(mut self, mode: TaskMode) -> Self {
        self.tasks = mode;
        self
    }

    /// Sets how long a server should keep a task.
    #[must_use]
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.task_ttl = ttl;
        self
    }

    /// Sets [`wait_for_restart`](Self::wait_for_restart).
    #[must_use]
    pub fn wait_for_restart(mut self, limit: Duration) -> Self {
        self.wait_for_restart = limit;
        self
    }

    /// The ceiling of the restart delay after `failures` consecutive failures (1 →
    /// `backoff_base`), doubling up to `backoff_cap`; the delay itself is drawn below it
    /// ([`restart_delay`](Self::restart_delay)).
    pub fn backoff_delay(&self, failures: u32) -> Duration {
        match self.restart_backoff() {
            Some(backoff) => backoff.ceiling(failures.saturating_sub(1)),
            None => self.backoff_cap.min(self.backoff_base),
        }
    }

    /// The restart delay after `failures` consecutive failures, drawn below
    /// [`backoff_delay`](Self::backoff_delay) by [`backoff_jitter`](Self::backoff_jitter)
    /// from `rng`.
    pub fn restart_delay(&self, failures: u32, rng: impl JitterRng) -> Duration {
        match self.restart_backoff() {
            Some(backoff) => backoff.rng(rng).delay(failures.saturating_sub(1)),
            // A zero base, or a cap below it: no backoff to draw.
            None => self.backoff_cap.min(self.backoff_base),
        }
    }

    fn restart_backoff(&self) -> Option<JitteredBackoff> {
        JitteredBackoff::new(self.backoff_base, self.backoff_cap)
            .ok()
            .map(|b| b.jitter(self.backoff_jitter))
    }
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("frame_limit", &self.frame_limit)
            .field("backoff_base", &self.backoff_base)
            .field("backoff_cap", &self.backoff_cap)
            .field("backoff_jitter", &self.backoff_jitter)
            .field("max_consecutive_failures", &self.max_consecutive_failures)
            .field("stable_after", &self.stable_after)
            .field("initialize_timeout", &self.initialize_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_in_flight", &self.max_in_flight)
            .field("client_info", &self.client_info)
            .field("wait_for_restart", &self.wait_for_restart)
            .field("era", &self.era)
            .field("era_memory", &self.era_memory)
            .field("probe_timeout", &self.probe_timeout)
            .field("noise_grace", &self.noise_grace)
            .field("tasks", &self.tasks)
            .field("task_ttl", &self.task_ttl)
            .field("log_level", &self.log_level)
            .field("roots", &self.roots)
            .field("roots_wait", &self.roots_wait)
            .field(
                "server_request_handler",
                &self.server_request_handler.as_ref().map(|_| "custom"),
            )
            .field(
                "elicitation_handler",
                &self.elicitation_handler.as_ref().map(|_| "custom"),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_one_second_and_stops_at_sixty() {
        let o = ClientOptions::default();
        let secs: Vec<u64> = (1..=9).map(|n| o.backoff_delay(n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(o.backoff_delay(u32::MAX).as_secs(), 60);
    }

    #[test]
    fn restart_delays_are_drawn_between_half_the_ceiling_and_the_ceiling() {
        let o = ClientOptions::default();
        let rng = kaged_mcp_layers::retry::XorShiftRng::with_seed(7);
        let mut seen = std::collections::HashSet::new();
        for n in 1..=9 {
            for _ in 0..50 {
                let d = o.restart_delay(n, rng.clone());
                let ceiling = o.backoff_delay(n);
                assert!(
                    d >= ceiling / 2 && d <= ceiling,
                    "{n}: {d:?} of {ceiling:?}"
                );
                seen.insert(d);
            }
        }
        assert!(seen.len() > 100, "jittered, not fixed: {}", seen.len());
        let exact = o.backoff_jitter(Jitter::None);
        assert_eq!(exact.restart_delay(3, || 0.0), Duration::from_secs(4));
    }
}

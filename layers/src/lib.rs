//! Generic `tower` layers of kaged-mcp.
//!
//! Each layer lives in its own module with its `Layer`, `Service` and response future, and
//! depends on `tower`, never on the MCP types: where a layer must look inside a value it defines
//! a small trait that `kaged-mcp` implements for its own types.
//!
//! | module | what it does | the trait it needs |
//! |---|---|---|
//! | [`truncate`] | caps every response at a number of bytes | [`Truncatable`](truncate::Truncatable) on the response |
//! | [`stats`] | [`Stats`](stats::Stats): calls, errors, failures, timeouts and latency quantiles in bounded memory | [`Outcome`](stats::Outcome) on the response |
//! | [`limit`] | [`InFlightLimit`](limit::InFlightLimit): at most `max` calls at once; the rest wait in their futures, in the order they started waiting | none |
//! | [`timeout`] | [`ProgressTimeout`](timeout::ProgressTimeout): idle timeout reset by progress, with a total cap (a plain timeout for a request without progress); one error type, [`Elapsed`](timeout::Elapsed) | [`ProgressAware`](timeout::ProgressAware) on the request |
//! | [`retry`] | [`RetryPolicy`](retry::RetryPolicy) for tower's `Retry`: only what is safe, jittered backoff, attempt limit, budget | [`RetrySafe`](retry::RetrySafe) on the request |
//! | [`validate`] | refuses a request that fails its own check before it is sent, and checks its response | [`Validated`](validate::Validated) on the request |
//! | [`reject_sampling`] | refuses a server's `sampling/createMessage` | [`JsonRpcMethod`](reject_sampling::JsonRpcMethod) on the request |
//! | [`auth`] (feature `auth`, default) | adds a sensitive authentication header to HTTP requests, renewed by a token source on 401/403 | [`TokenSource`](auth::TokenSource) for the header |
//!
//! [`ServiceBuilderExt`] adds them to `tower::ServiceBuilder`.
//!
//! # Order
//! The standard stack of a tool call, outermost first:
//!
//! **Trace → Stats → Truncate → Timeout → Limit → Retry → client.**
//!
//! The trace span (opened by `kaged-mcp`) sees the whole call. Truncation sits outside the
//! timeout, so what reaches the agent is always capped. The timeout wraps the limit and the
//! retry, so `timeout_ms` bounds the call as the caller sees it, a wait for a place and backoff
//! included. The limit wraps the retry, so a call keeps its place across its attempts. The retry sits on the
//! client, where [`retry::NotSent`] errors come from.
//!
//! Server→client requests pass their own stack: RejectSampling → the handlers of `kaged-mcp`.
//! Both HTTP transports (Streamable HTTP and SSE) put [`auth::AuthLayer`] over their HTTP
//! client.
//!
//! # Example
//! ```
//! use std::sync::{atomic::{AtomicBool, Ordering}, Arc};
//! use std::time::Duration;
//! use kaged_mcp_layers::retry::{NotSent, RetryPolicy, RetrySafe};
//! use kaged_mcp_layers::ServiceBuilderExt;
//! use tower::{service_fn, BoxError, ServiceBuilder, ServiceExt};
//!
//! #[derive(Clone)]
//! struct ToolCall { read_only: bool }
//! impl RetrySafe for ToolCall {
//!     fn retry_safe(&self) -> bool { self.read_only }
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), BoxError> {
//! // A client whose first connection attempt is refused.
//! let refused = Arc::new(AtomicBool::new(true));
//! let client = service_fn(move |_: ToolCall| {
//!     let refused = refused.swap(false, Ordering::SeqCst);
//!     async move {
//!         if refused {
//!             return Err(BoxError::from(NotSent::new("connection refused")));
//!         }
//!         Ok(String::from("a result longer than the cap"))
//!     }
//! });
//! let policy = RetryPolicy::new(Duration::from_millis(200), Duration::from_secs(5))?;
//! let stack = ServiceBuilder::new()
//!     .truncate(8)
//!     .timeout(Duration::from_secs(30))
//!     .retry_policy(policy)
//!     .service(client);
//! assert_eq!(stack.oneshot(ToolCall { read_only: false }).await?, "a result");
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

#[cfg(feature = "auth")]
pub mod auth;
mod builder;
pub mod limit;
pub mod reject_sampling;
pub mod retry;
pub mod stats;
pub mod timeout;
pub mod truncate;
pub mod validate;

pub use builder::ServiceBuilderExt;

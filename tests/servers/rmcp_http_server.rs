//! An MCP Streamable HTTP server built with `rmcp`, the official Rust SDK: a real HTTP peer for
//! kaged-mcp's integration tests, with the same tools as `rmcp_server` (the stdio one).
//!
//! Build with `cargo build --example rmcp_http_server`, run as
//! `target/<profile>/examples/rmcp_http_server [--port N] [--stateless] [--json]`.
//! It listens on 127.0.0.1 (`--port 0`, the default, lets the OS pick), prints `PORT=<n>` as
//! its first stdout line, and serves rmcp's `StreamableHttpService` on `/mcp` through hyper's
//! HTTP/1.1 server (no axum); every other path is a 404. It runs until killed.
//!
//! - `--stateless`: `legacy_session_mode = false` (no `mcp-session-id`, POST only; GET and
//!   DELETE are 405) with rmcp's `NeverSessionManager`.
//! - `--json`: `json_response = true`. rmcp honours it only without sessions, so it takes
//!   effect together with `--stateless` (or for requests negotiating 2026-07-28, which rmcp
//!   always serves statelessly).
//!
//! Tools:
//! - `echo {message}` → `Echo: <message>`
//! - `add {a, b}` → the sum of two integers, as text

use std::{convert::Infallible, io::Write, net::SocketAddr, sync::Arc};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::{body::Incoming, server::conn::http1, service::service_fn, Request, Response};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::{
    session::{local::LocalSessionManager, never::NeverSessionManager},
    SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use tokio::net::TcpListener;

#[path = "rmcp_tools.rs"]
mod tools;

use tools::TestServer;

/// The command line.
#[derive(Debug, Default)]
struct Args {
    port: u16,
    stateless: bool,
    json: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--port" => {
                let value = it.next().ok_or("--port needs a value")?;
                args.port = value.parse().map_err(|e| format!("--port {value}: {e}"))?;
            }
            "--stateless" => args.stateless = true,
            "--json" => args.json = true,
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: rmcp_http_server [--port N] [--stateless] [--json]"
                ))
            }
        }
    }
    Ok(args)
}

/// Accepts connections forever, each served by hyper's HTTP/1.1 server; `/mcp` goes to rmcp.
async fn serve<M: SessionManager>(
    listener: TcpListener,
    mcp: StreamableHttpService<TestServer, M>,
) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let mcp = mcp.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let mut mcp = mcp.clone();
                async move {
                    if req.uri().path() == "/mcp" {
                        tower::Service::call(&mut mcp, req).await
                    } else {
                        Ok::<_, Infallible>(not_found())
                    }
                }
            });
            // A client hanging up on an open SSE stream is routine, not worth a line.
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                if !e.is_incomplete_message() {
                    eprintln!("rmcp_http_server: connection: {e}");
                }
            }
        });
    }
}

fn not_found() -> Response<BoxBody<Bytes, Infallible>> {
    Response::builder()
        .status(404)
        .body(Full::new(Bytes::from_static(b"Not Found")).boxed())
        .expect("valid response")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], args.port))).await?;
    let port = listener.local_addr()?.port();
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "PORT={port}")?;
        out.flush()?;
    }
    eprintln!(
        "rmcp_http_server: pid {}, http://127.0.0.1:{port}/mcp (stateless: {}, json: {})",
        std::process::id(),
        args.stateless,
        args.json
    );
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!args.stateless)
        .with_json_response(args.json);
    let factory = || Ok(TestServer::new());
    if args.stateless {
        let mcp =
            StreamableHttpService::new(factory, Arc::new(NeverSessionManager::default()), config);
        serve(listener, mcp).await?;
    } else {
        let mcp =
            StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
        serve(listener, mcp).await?;
    }
    Ok(())
}

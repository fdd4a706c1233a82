//! A tiny HTTP/1.1 server on 127.0.0.1 for faults the Python fault server does not have: a
//! POST answered with a chosen status, a wrong `Content-Type` on the stream, a record of every
//! request's headers, and (with `answer: true`) a scripted MCP server that answers
//! `initialize` and `tools/list` (one tool, `wait`), never answers a `tools/call`, and ends its
//! stream on [`Mini::hang_up`].

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};

/// One request as received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    pub(crate) path: String,
    /// Header names lower-case, values as sent.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Seen {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How the mini server behaves.
#[derive(Debug, Clone)]
pub(crate) struct MiniConfig {
    /// The status of every POST.
    pub(crate) post_status: u16,
    /// The `Content-Type` of the GET's answer.
    pub(crate) content_type: &'static str,
    /// Bytes written on the stream after the headers (the endpoint event, …).
    pub(crate) stream: String,
    /// Answer `initialize` and `tools/list` on the stream (see the module docs).
    pub(crate) answer: bool,
    /// The status of every GET, and its `Location` header when it is a redirect (200: the
    /// stream).
    pub(crate) get_status: u16,
    pub(crate) location: &'static str,
}

impl Default for MiniConfig {
    fn default() -> Self {
        Self {
            post_status: 202,
            content_type: "text/event-stream",
            stream: "event: endpoint\ndata: /post?s=1\n\n".into(),
            answer: false,
            get_status: 200,
            location: "",
        }
    }
}

/// A running mini server; it stops with the test's runtime.
pub(crate) struct Mini {
    pub(crate) port: u16,
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
    live: Arc<Live>,
}

/// The open stream's message queue and the hang-up signal.
#[derive(Default)]
struct Live {
    stream: Mutex<Option<mpsc::UnboundedSender<String>>>,
    hang_up: Notify,
}

impl Mini {
    pub(crate) async fn start(config: MiniConfig) -> Mini {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let live = Arc::new(Live::default());
        let shared = Arc::clone(&live);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(
                    socket,
                    config.clone(),
                    Arc::clone(&record),
                    Arc::clone(&shared),
                ));
            }
        });
        Mini { port, seen, live }
    }

    /// Ends the open event stream (the server goes away mid-session).
    pub(crate) fn hang_up(&self) {
        self.live.hang_up.notify_one();
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.port)
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    config: MiniConfig,
    seen: Arc<Mutex<Vec<Seen>>>,
    live: Arc<Live>,
) {
    let mut buf = Vec::new();
    loop {
        // Read one request's head.
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 4096];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut first = lines.next().unwrap_or("").split(' ');
        let method = first.next().unwrap_or("").to_owned();
        let path = first.next().unwrap_or("").to_owned();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + len {
            let mut chunk = [0u8; 4096];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = buf[head_end..head_end + len].to_vec();
        buf.drain(..head_end + len);
        if config.answer && method == "POST" {
            answer(&live, &body);
        }
        seen.lock().unwrap().push(Seen {
            method: method.clone(),
            path,
            headers,
            body,
        });
        if method == "GET" && config.get_status != 200 {
            let answer = format!(
                "HTTP/1.1 {} Moved\r\nLocation: {}\r\nContent-Length: 0\r\n\r\n",
                config.get_status, config.location
            );
            if socket.write_all(answer.as_bytes()).await.is_err() {
                return;
            }
            continue;
        }
        if method == "GET" {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nCache-Control: no-cache\r\n\
                 Connection: close\r\n\r\n",
                config.content_type
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(config.stream.as_bytes()).await;
            let _ = socket.flush().await;
            let (tx, mut rx) = mpsc::unbounded_channel::<String>();
            *live.stream.lock().unwrap() = Some(tx);
            // Keep the stream open until the client goes away or the test hangs up.
            let mut sink = [0u8; 1024];
            loop {
                tokio::select! {
                    () = live.hang_up.notified() => return,
                    Some(message) = rx.recv() => {
                        let event = format!("event: message\ndata: {message}\n\n");
                        if socket.write_all(event.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                    read = socket.read(&mut sink) => {
                        if matches!(read, Ok(0) | Err(_)) {
                            return;
                        }
                    }
                }
            }
        }
        let reason = match config.post_status {
            202 => "Accepted",
            401 => "Unauthorized",
            403 => "Forbidden",
            500 => "Internal Server Error",
            _ => "Whatever",
        };
        let answer = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Length: 0\r\n\r\n",
            config.post_status
        );
        if socket.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// The scripted server's answer to one POSTed message, if any, queued on the stream.
fn answer(live: &Live, body: &[u8]) {
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(body) else {
        return;
    };
    let id = message["id"].clone();
    let result = match message["method"].as_str() {
        Some("initialize") => serde_json::json!({
            "protocolVersion": "2024-11-05",
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "mini", "version": "0" }
        }),
        Some("tools/list") => serde_json::json!({
            "tools": [{ "name": "wait", "inputSchema": { "type": "object" } }]
        }),
        _ => return,
    };
    let answer = serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": result });
    if let Some(tx) = live.stream.lock().unwrap().as_ref() {
        let _ = tx.send(answer.to_string());
    }
}

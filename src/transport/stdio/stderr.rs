//! The stderr drain: read continuously, logged line by line, the last few KiB kept.
//!
//! A server that floods stderr never blocks on a full pipe and never grows the daemon's memory:
//! each line is logged at DEBUG (cut at [`MAX_LOG_LINE`] bytes), and only the last
//! `stderr_tail_bytes` are kept, to be attached to the error when the server fails to start or
//! dies.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt};

/// The longest stderr line logged; the rest of a longer line is left out of the log.
pub(crate) const MAX_LOG_LINE: usize = 4 * 1024;

/// The last bytes a server wrote to stderr.
#[derive(Debug)]
pub(crate) struct StderrTail {
    buf: Vec<u8>,
    cap: usize,
}

impl StderrTail {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            buf: Vec::new(),
            cap,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if self.cap == 0 {
            return;
        }
        if bytes.len() >= self.cap {
            self.buf.clear();
            self.buf.extend_from_slice(&bytes[bytes.len() - self.cap..]);
            return;
        }
        self.buf.extend_from_slice(bytes);
        if self.buf.len() > 2 * self.cap {
            let excess = self.buf.len() - self.cap;
            self.buf.drain(..excess);
        }
    }

    /// The last `cap` bytes, lossily decoded.
    pub(crate) fn text(&self) -> String {
        let start = self.buf.len().saturating_sub(self.cap);
        String::from_utf8_lossy(&self.buf[start..]).into_owned()
    }
}

/// Reads `input` to its end, logging each line for `server` and keeping the tail in `tail`.
pub(crate) async fn drain<R: AsyncRead + Unpin>(
    mut input: R,
    server: Arc<str>,
    tail: Arc<Mutex<StderrTail>>,
) {
    let mut chunk = vec![0u8; 8 * 1024];
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut cut = false;
    loop {
        let n = match input.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let bytes = &chunk[..n];
        tail.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(bytes);
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            let (body, complete) = match piece.strip_suffix(b"\n") {
                Some(body) => (body, true),
                None => (piece, false),
            };
            let room = MAX_LOG_LINE - line.len();
            if body.len() > room {
                line.extend_from_slice(&body[..room]);
                cut = true;
            } else {
                line.extend_from_slice(body);
            }
            if complete {
                log_line(&server, &line, cut);
                line.clear();
                cut = false;
            }
        }
    }
    if !line.is_empty() {
        log_line(&server, &line, cut);
    }
}

fn log_line(server: &str, line: &[u8], cut: bool) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let text = String::from_utf8_lossy(line);
    if cut {
        tracing::debug!(server, stderr = %text, cut = true, "server stderr (line cut)");
    } else {
        tracing::debug!(server, stderr = %text, "server stderr");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_bytes_only() {
        let mut t = StderrTail::new(8);
        t.push(b"hello ");
        t.push(b"world, ");
        t.push(b"bye");
        assert_eq!(t.text(), "rld, bye");
        t.push(&[b'z'; 100]);
        assert_eq!(t.text(), "zzzzzzzz");
        for _ in 0..1000 {
            t.push(b"abc\n");
        }
        assert!(t.buf.len() <= 16);
    }

    #[tokio::test]
    async fn drain_reads_everything_and_keeps_the_tail() {
        let mut input = Vec::new();
        for i in 0..10_000 {
            input.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        input.extend(std::iter::repeat_n(b'E', 100_000));
        input.extend_from_slice(b"\nlast words\n");
        let tail = Arc::new(Mutex::new(StderrTail::new(64)));
        drain(&input[..], "s".into(), Arc::clone(&tail)).await;
        let text = tail.lock().unwrap().text();
        assert!(text.ends_with("EEEE\nlast words\n"), "{text:?}");
        assert_eq!(text.len(), 64);
    }
}

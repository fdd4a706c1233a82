//! `stdio_frames`: the stdio transport's line reader fed the server's stdout in arbitrary reads.
//!
//! The reader is `kaged_mcp::transport::stdio::LineReader`, exposed (`#[doc(hidden)]`) for these
//! checks only.
//!
//! Input: byte 0 and 1 pick the frame limit (0..=8415 bytes, so lines cross it often), bytes 2
//! and 3 seed the read sizes, byte 4 caps them (1..=16384); the rest is the stream.
//!
//! Check: what the reader hands over equals, exactly, a model of the documented behaviour
//! computed on the whole stream, whatever the read boundaries. Each line (split at `\n`, one
//! trailing `\r` dropped, blank lines skipped) becomes one frame if it fits the limit, else one
//! oversize report whose `head` is the line's first `min(4096, len)` bytes, whose `tail` holds
//! the `min(512, len - head)` bytes after the head, and whose `len` is the line's length (`\r`
//! dropped); a last line without `\n` counts at end of file. (Until F3 was fixed the reader
//! decided on a line it had only partly read, so the model tolerated three differences; see
//! README.md, "Findings".)

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use kaged_mcp::protocol::RequestId;
use kaged_mcp::transport::stdio::{LineReader, OVERSIZE_HEAD, OVERSIZE_TAIL};
use kaged_mcp::transport::{CloseReason, InboundHandler, Outbound, OversizeFrame, SendFailure};
use tokio::io::{AsyncRead, ReadBuf};

/// What the reader handed over, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A frame.
    Frame(Vec<u8>),
    /// An oversize report.
    Oversize {
        /// The kept start.
        head: Vec<u8>,
        /// The kept end.
        tail: Vec<u8>,
        /// The line's length as reported.
        len: u64,
    },
}

/// Runs the reader over `data` as described in the [module docs](self).
pub fn stdio_frames(data: &[u8]) {
    if data.len() < 5 {
        return;
    }
    let limit = usize::from(data[0]) * 32 + usize::from(data[1]);
    let seed = u32::from(u16::from_le_bytes([data[2], data[3]])) | 1;
    let max_read = 1 + usize::from(data[4]) * 64;
    let stream = &data[5..];
    let got = read_all(stream, limit, seed, max_read);
    let want = model(stream, limit);
    assert!(
        got == want,
        "stdio reader diverges from the model: limit {limit}, reads of at most {max_read} bytes \
         (seed {seed})\n got: {got:?}\nwant: {want:?}"
    );
}

/// The reader's items for `stream` read in pieces of pseudo-random sizes up to `max_read`
/// (`max_read` 1: one byte per read).
pub fn read_all(stream: &[u8], limit: usize, seed: u32, max_read: usize) -> Vec<Item> {
    let record = Record::default();
    let mut input = Pieces {
        data: stream,
        rng: seed,
        max_read,
    };
    let mut reader = LineReader::new(limit);
    futures::executor::block_on(reader.run(&mut input, &record, &|| {})).expect("reads never fail");
    record.items.into_inner().expect("not poisoned")
}

/// The documented behaviour, line by line over the whole stream.
pub fn model(stream: &[u8], limit: usize) -> Vec<Item> {
    let mut lines: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
    // The piece after the last `\n` is a line only if it is not empty (end of file).
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let mut out = Vec::new();
    for raw in lines {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if line.len() <= limit {
            out.push(Item::Frame(line.to_vec()));
            continue;
        }
        let head = &line[..line.len().min(OVERSIZE_HEAD)];
        let tail_start = line.len().saturating_sub(OVERSIZE_TAIL).max(head.len());
        out.push(Item::Oversize {
            head: head.to_vec(),
            tail: line[tail_start..].to_vec(),
            len: line.len() as u64,
        });
    }
    out
}

/// Records what the reader hands over.
#[derive(Default)]
struct Record {
    items: Mutex<Vec<Item>>,
}

impl InboundHandler for Record {
    fn on_open(&self, _: Arc<dyn Outbound>) {}

    fn on_frame(&self, frame: &[u8]) {
        self.items
            .lock()
            .expect("not poisoned")
            .push(Item::Frame(frame.to_vec()));
    }

    fn on_oversize(&self, frame: OversizeFrame<'_>) {
        self.items
            .lock()
            .expect("not poisoned")
            .push(Item::Oversize {
                head: frame.head.to_vec(),
                tail: frame.tail.to_vec(),
                len: frame.len,
            });
    }

    fn on_send_failed(&self, _: &RequestId, _: SendFailure) {}
    fn on_closed(&self, _: CloseReason) {}
}

/// A stream that returns `data` in pieces of pseudo-random sizes (xorshift32), never pending.
struct Pieces<'a> {
    data: &'a [u8],
    rng: u32,
    max_read: usize,
}

impl AsyncRead for Pieces<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        let want = 1 + (x as usize) % self.max_read;
        let n = want.min(buf.remaining()).min(self.data.len());
        let (now, rest) = self.data.split_at(n);
        buf.put_slice(now);
        self.data = rest;
        Poll::Ready(Ok(()))
    }
}

//! `stdio_frames`: the stdio transport's line reader fed the server's stdout in arbitrary reads.
//!
//! The reader (`transport::stdio::reader::LineReader`) is crate-private in `kaged-mcp` and the
//! public `StdioTransport` needs a child process, so its source file is compiled into this crate
//! with `#[path]` (unchanged: `crate::transport` below re-exports the public transport types it
//! imports). See README.md, "APIs asked for".
//!
//! Input: byte 0 and 1 pick the frame limit (0..=8415 bytes, so lines cross it often), bytes 2
//! and 3 seed the read sizes, byte 4 caps them (1..=16384); the rest is the stream.
//!
//! Checks, against a model of the documented behaviour computed on the whole stream: each line
//! (split at `\n`, one trailing `\r` dropped, blank lines skipped) becomes one frame if it fits
//! the limit, else one oversize report whose `head` is a prefix of the line (at least
//! `min(limit + 1, 4096)` bytes, at most 4096), whose `tail` is a suffix of it holding the
//! `min(512, len - head)` bytes after the head, and whose `len` is the line's length; a last line
//! without `\n` counts at end of file. The tolerances the model allows for read boundaries are
//! listed in [`matches_model`].

#[path = "../../src/transport/stdio/reader.rs"]
#[allow(dead_code, unreachable_pub, clippy::all)]
mod reader;

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use kaged_mcp::protocol::RequestId;
use kaged_mcp::transport::{
    CloseReason, InboundHandler, Outbound, OversizeFrame, SendFailure,
};
use tokio::io::{AsyncRead, ReadBuf};

use self::reader::{LineReader, OVERSIZE_HEAD, OVERSIZE_TAIL};

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

/// What the model expects for one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// A frame with these bytes.
    Frame(Vec<u8>),
    /// An oversize report about this line (as written, with its `\r` if it had one).
    Oversize(Vec<u8>),
    /// A blank line longer than the limit: skipped, or reported oversize (tolerance 3).
    BlankOversize(Vec<u8>),
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
    let expected = model(stream, limit);
    if let Err(why) = matches_model(&got, &expected, limit) {
        panic!(
            "stdio reader diverges from the model: {why}\nlimit {limit}, reads of at most \
             {max_read} bytes (seed {seed})\n got: {got:?}\nwant: {expected:?}"
        );
    }
}

/// The reader's items for `stream` read in pieces of pseudo-random sizes up to `max_read`.
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
pub fn model(stream: &[u8], limit: usize) -> Vec<Expected> {
    let mut lines: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
    // The piece after the last `\n` is a line only if it is not empty (end of file).
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let mut out = Vec::new();
    for raw in lines {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(u8::is_ascii_whitespace) {
            if raw.len() > limit {
                out.push(Expected::BlankOversize(raw.to_vec()));
            }
            continue;
        }
        if line.len() > limit {
            out.push(Expected::Oversize(raw.to_vec()));
        } else if raw.len() > limit {
            // `limit` bytes and a `\r`: a frame, or oversize (tolerance 1).
            out.push(Expected::Oversize(raw.to_vec()));
        } else {
            out.push(Expected::Frame(line.to_vec()));
        }
    }
    out
}

/// Compares the reader's items with the model's, in order.
///
/// A frame must be equal to the model's. An oversize report must describe the model's line:
/// `len` is its length, `head` a prefix of it, at least `min(limit + 1, 4096, len)` and at most
/// 4096 bytes long, and `tail` its last `min(512, len - head)` bytes.
///
/// Tolerated, because the reader decides on a line it has only partly read (reported in
/// README.md, "Findings"):
/// 1. a line of `limit` bytes plus `\r` is reported oversize (`len` = `limit + 1`) when a read
///    ends between the `\r` and the `\n`, and is a frame otherwise;
/// 2. an oversize line ending in `\r` is measured (`len`, `tail`) with the `\r` when it was not
///    read whole, without it otherwise;
/// 3. a blank line (only ASCII whitespace) longer than the limit is reported oversize when it
///    was not read whole, and skipped otherwise.
pub fn matches_model(got: &[Item], want: &[Expected], limit: usize) -> Result<(), String> {
    let mut g = got.iter().peekable();
    for (i, w) in want.iter().enumerate() {
        match w {
            Expected::Frame(f) => match g.next() {
                Some(Item::Frame(x)) if x == f => {}
                other => return Err(format!("line {i}: got {other:?}, want the frame {f:?}")),
            },
            Expected::Oversize(raw) => {
                let stripped = raw.strip_suffix(b"\r").unwrap_or(raw);
                match g.next() {
                    Some(Item::Frame(x)) if x == stripped && stripped.len() <= limit => {}
                    Some(item @ Item::Oversize { .. }) => {
                        check_oversize(item, raw, limit).map_err(|e| format!("line {i}: {e}"))?
                    }
                    other => return Err(format!("line {i}: got {other:?}, want oversize")),
                }
            }
            Expected::BlankOversize(raw) => {
                if let Some(item @ Item::Oversize { .. }) = g.peek() {
                    if check_oversize(item, raw, limit).is_ok() {
                        g.next();
                    }
                }
            }
        }
    }
    match g.next() {
        None => Ok(()),
        Some(extra) => Err(format!("an extra item: {extra:?}")),
    }
}

/// Checks one oversize report against the line `raw` (which may end with `\r`).
fn check_oversize(item: &Item, raw: &[u8], limit: usize) -> Result<(), String> {
    let Item::Oversize { head, tail, len } = item else {
        return Err(format!("not an oversize report: {item:?}"));
    };
    let stripped = raw.strip_suffix(b"\r").unwrap_or(raw);
    let line = if *len as usize == stripped.len() {
        stripped
    } else if *len as usize == raw.len() {
        raw // tolerance 2
    } else {
        return Err(format!(
            "len {len}, but the line has {} bytes ({} without its \\r)",
            raw.len(),
            stripped.len()
        ));
    };
    let len = line.len();
    let min_head = (limit + 1).min(OVERSIZE_HEAD).min(len);
    if head.len() < min_head || head.len() > OVERSIZE_HEAD || !line.starts_with(head) {
        return Err(format!(
            "head of {} bytes is not a prefix of {min_head}..={OVERSIZE_HEAD} bytes",
            head.len()
        ));
    }
    let want_tail = OVERSIZE_TAIL.min(len - head.len());
    if tail.len() != want_tail || !line.ends_with(tail) {
        return Err(format!(
            "tail of {} bytes is not the last {want_tail} bytes of the line",
            tail.len()
        ));
    }
    Ok(())
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

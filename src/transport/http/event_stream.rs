//! A push parser for `text/event-stream` with a bound on the size of one event.
//!
//! It follows the WHATWG "event stream interpretation": lines end with LF, CRLF or a lone CR (a
//! CRLF split between two chunks counts once); one leading UTF-8 BOM is dropped; lines starting
//! with `:` are comments; `data:` lines are joined with `\n`; `event:` names the event
//! (`message` when absent); `id:` without NUL sets the last event id; `retry:` with only digits
//! sets the reconnection time; other fields are ignored; a blank line dispatches the event, and an
//! event with no `data` line is not dispatched. An unfinished event at end of stream is dropped.
//!
//! # Why not a parser crate
//! `sse-stream` 0.3 and `eventsource-stream` 0.2 both parse correctly but buffer a line and an
//! event's data without any limit: a server that writes one endless `data:` line would make them
//! grow without bound, and neither lets the caller cap it. Bounding them from outside means
//! finding line and event boundaries in the bytes before they see them, which is the whole of
//! this parser. So it is written here, in about 200 lines.
//!
//! # Bounded memory
//! An event passes the limit when its data so far plus the line being read pass `limit` bytes;
//! what was buffered is then freed and the rest of the event is skipped without being
//! kept, up to the blank line that ends it. The event is then reported as
//! [`SseItem::Oversized`], with the length of its data, its first [`OVERSIZE_HEAD`] and last
//! [`OVERSIZE_TAIL`] bytes (enough to find a JSON-RPC `id`, whichever end it sits at), and
//! parsing goes on with the next event. Memory stays under about `2 * limit` (a growing buffer's
//! spare capacity) plus those edges.
//!
//! An event being skipped may never end. So a reader need not wait for its end: after each
//! [`push`](EventParser::push), [`take_passing`](EventParser::take_passing) gives, once per
//! skipped event, what is known of one that passed the limit and has not ended yet (its head
//! names the request it answers; a reader of one request's stream stops there).

use std::time::Duration;

use crate::transport::oversize::HeadTail;
pub use crate::transport::oversize::{OVERSIZE_HEAD, OVERSIZE_TAIL};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One complete event, or the report of one that was too large.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A dispatched event.
    Event(SseEvent),
    /// An event over the limit, skipped.
    Oversized(OversizedEvent),
}

/// A dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `message` when absent.
    pub event: String,
    /// The `data:` lines joined with `\n` (invalid UTF-8 replaced).
    pub data: String,
    /// The last event id seen so far on the stream, if any.
    pub id: Option<String>,
}

/// An event that passed the limit: what is known of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OversizedEvent {
    /// The `event:` field, when it came before the limit was passed.
    pub event: Option<String>,
    /// The length of its data (`data:` values joined with `\n`), in bytes.
    pub len: u64,
    /// The first bytes of its data.
    pub head: Vec<u8>,
    /// The last bytes of its data (the end of the `data:` line being skipped when it ended).
    pub tail: Vec<u8>,
}

/// The push parser. Feed it chunks with [`EventParser::push`].
#[derive(Debug)]
pub struct EventParser {
    limit: usize,
    /// `BOM` bytes matched at the start of the stream; `None` once the start is past.
    bom: Option<usize>,
    /// The previous chunk ended with CR: an LF at the start of the next one ends no line.
    after_cr: bool,
    /// The unfinished line (only while not skipping).
    line: Vec<u8>,
    /// The event being built.
    event: Option<String>,
    data: Vec<u8>,
    has_data: bool,
    /// Set once the current event passed the limit.
    skip: Option<Skip>,
    last_id: Option<String>,
    retry: Option<Duration>,
}

/// The state kept while skipping an oversized event.
#[derive(Debug)]
struct Skip {
    event: Option<String>,
    /// The data's edges and length so far.
    edges: HeadTail,
    /// A `data` line was met (so the next one is joined with `\n`).
    had_data: bool,
    /// What the line being skipped is.
    kind: LineKind,
    /// The first bytes of the line being skipped, until its kind is known.
    field: Vec<u8>,
    /// The line being skipped has no byte yet.
    line_empty: bool,
    /// [`EventParser::take_passing`] gave it already.
    taken: bool,
}

/// The kind of a line being skipped, known after its first five bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    Unknown,
    /// A `data:` line; `fresh` until the byte after the colon (maybe a space to drop) is seen.
    Data {
        fresh: bool,
    },
    Other,
}

impl EventParser {
    /// A parser for events of at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            bom: Some(0),
            after_cr: false,
            line: Vec::new(),
            event: None,
            data: Vec::new(),
            has_data: false,
            skip: None,
            last_id: None,
            retry: None,
        }
    }

    /// The last `retry:` value seen.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Starts the parser as if a stream before it had set the last event id and the `retry`
    /// interval (a resumed stream carries on from the one it resumes).
    pub fn seed(&mut self, last_event_id: Option<String>, retry: Option<Duration>) {
        self.last_id = last_event_id;
        self.retry = retry;
    }

    /// The last event id seen (the `id:` field of any event so far, dispatched or not).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The event being skipped over the limit, once: what is known of it so far (its data's
    /// length so far, its head, its last bytes so far), if one passed the limit and has not
    /// ended by the end of the last chunk pushed; `None` otherwise, and after the first time
    /// for the same event (its end, if it comes, is [`SseItem::Oversized`] as usual).
    pub fn take_passing(&mut self) -> Option<OversizedEvent> {
        let skip = self.skip.as_mut().filter(|skip| !skip.taken)?;
        skip.taken = true;
        Some(OversizedEvent {
            event: skip.event.clone(),
            len: skip.edges.len(),
            head: skip.edges.head().to_vec(),
            tail: skip.edges.tail_overlapping().to_vec(),
        })
    }

    /// Parses `chunk`, appending every event it completes to `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<SseItem>) {
        if let Some(matched) = self.bom {
            let n = (BOM.len() - matched).min(chunk.len());
            if chunk[..n] == BOM[matched..matched + n] {
                chunk = &chunk[n..];
                self.bom = (matched + n < BOM.len()).then_some(matched + n);
                if self.bom.is_some() {
                    return;
                }
            } else {
                // A partial BOM that was not one: its bytes are ordinary bytes.
                self.bom = None;
                self.feed(&BOM[..matched], out);
            }
            self.bom = None;
        }
        self.feed(chunk, out);
    }

    fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<SseItem>) {
        if self.after_cr && !chunk.is_empty() {
            self.after_cr = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        while !chunk.is_empty() {
            match memchr::memchr2(b'\n', b'\r', chunk) {
                Some(i) => {
                    self.take_bytes(&chunk[..i]);
                    let eol = if chunk[i] == b'\r' {
                        match chunk.get(i + 1) {
                            Some(b'\n') => 2,
                            Some(_) => 1,
                            None => {
                                self.after_cr = true;
                                1
                            }
                        }
                    } else {
                        1
                    };
                    self.end_line(out);
                    chunk = &chunk[i + eol..];
                }
                None => {
                    self.take_bytes(chunk);
                    chunk = &[];
                }
            }
        }
    }

    /// Adds bytes of the current line, switching to skipping when the event grows too big.
    fn take_bytes(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.skip.is_none() {
            if self.data.len() + self.line.len() + bytes.len() <= self.limit {
                self.line.extend_from_slice(bytes);
                return;
            }
            self.start_skipping();
        }
        if let Some(skip) = &mut self.skip {
            skip.take(bytes);
        }
    }

    /// The event passed the limit: keep its edges, free the buffers.
    fn start_skipping(&mut self) {
        let mut edges = HeadTail::default();
        edges.push(&self.data);
        let line = std::mem::take(&mut self.line);
        let mut skip = Skip {
            event: self.event.take(),
            edges,
            had_data: self.has_data,
            kind: LineKind::Unknown,
            field: Vec::new(),
            line_empty: true,
            taken: false,
        };
        skip.take(&line);
        self.data = Vec::new();
        self.line = Vec::new();
        self.has_data = false;
        self.skip = Some(skip);
    }

    fn end_line(&mut self, out: &mut Vec<SseItem>) {
        if let Some(skip) = &mut self.skip {
            if !skip.line_empty {
                skip.end_line();
                return;
            }
            let skip = self.skip.take().expect("skipping");
            out.push(SseItem::Oversized(OversizedEvent {
                event: skip.event,
                len: skip.edges.len(),
                head: skip.edges.head().to_vec(),
                // The last bytes, none when the head holds them all.
                tail: skip.edges.tail_overlapping().to_vec(),
            }));
            self.reset_event();
            return;
        }
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            self.line = reuse(line);
            return;
        }
        let (name, value) = match memchr::memchr(b':', &line) {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &[][..]),
        };
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                    self.data.extend_from_slice(value);
                } else if self.data.is_empty() && line.len() > 4096 {
                    // One big line: move it in place rather than copy it.
                    let start = line.len() - value.len();
                    let mut line = line;
                    line.drain(..start);
                    self.data = line;
                    self.has_data = true;
                    return;
                } else {
                    self.data.extend_from_slice(value);
                }
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            b"id" if !value.contains(&0) => {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                if let Some(ms) = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok())
                {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
        self.line = reuse(line);
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        if self.has_data {
            let data = std::mem::take(&mut self.data);
            let data = String::from_utf8(data)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            out.push(SseItem::Event(SseEvent {
                event: self
                    .event
                    .take()
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| "message".to_owned()),
                data,
                id: self.last_id.clone(),
            }));
        }
        self.reset_event();
    }

    fn reset_event(&mut self) {
        self.event = None;
        self.data.clear();
        if self.data.capacity() > 64 * 1024 {
            self.data = Vec::new();
        }
        self.has_data = false;
    }
}

impl Skip {
    /// Takes bytes of the line being skipped; only a `data` line's reach the tail.
    fn take(&mut self, mut bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.line_empty = false;
        if self.kind == LineKind::Unknown {
            let want = (5 - self.field.len()).min(bytes.len());
            self.field.extend_from_slice(&bytes[..want]);
            bytes = &bytes[want..];
            if self.field.len() < 5 {
                return;
            }
            self.kind = if self.field == b"data:" {
                self.start_data();
                LineKind::Data { fresh: true }
            } else {
                LineKind::Other
            };
        }
        if let LineKind::Data { fresh } = &mut self.kind {
            if *fresh && !bytes.is_empty() {
                *fresh = false;
                bytes = bytes.strip_prefix(b" ").unwrap_or(bytes);
            }
            self.data(bytes);
        }
    }

    /// Data bytes: counted, and kept when they belong to either end.
    fn data(&mut self, bytes: &[u8]) {
        self.edges.push(bytes);
    }

    /// A data line starts: join it to the previous one.
    fn start_data(&mut self) {
        if self.had_data {
            self.data(b"\n");
        }
        self.had_data = true;
    }

    /// The line being skipped ended (it was not blank).
    fn end_line(&mut self) {
        if self.kind == LineKind::Unknown && self.field == b"data" {
            self.start_data();
        }
        self.kind = LineKind::Unknown;
        self.field.clear();
        self.line_empty = true;
    }
}

/// Keeps a line buffer's allocation unless it grew large.
fn reuse(mut line: Vec<u8>) -> Vec<u8> {
    line.clear();
    if line.capacity() > 64 * 1024 {
        Vec::new()
    } else {
        line
    }
}

#[cfg(test)]
#[path = "event_stream/tests.rs"]
mod tests;

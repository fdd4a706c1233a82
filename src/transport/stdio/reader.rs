//! The stdout reader: newline-delimited frames out of one large buffer, with a frame limit.
//!
//! One task owns stdout. Each `read` fills the free part of one buffer (at least
//! [`READ_CHUNK`], at most [`MAX_READ`] bytes), so an answer of up to ~128 KiB takes one
//! `read`. It looks for newlines in the new bytes only with `memchr`, and hands each complete
//! line to the handler in place, without copying: one final `\r` is dropped, blank lines are
//! skipped. A line longer than the frame limit is not buffered: its first [`OVERSIZE_HEAD`]
//! bytes and last [`OVERSIZE_TAIL`] bytes are kept, the rest is discarded up to the next
//! newline, and the handler gets an [`OversizeFrame`]. What the handler gets does not depend on
//! where the reads end (the `stdio_frames` fuzz target checks it against a model of the whole
//! stream). Memory stays below `max(128 KiB, frame_limit + 1 + READ_CHUNK)` plus ~4.6 KiB
//! for an oversize report, whatever the server writes.

use memchr::memchr;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::transport::oversize::HeadTail;
use crate::transport::{InboundHandler, OversizeFrame};

/// The free space kept after the bytes read, so that every `read` asks for at least this much.
pub(crate) const READ_CHUNK: usize = 16 * 1024;
/// The most bytes one `read` asks for. Only free buffer space is used, so the memory bound does
/// not change; fewer, larger reads are cheaper (a 64 KiB answer in one `read` instead of two
/// took the client's CPU per 64 KiB call from 21.7 to 19.7 µs, benches/README.md).
const MAX_READ: usize = 256 * 1024;
/// The buffer's size at rest: one `read` takes a 64 KiB answer whole.
const INITIAL_BUF: usize = 128 * 1024;
pub use crate::transport::oversize::{OVERSIZE_HEAD, OVERSIZE_TAIL};

/// An oversized line being discarded: what its report will hold.
#[derive(Debug)]
struct Discard {
    /// The line's edges and length so far.
    edges: HeadTail,
    /// Every byte so far is ASCII whitespace (the line may yet turn out blank).
    blank: bool,
}

impl Discard {
    fn new() -> Self {
        Self {
            edges: HeadTail::default(),
            blank: true,
        }
    }

    /// Takes in the next bytes of the line.
    fn push(&mut self, bytes: &[u8]) {
        // Once a byte is not whitespace this is never scanned again.
        self.blank = self.blank && bytes.iter().all(u8::is_ascii_whitespace);
        self.edges.push(bytes);
    }

    /// The line ended: its report exactly as [`emit`] would make it from the whole line (one
    /// final `\r` dropped, the last [`OVERSIZE_TAIL`] bytes after the head), or `None` for a
    /// blank line.
    fn finish(mut self) -> Option<Self> {
        if self.blank {
            return None;
        }
        self.edges.drop_final(b'\r');
        Some(self)
    }

    fn report(&self, handler: &dyn InboundHandler, limit: usize) {
        handler.on_oversize(self.edges.frame(limit));
    }
}

/// Splits a byte stream into newline-delimited frames, with a frame limit: one final `\r`
/// dropped, blank lines skipped, a line over the limit reported by its first
/// [`OVERSIZE_HEAD`] and last [`OVERSIZE_TAIL`] bytes and discarded, whatever the read
/// boundaries.
#[derive(Debug)]
pub struct LineReader {
    buf: Vec<u8>,
    /// Start of the current (incomplete) line.
    start: usize,
    /// End of the bytes read.
    end: usize,
    limit: usize,
    discard: Option<Discard>,
}

impl LineReader {
    /// A reader with an empty buffer and frame limit `limit`.
    pub fn new(limit: usize) -> Self {
        Self {
            buf: vec![0; INITIAL_BUF],
            start: 0,
            end: 0,
            limit,
            discard: None,
        }
    }

    /// Reads until end of file (`Ok`) or a read error, passing every frame to `handler`;
    /// `on_input` runs after each successful read, before its frames are handled.
    ///
    /// # Errors
    /// The first read error.
    pub async fn run<R: AsyncRead + Unpin>(
        &mut self,
        input: &mut R,
        handler: &dyn InboundHandler,
        on_input: &(dyn Fn() + Sync),
    ) -> std::io::Result<()> {
        loop {
            self.make_room();
            let want = (self.buf.len() - self.end).min(MAX_READ);
            let n = input.read(&mut self.buf[self.end..self.end + want]).await?;
            if n == 0 {
                self.finish(handler);
                return Ok(());
            }
            on_input();
            let from = self.end;
            self.end += n;
            self.process(from, handler);
        }
    }

    /// Ensures `READ_CHUNK` free bytes after `end`, compacting before growing.
    fn make_room(&mut self) {
        if self.end + READ_CHUNK <= self.buf.len() {
            return;
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end + READ_CHUNK > self.buf.len() {
            // The partial line is at most `limit + 1` bytes (longer ones are discarded), so the
            // buffer never exceeds `limit + 1 + READ_CHUNK` (rounded to the doubling).
            let want = (self.buf.len() * 2).max(self.end + READ_CHUNK);
            let cap = self
                .limit
                .saturating_add(1 + READ_CHUNK)
                .max(self.end + READ_CHUNK);
            self.buf.resize(want.min(cap), 0);
        }
    }

    /// Handles the bytes `[from, end)` just read.
    pub(crate) fn process(&mut self, from: usize, handler: &dyn InboundHandler) {
        let mut scan = from;
        if let Some(discard) = &mut self.discard {
            match memchr(b'\n', &self.buf[scan..self.end]) {
                None => {
                    discard.push(&self.buf[scan..self.end]);
                    self.start = 0;
                    self.end = 0;
                    return;
                }
                Some(i) => {
                    discard.push(&self.buf[scan..scan + i]);
                    if let Some(done) = self.discard.take().and_then(Discard::finish) {
                        done.report(handler, self.limit);
                    }
                    self.start = scan + i + 1;
                    scan = self.start;
                }
            }
        }
        while let Some(i) = memchr(b'\n', &self.buf[scan..self.end]) {
            let line_end = scan + i;
            emit(&self.buf[self.start..line_end], self.limit, handler);
            self.start = line_end + 1;
            scan = self.start;
        }
        // An unfinished line may hold `limit` bytes and the `\r` `emit` will drop: only past
        // that is it surely over the limit, whatever the read boundaries.
        let partial = self.end - self.start;
        if partial > self.limit.saturating_add(1) {
            let mut discard = Discard::new();
            discard.push(&self.buf[self.start..self.end]);
            self.discard = Some(discard);
            self.start = 0;
            self.end = 0;
        } else if partial == 0 {
            self.start = 0;
            self.end = 0;
        }
        if self.start == self.end && self.buf.len() > 4 * INITIAL_BUF {
            // Give back what a big frame took.
            self.start = 0;
            self.end = 0;
            self.buf.truncate(INITIAL_BUF);
            self.buf.shrink_to_fit();
        }
    }

    /// End of file: a last line without a newline still counts.
    fn finish(&mut self, handler: &dyn InboundHandler) {
        if let Some(discard) = self.discard.take() {
            if let Some(done) = discard.finish() {
                done.report(handler, self.limit);
            }
        } else if self.end > self.start {
            emit(&self.buf[self.start..self.end], self.limit, handler);
        }
        self.start = 0;
        self.end = 0;
    }

    /// The buffer's current size, for tests of the memory bound.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.buf.len()
    }
}

/// Passes one complete line on: blank lines are skipped, a trailing `\r` is dropped.
fn emit(line: &[u8], limit: usize, handler: &dyn InboundHandler) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    if line.len() > limit {
        let head = &line[..OVERSIZE_HEAD.min(line.len())];
        let tail_start = line.len().saturating_sub(OVERSIZE_TAIL).max(head.len());
        handler.on_oversize(OversizeFrame::new(
            head,
            &line[tail_start..],
            line.len() as u64,
            limit,
        ));
        return;
    }
    handler.on_frame(line);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::RequestId;
    use crate::transport::{CloseReason, Outbound, SendFailure};
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    struct Record {
        frames: Mutex<Vec<String>>,
        oversize: Mutex<Vec<(String, String, u64)>>,
    }

    impl InboundHandler for Record {
        fn on_open(&self, _: Arc<dyn Outbound>) {}
        fn on_frame(&self, frame: &[u8]) {
            self.frames
                .lock()
                .unwrap()
                .push(String::from_utf8_lossy(frame).into_owned());
        }
        fn on_oversize(&self, f: OversizeFrame<'_>) {
            self.oversize.lock().unwrap().push((
                String::from_utf8_lossy(f.head).into_owned(),
                String::from_utf8_lossy(f.tail).into_owned(),
                f.len,
            ));
        }
        fn on_send_failed(&self, _: &RequestId, _: SendFailure) {}
        fn on_closed(&self, _: CloseReason) {}
    }

    async fn read_all(input: &[u8], limit: usize) -> (Record, LineReader) {
        let record = Record::default();
        let mut reader = LineReader::new(limit);
        let mut input = input;
        reader.run(&mut input, &record, &|| {}).await.unwrap();
        (record, reader)
    }

    #[tokio::test]
    async fn splits_lines_and_skips_blank_ones() {
        let (r, _) = read_all(b"{\"a\":1}\n\n  \r\n{\"b\":2}\r\n{\"c\":3}", 100).await;
        assert_eq!(
            *r.frames.lock().unwrap(),
            ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]
        );
    }

    #[tokio::test]
    async fn an_oversized_line_is_reported_and_the_stream_stays_in_sync() {
        let mut input = b"{\"id\":1,\"result\":\"".to_vec();
        input.extend(std::iter::repeat_n(b'x', 300_000));
        input.extend_from_slice(b"\",\"end\":2}\n{\"id\":2}\n");
        let (r, reader) = read_all(&input, 1000).await;
        assert_eq!(*r.frames.lock().unwrap(), ["{\"id\":2}"]);
        let over = r.oversize.lock().unwrap();
        assert_eq!(over.len(), 1);
        assert!(over[0].0.starts_with("{\"id\":1,"));
        assert!(over[0].1.ends_with("\"end\":2}"));
        assert_eq!(over[0].2, input.len() as u64 - 9 - 1);
        assert!(reader.capacity() <= 1000 + READ_CHUNK + INITIAL_BUF);
    }

    #[tokio::test]
    async fn a_line_just_at_the_limit_passes() {
        let line = format!("\"{}\"", "y".repeat(98));
        let (r, _) = read_all(format!("{line}\n").as_bytes(), 100).await;
        assert_eq!(r.frames.lock().unwrap().len(), 1);
        assert!(r.oversize.lock().unwrap().is_empty());
        let (r, _) = read_all(format!("{line}z\n").as_bytes(), 100).await;
        assert!(r.frames.lock().unwrap().is_empty());
        assert_eq!(r.oversize.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn memory_stays_bounded_for_a_huge_line_fed_in_chunks() {
        let record = Record::default();
        let limit = 64 * 1024;
        let mut reader = LineReader::new(limit);
        // 50 MiB of one line through `process`, as a stream would deliver it.
        let chunk = vec![b'x'; READ_CHUNK];
        for _ in 0..(50 * 1024 * 1024 / READ_CHUNK) {
            reader.make_room();
            let end = reader.end;
            reader.buf[end..end + READ_CHUNK].copy_from_slice(&chunk);
            reader.end += READ_CHUNK;
            reader.process(end, &record);
            assert!(reader.capacity() <= limit + 2 * READ_CHUNK + INITIAL_BUF);
        }
        reader.make_room();
        let end = reader.end;
        reader.buf[end] = b'\n';
        reader.end += 1;
        reader.process(end, &record);
        assert_eq!(record.oversize.lock().unwrap()[0].2, 50 * 1024 * 1024);
    }
}

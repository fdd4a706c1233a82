//! `sse_events`: the SSE transport's event-stream parser fed arbitrary chunk splits.
//!
//! The parser is `kaged_mcp::transport::sse::EventParser`, exposed (`#[doc(hidden)]`) for
//! these checks only.
//!
//! Input: bytes 0 and 1 pick the event size limit (0..=8415), bytes 2 and 3 seed the chunk
//! sizes, byte 4 caps them (1..=16384); the rest is the stream.
//!
//! Checks:
//! - the items and the final `retry` are the same whether the stream is pushed whole or in
//!   pseudo-random chunks (a CRLF or a BOM split between chunks included);
//! - they equal those of [`model`], a direct transcription of the WHATWG "event stream
//!   interpretation" with the parser's documented limit rule: an event whose data so far plus
//!   the line being read pass `limit` bytes is skipped to its blank line and reported as
//!   oversized (its `event:` as known then, its data's length, first 4 KiB and last 512 bytes),
//!   the lines after the limit (`id:`, `retry:`, `event:` included) being ignored.

use std::time::Duration;

use kaged_mcp::transport::sse::{
    EventParser, OversizedEvent, SseEvent, SseItem, OVERSIZE_HEAD, OVERSIZE_TAIL,
};

/// Runs the checks of the [module docs](self) over `data`.
pub fn sse_events(data: &[u8]) {
    if data.len() < 5 {
        return;
    }
    let limit = usize::from(data[0]) * 32 + usize::from(data[1]);
    let mut rng = u32::from(u16::from_le_bytes([data[2], data[3]])) | 1;
    let max_chunk = 1 + usize::from(data[4]) * 64;
    let stream = &data[5..];

    let mut whole = EventParser::new(limit);
    let mut whole_items = Vec::new();
    whole.push(stream, &mut whole_items);

    let mut split = EventParser::new(limit);
    let mut split_items = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        let mut n = rng as usize % (max_chunk + 1);
        if n == 0 {
            split.push(&[], &mut split_items); // an empty chunk changes nothing
            n = 1;
        }
        let (now, later) = rest.split_at(n.min(rest.len()));
        split.push(now, &mut split_items);
        rest = later;
    }
    assert_eq!(
        whole_items, split_items,
        "the items depend on how the stream was split (limit {limit}, chunks up to {max_chunk})"
    );
    assert_eq!(whole.retry(), split.retry(), "retry depends on the split");

    let (model_items, model_retry) = model(stream, limit);
    assert_eq!(
        whole_items, model_items,
        "the parser diverges from the WHATWG model (limit {limit})"
    );
    assert_eq!(whole.retry(), model_retry, "retry diverges from the model");
    for item in &whole_items {
        if let SseItem::Oversized(o) = item {
            assert!(o.head.len() <= OVERSIZE_HEAD && o.tail.len() <= OVERSIZE_TAIL);
        }
    }
}

/// The WHATWG event-stream interpretation over the whole stream, with the limit rule of the
/// [module docs](self).
pub(crate) fn model(stream: &[u8], limit: usize) -> (Vec<SseItem>, Option<Duration>) {
    let stream = stream.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(stream);
    let mut out = Vec::new();
    let mut retry = None;
    let mut last_id: Option<String> = None;
    let mut event: Option<String> = None;
    let mut data: Vec<u8> = Vec::new();
    let mut has_data = false;
    // Set once the event passed the limit: its `event:` then.
    let mut skipped: Option<Option<String>> = None;

    for line in lines(stream) {
        if line.is_empty() {
            if let Some(name) = skipped.take() {
                let head = data[..data.len().min(OVERSIZE_HEAD)].to_vec();
                let tail = if data.len() <= head.len() {
                    Vec::new()
                } else {
                    data[data.len() - OVERSIZE_TAIL.min(data.len())..].to_vec()
                };
                out.push(SseItem::Oversized(OversizedEvent {
                    event: name,
                    len: data.len() as u64,
                    head,
                    tail,
                }));
            } else if has_data {
                out.push(SseItem::Event(SseEvent {
                    event: event
                        .clone()
                        .filter(|e| !e.is_empty())
                        .unwrap_or_else(|| "message".into()),
                    data: String::from_utf8_lossy(&data).into_owned(),
                    id: last_id.clone(),
                }));
            }
            event = None;
            data.clear();
            has_data = false;
            continue;
        }
        if skipped.is_none() && data.len() + line.len() > limit {
            skipped = Some(event.take());
        }
        let (name, value) = match line.iter().position(|b| *b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        if name.is_empty() {
            continue; // a comment
        }
        if name == b"data" {
            if has_data {
                data.push(b'\n');
            }
            data.extend_from_slice(value);
            has_data = true;
            continue;
        }
        if skipped.is_some() {
            continue; // the rest of an oversized event is skipped
        }
        match name {
            b"event" => event = Some(String::from_utf8_lossy(value).into_owned()),
            b"id" if !value.contains(&0) => {
                last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                if let Ok(ms) = std::str::from_utf8(value).unwrap_or("x").parse::<u64>() {
                    retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
    }
    (out, retry)
}

/// The complete lines of `stream` (ended by CRLF, LF or CR); an unfinished last line is dropped.
fn lines(stream: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < stream.len() {
        match stream[i] {
            b'\n' => {
                out.push(&stream[start..i]);
                i += 1;
                start = i;
            }
            b'\r' => {
                out.push(&stream[start..i]);
                i += if stream.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                start = i;
            }
            _ => i += 1,
        }
    }
    out
}

//! Long strings of a content block (a text, base64 data): read through serde_json's bytes path
//! when the client decodes a frame (one UTF-8 check, a SIMD scan for the closing quote), and a
//! long text kept as a slice of the frame's buffer when the transport has it as `Bytes`
//! ([`Text`]). Split from `content.rs`, which uses these readers in its `Deserialize` impls.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::Text;

/// Extra capacity given to a long string, so that the result cap's marker
/// (`\n[... truncated at N bytes]`, at most 46 bytes) is appended without reallocating.
pub(super) const MARKER_ROOM: usize = 48;
/// From this length on a string gets [`MARKER_ROOM`].
pub(super) const LONG: usize = 4096;

thread_local! {
    /// Set while the client decodes a frame with `serde_json` ([`json_bytes_path`]).
    pub(super) static JSON_BYTES_PATH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

thread_local! {
    /// The buffer the frame being decoded arrived in, while [`sharing_from`] runs.
    pub(super) static SOURCE: std::cell::RefCell<Option<bytes::Bytes>> = const { std::cell::RefCell::new(None) };
}

/// From this length on, a text that lies in the frame's buffer is shared rather than copied,
/// when it is also at least half of the frame. A shared text keeps the buffer it is a slice of
/// alive: the frame, and with HTTP/1.1 the rest of hyper's read buffer the frame was split
/// from (bounded by hyper's largest read buffer, ~400 KiB), as any `Bytes` body chunk does.
/// [`Text::make_mut`] or [`Text::into_string`] copy it out for an embedder that keeps results.
pub(super) const SHARE_MIN: usize = 16 * 1024;

/// Runs `decode`, a decode of the frame `source` holds, with the long texts it finds there
/// (unescaped, at least [`SHARE_MIN`] bytes and half the frame) kept as slices of `source`
/// rather than copied: see [`Text`]. A transport that has its frame as [`bytes::Bytes`]
/// (Streamable HTTP's one-chunk body) decodes through this.
pub(crate) fn sharing_from<R>(source: &bytes::Bytes, decode: impl FnOnce() -> R) -> R {
    struct Restore(Option<bytes::Bytes>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            SOURCE.with(|s| *s.borrow_mut() = previous);
        }
    }
    let _restore = Restore(SOURCE.with(|s| s.borrow_mut().replace(source.clone())));
    decode()
}

/// `bytes` as a text sharing the frame's buffer, when [`sharing_from`] runs, `bytes` lies in
/// its buffer and is long enough to be worth it; checked UTF-8 either way.
fn share(bytes: &[u8]) -> Option<Result<Text, std::str::Utf8Error>> {
    if bytes.len() < SHARE_MIN {
        return None;
    }
    SOURCE.with(|s| {
        let source = s.borrow();
        let source = source.as_ref()?;
        if bytes.len().saturating_mul(2) < source.len() {
            return None;
        }
        Text::shared(source, bytes)
    })
}

/// Runs `decode`, a `serde_json` decode of the client's, with [`long_string`] fields read
/// through serde_json's bytes path. Any other decode (another format, a `serde_json::Value`,
/// an embedder's own `serde_json::from_str`) reads them as plain strings.
pub(crate) fn json_bytes_path<R>(decode: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            JSON_BYTES_PATH.with(|flag| flag.set(self.0));
        }
    }
    let _restore = Restore(JSON_BYTES_PATH.with(|flag| flag.replace(true)));
    decode()
}

/// Reads a field that may be long (a text, base64 data): the bulk of a big result.
///
/// Inside [`json_bytes_path`] it asks `serde_json` for bytes rather than a string, which it
/// serves from `parse_str_raw`: the same escape decoding, but the scan for the closing quote is
/// `memchr2` (SIMD) rather than a word-at-a-time loop that also looks for control characters.
/// For a 64 KiB text that scan was a quarter of the client's CPU per call (benches/README.md).
/// UTF-8 is then validated here, once. The one leniency: a raw control character inside the
/// string (invalid JSON, which no SDK writes) is kept instead of refusing the whole result.
/// Elsewhere the field is an ordinary string: other formats give bytes another meaning (ron
/// decodes base64, YAML has none), so the bytes path is only ever taken on `serde_json`.
pub(super) fn long_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    if JSON_BYTES_PATH.with(std::cell::Cell::get) {
        deserializer.deserialize_bytes(LongString)
    } else {
        deserializer.deserialize_string(LongString)
    }
}

/// [`long_string`] for a text: shared with the frame's buffer when [`share`] can, else owned.
pub(super) fn long_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
    if JSON_BYTES_PATH.with(std::cell::Cell::get) {
        deserializer.deserialize_bytes(LongText)
    } else {
        deserializer.deserialize_string(LongText)
    }
}

pub(super) struct LongText;

impl Visitor<'_> for LongText {
    type Value = Text;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
        match share(v.as_bytes()) {
            Some(Ok(text)) => Ok(text),
            _ => LongString.visit_str(v).map(Text::from),
        }
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Text, E> {
        Ok(Text::from(v))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Text, E> {
        match share(v) {
            Some(Ok(text)) => Ok(text),
            Some(Err(e)) => Err(invalid_utf8(&e)),
            None => LongString.visit_bytes(v).map(Text::from),
        }
    }
    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Text, E> {
        LongString.visit_byte_buf(v).map(Text::from)
    }
}

fn invalid_utf8<E: de::Error>(e: &std::str::Utf8Error) -> E {
    E::custom(format_args!(
        "invalid UTF-8 in a string at byte {}",
        e.valid_up_to()
    ))
}

pub(super) struct LongString;

impl LongString {
    fn owned(text: &str) -> String {
        let room = if text.len() >= LONG { MARKER_ROOM } else { 0 };
        let mut owned = String::with_capacity(text.len() + room);
        owned.push_str(text);
        owned
    }
}

impl Visitor<'_> for LongString {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(Self::owned(v))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<String, E> {
        match std::str::from_utf8(v) {
            Ok(text) => Ok(Self::owned(text)),
            Err(e) => Err(invalid_utf8(&e)),
        }
    }
    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<String, E> {
        String::from_utf8(v).map_err(|e| invalid_utf8(&e.utf8_error()))
    }
}

/// The fields of a content block that may be long: a text, base64 data.
pub(super) const LONG_FIELDS: [&str; 3] = ["text", "data", "blob"];

/// A long field of a block read before its `type` is known: a string through [`long_string`]'s
/// bytes path (inside [`json_bytes_path`]), kept as a `Value` until the block's kind is. On
/// that path `serde_json` serves a string or an array and refuses any other value, so a block
/// whose `type` comes after a `text`, `data` or `blob` that is a number, a boolean, null or an
/// object is refused (every revision of the protocol makes these strings); elsewhere any value
/// is taken.
pub(super) struct LongValue;

/// What [`LongValue`] read: a string, as a [`Text`] (shared when [`share`] can), or any other
/// value.
pub(super) enum Long {
    Text(Text),
    Value(Value),
}

impl Long {
    pub(super) fn into_value(self) -> Value {
        match self {
            Self::Text(t) => Value::String(t.into_string()),
            Self::Value(v) => v,
        }
    }
}

impl<'de> de::DeserializeSeed<'de> for LongValue {
    type Value = Long;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Long, D::Error> {
        if JSON_BYTES_PATH.with(std::cell::Cell::get) {
            deserializer.deserialize_bytes(LongValueVisitor)
        } else {
            Value::deserialize(deserializer).map(Long::Value)
        }
    }
}

struct LongValueVisitor;

impl<'de> Visitor<'de> for LongValueVisitor {
    type Value = Long;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Long, E> {
        LongText.visit_str(v).map(Long::Text)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Long, E> {
        Ok(Long::Text(Text::from(v)))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Long, E> {
        LongText.visit_bytes(v).map(Long::Text)
    }
    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Long, E> {
        LongText.visit_byte_buf(v).map(Long::Text)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Long, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Long::Value(Value::Array(items)))
    }
}

//! [`Text`]: the text of a text block, either owned or a slice of the message it came in.
//!
//! A large tool result is mostly one text. Over Streamable HTTP the answer's body arrives as
//! one [`Bytes`] buffer; copying a 64 KiB text out of it into a `String` cost an allocation, a
//! copy and (glibc giving the heap's top back when both were freed) fresh pages to fault in at
//! every call: the HTTP 64 KiB row of issue 41 (benches/README.md). A long text whose bytes
//! need no unescaping is kept as a slice of that buffer instead: checked UTF-8 once, never
//! copied. Everything else, and every text an embedder builds, is an ordinary `String`.
//!
//! A `Text` reads as a `&str` (it derefs to one), compares with strings, and converts into a
//! `String` (a copy only for a shared one). Changing it ([`push_str`](Text::push_str),
//! [`make_mut`](Text::make_mut)) makes a shared text owned first; [`truncate`](Text::truncate)
//! of a shared one narrows the slice, or copies what it keeps when that is under half.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::str::Utf8Error;

use bytes::Bytes;
use bytestring::ByteString;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The text of a text block: a `String`, or a slice of the buffer the message arrived in.
///
/// Use it as a `&str` (`&*text`, [`as_str`](Self::as_str), or through `Deref`); build one from
/// a `String` or a `&str`; turn it back with [`into_string`](Self::into_string) or
/// `String::from`. Equality, ordering and hashing are those of the string.
///
/// A shared text keeps the whole buffer it is a slice of alive, as any `Bytes` body chunk
/// does: the answer's body, and over HTTP/1.1 the rest of hyper's read buffer it was split
/// from (at most ~400 KiB). An embedder that keeps many results for long can copy a text out
/// ([`make_mut`](Self::make_mut), [`into_string`](Self::into_string)).
#[derive(Clone)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    Owned(String),
    /// A slice of the message's buffer, checked UTF-8 once.
    Shared(ByteString),
}

impl Text {
    /// An empty text.
    pub const fn new() -> Self {
        Self(Repr::Owned(String::new()))
    }

    /// The slice of `source` that `bytes` is, checked UTF-8 (once, here), when `bytes` lies
    /// inside `source`; `None` otherwise. The text keeps `source`'s buffer alive, uncopied.
    pub(crate) fn shared(source: &Bytes, bytes: &[u8]) -> Option<Result<Self, Utf8Error>> {
        let base = source.as_ptr() as usize;
        let start = bytes.as_ptr() as usize;
        let inside = start >= base
            && start
                .checked_add(bytes.len())
                .is_some_and(|end| end <= base + source.len());
        // `slice_ref` is given a subslice of `source`, as it requires.
        inside.then(|| ByteString::try_from(source.slice_ref(bytes)).map(|b| Self(Repr::Shared(b))))
    }

    /// The text as a string slice.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Owned(s) => s,
            Repr::Shared(b) => b,
        }
    }

    /// Whether this text shares the buffer its message arrived in (rather than owning a
    /// `String`).
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared(_))
    }

    /// The text as an owned `String`: moved out when owned, copied when shared.
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Owned(s) => s,
            Repr::Shared(_) => self.as_str().to_owned(),
        }
    }

    /// The text as a `String` to change in place; a shared text is copied into one first.
    pub fn make_mut(&mut self) -> &mut String {
        if let Repr::Shared(_) = self.0 {
            self.0 = Repr::Owned(self.as_str().to_owned());
        }
        match &mut self.0 {
            Repr::Owned(s) => s,
            Repr::Shared(_) => unreachable!("made owned just above"),
        }
    }

    /// Appends `s` (a shared text is copied into a `String` first, with room for `s`).
    pub fn push_str(&mut self, s: &str) {
        if let Repr::Shared(_) = self.0 {
            let mut owned = String::with_capacity(self.len() + s.len());
            owned.push_str(self.as_str());
            self.0 = Repr::Owned(owned);
        }
        self.make_mut().push_str(s);
    }

    /// Shortens the text to `len` bytes, as [`String::truncate`] does (`len` must be a
    /// character boundary; a `len` past the end does nothing). A shared text cut to half its
    /// length or more is only narrowed; cut shorter, what is kept is copied into a `String`,
    /// so a short text does not keep a large buffer alive.
    ///
    /// # Panics
    /// When `len` is not on a character boundary, as [`String::truncate`].
    pub fn truncate(&mut self, len: usize) {
        match &mut self.0 {
            Repr::Owned(s) => s.truncate(len),
            Repr::Shared(b) => {
                if len < b.len() {
                    let kept = b.split_at(len).0;
                    self.0 = if len.saturating_mul(2) >= b.len() {
                        Repr::Shared(kept)
                    } else {
                        Repr::Owned(String::from(&*kept))
                    };
                }
            }
        }
    }
}

impl Default for Text {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Self(Repr::Owned(s))
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Self(Repr::Owned(s.to_owned()))
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Self {
        Self(Repr::Owned(s.clone()))
    }
}

impl From<Box<str>> for Text {
    fn from(s: Box<str>) -> Self {
        Self(Repr::Owned(s.into_string()))
    }
}

impl From<std::borrow::Cow<'_, str>> for Text {
    fn from(s: std::borrow::Cow<'_, str>) -> Self {
        Self(Repr::Owned(s.into_owned()))
    }
}

impl From<char> for Text {
    fn from(c: char) -> Self {
        Self(Repr::Owned(c.to_string()))
    }
}

impl From<Text> for String {
    fn from(t: Text) -> Self {
        t.into_string()
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<Text> for str {
    fn eq(&self, other: &Text) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Text> for &str {
    fn eq(&self, other: &Text) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Text> for String {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Read as a plain string (an owned `Text`); the client's own decode shares long texts
/// instead (`sharing_from`).
impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_text_is_a_slice_of_its_source_and_reads_as_the_string() {
        let source = Bytes::from_static("{\"text\":\"héllo wörld\"}".as_bytes());
        let inner = &source[9..source.len() - 2];
        let text = Text::shared(&source, inner)
            .expect("inside the source")
            .expect("UTF-8");
        assert!(text.is_shared());
        assert_eq!(text, "héllo wörld");
        assert_eq!(text.as_str().as_ptr(), inner.as_ptr(), "not copied");
        assert_eq!(format!("{text:?}"), "\"héllo wörld\"");
        assert_eq!(serde_json::to_string(&text).unwrap(), "\"héllo wörld\"");
    }

    #[test]
    fn a_string_outside_the_source_is_not_shared() {
        let source = Bytes::from_static(b"abcdef");
        let elsewhere = String::from("abc");
        assert!(Text::shared(&source, elsewhere.as_bytes()).is_none());
        // A slice that starts inside but runs past the end.
        let longer = Bytes::from_static(b"abcdefgh");
        let head = longer.slice(..6);
        assert!(Text::shared(&head, &longer[4..]).is_none());
        // Inside, but not UTF-8.
        let bad = Bytes::from_static(b"a\xffb");
        let err = Text::shared(&bad, &bad[..]).unwrap().unwrap_err();
        assert_eq!(err.valid_up_to(), 1);
    }

    #[test]
    fn truncating_a_shared_text_narrows_it_and_appending_makes_it_owned() {
        let source = Bytes::from_static("aé-bcd".as_bytes());
        let mut text = Text::shared(&source, &source[..]).unwrap().unwrap();
        text.truncate(100);
        assert_eq!(text, "aé-bcd");
        // Cut to half its 7 bytes or more: narrowed, still shared.
        text.truncate(4);
        assert!(text.is_shared());
        assert_eq!(text, "aé-");
        // Cut under half: the kept part is copied, the buffer let go.
        text.truncate(1);
        assert!(!text.is_shared());
        assert_eq!(text, "a");
        let mut text = Text::shared(&source, &source[..]).unwrap().unwrap();
        text.truncate(4);
        text.push_str("!");
        assert!(!text.is_shared());
        assert_eq!(text, "aé-!");
        assert_eq!(text.into_string(), "aé-!");
    }

    #[test]
    #[should_panic(expected = "char boundary")]
    fn truncating_a_shared_text_inside_a_character_panics_as_a_string_does() {
        let source = Bytes::from_static("aé".as_bytes());
        let mut text = Text::shared(&source, &source[..]).unwrap().unwrap();
        text.truncate(2);
    }
}

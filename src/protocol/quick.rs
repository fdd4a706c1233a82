//! The commonest `tools/call` answer, read by hand: a legacy session's
//! `{"jsonrpc":"2.0","id":N,"result":{"content":[{"type":"text","text":"…"}],"isError":false}}`.
//!
//! Decoding such a frame through serde (the envelope's visitor, `ToolResult`'s derived visitor,
//! the content array, each block's visitor) was about a third of a call's instructions in the
//! client (benches/README.md, issue 41). This reader takes exactly that shape and nothing
//! else: the three envelope keys in any order, a result with `content` (text blocks with only
//! `type` and `text`, either first) and `isError` (a boolean or `null`), whitespace anywhere
//! JSON allows it, strings without escapes or control characters, an id that is a plain
//! non-negative integer. Anything else (another key, a duplicate key, an escape, a number
//! with a sign, fraction or exponent, another kind of block, `structuredContent`, `_meta`)
//! makes it answer `None`, and the frame goes through serde as before: so for every frame it
//! reads, it yields what serde would, and every frame it declines is decoded (or refused)
//! exactly as it was. The differential test below and the `protocol_types` fuzz target check
//! that.

use super::content::{ContentBlock, TextContent};
use super::result::ToolResult;

/// A frame [`legacy_call_answer`] read: a response to request `id` whose result is `result`.
#[doc(hidden)]
#[derive(Debug)]
pub struct QuickAnswer<'a> {
    /// The request's id.
    pub id: u64,
    /// The result, as serde decodes it.
    pub result: ToolResult,
    /// The result's own text (the value of `"result"`), for a request that expects another
    /// type than [`ToolResult`].
    pub raw_result: &'a str,
}

/// Reads `frame` when it is the commonest `tools/call` answer (see the [module docs](self)),
/// else `None`. Public (hidden) for the fuzz targets in `fuzz/`; not part of the API.
#[doc(hidden)]
pub fn legacy_call_answer(frame: &str) -> Option<QuickAnswer<'_>> {
    let mut c = Cursor {
        s: frame.as_bytes(),
        i: 0,
    };
    let mut id = None;
    let mut result = None;
    let mut jsonrpc = false;
    c.object(|c, key| {
        match key {
            b"jsonrpc" if !jsonrpc => {
                jsonrpc = c.string()? == b"2.0";
                return jsonrpc.then_some(());
            }
            b"id" if id.is_none() => id = Some(c.id()?),
            b"result" if result.is_none() => {
                c.ws();
                let start = c.i;
                let r = c.tool_result()?;
                // `start..c.i` lies between ASCII bytes of the frame: char boundaries.
                result = Some((r, frame.get(start..c.i)?));
            }
            _ => return None,
        }
        Some(())
    })?;
    c.ws();
    if c.i != c.s.len() || !jsonrpc {
        return None;
    }
    let (result, raw_result) = result?;
    Some(QuickAnswer {
        id: id?,
        result,
        raw_result,
    })
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    /// Skips JSON's whitespace (space, tab, line feed, carriage return).
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    /// `want`, after whitespace.
    fn byte(&mut self, want: u8) -> Option<()> {
        self.ws();
        (self.s.get(self.i) == Some(&want)).then(|| self.i += 1)
    }

    /// A string without escapes or control characters, after whitespace: its bytes.
    fn string(&mut self) -> Option<&'a [u8]> {
        self.byte(b'"')?;
        let rest = self.s.get(self.i..)?;
        let len = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if rest[len] != b'"' {
            return None;
        }
        self.i += len + 1;
        Some(&rest[..len])
    }

    /// A member's key and its colon.
    fn key(&mut self) -> Option<&'a [u8]> {
        let k = self.string()?;
        self.byte(b':')?;
        Some(k)
    }

    /// `,` (`true`: another member or element follows) or `close` (`false`).
    fn comma_or(&mut self, close: u8) -> Option<bool> {
        self.ws();
        match *self.s.get(self.i)? {
            b',' => {
                self.i += 1;
                Some(true)
            }
            b if b == close => {
                self.i += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// A non-negative integer without a sign, fraction or exponent that an `i64` holds (what
    /// serde reads as [`RequestId::Number`](super::RequestId::Number) and the client's pending
    /// map is keyed by).
    fn id(&mut self) -> Option<u64> {
        self.ws();
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(d @ b'0'..=b'9') = self.s.get(self.i) {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.i += 1;
        }
        let digits = self.i - start;
        let leading_zero = digits > 1 && self.s[start] == b'0';
        let more = matches!(self.s.get(self.i), Some(b'.' | b'e' | b'E'));
        if digits == 0 || leading_zero || more || n > i64::MAX as u64 {
            return None;
        }
        Some(n)
    }

    /// `true`, `false` or `null` (`false`), as `isError` is read.
    fn flag(&mut self) -> Option<bool> {
        self.ws();
        let rest = self.s.get(self.i..)?;
        let (value, len) = if rest.starts_with(b"true") {
            (true, 4)
        } else if rest.starts_with(b"false") {
            (false, 5)
        } else if rest.starts_with(b"null") {
            (false, 4)
        } else {
            return None;
        };
        self.i += len;
        // A literal runs into no letter or digit (`truex` is not JSON).
        match self.s.get(self.i) {
            Some(b) if b.is_ascii_alphanumeric() => None,
            _ => Some(value),
        }
    }

    /// An object, `{}` included, whose every member `member` reads (after its key and colon);
    /// `None` when one of them is refused.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &[u8]) -> Option<()>) -> Option<()> {
        self.byte(b'{')?;
        self.ws();
        if self.s.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Some(());
        }
        loop {
            let key = self.key()?;
            member(self, key)?;
            if !self.comma_or(b'}')? {
                return Some(());
            }
        }
    }

    /// A result object with at most `content` and `isError`.
    fn tool_result(&mut self) -> Option<ToolResult> {
        let mut content = None;
        let mut is_error = None;
        self.object(|c, key| {
            match key {
                b"content" if content.is_none() => content = Some(c.content()?),
                b"isError" if is_error.is_none() => is_error = Some(c.flag()?),
                _ => return None,
            }
            Some(())
        })?;
        Some(ToolResult {
            content: content.unwrap_or_default(),
            is_error: is_error.unwrap_or(false),
            ..ToolResult::default()
        })
    }

    /// An array of text blocks.
    fn content(&mut self) -> Option<Vec<ContentBlock>> {
        let mut blocks = Vec::new();
        self.byte(b'[')?;
        self.ws();
        if self.s.get(self.i) == Some(&b']') {
            self.i += 1;
            return Some(blocks);
        }
        loop {
            blocks.push(self.text_block()?);
            if !self.comma_or(b']')? {
                return Some(blocks);
            }
        }
    }

    /// `{"type":"text","text":"…"}`, the two keys in either order and nothing else.
    fn text_block(&mut self) -> Option<ContentBlock> {
        let mut kind = false;
        let mut text = None;
        self.object(|c, key| {
            match key {
                b"type" if !kind => {
                    kind = c.string()? == b"text";
                    return kind.then_some(());
                }
                b"text" if text.is_none() => text = Some(c.string()?),
                _ => return None,
            }
            Some(())
        })?;
        if !kind {
            return None;
        }
        // The frame is UTF-8 and the string lies between two quotes.
        let text = std::str::from_utf8(text?).ok()?;
        Some(ContentBlock::Text(TextContent::new(text)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What serde makes of `frame`'s result, when its envelope is one this reader could read.
    fn serde_result(frame: &str) -> Option<(u64, ToolResult)> {
        let v: serde_json::Value = serde_json::from_str(frame).ok()?;
        let id = v.get("id")?.as_u64()?;
        let raw = serde_json::to_string(v.get("result")?).ok()?;
        Some((id, serde_json::from_str(&raw).ok()?))
    }

    /// Checks that the reader reads `frame` as serde does.
    fn same(frame: &str) -> QuickAnswer<'_> {
        let quick = legacy_call_answer(frame).unwrap_or_else(|| panic!("declined: {frame}"));
        let (id, result) = serde_result(frame).expect("serde reads it");
        assert_eq!((quick.id, &quick.result), (id, &result), "{frame}");
        let again: ToolResult = serde_json::from_str(quick.raw_result).expect("the raw result");
        assert_eq!(again, result);
        quick
    }

    #[test]
    fn the_commonest_answers_are_read_as_serde_reads_them() {
        let q = same(
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}"#,
        );
        assert_eq!(q.result.joined_text(), "hello");
        assert_eq!(
            q.raw_result,
            r#"{"content":[{"type":"text","text":"hello"}],"isError":false}"#
        );
        // server-everything's order, Python's separators, sorted keys, a null flag, no flag,
        // an empty result, empty content, several blocks, non-ASCII text, the largest id.
        same(r#"{"result":{"content":[{"type":"text","text":"a"}]},"jsonrpc":"2.0","id":0}"#);
        same(
            "{\"jsonrpc\": \"2.0\", \"id\": 12, \"result\": {\"content\": [{\"type\": \"text\", \"text\": \"b\"}], \"isError\": true}}\r\n",
        );
        same(
            r#"{"id":3,"jsonrpc":"2.0","result":{"content":[{"text":"z","type":"text"}],"isError":null}}"#,
        );
        same(r#"{"jsonrpc":"2.0","id":4,"result":{}}"#);
        same(r#"{"jsonrpc":"2.0","id":4,"result":{"content":[],"isError":false}}"#);
        same(
            r#"{"jsonrpc":"2.0","id":5,"result":{"isError":false,"content":[{"type":"text","text":""},{"type":"text","text":"é ✓ 𝄞"}]}}"#,
        );
        same(r#"{"jsonrpc":"2.0","id":9223372036854775807,"result":{"content":[]}}"#);
    }

    #[test]
    fn anything_else_is_declined() {
        for frame in [
            // escapes, control characters, another kind of block, more fields
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\nb"}]}}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\u{1}\"}]}}",
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a","annotations":{}}]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"text":"a"}]}}"#,
            // duplicate keys (serde refuses some, keeps the last of others)
            r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","type":"text","text":"a"}]}}"#,
            // ids that are not a plain integer an i64 holds
            r#"{"jsonrpc":"2.0","id":-1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1e2,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":01,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"1","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"result":{}}"#,
            // other messages, a wrong version, missing keys, bad literals, trailing bytes
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"isError":truex}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"isError":0}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}} x"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"},]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}]}"#,
            "",
            "{",
        ] {
            assert!(legacy_call_answer(frame).is_none(), "read: {frame}");
        }
    }

    proptest::proptest! {
        /// An envelope of the three keys in any order, one of several results, sometimes an
        /// extra member, any spacing, any id, texts with and without escapes: the reader reads
        /// exactly the frames of its shape, and whatever it reads, serde reads the same.
        #[test]
        fn whatever_it_reads_serde_reads_the_same(
            order in 0usize..6,
            id in proptest::prop_oneof![0u64..1000, proptest::num::u64::ANY],
            result in 0usize..RESULTS.len(),
            extra in proptest::option::weighted(0.25, (0usize..EXTRAS.len(), 0usize..4)),
            spaces in proptest::collection::vec(0usize..4, 16),
            text in "[a-z\"é\n ✓]{0,5}",
        ) {
            let pad = |k: usize| [" ", "", "\n", "\t "][spaces[k % spaces.len()]];
            let escaped = serde_json::to_string(&text).expect("a string");
            let result_text = RESULTS[result].0.replace('T', &escaped[1..escaped.len() - 1]);
            let mut members = vec![
                r#""jsonrpc":"2.0""#.to_owned(),
                format!(r#""id":{id}"#),
                format!(r#""result":{result_text}"#),
            ];
            let perm = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]][order];
            members = perm.iter().map(|&i| members[i].clone()).collect();
            if let Some((e, at)) = extra {
                members.insert(at.min(members.len()), EXTRAS[e].to_owned());
            }
            let mut frame = format!("{}{{", pad(0));
            for (n, m) in members.iter().enumerate() {
                if n > 0 {
                    frame.push_str(pad(n));
                    frame.push(',');
                }
                frame.push_str(pad(n + 1));
                frame.push_str(&m.replacen(':', &format!("{}:{}", pad(n + 2), pad(n + 3)), 1));
            }
            frame.push('}');
            frame.push_str(pad(15));
            let its_shape = extra.is_none()
                && RESULTS[result].1
                && i64::try_from(id).is_ok()
                && (escaped.len() == text.len() + 2 || !RESULTS[result].0.contains('T'));
            let quick = legacy_call_answer(&frame);
            proptest::prop_assert_eq!(quick.is_some(), its_shape, "{}", frame);
            if let Some(quick) = quick {
                let (sid, sresult) = serde_result(&frame).expect("serde reads what the reader read");
                proptest::prop_assert_eq!(quick.id, sid);
                proptest::prop_assert_eq!(&quick.result, &sresult);
            }
        }
    }

    /// Results for the property above (`T` the text), and whether the reader takes them.
    const RESULTS: [(&str, bool); 10] = [
        (r#"{}"#, true),
        (r#"{"content":[]}"#, true),
        (r#"{"isError":true}"#, true),
        (
            r#"{"content":[{"type":"text","text":"T"}],"isError":false}"#,
            true,
        ),
        (
            r#"{"isError":null,"content":[{"text":"T","type":"text"},{"type":"text","text":"T"}]}"#,
            true,
        ),
        (r#"{"content":[{"type":"text"}]}"#, false),
        (r#"{"content":[{"type":"text","text":"T","x":1}]}"#, false),
        (
            r#"{"content":[{"type":"image","data":"T","mimeType":"image/png"}]}"#,
            false,
        ),
        (r#"{"content":[],"structuredContent":{"a":"T"}}"#, false),
        (r#"{"isError":1}"#, false),
    ];

    /// Members the reader never takes.
    const EXTRAS: [&str; 4] = [
        r#""method":"x""#,
        r#""x":[]"#,
        r#""id":1"#,
        r#""jsonrpc":"2.0""#,
    ];
}

//! What a transport keeps of a message over the frame limit: its first bytes, its last bytes
//! and its length, never the rest (see [`OversizeFrame`]). One buffer for every transport: the
//! stdio line reader, the event-stream parser and a Streamable HTTP JSON body.
//!
//! The head is the message's first [`OVERSIZE_HEAD`] bytes; the buffer also keeps the last
//! [`OVERSIZE_TAIL`] + 1 bytes of everything pushed (one more than a report shows, so a line
//! reader can drop a final `\r` without losing a byte of it). A report's tail is either the
//! last bytes *after* the head ([`HeadTail::tail_after_head`]: stdio, HTTP bodies) or the last
//! bytes whatever the head holds, none when the head holds it all
//! ([`HeadTail::tail_overlapping`]: event streams). Either way a JSON-RPC `id` near either end
//! is found.

use super::OversizeFrame;

/// How much of an oversized message's start is kept.
pub const OVERSIZE_HEAD: usize = 4 * 1024;
/// How much of an oversized message's end is reported.
pub const OVERSIZE_TAIL: usize = 512;
/// How much of the end is kept: one more than reported (see the [module docs](self)).
const KEPT: usize = OVERSIZE_TAIL + 1;

/// The edges of an oversized message. See the [module docs](self).
#[derive(Debug, Default, Clone)]
pub(crate) struct HeadTail {
    head: Vec<u8>,
    /// The last [`KEPT`] bytes of everything pushed (overlapping the head).
    last: Vec<u8>,
    len: u64,
}

impl HeadTail {
    /// Takes in the next bytes of the message.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        let room = OVERSIZE_HEAD.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        if bytes.len() >= KEPT {
            self.last.clear();
            self.last.extend_from_slice(&bytes[bytes.len() - KEPT..]);
            return;
        }
        let over = (self.last.len() + bytes.len()).saturating_sub(KEPT);
        self.last.drain(..over);
        self.last.extend_from_slice(bytes);
    }

    /// Drops the message's final byte if it is `byte` (a line's `\r`); whether it did.
    pub(crate) fn drop_final(&mut self, byte: u8) -> bool {
        if self.len == 0 || self.last.last() != Some(&byte) {
            return false;
        }
        self.last.pop();
        if self.len <= self.head.len() as u64 {
            self.head.pop();
        }
        self.len -= 1;
        true
    }

    /// The message's length so far, in bytes.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // the event-stream parser's
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Its first bytes.
    pub(crate) fn head(&self) -> &[u8] {
        &self.head
    }

    /// Its last bytes after the head: at most [`OVERSIZE_TAIL`], none when the head holds it
    /// all.
    pub(crate) fn tail_after_head(&self) -> &[u8] {
        let after = self.len.saturating_sub(self.head.len() as u64);
        let n = usize::try_from(after)
            .unwrap_or(usize::MAX)
            .min(OVERSIZE_TAIL)
            .min(self.last.len());
        &self.last[self.last.len() - n..]
    }

    /// Its last [`OVERSIZE_TAIL`] bytes (or fewer), whatever the head holds of them; none when
    /// the head holds it all.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // the event-stream parser's
    pub(crate) fn tail_overlapping(&self) -> &[u8] {
        if self.len <= self.head.len() as u64 {
            return &[];
        }
        &self.last[self.last.len().saturating_sub(OVERSIZE_TAIL)..]
    }

    /// The report of a message over `limit`, with the tail after the head.
    pub(crate) fn frame(&self, limit: usize) -> OversizeFrame<'_> {
        OversizeFrame::new(self.head(), self.tail_after_head(), self.len, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(message: &[u8], chunk: usize) -> HeadTail {
        let mut edges = HeadTail::default();
        for piece in message.chunks(chunk.max(1)) {
            edges.push(piece);
        }
        edges
    }

    #[test]
    fn the_edges_do_not_depend_on_how_the_message_is_cut() {
        let message: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        for len in [0, 1, 100, 4096, 4097, 4600, 4608, 4609, 10_000] {
            let whole = &message[..len];
            let want_head = &whole[..len.min(OVERSIZE_HEAD)];
            let want_after = &whole[len.saturating_sub(OVERSIZE_TAIL).max(want_head.len())..];
            let want_overlap: &[u8] = if len <= want_head.len() {
                &[]
            } else {
                &whole[len - len.min(OVERSIZE_TAIL)..]
            };
            for chunk in [1, 7, 512, 513, 4096, 100_000] {
                let edges = fed(whole, chunk);
                assert_eq!(edges.len(), len as u64);
                assert_eq!(edges.head(), want_head, "{len}/{chunk}");
                assert_eq!(edges.tail_after_head(), want_after, "{len}/{chunk}");
                assert_eq!(edges.tail_overlapping(), want_overlap, "{len}/{chunk}");
            }
        }
    }

    #[test]
    fn a_final_byte_is_dropped_from_whichever_end_holds_it() {
        let mut short = fed(b"abc\r", 2);
        assert!(short.drop_final(b'\r'));
        assert_eq!((short.head(), short.len()), (&b"abc"[..], 3));
        let long: Vec<u8> = [vec![b'x'; 5000], b"end\r".to_vec()].concat();
        let mut edges = fed(&long, 100);
        assert!(edges.drop_final(b'\r'));
        assert!(!edges.drop_final(b'\r'));
        assert!(edges.tail_after_head().ends_with(b"xend"));
        assert_eq!(edges.tail_after_head().len(), OVERSIZE_TAIL);
        assert_eq!(edges.len(), 5003);
    }
}

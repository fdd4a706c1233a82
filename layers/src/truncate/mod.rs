//! Caps the size of every response; the response type implements [`Truncatable`].

/// A response that can be cut to `max_bytes`; `truncate_to` returns the number of bytes removed
/// (0 when the value already fits, and then it is left untouched).
pub trait Truncatable {
    /// Cuts `self` to at most `max_bytes` (plus whatever marker the type appends) and returns
    /// the number of bytes removed.
    fn truncate_to(&mut self, max_bytes: usize) -> usize;
}

impl Truncatable for String {
    fn truncate_to(&mut self, max_bytes: usize) -> usize {
        if self.len() <= max_bytes {
            return 0;
        }
        let mut cut = max_bytes;
        while !self.is_char_boundary(cut) {
            cut -= 1;
        }
        let removed = self.len() - cut;
        self.truncate(cut);
        removed
    }
}

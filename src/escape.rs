//! The one escaping function for text a server sent, before a person reads it.
//!
//! A server chooses every string it sends: tool names, schema keys, descriptions, skill
//! frontmatter, error messages. Printed raw, a carriage return or an ANSI sequence
//! (`ESC[2K ESC[1A`) erases what the terminal showed and draws something else, a newline
//! forges a line of the CLI's own, and a zero-width or direction-changing code point
//! (`U+202E`) hides or reorders text an operator believes they reviewed. [`visible`] writes each
//! such code point as a Rust escape (`\n`, `\r`, `\u{1b}`, `\u{202e}`), so what is there is
//! shown and nothing is hidden; every other character is kept as it is.
//!
//! What is escaped ([`is_hidden`]): the C0 and C1 controls and DEL (newline and tab included:
//! a value is one line), the line and paragraph separators, Unicode's format characters (bidi
//! embeddings, overrides and isolates, zero-width spaces and joiners, the BOM, the soft hyphen,
//! the tag characters that smuggle ASCII invisibly), the variation selectors, and the fillers
//! that render as blank (Hangul fillers, the Braille blank). The list is written here by hand:
//! the escape must not change with a Unicode table a dependency updates, and each range is one
//! line to read.
//!
//! The command line applies it to every server-supplied string it prints; [`visible_lines`]
//! keeps a multi-line text's lines apart (a description diff) with each line escaped.
//!
//! ```
//! use kaged_mcp::escape::visible;
//! assert_eq!(visible("add"), "add");
//! assert_eq!(visible("a\r\u{1b}[2Kb"), r"a\r\u{1b}[2Kb");
//! assert_eq!(visible("safe\u{202e}txt.exe"), r"safe\u{202e}txt.exe");
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;

/// Code point ranges (inclusive) that are shown escaped, beside the controls.
const HIDDEN: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),   // soft hyphen
    (0x034F, 0x034F),   // combining grapheme joiner
    (0x0600, 0x0605),   // Arabic number signs (format)
    (0x061C, 0x061C),   // Arabic letter mark
    (0x06DD, 0x06DD),   // Arabic end of ayah
    (0x070F, 0x070F),   // Syriac abbreviation mark
    (0x0890, 0x0891),   // Arabic pound and piastre marks above
    (0x08E2, 0x08E2),   // Arabic disputed end of ayah
    (0x115F, 0x1160),   // Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),   // Khmer inherent vowels (invisible)
    (0x180B, 0x180F),   // Mongolian free variation selectors, vowel separator
    (0x200B, 0x200F),   // zero-width space, ZWNJ, ZWJ, LRM, RLM
    (0x2028, 0x2029),   // line and paragraph separators
    (0x202A, 0x202E),   // bidi embeddings and overrides
    (0x2060, 0x206F),   // word joiner, invisible operators, bidi isolates, deprecated formats
    (0x2800, 0x2800),   // Braille pattern blank
    (0x3164, 0x3164),   // Hangul filler
    (0xFE00, 0xFE0F),   // variation selectors
    (0xFEFF, 0xFEFF),   // zero-width no-break space (BOM)
    (0xFFA0, 0xFFA0),   // halfwidth Hangul filler
    (0xFFF9, 0xFFFB),   // interlinear annotation
    (0x110BD, 0x110BD), // Kaithi number sign
    (0x110CD, 0x110CD), // Kaithi number sign above
    (0x13430, 0x1343F), // Egyptian hieroglyph format controls
    (0x1BCA0, 0x1BCA3), // shorthand format controls
    (0x1D173, 0x1D17A), // musical symbol format controls
    (0xE0000, 0xE0FFF), // tag characters and variation selectors supplement
];

/// Whether `c` is shown escaped by [`visible`]: a control, or a code point that draws nothing
/// or changes how the text around it is drawn.
pub fn is_hidden(c: char) -> bool {
    if c.is_control() {
        return true;
    }
    let n = u32::from(c);
    if n < 0xAD {
        return false;
    }
    HIDDEN.iter().any(|&(lo, hi)| (lo..=hi).contains(&n))
}

/// `s` with every [hidden](is_hidden) code point written as a Rust escape: `\n`, `\r`, `\t`,
/// `\0`, else `\u{…}` in lowercase hex. Borrowed when nothing needs escaping.
pub fn visible(s: &str) -> Cow<'_, str> {
    let Some(first) = s.find(is_hidden) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str(&s[..first]);
    for c in s[first..].chars() {
        push(&mut out, c);
    }
    Cow::Owned(out)
}

/// `s` as by [`visible`], cut after `max_chars` characters of `s` (then `…`): a server's string
/// named inside a longer message.
pub fn visible_cut(s: &str, max_chars: usize) -> String {
    let cut = s.char_indices().nth(max_chars).map(|(i, _)| i);
    let mut out = visible(&s[..cut.unwrap_or(s.len())]).into_owned();
    if cut.is_some() {
        out.push('…');
    }
    out
}

/// `s` escaped as by [`visible`], but its line breaks (`\n`, and a `\r\n` pair) kept as line
/// breaks: one escaped line per line of `s`. For multi-line text a person reads as text (a
/// description); a lone `\r` is escaped, so no line overwrites another.
pub fn visible_lines(s: &str) -> Vec<Cow<'_, str>> {
    s.split('\n')
        .map(|l| visible(l.strip_suffix('\r').unwrap_or(l)))
        .collect()
}

/// Serialized JSON with every [hidden](is_hidden) code point that JSON leaves raw (DEL, the C1
/// controls, invisible and bidi code points; serde already escapes the C0 controls) written
/// as a JSON `\uXXXX` escape (a surrogate pair above U+FFFF). The same JSON value, safe to
/// show on a terminal. `json` must be serialized JSON: outside strings it holds no such code
/// point.
pub fn json(json: &str) -> Cow<'_, str> {
    let Some(first) = json.find(is_hidden) else {
        return Cow::Borrowed(json);
    };
    let mut out = String::with_capacity(json.len() + 12);
    out.push_str(&json[..first]);
    for c in json[first..].chars() {
        if is_hidden(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{:04x}", u);
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `s` holds any code point [`visible`] escapes.
pub fn has_hidden(s: &str) -> bool {
    s.chars().any(is_hidden)
}

fn push(out: &mut String, c: char) {
    if !is_hidden(c) {
        out.push(c);
        return;
    }
    match c {
        '\n' => out.push_str(r"\n"),
        '\r' => out.push_str(r"\r"),
        '\t' => out.push_str(r"\t"),
        '\0' => out.push_str(r"\0"),
        c => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for s in [
            "",
            "add",
            "Adds two numbers.",
            "héllo wörld",
            "日本語",
            "emoji 🙂",
            "a\\b",
        ] {
            assert!(matches!(visible(s), Cow::Borrowed(_)), "{s}");
            assert_eq!(visible(s), s);
        }
    }

    #[test]
    fn terminal_controls_are_shown() {
        assert_eq!(
            visible("x\r\u{1b}[2K\u{1b}[1Ay\u{7}\u{7f}\u{9b}"),
            r"x\r\u{1b}[2K\u{1b}[1Ay\u{7}\u{7f}\u{9b}"
        );
        assert_eq!(visible("a\nb\tc\0"), r"a\nb\tc\0");
    }

    #[test]
    fn invisible_and_direction_changing_code_points_are_shown() {
        assert_eq!(visible("a\u{202e}b"), r"a\u{202e}b");
        assert_eq!(
            visible("a\u{200b}b\u{2066}c\u{feff}"),
            r"a\u{200b}b\u{2066}c\u{feff}"
        );
        // Tag characters spell ASCII invisibly ("hi" here).
        assert_eq!(visible("ok\u{e0068}\u{e0069}"), r"ok\u{e0068}\u{e0069}");
        assert_eq!(visible("\u{2028}\u{3164}"), r"\u{2028}\u{3164}");
    }

    #[test]
    fn no_escaped_text_holds_a_hidden_code_point() {
        // Every code point, alone and between letters.
        for n in 0..=0x10FFFFu32 {
            let Some(c) = char::from_u32(n) else { continue };
            let s = format!("a{c}b");
            let v = visible(&s);
            assert!(!has_hidden(&v), "U+{n:04X} left hidden");
            assert_eq!(v == s, !is_hidden(c), "U+{n:04X}");
        }
    }

    #[test]
    fn a_cut_counts_characters_and_says_so() {
        assert_eq!(visible_cut("héllo", 5), "héllo");
        assert_eq!(visible_cut("héllo", 2), "hé…");
        assert_eq!(visible_cut("a\u{202e}bc", 2), r"a\u{202e}…");
    }

    #[test]
    fn lines_are_kept_apart_and_each_escaped() {
        assert_eq!(
            visible_lines("one\r\ntwo\rthree\n\u{1b}[1A"),
            ["one", r"two\rthree", r"\u{1b}[1A"]
        );
    }

    #[test]
    fn json_keeps_its_value_and_loses_its_hidden_code_points() {
        let v = serde_json::json!({"k\u{202e}": "a\u{7f}\u{9b}\u{200b}\u{e0041}\n\u{1b}"});
        let text = v.to_string();
        let safe = json(&text);
        assert!(!has_hidden(&safe), "{safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), v);
        assert!(matches!(json("{\"a\":1}"), Cow::Borrowed(_)));
    }
}

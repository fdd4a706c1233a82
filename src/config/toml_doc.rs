//! Reading TOML with positions: `local.toml` and `config.toml` errors name the line too.
//!
//! The `toml` parser reports a duplicate key as a bare "duplicate key" at the second key's
//! span. [`TomlDoc::parse`] turns that into an error naming the key path and the line of the
//! first definition, like every other configuration error: it renames the duplicate to a
//! marker no document contains, parses again with recovery, and looks for the marker in the
//! tree; the parser itself resolves table headers, dotted keys, inline tables and arrays of
//! tables. Should the marker not turn up, the parser's own message is kept.

use std::fmt::Write as _;
use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::error::{ConfigError, Location};

/// Turns a byte offset into a 1-based line and column.
pub(crate) fn location(text: &str, offset: usize) -> Location {
    let offset = offset.min(text.len());
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    Location { line, column }
}

/// A parsed TOML document and the text its spans point into.
pub(crate) struct TomlDoc<'i> {
    pub(crate) text: &'i str,
    pub(crate) file: &'i Path,
    pub(crate) root: Spanned<DeTable<'i>>,
}

impl<'i> TomlDoc<'i> {
    /// Parses `text`; a syntax error names its line, a duplicate key its key path too.
    pub(crate) fn parse(text: &'i str, file: &'i Path) -> Result<Self, ConfigError> {
        let e = match DeTable::parse(text) {
            Ok(root) => return Ok(Self { text, file, root }),
            Err(e) => e,
        };
        let at = e.span().map(|s| location(text, s.start));
        let duplicate = match e.span() {
            Some(span) if e.message().trim() == "duplicate key" => duplicate(text, span),
            _ => None,
        };
        Err(match duplicate {
            Some(d) => {
                let mut msg = format!("duplicate key `{}`", d.key);
                if let Some(line) = d.first_line {
                    let _ = write!(msg, " (first defined at line {line})");
                }
                ConfigError::new(file, d.path, at, msg)
            }
            None => ConfigError::new(
                file,
                "",
                at,
                format!("invalid TOML: {}", e.message().trim()),
            ),
        })
    }

    /// An error at `span`.
    pub(crate) fn err(
        &self,
        span: Range<usize>,
        key_path: impl Into<String>,
        msg: impl Into<String>,
    ) -> ConfigError {
        ConfigError::new(
            self.file,
            key_path,
            Some(location(self.text, span.start)),
            msg,
        )
    }
}

/// A duplicate key, found again in the document.
struct Duplicate {
    /// Its name, unquoted.
    key: String,
    /// Its dotted key path, `mcp.db.disabled`; array-of-tables elements as `[i]`.
    path: String,
    /// The line of its first definition.
    first_line: Option<usize>,
}

/// Finds the duplicate key the parser reported at `span` (see the module doc).
fn duplicate(text: &str, span: Range<usize>) -> Option<Duplicate> {
    let written = text.get(span.clone())?;
    // The key as TOML reads it, quotes and escapes resolved: `"a b" = 0` is one key `a b`.
    let probe = format!("{written} = 0");
    let probe = DeTable::parse(&probe).ok()?;
    let key = match probe.get_ref().iter().collect::<Vec<_>>().as_slice() {
        [(k, v)] if matches!(v.get_ref(), DeValue::Integer(_)) => k.get_ref().to_string(),
        _ => return None,
    };
    let marker = marker_for(text);
    let renamed = format!("{}{marker}{}", &text[..span.start], &text[span.end..]);
    let (root, _) = DeTable::parse_recoverable(&renamed);
    let mut path = String::new();
    let parent = find_key(root.get_ref(), &marker, &mut path)?;
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(&key);
    // The first definition comes before the duplicate, where the two texts agree.
    let first_line = parent
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == key)
        .map(|(k, _)| location(&renamed, k.span().start).line);
    Some(Duplicate {
        key,
        path,
        first_line,
    })
}

/// A bare key `text` does not contain: with a longer run of `_` than the text has.
fn marker_for(text: &str) -> String {
    let longest_run = text.split(|c| c != '_').map(str::len).max().unwrap_or(0);
    format!("kaged-mcp-duplicate-key{}", "_".repeat(longest_run + 1))
}

/// The table holding `key`, searched depth first; `path` ends as that table's key path.
fn find_key<'t, 'i>(
    table: &'t DeTable<'i>,
    key: &str,
    path: &mut String,
) -> Option<&'t DeTable<'i>> {
    if table.iter().any(|(k, _)| k.get_ref().as_ref() == key) {
        return Some(table);
    }
    for (k, v) in table.iter() {
        let len = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(k.get_ref());
        if let Some(found) = find_in_value(v.get_ref(), key, path) {
            return Some(found);
        }
        path.truncate(len);
    }
    None
}

fn find_in_value<'t, 'i>(
    value: &'t DeValue<'i>,
    key: &str,
    path: &mut String,
) -> Option<&'t DeTable<'i>> {
    match value {
        DeValue::Table(t) => find_key(t, key, path),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                let _ = write!(path, "[{i}]");
                if let Some(found) = find_in_value(item.get_ref(), key, path) {
                    return Some(found);
                }
                path.truncate(len);
            }
            None
        }
        _ => None,
    }
}

/// The TOML type name of a value, for "expected an integer, found a string".
pub(crate) fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a datetime",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// The value of an integer, when it fits an `i64`.
pub(crate) fn integer(v: &DeValue<'_>) -> Option<i64> {
    let i = v.as_integer()?;
    i64::from_str_radix(i.as_str(), i.radix()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dup(text: &str) -> ConfigError {
        match TomlDoc::parse(text, Path::new("t.toml")) {
            Ok(_) => panic!("parsed: {text}"),
            Err(e) => e,
        }
    }

    #[test]
    fn a_duplicate_key_names_its_path_and_first_line() {
        let e = dup("[a]\nb = 1\n\n[a.c]\nd = 1\n'd' = 2\n");
        assert_eq!(
            e.to_string(),
            "t.toml:6:1: a.c.d: duplicate key `d` (first defined at line 5)"
        );
        let e = dup("x = 1\n[x]\n");
        assert_eq!(
            e.to_string(),
            "t.toml:2:2: x: duplicate key `x` (first defined at line 1)"
        );
        let e = dup("t = [{ a = 1 }, { a = 2, a = 3 }]\n");
        assert_eq!(e.key_path, "t[1].a", "{e}");
    }

    #[test]
    fn a_dotted_key_into_a_header_table_names_the_table() {
        let e = dup("[a.b]\nc = 1\n[a]\nb.d = 2\n");
        assert_eq!(
            e.to_string(),
            "t.toml:4:1: a.b: duplicate key `b` (first defined at line 1)"
        );
    }

    #[test]
    fn the_marker_is_never_a_key_of_the_document() {
        let text = format!(
            "[a]\nkaged-mcp-duplicate-key_ = 1\nkaged-mcp-duplicate-key{} = 2\nb = 1\nb = 2\n",
            "_".repeat(100_000)
        );
        let e = dup(&text);
        assert_eq!(e.key_path, "a.b", "{}", e.message);
        assert_eq!(e.location.map(|l| l.line), Some(5));
        // One marker, found in one pass: one `_` longer than the longest run in the text (not
        // tried longer and longer until absent), so the text is parsed again once.
        let marker = marker_for(&text);
        assert_eq!(marker.len(), "kaged-mcp-duplicate-key".len() + 100_001);
        assert!(!text.contains(&marker));
    }

    #[test]
    fn a_span_that_is_no_key_finds_nothing() {
        // Then `parse` keeps the parser's own message.
        assert!(duplicate("a = 1\n", 4..5).is_none());
        assert!(duplicate("a = 1\n", 0..3).is_none());
        assert!(duplicate("a = 1\n", 9..12).is_none());
    }

    #[test]
    fn offsets_become_one_based_lines_and_columns() {
        let t = "a = 1\nbé = 2\n";
        assert_eq!(location(t, 0), Location { line: 1, column: 1 });
        assert_eq!(location(t, 6), Location { line: 2, column: 1 });
        assert_eq!(location(t, 9), Location { line: 2, column: 3 });
    }
}

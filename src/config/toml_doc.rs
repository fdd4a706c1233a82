//! Reading TOML with positions: `local.toml` and `config.toml` errors name the line too.

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
    /// Parses `text`; a syntax error (duplicate keys included) names its line.
    pub(crate) fn parse(text: &'i str, file: &'i Path) -> Result<Self, ConfigError> {
        match DeTable::parse(text) {
            Ok(root) => Ok(Self { text, file, root }),
            Err(e) => Err(ConfigError::new(
                file,
                "",
                e.span().map(|s| location(text, s.start)),
                format!("invalid TOML: {}", e.message().trim()),
            )),
        }
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

    #[test]
    fn offsets_become_one_based_lines_and_columns() {
        let t = "a = 1\nbé = 2\n";
        assert_eq!(location(t, 0), Location { line: 1, column: 1 });
        assert_eq!(location(t, 6), Location { line: 2, column: 1 });
        assert_eq!(location(t, 9), Location { line: 2, column: 3 });
    }
}

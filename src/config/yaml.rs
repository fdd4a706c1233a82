//! A YAML reader that keeps where every value came from.
//!
//! `serde_yaml` reports a line for syntax errors only; an operator also needs one for "this
//! `transport` is not supported" and for values that came from the overlay file. So the YAML
//! event stream of `yaml-rust2` is turned into a small tree of [`Node`]s, each with its file
//! and its line and column. The reader is strict and bounded: duplicate keys, non-string keys
//! and several documents are errors; aliases are expanded against a node budget, so an alias
//! bomb ("billion laughs") fails in microseconds; nesting depth is capped.
//!
//! A duplicate key is found while the tree is still being built, so the reader names its key
//! path itself; the caller says how a path is written ([`KeyPath`]), so the error reads like
//! the validators' errors about the same place.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::error::{ConfigError, Location};

/// Most nodes one file may expand to, aliases included.
pub(crate) const MAX_NODES: usize = 100_000;
/// Deepest nesting of sequences and mappings.
pub(crate) const MAX_DEPTH: usize = 64;

/// A YAML value with its origin.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) value: Value,
    pub(crate) loc: Location,
    pub(crate) file: Arc<Path>,
}

/// One key of a mapping, with where the key itself was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) key: String,
    pub(crate) key_loc: Location,
    /// The file the key was written in (the overlay adds keys of its own).
    pub(crate) file: Arc<Path>,
    pub(crate) value: Node,
}

/// The value of a [`Node`], after YAML 1.2 core-schema resolution of plain scalars.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
}

impl Node {
    /// A short name of the value's type, for "expected a string, found a list".
    pub(crate) fn type_name(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// The entries when this is a mapping.
    pub(crate) fn as_map(&self) -> Option<&[Entry]> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The value under `key` when this is a mapping that has it.
    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|e| e.key == key)
            .map(|e| &e.value)
    }
}

/// One step from the root of a document to a value: a mapping key or a list index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// Writes the steps to a place as the key path errors name it.
pub(crate) type KeyPath = fn(&[Step<'_>]) -> String;

/// Writes `steps` as a key path: keys joined by `.`, indices as `[i]` (`mcp.db.command[1]`);
/// a key whose parent place satisfies `quoted` is written in double quotes
/// (`primary.tools."mcp.db.query"`).
pub(crate) fn write_path(steps: &[Step<'_>], quoted: impl Fn(&[Step<'_>]) -> bool) -> String {
    let mut out = String::new();
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Index(n) => {
                let _ = write!(out, "[{n}]");
            }
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                if quoted(&steps[..i]) {
                    let _ = write!(out, "\"{k}\"");
                } else {
                    out.push_str(k);
                }
            }
        }
    }
    out
}

/// The plain [`KeyPath`]: no key is quoted.
#[cfg(test)]
pub(crate) fn dotted(steps: &[Step<'_>]) -> String {
    write_path(steps, |_| false)
}

fn loc(m: &Marker) -> Location {
    // yaml-rust2 markers: line is 1-based, column 0-based.
    Location {
        line: m.line(),
        column: m.col() + 1,
    }
}

enum Frame {
    Seq {
        items: Vec<Node>,
        loc: Location,
        anchor: usize,
    },
    Map {
        entries: Vec<Entry>,
        /// The line of each key so far: a repeated key is found without a scan (a mapping of
        /// 100 000 keys would otherwise cost 5·10⁹ comparisons).
        lines: std::collections::HashMap<String, usize>,
        loc: Location,
        anchor: usize,
        key: Option<(String, Location)>,
    },
}

fn count_nodes(node: &Node) -> usize {
    1 + match &node.value {
        Value::Seq(items) => items.iter().map(count_nodes).sum(),
        Value::Map(entries) => entries.iter().map(|e| count_nodes(&e.value)).sum(),
        _ => 0,
    }
}

fn resolve_plain(s: &str) -> Value {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY)
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        _ => {}
    }
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = s.parse::<i64>() {
            return Value::Int(i);
        }
        return Value::Float(s.parse::<f64>().unwrap_or(f64::NAN));
    }
    if let Some(hex) = s.strip_prefix("0x") {
        if let Ok(i) = i64::from_str_radix(hex, 16) {
            return Value::Int(i);
        }
    }
    if let Some(oct) = s.strip_prefix("0o") {
        if let Ok(i) = i64::from_str_radix(oct, 8) {
            return Value::Int(i);
        }
    }
    let looks_numeric = digits
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit() || b == b'.')
        && digits
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'));
    if looks_numeric {
        if let Ok(f) = s.parse::<f64>() {
            return Value::Float(f);
        }
    }
    Value::Str(s.to_owned())
}

/// The steps from the root to `key`, a key about to be added to the innermost open mapping.
fn steps_to<'s>(stack: &'s [Frame], key: &'s str) -> Vec<Step<'s>> {
    let mut steps: Vec<Step<'s>> = stack
        .iter()
        .filter_map(|frame| match frame {
            Frame::Seq { items, .. } => Some(Step::Index(items.len())),
            Frame::Map { key, .. } => key.as_ref().map(|(k, _)| Step::Key(k.as_str())),
        })
        .collect();
    steps.push(Step::Key(key));
    steps
}

/// Parses one YAML document into a [`Node`] tree; an empty document is `Null`. A duplicate
/// key's error names its place as `key_path` writes it.
pub(crate) fn parse(text: &str, file: &Path, key_path: KeyPath) -> Result<Node, ConfigError> {
    let mut tree = Tree::new(Arc::from(file), key_path);
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut parser = Parser::new_from_str(text);
    loop {
        let (event, mark) = parser
            .next_token()
            .map_err(|e| tree.err(loc(e.marker()), format!("invalid YAML: {}", e.info())))?;
        let here = loc(&mark);
        if matches!(event, Event::StreamEnd) {
            break;
        }
        if let Some(finished) = tree.event(event, here)? {
            tree.add(finished, here)?;
        }
    }
    Ok(tree.finish())
}

/// A node an event finished (a scalar, an alias, or a closed collection), with its anchor and
/// the number of nodes it adds to the budget.
struct Finished {
    node: Node,
    anchor: usize,
    added: usize,
}

/// The tree being built from the event stream: the open collections, the anchors so far, the
/// node budget spent and the root once it is finished.
struct Tree {
    file: Arc<Path>,
    key_path: KeyPath,
    stack: Vec<Frame>,
    anchors: HashMap<usize, (Node, usize)>,
    total: usize,
    root: Option<Node>,
    documents: usize,
}

impl Tree {
    /// An empty tree for a document read from `file`.
    fn new(file: Arc<Path>, key_path: KeyPath) -> Self {
        Self {
            file,
            key_path,
            stack: Vec::new(),
            anchors: HashMap::new(),
            total: 0,
            root: None,
            documents: 0,
        }
    }

    /// An error at `at` in this file, with no key path.
    fn err(&self, at: Location, msg: String) -> ConfigError {
        ConfigError::new(self.file.to_path_buf(), "", Some(at), msg)
    }

    /// Takes one event (not `StreamEnd`, where parsing stops); returns the node it finished.
    fn event(&mut self, event: Event, here: Location) -> Result<Option<Finished>, ConfigError> {
        match event {
            Event::StreamStart | Event::Nothing | Event::DocumentEnd | Event::StreamEnd => Ok(None),
            Event::DocumentStart => self.start_document(here).map(|()| None),
            Event::Alias(id) => self.alias(id, here).map(Some),
            Event::Scalar(text, style, anchor, tag) => {
                if let Some(Frame::Map { key: None, .. }) = self.stack.last() {
                    self.key(text, here).map(|()| None)
                } else {
                    Ok(Some(self.scalar(text, style, anchor, tag.as_ref(), here)))
                }
            }
            Event::SequenceStart(anchor, _) => {
                let frame = Frame::Seq {
                    items: Vec::new(),
                    loc: here,
                    anchor,
                };
                self.open(frame, here).map(|()| None)
            }
            Event::MappingStart(anchor, _) => {
                let frame = Frame::Map {
                    entries: Vec::new(),
                    lines: std::collections::HashMap::new(),
                    loc: here,
                    anchor,
                    key: None,
                };
                self.open(frame, here).map(|()| None)
            }
            Event::SequenceEnd | Event::MappingEnd => self.close(here).map(Some),
        }
    }

    /// Counts a document start, refusing a second document.
    fn start_document(&mut self, here: Location) -> Result<(), ConfigError> {
        self.documents += 1;
        if self.documents > 1 {
            return Err(self.err(
                here,
                "more than one YAML document in the file; keep one".into(),
            ));
        }
        Ok(())
    }

    /// The anchored node an alias repeats, with the nodes it adds to the budget.
    fn alias(&self, id: usize, here: Location) -> Result<Finished, ConfigError> {
        let Some((node, count)) = self.anchors.get(&id) else {
            return Err(self.err(here, "alias to an unknown anchor".into()));
        };
        Ok(Finished {
            node: node.clone(),
            anchor: 0,
            added: *count,
        })
    }

    /// Sets the key of the innermost mapping: kept as written, never resolved. A repeated one
    /// is refused here, while the open collections still spell out its path.
    fn key(&mut self, text: String, here: Location) -> Result<(), ConfigError> {
        if let Some(Frame::Map { lines, .. }) = self.stack.last() {
            if let Some(prev_line) = lines.get(&text) {
                return Err(ConfigError::new(
                    self.file.to_path_buf(),
                    (self.key_path)(&steps_to(&self.stack, &text)),
                    Some(here),
                    format!("duplicate key `{text}` (first defined at line {prev_line})"),
                ));
            }
        }
        if let Some(Frame::Map { key, .. }) = self.stack.last_mut() {
            *key = Some((text, here));
        }
        Ok(())
    }

    /// A scalar value, resolved by the core schema when plain and not tagged `!!str`.
    fn scalar(
        &self,
        text: String,
        style: TScalarStyle,
        anchor: usize,
        tag: Option<&Tag>,
        here: Location,
    ) -> Finished {
        let forced_str = tag.is_some_and(|t| t.suffix == "str");
        let value = if style == TScalarStyle::Plain && !forced_str {
            resolve_plain(&text)
        } else {
            Value::Str(text)
        };
        let node = Node {
            value,
            loc: here,
            file: self.file.clone(),
        };
        Finished {
            node,
            anchor,
            added: 1,
        }
    }

    /// Opens a sequence or a mapping, refusing one as a mapping key and nesting past the cap.
    fn open(&mut self, frame: Frame, here: Location) -> Result<(), ConfigError> {
        if let Some(Frame::Map { key: None, .. }) = self.stack.last() {
            return Err(self.err(
                here,
                "mapping keys must be plain strings, not lists or mappings".into(),
            ));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(self.err(here, format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        self.stack.push(frame);
        Ok(())
    }

    /// Closes the innermost collection into a node; its children were counted as they finished.
    fn close(&mut self, here: Location) -> Result<Finished, ConfigError> {
        let (value, loc, anchor) = match self.stack.pop() {
            Some(Frame::Seq { items, loc, anchor }) => (Value::Seq(items), loc, anchor),
            Some(Frame::Map {
                entries,
                loc,
                anchor,
                ..
            }) => (Value::Map(entries), loc, anchor),
            None => return Err(self.err(here, "unbalanced YAML structure".into())),
        };
        let node = Node {
            value,
            loc,
            file: self.file.clone(),
        };
        Ok(Finished {
            node,
            anchor,
            added: 1,
        })
    }

    /// Spends a finished node's share of the budget, records its anchor and places it.
    fn add(&mut self, finished: Finished, here: Location) -> Result<(), ConfigError> {
        let Finished {
            node,
            anchor,
            added,
        } = finished;
        self.total = self.total.saturating_add(added);
        if self.total > MAX_NODES {
            return Err(self.err(
                here,
                format!(
                    "the document expands to more than {MAX_NODES} values (an alias bomb?); refused"
                ),
            ));
        }
        if anchor != 0 {
            let size = count_nodes(&node);
            self.anchors.insert(anchor, (node.clone(), size));
        }
        self.place(node)
    }

    /// Places a finished node: as the root, the next item of a sequence, or the value of the
    /// innermost mapping's key.
    fn place(&mut self, node: Node) -> Result<(), ConfigError> {
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                entries,
                key,
                lines,
                ..
            }) => {
                let Some((k, key_loc)) = key.take() else {
                    return Err(self.err(node.loc, "mapping keys must be plain strings".into()));
                };
                let mut node = node;
                // A block collection or an empty value starts on a later line than its key;
                // errors about it read best at the key.
                if node.loc.line != key_loc.line
                    && matches!(node.value, Value::Map(_) | Value::Seq(_) | Value::Null)
                {
                    node.loc = key_loc;
                }
                lines.insert(k.clone(), key_loc.line);
                entries.push(Entry {
                    key: k,
                    key_loc,
                    file: self.file.clone(),
                    value: node,
                });
            }
        }
        Ok(())
    }

    /// The root, or `Null` at line 1 for an empty document.
    fn finish(self) -> Node {
        self.root.unwrap_or(Node {
            value: Value::Null,
            loc: Location { line: 1, column: 1 },
            file: self.file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Node, ConfigError> {
        parse(s, Path::new("t.yaml"), dotted)
    }

    #[test]
    fn resolves_core_schema_scalars() {
        let n = p("a: 1\nb: true\nc: ~\nd: '1'\ne: 1.5\nf: hello\ng: \"\"\n").unwrap();
        assert_eq!(n.get("a").unwrap().value, Value::Int(1));
        assert_eq!(n.get("b").unwrap().value, Value::Bool(true));
        assert_eq!(n.get("c").unwrap().value, Value::Null);
        assert_eq!(n.get("d").unwrap().value, Value::Str("1".into()));
        assert_eq!(n.get("e").unwrap().value, Value::Float(1.5));
        assert_eq!(n.get("f").unwrap().value, Value::Str("hello".into()));
        assert_eq!(n.get("g").unwrap().value, Value::Str(String::new()));
    }

    #[test]
    fn records_one_based_lines_and_columns() {
        let n = p("top:\n  inner: value\n").unwrap();
        let inner = n.get("top").unwrap().get("inner").unwrap();
        assert_eq!(
            inner.loc,
            Location {
                line: 2,
                column: 10
            }
        );
        let entry = &n.get("top").unwrap().as_map().unwrap()[0];
        assert_eq!(entry.key_loc, Location { line: 2, column: 3 });
    }

    #[test]
    fn refuses_duplicate_keys_with_the_line_of_the_second() {
        let e = p("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert!(e.message.contains("duplicate key `a`"), "{e}");
        assert_eq!(e.location.unwrap().line, 3);
    }

    #[test]
    fn names_the_key_path_of_a_duplicate_at_any_depth() {
        let e = p("a:\n  - x\n  - b: 1\n    c:\n      d: 1\n      d: 2\n").unwrap_err();
        assert_eq!(e.key_path, "a[1].c.d", "{e}");
        assert_eq!(e.location, Some(Location { line: 6, column: 7 }));
        assert!(e.message.contains("first defined at line 5"), "{e}");
        let e = p("- {k: 1, k: 2}\n").unwrap_err();
        assert_eq!(e.key_path, "[0].k", "{e}");
    }

    #[test]
    fn writes_quoted_keys_where_the_caller_says() {
        let steps = [
            Step::Key("t"),
            Step::Key("a.b"),
            Step::Index(2),
            Step::Key("c"),
        ];
        let quoted = |s: &[Step<'_>]| s == [Step::Key("t")];
        assert_eq!(write_path(&steps, quoted), "t.\"a.b\"[2].c");
        assert_eq!(dotted(&steps), "t.a.b[2].c");
    }

    #[test]
    fn expands_small_aliases() {
        let n = p("x: &a [1, 2]\ny: *a\n").unwrap();
        assert_eq!(n.get("x").unwrap().value, n.get("y").unwrap().value);
    }

    #[test]
    fn refuses_an_alias_bomb_at_the_line_that_exhausts_the_node_budget() {
        let mut s = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let prev = i - 1;
            s.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        // `a<i>` expands to 10^(i+1) values: the budget of 100 000 is spent on line 5 (`a4`),
        // so the refusal comes there and the 10^12 values of `a11` are never built.
        let e = p(&s).unwrap_err();
        assert!(
            e.message
                .contains(&format!("more than {MAX_NODES} values (an alias bomb?)")),
            "{e}"
        );
        assert_eq!(e.location.map(|l| l.line), Some(5), "{e}");
    }

    #[test]
    fn refuses_deep_nesting() {
        let s = "[".repeat(200) + &"]".repeat(200);
        let e = p(&s).unwrap_err();
        assert!(e.message.contains("nesting deeper"), "{e}");
    }

    #[test]
    fn refuses_two_documents() {
        let e = p("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(e.message.contains("more than one YAML document"), "{e}");
    }

    #[test]
    fn reports_syntax_errors_with_a_line() {
        let e = p("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.message.starts_with("invalid YAML"), "{e}");
        assert!(e.location.is_some());
    }

    #[test]
    fn empty_document_is_null() {
        assert_eq!(p("").unwrap().value, Value::Null);
        assert_eq!(p("# only a comment\n").unwrap().value, Value::Null);
    }
}

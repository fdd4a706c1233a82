//! The walker over the located YAML tree: it collects every error with its file, key path and
//! line instead of stopping at the first, and reads the plain values every block is made of
//! (mappings, strings, booleans, lists and maps of strings), each with the same messages.

use crate::config::error::ConfigError;
use crate::config::yaml::{Entry, Node, Value};

/// Collects errors while walking one tree.
pub(super) struct Walk<'a> {
    pub(super) errors: &'a mut Vec<ConfigError>,
}

impl Walk<'_> {
    /// An error about the value `node`, at its line.
    pub(super) fn err(&mut self, node: &Node, path: &str, msg: impl Into<String>) {
        self.errors.push(ConfigError::new(
            node.file.to_path_buf(),
            path,
            Some(node.loc),
            msg,
        ));
    }

    /// An error about the key of `entry`, at the key's line and in the key's file.
    pub(super) fn err_key(
        &mut self,
        _parent: &Node,
        entry: &Entry,
        path: &str,
        msg: impl Into<String>,
    ) {
        self.errors.push(ConfigError::new(
            entry.file.to_path_buf(),
            path,
            Some(entry.key_loc),
            msg,
        ));
    }

    /// The entries of a mapping; anything else is an error.
    pub(super) fn map<'n>(&mut self, node: &'n Node, path: &str) -> Option<&'n [Entry]> {
        match &node.value {
            Value::Map(entries) => Some(entries),
            _ => {
                self.err(
                    node,
                    path,
                    format!("expected a mapping, found {}", node.type_name()),
                );
                None
            }
        }
    }

    /// A non-empty string; anything else is an error.
    pub(super) fn string(&mut self, node: &Node, path: &str) -> Option<String> {
        match &node.value {
            Value::Str(s) if s.is_empty() => {
                self.err(node, path, "must not be empty");
                None
            }
            Value::Str(s) => Some(s.clone()),
            _ => {
                self.err(
                    node,
                    path,
                    format!("expected a string, found {}", node.type_name()),
                );
                None
            }
        }
    }

    /// `true` or `false`; anything else is an error.
    pub(super) fn boolean(&mut self, node: &Node, path: &str) -> Option<bool> {
        match node.value {
            Value::Bool(b) => Some(b),
            _ => {
                self.err(
                    node,
                    path,
                    format!("expected true or false, found {}", node.type_name()),
                );
                None
            }
        }
    }

    /// A list of non-empty strings, each with its node; one error per bad item.
    pub(super) fn string_list(&mut self, node: &Node, path: &str) -> Option<Vec<(String, Node)>> {
        let Value::Seq(items) = &node.value else {
            self.err(
                node,
                path,
                format!("expected a list of strings, found {}", node.type_name()),
            );
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match self.string(item, &format!("{path}[{i}]")) {
                Some(s) => out.push((s, item.clone())),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// A mapping of strings (bare numbers and booleans read as their text), as
    /// `(key, value, value node)`; one error per bad value.
    pub(super) fn string_map(
        &mut self,
        node: &Node,
        path: &str,
    ) -> Option<Vec<(String, String, Node)>> {
        let entries = self.map(node, path)?;
        let mut out = Vec::with_capacity(entries.len());
        let mut ok = true;
        for e in entries {
            let p = format!("{path}.{}", e.key);
            // Numbers and booleans written bare are accepted as their text: `PORT: 8080`.
            let v = match &e.value.value {
                Value::Str(s) => Some(s.clone()),
                Value::Int(i) => Some(i.to_string()),
                Value::Bool(b) => Some(b.to_string()),
                Value::Float(f) => Some(f.to_string()),
                _ => {
                    self.err(
                        &e.value,
                        &p,
                        format!("expected a string, found {}", e.value.type_name()),
                    );
                    None
                }
            };
            match v {
                Some(v) => out.push((e.key.clone(), v, e.value.clone())),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }
}

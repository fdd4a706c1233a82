//! The `project.local.yaml` overlay: deep-merged over `project.yaml` before validation.
//!
//! Maps merge key by key; `null` removes a key (`mcp: {github: null}` removes that server);
//! lists and scalars replace. Every merged node keeps the file it came from, so an error in a
//! value set by the overlay names `project.local.yaml` and its line.

use super::yaml::{Entry, Node, Value};

/// Merges `overlay` over `base`.
pub(crate) fn merge(base: Node, overlay: Node) -> Node {
    match (base.value, overlay.value) {
        // Only the root can get here as null (nested nulls remove keys below): an empty
        // overlay file changes nothing.
        (base_value, Value::Null) => Node {
            value: base_value,
            ..base
        },
        (Value::Map(mut entries), Value::Map(over)) => {
            for Entry {
                key,
                key_loc,
                file,
                value,
            } in over
            {
                let pos = entries.iter().position(|e| e.key == key);
                match (pos, &value.value) {
                    (Some(i), Value::Null) => {
                        entries.remove(i);
                    }
                    (None, Value::Null) => {}
                    (Some(i), _) => {
                        let old = entries.remove(i);
                        entries.insert(
                            i,
                            Entry {
                                key,
                                key_loc: old.key_loc,
                                file: old.file,
                                value: merge(old.value, value),
                            },
                        );
                    }
                    (None, _) => entries.push(Entry {
                        key,
                        key_loc,
                        file,
                        value,
                    }),
                }
            }
            Node {
                value: Value::Map(entries),
                ..base
            }
        }
        (_, value) => Node { value, ..overlay },
    }
}

#[cfg(test)]
mod tests {
    use super::super::yaml::{dotted, parse};
    use super::*;
    use std::path::Path;

    fn m(base: &str, over: &str) -> Node {
        merge(
            parse(base, Path::new("project.yaml"), dotted).unwrap(),
            parse(over, Path::new("project.local.yaml"), dotted).unwrap(),
        )
    }

    #[test]
    fn null_removes_a_key() {
        let n = m("mcp:\n  a: {x: 1}\n  b: {x: 2}\n", "mcp:\n  a: null\n");
        let mcp = n.get("mcp").unwrap();
        assert!(mcp.get("a").is_none());
        assert!(mcp.get("b").is_some());
    }

    #[test]
    fn maps_merge_and_lists_replace() {
        let n = m(
            "mcp:\n  a:\n    command: [x, y]\n    env: {A: '1'}\n",
            "mcp:\n  a:\n    command: [z]\n    env: {B: '2'}\n",
        );
        let a = n.get("mcp").unwrap().get("a").unwrap();
        let Value::Seq(cmd) = &a.get("command").unwrap().value else {
            panic!("command is not a list")
        };
        assert_eq!(cmd.len(), 1);
        let env = a.get("env").unwrap();
        assert!(env.get("A").is_some() && env.get("B").is_some());
    }

    #[test]
    fn overlay_values_keep_their_file_and_line() {
        let n = m(
            "mcp:\n  a:\n    transport: stdio\n",
            "\nmcp:\n  a:\n    transport: sse\n",
        );
        let t = n
            .get("mcp")
            .unwrap()
            .get("a")
            .unwrap()
            .get("transport")
            .unwrap();
        assert_eq!(&*t.file, Path::new("project.local.yaml"));
        assert_eq!(t.loc.line, 4);
    }

    #[test]
    fn empty_overlay_changes_nothing() {
        let n = m("mcp:\n  a: {x: 1}\n", "");
        assert!(n.get("mcp").unwrap().get("a").is_some());
    }

    #[test]
    fn scalar_replaces_a_map() {
        let n = m("a: {x: 1}\n", "a: 3\n");
        assert_eq!(n.get("a").unwrap().value, Value::Int(3));
    }
}

//! A server's `tools:` filter: `enabled`, and the `allow` and `deny` globs over the names the
//! server gives its tools, compiled once here into [`ToolFilter`].

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::config::yaml::Node;

use super::walk::Walk;
use super::ToolFilter;

/// A list of globs, as written and compiled into one set; one error per bad glob.
/// The keys of a server's `tools:` block.
pub const KEYS: &[&str] = &["enabled", "allow", "deny"];

fn globs(w: &mut Walk<'_>, node: &Node, path: &str) -> Option<(Vec<String>, GlobSet)> {
    let list = w.string_list(node, path)?;
    let mut b = GlobSetBuilder::new();
    let mut ok = true;
    let mut pats = Vec::new();
    for (i, (pat, item)) in list.into_iter().enumerate() {
        match Glob::new(&pat) {
            Ok(g) => {
                b.add(g);
                pats.push(pat);
            }
            Err(e) => {
                w.err(
                    &item,
                    &format!("{path}[{i}]"),
                    format!("`{pat}` is not a valid glob: {}", e.kind()),
                );
                ok = false;
            }
        }
    }
    if !ok {
        return None;
    }
    match b.build() {
        Ok(set) => Some((pats, set)),
        Err(e) => {
            w.err(node, path, format!("the globs do not compile: {e}"));
            None
        }
    }
}

/// Reads `tools:` of a server.
pub(super) fn tool_filter(w: &mut Walk<'_>, node: &Node, path: &str) -> Option<ToolFilter> {
    let entries = w.map(node, path)?;
    let mut f = ToolFilter::default();
    let mut ok = true;
    for e in entries {
        let p = format!("{path}.{}", e.key);
        match e.key.as_str() {
            "enabled" => match w.boolean(&e.value, &p) {
                Some(b) => f.enabled = b,
                None => ok = false,
            },
            "allow" => match globs(w, &e.value, &p) {
                Some((pats, set)) => {
                    f.allow = pats;
                    f.allow_set = set;
                }
                None => ok = false,
            },
            "deny" => match globs(w, &e.value, &p) {
                Some((pats, set)) => {
                    f.deny = pats;
                    f.deny_set = set;
                }
                None => ok = false,
            },
            k => {
                w.err_key(
                    node,
                    e,
                    &p,
                    format!("unknown key `{k}`; tools has {}", KEYS.join(", ")),
                );
                ok = false;
            }
        }
    }
    ok.then_some(f)
}

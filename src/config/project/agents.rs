//! The agents' `tools:` grants (ADR-0043 §2): `primary.tools` and
//! `primary.subagents.<name>.tools`, each key a tool name, dotted prefix or glob; and their
//! `skills:` grants, the same keys over `mcp.<server>.<skill>`. The rest of `primary` belongs
//! to the rest of kaged and is left alone.

use globset::Glob;

use crate::config::yaml::{Node, Step, Value};

use super::walk::Walk;
use super::{AgentGrants, GrantPattern, ToolGrant, ToolGrants};

/// The characters that make a grant key a glob rather than a name or dotted prefix.
/// The keys of an agent's tool grant (`{ enabled: bool }`).
pub const GRANT_KEYS: &[&str] = &["enabled"];

const GLOB_CHARS: &[char] = &['*', '?', '[', ']', '{', '}'];

/// Whether `steps` lead to an agent's `tools:` block: `primary.tools` or
/// `primary.subagents.<name>.tools`.
pub(super) fn is_tools_block(steps: &[Step<'_>]) -> bool {
    matches!(
        steps,
        [Step::Key("primary"), Step::Key("tools" | "skills")]
            | [
                Step::Key("primary"),
                Step::Key("subagents"),
                Step::Key(_),
                Step::Key("tools" | "skills")
            ]
    )
}

/// Reads the `tools:` blocks of `primary` and its subagents.
pub(super) fn agents(w: &mut Walk<'_>, primary: &Node) -> AgentGrants {
    let mut out = AgentGrants::default();
    if !matches!(primary.value, Value::Map(_)) {
        // `primary` belongs to the rest of kaged; only its tools blocks are ours.
        return out;
    }
    if let Some(t) = primary.get("tools") {
        out.primary = grants(w, t, "primary.tools");
    }
    if let Some(t) = primary.get("skills") {
        out.primary_skills = grants(w, t, "primary.skills");
    }
    if let Some(subs) = primary.get("subagents") {
        if let Value::Map(entries) = &subs.value {
            for e in entries {
                if let Some(t) = e.value.get("tools") {
                    let p = format!("primary.subagents.{}.tools", e.key);
                    if let Some(g) = grants(w, t, &p) {
                        out.subagents.insert(e.key.clone(), g);
                    }
                }
                if let Some(t) = e.value.get("skills") {
                    let p = format!("primary.subagents.{}.skills", e.key);
                    if let Some(g) = grants(w, t, &p) {
                        out.subagent_skills.insert(e.key.clone(), g);
                    }
                }
            }
        }
    }
    out
}

fn grants(w: &mut Walk<'_>, node: &Node, path: &str) -> Option<ToolGrants> {
    if matches!(node.value, Value::Null) {
        return Some(ToolGrants::default());
    }
    let entries = w.map(node, path)?;
    let mut out = ToolGrants::default();
    let mut ok = true;
    for e in entries {
        let p = format!("{path}.\"{}\"", e.key);
        let pattern = e.key.trim();
        if pattern.is_empty() {
            w.err_key(node, e, &p, "a tool pattern must not be empty");
            ok = false;
            continue;
        }
        if let Some(c) = pattern.chars().find(|c| {
            !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') || GLOB_CHARS.contains(c))
        }) {
            w.err_key(
                node,
                e,
                &p,
                format!("`{pattern}`: {c:?} cannot appear in a tool name or pattern"),
            );
            ok = false;
            continue;
        }
        if pattern.starts_with('.') || pattern.ends_with('.') || pattern.contains("..") {
            w.err_key(node, e, &p, format!("`{pattern}`: empty name segment"));
            ok = false;
            continue;
        }
        let kind = if pattern.contains(GLOB_CHARS) {
            match Glob::new(pattern) {
                Ok(g) => GrantPattern::Glob(g.compile_matcher()),
                Err(err) => {
                    w.err_key(
                        node,
                        e,
                        &p,
                        format!("`{pattern}` is not a valid glob: {}", err.kind()),
                    );
                    ok = false;
                    continue;
                }
            }
        } else {
            GrantPattern::Name
        };
        let enabled = match &e.value.value {
            Value::Map(fields) => {
                let mut enabled = Some(true);
                for f in fields {
                    if GRANT_KEYS.contains(&f.key.as_str()) {
                        enabled = w.boolean(&f.value, &format!("{p}.enabled"));
                    } else {
                        w.err_key(
                            &e.value,
                            f,
                            &format!("{p}.{}", f.key),
                            format!(
                                "unknown key `{}`; a tool grant has `{}`",
                                f.key,
                                GRANT_KEYS.join("`, `")
                            ),
                        );
                        enabled = None;
                    }
                }
                enabled
            }
            _ => {
                w.err(
                    &e.value,
                    &p,
                    format!(
                        "expected {{ enabled: true|false }}, found {}",
                        e.value.type_name()
                    ),
                );
                None
            }
        };
        match enabled {
            Some(enabled) => out.grants.push(ToolGrant {
                pattern: pattern.to_owned(),
                kind,
                enabled,
            }),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

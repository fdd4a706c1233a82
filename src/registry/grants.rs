//! Per-agent enablement (ADR-0043 §2): which registered tools an agent's `tools:` map grants.
//!
//! A key matches a tool name when it is the exact name, a prefix of it at a dot boundary
//! (`mcp.database` covers `mcp.database.query`), or a glob matching the whole name
//! (`mcp.github.issue.*`). Of the keys that match, the most specific decides: an exact name
//! beats everything, then the key with more literal characters (a prefix counts its whole
//! length, a glob the characters outside `*`, `?`, `[…]`, `{…}`); on a tie, disabled wins. A
//! tool no key matches is not granted.

use crate::config::{GrantPattern, ToolGrant, ToolGrants};

/// How specific a matching grant is; greater wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Specificity {
    Pattern(usize),
    Exact,
}

fn literal_len(glob: &str) -> usize {
    let mut n = 0;
    let mut depth = 0usize;
    for c in glob.chars() {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => depth = depth.saturating_sub(1),
            '*' | '?' => {}
            _ if depth == 0 => n += 1,
            _ => {}
        }
    }
    n
}

fn matches(grant: &ToolGrant, tool: &str) -> Option<Specificity> {
    match &grant.kind {
        GrantPattern::Name => {
            let p = grant.pattern.as_str();
            if tool == p {
                Some(Specificity::Exact)
            } else if tool.len() > p.len()
                && tool.starts_with(p)
                && tool.as_bytes()[p.len()] == b'.'
            {
                Some(Specificity::Pattern(p.len()))
            } else {
                None
            }
        }
        GrantPattern::Glob(m) => m
            .is_match(tool)
            .then(|| Specificity::Pattern(literal_len(&grant.pattern))),
    }
}

/// Whether `grants` enable `tool`, and which key decided.
pub fn resolve<'g>(grants: &'g ToolGrants, tool: &str) -> Option<&'g ToolGrant> {
    let mut best: Option<(Specificity, &ToolGrant)> = None;
    for g in &grants.grants {
        let Some(s) = matches(g, tool) else { continue };
        best = match best {
            None => Some((s, g)),
            Some((bs, _)) if s > bs => Some((s, g)),
            // On a tie, disabled wins.
            Some((bs, bg)) if s == bs && bg.enabled && !g.enabled => Some((s, g)),
            keep => keep,
        };
    }
    best.map(|(_, g)| g)
}

/// Whether `grants` enable `tool`.
pub fn is_granted(grants: &ToolGrants, tool: &str) -> bool {
    resolve(grants, tool).is_some_and(|g| g.enabled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Sources;

    fn grants(yaml_tools: &str) -> ToolGrants {
        let c = Sources::new(format!("primary:\n  tools:\n{yaml_tools}"))
            .load()
            .unwrap();
        c.project.agents.primary.unwrap()
    }

    #[test]
    fn exact_prefix_and_glob_keys_match() {
        let g = grants(
            "    mcp.db: { enabled: true }\n    'mcp.gh.issue.*': { enabled: true }\n    mcp.fs.read: { enabled: true }\n",
        );
        assert!(is_granted(&g, "mcp.db.query"));
        assert!(is_granted(&g, "mcp.db.a.b"));
        assert!(
            !is_granted(&g, "mcp.dbx.query"),
            "prefix only at a dot boundary"
        );
        assert!(is_granted(&g, "mcp.gh.issue.create"));
        assert!(!is_granted(&g, "mcp.gh.repo.delete"));
        assert!(is_granted(&g, "mcp.fs.read"));
        assert!(!is_granted(&g, "mcp.fs.write"));
    }

    #[test]
    fn the_most_specific_key_wins() {
        let g = grants(
            "    mcp.gh: { enabled: true }\n    'mcp.gh.repo.*': { enabled: false }\n    mcp.gh.repo.list: { enabled: true }\n",
        );
        assert!(is_granted(&g, "mcp.gh.issue.create"), "prefix grants");
        assert!(!is_granted(&g, "mcp.gh.repo.delete"), "longer glob denies");
        assert!(is_granted(&g, "mcp.gh.repo.list"), "exact name beats all");
    }

    #[test]
    fn on_a_tie_disabled_wins() {
        let g = grants("    'mcp.gh.*': { enabled: true }\n    'mcp.gh.?*': { enabled: false }\n");
        assert_eq!(literal_len("mcp.gh.*"), literal_len("mcp.gh.?*"));
        assert!(!is_granted(&g, "mcp.gh.x"));
        let g = grants("    'mcp.gh.?*': { enabled: false }\n    'mcp.gh.*': { enabled: true }\n");
        assert!(!is_granted(&g, "mcp.gh.x"), "order does not matter");
    }

    #[test]
    fn nothing_matching_means_not_granted() {
        let g = grants("    mcp.db: { enabled: true }\n");
        assert!(!is_granted(&g, "mcp.other.tool"));
        assert!(!is_granted(&ToolGrants::default(), "mcp.db.query"));
    }
}

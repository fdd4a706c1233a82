//! Why a tool name is unknown: the hint [`Error::UnknownTool`](crate::Error::UnknownTool)
//! carries when the session can tell (a `tools` filter removed it, its server is not declared,
//! the name lacks `mcp.<server>.`, or it is a near miss of a registered name).

/// What the session knows when a name is not in the registry.
pub(crate) struct Known<'a> {
    /// The declared server keys, in declaration order.
    pub(crate) servers: &'a [&'a str],
    /// Every registered tool's full name.
    pub(crate) names: &'a [String],
    /// For a declared server and a tool name as that server gives it: the `tools:` rule of
    /// the project that removed the tool, if one did.
    pub(crate) filtered: &'a dyn Fn(&str, &str) -> Option<&'static str>,
    /// For a declared server and a tool name as that server gives it: why the session did not
    /// register it, if it skipped it (a name MCP does not allow, a tool that runs only as a
    /// task where tasks are off or not offered).
    pub(crate) skipped: &'a dyn Fn(&str, &str) -> Option<String>,
}

/// The hint for an unknown `tool`, or `None` when there is nothing more to say than
/// "unknown tool".
pub(crate) fn unknown_tool_hint(tool: &str, known: &Known<'_>) -> Option<String> {
    let Some(rest) = tool.strip_prefix("mcp.") else {
        // A bare tool name, or one without the namespace: suggest the MCP tools ending in it.
        let bare = tool.rsplit('.').next().unwrap_or(tool);
        let ending = format!(".{bare}");
        let matches: Vec<&String> = known
            .names
            .iter()
            .filter(|n| n.starts_with("mcp.") && n.ends_with(&ending))
            .take(3)
            .collect();
        return match matches.as_slice() {
            [] if known.servers.is_empty() => None,
            [] => Some(format!(
                "MCP tools are named `mcp.<server>.<tool>` (declared servers: {})",
                known.servers.join(", ")
            )),
            found => Some(format!(
                "MCP tools are named `mcp.<server>.<tool>`: did you mean {}?",
                quoted(found)
            )),
        };
    };
    let (server, name) = rest.split_once('.').unwrap_or((rest, ""));
    if !known.servers.contains(&server) {
        let mut hint = if known.servers.is_empty() {
            format!("no MCP server `{server}` is declared in project.yaml (none is)")
        } else {
            format!(
                "no MCP server `{server}` is declared in project.yaml (declared: {})",
                known.servers.join(", ")
            )
        };
        if let Some(near) = nearest(server, known.servers.iter().copied()) {
            hint.push_str(&format!("; did you mean `mcp.{near}.{name}`?"));
        }
        return Some(hint);
    }
    if name.is_empty() {
        return Some(format!(
            "name a tool of server `{server}`: `mcp.{server}.<tool>`"
        ));
    }
    if let Some(rule) = (known.filtered)(server, name) {
        return Some(format!(
            "server `{server}` offers `{name}`, but the project's `{rule}` (mcp.{server}.{rule} in \
             project.yaml) keeps it out of the catalog"
        ));
    }
    if let Some(why) = (known.skipped)(server, name) {
        return Some(format!(
            "server `{server}` offers `{name}`, but it is not registered: {why}"
        ));
    }
    let prefix = format!("mcp.{server}.");
    let own = known.names.iter().filter_map(|n| n.strip_prefix(&prefix));
    match nearest(name, own) {
        Some(near) => Some(format!("did you mean `mcp.{server}.{near}`?")),
        None => Some(format!(
            "server `{server}` offers no tool `{name}` (`kaged-mcp tools` lists the catalog)"
        )),
    }
}

fn quoted(names: &[&String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// The candidate closest to `word` by edit distance, when it is close: at most a third of
/// the word's length (and at least one) edits away, or `word` differs only in case.
fn nearest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let len = word.chars().count();
    let limit = (len / 3).max(1);
    let word = word.to_lowercase();
    candidates
        // Names are at most 64 characters: a longer word, or one whose length differs by
        // more than the limit, cannot be a near miss (and costs nothing to skip).
        .filter(|c| len <= 128 && c.chars().count().abs_diff(len) <= limit)
        .map(|c| (distance(&word, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over chars (names are short: a row of at most a few dozen).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hint(tool: &str) -> Option<String> {
        let names = vec![
            "mcp.fm.weather".to_owned(),
            "mcp.fm.echo".to_owned(),
            "mcp.demo.echo".to_owned(),
        ];
        let filtered =
            |server: &str, tool: &str| (server == "fm" && tool == "delete").then_some("tools.deny");
        let skipped = |server: &str, tool: &str| {
            (server == "fm" && tool == "research")
                .then(|| "it runs only as a task and tasks = \"off\"".to_owned())
        };
        unknown_tool_hint(
            tool,
            &Known {
                servers: &["fm", "demo"],
                names: &names,
                filtered: &filtered,
                skipped: &skipped,
            },
        )
    }

    #[test]
    fn each_kind_of_unknown_name_gets_its_own_hint() {
        assert_eq!(
            hint("mcp.fm.research").unwrap(),
            "server `fm` offers `research`, but it is not registered: it runs only as a task and tasks = \"off\""
        );
        assert_eq!(
            hint("mcp.fm.wether").unwrap(),
            "did you mean `mcp.fm.weather`?"
        );
        assert_eq!(
            hint("mcp.fm.delete").unwrap(),
            "server `fm` offers `delete`, but the project's `tools.deny` (mcp.fm.tools.deny in \
             project.yaml) keeps it out of the catalog"
        );
        assert_eq!(
            hint("mcp.gh.issues").unwrap(),
            "no MCP server `gh` is declared in project.yaml (declared: fm, demo)"
        );
        assert_eq!(
            hint("mcp.fn.weather").unwrap(),
            "no MCP server `fn` is declared in project.yaml (declared: fm, demo); did you mean \
             `mcp.fm.weather`?"
        );
        assert_eq!(
            hint("weather").unwrap(),
            "MCP tools are named `mcp.<server>.<tool>`: did you mean `mcp.fm.weather`?"
        );
        assert_eq!(
            hint("echo").unwrap(),
            "MCP tools are named `mcp.<server>.<tool>`: did you mean `mcp.fm.echo` or \
             `mcp.demo.echo`?"
        );
        assert_eq!(
            hint("mcp.fm.zzz").unwrap(),
            "server `fm` offers no tool `zzz` (`kaged-mcp tools` lists the catalog)"
        );
        assert_eq!(
            hint("nothing_like_it").unwrap(),
            "MCP tools are named `mcp.<server>.<tool>` (declared servers: fm, demo)"
        );
    }

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("weather", "wether"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(nearest("ECHO", ["echo", "add"].into_iter()), Some("echo"));
        assert_eq!(nearest("xyz", ["echo", "add"].into_iter()), None);
    }
}

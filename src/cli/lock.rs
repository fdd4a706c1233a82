//! `kaged-mcp lock`: write `mcp.lock` from what the servers list now, or (`--check`) compare
//! them with it and show each difference ([`crate::pin`]).
//!
//! What is written is what was reviewed: `--check` names each server's catalog by its digest
//! and prints `kaged-mcp lock KEY --expect DIGEST`; `lock` with `--expect` refuses a server
//! that lists anything else by then (a server can answer the review with one catalog and the
//! approval with another). An entry that exists is updated without a digest only after the
//! operator says yes to the review shown on a terminal, or with `--yes`; never silently.

use std::collections::BTreeMap;
use std::io::{BufRead as _, IsTerminal as _, Write as _};

use serde_json::json;

use crate::config::Config;
use crate::escape::visible;
use crate::pin::{Lock, LockReport, LockedServer, PinPolicy, ServerState, LOCK_FILE};
use crate::session::{Session, SessionOptions};

use super::hints::fix;
use super::{ServerArgs, EXIT_FAILED, EXIT_OK};

/// What `kaged-mcp lock` was asked.
#[derive(Debug)]
pub(super) struct LockArgs {
    /// The servers named (all declared ones when empty).
    pub(super) servers: Vec<String>,
    /// Compare instead of writing.
    pub(super) check: bool,
    /// `sha256:…` or `KEY=sha256:…`, as given.
    pub(super) expect: Vec<String>,
    /// Update without a digest and without asking.
    pub(super) yes: bool,
    /// One JSON object on stdout.
    pub(super) json: bool,
}

/// The configuration to observe servers with: nothing pinned, so every tool is listed and
/// nothing is held or warned about while the lock is being written or checked.
fn unpinned(mut config: Config) -> Config {
    config.daemon.pins = Some(PinPolicy::Off);
    for o in config.local.servers.values_mut() {
        o.pins = None;
    }
    config
}

/// One `error:` line on stderr, escaped, with pasteable hints.
fn error(message: &str) {
    eprintln!("error: {}", visible(&fix(message)));
}

/// `--expect` as server key → digest: a bare digest needs exactly one server named.
fn expectations(a: &LockArgs, declared: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for e in &a.expect {
        let (key, digest) = match e.split_once('=') {
            Some((k, d)) => (k.to_owned(), d),
            None => match a.servers.as_slice() {
                [one] => (one.clone(), e.as_str()),
                _ => {
                    return Err(format!(
                        "--expect {e}: name the server (`--expect SERVER=sha256:…`), or name exactly one server"
                    ))
                }
            },
        };
        let well_formed = digest.strip_prefix("sha256:").is_some_and(|h| {
            h.len() == 64
                && h.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if !well_formed {
            return Err(format!(
                "--expect {}: a digest is `sha256:` and 64 lowercase hex digits, as `kaged-mcp lock --check` prints it",
                visible(e)
            ));
        }
        if !declared.contains(&key) {
            return Err(format!(
                "--expect {}: no MCP server `{}` is declared in project.yaml",
                visible(e),
                visible(&key)
            ));
        }
        if !a.servers.is_empty() && !a.servers.contains(&key) {
            return Err(format!(
                "--expect {}: server `{key}` is not among those named",
                visible(e)
            ));
        }
        if out.insert(key.clone(), digest.to_owned()).is_some() {
            return Err(format!("--expect: server `{key}` is given twice"));
        }
    }
    Ok(out)
}

/// `kaged-mcp lock [SERVER…] [--check] [--expect DIGEST…] [--yes] [--json]`.
pub(super) fn run(args: &ServerArgs, a: &LockArgs, verbose: bool) -> u8 {
    let config = match args.refuse_adhoc("lock").and_then(|()| args.load()) {
        Ok(c) => c,
        Err(f) => return f.exit(a.json, verbose),
    };
    let declared: Vec<String> = config
        .project
        .servers
        .iter()
        .map(|s| s.key.clone())
        .collect();
    let usage = |message: String| super::output::Failure::usage(message).exit(a.json, verbose);
    if let Some(unknown) = a.servers.iter().find(|s| !declared.contains(s)) {
        return usage(format!(
            "no MCP server `{}` is declared in project.yaml (declared: {})",
            visible(unknown),
            declared.join(", ")
        ));
    }
    let expected = match expectations(a, &declared) {
        Ok(e) => e,
        Err(message) => return usage(message),
    };
    let path = config.project_root.join(LOCK_FILE);
    let old = config.lock.as_deref().cloned();
    if a.check && old.is_none() {
        return super::output::Failure::new(
            EXIT_FAILED,
            "no_lock",
            format!(
                "{} does not exist: nothing is pinned; `kaged-mcp lock` writes it",
                path.display()
            ),
        )
        .exit(a.json, verbose);
    }
    let only = (!a.servers.is_empty()).then_some(a.servers.as_slice());
    let mut options = super::start::remember_eras(SessionOptions::new());
    if let Some(only) = only {
        options = options.only_servers(only.iter().cloned());
    }
    let config = unpinned(config);
    // Interrupts as every command: what is in flight is cancelled, the servers shut down.
    super::interrupt::block_on(async {
        let session = match Session::start_with(config, options).await {
            Ok(session) => session,
            Err(e) => {
                super::start::report(&e, verbose);
                return EXIT_FAILED;
            }
        };
        super::interrupt::remember(&session);
        let observed = session.observe_pins(only).await;
        super::interrupt::end(session).await;
        let report = LockReport::compare(
            old.as_ref().unwrap_or(&Lock::new()),
            &observed,
            &declared,
            only.is_none(),
        );
        if a.check {
            if a.json {
                println!("{}", crate::escape::json(&report.to_json().to_string()));
            } else {
                print!("{}", fix(&report.to_string()));
            }
            return if report.differs() {
                EXIT_FAILED
            } else {
                EXIT_OK
            };
        }
        let write = Write {
            path: &path,
            declared: &declared,
            whole: only.is_none(),
            expected: &expected,
            args: a,
        };
        write.run(old, observed, &report)
    })
}

/// One `kaged-mcp lock` that writes.
struct Write<'a> {
    path: &'a std::path::Path,
    declared: &'a [String],
    /// No server named: the undeclared entries are dropped.
    whole: bool,
    expected: &'a BTreeMap<String, String>,
    args: &'a LockArgs,
}

impl Write<'_> {
    /// Writes the lock: the observed servers replaced, with `whole` the undeclared ones
    /// dropped. Nothing is written when a server could not be listed, lists something other
    /// than its expected digest, or would be updated without approval.
    fn run(
        &self,
        old: Option<Lock>,
        observed: BTreeMap<String, Result<LockedServer, String>>,
        report: &LockReport,
    ) -> u8 {
        let mut failed = false;
        for (key, entry) in &observed {
            if let Err(why) = entry {
                error(&format!("server `{key}`: {why}"));
                failed = true;
            }
        }
        if failed {
            error(&format!("{} not written: every server must answer to be locked (name the others: `kaged-mcp lock SERVER…`)", self.path.display()));
            return EXIT_FAILED;
        }
        for server in &report.servers {
            if !self.approved(server) {
                failed = true;
            }
        }
        if failed {
            error(&format!("{} not written", self.path.display()));
            return EXIT_FAILED;
        }
        let mut lock = old.unwrap_or_default();
        lock.version = crate::pin::LOCK_VERSION;
        for (key, entry) in observed {
            if let Ok(entry) = entry {
                lock.servers.insert(key, entry);
            }
        }
        if self.whole {
            lock.servers.retain(|k, _| self.declared.contains(k));
        }
        if let Err(e) = lock.write(self.path) {
            error(&format!("cannot write {}: {e}", self.path.display()));
            return EXIT_FAILED;
        }
        let mut written = Vec::new();
        for server in &report.servers {
            let what = match &server.state {
                ServerState::Matches { .. } => "unchanged",
                ServerState::NotInLock => "added",
                ServerState::NotInProject => "dropped (not declared)",
                ServerState::Differs { .. } => "updated",
                ServerState::Unreachable(_) => continue,
            };
            let tools = lock.servers.get(&server.key).map_or(0, |s| s.tools.len());
            let digest = server.digest.as_deref().unwrap_or("");
            if !self.args.json {
                let sep = if digest.is_empty() { "" } else { ", " };
                println!("{}: {what} ({tools} tools{sep}{digest})", server.key);
            }
            written.push(json!({"server": server.key, "action": what, "tools": tools, "digest": server.digest}));
        }
        if self.args.json {
            println!(
                "{}",
                json!({"written": self.path.display().to_string(), "servers": written})
            );
        } else {
            println!("wrote {}", self.path.display());
        }
        EXIT_OK
    }

    /// Whether `server`'s entry may be written: it lists what was expected; or, without a
    /// digest, it is new, unchanged, or its update is approved (`--yes`, or yes at the
    /// terminal after the review is shown).
    fn approved(&self, server: &crate::pin::ServerReport) -> bool {
        let key = &server.key;
        let now = server.digest.as_deref().unwrap_or("");
        if let Some(expected) = self.expected.get(key) {
            if expected == now {
                return true;
            }
            error(&format!(
                "server `{key}` lists something other than what was reviewed: --expect {expected}, \
                 but it lists {now} now; review it again with `kaged-mcp lock --check {key}`"
            ));
            return false;
        }
        if !matches!(server.state, ServerState::Differs { .. }) || self.args.yes {
            return true;
        }
        let hint = format!("kaged-mcp lock {key} --expect {now}");
        let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        if !terminal || self.args.json {
            error(&format!(
                "server `{key}` differs from its entry in mcp.lock and no digest was given: \
                 review it with `kaged-mcp lock --check {key}` and approve what it shows with \
                 `{hint}` (or --yes to pin whatever it lists at this moment)"
            ));
            return false;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "{}Pin what is shown above for `{key}` ({now})? [y/N] ",
            fix(&server.to_string())
        );
        let _ = err.flush();
        drop(err);
        let mut answer = String::new();
        let yes = std::io::stdin().lock().read_line(&mut answer).is_ok()
            && matches!(answer.trim(), "y" | "Y" | "yes");
        if !yes {
            error(&format!("server `{key}`: not approved"));
        }
        yes
    }
}

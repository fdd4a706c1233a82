//! `kaged-mcp lock`: write `mcp.lock` from what the servers list now, or (`--check`) compare
//! them with it and show each difference ([`crate::pin`]).

use std::collections::BTreeMap;

use crate::config::Config;
use crate::pin::{Lock, LockReport, PinPolicy, LOCK_FILE};
use crate::session::{Session, SessionOptions};

use super::hints::fix;
use super::{ServerArgs, EXIT_CONFIG, EXIT_FAILED, EXIT_OK};

/// The configuration to observe servers with: nothing pinned, so every tool is listed and
/// nothing is held or warned about while the lock is being written or checked.
fn unpinned(mut config: Config) -> Config {
    config.daemon.pins = Some(PinPolicy::Off);
    for o in config.local.servers.values_mut() {
        o.pins = None;
    }
    config
}

/// `kaged-mcp lock [SERVER…] [--check]`.
pub(super) fn run(args: &ServerArgs, servers: &[String], check: bool, verbose: bool) -> u8 {
    let config = match args.refuse_adhoc("lock").and_then(|()| args.load()) {
        Ok(c) => c,
        Err(f) => return f.exit(false, verbose),
    };
    let declared: Vec<String> = config
        .project
        .servers
        .iter()
        .map(|s| s.key.clone())
        .collect();
    if let Some(unknown) = servers.iter().find(|s| !declared.contains(s)) {
        eprintln!(
            "error: no MCP server `{unknown}` is declared in project.yaml (declared: {})",
            declared.join(", ")
        );
        return EXIT_CONFIG;
    }
    let path = config.project_root.join(LOCK_FILE);
    let old = config.lock.as_deref().cloned();
    if check && old.is_none() {
        eprintln!(
            "error: {}",
            fix(&format!(
                "{} does not exist: nothing is pinned; `kaged-mcp lock` writes it",
                path.display()
            ))
        );
        return EXIT_FAILED;
    }
    let only = (!servers.is_empty()).then_some(servers);
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
        if check {
            print!("{}", fix(&report.to_string()));
            return if report.differs() {
                EXIT_FAILED
            } else {
                EXIT_OK
            };
        }
        write(&path, old, observed, &declared, only.is_none(), &report)
    })
}

/// Writes the lock: the observed servers replaced, with `whole` the undeclared ones dropped.
/// Nothing is written when a server could not be listed.
fn write(
    path: &std::path::Path,
    old: Option<Lock>,
    observed: BTreeMap<String, Result<crate::pin::LockedServer, String>>,
    declared: &[String],
    whole: bool,
    report: &LockReport,
) -> u8 {
    let mut failed = false;
    let mut lock = old.unwrap_or_default();
    lock.version = crate::pin::LOCK_VERSION;
    for (key, entry) in observed {
        match entry {
            Ok(entry) => {
                lock.servers.insert(key, entry);
            }
            Err(why) => {
                eprintln!("error: server `{key}`: {}", fix(&why));
                failed = true;
            }
        }
    }
    if failed {
        eprintln!("error: {}", fix(&format!("{} not written: every server must answer to be locked (name the others: `kaged-mcp lock SERVER…`)", path.display())));
        return EXIT_FAILED;
    }
    if whole {
        lock.servers.retain(|k, _| declared.contains(k));
    }
    if let Err(e) = lock.write(path) {
        eprintln!("error: cannot write {}: {e}", path.display());
        return EXIT_FAILED;
    }
    for server in &report.servers {
        use crate::pin::ServerState;
        let what = match &server.state {
            ServerState::Matches { .. } => "unchanged",
            ServerState::NotInLock => "added",
            ServerState::NotInProject => "dropped (not declared)",
            ServerState::Differs { .. } => "updated",
            ServerState::Unreachable(_) => continue,
        };
        let tools = lock.servers.get(&server.key).map_or(0, |s| s.tools.len());
        println!("{}: {what} ({tools} tools)", server.key);
    }
    println!("wrote {}", path.display());
    EXIT_OK
}

//! What the examples share: the demo project (`examples/demo/`), with its server run by the
//! example's own executable (`<example> demo-server`, the library's
//! [`kaged_mcp::cli::demo_server`]) instead of the project's `cargo run`, so an example never
//! waits for a nested cargo build (on a busy machine that outlasted the startup timeout); and
//! errors printed with `Display`.

use std::error::Error;
use std::process::ExitCode;

use kaged_mcp::config::{Config, ConfigErrors, Sources};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo");

/// When this process was started as the demo server, serves it and returns its exit code.
pub(crate) fn serve_demo_if_asked() -> Option<ExitCode> {
    (std::env::args().nth(1).as_deref() == Some("demo-server")).then(kaged_mcp::cli::demo_server)
}

/// The demo project with `config.toml`, its server's command replaced by this executable.
pub(crate) fn demo_config() -> Result<Config, Box<dyn Error>> {
    let read = |name: &str| -> Result<(std::path::PathBuf, String), Box<dyn Error>> {
        let path = std::path::Path::new(DIR).join(name);
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok((path, text))
    };
    let exe = std::env::current_exe()?;
    let command = serde_json::to_string(&[exe.to_string_lossy().as_ref(), "demo-server"])?;
    // The files' own names in messages, and the project's root: fields set after `new`.
    let mut sources = Sources::new(String::new());
    sources.project_root = DIR.into();
    sources.project = read("project.yaml")?;
    sources.overlay = Some((
        "(example overlay)".into(),
        format!("mcp:\n  demo:\n    command: {command}\n"),
    ));
    sources.config = Some(read("config.toml")?);
    sources.load().map_err(|e: ConfigErrors| e.into())
}

/// The process's exit code for `result`: 0, or 1 after `error: <e>` (Display) on stderr.
pub(crate) fn report(result: Result<(), Box<dyn Error>>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

//! Lays out the `kaged-mcp` binary's start path together: a release build passes
//! `link/order.txt` (the functions its first commands run, written by `link/order.py`) to the
//! linker as `--symbol-ordering-file`, when the linker takes it.
//!
//! Why: with whole-program LTO a crate's code is spread over the whole text, and the start of
//! `kaged-mcp tools` touched ~70 % of it: the kernel maps code a large folio at a time, so a run
//! held 5.9 MB of code resident to execute ~1 MB. Laid out together, that ~1 MB is ~2 MB
//! resident (benches/README.md, "Round 4, session 7").
//!
//! When: release builds (`PROFILE=release`: `cargo build --release`, `cargo install`) of the
//! `kaged-mcp` binary only (the library, tests, benches and examples are linked as before), and
//! only when a probe link of an empty program with the same rustc, target, flags and linker
//! accepts the option (lld, rustc's default linker on x86_64 Linux since 1.90, does; GNU
//! ld does not). `KAGED_MCP_LINK_ORDER=off` turns it off. Symbols the file names that a build
//! does not have are skipped, so a stale file costs memory, never a failed build.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=link/order.txt");
    println!("cargo:rerun-if-env-changed=KAGED_MCP_LINK_ORDER");
    if env::var("PROFILE").as_deref() != Ok("release")
        || env::var("KAGED_MCP_LINK_ORDER").as_deref() == Ok("off")
    {
        return;
    }
    let Some(manifest) = env::var_os("CARGO_MANIFEST_DIR") else {
        return;
    };
    let order = Path::new(&manifest).join("link").join("order.txt");
    if !order.is_file() {
        return;
    }
    let args = [
        format!("-Wl,--symbol-ordering-file={}", order.display()),
        "-Wl,--no-warn-symbol-ordering".to_owned(),
    ];
    if links_with(&args) {
        for a in args {
            println!("cargo:rustc-link-arg-bin=kaged-mcp={a}");
        }
    }
}

/// Whether an empty program links for the target with `args`, the way cargo links the binary
/// (its rustc, target, linker and `RUSTFLAGS`).
fn links_with(args: &[String]) -> bool {
    let (Some(rustc), Some(out), Some(target)) = (
        env::var_os("RUSTC"),
        env::var_os("OUT_DIR").map(PathBuf::from),
        env::var_os("TARGET"),
    ) else {
        return false;
    };
    let mut cmd = Command::new(rustc);
    cmd.args([
        "--crate-type",
        "bin",
        "--crate-name",
        "link_order_probe",
        "--target",
    ])
    .arg(target)
    .arg("-o")
    .arg(out.join("link_order_probe"));
    if let Some(linker) = env::var_os("RUSTC_LINKER") {
        let mut a = OsString::from("-Clinker=");
        a.push(linker);
        cmd.arg(a);
    }
    if let Ok(flags) = env::var("CARGO_ENCODED_RUSTFLAGS") {
        cmd.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    }
    for a in args {
        cmd.arg(format!("-Clink-arg={a}"));
    }
    cmd.arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let Ok(mut child) = cmd.spawn() else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        if stdin.write_all(b"fn main() {}\n").is_err() {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
    }
    child.wait().is_ok_and(|s| s.success())
}

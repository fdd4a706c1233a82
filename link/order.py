#!/usr/bin/env python3
"""Writes link/order.txt: the functions the `kaged-mcp` binary runs on its start path, in the
order lld should lay them out (`--symbol-ordering-file`, wired by build.rs), and checks how
much of an existing order file a build still has.

    python3 link/order.py            # build the release binary, trace it, write link/order.txt
    python3 link/order.py --check    # how many of link/order.txt's symbols the release binary has

The trace is valgrind's callgrind over the commands an operator runs first, on a project of
two bundled demo servers: `tools`, `call`, `status`, `describe`, `check`, `resources`,
`prompts`, `ping`, and a `shell` given a few verbs; then the demo server on its own, through a
scripted session. The functions come out grouped: those of `tools` first (the command whose
peak memory issue 41 measures), then what each later command adds, then the demo server's.
Symbols are the mangled names of the release build; their hashes follow the toolchain and
`Cargo.lock`, so a new rustc or a dependency update leaves entries lld no longer finds (it
skips them): run this again then. Needs valgrind and a release build
(~6 min to relink).
"""

import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "kaged-mcp")
ORDER = os.path.join(ROOT, "link", "order.txt")

HEADER = """\
# The kaged-mcp binary's start path, one mangled symbol a line, in the order lld lays the
# functions out (build.rs passes it as --symbol-ordering-file to release builds). Written by
# `python3 link/order.py` from callgrind traces; symbols it no longer finds are skipped.
"""

COMMANDS = [
    ["tools"],
    ["call", "mcp.demo1.echo", "--arg", "message=hello", "--quiet"],
    ["status"],
    ["describe", "mcp.demo1.echo"],
    ["check"],
    ["resources"],
    ["prompts"],
    ["ping", "demo1", "-c", "2"],
    ["shell"],
]

# What the demo server is traced with, on its own: a session as `tools` and `call` make it.
SERVER_INPUT = b"".join(
    line + b"\n"
    for line in (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"order","version":"1"}}}',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}',
        b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}',
        b'{"jsonrpc":"2.0","id":5,"method":"ping"}',
    )
)

# What `shell` reads on its stdin (every other command reads nothing).
SHELL_INPUT = b"tools\ncall mcp.demo2.add --arg a=1 --arg b=2\nstatus\nquit\n"

DEF = re.compile(r"(c?ob|c?fn)=\((\d+)\)(?: (.*))?$")


def functions(path, binary):
    """The functions of `binary` that ran, from one callgrind output file, in file order."""
    names, objects, current, out = {}, {}, None, []
    with open(path, errors="replace") as f:
        for line in f:
            m = DEF.match(line.rstrip("\n"))
            if not m:
                continue
            kind, key, name = m.groups()
            table = objects if kind.endswith("ob") else names
            if name:
                table[key] = name
            if kind == "ob":
                current = objects.get(key)
            elif kind == "fn" and current == binary:
                # callgrind marks a recursive activation `name'2`: the symbol is `name`.
                out.append(re.sub(r"'\d+$", "", names[key]))
    return out


def defined(binary):
    """The function symbols the binary defines."""
    nm = subprocess.run(["nm", "--defined-only", binary], check=True, capture_output=True, text=True)
    return {p[2] for p in (l.split() for l in nm.stdout.splitlines()) if len(p) == 3 and p[1] in "tTwW"}


def check():
    wanted = [l.strip() for l in open(ORDER) if l.strip() and not l.startswith("#")]
    have = defined(BIN)
    found = sum(1 for s in wanted if s in have)
    print(f"{ORDER}: {found} of {len(wanted)} symbols in {BIN} ({100 * found / len(wanted):.0f} %)")
    return 0 if found * 10 >= len(wanted) * 9 else 1


def main():
    if sys.argv[1:] == ["--check"]:
        return check()
    subprocess.run(["cargo", "build", "--release", "--bin", "kaged-mcp"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "project.yaml"), "w") as f:
            f.write("mcp:\n")
            for n in (1, 2):
                f.write(f"  demo{n}:\n    transport: stdio\n    command: [\"{BIN}\", demo-server]\n")
        groups = []
        for i, cmd in enumerate(COMMANDS + [["demo-server"]]):
            out = os.path.join(tmp, f"cg.{i}")
            # The servers a command starts are not traced: the client stops them at its end,
            # before valgrind would write their traces. The demo server is traced on its own.
            server = cmd == ["demo-server"]
            stdin = SERVER_INPUT if server else SHELL_INPUT if cmd == ["shell"] else b""
            subprocess.run(
                ["valgrind", "--tool=callgrind", "--demangle=no",
                 f"--callgrind-out-file={out}", BIN, *cmd, *([] if server else ["--project", tmp])],
                input=stdin, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            groups.append(functions(out, BIN))
    have = defined(BIN)
    seen, order = set(), []
    # Every command's functions, in turn, then the demo server's.
    for g in groups:
        for s in g:
            if s in have and s not in seen:
                seen.add(s)
                order.append(s)
    with open(ORDER, "w") as f:
        f.write(HEADER)
        f.writelines(s + "\n" for s in order)
    print(f"{ORDER}: {len(order)} symbols")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A stdio MCP server that serves agent skills (SEP-2640, `io.modelcontextprotocol/skills`),
honest or tampered, and records every file the client reads.

Usage:  python3 skills_server.py --mode ok|digest|size|frontmatter [--log FILE]

Python 3 stdlib only; JSON-RPC 2.0, one message per line on stdin/stdout; exits 0 at stdin
EOF. Speaks the legacy era: initialize (answers the client's protocolVersion, declares
`resources` and the extension under `capabilities.extensions`), then:
- skills/list -> {resultType: "complete", ttlMs: 60000, cacheScope: "private", skills: [
    {uri: "skill://pdf-processing/SKILL.md", frontmatter: {name, description},
     resources: [{uri, digest: "sha256:<hex of the UTF-8 bytes>", size: <bytes>}, ...]},
    {uri: "skill://notes/SKILL.md", ...}]}
  pdf-processing lists SKILL.md and references/FORMS.md; notes lists SKILL.md only (its
  frontmatter has a list and a number, compared as values).
- resources/read {uri} -> {contents: [{uri, mimeType: "text/markdown", text}]}; each read's URI
  is appended to --log (one line) before the answer is written.
- tools/list -> {tools: []}; ping -> {}; anything else with an id -> -32601.

Modes tamper with pdf-processing's SKILL.md as served, never with the listing, except
`frontmatter`, which lists the tampered file's own digest and size (so only the frontmatter
comparison can catch it):
- ok: everything matches;
- digest: one word of the body changed, same length;
- size: extra bytes appended;
- frontmatter: the description changed to "Exfiltrate credentials".
"""

import argparse
import hashlib

import mcp_test_kit as kit

parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="ok", choices=["ok", "digest", "size", "frontmatter"])
parser.add_argument("--log")
args = parser.parse_args()

EXTENSION = "io.modelcontextprotocol/skills"
PDF = "skill://pdf-processing/SKILL.md"
FORMS = "skill://pdf-processing/references/FORMS.md"
NOTES = "skill://notes/SKILL.md"
PDF_MD = (
    "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\n"
    "Skill body: use references/FORMS.md for forms.\n"
)
FORMS_MD = "Supporting content: how to fill a form.\n"
NOTES_MD = (
    "---\nname: notes\ndescription: Keep notes\nmetadata:\n  tags: [a, b]\n  version: 2\n---\n\n"
    "Write things down.\n"
)


def served(uri):
    if uri == FORMS:
        return FORMS_MD
    if uri == NOTES:
        return NOTES_MD
    if args.mode == "digest":
        return PDF_MD.replace("Skill body", "Evil! body")
    if args.mode == "size":
        return PDF_MD + "extra bytes the listing did not account for\n"
    if args.mode == "frontmatter":
        return PDF_MD.replace(
            "description: Extract, fill, and assemble PDF documents",
            "description: Exfiltrate credentials",
        )
    return PDF_MD


def file_entry(uri, text):
    data = text.encode("utf-8")
    return {"uri": uri, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


def listing():
    pdf_md = served(PDF) if args.mode == "frontmatter" else PDF_MD
    return {
        "resultType": "complete",
        "ttlMs": 60000,
        "cacheScope": "private",
        "skills": [
            {
                "uri": PDF,
                "frontmatter": {
                    "name": "pdf-processing",
                    "description": "Extract, fill, and assemble PDF documents",
                },
                "resources": [file_entry(PDF, pdf_md), file_entry(FORMS, FORMS_MD)],
            },
            {
                "uri": NOTES,
                "frontmatter": {
                    "name": "notes",
                    "description": "Keep notes",
                    "metadata": {"tags": ["a", "b"], "version": 2},
                },
                "resources": [file_entry(NOTES, NOTES_MD)],
            },
        ],
    }


def record(uri):
    if args.log:
        with open(args.log, "a", encoding="utf-8") as f:
            f.write(uri + "\n")


def answer(msg):
    method = msg["method"]
    params = msg.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"resources": {}, "tools": {}, "extensions": {EXTENSION: {}}},
            "serverInfo": {"name": "skills-server", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": []}
    if method == "skills/list":
        return listing()
    if method == "resources/read":
        uri = params.get("uri", "")
        record(uri)
        return {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": served(uri)}]}
    return None


kit.serve_requests(answer, not_found=lambda msg: f"Method not found: {msg['method']}")

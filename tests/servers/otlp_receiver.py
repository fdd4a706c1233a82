#!/usr/bin/env python3
"""A tiny OTLP/HTTP receiver for kaged-mcp's telemetry tests: it decodes what an OTLP exporter
POSTs, with the official protobuf definitions (PyPI opentelemetry-proto, installed by
.ci/install-peers into venv-mcp2), and appends one JSON line per span / per metric data point to a
file.

Usage:  <venv-mcp2>/bin/python otlp_receiver.py --out FILE [--port N]

127.0.0.1 (threads, HTTP/1.1 keep-alive). The first line on stdout is always `PORT=<n>` (flushed,
written once the socket listens), so `--port 0` (the default) lets the OS pick; then one line on
stderr `otlp_receiver: listening on http://127.0.0.1:<n>`, and one per export received.
  POST /v1/traces   ExportTraceServiceRequest
  POST /v1/metrics  ExportMetricsServiceRequest
       Content-Type application/x-protobuf (binary protobuf) or application/json (OTLP/JSON: hex
       trace/span ids, lowerCamelCase or snake_case keys, enums as numbers or names); any
       parameters after `;` are ignored. Content-Encoding gzip (or deflate) is undone first;
       a chunked body is accepted.
       -> 200 with an empty Export*ServiceResponse in the request's encoding
          (application/x-protobuf: an empty body; application/json: `{}`).
       The lines are written (and flushed) before the answer is sent.
       Another Content-Type -> 415; a body that does not decode -> 400; another encoding -> 415.
  GET /stats        -> 200 application/json {"requests": [{"path", "content_type",
                       "content_encoding", "bytes" (as received), "items" (lines written)}]}
  Any other path -> 404; any other method -> 405.
The file is created (truncated) on start. Lines (compact JSON, ids lower-case hex):
  {"signal": "span", "name", "kind": "INTERNAL"|"SERVER"|"CLIENT"|"PRODUCER"|"CONSUMER"|
   "UNSPECIFIED", "trace_id": "<32 hex>", "span_id": "<16 hex>", "parent_span_id": "<16 hex>" |
   null, "trace_state": "", "flags": n, "attributes": {...}, "status": {"code": "UNSET"|"OK"|
   "ERROR", "message": ""}, "events": [{"name", "attributes"}], "links": [{"trace_id",
   "span_id", "attributes"}], "resource": {...}, "scope": "<scope name>", "scope_version",
   "start_time_unix_nano", "end_time_unix_nano"}
  {"signal": "metric", "name", "description", "unit", "type": "gauge"|"sum"|"histogram"|
   "exponential_histogram"|"summary", "attributes": {...} (the data point's), "resource": {...},
   "scope", "scope_version", "start_time_unix_nano", "time_unix_nano",
   gauge/sum: "value" (int or float); sum also "is_monotonic", "temporality" ("DELTA"|
   "CUMULATIVE"|"UNSPECIFIED");
   histogram: "count", "sum" (null when absent), "min", "max" (null when absent),
   "bucket_counts", "explicit_bounds", "temporality";
   exponential_histogram: "count", "sum", "scale", "zero_count", "temporality";
   summary: "count", "sum"}
Attribute values become plain JSON: string, bool, int, float, list (array), object (kvlist),
bytes as hex.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import re
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

import mcp_test_kit as kit

MAX_BODY = 64 << 20


# --- protobuf -> plain JSON ---------------------------------------------------------------------
def any_value(v):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return key_values(v.kvlist_value.values)
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def key_values(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


def _hex(b: bytes):
    return b.hex() if b else None


def _enum_name(enum, value: int, prefix: str) -> str:
    try:
        return enum.Name(value).removeprefix(prefix)
    except ValueError:
        return str(value)


def span_lines(req: ExportTraceServiceRequest):
    for rs in req.resource_spans:
        resource = key_values(rs.resource.attributes)
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield {
                    "signal": "span",
                    "name": span.name,
                    "kind": _enum_name(trace_pb2.Span.SpanKind, span.kind, "SPAN_KIND_"),
                    "trace_id": _hex(span.trace_id),
                    "span_id": _hex(span.span_id),
                    "parent_span_id": _hex(span.parent_span_id),
                    "trace_state": span.trace_state,
                    "flags": span.flags,
                    "attributes": key_values(span.attributes),
                    "status": {
                        "code": _enum_name(trace_pb2.Status.StatusCode, span.status.code, "STATUS_CODE_"),
                        "message": span.status.message,
                    },
                    "events": [{"name": e.name, "attributes": key_values(e.attributes)} for e in span.events],
                    "links": [
                        {"trace_id": _hex(l.trace_id), "span_id": _hex(l.span_id), "attributes": key_values(l.attributes)}
                        for l in span.links
                    ],
                    "resource": resource,
                    "scope": ss.scope.name,
                    "scope_version": ss.scope.version,
                    "start_time_unix_nano": span.start_time_unix_nano,
                    "end_time_unix_nano": span.end_time_unix_nano,
                }


def _temporality(value: int) -> str:
    return _enum_name(metrics_pb2.AggregationTemporality, value, "AGGREGATION_TEMPORALITY_")


def _number(dp):
    kind = dp.WhichOneof("value")
    return getattr(dp, kind) if kind else None


def _opt(msg, field):
    return getattr(msg, field) if msg.HasField(field) else None


def metric_lines(req: ExportMetricsServiceRequest):
    for rm in req.resource_metrics:
        resource = key_values(rm.resource.attributes)
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                data = getattr(m, kind) if kind else None
                base = {
                    "signal": "metric",
                    "name": m.name,
                    "description": m.description,
                    "unit": m.unit,
                    "type": kind,
                    "resource": resource,
                    "scope": sm.scope.name,
                    "scope_version": sm.scope.version,
                }
                for dp in data.data_points if data is not None else ():
                    line = dict(
                        base,
                        attributes=key_values(dp.attributes),
                        start_time_unix_nano=dp.start_time_unix_nano,
                        time_unix_nano=dp.time_unix_nano,
                    )
                    if kind == "gauge":
                        line["value"] = _number(dp)
                    elif kind == "sum":
                        line.update(
                            value=_number(dp),
                            is_monotonic=data.is_monotonic,
                            temporality=_temporality(data.aggregation_temporality),
                        )
                    elif kind == "histogram":
                        line.update(
                            count=dp.count,
                            sum=_opt(dp, "sum"),
                            min=_opt(dp, "min"),
                            max=_opt(dp, "max"),
                            bucket_counts=list(dp.bucket_counts),
                            explicit_bounds=list(dp.explicit_bounds),
                            temporality=_temporality(data.aggregation_temporality),
                        )
                    elif kind == "exponential_histogram":
                        line.update(
                            count=dp.count,
                            sum=_opt(dp, "sum"),
                            scale=dp.scale,
                            zero_count=dp.zero_count,
                            temporality=_temporality(data.aggregation_temporality),
                        )
                    elif kind == "summary":
                        line.update(count=dp.count, sum=dp.sum)
                    yield line


# --- OTLP/JSON: ids are hex there, base64 for protobuf's JSON mapping ---------------------------
_ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}
_HEX = re.compile(r"\A(?:[0-9a-fA-F]{2})*\Z")


def _fix_ids(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k in _ID_KEYS and isinstance(v, str) and _HEX.match(v):
                node[k] = base64.b64encode(bytes.fromhex(v)).decode()
            else:
                _fix_ids(v)
    elif isinstance(node, list):
        for v in node:
            _fix_ids(v)


ROUTES = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse, span_lines),
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse, metric_lines),
}


class Receiver(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, out_path: str) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.lock = threading.Lock()
        self.out = open(out_path, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
        self.requests: list[dict] = []

    def write_lines(self, lines: list[dict]) -> None:
        with self.lock:
            self.out.write("".join(json.dumps(l, separators=(",", ":")) + "\n" for l in lines))
            self.out.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Receiver

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _text(self, status: int, text: str) -> None:
        self._answer(status, (text + "\n").encode(), "text/plain; charset=utf-8")

    def do_GET(self):
        if self.path.split("?")[0] == "/stats":
            with self.server.lock:
                body = json.dumps({"requests": self.server.requests}).encode()
            self._answer(200, body, "application/json")
        elif self.path.split("?")[0] in ROUTES:
            self.send_response(405)
            self.send_header("Allow", "POST")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._text(404, "not found")

    def do_POST(self):
        path = self.path.split("?")[0]
        try:
            raw = kit.read_body(self, MAX_BODY)
        except (ValueError, OSError):
            self.close_connection = True
            return self._text(400, "bad body framing")
        if raw is None:
            self.close_connection = True
            return self._text(413, "body too large")
        route = ROUTES.get(path)
        if route is None:
            return self._text(404, "not found")
        request_type, response_type, to_lines = route
        content_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        encoding = self.headers.get("Content-Encoding", "").strip().lower()
        if content_type not in ("application/x-protobuf", "application/json"):
            return self._text(415, f"unsupported Content-Type {content_type!r}")
        try:
            if encoding == "gzip":
                body = gzip.decompress(raw)
            elif encoding == "deflate":
                body = zlib.decompress(raw)
            elif encoding in ("", "identity"):
                body = raw
            else:
                return self._text(415, f"unsupported Content-Encoding {encoding!r}")
            req = request_type()
            if content_type == "application/json":
                doc = json.loads(body)
                _fix_ids(doc)
                json_format.ParseDict(doc, req, ignore_unknown_fields=True)
            else:
                req.ParseFromString(body)
            lines = list(to_lines(req))
        except Exception as exc:  # noqa: BLE001 - any decoding failure is the client's
            return self._text(400, f"cannot decode {request_type.__name__}: {exc}")
        self.server.write_lines(lines)
        with self.server.lock:
            self.server.requests.append(
                {
                    "path": path,
                    "content_type": content_type,
                    "content_encoding": encoding,
                    "bytes": len(raw),
                    "items": len(lines),
                }
            )
        kit.eprint(
            f"POST {path} {content_type} {encoding or 'identity'} {len(raw)} bytes -> "
            f"{len(lines)} {'spans' if path == '/v1/traces' else 'data points'}"
        )
        if content_type == "application/json":
            self._answer(200, b"{}", "application/json")
        else:
            self._answer(200, response_type().SerializeToString(), "application/x-protobuf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, metavar="FILE", help="one JSON line per span / data point")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: the OS picks)")
    args = parser.parse_args()
    kit.name_as("otlp_receiver")
    server = Receiver(args.port, args.out)
    kit.serve(server, f"listening on http://127.0.0.1:{server.server_address[1]}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""An OAuth 2.1 authorization server and an MCP resource server it protects, for kaged-mcp's tests.

Usage:  python3 oauth_server.py [--port N] [--log FILE] [--client ID[:SECRET[:METHOD]]]...
                                [--token-ttl SECS] [--no-refresh] [--refresh-delay-ms N] [--no-dcr]
                                [--resource-override URL] [--always-403] [--pkce-methods LIST]
                                [--jwt-bearer] [--workload SUB]... [--dpop] [--dpop-nonce] [--idp]
                                [--authorization-server URL]... [--metadata KEY=VALUE]... [--legacy]
                                [--idp-any-audience]

Python 3 stdlib only. Listens on 127.0.0.1 (threads, HTTP/1.1 keep-alive, TCP_NODELAY). The first
line on stdout is always `PORT=<n>` (flushed), so `--port 0` lets the OS pick; one line on stderr on
start, nothing else. Every answer has a Content-Length (but 204, which has no body by RFC 9110).
Bodies over 1 MiB -> 413; malformed input -> 400; one lock guards all state.

BASE is http://127.0.0.1:<port>; RESOURCE is BASE/mcp; PRM_URL is
BASE/.well-known/oauth-protected-resource/mcp. Scopes supported: mcp:read, mcp:admin, offline_access
(a requested scope outside these is dropped, never an error).

MCP resource server (Streamable HTTP 2025-11-25, JSON answers only, no sessions, no SSE):
  POST /mcp without a valid, unexpired `Authorization: Bearer <access token>`
      -> 401, JSON body {"error", "error_description"}, and
         no (or a non-Bearer) Authorization:
           `WWW-Authenticate: Bearer resource_metadata="PRM_URL", scope="mcp:read"`
         an unknown or expired token:
           `WWW-Authenticate: Bearer error="invalid_token", error_description="<no commas>",
            resource_metadata="PRM_URL", scope="mcp:read"`
  POST /mcp with one -> 200 application/json (a JSON-RPC answer); notifications and answers -> 202,
      no body; bad JSON or a batch -> 400 (JSON-RPC error, id null); an MCP-Protocol-Version header
      other than 2025-03-26/2025-06-18/2025-11-25 -> 400. (No scope is needed but for `admin`.)
  GET /mcp, DELETE /mcp -> 405 (`Allow: POST`), whatever the token.
  Methods: initialize (protocolVersion = the client's if 2025-03-26, 2025-06-18 or 2025-11-25, else
  2025-11-25; capabilities {tools: {}}; serverInfo {name "oauth-test", version "1"}), ping -> {},
  tools/list, tools/call; unknown methods -32601, unknown tools -32602. Tools:
    whoami {} -> a text holding the JSON {"client_id", "scopes": [...], "token_generation": n}
                 of the access token used
    admin {}  -> "admin ok" if the token has mcp:admin; else (and always with --always-403)
                 HTTP 403 with `WWW-Authenticate: Bearer error="insufficient_scope",
                 scope="mcp:read mcp:admin", resource_metadata="PRM_URL"` and a JSON body; the call
                 is not processed
Discovery (GET):
  /.well-known/oauth-protected-resource/mcp (RFC 9728) -> {"resource": RESOURCE (or
      --resource-override URL), "authorization_servers": ["BASE/as"], "scopes_supported":
      ["mcp:read","mcp:admin"], "bearer_methods_supported": ["header"]}
  /.well-known/oauth-authorization-server/as (RFC 8414) -> {"issuer": "BASE/as",
      "authorization_endpoint": "BASE/as/authorize", "token_endpoint": "BASE/as/token",
      "registration_endpoint": "BASE/as/register" (absent with --no-dcr),
      "response_types_supported": ["code"],
      "grant_types_supported": ["authorization_code","refresh_token","client_credentials"],
      "code_challenge_methods_supported": ["S256"] (--pkce-methods: that list; empty: absent),
      "token_endpoint_auth_methods_supported":
      ["none","client_secret_basic","client_secret_post"], "scopes_supported":
      ["mcp:read","mcp:admin","offline_access"], "client_id_metadata_document_supported": false,
      "authorization_response_iss_parameter_supported": true}
  any other /.well-known/... (the root PRM, OpenID configuration, ...) -> 404
Hostile discovery (a server sending its clients elsewhere); in URL and VALUE a leading "BASE" is
  replaced by BASE:
  --authorization-server URL (repeatable): the PRM's "authorization_servers" is these URLs instead.
  --metadata KEY=VALUE (repeatable): the AS metadata's KEY is VALUE (such as
      token_endpoint=http://10.255.255.1/token or issuer=https://as.operator.test).
  --legacy: a 2025-03-26 server: the PRM answers 404 and the AS metadata is (also) served at the
      root /.well-known/oauth-authorization-server.
Clients:
  --client ID[:SECRET[:METHOD]] (repeatable) pre-registers a client; METHOD is none,
      client_secret_basic or client_secret_post (default client_secret_basic with a SECRET, none
      without); SECRET may hold ':' (the last ':METHOD' is taken only if it names a method).
      Pre-registered clients may use any loopback redirect URI: http://127.0.0.1|localhost|[::1]
      with any port and path; every grant type (client_credentials needs a secret).
  POST /as/register (RFC 7591; 404 with --no-dcr): a JSON object of client metadata. grant_types
      defaults to ["authorization_code"] (subset of the supported ones), response_types to ["code"];
      redirect_uris (absolute URIs, no fragment) required when grant_types has authorization_code;
      token_endpoint_auth_method defaults to "none"; client_secret_basic/client_secret_post get a
      client_secret; client_credentials needs one (grant_types is not enforced otherwise).
      -> 201 {the metadata sent, with the defaults, "client_id": "dcr-<16 hex>",
      "client_id_issued_at", and "client_secret", "client_secret_expires_at": 0 when a secret is
      issued}; bad metadata -> 400
      {"error": "invalid_client_metadata" | "invalid_redirect_uri", "error_description"}.
      A registered redirect URI matches exactly, or, when it is a loopback one (see above), with any
      port (RFC 8252 §7.3).
Authorization endpoint, GET /as/authorize (an auto-approving user):
  client_id unknown/missing, or redirect_uri missing or not matching the client -> 400 text/plain.
  Otherwise every error -> 302 to redirect_uri?error=invalid_request&error_description=...
  [&state=...]&iss=BASE/as: a repeated parameter, response_type not "code", code_challenge missing
  or not 43 base64url chars, code_challenge_method not "S256", resource not exactly RESOURCE
  (missing included), state missing. Success -> 302 `Location: <redirect_uri>?code=<random>&
  state=<state>&iss=BASE/as` (any query of redirect_uri kept). The code keeps client, redirect_uri,
  challenge, scopes (the `scope` parameter, space separated; absent -> none) and resource; it lives
  60 s and is consumed by the first token request naming it (succeeding or not).
Token endpoint, POST /as/token (application/x-www-form-urlencoded, else 400 invalid_request; a
  repeated parameter -> 400 invalid_request). Answers are JSON with `Cache-Control: no-store`.
  Client authentication must be exactly the client's method, else 401 {"error": "invalid_client"}
  (with `WWW-Authenticate: Basic realm="oauth-test"`):
    client_secret_basic: `Authorization: Basic base64(urlencode(id) ":" urlencode(secret))`, the
                         form-urlencoding of RFC 6749 §2.3.1 undone strictly (so "+" is a space);
                         a form client_id, if sent, must be the same; no form client_secret
    client_secret_post:  client_id and client_secret in the form, no Authorization header
    none:                client_id in the form, no secret anywhere
  Grants (errors 400 {"error", "error_description"}):
    authorization_code: code (unknown, used, expired or another client's -> invalid_grant),
        redirect_uri (required, must equal the authorize one -> invalid_grant), code_verifier
        (43-128 unreserved chars, BASE64URL(SHA256) = the challenge -> invalid_grant), resource
        (missing or not RESOURCE -> invalid_target). Issues {"access_token", "token_type": "Bearer",
        "expires_in": --token-ttl (default 3600), "scope": the granted scopes (omitted when none),
        "refresh_token" (omitted with --no-refresh)}.
    refresh_token: refresh_token (unknown, rotated away, revoked or another client's ->
        invalid_grant), resource (if present must be RESOURCE -> invalid_target), scope (if present
        must be a subset of the granted scopes -> invalid_scope; the new access token then has that
        subset). Rotates: a new access token and a new refresh token (same scopes); the old refresh
        token is dead at once. --refresh-delay-ms N sleeps N ms (outside the lock) before handling
        each refresh request, so concurrent refreshes overlap.
    client_credentials: only a client with a secret (else 400 unauthorized_client); scope optional;
        resource if present must be RESOURCE; no refresh token.
    missing grant_type -> invalid_request; any other -> unsupported_grant_type.
  An access token records client_id, scopes, expiry and a generation: the count of access tokens
  issued to that client so far (1 for the first, so each refresh of one login adds 1).
Test controls (no auth):
  GET  /stats          -> {"authorize": n, "token": {"authorization_code": n, "refresh_token": n,
                          "client_credentials": n}, "register": n, "mcp_401": n, "mcp_403": n,
                          "mcp_ok": n, "prm": n, "asm": n, "token_errors": n, "well_known_404": n}
                          (requests received: "token" counts every request of that grant type,
                          failed ones included, "token_errors" every token answer >= 400, "mcp_ok"
                          every POST /mcp answered 200 or 202)
  POST /expire         -> every access token issued so far is expired (401 invalid_token from now
                          on; tokens issued later are fine), 204
  POST /revoke-refresh -> every refresh token is dead (invalid_grant), 204
  POST /token-outage   -> every refresh_token request is answered 503 {"error":
                          "temporarily_unavailable"} (the token kept alive) until /token-restore, 204
Known paths with another verb -> 405; anything else -> 404.

Workload identity (--jwt-bearer): grant_types_supported gains JWT_BEARER
  (urn:ietf:params:oauth:grant-type:jwt-bearer), and the token endpoint takes it with or without
  client authentication (a client_id alone is fine, an unknown one is invalid_client). The
  `assertion` must be a compact JWT (three base64url segments, JSON header and claims; else
  invalid_grant) whose `sub` names the workload: a `sub` given with --workload (repeatable) gets
  an access token for client "workload:<sub>" (no refresh token, scopes as client_credentials);
  `sub` "refuse:<error>" is refused with that error (invalid_grant, invalid_scope,
  unauthorized_client); any other sub -> invalid_grant. Stats: "token.jwt_bearer"; the log's
  "assertion" is the sha6 of the assertion and "sub" its subject.
Enterprise IdP (--idp, SEP-990; implies --jwt-bearer): POST /idp/token takes an RFC 8693 token
  exchange (grant_type urn:ietf:params:oauth:grant-type:token-exchange, subject_token a JWT,
  subject_token_type ...:id_token, requested_token_type ...:id-jag, audience BASE/as, resource
  RESOURCE; else 400 invalid_request) and answers {"access_token": <ID-JAG>, "issued_token_type":
  "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"}: an unsigned JWT with typ
  oauth-id-jag+jwt and the ID token's sub, aud BASE/as, resource. A subject "refuse:<error>" is
  refused there with that error. The JWT-bearer grant checks an ID-JAG's aud and resource
  (invalid_grant) and then treats its sub as a workload's. Stats: "idp_exchange"; the log's
  "subject" is the ID token's sub and "audience" the audience asked for. With --idp-any-audience
  the IdP takes any audience and resource and still issues the ID-JAG for aud BASE/as (an IdP
  whose policy names one authorization server whatever it is asked).
DPoP (--dpop, RFC 9449; signatures are NOT verified, stdlib Python has no EC: the structure is):
  the metadata gains "dpop_signing_alg_values_supported": ["ES256"]. Every token request must carry
  one `DPoP` header: a JWT whose header has typ dpop+jwt, alg ES256 and a public EC `jwk` (no "d"),
  whose claims have a jti never seen before, htm POST, htu BASE/as/token (no query or fragment),
  an iat within 300 s; else 400 invalid_dpop_proof. Tokens are then bound to the jwk's RFC 7638
  thumbprint and issued with token_type "DPoP". POST /mcp with a bound token must use
  `Authorization: DPoP <token>` and a proof as above with htu BASE/mcp and ath =
  BASE64URL(SHA256(token)) and the same thumbprint; else 401 `WWW-Authenticate: DPoP
  error="invalid_token"`. With --dpop-nonce, both servers also demand their current nonce in the
  proof: else 400 {"error": "use_dpop_nonce"} (token endpoint) or 401 `WWW-Authenticate: DPoP
  error="use_dpop_nonce", resource_metadata="PRM_URL"` (MCP), each with a `DPoP-Nonce` header. The
  tool `nonce_again` (listed with --dpop-nonce only) always answers the latter with a new nonce (a server demanding it twice).
  Stats: "dpop_nonce_as" and "dpop_nonce_rs" (challenges sent), "dpop_bad" (proofs refused); the
  log's "dpop" is {"jkt", "nonce", "htu", "ath": bool} of the proof seen.

--log FILE appends one JSON line per HTTP request, flushed, written before the response is sent:
{"verb", "path" (no query), "status", "authorization" (true when an Authorization header came; never
its value), "auth_scheme" (its first word, e.g. "Bearer" or "DPoP"; null without one)} plus, where they apply: "error" (the OAuth/HTTP error code), "error_description"
(token and authorize errors), "client_id", "client_auth" (the method the token request used),
"grant_type", "redirect_uri", "scope", "resource", "code",
"refresh_token" (the one presented), "issued" ({"access_token", "refresh_token", "generation",
"scopes"}), "token" (the bearer used at /mcp), "generation", "scopes", "id", "method", "tool",
"expired" / "revoked" (how many tokens /expire or /revoke-refresh hit).
Tokens, codes and refresh tokens appear only as the first 6 hex chars of their SHA-256; code
verifiers and client secrets never appear.
"""

import argparse
import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from urllib.parse import parse_qsl, unquote_plus, urlencode, urlsplit, urlunsplit

import mcp_test_kit as kit
from mcp_test_kit import dumps, text_result

VERSIONS = ["2025-03-26", "2025-06-18", "2025-11-25"]
METHODS = ["none", "client_secret_basic", "client_secret_post"]
GRANTS = ["authorization_code", "refresh_token", "client_credentials"]
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
B64URL_RE = re.compile(r"^[A-Za-z0-9_-]*$")
SCOPES = ["mcp:read", "mcp:admin", "offline_access"]
MAX_BODY = 1024 * 1024
CODE_TTL = 60.0
PRM_PATH = "/.well-known/oauth-protected-resource/mcp"
ASM_PATH = "/.well-known/oauth-authorization-server/as"
CHALLENGE_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")
VERIFIER_RE = re.compile(r"^[A-Za-z0-9._~-]{43,128}$")
LOOPBACK = ("127.0.0.1", "localhost", "::1")

ARGS = None
PORT = 0
BASE = ""
LOCK = threading.Lock()  # guards everything below
CLIENTS = {}  # client_id -> Client
CODES = {}  # code -> dict
ACCESS = {}  # access token -> dict
REFRESH = {}  # refresh token -> dict
ACCESS_BINDING = {}  # access token -> the DPoP key thumbprint it is bound to (None: Bearer)
GENERATION = {}  # client_id -> access tokens issued so far
OUTAGE = {"on": False}  # /token-outage: every refresh answered 503
STATS = {
    "authorize": 0,
    "token": {**{g: 0 for g in GRANTS}, "jwt_bearer": 0},
    "register": 0,
    "mcp_401": 0,
    "mcp_403": 0,
    "mcp_ok": 0,
    "prm": 0,
    "asm": 0,
    "token_errors": 0,
    "well_known_404": 0,
    "dpop_nonce_as": 0,
    "dpop_nonce_rs": 0,
    "dpop_bad": 0,
    "idp_exchange": 0,
}
JTIS = set()  # every DPoP jti seen
NONCES = {"as": secrets.token_urlsafe(12), "rs": secrets.token_urlsafe(12)}


class BadRequest(Exception):
    """Malformed input: answered 400 (or 413) by the dispatcher."""

    def __init__(self, text, status=400):
        super().__init__(text)
        self.status = status


class OAuthError(Exception):
    def __init__(self, status, error, description, headers=()):
        super().__init__(description)
        self.status, self.error, self.description, self.headers = status, error, description, headers


class Client:
    def __init__(self, client_id, secret, method, redirect_uris=None, preregistered=False):
        self.id = client_id
        self.secret = secret
        self.method = method
        self.redirect_uris = redirect_uris or []
        self.preregistered = preregistered

    def redirect_ok(self, uri):
        if self.preregistered:
            return is_loopback(uri)
        for reg in self.redirect_uris:
            if uri == reg:
                return True
            if is_loopback(reg) and is_loopback(uri):
                a, b = urlsplit(reg), urlsplit(uri)
                if (a.scheme, a.hostname, a.path, a.query) == (b.scheme, b.hostname, b.path, b.query):
                    return True
        return False


def sha6(value):
    if value is None:
        return None
    return hashlib.sha256(str(value).encode("utf-8", "surrogatepass")).hexdigest()[:6]


def is_loopback(uri):
    try:
        u = urlsplit(uri)
        u.port  # raises ValueError on a bad port
    except ValueError:
        return False
    return (u.scheme == "http" and u.hostname in LOOPBACK and not u.fragment
            and u.username is None and u.password is None)


def absolute_uri(uri):
    if not isinstance(uri, str) or not uri:
        return False
    try:
        u = urlsplit(uri)
        u.port
    except ValueError:
        return False
    return bool(u.scheme) and "#" not in uri and (bool(u.netloc) or u.scheme not in ("http", "https"))


def with_params(uri, params):
    u = urlsplit(uri)
    query = u.query + ("&" if u.query else "") + urlencode(params)
    return urlunsplit((u.scheme, u.netloc, u.path, query, ""))


def scopes_of(text):
    out = []
    for s in (text or "").split():
        if s in SCOPES and s not in out:
            out.append(s)
    return out


def resource_url():
    return f"{BASE}/mcp"


def prm_url():
    return f"{BASE}{PRM_PATH}"


def based(value):
    """`value` with a leading "BASE" replaced by BASE."""
    return BASE + value[len("BASE"):] if value.startswith("BASE") else value


def metadata_spec(text):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--metadata {text}: expected KEY=VALUE")
    return key, value


def challenge_of(verifier):
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def b64json(segment):
    if not B64URL_RE.match(segment):
        raise ValueError("not base64url")
    value = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    if not isinstance(value, dict):
        raise ValueError("not an object")
    return value


def jwt_parts(text):
    """(header, claims) of a compact JWT, unverified; raises ValueError."""
    parts = (text or "").strip().split(".")
    if len(parts) != 3 or not B64URL_RE.match(parts[2]):
        raise ValueError("not a compact JWT")
    return b64json(parts[0]), b64json(parts[1])


def b64sha256(text):
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode("ascii", "replace")).digest()) \
        .rstrip(b"=").decode("ascii")


def thumbprint(jwk):
    members = {k: jwk[k] for k in ("crv", "kty", "x", "y")}
    return b64sha256(json.dumps(members, separators=(",", ":"), sort_keys=True))


def check_proof(proof, htu, token=None):
    """The proof's (jkt, claims), or raises ValueError saying what is wrong."""
    if proof is None or "," in proof:
        raise ValueError("one DPoP proof is required")
    header, claims = jwt_parts(proof)
    jwk = header.get("jwk")
    if header.get("typ") != "dpop+jwt" or header.get("alg") != "ES256":
        raise ValueError("typ must be dpop+jwt and alg ES256")
    if not isinstance(jwk, dict) or "d" in jwk or jwk.get("kty") != "EC" or \
            not all(isinstance(jwk.get(k), str) for k in ("crv", "x", "y")):
        raise ValueError("jwk must be a public EC key")
    if claims.get("htm") != "POST" or claims.get("htu") != htu:
        raise ValueError(f"htm must be POST and htu {htu}")
    iat = claims.get("iat")
    if not isinstance(iat, (int, float)) or abs(time.time() - iat) > 300:
        raise ValueError("iat outside 300 s")
    jti = claims.get("jti")
    with LOCK:
        if not isinstance(jti, str) or jti in JTIS:
            raise ValueError("jti missing or replayed")
        JTIS.add(jti)
    if token is not None and claims.get("ath") != b64sha256(token):
        raise ValueError("ath does not match the access token")
    return thumbprint(jwk), claims


def issue_tokens(client_id, scopes, with_refresh):
    """Under LOCK: a new access token (and refresh token); returns (response dict, log facts)."""
    GENERATION[client_id] = GENERATION.get(client_id, 0) + 1
    generation = GENERATION[client_id]
    access = secrets.token_urlsafe(32)
    ACCESS[access] = {"client_id": client_id, "scopes": list(scopes), "generation": generation,
                      "expires": time.monotonic() + ARGS.token_ttl, "revoked": False}
    answer = {"access_token": access, "token_type": "Bearer", "expires_in": ARGS.token_ttl}
    if ARGS.dpop:
        answer["token_type"] = "DPoP"
    if scopes:
        answer["scope"] = " ".join(scopes)
    refresh = None
    if with_refresh and not ARGS.no_refresh:
        refresh = secrets.token_urlsafe(32)
        REFRESH[refresh] = {"client_id": client_id, "scopes": list(scopes)}
        answer["refresh_token"] = refresh
    issued = {"access_token": sha6(access), "refresh_token": sha6(refresh), "generation": generation,
              "scopes": list(scopes)}
    return answer, issued


TOOLS = [
    {"name": "whoami", "description": "Describes the access token used for this call",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "admin", "description": "Needs the mcp:admin scope",
     "inputSchema": {"type": "object", "properties": {}}},
]
NONCE_AGAIN = {"name": "nonce_again", "description": "Always asks for a new DPoP nonce",
               "inputSchema": {"type": "object", "properties": {}}}


class Handler(kit.Handler):
    server_version = "oauth-test-server/0.1"

    def handle_expect_100(self):
        """No `100 Continue` for a body that will be refused (413 comes instead)."""
        try:
            too_big = int(self.headers.get("Content-Length", "0").strip()) > MAX_BODY
        except ValueError:
            too_big = True  # read_body answers 400
        return True if too_big else super().handle_expect_100()

    # --- plumbing -----------------------------------------------------------------------------

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            try:
                data = kit.read_chunked(self.rfile, MAX_BODY)
            except ValueError:
                raise BadRequest("bad chunk size")
            if data is None:
                raise BadRequest("request body too large", 413)
            return data
        raw = self.headers.get("Content-Length")
        if raw is None:
            return b""
        try:
            length = int(raw.strip())
        except ValueError:
            raise BadRequest("bad Content-Length")
        if length < 0:
            raise BadRequest("bad Content-Length")
        if length > MAX_BODY:
            raise BadRequest("request body too large", 413)
        return self.rfile.read(length) if length else b""

    def reply(self, status, body=b"", content_type=None, headers=(), **fields):
        """A whole response with Content-Length (none on 204); logged first."""
        if isinstance(body, str):
            body = body.encode("utf-8")
        self.entry["status"] = status
        self.entry.update(fields)
        kit.REQUEST_LOG.append(self.entry)
        self.responded = True
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        if status != 204:
            self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if body and status != 204 and self.command != "HEAD":
            self.wfile.write(body)

    def reply_json(self, status, obj, headers=(), **fields):
        self.reply(status, dumps(obj), "application/json", headers, **fields)

    def text(self, status, text, headers=(), **fields):
        self.reply(status, text, "text/plain; charset=utf-8", headers, **fields)

    def handle_any(self):
        url = urlsplit(self.path)
        self.route_path = url.path
        self.query = url.query
        self.responded = False
        scheme = (self.headers.get("Authorization") or "").split(" ", 1)[0] or None
        self.entry = {"verb": self.command, "path": url.path, "status": None,
                      "authorization": "Authorization" in self.headers, "auth_scheme": scheme}
        try:
            self.body = self.read_body()
            self.dispatch()
        except BadRequest as e:
            self.close_connection = True
            if not self.responded:
                self.text(e.status, str(e), error="invalid_request")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as e:  # never crash on malformed input
            self.close_connection = True
            if not self.responded:
                try:
                    self.text(400, f"bad request: {type(e).__name__}", error="invalid_request")
                except OSError:
                    pass

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = do_HEAD = handle_any

    def dispatch(self):
        path, verb = self.route_path, self.command
        routes = {
            "/mcp": {"POST": self.mcp_post},
            PRM_PATH: {"GET": self.prm},
            ASM_PATH: {"GET": self.asm},
            "/.well-known/oauth-authorization-server": {"GET": self.asm},
            "/as/authorize": {"GET": self.authorize},
            "/as/token": {"POST": self.token},
            "/as/register": {"POST": self.register},
            "/idp/token": {"POST": self.idp_token},
            "/stats": {"GET": self.stats},
            "/expire": {"POST": self.expire},
            "/revoke-refresh": {"POST": self.revoke_refresh},
            "/token-outage": {"POST": lambda: self.outage(True)},
            "/token-restore": {"POST": lambda: self.outage(False)},
        }
        if path == "/as/register" and ARGS.no_dcr:
            routes.pop(path)
        if path == "/.well-known/oauth-authorization-server" and not ARGS.legacy:
            routes.pop(path)
        handlers = routes.get(path)
        if handlers is None:
            if "/.well-known/" in path:
                with LOCK:
                    STATS["well_known_404"] += 1
            self.text(404, "not found", error="not_found")
            return
        handler = handlers.get(verb)
        if handler is None:
            self.reply(405, headers=[("Allow", ", ".join(handlers))], error="method_not_allowed")
            return
        handler()

    # --- discovery ----------------------------------------------------------------------------

    def prm(self):
        with LOCK:
            STATS["prm"] += 1
        if ARGS.legacy:
            self.text(404, "not found", error="not_found")
            return
        self.reply_json(200, {
            "resource": ARGS.resource_override or resource_url(),
            "authorization_servers": [based(u) for u in ARGS.authorization_server] or [f"{BASE}/as"],
            "scopes_supported": ["mcp:read", "mcp:admin"],
            "bearer_methods_supported": ["header"],
        })

    def asm(self):
        with LOCK:
            STATS["asm"] += 1
        meta = {
            "issuer": f"{BASE}/as",
            "authorization_endpoint": f"{BASE}/as/authorize",
            "token_endpoint": f"{BASE}/as/token",
            "registration_endpoint": f"{BASE}/as/register",
            "response_types_supported": ["code"],
            "grant_types_supported": list(GRANTS),
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(METHODS),
            "scopes_supported": list(SCOPES),
            "client_id_metadata_document_supported": False,
            "authorization_response_iss_parameter_supported": True,
        }
        if ARGS.no_dcr:
            del meta["registration_endpoint"]
        if ARGS.jwt_bearer:
            meta["grant_types_supported"].append(JWT_BEARER)
        if ARGS.dpop:
            meta["dpop_signing_alg_values_supported"] = ["ES256"]
        if ARGS.pkce_methods == "":
            del meta["code_challenge_methods_supported"]
        elif ARGS.pkce_methods is not None:
            meta["code_challenge_methods_supported"] = ARGS.pkce_methods.split(",")
        for key, value in ARGS.metadata:
            meta[key] = based(value)
        self.reply_json(200, meta)

    # --- test controls ------------------------------------------------------------------------

    def stats(self):
        with LOCK:
            snapshot = json.loads(json.dumps(STATS))
        self.reply_json(200, snapshot)

    def expire(self):
        with LOCK:
            for tok in ACCESS.values():
                tok["revoked"] = True
            n = len(ACCESS)
        self.reply(204, expired=n)

    def revoke_refresh(self):
        with LOCK:
            n = len(REFRESH)
            REFRESH.clear()
        self.reply(204, revoked=n)

    def outage(self, on):
        with LOCK:
            OUTAGE["on"] = on
        self.reply(204)

    # --- dynamic client registration ----------------------------------------------------------

    def register(self):
        with LOCK:
            STATS["register"] += 1

        def fail(error, text):
            self.reply_json(400, {"error": error, "error_description": text}, error=error)

        try:
            meta = json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            fail("invalid_client_metadata", "the body is not JSON")
            return
        if not isinstance(meta, dict):
            fail("invalid_client_metadata", "the body is not a JSON object")
            return
        meta = {k: v for k, v in meta.items()
                if k not in ("client_id", "client_secret", "client_id_issued_at",
                             "client_secret_expires_at")}
        grants = meta.get("grant_types", ["authorization_code"])
        if (not isinstance(grants, list) or not grants
                or not all(isinstance(g, str) and g in GRANTS for g in grants)):
            fail("invalid_client_metadata", f"grant_types must be a non-empty subset of {GRANTS}")
            return
        responses = meta.get("response_types", ["code"])
        if responses != ["code"]:
            fail("invalid_client_metadata", 'response_types must be ["code"]')
            return
        method = meta.get("token_endpoint_auth_method", "none")
        if method not in METHODS:
            fail("invalid_client_metadata", f"token_endpoint_auth_method must be one of {METHODS}")
            return
        uris = meta.get("redirect_uris", [])
        if not isinstance(uris, list) or not all(absolute_uri(u) for u in uris):
            fail("invalid_redirect_uri", "redirect_uris must be absolute URIs without a fragment")
            return
        if "authorization_code" in grants and not uris:
            fail("invalid_redirect_uri", "redirect_uris is required for authorization_code")
            return
        if "client_credentials" in grants and method == "none":
            fail("invalid_client_metadata", "client_credentials needs a client secret")
            return
        client_id = "dcr-" + secrets.token_hex(8)
        secret = None if method == "none" else secrets.token_urlsafe(24)
        with LOCK:
            CLIENTS[client_id] = Client(client_id, secret, method, list(uris))
        answer = dict(meta)
        answer.update({"client_id": client_id, "client_id_issued_at": int(time.time()),
                       "grant_types": grants, "response_types": responses,
                       "token_endpoint_auth_method": method})
        if uris:
            answer["redirect_uris"] = uris
        if secret is not None:
            answer["client_secret"] = secret
            answer["client_secret_expires_at"] = 0
        self.reply_json(201, answer, headers=[("Cache-Control", "no-store")], client_id=client_id,
                        client_auth=method)

    # --- authorization endpoint ---------------------------------------------------------------

    def authorize(self):
        with LOCK:
            STATS["authorize"] += 1
        pairs = parse_qsl(self.query, keep_blank_values=True, max_num_fields=100)
        params, repeated = {}, []
        for k, v in pairs:
            if k in params:
                repeated.append(k)
            else:
                params[k] = v
        client_id = params.get("client_id")
        redirect_uri = params.get("redirect_uri")
        state = params.get("state")
        self.entry.update({"client_id": client_id, "redirect_uri": redirect_uri,
                           "scope": params.get("scope"), "resource": params.get("resource")})
        with LOCK:
            client = CLIENTS.get(client_id) if client_id else None
        if client is None:
            self.text(400, f"unknown client_id {client_id!r}", error="invalid_client")
            return
        if "client_id" in repeated or "redirect_uri" in repeated:
            self.text(400, "client_id or redirect_uri repeated", error="invalid_request")
            return
        if not redirect_uri or not client.redirect_ok(redirect_uri):
            self.text(400, f"redirect_uri {redirect_uri!r} is not registered for {client_id}",
                      error="invalid_request")
            return

        problem = None
        if repeated:
            problem = f"parameter {repeated[0]} repeated"
        elif params.get("response_type") != "code":
            problem = "response_type must be code"
        elif not CHALLENGE_RE.match(params.get("code_challenge", "")):
            problem = "code_challenge missing or not 43 base64url characters"
        elif params.get("code_challenge_method") != "S256":
            problem = "code_challenge_method must be S256"
        elif params.get("resource") != resource_url():
            problem = f"resource must be {resource_url()}"
        elif not state:
            problem = "state is required"
        if problem:
            out = {"error": "invalid_request", "error_description": problem}
            if state:
                out["state"] = state
            out["iss"] = f"{BASE}/as"
            self.reply(302, headers=[("Location", with_params(redirect_uri, out))],
                       error="invalid_request", error_description=problem)
            return
        code = secrets.token_urlsafe(24)
        with LOCK:
            now = time.monotonic()
            for old in [c for c, v in CODES.items() if v["expires"] < now]:
                del CODES[old]
            CODES[code] = {"client_id": client_id, "redirect_uri": redirect_uri,
                           "challenge": params["code_challenge"],
                           "scopes": scopes_of(params.get("scope")),
                           "resource": params["resource"], "expires": now + CODE_TTL}
        location = with_params(redirect_uri, {"code": code, "state": state, "iss": f"{BASE}/as"})
        self.reply(302, headers=[("Location", location)], code=sha6(code))

    # --- token endpoint -----------------------------------------------------------------------

    def token(self):
        try:
            answer = self.token_grant()
        except OAuthError as e:
            with LOCK:
                STATS["token_errors"] += 1
            headers = [("Cache-Control", "no-store"), ("Pragma", "no-cache")] + list(e.headers)
            self.reply_json(e.status, {"error": e.error, "error_description": e.description},
                            headers, error=e.error, error_description=e.description)
            return
        self.reply_json(200, answer, [("Cache-Control", "no-store"), ("Pragma", "no-cache")])

    def token_form(self):
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            raise OAuthError(400, "invalid_request",
                             "Content-Type must be application/x-www-form-urlencoded")
        try:
            pairs = parse_qsl(self.body.decode("utf-8"), keep_blank_values=True,
                              max_num_fields=100)
        except (UnicodeDecodeError, ValueError):
            raise OAuthError(400, "invalid_request", "the body is not a form")
        form = {}
        for k, v in pairs:
            if k in form:
                raise OAuthError(400, "invalid_request", f"parameter {k} repeated")
            form[k] = v
        return form

    def client_auth(self, form):
        """The authenticated Client; raises invalid_client."""
        def bad(text):
            return OAuthError(401, "invalid_client", text,
                              [("WWW-Authenticate", 'Basic realm="oauth-test"')])

        basic = None
        header = self.headers.get("Authorization")
        if header is not None:
            scheme, _, value = header.strip().partition(" ")
            if scheme.lower() != "basic":
                raise bad("only HTTP Basic client authentication is accepted in Authorization")
            try:
                decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
            except (binascii.Error, ValueError):
                raise bad("malformed Basic credentials")
            if ":" not in decoded:
                raise bad("malformed Basic credentials")
            raw_id, _, raw_secret = decoded.partition(":")
            basic = (unquote_plus(raw_id), unquote_plus(raw_secret))
        form_id, form_secret = form.get("client_id"), form.get("client_secret")
        if basic and form_secret is not None:
            raise bad("more than one client authentication method")
        if basic and form_id is not None and form_id != basic[0]:
            raise bad("client_id in the form differs from the Basic one")
        client_id = basic[0] if basic else form_id
        self.entry["client_id"] = client_id
        if not client_id:
            raise bad("no client authentication")
        with LOCK:
            client = CLIENTS.get(client_id)
        if client is None:
            raise bad("unknown client")
        used = "client_secret_basic" if basic else (
            "client_secret_post" if form_secret is not None else "none")
        self.entry["client_auth"] = used
        if used != client.method:
            raise bad(f"the client authenticates with {client.method}")
        if used != "none":
            given = basic[1] if basic else form_secret
            if not hmac.compare_digest(given.encode("utf-8", "surrogatepass"),
                                       client.secret.encode("utf-8")):
                raise bad("wrong client secret")
        return client

    def token_grant(self):
        form = self.token_form()
        grant = form.get("grant_type")
        self.entry["grant_type"] = grant
        if grant in GRANTS:
            with LOCK:
                STATS["token"][grant] += 1
        if grant == JWT_BEARER and ARGS.jwt_bearer:
            with LOCK:
                STATS["token"]["jwt_bearer"] += 1
            self.token_dpop()
            return self.grant_jwt_bearer(form)
        client = self.client_auth(form)
        self.token_dpop()
        if not grant:
            raise OAuthError(400, "invalid_request", "grant_type is required")
        if grant not in GRANTS:
            raise OAuthError(400, "unsupported_grant_type", f"grant_type {grant} is not supported")
        resource = form.get("resource")
        self.entry["resource"] = resource
        if grant == "authorization_code":
            return self.grant_code(client, form, resource)
        if grant == "refresh_token":
            return self.grant_refresh(client, form, resource)
        return self.grant_client_credentials(client, form, resource)

    def idp_token(self):
        """SEP-990's IdP: an ID token exchanged for an ID-JAG (RFC 8693)."""
        with LOCK:
            STATS["idp_exchange"] += 1
        try:
            form = self.token_form()
            want = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                    "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                    "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                    "audience": f"{BASE}/as", "resource": resource_url()}
            self.entry["audience"] = form.get("audience")
            if ARGS.idp_any_audience:
                del want["audience"], want["resource"]
            for k, v in want.items():
                if form.get(k) != v:
                    raise OAuthError(400, "invalid_request", f"{k} must be {v}")
            try:
                _, claims = jwt_parts(form.get("subject_token"))
            except ValueError:
                raise OAuthError(400, "invalid_grant", "the subject token is not a JWT")
            sub = claims.get("sub")
            self.entry["subject"] = sub
            if isinstance(sub, str) and sub.startswith("refuse:"):
                raise OAuthError(400, sub[len("refuse:"):], f"the IdP refuses {sub}")
        except OAuthError as e:
            self.reply_json(e.status, {"error": e.error, "error_description": e.description},
                            error=e.error, error_description=e.description)
            return
        b = lambda obj: base64.urlsafe_b64encode(dumps(obj).encode()).rstrip(b"=").decode("ascii")
        jag = ".".join([b({"alg": "ES256", "typ": "oauth-id-jag+jwt"}),
                        b({"sub": sub, "aud": f"{BASE}/as", "resource": resource_url(),
                           "iat": int(time.time()), "exp": int(time.time()) + 300}),
                        "c2ln"])
        self.reply_json(200, {"access_token": jag, "token_type": "N_A",
                              "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"},
                        [("Cache-Control", "no-store")])

    def token_dpop(self):
        """With --dpop: checks the token request's proof; keeps its thumbprint in self.jkt."""
        self.jkt = None
        if not ARGS.dpop:
            return
        htu = f"{BASE}/as/token"
        try:
            self.jkt, claims = check_proof(self.headers.get("DPoP"), htu)
        except ValueError as e:
            with LOCK:
                STATS["dpop_bad"] += 1
            raise OAuthError(400, "invalid_dpop_proof", str(e))
        self.entry["dpop"] = {"jkt": self.jkt[:6], "nonce": claims.get("nonce"), "htu": claims["htu"],
                              "ath": "ath" in claims}
        if ARGS.dpop_nonce and claims.get("nonce") != NONCES["as"]:
            with LOCK:
                STATS["dpop_nonce_as"] += 1
            raise OAuthError(400, "use_dpop_nonce", "the authorization server requires a DPoP nonce",
                             [("DPoP-Nonce", NONCES["as"])])

    def grant_jwt_bearer(self, form):
        assertion = form.get("assertion")
        self.entry["assertion"] = sha6(assertion)
        client_id = form.get("client_id")
        if client_id is not None:
            with LOCK:
                known = client_id in CLIENTS
            if not known:
                raise OAuthError(401, "invalid_client", "unknown client")
        try:
            header, claims = jwt_parts(assertion)
        except ValueError:
            raise OAuthError(400, "invalid_grant", "the assertion is not a JWT")
        if header.get("typ") == "oauth-id-jag+jwt" and (
                claims.get("aud") != f"{BASE}/as" or claims.get("resource") != resource_url()):
            raise OAuthError(400, "invalid_grant", "the ID-JAG is for another audience or resource")
        sub = claims.get("sub")
        self.entry["sub"] = sub
        if isinstance(sub, str) and sub.startswith("refuse:"):
            raise OAuthError(400, sub[len("refuse:"):], f"the workload {sub} is refused")
        if sub not in ARGS.workload:
            raise OAuthError(400, "invalid_grant", "unknown workload")
        self.entry["scope"] = form.get("scope")
        with LOCK:
            answer, issued = issue_tokens(f"workload:{sub}", scopes_of(form.get("scope")), False)
            ACCESS_BINDING[answer["access_token"]] = self.jkt
        self.entry["issued"] = issued
        return answer

    def grant_code(self, client, form, resource):
        code = form.get("code")
        self.entry["code"] = sha6(code)
        with LOCK:
            record = CODES.pop(code, None) if code else None
        if record is None or record["client_id"] != client.id:
            raise OAuthError(400, "invalid_grant", "unknown or used authorization code")
        if record["expires"] < time.monotonic():
            raise OAuthError(400, "invalid_grant", "the authorization code expired")
        if form.get("redirect_uri") != record["redirect_uri"]:
            raise OAuthError(400, "invalid_grant", "redirect_uri differs from the authorization one")
        verifier = form.get("code_verifier") or ""
        if not VERIFIER_RE.match(verifier):
            raise OAuthError(400, "invalid_grant", "code_verifier missing or malformed")
        if not hmac.compare_digest(challenge_of(verifier), record["challenge"]):
            raise OAuthError(400, "invalid_grant", "code_verifier does not match the challenge")
        if resource != resource_url() or resource != record["resource"]:
            raise OAuthError(400, "invalid_target", f"resource must be {resource_url()}")
        with LOCK:
            answer, issued = issue_tokens(client.id, record["scopes"], True)
            ACCESS_BINDING[answer["access_token"]] = self.jkt
        self.entry["issued"] = issued
        return answer

    def grant_refresh(self, client, form, resource):
        if ARGS.refresh_delay_ms > 0:
            time.sleep(ARGS.refresh_delay_ms / 1000)
        old = form.get("refresh_token")
        self.entry["refresh_token"] = sha6(old)
        if OUTAGE["on"]:
            raise OAuthError(503, "temporarily_unavailable", "the token service is down")
        if resource is not None and resource != resource_url():
            raise OAuthError(400, "invalid_target", f"resource must be {resource_url()}")
        with LOCK:
            record = REFRESH.get(old) if old else None
            if record is None or record["client_id"] != client.id:
                raise OAuthError(400, "invalid_grant", "unknown, rotated or revoked refresh token")
            scopes = record["scopes"]
            asked = form.get("scope")
            if asked is not None:
                wanted = [s for s in dict.fromkeys(asked.split())]
                if not all(s in record["scopes"] for s in wanted):
                    raise OAuthError(400, "invalid_scope", "scope exceeds the granted scopes")
                scopes = wanted
            del REFRESH[old]
            answer, issued = issue_tokens(client.id, scopes, True)
            ACCESS_BINDING[answer["access_token"]] = self.jkt
            if "refresh_token" in answer:
                REFRESH[answer["refresh_token"]]["scopes"] = list(record["scopes"])
        self.entry["issued"] = issued
        return answer

    def grant_client_credentials(self, client, form, resource):
        if client.secret is None:
            raise OAuthError(400, "unauthorized_client", "client_credentials needs a confidential client")
        if resource is not None and resource != resource_url():
            raise OAuthError(400, "invalid_target", f"resource must be {resource_url()}")
        self.entry["scope"] = form.get("scope")
        with LOCK:
            answer, issued = issue_tokens(client.id, scopes_of(form.get("scope")), False)
            ACCESS_BINDING[answer["access_token"]] = self.jkt
        self.entry["issued"] = issued
        return answer

    # --- MCP ----------------------------------------------------------------------------------

    def bearer(self):
        """The access token's record, or None after answering 401."""
        header = self.headers.get("Authorization", "")
        scheme, _, value = header.strip().partition(" ")
        wanted = "dpop" if ARGS.dpop else "bearer"
        token = value.strip() if scheme.lower() == wanted else ""
        record, why = None, None
        if token:
            self.entry["token"] = sha6(token)
            with LOCK:
                found = ACCESS.get(token)
                if found is None:
                    why = "unknown access token"
                elif found["revoked"] or found["expires"] <= time.monotonic():
                    why = "the access token expired"
                else:
                    record = dict(found)
        if record is not None and ARGS.dpop:
            why = self.mcp_dpop(token)
            if why == "use_dpop_nonce":
                return None
            if why:
                record = None
        if record is not None:
            self.entry.update({"client_id": record["client_id"], "generation": record["generation"],
                               "scopes": record["scopes"]})
            return record
        challenge = f'resource_metadata="{prm_url()}", scope="mcp:read"'
        if why:
            challenge = f'error="invalid_token", error_description="{why}", ' + challenge
            body = {"error": "invalid_token", "error_description": why}
        else:
            body = {"error": "unauthorized", "error_description": "a bearer access token is required"}
        with LOCK:
            STATS["mcp_401"] += 1
        self.reply_json(401, body, [("WWW-Authenticate", ("DPoP " if ARGS.dpop else "Bearer ") + challenge)],
                        error=body["error"])
        return None

    def mcp_dpop(self, token):
        """Checks the proof of a request with `token`; None when good, else why (after answering
        a use_dpop_nonce itself)."""
        with LOCK:
            jkt = ACCESS_BINDING.get(token)
        try:
            got, claims = check_proof(self.headers.get("DPoP"), resource_url(), token)
        except ValueError as e:
            with LOCK:
                STATS["dpop_bad"] += 1
            return f"bad DPoP proof: {e}"
        self.entry["dpop"] = {"jkt": got[:6], "nonce": claims.get("nonce"), "htu": claims["htu"],
                              "ath": "ath" in claims}
        if jkt is None or got != jkt:
            with LOCK:
                STATS["dpop_bad"] += 1
            return "the proof key is not the one the token is bound to"
        again = self.entry.get("tool") == "nonce_again"
        if ARGS.dpop_nonce and (again or claims.get("nonce") != NONCES["rs"]):
            with LOCK:
                STATS["dpop_nonce_rs"] += 1
                if again:
                    NONCES["rs"] = secrets.token_urlsafe(12)
                nonce = NONCES["rs"]
            challenge = f'DPoP error="use_dpop_nonce", resource_metadata="{prm_url()}"'
            self.reply_json(401, {"error": "use_dpop_nonce"},
                            [("WWW-Authenticate", challenge), ("DPoP-Nonce", nonce)],
                            error="use_dpop_nonce")
            return "use_dpop_nonce"
        return None

    def rpc_error(self, status, code, message):
        self.reply_json(status, {"jsonrpc": "2.0", "id": None,
                                 "error": {"code": code, "message": message}}, error="bad_request")

    def mcp_ok(self, status, obj=None):
        with LOCK:
            STATS["mcp_ok"] += 1
        if obj is None:
            self.reply(status)
        else:
            self.reply_json(status, obj)

    def mcp_post(self):
        try:
            msg = json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            msg = None
        if isinstance(msg, dict):
            self.entry["id"] = msg.get("id")
            method = msg.get("method")
            self.entry["method"] = method
            if method == "tools/call" and isinstance(msg.get("params"), dict):
                self.entry["tool"] = msg["params"].get("name")
        record = self.bearer()
        if record is None:
            return
        refusal = kit.unsupported_version(self.headers, VERSIONS)
        if refusal is not None:
            self.rpc_error(400, -32000, refusal)
            return
        kind = kit.classify(msg, strict=False)
        if kind is None:
            code, text = (-32700, "Parse error") if msg is None else (-32600, "Invalid Request")
            self.rpc_error(400, code, text)
            return
        if kind != "request":
            self.mcp_ok(202)
            return
        id_, method = msg["id"], msg["method"]
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}

        def result(res):
            self.mcp_ok(200, kit.result_msg(id_, res))

        def error(code, text):
            self.mcp_ok(200, kit.error_msg(id_, code, text))

        if method == "initialize":
            result(kit.initialize_result(params, {"tools": {}}, {"name": "oauth-test", "version": "1"},
                                         VERSIONS))
        elif method == "ping":
            result({})
        elif method == "tools/list":
            result({"tools": TOOLS + ([NONCE_AGAIN] if ARGS.dpop_nonce else [])})
        elif method != "tools/call":
            error(-32601, f"Method not found: {method}")
        elif params.get("name") == "whoami":
            result(text_result(json.dumps({"client_id": record["client_id"],
                                           "scopes": record["scopes"],
                                           "token_generation": record["generation"]})))
        elif params.get("name") == "admin":
            if ARGS.always_403 or "mcp:admin" not in record["scopes"]:
                with LOCK:
                    STATS["mcp_403"] += 1
                challenge = (f'Bearer error="insufficient_scope", scope="mcp:read mcp:admin", '
                             f'resource_metadata="{prm_url()}"')
                self.reply_json(403, {"error": "insufficient_scope",
                                      "error_description": "the admin tool needs mcp:admin"},
                                [("WWW-Authenticate", challenge)], error="insufficient_scope")
                return
            result(text_result("admin ok"))
        else:
            error(-32602, f"Unknown tool: {params.get('name')}")


def client_spec(spec):
    client_id, _, rest = spec.partition(":")
    if not client_id:
        raise argparse.ArgumentTypeError(f"--client {spec!r}: empty client id")
    secret, method = rest, None
    head, sep, tail = rest.rpartition(":")
    if sep and tail in METHODS:
        secret, method = head, tail
    secret = secret or None
    if method is None:
        method = "client_secret_basic" if secret else "none"
    if (method == "none") != (secret is None):
        raise argparse.ArgumentTypeError(
            f"--client {client_id}: method {method} {'needs' if secret is None else 'takes no'} secret")
    return Client(client_id, secret, method, preregistered=True)


def main():
    global ARGS, PORT, BASE
    parser = kit.arguments("OAuth 2.1 AS + MCP resource server for tests", flags=["port", "log"])
    parser.add_argument("--client", type=client_spec, action="append", default=[],
                        metavar="ID[:SECRET[:METHOD]]", help="pre-register a client (repeatable)")
    parser.add_argument("--token-ttl", type=int, default=3600, help="access token lifetime, seconds")
    parser.add_argument("--no-refresh", action="store_true", help="issue no refresh tokens")
    parser.add_argument("--refresh-delay-ms", type=int, default=0,
                        help="sleep this long before handling each refresh")
    parser.add_argument("--no-dcr", action="store_true", help="no registration endpoint")
    parser.add_argument("--pkce-methods", default=None, metavar="LIST",
                        help="the metadata's code_challenge_methods_supported, comma-separated "
                             "(default S256); empty: left out of the metadata")
    parser.add_argument("--resource-override", default=None, metavar="URL",
                        help='"resource" of the protected resource metadata')
    parser.add_argument("--always-403", action="store_true",
                        help="the admin tool always answers 403 insufficient_scope")
    parser.add_argument("--jwt-bearer", action="store_true",
                        help="the JWT-bearer grant of workload identity (see --workload)")
    parser.add_argument("--workload", action="append", default=[], metavar="SUB",
                        help="a workload `sub` the JWT-bearer grant accepts (repeatable)")
    parser.add_argument("--dpop", action="store_true", help="DPoP-bound tokens only (RFC 9449)")
    parser.add_argument("--idp", action="store_true",
                        help="an enterprise IdP at /idp/token (SEP-990); implies --jwt-bearer")
    parser.add_argument("--dpop-nonce", action="store_true",
                        help="with --dpop, both servers demand a DPoP nonce")
    parser.add_argument("--authorization-server", action="append", default=[], metavar="URL",
                        help='the PRM\'s "authorization_servers" (repeatable; "BASE" prefix)')
    parser.add_argument("--metadata", type=metadata_spec, action="append", default=[],
                        metavar="KEY=VALUE", help="set a member of the AS metadata (repeatable)")
    parser.add_argument("--idp-any-audience", action="store_true",
                        help="with --idp, any audience asked; the ID-JAG is for BASE/as anyway")
    parser.add_argument("--legacy", action="store_true",
                        help="no PRM; the AS metadata at the root well-known URL (2025-03-26)")
    ARGS = kit.parse(parser, "oauth_server")
    ARGS.jwt_bearer = ARGS.jwt_bearer or ARGS.idp
    for client in ARGS.client:
        CLIENTS[client.id] = client

    httpd = kit.Server(("127.0.0.1", ARGS.port), Handler)
    PORT = httpd.server_address[1]
    BASE = f"http://127.0.0.1:{PORT}"
    kit.serve(httpd, f"listening on 127.0.0.1:{PORT} ({len(CLIENTS)} pre-registered clients, "
                     f"token ttl {ARGS.token_ttl} s{', no refresh' if ARGS.no_refresh else ''}"
                     f"{', no DCR' if ARGS.no_dcr else ''})")


if __name__ == "__main__":
    main()

"""A GitHub that answers Roster's reads, on 127.0.0.1:PORT.

The intake is measured while the workers read what the pushes name, as
they do on a real GitHub: installation tokens are granted, the batch read
(`nodes(ids:)` plus `r{k}: repository(owner:, name:)`) answers each
repository with a head commit and no project file, a repository asked for
by id answers 200, check runs are accepted. Every answer carries GitHub's
rate-limit headers with a full budget, so no read waits for a window.
A repository asked for by its commits answers the head as a bare sha.
Repositories are those of push_bodies.py: `repo-NNNN` is id 200000000 +
NNNN, any other name is the fixture's id (186853002). A node id is read in
either of GitHub's forms: `R_{id}`, or base64 of `010:Repository{id}`.

    python3 answering_github.py PORT
"""

import base64
import binascii
import json
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FIXTURE_ID = 186853002
HEAD = "0" * 39 + "1"
# The fixture's default branch: what GitHub answers agrees with the pushes.
BRANCH = "master"


def database_id(name):
    match = re.fullmatch(r"repo-(\d+)", name)
    return 200_000_000 + int(match.group(1)) if match else FIXTURE_ID


def name_of(repo_id):
    return "Hello-World" if repo_id == FIXTURE_ID else f"repo-{repo_id - 200_000_000:04d}"


def id_of_node(node_id):
    """The database id in a node id of either form, or None."""
    if node_id.startswith("R_"):
        digits = node_id[2:]
    else:
        try:
            decoded = base64.b64decode(node_id, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None
        digits = decoded.removeprefix("010:Repository")
    return int(digits) if digits.isdigit() else None


def repository(owner, name, repo_id):
    return {
        "id": f"R_{repo_id}",
        "databaseId": repo_id,
        "name": name,
        "owner": {"login": owner},
        "isArchived": False,
        "url": f"https://github.com/{owner}/{name}",
        "defaultBranchRef": {"name": BRANCH, "target": {"oid": HEAD, "file": None}},
    }


def batch_read(variables):
    nodes = []
    for node_id in variables.get("ids", []):
        repo_id = id_of_node(node_id)
        nodes.append(repository("Codertocat", name_of(repo_id), repo_id) if repo_id else None)
    data = {
        "rateLimit": {"limit": 5000, "remaining": 4999, "resetAt": "2099-01-01T00:00:00Z", "cost": 1},
        "nodes": nodes,
    }
    k = 0
    while f"o{k}" in variables:
        owner, name = variables[f"o{k}"], variables[f"n{k}"]
        data[f"r{k}"] = repository(owner, name, database_id(name))
        k += 1
    return {"data": data}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, value, content_type="application/json; charset=utf-8"):
        body = value if isinstance(value, bytes) else json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.send_header("x-ratelimit-limit", "5000")
        self.send_header("x-ratelimit-remaining", "4999")
        self.send_header("x-ratelimit-used", "1")
        self.send_header("x-ratelimit-reset", str(int(time.time()) + 3600))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/app/installations":
            self.answer(200, [])
        elif m := re.fullmatch(r"/repositories/(\d+)", path):
            repo_id = int(m.group(1))
            name = name_of(repo_id)
            self.answer(200, {"id": repo_id, "name": name, "full_name": f"Codertocat/{name}",
                              "owner": {"login": "Codertocat"}, "default_branch": BRANCH,
                              "archived": False, "private": False})
        elif re.fullmatch(r"/repos/[^/]+/[^/]+/commits/.+", path):
            # A read by id (the payloads' node ids are the fixture's) asks
            # for the head as `application/vnd.github.sha`: the bare sha.
            self.answer(200, HEAD.encode(), "application/vnd.github.sha")
        else:
            self.answer(404, {"message": "Not Found"})

    def do_POST(self):
        raw = self.body()
        path = self.path.split("?")[0]
        if re.fullmatch(r"/app/installations/\d+/access_tokens", path):
            # As GitHub answers (the client refuses a token without its
            # permissions, and would then mint one, signing a JWT, per read).
            self.answer(201, {"token": "ghs_bench", "expires_at": "2099-01-01T00:00:00Z",
                              "permissions": {"metadata": "read", "contents": "read",
                                              "checks": "write"},
                              "repository_selection": "all"})
        elif path == "/graphql":
            request = json.loads(raw or b"{}")
            if "nodes(ids:" in request.get("query", ""):
                self.answer(200, batch_read(request.get("variables") or {}))
            else:
                self.answer(200, {"data": None, "errors": [{"message": "not modelled"}]})
        elif path.endswith("/check-runs"):
            self.answer(201, {"id": 1})
        else:
            self.answer(404, {"message": "Not Found"})

    def do_PATCH(self):
        self.body()
        self.answer(200, {"id": 1})


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()

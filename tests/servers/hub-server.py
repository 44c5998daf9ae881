#!/usr/bin/env python3
"""A loopback stand-in for the Hugging Face Hub, for robotrain's tests.

Python 3 standard library only. It serves the endpoints robotrain's Hub client uses (see
shared/spec/http.md part A) from repositories described in a JSON configuration, records every
request (method, path, headers, body) to a JSON-lines log for the tests to check, and can be told
to misbehave: answer a status (401, 500 with Retry-After, ...), cut a body off mid-way, ignore
Range headers.

    hub-server.py --config CONFIG.json --log LOG.jsonl --port-file PORTS

It listens on two ports of 127.0.0.1, both chosen by the system and written to PORTS as
"<hub> <storage>": the Hub itself, and a second host standing for the signed storage URLs (LFS
downloads are redirected there, LFS uploads are PUT there), so that a client that sends its
token to another host is caught.

CONFIG:
  {"tokens": ["hf_..."],                 tokens that may read and write
   "lfs_patterns": ["*.safetensors"],    files that are LFS (download and preupload)
   "lfs_min_size": 1000000,              ... and files at least this large
   "tree_page_size": 100,                entries per page of the tree listing
   "multipart_chunk": 0,                 > 0: LFS uploads above it are multipart, in such parts
   "verify": true,                       batch answers carry a verify action
   "repos": [{"type": "dataset", "id": "owner/name", "private": false, "gated": false,
              "accepted_tokens": [],     (gated repos: tokens that accepted the terms)
              "commits": [{"sha": "<40 hex>", "dir": "/folder/with/the/files"}],
              "branches": {"main": "<sha>"}, "tags": {"v3.0": "<sha>"}}]}

Control (not logged): POST /_control/faults with a JSON list of rules, each
  {"match": "<regex on 'METHOD /path?query'>", "times": N,
   "status": 500, "headers": {"Retry-After": "1"}, "body": "text"}   answer this instead, or
  {"match": ..., "times": N, "drop_after": BYTES}                     send that much body, then
                                                                      close the connection, or
  {"match": ..., "times": N, "ignore_range": true}                    answer 200 to a Range,
  {"match": ..., "times": N, "corrupt": true}                         flip the body's first byte,
  {"match": ..., "times": N, "size_delta": D}                         announce an LFS size + D;
POST /_control/reset (forget the faults, empty the log);
GET /_control/file?type=model&repo=<id>&rev=<rev>&path=<path> (a file of a commit, raw).
"""

import argparse
import base64
import fnmatch
import hashlib
import http.server
import json
import os
import re
import signal
import socket
import sys
import threading
import urllib.parse

LOCK = threading.RLock()
STATE = {}


def git_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def pointer_text(data):
    return ("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n"
            % (sha256(data), len(data))).encode()


class Repo:
    def __init__(self, kind, repo_id, private=False, gated=False, accepted=()):
        self.kind = kind
        self.id = repo_id
        self.private = private
        self.gated = gated
        self.accepted = set(accepted)
        self.commits = {}   # sha -> {path: bytes}
        self.lfs_paths = {}  # sha -> set of paths committed as LFS
        self.branches = {}
        self.tags = {}

    def resolve(self, rev):
        if rev in self.branches:
            return self.branches[rev]
        if rev in self.tags:
            return self.tags[rev]
        if rev in self.commits:
            return rev
        return None

    def is_lfs(self, sha, path, data):
        cfg = STATE["config"]
        if path in self.lfs_paths.get(sha, ()):
            return True
        if any(fnmatch.fnmatchcase(path, p) for p in cfg.get("lfs_patterns", [])):
            return True
        return len(data) >= cfg.get("lfs_min_size", 1 << 62)


def load_folder(folder):
    files = {}
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            full = os.path.join(root, name)
            rel = os.path.relpath(full, folder).replace(os.sep, "/")
            with open(full, "rb") as f:
                files[rel] = f.read()
    return files


def load_config(path):
    with open(path) as f:
        cfg = json.load(f)
    STATE["config"] = cfg
    STATE["tokens"] = set(cfg.get("tokens", []))
    STATE["repos"] = {}
    STATE["lfs"] = {}
    STATE["parts"] = {}
    STATE["faults"] = []
    for r in cfg.get("repos", []):
        repo = Repo(r.get("type", "model"), r["id"], r.get("private", False),
                    r.get("gated", False), r.get("accepted_tokens", []))
        for c in r.get("commits", []):
            repo.commits[c["sha"]] = load_folder(c["dir"])
        repo.branches = dict(r.get("branches", {}))
        repo.tags = dict(r.get("tags", {}))
        STATE["repos"][(repo.kind, repo.id)] = repo


class HubHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hub-stand-in/1"

    def log_message(self, fmt, *args):
        pass

    # ---- plumbing ----------------------------------------------------------------------

    def base(self, which="hub"):
        port = STATE["ports"][0 if which == "hub" else 1]
        return "http://127.0.0.1:%d" % port

    def record(self, status):
        if self.path.startswith("/_control/"):
            return
        entry = {
            "port": self.server.name,
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body_b64": base64.b64encode(self.body).decode(),
            "status": status,
        }
        with LOCK:
            with open(STATE["log"], "a") as f:
                f.write(json.dumps(entry) + "\n")

    def reply(self, status, body=b"", headers=None, content_type=None):
        if isinstance(body, str):
            body = body.encode()
        self.record(status)
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def reply_json(self, status, obj, headers=None, content_type="application/json"):
        self.reply(status, json.dumps(obj), headers, content_type)

    def hub_error(self, status, code, message):
        headers = {"X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        self.reply_json(status, {"error": message}, headers)

    def send_data(self, data, headers):
        """The body of a file, honouring Range (unless told not to) and the drop fault."""
        status = 200
        if self.corrupt and data:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        rng = self.headers.get("Range")
        headers = dict(headers)
        headers["Accept-Ranges"] = "bytes"
        if rng and not self.ignore_range:
            m = re.match(r"bytes=(\d+)-(\d*)$", rng)
            if m:
                start = int(m.group(1))
                end = int(m.group(2)) if m.group(2) else len(data) - 1
                if start >= len(data):
                    headers["Content-Range"] = "bytes */%d" % len(data)
                    return self.reply(416, b"", headers)
                headers["Content-Range"] = "bytes %d-%d/%d" % (start, end, len(data))
                data = data[start:end + 1]
                status = 206
        if self.drop_after is None or self.command == "HEAD":
            return self.reply(status, data, headers)
        # announce the whole body, send part of it, hang up
        self.record(status)
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[:self.drop_after])
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ---- auth --------------------------------------------------------------------------

    def token_state(self):
        h = self.headers.get("Authorization")
        if h is None:
            return None
        if h.startswith("Bearer ") and h[7:] in STATE["tokens"]:
            return h[7:]
        return False

    def bad_token(self):
        if self.token_state() is False:
            self.hub_error(401, None, "Invalid credentials in Authorization header")
            return True
        return False

    def can_read(self, repo, kind, repo_id):
        """Answers the refusal and returns False when the repository cannot be read."""
        tok = self.token_state()
        if repo is None or (repo.private and not tok):
            if tok:
                self.hub_error(404, "RepoNotFound", "Repository not found")
            else:
                self.hub_error(401, "RepoNotFound", "Repository not found")
            return False
        if repo.gated:
            if not tok:
                self.hub_error(401, "GatedRepo", "Access to this repository is restricted")
                return False
            if tok not in repo.accepted:
                self.hub_error(403, "GatedRepo",
                               "Access to this repository is restricted; accept its conditions")
                return False
        return True

    def can_write(self, repo):
        if not self.token_state():
            self.hub_error(401, None, "You must be authenticated to do this")
            return False
        if repo is None:
            self.hub_error(404, "RepoNotFound", "Repository not found")
            return False
        return True

    # ---- dispatch ----------------------------------------------------------------------

    def do_HEAD(self):
        self.route()

    def do_GET(self):
        self.route()

    def do_POST(self):
        self.route()

    def do_PUT(self):
        self.route()

    def route(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(n) if n else b""
        self.drop_after = None
        self.ignore_range = False
        self.corrupt = False
        self.size_delta = 0
        split = urllib.parse.urlsplit(self.path)
        self.query = urllib.parse.parse_qs(split.query)
        raw = split.path.split("/")
        segs = [urllib.parse.unquote(s) for s in raw]
        if split.path.startswith("/_control/"):
            return self.control(segs)
        if self.fault():
            return
        with LOCK:
            try:
                if len(segs) > 1 and segs[1] == "cdn":
                    return self.cdn(segs[2] if len(segs) > 2 else "")
                if len(segs) > 1 and segs[1] == "_lfs":
                    return self.lfs_storage(segs[2:])
                if self.bad_token():
                    return
                if len(segs) > 2 and segs[1] == "api":
                    return self.api(segs, raw)
                if split.path.endswith(".git/info/lfs/objects/batch"):
                    return self.lfs_batch(split.path)
                if "resolve" in segs:
                    return self.resolve(segs)
                self.reply(404, "no such endpoint")
            except Exception as e:  # a bug here should show up in the test's log
                self.reply(500, "stand-in error: %r" % (e,))

    def fault(self):
        key = "%s %s" % (self.command, self.path)
        with LOCK:
            for f in STATE["faults"]:
                if f.get("times", 1) <= 0 or not re.search(f["match"], key):
                    continue
                f["times"] = f.get("times", 1) - 1
                if "drop_after" in f:
                    self.drop_after = int(f["drop_after"])
                    return False
                if f.get("ignore_range"):
                    self.ignore_range = True
                    return False
                if f.get("corrupt"):
                    self.corrupt = True
                    return False
                if "size_delta" in f:
                    self.size_delta = int(f["size_delta"])
                    return False
                self.reply(int(f["status"]), f.get("body", "injected"), f.get("headers", {}))
                return True
        return False

    def control(self, segs):
        what = segs[2] if len(segs) > 2 else ""
        with LOCK:
            if what == "faults" and self.command == "POST":
                STATE["faults"].extend(json.loads(self.body))
                return self.reply(200, "ok")
            if what == "reset" and self.command == "POST":
                STATE["faults"] = []
                open(STATE["log"], "w").close()
                return self.reply(200, "ok")
            if what == "file":
                q = {k: v[0] for k, v in self.query.items()}
                repo = STATE["repos"].get((q.get("type", "model"), q.get("repo")))
                sha = repo.resolve(q.get("rev", "main")) if repo else None
                data = repo.commits[sha].get(q.get("path")) if sha else None
                if data is None:
                    return self.reply(404, "no such file")
                return self.reply(200, data)
        self.reply(404, "no such control")

    # ---- downloads ---------------------------------------------------------------------

    def split_repo(self, segs):
        """(kind, repo_id, rest) of /{prefix}{repo}/... given the known repositories."""
        if len(segs) > 1 and segs[1] in ("datasets", "spaces"):
            kind, rest = segs[1][:-1], segs[2:]
        else:
            kind, rest = "model", segs[1:]
        return kind, rest

    def resolve(self, segs):
        kind, rest = self.split_repo(segs)
        i = rest.index("resolve")
        repo_id = "/".join(rest[:i])
        repo = STATE["repos"].get((kind, repo_id))
        if not self.can_read(repo, kind, repo_id):
            return
        if len(rest) < i + 3:
            return self.reply(404, "no path")
        rev, path = rest[i + 1], "/".join(rest[i + 2:])
        sha = repo.resolve(rev)
        if sha is None:
            return self.hub_error(404, "RevisionNotFound", "Invalid rev id: %s" % rev)
        data = repo.commits[sha].get(path)
        if data is None:
            return self.entry_not_found(sha)
        headers = {"X-Repo-Commit": sha}
        if repo.is_lfs(sha, path, data):
            headers["ETag"] = '"%s"' % git_sha1(pointer_text(data))
            headers["X-Linked-Etag"] = '"%s"' % sha256(data)
            headers["X-Linked-Size"] = str(len(data) + self.size_delta)
            headers["Location"] = "%s/cdn/%s?signature=x" % (self.base("storage"), sha256(data))
            return self.reply(302, b"", headers)
        headers["ETag"] = '"%s"' % git_sha1(data)
        self.send_data(data, headers)

    def entry_not_found(self, sha):
        self.reply_json(404, {"error": "Entry not found"},
                        {"X-Error-Code": "EntryNotFound",
                         "X-Error-Message": "Entry not found", "X-Repo-Commit": sha})

    def cdn(self, oid):
        data = STATE["lfs"].get(oid)
        if data is None:
            for repo in STATE["repos"].values():
                for files in repo.commits.values():
                    for d in files.values():
                        if sha256(d) == oid:
                            data = d
        if data is None:
            return self.reply(404, "no such object")
        self.send_data(data, {"ETag": '"%s"' % oid})

    # ---- the JSON API ------------------------------------------------------------------

    def api(self, segs, raw):
        if segs[2] == "repos" and len(segs) > 3 and segs[3] == "create":
            return self.create_repo()
        kind = {"models": "model", "datasets": "dataset", "spaces": "space"}.get(segs[2])
        if kind is None:
            return self.reply(404, "no such api")
        rest = segs[3:]
        if len(rest) >= 2 and (kind, "/".join(rest[:2])) in STATE["repos"]:
            repo_id, rest = "/".join(rest[:2]), rest[2:]
        elif rest and (kind, rest[0]) in STATE["repos"]:
            repo_id, rest = rest[0], rest[1:]
        else:
            repo_id, rest = "/".join(rest[:2]), rest[2:]
        repo = STATE["repos"].get((kind, repo_id))
        op = rest[0] if rest else ""
        if op in ("preupload", "commit", "tag"):
            if not self.can_write(repo):
                return
            rev = rest[1] if len(rest) > 1 else "main"
            return {"preupload": self.preupload, "commit": self.commit,
                    "tag": self.tag}[op](repo, rev)
        if not self.can_read(repo, kind, repo_id):
            return
        if op == "" or op == "revision":
            rev = rest[1] if op == "revision" and len(rest) > 1 else "main"
            sha = repo.resolve(rev)
            if sha is None:
                return self.hub_error(404, "RevisionNotFound", "Invalid rev id: %s" % rev)
            return self.reply_json(200, {
                "id": repo.id, "sha": sha, "private": repo.private,
                "siblings": [{"rfilename": p} for p in sorted(repo.commits[sha])]})
        if op == "refs":
            def refs(d, prefix):
                return [{"name": k, "ref": prefix + k, "targetCommit": v}
                        for k, v in sorted(d.items())]
            return self.reply_json(200, {"branches": refs(repo.branches, "refs/heads/"),
                                         "tags": refs(repo.tags, "refs/tags/"), "converts": []})
        if op == "tree" and len(rest) > 1:
            return self.tree(repo, rest[1], "/".join(rest[2:]))
        self.reply(404, "no such api")

    def tree(self, repo, rev, sub):
        sha = repo.resolve(rev)
        if sha is None:
            return self.hub_error(404, "RevisionNotFound", "Invalid rev id: %s" % rev)
        files = repo.commits[sha]
        entries, dirs = [], set()
        for path in sorted(files):
            parts = path.split("/")
            for k in range(1, len(parts)):
                dirs.add("/".join(parts[:k]))
        for d in sorted(dirs):
            entries.append({"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(),
                            "size": 0, "path": d})
        for path in sorted(files):
            data = files[path]
            if repo.is_lfs(sha, path, data):
                ptr = pointer_text(data)
                entries.append({"type": "file", "oid": git_sha1(ptr), "size": len(data),
                                "path": path, "lfs": {"oid": sha256(data), "size": len(data),
                                                      "pointerSize": len(ptr)}})
            else:
                entries.append({"type": "file", "oid": git_sha1(data), "size": len(data),
                                "path": path})
        if sub:
            entries = [e for e in entries if e["path"].startswith(sub + "/")]
        entries.sort(key=lambda e: e["path"])
        size = int(STATE["config"].get("tree_page_size", 100))
        cursor = int(self.query.get("cursor", ["0"])[0])
        page = entries[cursor:cursor + size]
        headers = {}
        if cursor + size < len(entries):
            q = {k: v[0] for k, v in self.query.items()}
            q["cursor"] = str(cursor + size)
            path = urllib.parse.urlsplit(self.path).path
            headers["Link"] = '<%s%s?%s>; rel="next"' % (self.base(), path,
                                                        urllib.parse.urlencode(q))
        self.reply_json(200, page, headers)

    # ---- pushing -----------------------------------------------------------------------

    def create_repo(self):
        if not self.token_state():
            return self.hub_error(401, None, "You must be authenticated to create a repository")
        req = json.loads(self.body)
        kind = req.get("type") or "model"
        repo_id = req["name"] if not req.get("organization") else \
            "%s/%s" % (req["organization"], req["name"])
        if (kind, repo_id) in STATE["repos"]:
            return self.reply_json(409, {"error": "You already created this %s repo" % kind,
                                         "url": self.repo_page(kind, repo_id)})
        repo = Repo(kind, repo_id, private=req.get("visibility") == "private"
                    or req.get("private") is True)
        # a new Hub repository starts with one commit holding .gitattributes
        sha = hashlib.sha1(b"initial " + repo_id.encode()).hexdigest()
        repo.commits[sha] = {".gitattributes": b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n"}
        repo.branches["main"] = sha
        STATE["repos"][(kind, repo_id)] = repo
        self.reply_json(200, {"url": self.repo_page(kind, repo_id), "name": repo_id})

    def repo_page(self, kind, repo_id):
        prefix = {"model": "", "dataset": "datasets/", "space": "spaces/"}[kind]
        return "%s/%s%s" % (self.base(), prefix, repo_id)

    def preupload(self, repo, rev):
        req = json.loads(self.body)
        head = repo.resolve(rev)
        files = repo.commits.get(head, {}) if head else {}
        out = []
        for f in req["files"]:
            base64.b64decode(f["sample"], validate=True)  # must be valid base64
            lfs = any(fnmatch.fnmatchcase(f["path"], p)
                      for p in STATE["config"].get("lfs_patterns", [])) or \
                f["size"] >= STATE["config"].get("lfs_min_size", 1 << 62)
            old = files.get(f["path"])
            oid = None
            if old is not None:
                oid = sha256(old) if repo.is_lfs(head, f["path"], old) else git_sha1(old)
            out.append({"path": f["path"], "uploadMode": "lfs" if lfs else "regular",
                        "shouldIgnore": False, "oid": oid})
        self.reply_json(200, {"files": out, "commitOid": head})

    def lfs_batch(self, path):
        prefix = path[1:-len(".git/info/lfs/objects/batch")]
        kind = "model"
        for k, p in (("dataset", "datasets/"), ("space", "spaces/")):
            if prefix.startswith(p):
                kind, prefix = k, prefix[len(p):]
        repo = STATE["repos"].get((kind, prefix))
        if not self.can_write(repo):
            return
        req = json.loads(self.body)
        chunk = int(STATE["config"].get("multipart_chunk", 0))
        objects = []
        for o in req["objects"]:
            oid, size = o["oid"], o["size"]
            if oid in STATE["lfs"] and len(STATE["lfs"][oid]) == size:
                objects.append({"oid": oid, "size": size})
                continue
            store = self.base("storage")
            actions = {}
            if chunk and size > chunk:
                n = (size + chunk - 1) // chunk
                header = {"chunk_size": str(chunk)}
                for i in range(1, n + 1):
                    header[str(i)] = "%s/_lfs/part/%s/%d" % (store, oid, i)
                actions["upload"] = {"href": "%s/_lfs/complete/%s" % (store, oid),
                                     "header": header}
            else:
                actions["upload"] = {"href": "%s/_lfs/upload/%s" % (store, oid)}
            if STATE["config"].get("verify", True):
                actions["verify"] = {"href": "%s/_lfs/verify/%s" % (self.base(), oid)}
            objects.append({"oid": oid, "size": size, "authenticated": True,
                            "actions": actions})
        self.reply_json(200, {"transfer": "multipart" if chunk else "basic",
                              "objects": objects}, content_type="application/vnd.git-lfs+json")

    def lfs_storage(self, rest):
        op = rest[0] if rest else ""
        if op == "upload" and self.command == "PUT":
            oid = rest[1]
            if sha256(self.body) != oid:
                return self.reply(400, "sha256 of the body is not %s" % oid)
            STATE["lfs"][oid] = self.body
            return self.reply(200, b"", {"ETag": '"%s"' % hashlib.md5(self.body).hexdigest()})
        if op == "part" and self.command == "PUT":
            oid, n = rest[1], int(rest[2])
            STATE["parts"].setdefault(oid, {})[n] = self.body
            return self.reply(200, b"", {"ETag": '"%s"' % hashlib.md5(self.body).hexdigest()})
        if op == "complete" and self.command == "POST":
            oid = rest[1]
            req = json.loads(self.body)
            parts = STATE["parts"].get(oid, {})
            data = b""
            for k, p in enumerate(req["parts"]):
                if p["partNumber"] != k + 1 or p["partNumber"] not in parts:
                    return self.reply(400, "part %r missing or out of order" % (p,))
                blob = parts[p["partNumber"]]
                if p["etag"] != '"%s"' % hashlib.md5(blob).hexdigest():
                    return self.reply(400, "wrong etag for part %d" % p["partNumber"])
                data += blob
            if sha256(data) != oid or req.get("oid") != oid:
                return self.reply(400, "assembled parts do not hash to %s" % oid)
            STATE["lfs"][oid] = data
            return self.reply_json(200, {})
        if op == "verify" and self.command == "POST":
            req = json.loads(self.body)
            oid = rest[1]
            stored = STATE["lfs"].get(oid)
            if stored is None or len(stored) != req.get("size") or req.get("oid") != oid:
                return self.reply(404, "object %s not stored with that size" % oid)
            return self.reply_json(200, {})
        self.reply(404, "no such storage operation")

    def commit(self, repo, rev):
        if self.headers.get("Content-Type") != "application/x-ndjson":
            return self.reply(400, "commit payload must be application/x-ndjson")
        lines = [json.loads(l) for l in self.body.decode().split("\n") if l.strip()]
        if not lines or lines[0].get("key") != "header" or \
                "summary" not in lines[0].get("value", {}):
            return self.reply(400, "the first line must be the header with a summary")
        header = lines[0]["value"]
        head = repo.resolve(rev)
        if header.get("parentCommit") and header["parentCommit"] != head:
            return self.reply(412, "branch moved")
        files = dict(repo.commits.get(head, {})) if head else {}
        lfs_paths = set(repo.lfs_paths.get(head, ())) if head else set()
        for line in lines[1:]:
            v = line.get("value", {})
            if line.get("key") == "file":
                if v.get("encoding") != "base64":
                    return self.reply(400, "file entries must be base64")
                files[v["path"]] = base64.b64decode(v["content"], validate=True)
                lfs_paths.discard(v["path"])
            elif line.get("key") == "lfsFile":
                stored = STATE["lfs"].get(v.get("oid"))
                if v.get("algo") != "sha256" or stored is None or len(stored) != v.get("size"):
                    return self.reply(400, "LFS object %s of %s was not uploaded"
                                      % (v.get("oid"), v.get("path")))
                files[v["path"]] = stored
                lfs_paths.add(v["path"])
            elif line.get("key") in ("deletedFile", "deletedFolder"):
                files.pop(v["path"], None)
            else:
                return self.reply(400, "unknown key %r" % line.get("key"))
        sha = hashlib.sha1((head or "").encode() + self.body).hexdigest()
        repo.commits[sha] = files
        repo.lfs_paths[sha] = lfs_paths
        repo.branches[rev] = sha
        self.reply_json(200, {"commitUrl": "%s/commit/%s" % (self.repo_page(repo.kind, repo.id),
                                                               sha),
                              "commitOid": sha, "success": True})

    def tag(self, repo, rev):
        req = json.loads(self.body)
        sha = repo.resolve(rev)
        if sha is None:
            return self.hub_error(404, "RevisionNotFound", "Invalid rev id: %s" % rev)
        if req["tag"] in repo.tags:
            return self.reply_json(409, {"error": "Tag %s already exists" % req["tag"]})
        repo.tags[req["tag"]] = sha
        self.reply_json(200, {})


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    args = ap.parse_args()
    load_config(args.config)
    STATE["log"] = args.log
    open(args.log, "w").close()
    servers = []
    for name in ("hub", "storage"):
        s = Server(("127.0.0.1", 0), HubHandler)
        s.name = name
        servers.append(s)
    STATE["ports"] = [s.server_address[1] for s in servers]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d\n" % tuple(STATE["ports"]))
    os.replace(tmp, args.port_file)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    parent = os.getppid()
    # a test that crashed cannot stop us: leave with it
    while not stop.wait(0.2) and os.getppid() == parent:
        pass
    for s in servers:
        s.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

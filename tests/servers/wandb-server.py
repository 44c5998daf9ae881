#!/usr/bin/env python3
"""A stand-in for the Weights & Biases API on 127.0.0.1, for robotrain's tests (standard library only).

It implements what robotrain's client uses (http.md part B): POST /graphql (mutation upsertBucket,
query viewer) and POST /files/<entity>/<project>/<run>/file_stream with file_stream's offset rules
(history lines are stored by line number; a chunk at an offset already stored replaces those lines
and is counted as an overwrite; a chunk beyond the end is refused and counted as a gap).

Every request is appended to --record as one JSON line:
    {"time", "method", "path", "auth", "user_agent", "content_type", "body", "status"}
where body is the parsed JSON (or the text when it is not JSON) and status is the answer's HTTP
status, or "dropped" when the connection was closed without an answer (the server was "down").
The runs are kept in --state (rewritten after every change, read back at start so that a restarted
server remembers them):
    {"runs": {"<entity>/<project>/<name>": {"storage_id", "name", "project", "entity",
      "displayName", "notes", "config", "tags", "jobType", "host", "jobProgram", "history": [...],
      "summary", "complete", "exitcode", "upserts", "lines_received", "overwrites", "gaps",
      "heartbeats", "after_complete"}}}

Switches (command line), also read at any time from the JSON object in --control (rewrite the
file to change them; the keys are the same, with '_' for '-'):
    --api-key KEY        requests must carry HTTP Basic api:KEY, else 401
    --entity NAME        the key's default entity (default: default-ent)
    --status CODE        answer every request with CODE (e.g. 401, 503)
    --delay SECONDS      wait this long before answering each request
    --down-for SECONDS   refuse connections for this long after start, then serve
    control "down": true refuses connections (and drops requests on open connections) until false
    control "stopped": true answers file_stream with {"stopped": true}
    control "graphql_error": "text" answers GraphQL with HTTP 200 and {"errors": [{"message": text}]}
    control "lose_answers": N applies the first N file_stream requests that carry history lines
                         (counted since start) but closes the connection instead of answering,
                         as when an answer is lost on the way back (recorded with status "lost")
    control "upload_status": CODE answers every upload (PUT /storage/...) with CODE

Artifacts (the W&B SDK's artifact saver): GraphQL createArtifact, createArtifactManifest,
updateArtifactManifest, createArtifactFiles and commitArtifact, with every variable checked, and
PUT /storage/file/<token> and /storage/manifest/<token>, the signed upload URLs they hand out:
an upload must carry the Content-MD5 the URL was made for, no Authorization, and bytes of that
MD5. commitArtifact checks that the manifest was uploaded with the digest updateArtifactManifest
gave, that its contents give the artifact digest of createArtifact (hex MD5 of
"wandb-artifact-manifest-v1\n" + "name:digest\n" by name), and that every file was uploaded with
its digest and size. State: "artifacts": {"<id>": {"name", "type", "entity", "project", "run",
"digest", "aliases", "state" (PENDING, COMMITTED), "version" ("v0", ...), "manifest" (the uploaded
JSON), "files": {name: {"md5", "size"}}, "requested_aliases"}}.

The port (0: a free one) is written to --port-file once it is known.
"""

import argparse
import base64
import hashlib
import json
import os
import re
import select
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler


class App:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.control = {}
        self.control_stamp = None
        self.state = {"runs": {}}
        if os.path.exists(args.state):
            with open(args.state) as f:
                self.state = json.load(f)
        for key in ("artifacts", "manifests", "uploads"):
            self.state.setdefault(key, {})
        self.down_until = time.monotonic() + args.down_for if args.down_for else 0.0
        self.answers_lost = 0

    # ---- switches
    def refresh_control(self):
        if not self.args.control:
            return
        try:
            st = os.stat(self.args.control)
        except FileNotFoundError:
            return
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self.control_stamp:
            return
        try:
            with open(self.args.control) as f:
                control = json.load(f)
        except (OSError, ValueError):
            return  # being rewritten: read it next time
        self.control, self.control_stamp = control, stamp

    def setting(self, key):
        self.refresh_control()
        if key in self.control:
            return self.control[key]
        return getattr(self.args, key, None)

    def is_down(self):
        return time.monotonic() < self.down_until or bool(self.setting("down"))

    # ---- records and state
    def record(self, entry):
        with self.lock:
            with open(self.args.record, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def save_state(self):
        tmp = self.args.state + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.state, f, indent=1)
        os.replace(tmp, self.args.state)

    # ---- endpoints
    def graphql(self, body, host="127.0.0.1"):
        error = self.setting("graphql_error")
        if error:
            return 200, {"errors": [{"message": error}]}
        if not isinstance(body, dict):
            return 400, {"errors": [{"message": "the body is not a JSON object"}]}
        query = body.get("query") or ""
        variables = body.get("variables") or {}
        if "upsertBucket" in query:
            return self.upsert(variables)
        for op in ("createArtifactManifest", "updateArtifactManifest", "createArtifactFiles", "commitArtifact",
                   "createArtifact"):
            if re.search(r"\b%s\s*\(" % op, query):
                with self.lock:
                    try:
                        answer = getattr(self, "op_" + op)(variables, query, host)
                    except Refused as e:
                        return 200, {"errors": [{"message": "%s: %s" % (op, e)}]}
                    self.save_state()
                return 200, {"data": {op: answer}}
        if re.search(r"\bviewer\b", query):
            entity = self.args.entity
            return 200, {"data": {"viewer": {"id": "VXNlcjox", "entity": entity, "username": entity,
                                             "email": entity + "@example.com"}}}
        return 200, {"errors": [{"message": "unknown operation"}]}

    def upsert(self, v):
        name = v.get("name")
        if not name:
            return 200, {"errors": [{"message": "upsertBucket needs a name"}]}
        project = v.get("project") or "uncategorized"
        entity = v.get("entity") or self.args.entity
        key = "%s/%s/%s" % (entity, project, name)
        with self.lock:
            runs = self.state["runs"]
            inserted = key not in runs
            if inserted:
                storage = base64.b64encode(("Run:v1:%s:%s:%s" % (name, project, entity)).encode()).decode()
                runs[key] = {"storage_id": storage, "name": name, "project": project, "entity": entity,
                             "displayName": None, "notes": None, "config": None, "tags": [],
                             "jobType": None, "host": None, "jobProgram": None, "history": [],
                             "summary": None, "complete": False, "exitcode": None, "upserts": 0,
                             "lines_received": 0, "overwrites": 0, "gaps": 0, "heartbeats": 0,
                             "after_complete": 0}
            run = runs[key]
            if v.get("id") and v["id"] != run["storage_id"]:
                return 200, {"errors": [{"message": "id %s is not the storage id of run %s" % (v["id"], key)}]}
            for field in ("displayName", "notes", "config", "tags", "jobType", "host", "jobProgram"):
                if field in v:
                    run[field] = v[field]
            run["upserts"] += 1
            run["complete"] = False
            self.save_state()
            bucket = {"id": run["storage_id"], "name": name, "displayName": run["displayName"],
                      "description": run["notes"], "config": run["config"], "sweepName": None,
                      "project": {"id": "UHJvamVjdDox", "name": project,
                                  "entity": {"id": "RW50aXR5OjE=", "name": entity}},
                      "historyLineCount": len(run["history"])}
        return 200, {"data": {"upsertBucket": {"bucket": bucket, "inserted": inserted}}}

    # ---- artifacts
    def op_createArtifact(self, v, query, host):
        if "digestAlgorithm: MANIFEST_MD5" not in query:
            raise Refused("the digest algorithm must be MANIFEST_MD5")
        for key in ("artifactTypeName", "entityName", "projectName", "digest", "clientID", "sequenceClientID"):
            need_string(v, key)
        names = v.get("artifactCollectionNames")
        if not isinstance(names, list) or len(names) != 1 or not isinstance(names[0], str) or not names[0]:
            raise Refused("artifactCollectionNames must name one collection, not %r" % (names,))
        name = names[0]
        if re.search(r"[:/]", name) or len(name) > 128:
            raise Refused("artifact name %r holds ':' or '/' or is too long" % name)
        if not re.fullmatch(r"[0-9a-f]{32}", v["digest"]):
            raise Refused("digest %r is not a hex MD5" % v["digest"])
        run_key = "%s/%s/%s" % (v["entityName"], v["projectName"], v.get("runName"))
        if run_key not in self.state["runs"]:
            raise Refused("run %s does not exist" % run_key)
        aliases = v.get("aliases") or []
        for a in aliases:
            if not isinstance(a, dict) or a.get("artifactCollectionName") != name or not a.get("alias"):
                raise Refused("alias %r is not {artifactCollectionName: %s, alias}" % (a, name))
        same = [a for a in self.state["artifacts"].values()
                if (a["entity"], a["project"], a["name"]) == (v["entityName"], v["projectName"], name)]
        for a in same:
            if a["digest"] == v["digest"] and a["state"] == "COMMITTED":
                return {"artifact": self.artifact_answer(a)}
        art_id = base64.b64encode(("Artifact:%d" % (len(self.state["artifacts"]) + 1)).encode()).decode()
        art = {"id": art_id, "name": name, "type": v["artifactTypeName"], "entity": v["entityName"],
               "project": v["projectName"], "run": v.get("runName"), "digest": v["digest"],
               "requested_aliases": [a["alias"] for a in aliases], "aliases": [], "state": "PENDING",
               "version": None, "manifest": None, "manifest_id": None, "files": {},
               "clientID": v["clientID"], "sequenceClientID": v["sequenceClientID"]}
        self.state["artifacts"][art_id] = art
        return {"artifact": self.artifact_answer(art)}

    def artifact_answer(self, art):
        committed = [a for a in self.state["artifacts"].values()
                     if (a["entity"], a["project"], a["name"]) == (art["entity"], art["project"], art["name"])
                     and a["state"] == "COMMITTED"]
        latest = committed[-1] if committed else None
        return {"id": art["id"], "digest": art["digest"], "state": art["state"],
                "aliases": [{"artifactCollectionName": art["name"], "alias": a} for a in art["aliases"]],
                "artifactSequence": {"id": "seq-" + art["name"], "latestArtifact": latest and {
                    "id": latest["id"], "versionIndex": int(latest["version"][1:])}}}

    def artifact(self, art_id):
        art = self.state["artifacts"].get(art_id)
        if art is None:
            raise Refused("no artifact %r" % (art_id,))
        return art

    def manifest_file(self, mid, art, include, host, digest):
        f = {"id": "file-" + mid, "name": "wandb_manifest.json", "displayName": "wandb_manifest.json"}
        if include:
            token = "m" + mid
            self.state["uploads"][token] = {"artifact": art["id"], "name": "wandb_manifest.json",
                                            "md5": digest, "manifest": True}
            f["uploadUrl"] = "http://%s/storage/manifest/%s?X-Signature=sig" % (host, token)
            f["uploadHeaders"] = ["Content-MD5:" + digest]
        return f

    def op_createArtifactManifest(self, v, query, host):
        for key in ("name", "artifactID", "entityName", "projectName", "runName"):
            need_string(v, key)
        if v["name"] != "wandb_manifest.json":
            raise Refused("a full manifest is named wandb_manifest.json, not %r" % v["name"])
        if not isinstance(v.get("digest"), str) or not isinstance(v.get("includeUpload"), bool):
            raise Refused("digest (a string) and includeUpload (a boolean) are needed")
        art = self.artifact(v["artifactID"])
        if (art["entity"], art["project"], art["run"]) != (v["entityName"], v["projectName"], v["runName"]):
            raise Refused("the artifact belongs to %s/%s/%s" % (art["entity"], art["project"], art["run"]))
        if art["state"] != "PENDING":
            raise Refused("artifact %s is %s" % (art["id"], art["state"]))
        mid = "manifest-%d" % (len(self.state["manifests"]) + 1)
        self.state["manifests"][mid] = {"artifact": art["id"], "digest": v["digest"]}
        art["manifest_id"] = mid
        return {"artifactManifest": {"id": mid, "file": self.manifest_file(mid, art, v["includeUpload"], host,
                                                                           v["digest"])}}

    def op_updateArtifactManifest(self, v, query, host):
        need_string(v, "artifactManifestID")
        m = self.state["manifests"].get(v["artifactManifestID"])
        if m is None:
            raise Refused("no manifest %r" % v["artifactManifestID"])
        digest = v.get("digest")
        if not isinstance(digest, str) or not is_b64_md5(digest):
            raise Refused("digest %r is not a base64 MD5" % (digest,))
        if not isinstance(v.get("includeUpload"), bool):
            raise Refused("includeUpload (a boolean) is needed")
        m["digest"] = digest
        art = self.artifact(m["artifact"])
        return {"artifactManifest": {"id": v["artifactManifestID"],
                                     "file": self.manifest_file(v["artifactManifestID"], art, v["includeUpload"],
                                                                host, digest)}}

    def op_createArtifactFiles(self, v, query, host):
        if v.get("storageLayout") not in ("V1", "V2"):
            raise Refused("storageLayout %r is not V1 or V2" % (v.get("storageLayout"),))
        files = v.get("artifactFiles")
        if not isinstance(files, list) or not files:
            raise Refused("artifactFiles must be a list of files")
        edges = []
        for spec in files:
            if not isinstance(spec, dict):
                raise Refused("a file spec is not an object")
            for key in ("artifactID", "name", "md5", "artifactManifestID"):
                need_string(spec, key)
            art = self.artifact(spec["artifactID"])
            if art["manifest_id"] != spec["artifactManifestID"]:
                raise Refused("manifest %s is not the one of artifact %s" % (spec["artifactManifestID"], art["id"]))
            if not is_b64_md5(spec["md5"]):
                raise Refused("md5 %r of %s is not a base64 MD5" % (spec["md5"], spec["name"]))
            token = "f%d" % (len(self.state["uploads"]) + 1)
            self.state["uploads"][token] = {"artifact": art["id"], "name": spec["name"], "md5": spec["md5"],
                                            "manifest": False}
            edges.append({"node": {"id": "file-" + token, "name": spec["name"], "displayName": spec["name"],
                                   "uploadUrl": "http://%s/storage/file/%s?X-Signature=sig" % (host, token),
                                   "uploadHeaders": ["Content-MD5:" + spec["md5"]],
                                   "artifact": {"id": art["id"]}}})
        return {"files": {"edges": edges}}

    def op_commitArtifact(self, v, query, host):
        need_string(v, "artifactID")
        art = self.artifact(v["artifactID"])
        if art["state"] != "PENDING":
            raise Refused("artifact %s is %s" % (art["id"], art["state"]))
        manifest = art["manifest"]
        if manifest is None:
            raise Refused("the manifest of artifact %s was not uploaded" % art["id"])
        if manifest.get("version") != 1 or manifest.get("storagePolicy") != "wandb-storage-policy-v1":
            raise Refused("the manifest is not a version 1 wandb-storage-policy-v1 manifest")
        contents = manifest.get("contents")
        if not isinstance(contents, dict) or not contents:
            raise Refused("the manifest lists no files")
        h = hashlib.md5(b"wandb-artifact-manifest-v1\n")
        for name in sorted(contents):
            h.update(("%s:%s\n" % (name, contents[name].get("digest"))).encode())
        if h.hexdigest() != art["digest"]:
            raise Refused("the manifest's digest %s is not the artifact's %s" % (h.hexdigest(), art["digest"]))
        for name, entry in contents.items():
            got = art["files"].get(name)
            if got is None or got["md5"] != entry.get("digest") or got["size"] != entry.get("size"):
                raise Refused("file %s: uploaded %r, manifest %r" % (name, got, entry))
        same = [a for a in self.state["artifacts"].values()
                if (a["entity"], a["project"], a["name"]) == (art["entity"], art["project"], art["name"])
                and a["state"] == "COMMITTED"]
        art["version"] = "v%d" % len(same)
        for a in same:
            a["aliases"] = [x for x in a["aliases"] if x not in art["requested_aliases"]]
        art["aliases"] = [art["version"]] + [x for x in art["requested_aliases"] if x != art["version"]]
        art["state"] = "COMMITTED"
        return {"artifact": {"id": art["id"], "digest": art["digest"]}}

    def storage_put(self, kind, token, headers, raw):
        forced = self.setting("upload_status")
        if forced:
            return int(forced), {"error": "forced upload status %s" % forced}
        with self.lock:
            up = self.state["uploads"].get(token)
            if up is None or up["manifest"] != (kind == "manifest"):
                return 404, {"error": "no upload %s/%s" % (kind, token)}
            if headers.get("Authorization"):
                return 400, {"error": "a signed upload URL takes no Authorization header"}
            if headers.get("Content-MD5") != up["md5"]:
                return 400, {"error": "Content-MD5 %r is not the %r the URL was signed for"
                             % (headers.get("Content-MD5"), up["md5"])}
            got = base64.b64encode(hashlib.md5(raw).digest()).decode()
            if got != up["md5"]:
                return 400, {"error": "the body's MD5 %s is not %s" % (got, up["md5"])}
            art = self.state["artifacts"][up["artifact"]]
            if up["manifest"]:
                try:
                    art["manifest"] = json.loads(raw)
                except ValueError:
                    return 400, {"error": "the manifest is not JSON"}
            else:
                art["files"][up["name"]] = {"md5": got, "size": len(raw)}
            self.save_state()
        return 200, {}

    def file_stream(self, entity, project, name, body):
        key = "%s/%s/%s" % (entity, project, name)
        with self.lock:
            run = self.state["runs"].get(key)
            if run is None:
                return 404, {"error": "run %s not found" % key}
            if not isinstance(body, dict):
                return 400, {"error": "the body is not a JSON object"}
            if run["complete"]:
                run["after_complete"] += 1
            files = body.get("files") or {}
            if not files and "complete" not in body:
                run["heartbeats"] += 1
            hist = files.get("wandb-history.jsonl")
            if hist is not None:
                offset, content = hist.get("offset"), hist.get("content")
                if not isinstance(offset, int) or not isinstance(content, list):
                    return 400, {"error": "history needs an integer offset and a content list"}
                history = run["history"]
                if offset > len(history):
                    run["gaps"] += 1
                    self.save_state()
                    return 400, {"error": "offset %d is beyond the %d stored lines" % (offset, len(history))}
                for i, line in enumerate(content):
                    try:
                        if not isinstance(json.loads(line), dict):
                            raise ValueError
                    except (TypeError, ValueError):
                        return 400, {"error": "history line %d is not a JSON object" % (offset + i)}
                for i, line in enumerate(content):
                    if offset + i < len(history):
                        history[offset + i] = line
                        run["overwrites"] += 1
                    else:
                        history.append(line)
                    run["lines_received"] += 1
            summary = files.get("wandb-summary.json")
            if summary is not None and summary.get("content"):
                run["summary"] = summary["content"][-1]
            if body.get("complete"):
                run["complete"] = True
                run["exitcode"] = body.get("exitcode")
            self.save_state()
            if hist is not None and self.answers_lost < int(self.setting("lose_answers") or 0):
                self.answers_lost += 1
                return "lost", None
        return 200, {"exitcode": None, "limits": {}, "stopped": bool(self.setting("stopped"))}


class Refused(Exception):
    """A GraphQL request the real server would refuse: answered in "errors"."""


def need_string(v, key):
    if not isinstance(v.get(key), str) or not v[key]:
        raise Refused("variable %s must be a non-empty string, not %r" % (key, v.get(key)))


def is_b64_md5(text):
    try:
        return len(base64.b64decode(text, validate=True)) == 16
    except ValueError:
        return False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10  # seconds an idle kept-alive connection stays open

    def log_message(self, format, *args):
        pass

    def do_POST(self):
        app = self.server.app
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        entry = {"time": time.time(), "method": "POST", "path": self.path,
                 "auth": self.headers.get("Authorization"), "user_agent": self.headers.get("User-Agent"),
                 "content_type": self.headers.get("Content-Type"), "body": body}
        delay = app.setting("delay")
        if delay:
            time.sleep(float(delay))
        if app.is_down():
            entry["status"] = "dropped"
            app.record(entry)
            self.close_connection = True
            return
        status, answer = self.route(app, body)
        entry["status"] = status
        app.record(entry)
        if status == "lost":
            self.close_connection = True
            return
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_PUT(self):
        app = self.server.app
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        entry = {"time": time.time(), "method": "PUT", "path": self.path.split("?")[0],
                 "auth": self.headers.get("Authorization"), "user_agent": self.headers.get("User-Agent"),
                 "content_type": self.headers.get("Content-Type"), "content_md5": self.headers.get("Content-MD5"),
                 "size": len(raw)}
        if app.is_down():
            entry["status"] = "dropped"
            app.record(entry)
            self.close_connection = True
            return
        m = re.fullmatch(r"/storage/(file|manifest)/([A-Za-z0-9-]+)", urllib.parse.urlsplit(self.path).path)
        if m:
            status, answer = app.storage_put(m.group(1), m.group(2), self.headers, raw)
        else:
            status, answer = 404, {"error": "no endpoint %s" % self.path}
        entry["status"] = status
        app.record(entry)
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def route(self, app, body):
        forced = app.setting("status")
        if forced:
            forced = int(forced)
            if forced in (401, 403):
                return forced, {"errors": [{"message": "user is not logged in"}]}
            return forced, {"error": "forced status %d" % forced}
        key = app.args.api_key
        if key:
            want = "Basic " + base64.b64encode(("api:" + key).encode()).decode()
            if self.headers.get("Authorization") != want:
                return 401, {"errors": [{"message": "user is not logged in"}]}
        path = urllib.parse.urlsplit(self.path).path
        if path == "/graphql":
            return app.graphql(body, self.headers.get("Host") or "127.0.0.1")
        m = re.fullmatch(r"/files/([^/]+)/([^/]+)/([^/]+)/file_stream", path)
        if m:
            entity, project, name = (urllib.parse.unquote(g) for g in m.groups())
            return app.file_stream(entity, project, name, body)
        return 404, {"error": "no endpoint %s" % path}


class Server:
    """Accepts connections itself (not socketserver) so that it can stop listening while "down"."""

    def __init__(self, app, port):
        self.app = app
        self.port = port
        self.sock = None

    def listen(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        self.port = s.getsockname()[1]
        self.sock = s

    def serve(self):
        parent = os.getppid()
        while os.getppid() == parent:  # the test that started us is gone: stop too
            if self.app.is_down():
                if self.sock:
                    self.sock.close()
                    self.sock = None
                time.sleep(0.02)
                continue
            if not self.sock:
                self.listen()
            ready, _, _ = select.select([self.sock], [], [], 0.05)
            if ready:
                conn, addr = self.sock.accept()
                threading.Thread(target=self.handle, args=(conn, addr), daemon=True).start()

    def handle(self, conn, addr):
        try:
            Handler(conn, addr, self)
        except (OSError, ValueError):
            pass
        finally:
            conn.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", required=True)
    p.add_argument("--record", required=True)
    p.add_argument("--state", required=True)
    p.add_argument("--control")
    p.add_argument("--api-key")
    p.add_argument("--entity", default="default-ent")
    p.add_argument("--status", type=int)
    p.add_argument("--delay", type=float)
    p.add_argument("--down-for", type=float)
    args = p.parse_args()

    app = App(args)
    server = Server(app, args.port)
    server.listen()  # learns the port; while down, the socket is closed and connections are refused
    if app.is_down():
        server.sock.close()
        server.sock = None
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % server.port)
    os.replace(tmp, args.port_file)
    try:
        server.serve()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A client of `redquorum serve` in Python's standard library alone, as
docs/serve.md shows one: run by crates/redquorum-cli/tests/serve.rs against
a service on real nodes. Usage: serve_client.py URL TOKEN NAME. Exits 0 when
every step answered as docs/serve.md says, 1 (saying which step) otherwise.
"""
import json
import sys
import threading
import urllib.error
import urllib.request

URL, TOKEN, NAME = sys.argv[1], sys.argv[2], sys.argv[3]


def call(path, body=None, token=TOKEN, method=None):
    """The status and JSON answer of POST (or GET without a body) `path`."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = "Bearer " + token
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(URL + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def expect(step, got, status, error=None):
    code, body = got
    if code != status or (error is not None and body.get("error") != error):
        print(f"{step}: expected {status} {error or ''}, got {code} {body}", file=sys.stderr)
        sys.exit(1)
    return body


lock = f"/v1/locks/{NAME}"
held = expect("lock", call(lock, {"ttl_ms": 30000}), 200)
if not (held["fence"] > 0 and 0 < held["expires_in_ms"] <= 30000):
    sys.exit(f"lock: unexpected answer {held}")
expect("lock while held", call(lock, {"ttl_ms": 30000}), 409, "contended")
expect("no token", call(lock, {"ttl_ms": 30000}, token=None), 401, "unauthorized")
expect("a wrong token", call(lock, {"ttl_ms": 30000}, token="nope"), 401, "unauthorized")
expect("a bad body", call(lock, {"ttl": 30000}), 400)
extended = expect("extend", call(lock + "/extend", {"lease": held["lease"], "ttl_ms": 60000}), 200)
inspected = expect("inspect", call(lock), 200)
if not (inspected["held"] and inspected["holders"] == 1):
    sys.exit(f"inspect: unexpected answer {inspected}")

# A waiter, granted by the release.
waited = {}
waiter = threading.Thread(
    target=lambda: waited.update(answer=call(lock, {"ttl_ms": 30000, "wait_ms": 20000}))
)
waiter.start()
expect("release", call(lock + "/release", {"lease": extended["lease"]}), 200)
waiter.join(timeout=60)
granted = expect("the waiter", waited.get("answer", (0, {})), 200)
expect("release again", call(lock + "/release", {"lease": extended["lease"]}), 410, "gone")
expect("the waiter's release", call(lock + "/release", {"lease": granted["lease"]}), 200)

# A session keeps its lock while keepalives come; deleting it releases it.
session = expect("session", call("/v1/sessions", {"ttl_ms": 30000}), 201)["session"]
expect("lock in the session", call(lock, {"ttl_ms": 1000, "session": session}), 200)
kept = expect("keepalive", call(f"/v1/sessions/{session}/keepalive", {}), 200)
if [(l["name"], l["held"]) for l in kept["locks"]] != [(NAME, True)]:
    sys.exit(f"keepalive: unexpected answer {kept}")
ended = expect("end the session", call(f"/v1/sessions/{session}", method="DELETE"), 200)
if ended["released"] != 1:
    sys.exit(f"end the session: unexpected answer {ended}")
expect("keepalive after the end", call(f"/v1/sessions/{session}/keepalive", {}), 404, "no_session")
relocked = expect("lock after the session", call(lock, {"ttl_ms": 30000}), 200)
expect("its release", call(lock + "/release", {"lease": relocked["lease"]}), 200)
print("serve_client.py: every step answered as documented")

"""Writes signed copies of one GitHub push delivery, one per line, as
`sha256=SIGNATURE BODY`, for the wrk script `push.lua`.

Every copy is the same push (compact JSON, padded in the head commit's
message to exactly SIZE bytes); with COUNT above 1 each names its own
repository, so that deliveries do not all queue for one repository's rows,
as GitHub's pushes come from many repositories. Each copy carries its
repository's own `html_url` and `node_id` (the latter in GitHub's older
form, base64 of `010:Repository{id}`, as the fixture's is): no two
repositories share them.

    python3 push_bodies.py FIXTURE SECRET COUNT SIZE OUT
"""

import base64
import hashlib
import hmac
import json
import sys


def body(template, number, count, size):
    push = json.loads(json.dumps(template))
    if count > 1:
        name = f"repo-{number:04d}"
        repo = push["repository"]
        repo["id"] = 200_000_000 + number
        repo["name"] = name
        repo["full_name"] = f"{repo['owner']['login']}/{name}"
        repo["html_url"] = f"https://github.com/{repo['full_name']}"
        repo["node_id"] = base64.b64encode(f"010:Repository{repo['id']}".encode()).decode()
    text = json.dumps(push, separators=(",", ":"))
    missing = size - len(text.encode())
    if missing < 2:
        sys.exit(f"push_bodies.py: the push is {len(text.encode())} bytes, over {size}")
    # "\n" in the JSON is 2 bytes; the rest pads the message to the size.
    push["head_commit"]["message"] += "\n" + "." * (missing - 2)
    data = json.dumps(push, separators=(",", ":")).encode()
    assert len(data) == size, len(data)
    return data


def main():
    fixture, secret, count, size, out = sys.argv[1:6]
    count, size = int(count), int(size)
    with open(fixture, encoding="utf-8") as f:
        template = json.load(f)
    with open(out, "wb") as f:
        for number in range(count):
            data = body(template, number, count, size)
            digest = hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()
            f.write(b"sha256=" + digest.encode() + b" " + data + b"\n")


if __name__ == "__main__":
    main()

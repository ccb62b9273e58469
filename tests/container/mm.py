#!/usr/bin/env python3
"""tests/container/mm.py: the container tier's Mattermost client: people post and react
through fake-mattermost's REST API v4 with their own tokens, as their clients would; what
the bot did is read from its test state (crates/fake-mattermost/src/main.rs). Runs inside
the container; MM is the fake's URL. USER is owner or stranger (the fake's default users).

  mm.py post USER MESSAGE [ROOT_ID]                USER posts (POST /api/v4/posts); prints
                                                   the post's id
  mm.py react USER POST_ID EMOJI                   USER reacts (POST /api/v4/reactions)
  mm.py live                                       exit 0 if gatewayd follows the WebSocket
  mm.py reply ROOT_ID TEXT                         exit 0 if a bot post in ROOT_ID's thread
                                                   contains TEXT; prints the bot's replies
  mm.py replies ROOT_ID                            prints how many bot posts are in the thread
  mm.py root-post TEXT [AFTER_ID]                  prints the id of the newest bot root post
                                                   (root_id "") containing TEXT, made after
                                                   post AFTER_ID if given; exit 1 if none
  mm.py message POST_ID                            prints a post's current text
"""

import json
import os
import sys
import urllib.request

MM = os.environ.get("MM", "http://127.0.0.1:8065")
BOT = os.environ.get("MM_BOT", "botkm8ecqs6ua9xrndy7w1ft5h")
CHANNEL = os.environ.get("MM_CHANNEL", "chan4mqx8ekdy1bwpu7s9ront3")
# fake-mattermost's default people: user id and personal access token.
USERS = {
    "owner": ("ownerkp1dx4oy7wqbsm3e9t6ua", "owner-token"),
    "stranger": ("strangerq8ek1ycmw4pxduob7t", "stranger-token"),
}


def call(method, path, body=None, token=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(MM + path, data=data, method=method)
    req.add_header("content-type", "application/json")
    if token:
        req.add_header("authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"null")


def state():
    return call("GET", "/fake/state")


def bot_posts(s):
    return [p for p in s["posts"] if p.get("user_id") == BOT]


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "post":
        _, token = USERS[args[0]]
        body = {"channel_id": CHANNEL, "message": args[1], "root_id": args[2] if len(args) > 2 else ""}
        print(call("POST", "/api/v4/posts", body, token)["id"])
    elif cmd == "react":
        user, token = USERS[args[0]]
        call("POST", "/api/v4/reactions", {"user_id": user, "post_id": args[1], "emoji_name": args[2]}, token)
    elif cmd == "live":
        s = state()
        print(f"connections {s['connections']}, live {s['live']}")
        return 0 if s["live"] >= 1 else 1
    elif cmd in ("reply", "replies"):
        thread = [p for p in bot_posts(state()) if p.get("root_id") == args[0]]
        if cmd == "replies":
            print(len(thread))
            return 0
        for p in thread:
            print(f"bot reply {p['id']}: {p['message']!r}")
        return 0 if any(args[1] in p["message"] for p in thread) else 1
    elif cmd == "root-post":
        posts = state()["posts"]
        if len(args) > 1:  # only posts made after AFTER_ID
            posts = posts[1 + next(i for i, p in enumerate(posts) if p["id"] == args[1]) :]
        roots = [p for p in bot_posts({"posts": posts}) if not p.get("root_id") and args[0] in p["message"]]
        if not roots:
            return 1
        print(roots[-1]["id"])
    elif cmd == "message":
        print(next(p["message"] for p in state()["posts"] if p["id"] == args[0]))
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

# (g) The Mattermost gateway: gatewayd follows a fake Mattermost (fake-mattermost, as a
# systemd service on the node) from boot. An owner's post is answered in its thread by the
# whole stack; a grant in `ask` mode becomes a root post that the owner approves with a +1
# reaction, and a stranger's reaction is refused and audited. The owner and the stranger post
# and react through the fake's REST API v4 with their own tokens, as their clients would.
{
  nodes.machine = {
    imports = [ ./lib/gateway-node.nix ];
  };

  testScript = ''
    import json
    import shlex

    OWNER = ("ownerkp1dx4oy7wqbsm3e9t6ua", "owner-token")
    STRANGER = ("strangerq8ek1ycmw4pxduob7t", "stranger-token")
    BOT = "botkm8ecqs6ua9xrndy7w1ft5h"
    CHANNEL = "chan4mqx8ekdy1bwpu7s9ront3"
    MM = "http://127.0.0.1:8065"
    AUDIT = "/var/lib/private/boxmaker/audit/*.jsonl"

    def fake(method, path, body=None, token=None):
        data = "" if body is None else "-H 'content-type: application/json' -d " + shlex.quote(json.dumps(body))
        auth = "" if token is None else f"-H 'authorization: Bearer {token}'"
        return json.loads(machine.succeed(f"curl -sf -X {method} {auth} {data} {MM}{path}") or "null")

    def post(user, message, root=""):
        body = {"channel_id": CHANNEL, "message": message, "root_id": root}
        return fake("POST", "/api/v4/posts", body, user[1])["id"]

    def react(user, post_id, emoji):
        fake("POST", "/api/v4/reactions", {"user_id": user[0], "post_id": post_id, "emoji_name": emoji}, user[1])

    def bot_posts(after=None):
        posts = fake("GET", "/fake/state")["posts"]
        if after:
            posts = posts[1 + [p["id"] for p in posts].index(after) :]
        return [p for p in posts if p["user_id"] == BOT]

    def replies(root):
        return [p for p in bot_posts() if p.get("root_id") == root]

    def wait_reply(root, text):
        retry(lambda _: any(text in p["message"] for p in replies(root)), timeout=120)
        print([p["message"] for p in replies(root)])

    machine.wait_for_unit("boxmaker-fake-llama-server.service")
    machine.wait_for_open_port(8080)
    machine.wait_for_unit("boxmaker-fake-mattermost.service")
    machine.wait_for_open_port(8065)

    with subtest("gatewayd runs from boot, ready, as its own DynamicUser"):
        machine.wait_for_unit("boxmaker-gatewayd.service")
        machine.succeed("systemctl show -p StatusText --value boxmaker-gatewayd | grep -q '^serving'")
        machine.succeed("systemctl show -p User --value boxmaker-gatewayd | grep -qx boxmaker-gatewayd")
        # Nothing has connected yet: the socket-activated roles still wait.
        machine.fail("systemctl is-active --quiet boxmaker-brokerd.service")
        machine.fail("systemctl is-active --quiet boxmaker-loopd.service")
        retry(lambda _: fake("GET", "/fake/state")["live"] >= 1, timeout=60)

    with subtest("gateway.sock's pair directory admits brokerd's group only"):
        machine.wait_for_unit("boxmaker-gatewayd.socket")
        machine.succeed("test \"$(stat -c '%a %U %G' /run/boxmaker/broker-gateway)\" = '750 root boxmaker-broker-gateway'")
        machine.succeed("test \"$(stat -c %a /run/boxmaker/broker-gateway/gateway.sock)\" = 660")
        machine.fail("runuser -u owner -- socat -u OPEN:/dev/null UNIX-CONNECT:/run/boxmaker/broker-gateway/gateway.sock")
        machine.succeed("systemctl show -p SupplementaryGroups --value boxmaker-brokerd | grep -q boxmaker-broker-gateway")

    with subtest("the token is a credential, and gatewayd may reach Mattermost's host only"):
        machine.succeed("test -s /run/credentials/boxmaker-gatewayd.service/mattermost-token")
        machine.fail("runuser -u owner -- cat /run/credentials/boxmaker-gatewayd.service/mattermost-token")
        machine.fail("grep -q bot-token /etc/boxmaker/config.toml")
        machine.succeed("systemctl show -p IPAddressAllow --value boxmaker-gatewayd | grep -q 127.0.0.0/8")

    with subtest("an owner's post is answered in its thread by the whole stack"):
        stranger_post = post(STRANGER, "what is on my todo list?")
        owner_post = post(OWNER, "what is on my todo list?")
        wait_reply(owner_post, "Your todo list says: buy milk.")
        machine.succeed("bxctl audit show | grep -q 'ALLOWED by grant notes-read'")

    with subtest("a stranger's post is not answered"):
        machine.succeed(f"journalctl -b -u boxmaker-gatewayd --no-pager | grep -q 'ignored a post from {STRANGER[0]}'")
        assert replies(stranger_post) == [], replies(stranger_post)

    with subtest("an ask grant's approval is a root post in the channel"):
        ask = post(OWNER, "list my notes")
        def approval_posts():
            return [p for p in bot_posts(after=ask) if not p.get("root_id") and "list_dir" in p["message"]]

        retry(lambda _: approval_posts() != [], timeout=60)
        approval_post = approval_posts()[-1]
        approval = machine.succeed(
            "runuser -u owner -- bxctl approvals | awk '/^approval /{print $2; exit}'"
        ).strip()
        assert approval and approval in approval_post["message"], (approval, approval_post)

    with subtest("a stranger's reaction is refused and audited"):
        react(STRANGER, approval_post["id"], "+1")
        machine.wait_until_succeeds(f"grep -h approval_refused {AUDIT} | grep -q not_owner")
        assert not any("todo.md" in p["message"] for p in replies(ask)), replies(ask)

    with subtest("the owner's +1 approves: the tool runs and the answer comes back"):
        react(OWNER, approval_post["id"], "+1")
        wait_reply(ask, "Your notes directory holds")
        machine.succeed(f"grep -h '\"approved\"' {AUDIT} | grep {OWNER[0]} | grep -q {approval_post['id']}")
        def shows_outcome(_):
            shown = [p for p in bot_posts() if p["id"] == approval_post["id"]][0]
            return "**Approved** by `" + OWNER[0] + "`." in shown["message"]

        retry(shows_outcome, timeout=30)
        machine.succeed("bxctl audit verify | grep -q 'audit chain good'")
  '';
}

#!/usr/bin/env bash
# tests/units/core.sh: part of the `units` gate step. What the builtins-only unit core
# (nix/units.nix) says about a change and about a configuration, evaluated with
# nix-instantiate (the NixOS module maps exactly these onto restartTriggers, reloadTriggers
# and warnings; nix/tests/grant-reload.nix proves the behaviour on a NixOS host):
#   - two configurations that differ in one grant: no role restarts, brokerd alone reloads;
#   - two that differ in one setting: every role that reads config.toml restarts;
#   - an `ask` grant with no gateway and nobody in the admin group is warned about, with the
#     fix; with the gateway, with an admin, or with no ask grant, nothing is said.
# Needs: nix-instantiate, python3.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# core ARGS: the core's triggers and warnings for these arguments (a Nix attribute set).
core() {
    nix-instantiate --eval --strict --json -E "
      let c = import ./nix/units.nix ($1);
      in { inherit (c) triggers warnings; }"
}

notes='notes-read = { tool = "read_file"; mode = "auto"; max_taint = "secret"; constraints.paths = [ "/srv/notes" ]; };'
ask='web-ask = { tool = "http_fetch"; mode = "ask"; max_taint = "private"; constraints.hosts = [ "en.wikipedia.org" ]; };'
gateway='gateway = { server = "https://chat.example.com"; owners = [ "8xk3w1mzqbfq5ybz6tn7yjqgxe" ];
    channel = "4yx1ub6ahjdcfnxcu6qsyyomqa"; tokenFile = "/run/agenix/mattermost-token"; };'

python3 - \
    "$(core "{ $gateway grants = { $notes }; }")" \
    "$(core "{ $gateway grants = { $notes $ask }; }")" \
    "$(core "{ $gateway grants = { $notes }; settings.loop.max_tool_calls = 3; }")" \
    "$(core "{ grants = { $notes $ask }; adminMembers = [ ]; }")" \
    "$(core "{ grants = { $notes $ask }; adminMembers = [ \"owner\" ]; }")" \
    "$(core "{ $gateway grants = { $notes $ask }; adminMembers = [ ]; }")" \
    "$(core "{ grants = { $notes $ask }; }")" \
    "$(core "{ grants = { $notes }; adminMembers = [ ]; }")" \
    <<'PY'
import json, sys

base, grant, setting, lonely, admin, gateway, unknown, no_ask = map(json.loads, sys.argv[1:])
roles = ["boxmaker-brokerd", "boxmaker-gatewayd", "boxmaker-inferproxy", "boxmaker-loopd"]
failed = []

def check(ok, what):
    print(("ok: " if ok else "FAILED: ") + what)
    if not ok:
        failed.append(what)

check(sorted(base["triggers"]["restart"]) == roles, f"every role restarts on config.toml ({roles})")
for role in roles:
    check(grant["triggers"]["restart"][role] == base["triggers"]["restart"][role],
          f"a grant change does not restart {role}")
check(grant["triggers"]["reload"]["boxmaker-brokerd"] != base["triggers"]["reload"]["boxmaker-brokerd"],
      "a grant change reloads brokerd")
check(sorted(grant["triggers"]["reload"]) == ["boxmaker-brokerd"], "brokerd alone reloads")
for role in roles:
    check(setting["triggers"]["restart"][role] != base["triggers"]["restart"][role],
          f"a setting change restarts {role}")
check(setting["triggers"]["reload"] == base["triggers"]["reload"], "a setting change reloads nothing more")

expected = (
    "boxmaker: the grants web-ask ask the owner, but nobody can answer: the gateway is off and no"
    " user is in the admin group boxmaker-admin, so every call they ask for waits until its"
    " approval expires. Add the owner to the group (users.users.<owner>.extraGroups ="
    ' [ "boxmaker-admin" ]), or enable services.boxmaker.gateway, or give these grants'
    ' mode = "auto" or "deny".'
)
check(lonely["warnings"] == [expected], f"an ask grant nobody can answer is warned about: {lonely['warnings']}")
check(admin["warnings"] == [], "not with a user in the admin group")
check(gateway["warnings"] == [], "not with the gateway")
check(unknown["warnings"] == [], "not when the admin group's members are unknown (the container tests)")
check(no_ask["warnings"] == [], "not without an ask grant")
sys.exit(1 if failed else 0)
PY

#!/usr/bin/env bash
# tests/units/flows.sh: part of the `units` gate step. What the NixOS module makes of the
# flows at build time (nix/flows.nix, builtins only), fed with what `brokerd --flows --json`
# prints for a real configuration and grant set, evaluated with nix-instantiate:
#   - every flow is a warning carrying brokerd's line; no assertion without denyFlows;
#   - a flow kind in denyFlows turns those flows into assertions, the rest stay warnings;
#   - a grant id in denyFlows turns the flows through that grant (source or sink) into
#     assertions;
#   - a name that is neither is an assertion of its own.
# The module's wiring (the derivation running brokerd, the import of its output) needs
# nixpkgs: nix/tests/*.nix evaluate it on a NixOS host.
# Needs: cargo, nix-instantiate, python3.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

cargo build -q --locked -p brokerd --bin brokerd
target=$(cargo metadata --format-version 1 --no-deps --locked --offline |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
dir=$(mktemp -d /tmp/boxmaker-units-flows.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/grants"
cat >"$dir/grants/notes-read.toml" <<'TOML'
tool = "read_file"
mode = "auto"
max_taint = "secret"
untrusted = false
[constraints]
paths = ["/home/owner/notes"]
TOML
cat >"$dir/grants/vault-read.toml" <<'TOML'
tool = "read_file"
mode = "auto"
max_taint = "secret"
result_class = "secret"
untrusted = false
[constraints]
paths = ["/home/owner/vault"]
TOML
cat >"$dir/grants/web.toml" <<'TOML'
tool = "http_fetch"
mode = "auto"
max_taint = "secret"
result_class = "public"
[constraints]
hosts = ["api.example.org"]
TOML
cat >"$dir/config.toml" <<TOML
home = "$dir/home"
grants = "$dir/grants"
[sockets]
loop_broker = "$dir/l"
admin_broker = "$dir/a"
[peers]
loopd = { uid = 1 }
admin = { uid = 2 }
infer = { uid = 3 }
TOML
"$target/debug/brokerd" --config "$dir/config.toml" --flows --json >"$dir/flows.json"

# module DENY: nix/flows.nix's warnings and assertions for this report.
module() {
    nix-instantiate --eval --strict --json -E "
      import ./nix/flows.nix {
        report = builtins.fromJSON (builtins.readFile $dir/flows.json);
        denyFlows = $1;
      }"
}

python3 - "$dir/flows.json" \
    "$(module '[ ]')" \
    "$(module '[ "secret_out" ]')" \
    "$(module '[ "notes-read" ]')" \
    "$(module '[ "web" ]')" \
    "$(module '[ "no-such-grant" ]')" \
    "$(module '[ "untrusted_write" ]')" \
    <<'PY'
import json, sys

report = json.load(open(sys.argv[1]))
none, secret, notes, web, unknown, writes = map(json.loads, sys.argv[2:])
failed = []

def check(ok, what):
    print(("ok: " if ok else "FAILED: ") + what)
    if not ok:
        failed.append(what)

texts = {f["severity"]: f["text"] for f in report["flows"]}
check(sorted(texts) == ["private_out", "secret_out"], f"brokerd reports one flow of each kind ({sorted(texts)})")
check(none["assertions"] == [], "no denyFlows: no assertion")
check(none["warnings"] == [f"boxmaker flow ({s}): {texts[s]}" for s in ["secret_out", "private_out"]],
      "no denyFlows: each flow a warning with brokerd's line")
check(secret["warnings"] == [f"boxmaker flow (private_out): {texts['private_out']}"],
      "denyFlows = [secret_out]: the private flow stays a warning")
check([a["message"] for a in secret["assertions"]]
      == [f"boxmaker flow (secret_out) denied by services.boxmaker.verify.denyFlows (secret_out): {texts['secret_out']}"]
      and not any(a["assertion"] for a in secret["assertions"]),
      "denyFlows = [secret_out]: the secret flow fails the build with its line")
check(len(notes["assertions"]) == 1 and "(notes-read)" in notes["assertions"][0]["message"]
      and texts["private_out"] in notes["assertions"][0]["message"],
      "denyFlows = [notes-read]: the flow from that source grant is an assertion")
check(len(web["assertions"]) == 2 and web["warnings"] == [],
      "denyFlows = [web]: both flows through that sink grant are assertions")
check(unknown["warnings"] == none["warnings"] and len(unknown["assertions"]) == 1
      and "names no-such-grant, which is neither a flow kind" in unknown["assertions"][0]["message"],
      "denyFlows naming nothing known is an assertion of its own")
check(writes == none, "denyFlows = [untrusted_write], a kind with no flow here: nothing denied, nothing unknown")
if failed:
    sys.exit(f"{len(failed)} check(s) failed")
PY

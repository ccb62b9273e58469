# tests/container/grant-paths.sh: scenario (i) of the container tier, sourced by inside.sh
# shellcheck shell=bash
# (its helpers come from lib.sh). Granted paths beyond /srv, through the real brokerd unit and
# real transient tool units (issue 10, point 1):
# - a grant under /home (tests/container/grants/home-notes-read.toml). brokerd's unit has
#   ProtectHome=yes unless a granted path is under /home, /root or /run/user; then nix/units.nix
#   gives it ProtectHome=tmpfs and the granted paths read-only (`grantPaths`, which run.sh
#   derives from the grants as nix/module.nix does), so it can resolve the call's path there.
#   /home/owner is 0700, as a real home is: brokerd's user could not even traverse it
#   without that view. The tool unit gets ProtectHome=tmpfs and the one file bound.
# - a grant whose path has a link in its own prefix (linked-notes-read.toml:
#   /srv/linked-notes -> /srv/real-notes). brokerd follows links above the granted root, binds
#   the real file at the path the call names (-/srv/real-notes/soup.md:/srv/linked-notes/soup.md,
#   seen on the system bus), and labels the result by every grant covering either path:
#   real-notes-list.toml labels /srv/real-notes secret, so the read comes back secret.
# - the same under /home (home-linked-read.toml: /home/owner/linked-notes -> /srv/real-notes):
#   in brokerd's view the link is a plain directory (systemd mounted its target there), so
#   brokerd names the bound file by inode under every granted path that is the same
#   directory; the read still comes back secret.
# A link below the granted directory is refused: scenario (h) shows it (binds.sh).

scenario "(i) granted paths beyond /srv: under a 0700 home (ProtectHome=tmpfs), and through a linked prefix"
chmod 0700 /home/owner
install -d -o owner -g owner -m 0755 /home/owner/notes
echo "water the ferns on friday" >/home/owner/notes/ferns.md
chown owner:owner /home/owner/notes/ferns.md
chmod 0644 /home/owner/notes/ferns.md
install -d -m 0755 /srv/real-notes
echo "soup: leeks, potatoes, salt" >/srv/real-notes/soup.md
chmod 0644 /srv/real-notes/soup.md
ln -s real-notes /srv/linked-notes
ln -s /srv/real-notes /home/owner/linked-notes
# brokerd's view of the granted paths is made when its unit starts (a missing path is left
# out), and these did not exist at its first start: the next connection starts it afresh.
systemctl stop boxmaker-brokerd.service
expect "control: /home/owner is 0700 owner, /srv/linked-notes a link to /srv/real-notes" \
    "test \"\$(stat -c '%a %U' /home/owner)\" = '700 owner' && test \"\$(readlink -f /srv/linked-notes)\" = /srv/real-notes"
expect "brokerd's unit: ProtectHome=tmpfs, the home grant's directory read-only (grantPaths)" \
    "test \"\$(systemctl show -p ProtectHome --value boxmaker-brokerd)\" = tmpfs && systemctl show -p BindReadOnlyPaths --value boxmaker-brokerd | tr ' ' '\\n' | grep -qxF -- -/home/owner/notes:/home/owner/notes:rbind"
note "brokerd's BindReadOnlyPaths=$(systemctl show -p BindReadOnlyPaths --value boxmaker-brokerd)"
# What each tool unit is given: brokerd's StartTransientUnit calls on the system bus, as
# "UNIT PROPERTY VALUE" lines (a bind as [-]SRC:DST, `-` when a missing source is skipped).
busctl monitor --json=short \
    --match "type='method_call',interface='org.freedesktop.systemd1.Manager',member='StartTransientUnit'" \
    >/tmp/grant-paths.bus 2>/tmp/grant-paths.bus.err &
monitor=$!
wait_for 10 "control: busctl monitors the system bus" "grep -q 'Monitoring bus message stream' /tmp/grant-paths.bus.err"
unit_properties() {
    python3 - /tmp/grant-paths.bus <<'PY'
import json, sys
for line in open(sys.argv[1]):
    data = json.loads(line).get("payload", {}).get("data", [])
    for name, value in data[2] if len(data) > 2 else []:
        if value["type"] == "a(ssbt)":
            for src, dst, ignore, _ in value["data"]:
                print(data[0], name, "%s%s:%s" % ("-" if ignore else "", src, dst))
        else:
            print(data[0], name, json.dumps(value["data"]))
PY
}

expect "a read_file under /home answers from the file, labelled private" \
    "owner bxctl chat -m 'when do the ferns get water?' | tee /tmp/ferns.out | grep -qE '\\[-> [0-9]+ bytes, private'"
sed 's/^/    | /' /tmp/ferns.out
expect "loopd's session log holds what the tool read under /home" \
    "grep -rqF 'water the ferns on friday' /var/lib/private/boxmaker/sessions"
expect "the decision is audited (ALLOWED by grant home-notes-read)" \
    "bxctl audit show | grep -q 'ALLOWED by grant home-notes-read'"
expect "in brokerd's namespace, /home holds the granted directories alone" \
    "test \"\$(\$(in_role brokerd) ls -A /home/owner | tr '\\n' ' ')\" = 'linked-notes notes '"
refuse "control: brokerd's user cannot read the note in the host's view (the 0700 home)" \
    "\$(as_role brokerd) cat /home/owner/notes/ferns.md"

expect "a read_file through the linked prefix answers, labelled secret by the real path's grant" \
    "owner bxctl chat -m 'what is my soup recipe?' | tee /tmp/soup.out | grep -qE '\\[-> [0-9]+ bytes, secret'"
sed 's/^/    | /' /tmp/soup.out
expect "loopd's session log holds what the tool read through the linked prefix" \
    "grep -rqF 'soup: leeks, potatoes, salt' /var/lib/private/boxmaker/sessions"
expect "the decision is audited (ALLOWED by grant linked-notes-read)" \
    "bxctl audit show | grep -q 'ALLOWED by grant linked-notes-read'"
expect "a read_file through a linked prefix under /home is labelled secret too (found by inode)" \
    "owner bxctl chat -m 'what is my stew recipe?' | tee /tmp/stew.out | grep -qE '\\[-> [0-9]+ bytes, secret'"
sed 's/^/    | /' /tmp/stew.out
kill "$monitor"
wait "$monitor" 2>/dev/null
unit_properties >/tmp/grant-paths.props
# Each chat is its own session; its call 1 ran as boxmaker-tool-SESSION-1.service.
unit_of() { echo "boxmaker-tool-$(sed -n 's/^\[session \(.*\)\]$/\1/p' "$1")-1.service"; }
ferns_unit=$(unit_of /tmp/ferns.out)
soup_unit=$(unit_of /tmp/soup.out)
note "what brokerd gave the two tool units:"
grep -E ' (BindReadOnlyPaths -?/(home|srv)/|ProtectHome )' /tmp/grant-paths.props | sed 's/^/    | /'
expect "the tool unit under /home: ProtectHome=tmpfs, and the one file bound" \
    "grep -qxF '$ferns_unit ProtectHome \"tmpfs\"' /tmp/grant-paths.props && grep -qxF '$ferns_unit BindReadOnlyPaths -/home/owner/notes/ferns.md:/home/owner/notes/ferns.md' /tmp/grant-paths.props"
expect "the tool unit through the linked prefix: the real file bound at the path the call names" \
    "grep -qxF '$soup_unit BindReadOnlyPaths -/srv/real-notes/soup.md:/srv/linked-notes/soup.md' /tmp/grant-paths.props && grep -qxF '$soup_unit ProtectHome \"yes\"' /tmp/grant-paths.props"
rm -r /home/owner/notes /home/owner/linked-notes /srv/real-notes /srv/linked-notes

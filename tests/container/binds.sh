# tests/container/binds.sh: scenario (h) of the container tier, sourced by inside.sh
# shellcheck shell=bash
# (its helpers come from lib.sh). A tool unit binds only the path its call covers (issue 10,
# point 1): a compromised tool that reads past its call finds nothing there.
#
# brokerd is restarted with the rendered config but one key: `tool` names the test-only
# tests/container/sibling-tool.py (stage.sh writes /etc/boxmaker/config-sibling-tool.toml).
# A runtime drop-in changes only ExecStart='s --config; every other property of the rendered
# unit, the grants, loopd, the model and systemd's transient tool units are the real ones.
# The tool reads the file the call names, then a sibling in the same granted directory, a
# file under another grant's directory, and the directory's listing, and answers with what
# each attempt got; the answer is read back from loopd's session log. Then a read_file of a
# link below the granted directory (the model's rule: tests/container/fake-rules.toml) is
# refused by brokerd before any unit starts.

scenario "(h) a tool unit binds only the covered path: a test tool that reads a sibling fails"
echo "dear diary: only the owner reads this" >/srv/notes/diary.md
chmod 0644 /srv/notes/diary.md
brokerd_config /etc/boxmaker/config-sibling-tool.toml "tests/container/binds.sh: scenario (h) only"
expect "control: the chat's read_file of /srv/notes/todo.md answers from the file" \
    "owner bxctl chat -m 'what is on my todo list?' | tee /tmp/sibling.out | grep -q 'Your todo list says: buy milk.'"
sed 's/^/    | /' /tmp/sibling.out
expect "control: systemd ran the test tool as the call's transient unit" \
    "journal | grep -E 'Started boxmaker-tool-[a-z0-9-]+\\.service - /opt/boxmaker-test/sibling-tool\\.py'"
# What the tool answered, as loopd logged the tool result.
tool_results sibling-tool: >/tmp/sibling.answer
note "the test tool answered: $(cat /tmp/sibling.answer)"
expect "control: loopd logged one answer of the test tool" \
    "test \"\$(wc -l </tmp/sibling.answer)\" = 1"
expect "control: in its unit the covered file is readable" \
    "grep -qF '/srv/notes/todo.md read (buy milk, ship boxmaker)' /tmp/sibling.answer"
expect "a sibling in the same granted directory is not there (ENOENT): not bound" \
    "grep -qF '/srv/notes/diary.md ENOENT' /tmp/sibling.answer"
expect "a file under another grant's directory is not there (ENOENT): not bound" \
    "grep -qF '/srv/inbox/mail.txt ENOENT' /tmp/sibling.answer"
expect "the covered file's directory holds the covered file alone" \
    "grep -qF '/srv/notes lists (todo.md)' /tmp/sibling.answer"
refuse "the sibling's text is nowhere in loopd's session log" \
    "grep -rqF 'dear diary' /var/lib/private/boxmaker/sessions"
# A link below the granted directory, to a file no grant names: binding the one covered path
# must not follow it (brokerd resolves it as boxmaker-tool does, and refuses).
mkdir -p /srv/private
echo "the owner's key: granted to nobody" >/srv/private/key.txt
chmod 0644 /srv/private/key.txt
ln -s /srv/private/key.txt /srv/notes/key.md
expect "control: /srv/notes/key.md leads to the key" "grep -q \"owner's key\" /srv/notes/key.md"
expect "a read_file of a link below the granted directory fails in brokerd: links are not followed" \
    "owner bxctl chat -m 'read my linked note' | tee /tmp/link.out | grep -qF '[-> failed: /srv/notes/key.md goes through a symlink below the granted directory'"
sed 's/^/    | /' /tmp/link.out
expect "no tool unit ran for it: the test tool ran once in this scenario" \
    "test \"\$(journal | grep -c -E 'Started boxmaker-tool-[a-z0-9-]+\\.service - /opt/boxmaker-test/sibling-tool\\.py')\" = 1"
refuse "the link's target is nowhere in loopd's session log" \
    "grep -rqF \"owner's key\" /var/lib/private/boxmaker/sessions"
rm /srv/notes/key.md /srv/notes/diary.md
# Every tool unit shares one empty root (/run/boxmaker/tool-root): the mount points of a
# unit's binds must not stay there, or they name the bound paths for every later unit.
sed 's/^/    | /' < <(find /run/boxmaker/tool-root -mindepth 1 | sort)
refuse "the tool units' shared root names none of the paths bound for calls (srv/notes, todo.md)" \
    "find /run/boxmaker/tool-root -mindepth 2 -path '*/srv/*' | grep -q ."
# Back to the rendered unit: the next connection starts brokerd with its own config.
brokerd_rendered
expect "brokerd's unit is the rendered one again" \
    "! systemctl show -p ExecStart --value boxmaker-brokerd | grep -q config-sibling-tool.toml"

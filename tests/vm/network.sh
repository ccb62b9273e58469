# tests/vm/network.sh: the IP address filters, sourced by guest.sh (helpers from
# tests/container/lib.sh). guest.sh put 192.0.2.1 (granted.example in /etc/hosts) and
# 198.51.100.7 on a dummy interface; a listener answers on port 8000 of both. An http_fetch
# unit reaches the address brokerd resolved for the granted name and not the other one;
# gatewayd's IPAddressAllow= admits its allow list alone. Negative control for each: the
# same properties without IPAddressDeny= reach the other address.
# shellcheck shell=bash

scenario "network: an http_fetch unit reaches only what brokerd resolved; gatewayd only its list"
cat >/tmp/listen.py <<'PY'
import http.server, sys, threading
class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello-from-%s\n" % self.server.server_address[0]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
for address in sys.argv[1:]:
    server = http.server.ThreadingHTTPServer((address, 8000), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
threading.Event().wait()
PY
systemd-run --quiet --unit=boxmaker-vm-listener python3 /tmp/listen.py 192.0.2.1 198.51.100.7
wait_for 10 "the listener answers on 192.0.2.1:8000 and 198.51.100.7:8000" \
    "python3 -c \"\$PROBE\" tcp:192.0.2.1:8000 && python3 -c \"\$PROBE\" tcp:198.51.100.7:8000"
expect "granted.example resolves to 192.0.2.1 through the guest's NSS (/etc/hosts)" \
    "getent hosts granted.example | grep -q '^192.0.2.1 '"

# The real tool, through brokerd: the fetch reaches the granted name's address. The page's
# grant says public, but a result is never below the label its call was decided at, and an
# owner's session starts at private (docs/decisions.md X9).
expect "through brokerd: boxmaker-tool fetches http://granted.example:8000/page" \
    "owner bxctl chat -m 'fetch the granted page' | tee /tmp/fetch.out | grep -qE '\\[-> [0-9]+ bytes, private'"
sed 's/^/    | /' /tmp/fetch.out
expect "the page's text came back from 192.0.2.1 (loopd's session log)" \
    "grep -rqF 'hello-from-192.0.2.1' /var/lib/private/boxmaker/sessions"

# The test-only tool, through brokerd: it dials what brokerd resolved, then the other address.
brokerd_config /etc/boxmaker/config-test-tool.toml "tests/vm/network.sh only"
expect "through brokerd: the test tool's http_fetch runs in its unit" \
    "owner bxctl chat -m 'fetch the granted page' | grep -qE '\\[-> [0-9]+ bytes, private'"
tool_results test-tool: | grep -F 192.0.2.1:8000 | tail -n 1 >/tmp/fetch.answer
note "the test tool answered: $(cat /tmp/fetch.answer)"
expect "the unit reaches the address brokerd resolved (192.0.2.1:8000)" \
    "grep -qF '192.0.2.1:8000 CONNECTED (hello-from-192.0.2.1)' /tmp/fetch.answer"
expect "the unit cannot reach another guest address (198.51.100.7:8000)" \
    "grep -qF '198.51.100.7:8000 BLOCKED' /tmp/fetch.answer"
brokerd_rendered
# Negative control: the same unit (the example of brokerd --print-tool-unit web-fetch,
# whose example address is 192.0.2.1 too), with and without IPAddressDeny=.
printf '{"call":{"tool":"http_fetch","arguments":{"url":"http://granted.example:8000/page"}},"max_bytes":65536,"roots":[],"addresses":["192.0.2.1:8000"],"timeout_ms":30000}' \
    >/tmp/invocation-fetch.json
fetch_says() { probe_unit_with /opt/boxmaker-vm/test-tool.py </tmp/invocation-fetch.json | tee /dev/stderr | grep -qF "$1"; }
tool_props web-fetch /etc/boxmaker/config-test-tool.toml
expect_run "the same unit: 192.0.2.1 connects" fetch_says "192.0.2.1:8000 CONNECTED"
expect_run "the same unit: 198.51.100.7 is blocked" fetch_says "198.51.100.7:8000 BLOCKED"
tool_props web-fetch /etc/boxmaker/config-test-tool.toml IPAddressDeny
expect_run "control: the same unit without IPAddressDeny= reaches 198.51.100.7" \
    fetch_says "198.51.100.7:8000 CONNECTED"

# gatewayd: a probe with its unit's network properties, as rendered (all but SKIP).
gateway_props() {
    local line
    PROPS=(-p DynamicUser=yes)
    while IFS= read -r line; do
        case $line in
        "${1:-none}="*) ;;
        IPAddressAllow=* | IPAddressDeny=* | RestrictAddressFamilies=* | PrivateNetwork=*) PROPS+=(-p "$line") ;;
        esac
    done </etc/systemd/system/boxmaker-gatewayd.service
}
gateway_props
note "gatewayd's network properties: ${PROPS[*]}"
expect "control: gatewayd itself runs under them (it follows the fake Mattermost on 127.0.0.1)" \
    "active boxmaker-gatewayd.service"
gateway_reaches() { probe_unit_with /usr/bin/python3 -c "$PROBE" "$1" </dev/null; }
expect_run "a probe with gatewayd's properties reaches its allow list (127.0.0.1:8065)" \
    gateway_reaches tcp:127.0.0.1:8065
refuse_run "a probe with gatewayd's properties cannot reach 192.0.2.1:8000" \
    gateway_reaches tcp:192.0.2.1:8000
gateway_props IPAddressDeny
expect_run "control: the same probe without IPAddressDeny= reaches 192.0.2.1:8000" \
    gateway_reaches tcp:192.0.2.1:8000
systemctl stop boxmaker-vm-listener.service

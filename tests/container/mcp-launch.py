#!/usr/bin/python3
# tests/container/mcp-launch.py ROUNDS PROPS_FILE: the MCP launch measure of scenario (p)
# (tests/container/mcp.sh; issue 26: at most 1.3 times), run as root in the container after
# the server `time` (mcp-server-time) is pinned. tests/vm/launch.py's method, for an MCP
# call. Alternates, ROUNDS times after one warm-up of each:
#   floor: `systemd-run --wait --pipe --collect --service-type=exec` (no --quiet, as brokerd)
#          with the properties in PROPS_FILE (`K=V` lines: the call's own unit's, copied by
#          mcp.sh) of the same server, driven by a minimal client over the pipe: initialize,
#          notifications/initialized, one tools/call, its stdin closed once answered;
#   brokerd: one tool_request of mcp__time__get_current_time on loop-broker, sent on a
#          connection made as loopd's user, first witnessed on witness.sock as inferproxy's
#          user (outside the timed part), answered by brokerd through polkit, the unit and
#          `boxmaker-tool mcp-call` (initialize, tools/list against the pin, tools/call).
# Prints each round and `ratio MEDIAN (LOW to HIGH)` of brokerd over the floor, per round.
import json
import os
import socket
import struct
import subprocess
import sys
import time

rounds = int(sys.argv[1])
props = [line for line in open(sys.argv[2]).read().splitlines() if line]
SOCKET = "/run/boxmaker/loop-broker/broker.sock"
WITNESS = "/run/boxmaker/infer-broker/witness.sock"
TOOL = "mcp__time__get_current_time"
ARGUMENTS = json.dumps({"timezone": "Asia/Tokyo"})
SERVER = ["/usr/bin/python3", "-m", "mcp_server_time", "--local-timezone", "UTC"]
ENV = "PYTHONPATH=/opt/mcp-venv/lib/python3.11/site-packages"


def connect_as(user, pair, path):
    uid = int(subprocess.check_output(["id", "-u", user]))
    gid = int(subprocess.check_output(["id", "-g", user]))
    group = int(subprocess.check_output(["getent", "group", pair]).split(b":")[2])
    os.setgroups([group])
    os.setegid(gid)
    os.seteuid(uid)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups([])
    return s


def read_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise SystemExit("brokerd closed the connection")
        data += chunk
    return data


def frame(s, number, kind, body):
    data = json.dumps({"v": 1, "id": number, "final": True,
                       "msg": {"kind": kind, "body": body}}).encode()
    s.sendall(struct.pack(">I", len(data)) + data)


def read_frame(s):
    (length,) = struct.unpack(">I", read_exact(s, 4))
    return json.loads(read_exact(s, length))


def witness(number):
    """Reports a completion whose answer made this one call; returns the call's witness."""
    completion = "c-" + os.urandom(16).hex()
    w = connect_as("boxmaker-inferproxy", "boxmaker-infer-broker", WITNESS)
    frame(w, number, "witness_report", {
        "completion": completion, "prompt": [], "answer": "0" * 64,
        "calls": [{"id": "call-%d" % number, "name": TOOL, "arguments": ARGUMENTS}],
        "finish": "tool_calls", "runnable": True})
    answer = read_frame(w)
    w.close()
    if answer["msg"]["kind"] != "witness_recorded":
        raise SystemExit("brokerd answered the report with %r" % (answer,))
    return {"completion": completion, "index": 0}


def through_brokerd(s, number, witnessed):
    frame(s, number, "tool_request", {
        "session": "launch-cost-mcp", "call": number, "tool": TOOL,
        "arguments": ARGUMENTS, "witness": witnessed})
    while True:
        answer = read_frame(s)
        if answer["final"]:
            body = answer["msg"]["body"]
            if body.get("status") != "result" or "Asia/Tokyo" not in body.get("content", ""):
                raise SystemExit("brokerd answered %r" % (answer,))
            return


def bare():
    """The server in a bare unit, one call by a minimal client over the unit's pipe."""
    command = ["systemd-run", "--wait", "--pipe", "--collect", "--service-type=exec",
               *(a for p in props for a in ("-p", p)), "-p", "Environment=" + ENV,
               "--", *SERVER]
    unit = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)

    def send(message):
        unit.stdin.write((json.dumps(dict(message, jsonrpc="2.0")) + "\n").encode())
        unit.stdin.flush()

    def answer(number):
        for line in unit.stdout:
            message = json.loads(line)
            if message.get("id") == number:
                return message
        raise SystemExit("the bare server ended without answering %d" % number)

    send({"id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcp-launch", "version": "1"}}})
    answer(1)
    send({"method": "notifications/initialized"})
    send({"id": 2, "method": "tools/call",
          "params": {"name": "get_current_time", "arguments": json.loads(ARGUMENTS)}})
    result = answer(2)
    unit.stdin.close()
    if unit.wait() != 0 or "Asia/Tokyo" not in json.dumps(result):
        raise SystemExit("the bare unit answered %r" % (result,))


def median(values):
    return sorted(values)[len(values) // 2]


s = connect_as("boxmaker-loopd", "boxmaker-loop-broker", SOCKET)
through_brokerd(s, 1, witness(1))  # warm-up: the session's first call writes its state
bare()
ratios, floors, measures = [], [], []
for number in range(2, rounds + 2):
    t = time.perf_counter()
    bare()
    floor = time.perf_counter() - t
    witnessed = witness(number)
    t = time.perf_counter()
    through_brokerd(s, number, witnessed)
    measure = time.perf_counter() - t
    floors.append(floor)
    measures.append(measure)
    ratios.append(measure / floor)
    print("round %d: bare systemd-run %.0f ms, through brokerd %.0f ms, ratio %.2f"
          % (number - 1, floor * 1000, measure * 1000, measure / floor))
ratios.sort()
print("floor (bare systemd-run) median %.0f ms; through brokerd median %.0f ms"
      % (median(floors) * 1000, median(measures) * 1000))
print("ratio %.2f (%.2f to %.2f) over %d rounds" % (median(ratios), ratios[0], ratios[-1], rounds))

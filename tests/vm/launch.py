#!/usr/bin/python3
# tests/vm/launch.py ROUNDS PROPS_FILE INVOCATION_FILE [TOOL ARGUMENTS EXPECT PROGRAM]: the
# launch-cost harness of tests/vm/launch.sh (run as root in the guest). By default the call
# is a read_file of the todo list and the bare unit runs boxmaker-tool; with the four more
# arguments it is TOOL with ARGUMENTS (JSON), whose answer must hold EXPECT, and the bare
# unit runs PROGRAM (a `run` of `true` beside a bare unit of `true`). Alternates, ROUNDS times:
#   floor: `systemd-run --wait --pipe --collect --service-type=exec` (no --quiet, as brokerd) with the
#          properties in PROPS_FILE (`-p` and `K=V` lines, brokerd --print-tool-unit's) of
#          boxmaker-tool, the invocation on stdin;
#   brokerd: one tool_request (the same read_file) on loop-broker, sent on a connection
#          made as loopd's user (SO_PEERCRED is taken at connect), answered by a run of the
#          same unit through brokerd, polkit and systemd. Each call is first witnessed on
#          infer-broker/witness.sock as inferproxy's user, as inferproxy reports a completion
#          before loopd has it (outside the timed part; docs/decisions.md W1).
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
invocation = open(sys.argv[3], "rb").read()
SOCKET = "/run/boxmaker/loop-broker/broker.sock"
WITNESS = "/run/boxmaker/infer-broker/witness.sock"
extra = sys.argv[4:8]
CALL, ARGUMENTS, EXPECT, PROGRAM = extra if len(extra) == 4 else (
    "read_file", json.dumps({"path": "/srv/notes/todo.md"}), "buy milk",
    "/opt/boxmaker/bin/boxmaker-tool")


def ids(user, pair):
    uid = int(subprocess.check_output(["id", "-u", user]))
    gid = int(subprocess.check_output(["id", "-g", user]))
    group = int(subprocess.check_output(["getent", "group", pair]).split(b":")[2])
    return uid, gid, group


def connect_as(user, pair, path):
    uid, gid, group = ids(user, pair)
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


def connect_as_loopd():
    return connect_as("boxmaker-loopd", "boxmaker-loop-broker", SOCKET)


def witness(number):
    """Reports a completion whose answer made this one call; returns the call's witness."""
    completion = "c-" + os.urandom(16).hex()
    zero = "0" * 64
    # A prompt of no messages: nothing in it brokerd cannot account for, so the call is
    # decided at the session's own labels (a message it could not account for would label
    # the call as high as anything brokerd ever sent loopd, the earlier scenarios' results).
    report = {"v": 1, "id": number, "final": True, "msg": {"kind": "witness_report", "body": {
        "completion": completion, "prompt": [], "answer": zero,
        "calls": [{"id": "call-%d" % number, "name": CALL, "arguments": ARGUMENTS}],
        "finish": "tool_calls", "runnable": True}}}
    w = connect_as("boxmaker-inferproxy", "boxmaker-infer-broker", WITNESS)
    body = json.dumps(report).encode()
    w.sendall(struct.pack(">I", len(body)) + body)
    (length,) = struct.unpack(">I", read_exact(w, 4))
    frame = json.loads(read_exact(w, length))
    w.close()
    if frame["msg"]["kind"] != "witness_recorded":
        raise SystemExit("brokerd answered the report with %r" % (frame,))
    return {"completion": completion, "index": 0}


def read_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise SystemExit("brokerd closed the connection")
        data += chunk
    return data


def call(s, number, witnessed):
    request = {"v": 1, "id": number, "final": True, "msg": {"kind": "tool_request", "body": {
        "session": "launch-cost-" + CALL.replace("_", "-"), "call": number, "tool": CALL,
        "arguments": ARGUMENTS, "witness": witnessed}}}
    body = json.dumps(request).encode()
    s.sendall(struct.pack(">I", len(body)) + body)
    while True:
        (length,) = struct.unpack(">I", read_exact(s, 4))
        frame = json.loads(read_exact(s, length))
        if frame["final"]:
            answer = frame["msg"]["body"]
            if answer.get("status") != "result" or EXPECT not in answer.get("content", ""):
                raise SystemExit("brokerd answered %r" % (frame,))
            return


def bare():
    command = ["systemd-run", "--wait", "--pipe", "--collect", "--service-type=exec",
               *props, "--", PROGRAM]
    out = subprocess.run(command, input=invocation, capture_output=True, check=True).stdout
    # The tool answers the read; `true` says nothing, and its exit status was checked.
    if PROGRAM.endswith("boxmaker-tool") and EXPECT.encode() not in out:
        raise SystemExit("the bare unit answered %r" % out)


def median(values):
    return sorted(values)[len(values) // 2]


s = connect_as_loopd()
call(s, 1, witness(1))  # warm-up: brokerd's first call in a session writes the session's state
bare()
ratios, floors, measures = [], [], []
for number in range(2, rounds + 2):
    t = time.perf_counter()
    bare()
    floor = time.perf_counter() - t
    witnessed = witness(number)
    t = time.perf_counter()
    call(s, number, witnessed)
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

#!/usr/bin/env python3
"""tests/container/register.py JOB: sends job_register for JOB on brokerd's jobs socket and
prints the answer's kind and body (exit 0 if registered, 1 if refused). For scenario (j):
run as one job's DynamicUser, claiming another job."""

import json
import socket
import struct
import sys

SOCK = "/run/boxmaker/jobs-broker/jobs.sock"

env = {"v": 1, "id": 1, "final": True, "msg": {"kind": "job_register", "body": {"job": sys.argv[1]}}}
body = json.dumps(env).encode()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(SOCK)
s.sendall(struct.pack(">I", len(body)) + body)
head = s.recv(4, socket.MSG_WAITALL)
(n,) = struct.unpack(">I", head)
answer = json.loads(s.recv(n, socket.MSG_WAITALL))
print(answer["msg"]["kind"], json.dumps(answer["msg"]["body"]))
sys.exit(0 if answer["msg"]["kind"] == "job_registered" else 1)

#!/usr/bin/env python3
"""tests/container/register.py JOB [result]: claims to be JOB's runner and prints the answer's
kind and body; exit 0 if taken, 1 if refused. Without `result` it sends job_register on
brokerd's jobs socket; with it, a job_result on gatewayd's (a post in JOB's thread). For
scenario (j): run as one job's DynamicUser, claiming another job."""

import json
import socket
import struct
import sys

job = sys.argv[1]
if sys.argv[2:] == ["result"]:
    sock = "/run/boxmaker/jobs-gateway/gateway.sock"
    msg = {"kind": "job_result", "body": {"job": job, "started": "2026-09-17T07:00:00.000Z",
                                          "outcome": "done", "text": "forged"}}
    taken = "job_delivered"
else:
    sock = "/run/boxmaker/jobs-broker/jobs.sock"
    msg = {"kind": "job_register", "body": {"job": job}}
    taken = "job_registered"
body = json.dumps({"v": 1, "id": 1, "final": True, "msg": msg}).encode()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock)
s.sendall(struct.pack(">I", len(body)) + body)
(n,) = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))
answer = json.loads(s.recv(n, socket.MSG_WAITALL))
print(answer["msg"]["kind"], json.dumps(answer["msg"]["body"]))
sys.exit(0 if answer["msg"]["kind"] == taken else 1)

#!/usr/bin/python3
# tests/vm/test-tool.py: a test-only stand-in for boxmaker-tool, for the VM tier (never
# shipped: brokerd runs it only where the test's config-test-tool.toml, made by
# tests/container/stage.sh, names it, and tests/vm/*.sh run it in probe units). It speaks
# the tool's protocol (one ToolInvocation on stdin, one ToolOutput on stdout) and plays a
# tool that goes past its unit's limits:
#   read_file of .../hog-memory.md  touches 512 MiB (MemoryMax= is 256M): answers
#                                   "test-tool: allocated 512 MiB" only if nothing stopped it;
#   read_file of .../hog-tasks.md   forks 48 children (TasksMax= is 16): answers "test-tool:
#                                   started 48 children", or exits 3 when a fork is refused;
#   http_fetch                      dials every address brokerd resolved, then OTHER (an
#                                   address of the guest no grant names), and answers with
#                                   what each got: "ADDR CONNECTED (first line)" or
#                                   "ADDR BLOCKED (error)", "; "-separated.
import json
import os
import socket
import sys
import time

OTHER = "198.51.100.7:8000"
MEMORY_MIB = 512
CHILDREN = 48


def answer(content):
    print(json.dumps({"status": "ok", "content": "test-tool: " + content, "truncated": False}))


def hog_memory():
    chunks = []
    for _ in range(MEMORY_MIB // 16):
        chunks.append(b"a" * (16 << 20))  # written, so every page is really there
    answer("allocated %d MiB" % (len(chunks) * 16))


def hog_tasks():
    children = []
    for _ in range(CHILDREN):
        try:
            pid = os.fork()
        except OSError as e:
            print("test-tool: fork refused after %d children: %s" % (len(children), e.strerror),
                  file=sys.stderr)
            for pid in children:
                os.waitpid(pid, 0)
            sys.exit(3)
        if pid == 0:
            time.sleep(2)
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    answer("started %d children" % len(children))


def dial(address):
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=3) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            reply = b""
            while len(reply) < 4096:  # an HTTP/1.0 server closes after its answer
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
            lines = reply.decode("utf-8", "replace").splitlines()
            return "%s CONNECTED (%s)" % (address, lines[-1] if lines else "")
    except OSError as e:
        return "%s BLOCKED (%s)" % (address, type(e).__name__)


invocation = json.load(sys.stdin)
call = invocation["call"]
if call["tool"] == "http_fetch":
    answer("; ".join(dial(a) for a in invocation["addresses"] + [OTHER]))
elif call["arguments"].get("path", "").endswith("/hog-memory.md"):
    hog_memory()
elif call["arguments"].get("path", "").endswith("/hog-tasks.md"):
    hog_tasks()
else:
    answer("nothing to do for %s" % call["tool"])

#!/usr/bin/python3
# tests/container/indexer-probe.py: a test-only stand-in for boxmaker-indexer, for scenario
# (l) of the container tier (tests/container/indexer.sh). Never shipped: a runtime drop-in
# makes it the ExecStart= of boxmaker-indexer.service for one run, every other property of
# the rendered unit kept, so it sees what a compromised indexer would see: it holds
# CAP_DAC_READ_SEARCH and tries to read, write and connect to what it must not.
#
# Prints one line per attempt, `NAME RESULT`: `ok` (with what it got) or an errno name.
# The argument is one session log to read (the control: the capability works on the
# sources). Exits 0.
import ctypes
import errno
import os
import socket
import sys

HOME = "/var/lib/private/boxmaker"


def failure(e):
    return errno.errorcode.get(e.errno, "errno %s" % e.errno)


def attempt(name, action):
    try:
        print(name, "ok", action())
    except OSError as e:
        print(name, failure(e))


def read(path):
    with open(path, "rb") as f:
        return "%d bytes" % len(f.read())


def write(path):
    with open(path, "wb") as f:
        f.write(b"probe")
    os.unlink(path)
    return "written and removed"


def listing(path):
    return ",".join(sorted(os.listdir(path)))


def family(kind):
    socket.socket(kind, socket.SOCK_STREAM).close()
    return "a socket"


def by_handle():
    # name_to_handle_at needs no privilege; open_by_handle_at needs CAP_DAC_READ_SEARCH and
    # opens any inode of the file system, whatever the mount namespace shows: the way out of
    # the empty root that the system call filter (@privileged) must close.
    libc = ctypes.CDLL(None, use_errno=True)

    class Handle(ctypes.Structure):
        _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int), ("f", ctypes.c_ubyte * 128)]

    h = Handle(128, 0)
    mount_id = ctypes.c_int()
    path = (HOME + "/sessions").encode()
    if libc.name_to_handle_at(-100, path, ctypes.byref(h), ctypes.byref(mount_id), 0) != 0:
        raise OSError(ctypes.get_errno(), "name_to_handle_at")
    mount_fd = os.open(HOME + "/sessions", os.O_RDONLY | os.O_DIRECTORY)
    fd = libc.open_by_handle_at(mount_fd, ctypes.byref(h), os.O_RDONLY | os.O_DIRECTORY)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "open_by_handle_at")
    os.close(fd)
    return "opened an inode by its handle"


print("uid", os.getuid())
attempt("read-session-log", lambda: read(sys.argv[1]))
attempt("read-note-labels", lambda: listing(HOME + "/note-state/labels"))
for name, path in [
    ("read-shadow", "/etc/shadow"),
    ("read-planted", "/etc/boxmaker-planted-secret"),
    ("read-token", "/etc/boxmaker/secrets/mattermost-token"),
    ("read-credential", "/run/credentials/boxmaker-gatewayd.service/mattermost-token"),
    ("read-grants", "/etc/boxmaker/grants/notes-read.toml"),
    ("read-owner-file", "/srv/notes/todo.md"),
]:
    attempt(name, lambda p=path: read(p))
for name, path in [
    ("list-audit", HOME + "/audit"),
    ("list-broker", HOME + "/broker"),
    ("list-incoming", HOME + "/note-state/incoming"),
    ("list-gateway", HOME + "/gateway"),
    ("list-memory", HOME + "/memory"),
]:
    attempt(name, lambda p=path: listing(p))
attempt("list-etc", lambda: listing("/etc"))
attempt("list-state", lambda: listing(HOME))
attempt("write-sessions", lambda: write(HOME + "/sessions/probe"))
attempt("write-notes", lambda: write(HOME + "/notes/probe.md"))
attempt("write-index", lambda: write(HOME + "/index/probe"))
attempt("open-by-handle", by_handle)
attempt("socket-unix", lambda: family(socket.AF_UNIX))
attempt("socket-inet", lambda: family(socket.AF_INET))

"""The client half of the warm fuser-opt (tools/opt_server.py has the server and the why):
with `FUSER_OPT_SERVER=<socket path>` set, fuser-opt hands its call to the server there. Kept
apart from the server, and free of fuser's imports, so that fuser-opt's start stays light."""

from __future__ import annotations

import json
import os
import socket
import sys

ENV_VAR = "FUSER_OPT_SERVER"


def forward() -> int | None:
    """Run this process's fuser-opt command line in the server named by FUSER_OPT_SERVER. None
    where there is no server to run it (the caller then runs it itself)."""
    path = os.environ.get(ENV_VAR)
    if not path:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    request = {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}
    with conn:
        socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
        conn.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := conn.recv(64):
            reply += chunk
    try:
        return int(reply)
    except ValueError:  # the child died before answering (killed, or a crash in the interpreter)
        print("fuser-opt: error: the fuser-opt server's worker ended without an exit status", file=sys.stderr)
        return 3

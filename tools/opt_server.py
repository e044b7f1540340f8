"""A warm fuser-opt for test suites: one process loads the compiler once, and each fuser-opt
call is run by a fork of it.

Loading the compiler (xDSL and fuser's dialects: some 400 op definitions) takes most of a
short fuser-opt call, about 0.8 s on a 2-core CI machine, and the lit suite makes over 300
calls. With `FUSER_OPT_SERVER=<socket path>` in the environment, `fuser-opt` (tools/opt_client.py) hands its
arguments, working directory, environment and standard streams (the file descriptors
themselves, over a Unix socket) to the server at that path; the server forks, the child runs
fuser-opt (`run_here`) on them and sends back the exit status. Each call starts from the same
freshly loaded state, so calls cannot see each other. Without a server at that path fuser-opt
runs in its own process, as it always does.

    python -m fuser.tools.opt_server /tmp/fuser-opt.sock     # test/lit.cfg.py starts one per lit run

The server exits when the process that started it does (it checks its parent once a second).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

_MAX_REQUEST = 1 << 22  # arguments and environment; the input itself travels as a descriptor


def _recv_request(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, _MAX_REQUEST, 3)
    while chunk := conn.recv(1 << 16):
        data += chunk
    return json.loads(data), fds


def _run_child(conn: socket.socket, listener: socket.socket) -> None:
    """In the forked child: take over the caller's streams, directory and environment, run
    fuser-opt, report the status. Never returns."""
    status = 1
    try:
        listener.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        request, fds = _recv_request(conn)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        from fuser.tools.fuser_opt import run_here
        try:
            status = run_here(request["argv"])
        except SystemExit as e:  # argparse's usage errors and --help
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        import traceback
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            pass
        try:
            conn.sendall(str(status).encode())
        finally:
            os._exit(0)


def serve(path: str) -> None:
    """Load the compiler, then fork a child per connection until the parent process exits."""
    from fuser.tools import fuser_opt
    fuser_opt._load_compiler()
    fuser_opt.warm_up()
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(path):
        os.unlink(path)
    listener.bind(path)
    listener.listen(128)
    listener.settimeout(1.0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # a terminate removes the socket too
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        while os.getppid() == parent:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            if os.fork() == 0:
                _run_child(conn, listener)
            conn.close()
    finally:
        listener.close()
        if os.path.exists(path):
            os.unlink(path)


if __name__ == "__main__":
    serve(sys.argv[1])

"""The reference server behind tests/reference/pyrun: imports torch, torchvision, NumPy and PIL
once, then forks for each request a process that runs the script as a fresh interpreter would
(argv, sys.path[0], working folder, environment, umask and standard streams of the client), and
answers with its exit status. timm is not imported ahead: scripts choose between the installed
package and timm's source by sys.path. Ends after IDLE seconds without a request, or when its
socket is removed or replaced.

Usage: python pyrun_server.py SOCKET
"""
import json
import os
import select
import signal
import socket
import sys

IDLE = 120
MAX_REQUEST = 64 << 20  # argv and environment: far below this


def preload():
    import numpy  # noqa: F401
    import torch  # noqa: F401
    for name in ("torchvision", "PIL.Image"):
        try:
            __import__(name)
        except Exception:
            pass


def receive(conn):
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    while not data.endswith(b"\n"):
        more = conn.recv(1 << 20)
        if not more or len(data) > MAX_REQUEST:
            raise OSError("request cut short or over 64 MiB")
        data += more
    if len(fds) != 3:
        raise OSError("three descriptors expected")
    return json.loads(data), fds


def run_script(request):
    """In the forked process: becomes the client's interpreter and runs its script; never returns."""
    import atexit
    import builtins
    import random
    import runpy
    import traceback
    import types

    os.chdir(request["cwd"])
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    argv = request["argv"]
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    code = 0
    try:
        random.seed()  # a fresh process's generators, not the server's
        try:
            import numpy
            numpy.random.seed()
        except Exception:
            pass
        if argv[0] in ("-c", "-"):
            sys.argv = argv[1:] if argv[0] == "-c" else argv
            sys.argv[0] = argv[0]
            sys.path[0:1] = [""] + extra  # in place of the server's own folder
            source = argv[1] if argv[0] == "-c" else sys.stdin.read()
            name = "<string>" if argv[0] == "-c" else "<stdin>"
            main = types.ModuleType("__main__")
            main.__builtins__ = builtins
            sys.modules["__main__"] = main
            exec(compile(source, name, "exec"), main.__dict__)
        else:
            sys.argv = list(argv)
            sys.path[0:1] = [os.path.dirname(os.path.realpath(argv[0]))] + extra
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException as e:
        tb = e.__traceback__  # without this file's and runpy's frames, as python prints it
        while tb and tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__, "<frozen runpy>"):
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb)
        code = 1
    try:
        import threading
        threading._shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(code & 0xFF)


def handle(conn):
    """In the forked handler: runs the request in a child, ends it if the client goes away."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    request, fds = receive(conn)
    pid = os.fork()
    if pid == 0:
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        run_script(request)
    for fd in fds:
        os.close(fd)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        readable, _, _ = select.select([conn], [], [], 0.02)
        if readable and not conn.recv(1, socket.MSG_PEEK):
            os.kill(pid, signal.SIGKILL)  # the client was ended: so is its script
            os.waitpid(pid, 0)
            return
    code = os.waitstatus_to_exitcode(status)
    conn.sendall(f"{code if code >= 0 else 128 - code}\n".encode())


def main():
    path = sys.argv[1]
    preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    temp = f"{path}.{os.getpid()}"
    listener.bind(temp)
    listener.listen(64)
    os.rename(temp, path)  # clients connect only once the imports are done
    identity = os.stat(path).st_ino
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # handlers reaped by the kernel
    while True:
        readable, _, _ = select.select([listener], [], [], IDLE)
        try:
            if os.stat(path).st_ino != identity:
                return
        except OSError:
            return
        if not readable:
            os.unlink(path)  # no new client from here on; one that connected just now is served
            while select.select([listener], [], [], 0)[0]:
                serve(listener)
            return
        serve(listener)


def serve(listener):
    conn, _ = listener.accept()
    if os.fork() == 0:
        listener.close()
        try:
            handle(conn)
        finally:
            os._exit(0)
    conn.close()


if __name__ == "__main__":
    main()

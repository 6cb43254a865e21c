"""The tiny intermediate process that launches a measured command.

Why it exists: on Linux a child's ``ru_maxrss`` starts at the RSS its parent had when it
forked, so a UI or caller holding 1 GiB would make a ``python -c pass`` child read as
1 GiB. This file is run as ``python -I -S _launcher.py`` (no site, stdlib only, a few MiB),
forks the command from there and reports the kernel's figures for it on a result fd.

It also owns the command's lifetime: it becomes a child subreaper (Linux) so descendants
that daemonise or start their own session are re-parented to it, forwards cancellation
(SIGTERM, then SIGKILL after a grace period) to every descendant, and reaps them all
before reporting, so nothing outlives a run.

Protocol (JSON lines on the result fd, in this order):
  {"event": "started", "pid": int, "floor": int}          floor: own ru_maxrss, raw units
  {"event": "exec_error", "errno": int, "message": str}    the command could not start
  {"event": "exited", "status": int, "maxrss": int, "command_maxrss": int,
   "wall_seconds": float, "cancelled": bool, "leftovers": int}

This module must import nothing but the standard library: it never imports torchscan_tui.
"""

import errno
import json
import os
import signal
import sys
import time

_state = {"cancelled": False, "child": 0, "grace": 1.0, "escalated": False}


def _write(fd, message):
    data = (json.dumps(message) + "\n").encode()
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _linux_process_controls():
    """Subreaper (orphaned descendants re-parent to us) and a death signal (if whoever
    started us dies, even by SIGKILL, we get SIGTERM and end the command). Linux only."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig, pr_set_child_subreaper = 1, 36
        libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0)
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _own_high_water_mark():
    """This launcher's own RSS high-water mark, in ru_maxrss units (KiB Linux, bytes macOS).

    A forked child's ru_maxrss starts at least at this figure. On Linux it is read from
    /proc (VmHWM of the current address space): getrusage(RUSAGE_SELF) would also fold in
    the address space of whoever spawned us before our exec.
    """
    try:
        with open("/proc/self/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    resource = __import__("resource")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _descendants():
    """PIDs of every live descendant of this process, found through /proc (Linux)."""
    me = os.getpid()
    children = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: split after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) < 2:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found = []
    stack = [me]
    while stack:
        for pid in children.get(stack.pop(), []):
            found.append(pid)
            stack.append(pid)
    return found


def _signal_descendants(signum):
    """Send signum to the command's process group and to every other descendant."""
    child = _state["child"]
    if child:
        try:
            os.killpg(child, signum)
        except OSError:
            pass
    for pid in _descendants():
        try:
            os.kill(pid, signum)
        except OSError:
            pass


def _stop_and_kill_all():
    """End every descendant, however fast it forks.

    A daemon that re-forks every half millisecond, its parent exiting, escapes a single
    pass of kill(): its new child is born after the listing. So each pass first stops
    (SIGSTOP) every descendant not stopped yet: a stopped process can neither fork nor
    exit, so the passes end once one finds nothing new (a handful, against any speed of
    forking). Then all of them are killed. Returns how many were ended.
    """
    stopped = set()
    for _ in range(10_000):
        new = set(_descendants()) - stopped
        if not new:
            break
        for pid in new:
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
        stopped |= new
    for pid in set(_descendants()) | stopped:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return len(stopped)


def _reap_all(deadline_s):
    """Reap every child (descendants re-parent to us, the subreaper), never blocking for
    good: past the deadline, what is still there is stopped and killed again."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid:
            continue
        if time.monotonic() > deadline:
            _stop_and_kill_all()
            deadline = time.monotonic() + deadline_s
        time.sleep(0.005)


def _on_cancel(signum, frame):
    if _state["cancelled"]:
        return
    _state["cancelled"] = True
    _signal_descendants(signal.SIGTERM)
    signal.setitimer(signal.ITIMER_REAL, _state["grace"])


def _on_grace_expired(signum, frame):
    _state["escalated"] = True
    child = _state["child"]
    if child:
        try:
            os.killpg(child, signal.SIGKILL)
        except OSError:
            pass
    _stop_and_kill_all()


def _reap_leftovers():
    """Terminate and reap descendants still alive after the command itself exited."""
    leftovers = _descendants()
    if leftovers:
        _signal_descendants(signal.SIGTERM)
        deadline = time.monotonic() + _state["grace"]
        while _descendants() and time.monotonic() < deadline:
            time.sleep(0.02)
        if _descendants():
            _stop_and_kill_all()
    _reap_all(_state["grace"])
    return len(leftovers)


def _parse_args(argv):
    result_fd, grace, new_group = None, 1.0, False
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg == "--":
            return result_fd, grace, new_group, argv[index + 1 :]
        if arg == "--result-fd":
            result_fd = int(argv[index + 1])
            index += 2
        elif arg == "--grace":
            grace = float(argv[index + 1])
            index += 2
        elif arg == "--new-group":
            new_group = True
            index += 1
        else:
            break
    sys.stderr.write("usage: _launcher.py --result-fd N [--grace S] [--new-group] -- CMD...\n")
    sys.exit(2)


def main(argv):
    result_fd, grace, new_group, command = _parse_args(argv)
    if not command:
        sys.stderr.write("_launcher.py: no command given\n")
        return 2
    _state["grace"] = grace
    os.set_inheritable(result_fd, False)
    parent = os.getppid()
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, _on_cancel)
    signal.signal(signal.SIGALRM, _on_grace_expired)
    _linux_process_controls()
    if os.getppid() != parent:  # our parent died before the death signal was armed
        return 1

    floor = _own_high_water_mark()
    error_read, error_write = os.pipe()  # both ends close-on-exec: EOF means exec succeeded
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(error_read)
            for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGALRM):
                signal.signal(signum, signal.SIG_DFL)
            if new_group:
                os.setpgid(0, 0)
            os.execvp(command[0], command)
        except OSError as exc:
            os.write(error_write, f"{exc.errno or 0}:{exc.strerror or ''}".encode())
        finally:
            os._exit(127)
    _state["child"] = pid if new_group else 0
    os.close(error_write)
    failure = b""
    while True:
        try:
            chunk = os.read(error_read, 4096)
        except InterruptedError:
            continue
        if not chunk:
            break
        failure += chunk
    os.close(error_read)
    if failure:
        code, _, message = failure.decode(errors="replace").partition(":")
        os.waitpid(pid, 0)
        _write(result_fd, {"event": "exec_error", "errno": int(code), "message": message})
        return 0
    _write(result_fd, {"event": "started", "pid": pid, "floor": floor})

    while True:
        try:
            _, status, usage = os.wait4(pid, 0)
            break
        except InterruptedError:
            continue
        except OSError as exc:  # pragma: no cover - ECHILD cannot happen for our own fork
            if exc.errno != errno.EINTR:
                raise
    wall = time.monotonic() - started
    leftovers = _reap_leftovers()
    signal.setitimer(signal.ITIMER_REAL, 0)
    resource = __import__("resource")
    children_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    _write(
        result_fd,
        {
            "event": "exited",
            "status": status,
            "maxrss": max(children_peak, usage.ru_maxrss),
            "command_maxrss": usage.ru_maxrss,
            "wall_seconds": wall,
            "cancelled": _state["cancelled"],
            "leftovers": leftovers,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

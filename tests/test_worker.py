"""The worker process and its channel, with real child processes and real torch."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from channel import read_dicts

from torchscan_tui.run import protocol

pytestmark = pytest.mark.slow  # real workloads: seconds each


def run_worker(script, *extra, args=()):
    read_fd, write_fd = os.pipe()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "torchscan_tui.worker",
            str(script),
            "--channel-fd",
            str(write_fd),
            "--device",
            "cpu",
            *extra,
            "--",
            *args,
        ],
        pass_fds=[write_fd],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(write_fd)
    messages = read_dicts(read_fd)
    os.close(read_fd)
    stdout, stderr = process.communicate()
    return messages, process.returncode, stdout.decode(), stderr.decode()


def rows_of(messages):
    return [row for message in messages if message["type"] == "rows" for row in message["rows"]]


def test_worker_sends_phases_meta_rows_then_done(workloads):
    messages, code, stdout, _ = run_worker(workloads / "tiny.py")
    assert code == 0
    types = [message["type"] for message in messages]
    assert types[0] == "phase" and types[-1] == "done"
    assert types.index("meta") < types.index("rows")
    phase_messages = [message for message in messages if message["type"] == "phase"]
    phases = [message["phase"] for message in phase_messages if message.get("step") is None]
    assert phases == ["loading", "profiling", "collecting", "aggregating", "sending"]
    # workload() is a step: one warm-up call, one profiled, each said as it ends
    steps = [(m["step"], m["steps"]) for m in phase_messages if m.get("step") is not None]
    assert steps == [(1, 2), (2, 2)]
    meta = next(message for message in messages if message["type"] == "meta")
    assert meta["head"]["context"]["profiled"] == "workload()"
    names = {row["operator"] for row in rows_of(messages)}
    assert {"aten::mm", "tiny_block", "aten::cat"} <= names
    assert "tiny: done" not in stdout  # the __main__ block did not run


def test_workload_output_that_looks_like_messages_never_reaches_the_rows(workloads):
    messages, code, stdout, stderr = run_worker(workloads / "noisy.py")
    assert code == 0
    assert '"FAKE::row"' in stdout and '"FAKE::row"' in stderr
    assert "FAKE::row" not in {row["operator"] for row in rows_of(messages)}
    assert sum(message["type"] == "done" for message in messages) == 1


def test_whole_script_is_profiled_as_main_with_its_arguments(workloads):
    messages, code, stdout, _ = run_worker(workloads / "script_only.py", args=("--flag", "x"))
    assert code == 0
    assert "script_only args: ['--flag', 'x']" in stdout
    meta = next(message for message in messages if message["type"] == "meta")
    assert meta["head"]["context"]["profiled"] == "whole script as __main__"
    assert any(row["input_shapes"] == [[5, 7], []] for row in rows_of(messages))


def test_named_callable_and_a_missing_one(workloads, tmp_path):
    script = tmp_path / "named.py"
    script.write_text("import torch\ndef step():\n    torch.ones(6, 6).sum()\n")
    messages, code, _, _ = run_worker(script, "--callable", "step")
    assert code == 0 and messages[-1]["type"] == "done"
    messages, code, _, _ = run_worker(script, "--callable", "nope")
    assert code == 2
    assert messages[-1] == {
        "type": "error",
        "kind": "load",
        "message": f"{script}: defines no top-level nope",
        "traceback": "",
        "exit_code": None,
    }


def test_syntax_error_names_file_and_line(workloads):
    messages, code, _, _ = run_worker(workloads / "syntax_error.py")
    assert code == 2
    assert messages[-1]["kind"] == "load"
    assert "syntax_error.py:3: syntax error" in messages[-1]["message"]


def test_exception_in_workload_still_delivers_rows(workloads):
    messages, code, _, _ = run_worker(workloads / "raises.py")
    assert code == 1
    assert messages[-1]["kind"] == "workload"
    assert messages[-1]["message"] == "ValueError: boom from the workload"
    assert "Traceback" in messages[-1]["traceback"]
    assert any(row["operator"] == "aten::sum" for row in rows_of(messages))
    # Issue 28, 3: it raised on its first call: said so, not "no step was seen".
    head = next(message for message in messages if message["type"] == "meta")["head"]
    codes = [note["code"] for note in head["diagnostics"]]
    assert "raised_before_first_step" in codes and "no_steps_seen" not in codes


def test_sys_exit_in_workload_reports_the_code_and_rows(workloads):
    messages, code, _, _ = run_worker(workloads / "exits.py")
    assert messages[-1]["exit_code"] == 4
    assert any(row["operator"] == "aten::mul" for row in rows_of(messages))


class _VersionText(str):
    """A str subclass, like torch.__version__ (TorchVersion)."""


def test_the_channel_never_sends_nan_and_takes_str_subclasses():
    head = {
        "context": {
            "torch_version": _VersionText("2.13.0+cpu"),
            "device": "cpu",
            "cpu_self_seconds_sum": float("nan"),
        },  # fmt: skip
        "diagnostics": [],
        "kernels": [],
        "totals": {},
        "trace_path": None,
    }
    line = protocol.encode(protocol.HeadMessage(head))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    decoded = protocol.decode(line)
    assert isinstance(decoded, protocol.HeadMessage)
    assert decoded.head["context"] == {"torch_version": "2.13.0+cpu", "device": "cpu",
                                       "cpu_self_seconds_sum": None}  # fmt: skip
    assert {k: v for k, v in decoded.head.items() if k != "context"} == {
        k: v for k, v in head.items() if k != "context"}  # fmt: skip
    with pytest.raises(TypeError):
        protocol.encode(protocol.HeadMessage({"context": {"bad": object()}}))


def test_worker_exit_keeps_what_shutdown_promises(tmp_path):
    """The worker skips module teardown, not the steps a workload can rely on at exit:
    its non-daemon threads finish, its atexit callbacks run, buffered output is flushed."""
    script = tmp_path / "leaves_work.py"
    script.write_text(
        "import atexit, sys, threading, time\n"
        "def workload():\n"
        f"    atexit.register(lambda: open({str(tmp_path / 'atexit')!r}, 'w').write('ran'))\n"
        "    def late():\n"
        "        time.sleep(0.3)\n"
        f"        open({str(tmp_path / 'thread')!r}, 'w').write('done')\n"
        "    threading.Thread(target=late).start()\n"
        "    sys.stdout.write('no newline, still buffered')\n"
        "    sys.stderr = object()  # a workload may leave the streams in any state\n"
    )
    messages, code, stdout, _ = run_worker(script)
    assert code == 0 and messages[-1]["type"] == "done"
    assert (tmp_path / "thread").read_text() == "done"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert stdout.endswith("no newline, still buffered")


def test_rows_go_out_before_the_trace_is_written_then_its_path(workloads, tmp_path):
    """Writing a big trace takes 0.5-1 s: the rows do not wait for it."""
    trace = tmp_path / "t.json"
    messages, code, _, _ = run_worker(workloads / "tiny.py", "--trace", str(trace))
    assert code == 0 and trace.exists()
    kinds = [m.get("phase", m["type"]) for m in messages]
    assert kinds[-4:] == ["rows", "tracing", "meta", "done"]
    first, second = [m for m in messages if m["type"] == "meta"]
    assert first["head"]["trace_path"] is None and second["head"]["trace_path"] == str(trace)
    assert second["head"]["context"] == first["head"]["context"]

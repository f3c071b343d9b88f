"""Images whose executable has no usable path (exec'd from a memfd, or
deleted since exec): the runtime opens /proc/self/exe itself and saves a
copy beside the log (STEM.<build-id>.exe) that the log names. When that
copy is gone, or could not be made, the readers say so in one line naming
the object and the cause, and --symbol with the same build still works."""
import os
import re
import subprocess

from sfkit import SFTRACE, build_c, check, count_calls, dump_events, eq, run, tmpdir


def build_id(exe):
    out = subprocess.run(["readelf", "-n", exe], capture_output=True, text=True, check=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


def memfd_run(pre=None):
    exe = build_c("skep24f_memfd_exec", ["skep24f_memfd_exec.c"])
    d = tmpdir()
    copy = os.path.join(d, f"sf.{build_id(exe)}.exe")
    if pre:
        pre(copy)
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe])
    eq(t.stdout, "child 500500\nparent 2 status 3\n", "output")
    child = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log") and f != "sf.log"]
    eq(len(child), 1, os.listdir(d))
    return exe, copy, child[0], t


def test_memfd_image_copy_removed_is_named_by_the_reader():
    """The copy holds the image (same bytes as the program); with it gone,
    report stops with `COPY: No such file or directory; use --symbol ...`, exit 1, nothing
    on stdout; --symbol with the program gives the 1000 leaf calls."""
    exe, copy, child, _ = memfd_run()
    eq(open(copy, "rb").read(), open(exe, "rb").read(), "the saved image")
    eq(count_calls(dump_events(child))["leaf"], 1000, "leaf calls through the copy")
    os.unlink(copy)
    r = run([SFTRACE, "report", child], check_rc=1)
    eq((r.stdout, r.stderr), ("", f"sftrace: error: {copy}: No such file or directory; use --symbol PATH to name a "
                                  "copy of the recorded build, --force for placeholder names, or --no-symbols\n"),
       "report without the copy")
    eq(count_calls(dump_events(child, ["--symbol", exe]))["leaf"], 1000, "leaf calls with --symbol")


def test_memfd_image_copy_impossible_is_said_by_runtime_and_reader():
    """A directory in the copy's place: the runtime says it could not save
    the image (one line, record repeats nothing else), the log keeps the
    kernel's name, and report says that file was deleted or a memfd and no
    copy was saved; --symbol still resolves the 1000 leaf calls."""
    exe, copy, child, t = memfd_run(os.mkdir)
    lines = [x for x in t.stderr.splitlines() if "cannot save" in x]
    eq(lines, ["sftrace: cannot save a copy of the executable /memfd:prog (deleted): Is a directory"], t.stderr)
    check(os.path.isdir(copy) and not os.listdir(copy), "the directory left as it was")
    eq([f for f in os.listdir(os.path.dirname(copy)) if ".tmp." in f], [], "no temporary copy left")
    r = run([SFTRACE, "report", child], check_rc=1)
    eq((r.stdout, r.stderr), ("", "sftrace: error: /memfd:prog (deleted): the file was deleted (or was a memfd) "
                                  "while the program ran and no copy was saved beside the log; name the same "
                                  "build with --symbol PATH\n"), "report")
    eq(count_calls(dump_events(child, ["--symbol", exe]))["leaf"], 1000, "leaf calls with --symbol")

"""Issue 29's cost of --auto-args and -A '.../s': strings that lie on the
thread's own stack are copied without a system call; the values stay the
same (tests/fixtures/args_stack_str.c)."""
import os
import re
import shutil

from sfkit import SFTRACE, Skip, build_c, check, eq, record, run, tmpdir


def test_stack_strings_copied_without_a_system_call():
    # 2,000 calls of take() with a buffer on main's stack, 10 with a heap
    # string, one with a string in the last 4 bytes of a makecontext
    # stack below an unmapped page. Before: one process_vm_readv a string
    # (2,011); now only the heap's and the other stack's (11).
    if not shutil.which("strace"):
        raise Skip("strace not installed")
    exe = build_c("args_stack_str", ["args_stack_str.c"])
    stats = os.path.join(tmpdir(), "strace.txt")
    p, log = record([exe], args=["-q", "-A", "take@arg1/s"],
                    prefix=["strace", "-f", "-c", "-e", "trace=process_vm_readv", "-o", stats])
    eq(p.stdout, "14953\n", "the program's output is unchanged")
    with open(stats) as f:
        m = re.search(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?process_vm_readv$", f.read(), re.M)
    check(m is not None, "strace counted process_vm_readv")
    eq(int(m.group(1)), 11, "process_vm_readv calls: the heap's 10 strings and the makecontext stack's one")
    out = run([SFTRACE, "replay", "--no-pager", log]).stdout
    calls = [line.split("| ", 1)[1].strip() for line in out.splitlines()
             if not line.startswith("#") and "take(" in line]
    eq(len(calls), 2011, "take's calls")
    eq(calls[:2] + calls[1999:2001] + calls[2009:], [
        'take("row 0");', 'take("row 1");', 'take("row 1999");', 'take("heap 0");', 'take("heap 9");',
        'take("top");'], "the strings")

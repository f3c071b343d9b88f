"""Skeptic (issue 24): the runtime stood in front of libc's mprotect,
munmap and mremap (and syscall() for them) so that --auto-args / -A
string reads from the thread's own live stack could be plain loads, and
stands in front of sigaltstack so that landings need no system call.
Tried on programs of our own: each must behave as untraced (return values,
errno, signals, symbol addresses), and a pointer into a page of the stack
the program made unreadable must not crash it. Six ways to make that page
unreadable killed the traced program (libc's pkey_mprotect, mprotect by
dlsym, mmap MAP_FIXED, madvise MADV_GUARD_INSTALL, a bare syscall, another
thread's mprotect): the plain loads and the mprotect watch were withdrawn
(bench/README.md, args), and these cases now pass; sigaltstack is exported
as glibc's default version, so dlsym and dlvsym agree with &sigaltstack."""
import os
import re

import sfkit

LIBS = ["-ldl", "-lpthread"]


def _exe(name):
    return sfkit.build_c("skeptic_interpose_" + name, ["skeptic_interpose_" + name + ".c"], libs=LIBS)


def _same_output(exe, args=(), rec_args=("-q",), sort=False):
    """exe's stdout and exit status untraced and under record REC_ARGS."""
    want = sfkit.run([exe] + list(args), check_rc=None)
    got, _ = sfkit.record([exe] + list(args), args=list(rec_args), check_rc=None)
    norm = (lambda s: sorted(s.splitlines())) if sort else (lambda s: s.splitlines())
    sfkit.eq(got.returncode, want.returncode, f"{os.path.basename(exe)} {args} exit status under {rec_args}")
    sfkit.eq(norm(got.stdout), norm(want.stdout), f"{os.path.basename(exe)} {args} output under {rec_args}")
    return want.stdout


def test_skeptic_interpose_errno_every_failure():
    """EINVAL (unaligned, bad prot/flags), ENOMEM (unmapped, huge, grow in
    place), EFAULT/ENOMEM/EINVAL/EPERM of sigaltstack (EPERM: changed while
    on it, from a handler), mremap with 5 arguments (FIXED|MAYMOVE,
    DONTUNMAP, DONTUNMAP|FIXED), SS_AUTODISARM, SS_DISABLE, query-only,
    syscall() forms, mprotect from a handler keeping the caller's errno."""
    exe = _exe("errs")
    out = None
    for rec in (("-q",), ("-q", "--auto-args"), ("-q", "-A", "target@arg1/s")):
        out = _same_output(exe, rec_args=rec)
    for line in ("mprotect unaligned r=-1 errno=22", "mremap grow nomove r=-1 errno=12",
                 "mremap fixed to dst+pg: ok errno=0 val=x", "mremap dontunmap: ok errno=0 old=0 new=y",
                 "sigaltstack efault ss r=-1 errno=14", "in handler: set r=-1 errno=1, disable r=-1 errno=1",
                 "handler: mprotect r=-1 errno=22, main errno after=4242"):
        sfkit.check(line in out, f"untraced output lacks {line!r}:\n{out}")


def test_skeptic_interpose_success_leaves_errno_own_mprotect():
    """A program's own mprotect is still the one it calls; successful
    munmap, mremap, sigaltstack, syscall() leave errno as it was."""
    out = _same_output(_exe("own"))
    sfkit.check("own mprotect r=0 errno=12345 mine=1" in out, out)


def test_skeptic_interpose_threads_own_altstacks():
    """4 threads one after another, then 4 at once, each with its own
    signal stack (then another through syscall(), then SS_DISABLE): every
    one of 400 signals per thread runs on the stack it set."""
    out = _same_output(_exe("thr"), sort=True)
    sfkit.eq(out.count("on_alt=400 after_disable=0"), 8, "threads that saw all 400 on their stack")


def test_skeptic_interpose_stack_unreadable_by_mprotect():
    """mprotect(PROT_NONE) on a live stack page, pointer passed to -A
    target@arg1/s and under --auto-args: the notice turns plain loads off."""
    exe = _exe("stk")
    for rec in (("-q", "-A", "target@arg1/s"), ("-q", "--auto-args")):
        _same_output(exe, ["mprotect"], rec_args=rec)


def _stack_hidden(mode):
    exe = _exe("stk")
    for rec in (("-q", "-A", "target@arg1/s"), ("-q", "--auto-args")):
        _same_output(exe, [mode], rec_args=rec)


def test_skeptic_interpose_stack_unreadable_by_pkey_mprotect():
    _stack_hidden("pkey")


def test_skeptic_interpose_stack_unreadable_by_dlsym_mprotect():
    _stack_hidden("dlsym")


def test_skeptic_interpose_stack_unreadable_by_mmap_fixed():
    _stack_hidden("mmap")


def test_skeptic_interpose_stack_unreadable_by_madvise_guard():
    _stack_hidden("guard")


def test_skeptic_interpose_stack_unreadable_by_raw_syscall():
    _stack_hidden("rawsys")


def test_skeptic_interpose_other_thread_stack_unreadable():
    _same_output(_exe("xthr"), rec_args=("-q", "-A", "target@arg1/s"))


def test_skeptic_interpose_dlsym_addresses():
    _same_output(_exe("dl"))


def _callgrind_main(cmd, d, tag):
    """Instructions counted in main (inclusive) of the jit program run by
    CMD under callgrind (children followed)."""
    sfkit.run(["valgrind", "--tool=callgrind", "--trace-children=yes", "--toggle-collect=main",
               "--callgrind-out-file=" + os.path.join(d, tag + ".%p")] + cmd, timeout=120)
    for f in sorted(os.listdir(d)):
        if not f.startswith(tag + "."):
            continue
        text = open(os.path.join(d, f)).read()
        if re.search(r"^cmd:\s+\S*skeptic_interpose_jit ", text, re.M):
            m = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
            return int(m.group(1))
    raise AssertionError(f"no callgrind output for the jit program in {d}")


def test_skeptic_interpose_jit_cost_per_mprotect():
    """20,000 RW<->RX flips (and RW<->NONE, the case that checks the
    stack): callgrind instructions per mprotect call traced minus untraced
    under 100 (seen: +7 for RX, +39.5 for NONE)."""
    # The plain build: valgrind cannot run the suite's AddressSanitizer
    # build (CI's), and its instructions would say nothing of the runtime's.
    plain = os.path.join(sfkit.ROOT, "build", "sftrace")
    if not os.access(plain, os.X_OK):
        raise sfkit.Skip("no plain build (build/sftrace) to count instructions on")
    exe = _exe("jit")
    d = sfkit.tmpdir()
    for extra, tag in (([], "rx"), (["n"], "none")):
        base = _callgrind_main([exe, "20000"] + extra, d, tag + "u")
        # the writer thread by name (sfkit.CG_WRITER): auto hands off on
        # the measured thread under valgrind
        traced = _callgrind_main([plain, "record", "-q", "-o", os.path.join(d, tag + ".log")] + sfkit.CG_WRITER +
                                 ["--", exe, "20000"] + extra, d, tag + "t")
        per = (traced - base) / 40000
        sfkit.check(per < 100, f"{tag}: {per:.1f} more instructions per mprotect traced ({base} vs {traced})")


if __name__ == "__main__":
    sfkit.main(globals())

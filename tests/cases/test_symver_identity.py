"""Symbol versions of the runtime's wrappers (issue 24). Untraced, a
program's &close, dlsym(RTLD_DEFAULT, "close") and dlvsym(RTLD_DEFAULT,
"close", "GLIBC_2.2.5") are one address. Traced, the first two were the
runtime's wrapper and the third libc's own: glibc's dlvsym skips an
unversioned definition, so a program that looked a function up by version
went past the wrapper (53 of the 54 wrappers on x86-64 then; sigaltstack
alone had been fixed; 56 now, with pclose and fclose). Each wrapper now carries libc's (or libgcc_s's) default
version, and the older versions glibc keeps with other behaviours are
wrappers of their own (posix_spawn, posix_spawnp, quick_exit,
__libc_start_main). So do libsftrace-alloc.so's (record --alloc: libc's
allocator family, libstdc++'s operator new family), all 19 of which
dlvsym went past. tests/fixtures/symver_identity.c names every wrapper.
The stand-ins for libgcc_s's _Unwind_SetIP and _Unwind_Find_FDE and for
libstdc++'s operator new forms are no longer exported (got_bind.c binds
the references to them): &name, dlsym and dlvsym are libgcc_s's and
libstdc++'s, traced as untraced, and the runtime exports 58 wrappers
(dladdr and dladdr1 among them: dladdr.c; dlsym and dlvsym: dlsym.c),
libsftrace-alloc.so 11. The
fixture tells objects apart by their mappings: dladdr, traced, names the
definition the program would have had untraced."""
import os
import re
import shutil
import subprocess
import sys

import sfkit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_aarch64 as a64  # noqa: E402

LIBS = ["-ldl", "-lgcc_s", "-l:libstdc++.so.6"]  # the arm64 sysroot has no libstdc++.so
IDENTITY = re.compile(r"^(\S+)@(\S+) dlsym(==|!=)& dlvsym(==|!=)&$")
# x86-64: (compat versions looked up by dlvsym, the object each is in)
OLD_X86 = ["posix_spawn@GLIBC_2.2.5", "posix_spawnp@GLIBC_2.2.5", "quick_exit@GLIBC_2.10",
           "__libc_start_main@GLIBC_2.2.5", "dladdr@GLIBC_2.2.5", "dladdr1@GLIBC_2.3.3",
           "dlsym@GLIBC_2.2.5", "dlvsym@GLIBC_2.2.5"]
OLD_A64 = ["quick_exit@GLIBC_2.17", "__libc_start_main@GLIBC_2.17", "dladdr@GLIBC_2.17", "dladdr1@GLIBC_2.17",
           "dlsym@GLIBC_2.17", "dlvsym@GLIBC_2.17"]


def _lines(out):
    return out.splitlines()


def _check_identity(untraced, traced, old, runtime_name="libsftrace.so"):
    """Every wrapper: dlsym and dlvsym equal &name, untraced and traced
    alike; the old versions are libc's untraced and the runtime's traced."""
    u, t = _lines(untraced), _lines(traced)
    ident_u = [ln for ln in u if IDENTITY.match(ln)]
    ident_t = [ln for ln in t if IDENTITY.match(ln)]
    sfkit.eq(len(ident_u), 63, "wrappers named by the fixture")
    sfkit.eq(ident_t, ident_u, "identity lines traced vs untraced")
    bad = [ln for ln in ident_u if not ln.endswith("dlsym==& dlvsym==&")]
    sfkit.eq(bad, [], "wrappers whose dlsym or dlvsym is not &name untraced (fixture's version table)")
    for name in old:
        # one address for both
        is_default = "yes" if name.startswith(("__libc_start_main", "dladdr", "dlsym", "dlvsym")) else "no"
        sfkit.check(f"old {name} in libc.so.6, is default: {is_default}" in u, f"{name} untraced:\n{untraced}")
        sfkit.check(f"old {name} in {runtime_name}, is default: {is_default}" in t,
                    f"{name} traced (the runtime must stand in front of it):\n{traced}")
    sfkit.eq(u[-1], "close in libc.so.6", "untraced close")
    sfkit.eq(t[-1], "close in " + runtime_name, "traced close")
    sfkit.eq(len(t), len(ident_t) + len(old) + 1, "lines traced")


ALLOC_LIB = os.path.join(os.path.dirname(sfkit.RUNTIME), "libsftrace-alloc.so")


def _check_alloc_identity(untraced, traced, n=19):
    u, t = _lines(untraced), _lines(traced)
    sfkit.eq(len(u), n + 1, "untraced lines")
    sfkit.eq(t[:-1], u[:-1], "allocator identity lines under --alloc vs untraced")
    bad = [ln for ln in u[:-1] if not (IDENTITY.match(ln) and ln.endswith("dlsym==& dlvsym==&"))]
    sfkit.eq(bad, [], "allocator functions whose dlsym or dlvsym is not &name untraced")
    sfkit.eq((u[-1], t[-1]), ("malloc in libc.so.6", "malloc in libsftrace-alloc.so"), "malloc's object")


def _exe():
    return sfkit.build_c("symver_identity", ["symver_identity.c"], libs=LIBS)


def test_symver_identity_every_wrapper():
    exe = _exe()
    want = sfkit.run([exe])
    got, _ = sfkit.record([exe], args=["-q"])
    _check_identity(want.stdout, got.stdout, OLD_X86)


def test_symver_identity_alloc_wrappers():
    exe = _exe()
    want = sfkit.run([exe, "alloc"])
    got, _ = sfkit.record([exe, "alloc"], args=["-q", "--alloc"])
    _check_alloc_identity(want.stdout, got.stdout)


def test_symver_old_quick_exit_runs_thread_local_destructors():
    """quick_exit@GLIBC_2.10 (programs linked before glibc 2.24) runs the
    thread's thread_local destructors; the runtime's unversioned wrapper
    went on to the default one, and the destructor's line was missing."""
    exe = _exe()
    want = ["quick_exit@GLIBC_2.10(3)", "thread_local destructor ran: main's"]
    p = sfkit.run([exe, "old-quick-exit"], check_rc=3)
    sfkit.eq(_lines(p.stdout), want, "untraced")
    got, log = sfkit.record([exe, "old-quick-exit"], args=["-q"], check_rc=3)
    sfkit.eq(_lines(got.stdout), want, "traced")
    calls = sfkit.count_calls(sfkit.dump_events(log))
    sfkit.eq((calls["main"], calls["old_quick_exit"], calls["tls_dtor"]), (1, 1, 1), "calls traced")


def _dynsyms(objdump, path):
    """{name: {version: is_default}} of the functions PATH defines."""
    out = sfkit.run([objdump, "-T", path]).stdout
    syms = {}
    for ln in out.splitlines():
        m = re.match(r"^[0-9a-f]+ .{5}DF (\S+)\s+[0-9a-f]+\s+(\(?)([^\s)]+)\)?\s+(?:\.protected )?(\S+)$", ln)
        if not m or m.group(1) == "*UND*":
            continue
        syms.setdefault(m.group(4), {})[m.group(3)] = not m.group(2)
    return syms


def _check_exports(objdump, runtime, libdir, libs=("libc.so.6", "libgcc_s.so.1"), own_want=None):
    """Every function the runtime exports that libc or libgcc_s (LIBS)
    defines carries each of their versions, with the same default."""
    rt = _dynsyms(objdump, runtime)
    theirs = {}
    for lib in libs:
        for name, vers in _dynsyms(objdump, os.path.join(libdir, lib)).items():
            theirs.setdefault(name, vers)
    wrappers = sorted(n for n in rt if n in theirs)
    own = sorted(n for n in rt if n not in theirs)
    sfkit.eq(own, own_want if own_want is not None else ["sftrace_alloc_event", "sftrace_heap_alloc", "sftrace_heap_alloc_ra", "sftrace_heap_attach",
                   "sftrace_heap_free", "sftrace_heap_free_ra", "sftrace_heap_realloc", "sftrace_heap_site_slot",
                   "sftrace_setup"], "exports that wrap nothing")
    diff = {n: (rt[n], theirs[n]) for n in wrappers if rt[n] != theirs[n]}
    sfkit.eq(diff, {}, "wrappers whose versions differ from the wrapped library's (runtime, theirs)")
    return wrappers


def _check_alloc_exports(objdump, lib, libdir):
    wrappers = _check_exports(objdump, lib, libdir, libs=("libc.so.6", "libstdc++.so.6"),
                              own_want=["sftrace_alloc_binds"])
    sfkit.eq(len(wrappers), 11, "allocator wrappers")


def test_symver_exports_match_libc():
    wrappers = _check_exports("objdump", sfkit.RUNTIME, "/lib/x86_64-linux-gnu")
    sfkit.eq(len(wrappers), 64, "wrappers")
    _check_alloc_exports("objdump", ALLOC_LIB, "/usr/lib/x86_64-linux-gnu")


def test_symver_identity_aarch64():
    a64.toolchain()
    if not shutil.which("aarch64-linux-gnu-objdump"):
        raise sfkit.Skip("aarch64-linux-gnu-objdump missing (binutils-aarch64-linux-gnu)")
    wrappers = _check_exports("aarch64-linux-gnu-objdump", a64.RUNTIME, "/usr/aarch64-linux-gnu/lib")
    sfkit.eq(len(wrappers), 64, "aarch64 wrappers")
    _check_alloc_exports("aarch64-linux-gnu-objdump", os.path.join(a64.ABUILD, "libsftrace-alloc.so"),
                         "/usr/aarch64-linux-gnu/lib")
    # Without libstdc++ (qemu's multiarch root has none for arm64): the
    # allocator family alone under --alloc.
    exe = exe_c = sfkit.build_c("symver_identity_c", ["symver_identity.c"], flags=[
        "--target=" + a64.TARGET, "-fnoxray-link-deps", "-DNO_CXX"], libs=LIBS[:2], outdir=a64.AFIX)
    want = sfkit.run(["qemu-aarch64", "-L", a64.SYSROOT, exe], timeout=120)
    got = a64.qemu([exe], os.path.join(sfkit.tmpdir(), "sf.log"))
    _check_identity(want.stdout, got.stdout, OLD_A64)
    want = ["quick_exit@GLIBC_2.17(3)", "thread_local destructor ran: main's"]
    p = sfkit.run(["qemu-aarch64", "-L", a64.SYSROOT, exe, "old-quick-exit"], check_rc=3, timeout=120)
    sfkit.eq(_lines(p.stdout), want, "aarch64 untraced")
    p = a64.qemu([exe, "old-quick-exit"], os.path.join(sfkit.tmpdir(), "sf.log"), check_rc=3)
    sfkit.eq(_lines(p.stdout), want, "aarch64 traced")
    want = sfkit.run(["qemu-aarch64", "-L", a64.SYSROOT, exe_c, "alloc"], timeout=120)
    got = a64.qemu([exe_c, "alloc"], os.path.join(sfkit.tmpdir(), "sf.log"),
                   env=["LD_PRELOAD=" + a64.RUNTIME + ":" + os.path.join(a64.ABUILD, "libsftrace-alloc.so")])
    _check_alloc_identity(want.stdout, got.stdout, n=11)


if __name__ == "__main__":
    sfkit.main(globals())

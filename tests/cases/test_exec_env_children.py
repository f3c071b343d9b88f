"""Children of a program that emptied its environment (clearenv, then its
own PATH) stay traced through every route that uses `environ`: popen ("r"
and "w"), system() and execvp. exec_env.c builds each child's environment
from environ plus the runtime's copy of the tracer's variables taken at
start; the program's own environ stays as it set it."""
import os
import re

from sfkit import SFTRACE, build_c, check, count_calls, dump_events, eq, run, tmpdir


def test_clearenv_popen_system_execvp_children_traced():
    """Output identical to the untraced run (what popen read, pclose's and
    system's statuses 5, 6, 7, system(NULL) 1, execvp's 8, environ holding
    PATH alone), and one log per child with its 1000 leaf calls."""
    exe = build_c("clearenv_popen", ["clearenv_popen.c"])
    u = run([exe])
    eq(u.stdout.splitlines()[-6:], ["pclose w: exit 6", "system 500500", "system: exit 7; system(NULL) 1",
                                    "execvp 500500", "execvp: exit 8", "environ: PATH=/usr/bin:/bin"],
       "untraced")
    d = tmpdir()
    t = run([SFTRACE, "record", "-o", os.path.join(d, "sf.log"), "--", exe])
    eq(t.stdout, u.stdout, "output")
    logs = sorted(f for f in os.listdir(d) if f.endswith(".log"))
    leaf = sorted(count_calls(dump_events(os.path.join(d, f))).get("leaf", 0) for f in logs)
    eq(leaf, [0, 1000, 1000, 1000, 1000], f"leaf calls per log: {logs}\n{t.stderr}")


def test_popen_after_clearenv_leaves_environ_as_the_program_set_it():
    """popen after clearenv (environ NULL), then after setenv: environ is
    the program's own array again after each call (NULL, then the same
    pointer, no LD_PRELOAD in it), and 150 more popens grow the anonymous
    address space by no more than the runtime's own one-off mappings (the
    child's environment is mapped once and reused; mapped anew each time
    it would be 150 pages, 600 kB, or more). Those: a slot's packing workspace,
    mapped at the slot's first hand-off (runtime/encode.c, about 204 kB),
    for the thread's slot and its spare; when the first hand-off falls in
    the window depends on the time (a batch spans at most 2^31 ticks), so
    a bound, not 0 (project CI on 7f38cf67: 204 kB, 12 of 20 runs here)."""
    exe = build_c("popen_environ_kept", ["popen_environ_kept.c"])
    u = run([exe, "150"])
    eq(u.stdout, "after clearenv: popen read 3, environ NULL\n"
       "after setenv: popen read 4, environ the same array, APP=1, LD_PRELOAD unset\n"
       "150 popens read 150, address space grew 0 kB\n", "untraced")
    d = tmpdir()
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", exe, "150"])
    head, last = t.stdout.rsplit("\n", 2)[0], t.stdout.rsplit("\n", 2)[1]
    eq(head, u.stdout.rsplit("\n", 2)[0], "traced")
    m = re.fullmatch(r"150 popens read 150, address space grew (\d+) kB", last)
    check(m and int(m.group(1)) <= 2 * 208, f"traced: {t.stdout!r}")


def _popen_spawn_env():
    exe = build_c("popen_spawn_env", ["popen_spawn_env.c"], libs=["-lpthread", "-ldl"])
    u = run([exe])
    eq(u.stdout, "popen child: \nenviron changed during popen: 0\n\nlibc posix_spawn: status 0\n", "untraced")
    d = tmpdir()
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", exe])
    return t.stdout.splitlines(keepends=True), t.stderr


def test_popen_children_traced_environ_untouched():
    """After clearenv, environ = the program's {PATH}: popen's shell (50
    times) sees the tracer's variables, while a thread watching environ
    never sees it change. Untraced the shells print an empty line. The
    variables were added by pointing environ at the runtime's array
    during popen (a watching thread saw "changed 1"), then by rewriting
    libc's posix_spawn (a program reading libc's code saw it changed);
    now the runtime's copy of glibc's popen spawns the shell with an
    explicit environment (exec_env.c popen_copy)."""
    out, err = _popen_spawn_env()
    eq(out[:2], ["popen child: traced\n", "environ changed during popen: 0\n"], f"traced ({err[-500:]!r})")


def test_libc_posix_spawn_through_a_libc_handle_traced():
    """libc's posix_spawn reached through a libc handle
    (dlsym(dlopen("libc.so.6"))) with an environment of PATH alone: the
    shell is traced. dlsym on an object's handle answers the runtime's
    wrapper where the answer is the definition the program's own reference
    binds past the runtime (dlsym.c). It was traced once only while the
    runtime rewrote libc's posix_spawn, which a program reading libc's
    code saw (skeptic24k)."""
    out, err = _popen_spawn_env()
    eq(out[2:], ["traced\n", "libc posix_spawn: status 0\n"], f"traced ({err[-500:]!r})")


def test_posix_spawn_every_version_and_lookup_behaves_as_libcs_and_traces():
    """posix_spawn and posix_spawnp reached as linked (the default version),
    through dlsym (RTLD_DEFAULT, RTLD_NEXT) and through dlvsym by each of
    glibc's versions (GLIBC_2.15, and GLIBC_2.2.5, which runs a file
    without "#!" through /bin/sh), each spawning a script without and with
    "#!" with an environment of PATH alone: every result is untraced's
    (ENOEXEC, 8, from the default version for the first; 0 and the script
    run from the old one) and every script that runs has the tracer's
    preload. Once the runtime's unversioned definitions took every
    version: the old one lost its shell (ENOEXEC), and dlvsym skipped them
    (its children untraced)."""
    exe = build_c("spawn_versions", ["spawn_versions.c"], libs=["-ldl"])
    d = tmpdir()
    u = run([exe, d])
    lines = u.stdout.splitlines()
    eq(lines.count("ran"), 10, f"untraced scripts run: {u.stdout}")
    eq([ln for ln in lines if "no #!" in ln and "r=8" in ln][-1], "dlvsym next posix_spawnp new no #!: r=8 status=-1",
       "untraced: the default version refuses a file without #!")
    eq([ln for ln in lines if " old no #!" in ln], ["dlvsym default posix_spawn old no #!: r=0 status=0",
                                                   "dlvsym next posix_spawnp old no #!: r=0 status=0"],
       "untraced: the old version runs it")
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", exe, d])
    eq(t.stdout, u.stdout.replace("ran\n", "ran traced\n"), "traced: results, and every script traced")

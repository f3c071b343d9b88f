"""dlsym and dlvsym traced (issue 24, src/runtime/dlsym.c): on an object's
handle, a name the runtime wraps answers what the program's own reference
holds (the wrapper), so libc's posix_spawn reached through libc's handle
starts a traced child; every other answer, and every RTLD_DEFAULT and
RTLD_NEXT lookup (made in the scope of the caller's object), is as
untraced: from a plugin loaded RTLD_LOCAL, from a dlmopen namespace, from
a preload of the user's before or after the runtime. dladdr of every
answer, and dlerror around them, are as untraced."""
import os

from sfkit import FIXBUILD, build_c, eq, record, run

# glibc's first symbol version here (a dlvsym of posix_spawn's old one)
FIRST = {"x86_64": "GLIBC_2.2.5", "aarch64": "GLIBC_2.17"}[os.uname().machine]
NOTAIL = ["-fno-optimize-sibling-calls"]  # dlsym's return address must be in the caller's object


def _fixture():
    build_c("libdlsc_dep.so", ["dlsym_scope_dep.c"], shared=True, xray=False)
    build_c("libdlsc_plug.so", ["dlsym_scope_plug.c"], shared=True, xray=False, flags=NOTAIL,
            libs=["-Wl,--no-as-needed", "-L" + FIXBUILD, "-ldlsc_dep", "-Wl,-rpath," + FIXBUILD])
    pre = build_c("libdlsc_pre.so", ["dlsym_scope_pre.c"], shared=True, xray=False, flags=NOTAIL)
    exe = build_c("dlsym_scope", ["dlsym_scope.c"], libs=["-ldl", "-Wl,-rpath," + FIXBUILD])
    return exe, pre


def _untraced(exe, env=None):
    out = run([exe, FIRST], env=env).stdout
    eq(out.count("untraced\n"), 1, f"untraced: the shell's line\n{out}")
    return out


def test_libc_handle_answers_the_wrapper_and_its_child_is_traced():
    """What untraced prints, line for line, with and without --alloc;
    only the shell spawned through libc's handle says "traced". Among the
    lines: libc's handle's posix_spawn, execve, close, malloc and free are
    the program's own &posix_spawn ..., dladdr of it names libc's
    posix_spawn; the old version (dlvsym) is RTLD_DEFAULT's; a plugin's own
    close stays the plugin's; a dlmopen namespace's libc answers its own
    definition; dlerror is untouched by a found name, and says what glibc
    says for a missing one."""
    exe, _ = _fixture()
    want = _untraced(exe)
    for k in ("libc posix_spawn: libc.so.6:posix_spawn saddr_is_p=1", "libc posix_spawn is &posix_spawn: 1",
              "libc close is &close: 1", "plugin's handle close: libdlsc_plug.so:close saddr_is_p=1",
              "RTLD_DEFAULT from the plugin: dlsc_dep_fn: libdlsc_dep.so:dlsc_dep_fn saddr_is_p=1",
              "RTLD_DEFAULT from the program: dlsc_dep_fn: NULL",
              "dlmopen libc: namespace>0 1, posix_spawn found 1, is the first libc's 0, in the namespace's libc 1"):
        eq(k in want.splitlines(), True, f"untraced says {k!r}:\n{want}")
    for args in ((), ("--alloc",)):
        p, _ = record([exe, FIRST], args=["-q"] + list(args))
        eq(p.stdout, want.replace("untraced\n", "traced\n"), f"traced {args}")


def test_preload_of_the_users_around_record():
    """LD_PRELOAD given to record: the user's preload comes before the
    runtime. Its getpid wrapper finds libc's through RTLD_NEXT (3 calls
    counted, no recursion), and what RTLD_NEXT answers from it is named as
    untraced."""
    exe, pre = _fixture()
    want = _untraced(exe, env={"LD_PRELOAD": pre})
    eq("preload: getpid calls 3" in want, True, "untraced: the preload's wrapper")
    p, _ = record([exe, FIRST], args=["-q"], env={"LD_PRELOAD": pre, "ASAN_OPTIONS": "verify_asan_link_order=0"})
    eq(p.stdout, want.replace("untraced\n", "traced\n"), "traced")


def test_preload_of_the_users_set_inside():
    """LD_PRELOAD set by the command: the runtime comes first, the user's
    preload after it. RTLD_NEXT from the preload is looked up from the
    preload (a lookup made from the runtime would find the preload's own
    getpid and recurse)."""
    exe, pre = _fixture()
    want = _untraced(exe, env={"LD_PRELOAD": pre})
    p, _ = record(["env", "LD_PRELOAD=" + pre, exe, FIRST], args=["-q"])
    eq(p.stdout, want.replace("untraced\n", "traced\n"), "traced")

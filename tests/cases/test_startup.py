"""Start-up (docs/DESIGN.md "Start-up"): the runtime's constructor is the
first of the process (libsftrace.so is linked -z initfirst), so every
other constructor, of any object linked into the program, runs patched,
and with --alloc every allocation made in one is recorded. Exact counts
from fixtures whose start-up is known."""
import os
import re

from sfkit import FIXBUILD, SFTRACE, Skip, build_c, count_calls, dump_events, eq, record, run


def needed_fixture():
    build_c("libneeded_leaf.so", ["needed_ctor.c"], flags=["-DLEAF"], shared=True)
    build_c("libneeded_mid.so", ["needed_ctor.c"], shared=True,
            libs=["-Wl,--no-as-needed", "-L" + FIXBUILD, "-lneeded_leaf", "-Wl,-rpath," + FIXBUILD])
    return build_c("needed_main", ["needed_main.c"],
                   libs=["-Wl,--no-as-needed", "-L" + FIXBUILD, "-lneeded_mid", "-lneeded_leaf",
                         "-Wl,-rpath," + FIXBUILD])


def test_constructors_of_linked_libraries_are_traced():
    # leaf_init and mid_init are their libraries' only functions and call
    # nothing; pre_init is the executable's preinit array. All three ran
    # before libsftrace.so's constructor until it was made initfirst, and
    # were missing from the trace (0 calls). Each is called once, in the
    # loader's order, before the executable's constructor and main.
    exe = needed_fixture()
    want = "pre 1 leaf 7 mid 12 exe 2 environ at preinit 0\n"
    eq(run([exe]).stdout, want, "untraced output")
    p, log = record([exe], args=["-q"])
    eq(p.stdout, want, "traced output")
    events = dump_events(log)
    calls = count_calls(events)
    eq({f: calls.get(f) for f in ("pre_init", "leaf_init", "mid_init", "exe_init", "main")},
       {"pre_init": 1, "leaf_init": 1, "mid_init": 1, "exe_init": 1, "main": 1}, "calls")
    eq([e.name for e in events if e.kind == "ENTRY"], ["pre_init", "leaf_init", "mid_init", "exe_init", "main"],
       "entries in start-up order")
    dump = run([SFTRACE, "dump", log]).stdout
    for lib in ("libneeded_leaf.so", "libneeded_mid.so"):
        eq(bool(re.search(re.escape(lib) + r".*\n.*sleds 2, patched 2", dump)), True, f"{lib} patched at start")


def test_dlopen_from_a_linked_librarys_constructor_is_hooked():
    # opener_init, a linked library's constructor, dlopens a library whose
    # only function is its constructor. The loader hook is installed by the
    # runtime's constructor, the first: plug_init runs patched. Before: the
    # dlopen came before the hook, and plug_init was missing.
    plugin = build_c("libctor_volatile.so", ["ctor_only.c"], flags=["-DCTOR_VOLATILE=volatile"], shared=True)
    build_c("libneeded_opener.so", ["needed_opener.c"], shared=True, libs=["-ldl"])
    exe = build_c("needed_opener_main", ["needed_opener_main.c"],
                  libs=["-L" + FIXBUILD, "-lneeded_opener", "-Wl,-rpath," + FIXBUILD, "-ldl"])
    p, log = record([exe], args=["-q"], env={"NEEDED_PLUGIN": plugin})
    eq(p.stdout, "r=41\n", "the plugin's constructor ran")
    calls = count_calls(dump_events(log))
    eq({f: calls.get(f) for f in ("opener_init", "plug_init", "main")}, {"opener_init": 1, "plug_init": 1, "main": 1},
       "calls")


def test_allocator_library_is_not_called_before_its_constructor():
    # The executable links an allocator (malloc, calloc, realloc, free)
    # that aborts if called before its own constructor. The runtime's
    # constructor runs before that one and must not reach it: the writer
    # thread (pthread_create callocs its DTV through the program's calloc)
    # is created only at __libc_start_main, after every library's
    # constructor. A writer created in the first step makes this abort.
    build_c("libneeded_allocator.so", ["needed_allocator.c"], shared=True, xray=False)
    exe = build_c("needed_allocator_main", ["needed_allocator_main.c"], flags=["-fno-builtin"],
                  libs=["-Wl,--no-as-needed", "-L" + FIXBUILD, "-lneeded_allocator", "-Wl,-rpath," + FIXBUILD])
    eq(run([exe]).stdout, "bump 4\n", "untraced output")
    for extra in ([], ["--writer", "thread"], ["--alloc"]):
        p, log = record([exe], args=["-q"] + extra)
        eq((p.stdout, p.stderr), ("bump 4\n", ""), f"traced output {extra}")
        eq(count_calls(dump_events(log)).get("copy"), 1, f"copy's call {extra}")
    summary, sites = memory_tsv(log)
    eq((summary.get("allocations"), summary.get("frees")), ("2", "1"), "copy's 5 B and stdout's buffer; one free")


def test_errno_at_start_is_the_programs():
    # The runtime's start-up makes calls that fail (a file it looks for and
    # does not find). Before: the executable's constructor and main found
    # errno 2 (ENOENT) where untraced they find 0.
    exe = build_c("startup_errno", ["startup_errno.c"])
    want = "errno ctor 0 main 0\n"
    eq(run([exe]).stdout, want, "untraced")
    for extra in ([], ["--alloc"], ["--writer", "thread"], ["--ring", "1M"]):
        p, _ = record([exe], args=["-q"] + extra)
        eq(p.stdout, want, f"traced {extra}")


def test_frames_below_main_are_the_untraced_ones():
    # The runtime's __libc_start_main runs start-up's second step and
    # leaves by a tail call: backtrace() from main finds the same frames
    # below it as untraced, none of libsftrace.so's.
    exe = build_c("startup_backtrace", ["startup_backtrace.c"], libs=["-ldl"])
    want = run([exe]).stdout
    eq(bool(want) and "libsftrace" not in want, True, f"untraced frames: {want!r}")
    for extra in ([], ["--alloc"]):
        p, _ = record([exe], args=["-q"] + extra)
        eq(p.stdout, want, f"frames below main {extra}")


def memory_tsv(log):
    out = run([SFTRACE, "memory", "--format", "tsv", "-n", "0", log]).stdout
    lines = [line.split("\t") for line in out.splitlines()]
    summary = {f[0]: f[1] for f in lines if len(f) == 2}
    sites = sorted((int(f[2]), int(f[3]), f[4], os.path.basename(f[5])) for f in lines if f[0] == "site")
    return summary, sites


def test_linked_library_constructor_allocations_are_recorded():
    # blocks_init mallocs 1001, 2002 and 3003 B before main; main frees the
    # 2002 and allocates nothing. Before: 0 allocations, 1 free of a block
    # never seen.
    build_c("libneeded_alloc.so", ["needed_alloc_lib.c"], shared=True)
    exe = build_c("needed_alloc_main", ["needed_alloc_main.c"], flags=["-fno-builtin"],
                  libs=["-L" + FIXBUILD, "-lneeded_alloc", "-Wl,-rpath," + FIXBUILD])
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok\n", "the program's output")
    summary, sites = memory_tsv(log)
    eq({k: summary.get(k) for k in ("allocations", "bytes_allocated", "frees", "leaked_blocks", "leaked_bytes")},
       {"allocations": "3", "bytes_allocated": "6006", "frees": "1", "leaked_blocks": "2", "leaked_bytes": "4004"},
       "summary")
    # (the line is DWARF's for each call's return address: the first reads
    # as the function's opening line at -O2)
    eq([(b, c, fn, loc.split(":")[0]) for b, c, fn, loc in sites],
       [(1001, 1, "blocks_init", "needed_alloc_lib.c"), (2002, 1, "blocks_init", "needed_alloc_lib.c"),
        (3003, 1, "blocks_init", "needed_alloc_lib.c")], "the constructor's three sites")


def test_libstdcxx_emergency_pool_is_the_programs():
    # libstdc++ mallocs its emergency exception pool in its own constructor
    # (eh_alloc.cc: 64 objects of 1,024 B + 64 dependent exceptions of
    # 112 B = 72,704 B with GCC 12), never freed; heaptrack counts it, and
    # so does a malloc counter preloaded untraced. The program's own new
    # char[100] is deleted. Before: 1 allocation, the pool missing.
    exe = build_c("cxx_pool", ["cxx_pool.cc"], compiler="clang++")
    p, log = record([exe], args=["--alloc", "-q"])
    eq(p.stdout, "ok\n", "the program's output")
    summary, sites = memory_tsv(log)
    eq({k: summary.get(k) for k in ("allocations", "bytes_allocated", "frees", "leaked_blocks", "leaked_bytes")},
       {"allocations": "2", "bytes_allocated": "72804", "frees": "1", "leaked_blocks": "1", "leaked_bytes": "72704"},
       "summary")
    eq([s[:2] for s in sites], [(100, 1), (72704, 1)], "sites: the program's 100 B, libstdc++'s pool")


def test_namespace_calls_that_need_a_single_thread():
    # The writer thread exists from __libc_start_main on, so the kernel saw
    # two threads at main: unshare(CLONE_NEWUSER) and setns into a user or
    # mount namespace failed with EINVAL (libc or syscall()), and
    # unshare(CLONE_NEWNS) left the writer in the old mount namespace
    # ("1" thread elsewhere). unshare and setns now stop the writer around
    # the call when it is the only other thread (ns.c): the call's result
    # and errno are the untraced ones, every thread ends in the caller's
    # namespaces, the writer is back, and the trace has the 6 work() calls.
    # With a thread of the program's own the kernel refuses it as untraced.
    exe = build_c("ns_alone", ["ns_alone.c"], libs=["-lpthread"])
    for mode in ("user", "user-syscall", "mnt", "setns-user", "setns-user-any", "setns-mnt-syscall", "thread-user"):
        untraced = run([exe, mode]).stdout.splitlines()
        if mode.startswith("user") and untraced[0] != f"{mode}: 0, errno unchanged":
            raise Skip(f"user namespaces unavailable here: {untraced[0]!r}")
        p, log = record([exe, mode], args=["-q", "--writer", "thread"])
        traced = p.stdout.splitlines()
        eq(traced[:-1], untraced[:-1], f"{mode}: result, errno, namespaces of every thread")
        eq(traced[-1], untraced[-1].replace("other threads:", "other threads: sftrace-writer"), f"{mode}: threads")
        eq(count_calls(dump_events(log)).get("work"), 6, f"{mode}: work() calls")

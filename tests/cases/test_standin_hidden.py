"""The runtime's stand-ins for libgcc_s's _Unwind_SetIP (and, while
x86-64 had stub pages, _Unwind_Find_FDE: none now) and, with
--alloc, libstdc++'s operator new forms are exported by neither library
(src/runtime/got_bind.c binds the references to them). A program that
looks for them finds what it finds untraced: by weak reference, dlsym and
dlvsym in a C program, nothing (the exported stand-ins were found, and
calling the found operator new aborted); after dlopen of a C++ plugin,
libgcc_s's and libstdc++'s own (the stand-in came first), or nothing when
it was loaded RTLD_LOCAL. The plugin's libstdc++ and libgcc_s are bound
while the loader maps them (an IRELATIVE relocation in place of the
reference's): its throws still land where recorded (one UNWIND event a
throw) and its `new`s are credited to the plugin's function.
Fixtures: tests/fixtures/standin_probe.c, standin_plug.cc."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sfkit  # noqa: E402

NAMES = ("weak _Unwind_Find_FDE", "weak _Unwind_SetIP", "weak _Znwm", "weak _ZnwmSt11align_val_t",
         "dlvsym _Unwind_Find_FDE@GCC_3.0", "dlsym _Unwind_SetIP", "dlvsym _Znwm@GLIBCXX_3.4",
         "dlsym _ZnwmSt11align_val_t")
AFTER_GLOBAL = ("absent",) * 4 + ("libgcc_s.so.1", "libgcc_s.so.1", "libstdc++.so.6", "libstdc++.so.6")


def probe():
    return sfkit.build_c("standin_probe", ["standin_probe.c"], libs=["-ldl"])


def plug():
    return sfkit.build_c("libstandin_plug.so", ["standin_plug.cc"], compiler="clang++", shared=True)


def want(when, found):
    return [f"{when} {n} {f}" for n, f in zip(NAMES, found)]


def traced(cmd, args=(), env=None):
    log = os.path.join(sfkit.tmpdir(), "sf.log")
    p = sfkit.run([sfkit.SFTRACE, "record", "-q", "-o", log] + list(args) + ["--"] + cmd, env=env)
    return p, log


def test_c_program_finds_no_standin():
    """Weak references, dlsym and dlvsym: all absent, traced (with and
    without --alloc) as untraced."""
    exe = probe()
    w = want("start", ("absent",) * 8)
    sfkit.eq(sfkit.run([exe]).stdout.splitlines(), w, "untraced")
    for args in ((), ("--alloc",)):
        p, _ = traced([exe], args)
        sfkit.eq(p.stdout.splitlines(), w, f"traced {' '.join(args)}")


def test_aarch64_c_program_finds_no_standin():
    """aarch64 (qemu): the same probe, built for it: every name absent,
    traced as untraced (the exports were there on aarch64 too, and the
    _Unwind_Find_FDE one for stub pages aarch64 never makes)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import test_aarch64 as a64
    a64.toolchain()
    exe = sfkit.build_c("standin_probe", ["standin_probe.c"], flags=["--target=" + a64.TARGET, "-fnoxray-link-deps"],
                        libs=["-ldl"], outdir=a64.AFIX)
    w = want("start", ("absent",) * 8)
    u = sfkit.run(["qemu-aarch64", "-L", a64.SYSROOT, exe], timeout=120)
    sfkit.eq(u.stdout.splitlines(), w, "aarch64 untraced")
    t = a64.qemu([exe], os.path.join(sfkit.tmpdir(), "sf.log"))
    sfkit.eq(t.stdout.splitlines(), w, "aarch64 traced")


def test_cxx_plugin_lookups_find_the_libraries():
    """After dlopen of a C++ plugin: libgcc_s's and libstdc++'s
    definitions (RTLD_GLOBAL) or none (RTLD_LOCAL), as untraced; the weak
    references stay unbound. Then 2 throws caught, 10 allocation rounds."""
    exe, lib = probe(), plug()
    for mode, found in (("global", AFTER_GLOBAL), ("local", ("absent",) * 8)):
        w = want("start", ("absent",) * 8) + want(mode, found) + ["caught 2", "allocated 45"]
        sfkit.eq(sfkit.run([exe, "plugin", lib, mode]).stdout.splitlines(), w, f"{mode}: untraced")
        for args in ((), ("--alloc",)):
            p, _ = traced([exe, "plugin", lib, mode], args)
            sfkit.eq(p.stdout.splitlines(), w, f"{mode}: traced {' '.join(args)}")


def _unwinds(log):
    n = 0
    for line in sfkit.run([sfkit.SFTRACE, "dump", log]).stdout.split("events:", 1)[1].splitlines():
        f = line.split()
        if len(f) >= 4 and f[0].isdigit() and f[2] == "UNWIND":
            n += 1
    return n


def test_cxx_plugin_throws_land_recorded():
    """The plugin's libstdc++, loaded by the dlopen, reaches the
    _Unwind_SetIP stand-in: each of the 2 throws records its landing
    (an UNWIND closing plug_mid and plug_leaf), RTLD_GLOBAL and
    RTLD_LOCAL alike; every call counted."""
    exe, lib = probe(), plug()
    for mode in ("global", "local"):
        _, log = traced([exe, "plugin", lib, mode])
        sfkit.eq(_unwinds(log), 2, f"{mode}: UNWIND events (one a throw)")
        calls = sfkit.count_calls(sfkit.dump_events(log))
        sfkit.eq((calls["plug_run"], calls["plug_mid(int)"], calls["plug_leaf(int)"]), (1, 8, 8), f"{mode}: calls")


def _plug_alloc_sites(log):
    p = sfkit.run([sfkit.SFTRACE, "memory", "--format", "tsv", "-n", "0", log])
    sites = {}
    for line in p.stdout.splitlines():
        f = line.split("\t")
        if f[0] == "site" and len(f) >= 6 and f[4] == "plug_alloc":
            at = os.path.basename(f[5])
            sites[at] = sites.get(at, 0) + int(f[3])
    return sites


def test_stub_pages_found_through_a_dlopened_libgcc_s():
    """x86-64: a C program's PIE sleds call through a slot near it (far
    sleds); libgcc_s, loaded by dlopen of a C++ plugin (RTLD_LOCAL), finds
    the unwind information of the code called
    (_Unwind_FindEnclosingFunction gives the runtime's far thunk): it lies
    in libsftrace.so, found as any loaded object's, with no stand-in
    (there were stub pages, found through one bound to libgcc_s's own PLT
    slot). Untraced the sled is not patched."""
    if os.uname().machine != "x86_64":
        raise sfkit.Skip("stub pages are x86-64's")
    exe, lib = probe(), plug()
    sfkit.eq(sfkit.run([exe, "stubfde", lib]).stdout, "stub fde unpatched\n", "untraced")
    p, _ = traced([exe, "stubfde", lib])
    sfkit.eq(p.stdout, "stub fde yes\n", "traced")


def test_cxx_plugin_lazy_bind_now_and_reloaded():
    """The binding at the loader event holds however the loader relocates:
    RTLD_LAZY (libstdc++'s PLT slots lazily bound: the IRELATIVE resolver
    runs at once), the same under LD_BIND_NOW=1, and 3 rounds of dlopen,
    use and dlclose (the plugin mapped anew each time): every throw's
    landing recorded, every `new` at the plugin's lines."""
    exe, lib = probe(), plug()
    for mode, rounds, env in (("lazy", 1, None), ("lazy", 1, {"LD_BIND_NOW": "1"}), ("global", 3, None)):
        what = f"{mode} x{rounds} {env or ''}"
        _, log = traced([exe, "plugin", lib, mode, str(rounds)], env=env)
        sfkit.eq(_unwinds(log), 2 * rounds, f"{what}: UNWIND events")
        _, log = traced([exe, "plugin", lib, mode, str(rounds)], ["--alloc"], env=env)
        sfkit.eq(_plug_alloc_sites(log), {"standin_plug.cc:42": 10 * rounds, "standin_plug.cc:43": 10 * rounds},
                 f"{what}: plug_alloc's sites")


def test_cxx_plugin_new_credited_to_its_caller():
    """--alloc: the program's allocations and frees are the untraced
    counter's (tests/fixtures/skep25q_shim.c), and the plugin's 20 `new`s
    (new int[4] and new long, 10 rounds) are recorded at the plugin's two lines, not inside
    libstdc++'s operator new: the plugin's PLT slots were bound to the
    stand-ins while it was new (unbound: all 20 at line 38, the function's;
    bound at RT_ADD only, before libstdc++ was mapped: new long at 38)."""
    exe, lib = probe(), plug()
    for mode in ("global", "local"):
        _, log = traced([exe, "plugin", lib, mode], ["--alloc"])
        shim = sfkit.build_c("libskep25q_shim.so", ["skep25q_shim.c"], shared=True, xray=False)
        u = sfkit.run([exe, "plugin", lib, mode], env={"LD_PRELOAD": shim})
        m = re.search(r"SHIM pid \d+ allocs (\d+) frees (\d+)", u.stderr)
        sfkit.check(m, u.stderr[-300:])
        summary = {}
        for line in sfkit.run([sfkit.SFTRACE, "memory", "--format", "tsv", "-n", "0", log]).stdout.splitlines():
            f = line.split("\t")
            if len(f) == 2:
                summary[f[0]] = int(f[1])
        sfkit.eq((summary["allocations"], summary["frees"]), (int(m.group(1)), int(m.group(2))),
                 f"{mode}: allocations, frees traced vs the untraced counter")
        sfkit.eq(_plug_alloc_sites(log), {"standin_plug.cc:42": 10, "standin_plug.cc:43": 10}, f"{mode}: plug_alloc's sites")


if __name__ == "__main__":
    sfkit.main(globals())

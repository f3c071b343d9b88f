"""Skeptic 25v: programs written to break the claims of the raw writer
thread (own TLS, set*id following), the two-level makecontext table and the
unsplit text mappings, merged on integ at 3d9246b. A claim that holds is a
passing case; a break is a known_break(25, ...) that fails today.

Runs under tests/run.py, or alone: python3 tests/cases/test_skeptic25v.py."""
import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from sfkit import Skip, build_c, check, count_calls, dump_events, eq, known_break, record, run  # noqa: E402


def _root():
    if os.geteuid() != 0:
        raise Skip("needs root (credential changes)")


def creds_fixture():
    return build_c("skep25v_creds", ["skep25v_creds.c"], libs=["-lpthread"])


def same_creds(mode):
    """The fixture changes credentials by MODE, then prints the distinct
    credential sets of /proc/self/task/*/status: untraced it is one task,
    one set; traced the writer thread must hold the same set."""
    _root()
    exe = creds_fixture()
    want = run([exe, mode]).stdout
    check("distinct=1\n" in want and "distinct=2" not in want, f"untraced {mode}: {want}")
    got, log = record([exe, mode])
    eq(got.stdout, want, f"traced {mode}: credentials of every task")
    eq(count_calls(dump_events(log))["work"], 2000, f"{mode} work calls")


def test_creds_untouched():
    same_creds("none")


def test_creds_setgroups_setresgid():
    same_creds("setgroups")


def test_creds_setresuid_from_thread_while_others_run():
    _root()
    exe = creds_fixture()
    want = run([exe, "thread"]).stdout
    got, log = record([exe, "thread"])
    eq(got.stdout, want, "traced thread setresuid: credentials of every task")


def test_creds_vfork_child_setuid_leaves_parent_writer():
    same_creds("vfork")


def test_creds_fork_child_setuid():
    _root()
    exe = creds_fixture()
    want = run([exe, "fork"]).stdout
    got, _ = record([exe, "fork"])
    eq(got.stdout, want, "fork child's setuid")


@known_break(25, "syscall(SYS_setuid, 1000) through glibc's syscall(): the main thread is uid 1000 with no caps, "
             "the writer stays uid 0 with CapEff 000001fffeffffff (2 credential sets in /proc/self/task, untraced 1)")
def test_creds_raw_syscall_setuid():
    same_creds("syscall_setuid")


@known_break(25, "setresuid(1000,1000,1000) as an inline syscall instruction: the writer stays root with every "
             "capability (2 credential sets, untraced 1)")
def test_creds_inline_asm_setresuid():
    same_creds("asm_setresuid")


@known_break(25, "capset() keeping only CAP_NET_BIND_SERVICE (CapEff 400): the writer keeps CapEff/CapPrm "
             "000001fffeffffff; capset is not followed (2 credential sets, untraced 1)")
def test_creds_capset_libc():
    same_creds("capset_libc")


@known_break(25, "syscall(SYS_capset) keeping CAP_NET_BIND_SERVICE: the writer keeps every capability")
def test_creds_capset_raw():
    same_creds("capset")


@known_break(25, "prctl(PR_SET_KEEPCAPS,1) then setresuid(1000...): main keeps CapPrm 000001fffeffffff, the "
             "writer follows the setresuid without keepcaps and has CapPrm 0 (2 credential sets, untraced 1)")
def test_creds_keepcaps_then_setresuid():
    same_creds("keepcaps")


@known_break(25, "setfsuid(1000): main's fsuid is 1000 (CapEff 000001fef6fffde0), the writer's stays 0 with "
             "every capability (2 credential sets, untraced 1)")
def test_creds_setfsuid():
    same_creds("setfsuid")


if __name__ == "__main__":
    from sfkit import main
    main(globals())

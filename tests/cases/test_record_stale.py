"""record removes the private directories of runs killed whole (record,
its keeper and the program SIGKILLed at once: nobody left to remove them),
and only those (issue 24, record_stale.c). Each directory's .keepers stamp
names who keeps it: "PIDNS NETNS PID START SALT" for record and for its
keeper. Every directory below is made by hand in a $TMPDIR of the case's
own, then one `TMPDIR=... sftrace record -- true` runs its sweep."""
import os
import socket
import subprocess

from sfkit import SFTRACE, Skip, check, eq, run, tmpdir


def _ns(name):
    return os.stat(f"/proc/self/ns/{name}").st_ino


def _start(pid):
    stat = open(f"/proc/{pid}/stat").read()
    return int(stat[stat.rindex(")") + 2:].split()[19])


def _dead():
    """A pid and start time of a process gone (reaped after both were read)."""
    p = subprocess.Popen(["true"])
    while open(f"/proc/{p.pid}/stat").read().split(") ")[1][0] != "Z":
        pass
    st = _start(p.pid)
    p.wait()
    return p.pid, st


def _zombie():
    """A child exited and not reaped yet: its pid and start time."""
    p = subprocess.Popen(["true"])
    while open(f"/proc/{p.pid}/stat").read().split(") ")[1][0] != "Z":
        pass
    return p, _start(p.pid)


def _make(tmp, name, stamp=None, mode=0o711, files=("4242", ".args")):
    d = os.path.join(tmp, name)
    os.mkdir(d)
    for f in files:
        with open(os.path.join(d, f), "w") as fh:
            fh.write("message x\n")
    if stamp is not None:
        with open(os.path.join(d, ".keepers"), "w") as fh:
            fh.write(stamp)
    os.chmod(d, mode)
    return d


def _line(pid, st, pidns=None, netns=None, salt=0):
    return f"{pidns or _ns('pid')} {netns or _ns('net')} {pid} {st} {salt:x}\n"


def _sweep(tmp):
    d = tmpdir()
    t = run([SFTRACE, "record", "-q", "-o", os.path.join(d, "sf.log"), "--", "true"], env={"TMPDIR": tmp})
    eq(t.stderr, "sftrace: no log written: true ran no XRay-instrumented code (no object it loaded has sleds: "
       "build with clang -fxray-instrument or rustc -Zinstrument-xray=always)\n", "record's stderr")
    return sorted(os.listdir(tmp))


def test_stale_dir_removed_live_and_unknown_kept():
    """Removed: a directory of record's user, 0711, whose stamp names two
    processes gone (its note, .args and stamp with it), and one whose
    keeper is a zombie nobody reaped (killed with record, reparented to a
    pid 1 that does not reap). Kept: one whose
    stamp names a live process (this test's), one with no stamp (a record
    between mkdtemp and its stamp), a half-written stamp line, a stamp from
    another pid namespace or network namespace, one still 0700 (not yet
    record's), a stamp of the dead whose keeper's socket name is still
    bound (a keeper record had not stamped yet), and a name not
    sftrace-notes-XXXXXX. Nothing of the sweeping run's own is left."""
    tmp = tmpdir()
    dead, dst = _dead()
    dead2, dst2 = _dead()
    me = os.getpid()
    _make(tmp, "sftrace-notes-stale1", _line(dead, dst) + _line(dead2, dst2))
    zombie, zst = _zombie()
    _make(tmp, "sftrace-notes-zombie", _line(dead, dst) + _line(zombie.pid, zst))
    _make(tmp, "sftrace-notes-live01", _line(dead, dst) + _line(me, _start(me)))
    _make(tmp, "sftrace-notes-nostmp")
    _make(tmp, "sftrace-notes-halfln", _line(dead, dst)[:-1])
    _make(tmp, "sftrace-notes-pidnsX", _line(dead, dst, pidns=1))
    _make(tmp, "sftrace-notes-netnsX", _line(dead, dst, netns=1))
    _make(tmp, "sftrace-notes-mode07", _line(dead, dst), mode=0o700)
    _make(tmp, "sftrace-notes-toolong", _line(dead, dst))
    bound = _make(tmp, "sftrace-notes-bound1", _line(dead, dst, salt=0x5eed))
    st = os.stat(bound)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(f"\0sftrace-keeper-{st.st_dev:x}-{st.st_ino:x}-5eed")
    try:
        left = _sweep(tmp)
    finally:
        s.close()
        zombie.wait()
    eq(left, ["sftrace-notes-bound1", "sftrace-notes-halfln", "sftrace-notes-live01", "sftrace-notes-mode07",
              "sftrace-notes-netnsX", "sftrace-notes-nostmp", "sftrace-notes-pidnsX", "sftrace-notes-toolong"],
       "left in $TMPDIR")
    eq(sorted(os.listdir(os.path.join(tmp, "sftrace-notes-live01"))), [".args", ".keepers", "4242"], "a live run's")
    # The name let go: the next sweep takes it
    eq("sftrace-notes-bound1" in _sweep(tmp), False, "once its keeper's name is free")


def test_stale_sweep_never_follows_nor_takes_another_users():
    """As root: a symlink sftrace-notes-XXXXXX to a stale-looking directory
    elsewhere (the symlink and its target are left, its files too), and a
    stale directory owned by nobody (left: another user's)."""
    if os.geteuid() != 0:
        raise Skip("needs root")
    tmp, elsewhere = tmpdir(), tmpdir()
    dead, dst = _dead()
    target = _make(elsewhere, "victim", _line(dead, dst))
    os.symlink(target, os.path.join(tmp, "sftrace-notes-link01"))
    theirs = _make(tmp, "sftrace-notes-nobody", _line(dead, dst))
    for f in [theirs] + [os.path.join(theirs, n) for n in os.listdir(theirs)]:
        os.lchown(f, 65534, 65534)
    eq(_sweep(tmp), ["sftrace-notes-link01", "sftrace-notes-nobody"], "left in $TMPDIR")
    eq(sorted(os.listdir(target)), [".args", ".keepers", "4242"], "the symlink's target")
    eq(sorted(os.listdir(theirs)), [".args", ".keepers", "4242"], "nobody's")


def test_record_stamps_itself_and_its_keeper():
    """A live run's stamp: two lines, record's and its keeper's, in this
    pid and network namespace, each pid with its start time; the keeper
    is record's child."""
    exe_dir = tmpdir()
    tmp = tmpdir()
    fifo = os.path.join(exe_dir, "go")
    os.mkfifo(fifo)
    p = subprocess.Popen([SFTRACE, "record", "-q", "-o", os.path.join(exe_dir, "sf.log"), "--", "sh", "-c",
                          f"cat {fifo} >/dev/null"], env=dict(os.environ, TMPDIR=tmp),
                         stderr=subprocess.DEVNULL)
    try:
        names = []
        for _ in range(500):
            names = [n for n in os.listdir(tmp) if n.startswith("sftrace-notes-")]
            if names and os.path.exists(os.path.join(tmp, names[0], ".keepers")) and \
                    open(os.path.join(tmp, names[0], ".keepers")).read().count("\n") == 2:
                break
            subprocess.run(["sleep", "0.02"])
        eq(len(names), 1, "the run's directory")
        lines = open(os.path.join(tmp, names[0], ".keepers")).read().splitlines()
        eq(len(lines), 2, f"stamp {lines!r}")
        rec, keeper = (ln.split() for ln in lines)
        eq(rec[:4], [str(_ns("pid")), str(_ns("net")), str(p.pid), str(_start(p.pid))], "record's line")
        kpid = int(keeper[2])
        eq(open(f"/proc/{kpid}/stat").read().split(") ")[1].split()[1], str(p.pid), "the keeper's parent")
        eq(keeper[:4], [str(_ns("pid")), str(_ns("net")), str(kpid), str(_start(kpid))], "the keeper's line")
        eq(rec[4], keeper[4], "one salt")
    finally:
        with open(fifo, "w") as fh:
            fh.write("x")
        eq(p.wait(timeout=30), 0, "record's status")
    eq(os.listdir(tmp), [], "the run's directory removed at its end")

"""Issue 24: the runtime asks only record's keeper. SFTRACE_KEEPER names
the keeper's pid; another process listening on the keeper's name (here:
this test, with SFTRACE_KEEPER naming pid 1) is sent nothing and waited
for never, and the process that lost its log says why."""
import glob
import os
import socket

from sfkit import RUNTIME, build_c, check, eq, run, tmpdir


def _impostor(keeper, said_what):
    d = tmpdir()
    notes = os.path.join(d, "notes")
    os.mkdir(notes, 0o711)
    os.chmod(notes, 0o711)
    empty = os.path.join(d, "empty")
    os.mkdir(empty)
    st = os.stat(notes)
    so = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    so.bind(b"\0" + f"sftrace-keeper-{st.st_dev:x}-{st.st_ino:x}".encode())
    so.listen(64)
    so.setblocking(False)
    try:
        exe = build_c("skep24v2_netfork", ["skep24v2_netfork.c"], flags=["-Wall"])
        plain = run([exe, "chroot", empty])
        env = {"LD_PRELOAD": RUNTIME, "SFTRACE_OUTPUT_FILE": os.path.join(d, "sf.log"),
               "SFTRACE_NOTES_DIR": notes}
        if keeper is not None:
            env["SFTRACE_KEEPER"] = keeper
        p = run([exe, "chroot", empty], env=env)
        eq((p.stdout, p.returncode), (plain.stdout, plain.returncode), "the program's output and status")
        # every connection the runtime made: accepted now (the program has
        # ended), each must be closed with nothing sent on it
        conns, sent = 0, []
        while True:
            try:
                c, _ = so.accept()
            except BlockingIOError:
                break
            conns += 1
            c.setblocking(False)
            try:
                data = c.recv(4096)
            except BlockingIOError:
                data = b"(open)"
            if data:
                sent.append(data)
            c.close()
        check(conns >= 1 if keeper == "1" else conns == 0, f"connections: {conns}; stderr {p.stderr!r}")
        eq(sent, [], "bytes sent to the process that is not record's keeper")
        said = p.stderr + "".join(open(f, errors="replace").read() for f in glob.glob(os.path.join(notes, "*")))
        check(said_what in said, f"the loss is said: {said!r}")
    finally:
        so.close()


def test_impostor_keeper_told_nothing():
    if os.geteuid() != 0:
        return  # chroot, unshare
    _impostor("1", "held by another process")


def test_no_keeper_named_nobody_asked():
    if os.geteuid() != 0:
        return
    for keeper in (None, "0", "x1"):
        _impostor(keeper, "no name for its keeper")


if __name__ == "__main__":
    import sfkit
    sfkit.main(globals())

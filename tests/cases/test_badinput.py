"""Every command fails cleanly on bad input (issue 7): empty, random,
truncated and future-version logs, directories and FIFOs where files are
expected, missing, non-ELF and rebuilt objects, invalid regexes, outputs
that cannot be written, unknown options. Each gives one line on stderr
naming the file and the cause, a non-zero status, no crash and no partial
output file. A truncated log converts with a warning, up to its last
complete event.

Also here: the log reader's crash-consistency rule for a hand-off cut short
(crafted logs), the fuzzers' seed corpus and regression inputs replayed
under ASan + UBSan, and the whole bad-input battery again with the CLI built
with ASan + UBSan (unless the suite's CLI is that build, as on CI: then the
battery above already ran under the sanitizers and is not run twice)."""
import os
import re
import shutil
import struct
import subprocess

import sfkit
from sfkit import (ROOT, SFTRACE, Skip, build_c, calls_fixture, check, dump_info, eq, perfetto_summary,
                   record, run, tmpdir)

CHUNK = struct.Struct("<IHHIIQIIQQ16sQQ")  # struct sf_chunk (src/format/sflog.h)
EVENT = 8  # sizeof(struct sf_event)
HEADER = 4096
FUZZ = os.path.join(ROOT, "tests", "fuzz")


def commands(sft=SFTRACE):
    """The commands this build has (report and flamegraph may be absent)."""
    p = run([sft, "--help"])
    return set(re.findall(r"^  (\w+) ", p.stdout, re.M))


def reader_cmd(sft, cmd, path, outdir):
    """The command line that makes `cmd` read `path` (and write into outdir)."""
    if cmd == "convert":
        return [sft, "convert", path, "-o", os.path.join(outdir, "out.pb")]
    if cmd == "flamegraph":
        return [sft, "flamegraph", path, "-o", os.path.join(outdir, "out.svg")]
    return [sft, cmd, path]


def listing(d):
    return sorted(os.listdir(d))


def clean_failure(p, rc, needles, what, lines=1):
    """Status rc, no crash, `lines` line(s) on stderr, the first holding
    every needle."""
    check(p.returncode < 128 and "Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
          f"{what}: crashed ({p.returncode}): {p.stderr[-2000:]}")
    eq(p.returncode, rc, f"{what}: status (stderr {p.stderr!r})")
    got = p.stderr.strip().splitlines()
    eq(len(got), lines, f"{what}: stderr lines {got}")
    for n in needles:
        check(n in got[0], f"{what}: {n!r} not in {got[0]!r}")


# ---- bad logs ----

def _bad_log_files(d):
    """(path, cause) pairs: files every log reader must refuse."""
    good = os.path.join(d, "good.log")
    record([calls_fixture()], out=good)
    data = open(good, "rb").read()
    files = {}

    def put(name, content):
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(content)
        return path
    files[put("empty.log", b"")] = "empty file"
    files[put("random.log", os.urandom(10000))] = "not an sftrace log (bad magic)"
    files[put("text.log", b"hello, world\n" * 100)] = "not an sftrace log (bad magic)"
    files[put("magic-only.log", data[:8])] = "header truncated (8 of 4096 bytes)"
    files[put("header-cut.log", data[:2000])] = "header truncated (2000 of 4096 bytes)"
    newer = bytearray(data)
    struct.pack_into("<I", newer, 8, 8)
    files[put("newer.log", bytes(newer))] = "log format version 8 is newer than this sftrace supports (7)"
    struct.pack_into("<I", newer, 8, 1)
    files[put("older.log", bytes(newer))] = "log format version 1 was written by an older sftrace"
    struct.pack_into("<I", newer, 8, 0xffffffff)
    files[put("far-future.log", bytes(newer))] = "log format version 4294967295 is newer"
    struct.pack_into("<I", newer, 8, 0)
    files[put("version0.log", bytes(newer))] = "log format version 0 is not valid"
    files[os.path.join(d, "missing.log")] = "cannot open: No such file or directory"
    fifo = os.path.join(d, "fifo.log")
    os.mkfifo(fifo)
    files[fifo] = "not a regular file"  # must not block waiting for a writer
    files["/dev/null"] = "not a regular file"
    return files


def _check_bad_logs(sft, d, files):
    have = commands(sft) & {"dump", "convert", "report", "flamegraph"}
    check({"dump", "convert"} <= have, f"commands: {have}")
    out = os.path.join(d, "out")
    os.makedirs(out, exist_ok=True)
    for cmd in sorted(have):
        for path, cause in files.items():
            p = run(reader_cmd(sft, cmd, path, out), check_rc=None, timeout=30)
            clean_failure(p, 1, [path, cause], f"{cmd} {os.path.basename(path)}")
            eq(listing(out), [], f"{cmd} {path}: no output file, not even a temporary one")
        # A directory: dump wants one file; the others take a directory of
        # logs and say there is none.
        # (Its *.log entries are a text file and a FIFO: neither may block.)
        empty_dir = os.path.join(d, "nologs")
        if not os.path.isdir(empty_dir):
            os.makedirs(empty_dir)
            with open(os.path.join(empty_dir, "notes.log"), "w") as f:
                f.write("not a log\n")
            os.mkfifo(os.path.join(empty_dir, "pipe.log"))
        p = run(reader_cmd(sft, cmd, empty_dir, out), check_rc=None, timeout=30)
        cause = "is a directory" if cmd == "dump" else "directory holds no sftrace logs"
        clean_failure(p, 1, [empty_dir, cause], f"{cmd} directory")
        eq(listing(out), [], f"{cmd} directory: no output")


def test_badinput_logs_every_reader():
    d = tmpdir()
    _check_bad_logs(SFTRACE, d, _bad_log_files(d))
    shutil.rmtree(d)


def _raw_offsets(log):
    """File offset of every event `dump --raw` prints."""
    p = run([SFTRACE, "dump", "--raw", log])
    return [int(m.group(1)) for m in re.finditer(r" @(\d+)\]$", p.stdout, re.M)]


def test_badinput_truncated_log_keeps_complete_events():
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    # Synchronous hand-offs: the DATA chunks of the eight threads are
    # written by the threads themselves, the last one at the end of the file.
    # Raw records, whose offsets dump --raw gives (packed chunks cut by the
    # end of the file: tests/unit/test_packed.c).
    record([calls_fixture()], out=log, env={"SFTRACE_WRITER": "sync", "SFTRACE_ENCODING": "raw"})
    data = open(log, "rb").read()
    offsets = _raw_offsets(log)
    eq(len(offsets), 16392, "events in the whole log")
    # The last chunk: its header, then 2002 events of a worker thread.
    start = max(offsets) - 2001 * EVENT - CHUNK.size
    eq(struct.unpack_from("<I", data, start)[0], 0x4b434653, "chunk magic where the last DATA chunk starts")
    for cut, what in ((start + 30, "inside the chunk header"), (start + CHUNK.size, "right after the header"),
                      (start + CHUNK.size + EVENT * 100, "at an event boundary"),
                      (start + CHUNK.size + EVENT * 100 + 5, "mid-event"),
                      (len(data) - 1, "one byte short")):
        path = os.path.join(d, "cut.log")
        with open(path, "wb") as f:
            f.write(data[:cut])
        want = sum(1 for o in offsets if o + EVENT <= cut)
        info = dump_info(path, events=True)
        eq(info["summary"]["events"], want, f"{what}: events kept (every complete one)")
        eq(info["summary"]["lost"], 0, f"{what}: lost")
        out = os.path.join(d, "cut.pb")
        p = run([SFTRACE, "convert", path, "-o", out])
        warn = [line for line in p.stderr.splitlines() if "warning" in line]
        eq(len(warn), 1, f"{what}: one warning: {p.stderr}")
        check(path in warn[0] and f"truncated: log ends mid-chunk at offset {start}" in warn[0], warn[0])
        s = perfetto_summary(out)
        check(all(v == 0 for v in s["balance"].values()), f"{what}: balanced after repair")
        eq(sum(s["begins"].values()), sum(1 for o, line in _kinds(path) if line == "ENTRY"),
           f"{what}: one slice per entry")
        os.unlink(out)
    shutil.rmtree(d)


def _kinds(log):
    return [(e.time, e.kind) for e in sfkit.dump_events(log)]


# ---- objects ----

def _prog(d, name, body):
    src = os.path.join(d, name + ".c")
    with open(src, "w") as f:
        f.write(body)
    exe = os.path.join(d, name)
    run(["clang", "-O2", "-g", "-fxray-instrument", "-fxray-instruction-threshold=1", "-o", exe, src])
    return exe


PROG = "__attribute__((noinline)) int f(int x){return x+1;}\nint main(void){return f(0)-1;}\n"


def test_badinput_objects():
    d = tmpdir()
    exe = _prog(d, "prog", PROG)
    log = os.path.join(d, "sf.log")
    record([exe], out=log)
    out = os.path.join(d, "out")
    os.mkdir(out)
    have = commands() & {"dump", "convert", "report", "flamegraph"}
    saved = exe + ".saved"
    shutil.move(exe, saved)

    def each(cause, extra_ok=("--force",)):
        for cmd in sorted(have):
            p = run(reader_cmd(SFTRACE, cmd, log, out), check_rc=None)
            clean_failure(p, 1, [exe, cause], f"{cmd}: {cause}")
            eq(listing(out), [], f"{cmd}: no output")
            for opt in extra_ok:  # the way out the message offers
                p = run(reader_cmd(SFTRACE, cmd, log, out)[:2] + [opt] + reader_cmd(SFTRACE, cmd, log, out)[2:])
                for f in listing(out):
                    os.unlink(os.path.join(out, f))
    each("No such file or directory", ("--force", "--no-symbols"))
    with open(exe, "w") as f:
        f.write("not an ELF file at all\n")
    each("not an ELF file")
    os.unlink(exe)
    os.mkdir(exe)
    each("is a directory")
    os.rmdir(exe)
    _prog(d, "prog", PROG.replace("x+1", "x+2") + "int g(void){return 3;}\n")  # same path, new build
    each("build-id mismatch")
    # --symbol pointing at the right build fixes it.
    run([SFTRACE, "convert", "-s", saved, log, "-o", os.path.join(out, "ok.pb")])
    eq(perfetto_summary(os.path.join(out, "ok.pb"))["begins"]["f"], 1, "symbolized through --symbol")
    shutil.rmtree(d)


# ---- filter and record ----

def test_badinput_filter_command():
    exe = calls_fixture()
    d = tmpdir()
    os.mkdir(os.path.join(d, "dir"))
    text = os.path.join(d, "text")
    with open(text, "w") as f:
        f.write("hello\n")
    lst = os.path.join(d, "list")
    with open(lst, "w") as f:
        f.write("leaf\n# a comment\n(bad\n")
    out = os.path.join(d, "out")
    os.mkdir(out)
    f1 = os.path.join(out, "f")
    cases = [
        (["-p", os.path.join(d, "missing"), "-r", "leaf", "-o", f1], 1, [os.path.join(d, "missing"), "No such file"]),
        (["-p", os.path.join(d, "dir"), "-r", "leaf", "-o", f1], 1, [os.path.join(d, "dir"), "is a directory"]),
        (["-p", text, "-r", "leaf", "-o", f1], 1, [text, "not an ELF file"]),
        (["-p", "/bin/true", "-r", "leaf", "-o", f1], 1, ["/bin/true", "no XRay instrumentation map"]),
        (["-p", exe, "-r", "lea(f", "-o", f1], 1, ["invalid regex 'lea(f'", "missing closing parenthesis"]),
        (["-p", exe, "--list", os.path.join(d, "nolist"), "-o", f1], 1, [os.path.join(d, "nolist"), "No such file"]),
        (["-p", exe, "--list", lst, "-o", f1], 1, ["invalid regex '(bad'", f"{lst} line 3"]),
        (["-p", exe, "-r", "leaf", "-o", "/proc/sftrace.filter"], 1, ["/proc/sftrace.filter"]),
        (["-p", exe, "-r", "leaf", "-o", os.path.join(d, "dir")], 1, [os.path.join(d, "dir"), "Is a directory"]),
        (["-p", exe, "-r", "leaf", "-o", os.path.join(d, "nodir", "f")], 1, [os.path.join(d, "nodir", "f")]),
        (["-p", exe, "-r", "leaf"], 2, ["no output given"]),
        (["-p", exe, "-r", "zzz-no-such-function", "-o", f1], 1, ["no instrumented function matches"]),
        (["-p", exe, "--unlisted", "maybe", "-r", "leaf", "-o", f1], 2, ["--unlisted must be skip or trace"]),
    ]
    for args, rc, needles in cases:
        p = run([SFTRACE, "filter"] + args, check_rc=None)
        clean_failure(p, rc, needles, f"filter {' '.join(args)}")
        eq(listing(out), [], f"filter {args}: no output file")
    shutil.rmtree(d)


def test_badinput_record_command():
    exe = calls_fixture()
    d = tmpdir()
    os.mkdir(os.path.join(d, "dir"))
    garbage = os.path.join(d, "garbage.filter")
    with open(garbage, "wb") as f:
        # a NUL in line 1 whatever follows: random bytes alone made line 1
        # blank or a comment at times (a first byte a newline or '#'), and the
        # error came on line 2 (CI of 6fbfe2d2)
        f.write(b"\xfe\x00" + os.urandom(3000))
    text = os.path.join(d, "text")
    with open(text, "w") as f:
        f.write("hello\n")
    # A filter made for another build of the same program.
    prog = _prog(d, "prog", PROG)
    stale = os.path.join(d, "stale.filter")
    run([SFTRACE, "filter", "-p", prog, "-r", "^f$", "-o", stale])
    _prog(d, "prog", PROG.replace("x+1", "x+2") + "int g(void){return 3;}\n")
    log = os.path.join(d, "out", "sf.log")
    cases = [
        (["-f", garbage], 1, [garbage, "line 1: "]),
        (["-f", os.path.join(d, "missing")], 1, [os.path.join(d, "missing"), "No such file"]),
        (["-f", os.path.join(d, "dir")], 1, [os.path.join(d, "dir"), "holds no *.filter file"]),
        (["-f", stale], 1, [prog, "build-id"]),
        (["--clock", "sundial"], 2, ["--clock must be tsc or monotonic, not 'sundial'"]),
    ]
    for args, rc, needles in cases:
        p = run([SFTRACE, "record", "-o", log] + args + ["--", prog if "stale" in args[-1] else exe], check_rc=None)
        clean_failure(p, rc, needles, f"record {args}")
        check("calls ok" not in p.stdout, f"record {args}: the command must not run")
        check(not os.path.exists(log), f"record {args}: no log")
    for out, rc, needles in ((os.path.join(d, "dir"), 1, [os.path.join(d, "dir"), "is a directory"]),
                             (os.path.join(text, "sf.log"), 1, [text, "not a directory"]),
                             ("/proc/sftrace-test/sf.log", 1, ["/proc/sftrace-test"])):
        p = run([SFTRACE, "record", "-o", out, "--", exe], check_rc=None)
        clean_failure(p, rc, needles, f"record -o {out}")
    p = run([SFTRACE, "record", "-o", log], check_rc=None)
    clean_failure(p, 2, ["no command given"], "record without a command")
    # A command that cannot run: its status (127/126) and the reason first.
    for cmd, rc, why in ((os.path.join(d, "missing-cmd"), 127, "No such file or directory"),
                         (text, 126, "Permission denied")):
        p = run([SFTRACE, "record", "-o", log, "--", cmd], check_rc=None)
        eq(p.returncode, rc, f"record {cmd}: status")
        first = p.stderr.strip().splitlines()[0]
        check(f"cannot run {cmd}: {why}" in first, first)
    shutil.rmtree(d)


def test_badinput_unknown_options_every_command():
    d = tmpdir()
    for cmd in sorted(commands()):
        p = run([SFTRACE, cmd, "--no-such-option", os.path.join(d, "x.log")], check_rc=None)
        check(p.returncode == 2, f"{cmd}: status {p.returncode}: {p.stderr}")
        first = p.stderr.strip().splitlines()[0]
        check("--no-such-option" in first and ("unrecognized" in first or "unknown" in first),
              f"{cmd}: first line names the option: {first!r}")
        check("Sanitizer" not in p.stderr, p.stderr)
    eq(listing(d), [], "nothing written")
    p = run([SFTRACE, "no-such-command"], check_rc=2)
    clean_failure(p, 2, ["unknown command 'no-such-command'"], "unknown command")
    shutil.rmtree(d)


# ---- outputs ----

def _mount_tmpfs(path, opts):
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise Skip(f"cannot mount a tmpfs here ({r.stderr.strip() or r.returncode}): needs root with CAP_SYS_ADMIN")


def test_badinput_unwritable_outputs():
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    record([calls_fixture()], out=log)
    writers = [w for w in (["convert"], ["convert", "-t", "pola"], ["flamegraph"]) if w[0] in commands()]
    os.mkdir(os.path.join(d, "adir"))
    for w in writers:
        for out, cause in (("/proc/sftrace-out", "cannot create /proc/sftrace-out"),
                           (os.path.join(d, "nodir", "x"), "cannot create " + os.path.join(d, "nodir", "x")),
                           (os.path.join(d, "adir"), os.path.join(d, "adir"))):
            p = run([SFTRACE] + w + [log, "-o", out], check_rc=None)
            clean_failure(p, 1, [cause], f"{w} -o {out}")
        eq(listing(os.path.join(d, "adir")), [], "nothing left in the directory")
    for opts, cause in (("ro,size=64k", "Read-only file system"), ("size=64k", "No space left on device")):
        mnt = os.path.join(d, "mnt")
        os.makedirs(mnt, exist_ok=True)
        _mount_tmpfs(mnt, opts)
        try:
            for w in writers:
                if cause.startswith("No space") and w[-1] != "convert":
                    continue  # only the Perfetto output of this log exceeds 64 KiB
                out = os.path.join(mnt, "out")
                p = run([SFTRACE] + w + [log, "-o", out], check_rc=None)
                clean_failure(p, 1, [out, cause], f"{w} on {opts}")
                eq(listing(mnt), [], f"{w} on {opts}: no partial output, no temporary file")
        finally:
            subprocess.run(["umount", mnt], capture_output=True)
    shutil.rmtree(d)


def test_badinput_output_symlink_followed():
    """An output path that is a symlink is written as the shell's `>` and cp
    write it: the link stays, its target gets the content (still replaced
    atomically, by a rename over the resolved path)."""
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    record([calls_fixture()], out=log)
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    link = os.path.join(d, "out.pb")
    os.symlink(victim, link)
    run([SFTRACE, "convert", log, "-o", link])
    check(os.path.islink(link), "the link stays")
    check(os.path.getsize(victim) > 1000 and open(victim, "rb").read(9) != b"precious\n", "the target replaced")
    eq(sorted(os.listdir(d)), ["out.pb", "sf.log", "victim"], "no temporary file left")
    shutil.rmtree(d)


# ---- crash consistency of the reader: a hand-off cut short ----

def _chunks(data):
    p = HEADER
    while p + 16 <= len(data):
        if data[p:p + 16] == bytes(16):
            p += 16
            continue
        f = CHUNK.unpack_from(data, p)
        yield p, f
        p += f[3]


def _slot_copy(data, off, fields):
    """A SLOT chunk holding the DATA chunk's batch at `off` (what the slot
    held when its hand-off began), plus its terminating zero record."""
    magic, typ, flags, size, count, serial, tid, seq, tsc, mono, name, base, reserved = fields
    payload = data[off + CHUNK.size:off + size] + bytes(16)
    return CHUNK.pack(magic, 4, 0, CHUNK.size + len(payload), count + 1, serial, tid, seq, tsc, mono, name,
                      base, reserved) + payload


def _worker_batch(exe, log, encoding):
    record([exe, "short", "1", "1"], out=log, env={"SFTRACE_WRITER": "sync", "SFTRACE_ENCODING": encoding})
    data = open(log, "rb").read()
    typ = {"raw": 3, "packed": 5}[encoding]
    (off, fields), = [(o, f) for o, f in _chunks(data) if f[1] == typ]  # the worker's batch
    eq(fields[4], 22, f"{encoding}: events in the worker's batch")
    return data, off, fields


def test_reader_prefers_intact_slot_over_cut_hand_off():
    exe = build_c("stress_threads", ["stress_threads.c"], libs=["-lpthread"])
    for encoding in ("raw", "packed"):
        _intact_slot_wins(exe, encoding)


def _intact_slot_wins(exe, encoding):
    d = tmpdir()
    log = os.path.join(d, "sf.log")
    data, off, fields = _worker_batch(exe, log, encoding)
    size, serial = fields[3], fields[5]
    base = data[:off] + data[off + size:]
    # The slot held the batch's raw records: those of a raw recording of
    # the same batch (same thread serial and batch number).
    rdata, roff, rfields = _worker_batch(exe, os.path.join(d, "raw.log"), "raw") if encoding != "raw" \
        else (data, off, fields)
    eq((rfields[5], rfields[7]), (serial, fields[7]), "the raw copy is the same thread's same batch")
    slot = _slot_copy(rdata, roff, rfields)
    half = CHUNK.size + (size - CHUNK.size) // 2  # in the middle of the payload
    cases = {
        # The process died while the DATA copy was being written: its tail
        # is zero (later chunks were written after it) or cut by the end of
        # the file. The slot still holds the whole batch.
        "holes": (base + slot + data[off:off + half] + bytes(size - half), 22),
        "cut": (base + slot + data[off:off + half - 3], 22),
        # Died while the slot was being cleared after a complete write:
        # the DATA copy is delivered.
        "cleared": (base + slot[:CHUNK.size] + bytes(EVENT * 5) + slot[CHUNK.size + EVENT * 5:] + data[off:off + size],
                    22),
    }
    for name, (content, want) in cases.items():
        path = os.path.join(d, name + ".log")
        with open(path, "wb") as f:
            f.write(content)
        info = dump_info(path, events=True)
        t = next(x for x in info["threads"] if x["serial"] == serial)
        eq((t["events"], t["lost"]), (want, 0), f"{encoding} {name}: worker events and losses")
        eq(info["summary"]["events"], want + 2, f"{encoding} {name}: all events")
        calls, _ = sfkit.report_calls(path)
        eq(calls[(t["tid"], "sleaf")], 10, f"{encoding} {name}: sleaf calls")
    shutil.rmtree(d)


# ---- fuzzing regressions, sanitizers ----

def _replay_binary(name, sources):
    out = os.path.join(sfkit.BUILD, "fuzz-replay", name)
    srcs = [os.path.join(ROOT, s) for s in sources] + [os.path.join(FUZZ, "replay.c")]
    if sfkit._stale(out, srcs):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        run(["clang", "-std=gnu11", "-D_GNU_SOURCE", "-I" + os.path.join(ROOT, "src"), "-g", "-O1",
             "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-o", out + ".tmp"] + srcs)
        os.replace(out + ".tmp", out)
    return out


def test_fuzz_corpus_and_regressions_replay():
    harnesses = {
        "log_reader": ["tests/fuzz/fuzz_log_reader.c", "src/lib/log_reader.c", "src/lib/frames.c", "src/lib/util.c",
                       "src/lib/text_esc.c", "src/lib/hashmap.c", "src/format/packed.c"],
        "filter_file": ["tests/fuzz/fuzz_filter_file.c", "src/format/filter_file.c"],
    }
    for name, sources in harnesses.items():
        exe = _replay_binary("replay_" + name, sources)
        dirs = [os.path.join(FUZZ, "corpus", name), os.path.join(FUZZ, "regressions", name)]
        files = [f for d in dirs if os.path.isdir(d) for f in os.listdir(d) if not f.startswith(".")]
        check(len(files) >= 3, f"{name}: seeds and regressions {files}")
        p = run([exe] + [d for d in dirs if os.path.isdir(d)], check_rc=None, timeout=120)
        eq(p.returncode, 0, f"{name}: replay under ASan/UBSan\n{p.stderr[-3000:]}")
        eq(p.stdout.strip(), f"replayed {len(files)}", name)


def _is_sanitized(exe):
    """Whether exe was linked with ASan and UBSan (their runtimes' entry
    points are in the binary, or named by it when linked dynamically)."""
    with open(exe, "rb") as f:
        data = f.read()
    return b"__asan_init" in data and b"__ubsan_handle_" in data


def _sanitized_cli():
    """An sftrace built with ASan + UBSan: the suite's own when it runs
    under one (CI: SFTRACE_BUILD=build-asan), else BUILD-asan, built here."""
    if _is_sanitized(SFTRACE):
        return SFTRACE
    build = sfkit.BUILD.rstrip("/") + "-asan"
    san = "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    run(["make", "-s", "-C", ROOT, f"BUILD={os.path.relpath(build, ROOT)}", f"SAN={san}", "all"], timeout=900)
    return os.path.join(build, "sftrace")


def test_badinput_under_asan_ubsan():
    sft = _sanitized_cli()
    d = tmpdir()
    files = _bad_log_files(d)
    check(_is_sanitized(sft), f"{sft} is built with ASan + UBSan")
    if sft != SFTRACE:  # else test_badinput_logs_every_reader ran this very battery under the sanitizers
        _check_bad_logs(sft, d, files)
    # And good input, damaged or not, through every reader.
    log = os.path.join(d, "good.log")
    data = open(log, "rb").read()
    for cut in (len(data) - 1000, 6000, 4200):
        path = os.path.join(d, f"cut{cut}.log")
        with open(path, "wb") as f:
            f.write(data[:cut])
        for cmd in sorted(commands(sft) & {"dump", "convert", "report", "flamegraph"}):
            p = run(reader_cmd(sft, cmd, path, d), check_rc=None)
            eq(p.returncode, 0, f"{cmd} {path}: {p.stderr[-2000:]}")
            check("runtime error" not in p.stderr and "Sanitizer" not in p.stderr, p.stderr[-2000:])
    for seed in sorted(os.listdir(os.path.join(FUZZ, "corpus", "log_reader"))):
        p = run([sft, "dump", "--no-symbols", os.path.join(FUZZ, "corpus", "log_reader", seed)], check_rc=None)
        eq(p.returncode, 0, f"dump {seed}: {p.stderr[-2000:]}")
    shutil.rmtree(d)

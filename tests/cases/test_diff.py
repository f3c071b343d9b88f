"""sftrace report --diff OLD NEW and report --format json: two runs of a
fixture with known, different call counts (tests/fixtures/diff_calls.c), one
of them a second build with other addresses and a renamed function."""
import json
import os

from sfkit import SFTRACE, build_c, check, eq, record, run

# diff_calls A B C: step A, twice 2A, spare B, rare C (main once).
OLD_ARGS, NEW_ARGS = ["10", "5", "3"], ["20", "0", "4"]


def recordings():
    old_exe = build_c("diff_calls", ["diff_calls.c"])
    new_exe = build_c("diff_calls_renamed", ["diff_calls.c"], flags=["-DRENAMED"])
    _, old = record([old_exe] + OLD_ARGS)
    _, new = record([new_exe] + NEW_ARGS)
    return old, new


def tsv(text):
    lines = text.splitlines()
    cols = lines[0].split("\t")
    return cols, [dict(zip(cols, line.split("\t"))) for line in lines[1:]]


def self_by_name(log):
    _, rows = tsv(run([SFTRACE, "report", "--format", "tsv", log]).stdout)
    return {r["name"]: (int(r["calls"]), int(r["total_ns"]), int(r["self_ns"])) for r in rows}


def test_diff_known_counts():
    old, new = recordings()
    # OLD as a log file, NEW as the recording's directory.
    p = run([SFTRACE, "report", "--diff", "--format", "tsv", old, os.path.dirname(new)])
    cols, rows = tsv(p.stdout)
    eq(cols[:5], ["name", "status", "old_calls", "new_calls", "diff_calls"], "leading columns")
    got = {r["name"]: (r["status"], int(r["old_calls"]), int(r["new_calls"]), int(r["diff_calls"])) for r in rows}
    eq(got, {"main": ("both", 1, 1, 0), "step": ("both", 10, 20, 10), "twice": ("both", 20, 40, 20),
             "spare": ("old", 5, 0, -5), "rare": ("old", 3, 0, -3), "rare_renamed": ("new", 0, 4, 4)},
       "rows by name")
    # Times agree with plain reports of each side.
    sides = self_by_name(old), self_by_name(new)
    for r in rows:
        for k, side in (("old", sides[0]), ("new", sides[1])):
            want = side.get(r["name"], (0, 0, 0))
            eq((int(r[k + "_calls"]), int(r[k + "_total_ns"]), int(r[k + "_self_ns"])), want, f"{k} {r['name']}")
        eq(int(r["diff_self_ns"]), int(r["new_self_ns"]) - int(r["old_self_ns"]), "diff_self_ns")
        if int(r["old_calls"]):
            eq(r["calls_change_pct"], "%.2f" % (100.0 * (int(r["new_calls"]) - int(r["old_calls"]))
                                                / int(r["old_calls"])), f"calls_change_pct {r['name']}")
        else:
            eq(r["calls_change_pct"], "", "no relative change without an old value")
    mags = [abs(int(r["diff_self_ns"])) for r in rows]
    eq(mags, sorted(mags, reverse=True), "sorted by the change in self time")


def test_diff_sort_limit_and_table():
    old, new = recordings()
    _, rows = tsv(run([SFTRACE, "report", "--diff", "--format", "tsv", "-s", "calls", old, new]).stdout)
    eq([r["name"] for r in rows], ["twice", "step", "spare", "rare_renamed", "rare", "main"], "-s calls")
    _, rows = tsv(run([SFTRACE, "report", "--diff", "--format", "tsv", "-s", "name", "-n", "2", old, new]).stdout)
    eq([r["name"] for r in rows], ["main", "rare"], "-s name -n 2")
    p = run([SFTRACE, "report", "--diff", old, new])
    check("3 functions in both, 2 only in old, 1 only in new" in p.stdout, p.stdout)
    line = next(x for x in p.stdout.splitlines() if x.endswith(" rare_renamed"))
    check(" new " in line and line.split()[0] == "-", f"one-side row: {line}")
    line = next(x for x in p.stdout.splitlines() if x.endswith(" spare"))
    check(" gone " in line, f"one-side row: {line}")


def test_diff_json_matches_tsv():
    old, new = recordings()
    cols, rows = tsv(run([SFTRACE, "report", "--diff", "--format", "tsv", old, new]).stdout)
    doc = json.loads(run([SFTRACE, "report", "--diff", "--format", "json", old, new]).stdout)
    eq(len(doc["functions"]), len(rows), "rows")
    for j, t in zip(doc["functions"], rows):
        eq(list(j), cols, "fields and order")
        eq({k: "" if v is None else v if isinstance(v, str) else ("%.2f" % v if k.endswith("_pct") else str(v))
            for k, v in j.items()}, t, "json row = tsv row")
    eq(doc["old"]["frames"], 1 + 10 + 20 + 5 + 3, "old frames")
    eq(doc["new"]["frames"], 1 + 20 + 40 + 4, "new frames")


def test_report_json_matches_tsv():
    old, _ = recordings()
    for extra in ([], ["--threads"], ["-s", "calls", "-n", "2"]):
        cols, rows = tsv(run([SFTRACE, "report", "--format", "tsv"] + extra + [old]).stdout)
        doc = json.loads(run([SFTRACE, "report", "--format", "json"] + extra + [old]).stdout)
        # the TSV's fields in its order, then (net times with a measured
        # spread) each net figure's raw value and whether it is uncertain
        net = ["total_raw_ns", "self_raw_ns", "total_uncertain", "self_uncertain"]
        eq([{k: str(r[k]) for k in cols} for r in doc["functions"]], rows, f"json = tsv {extra}")
        check(all(list(r) in (cols, cols + net) for r in doc["functions"]), "fields in TSV order, then the net ones")
        eq(doc["frames"], 1 + 10 + 20 + 5 + 3, "frames")
        eq(doc["processes"], 1, "processes")


def test_diff_usage_errors():
    old, new = recordings()
    for args, rc in ((["--diff", old], 2), (["--diff", old, new, new], 2), (["--diff", "--threads", old, new], 2),
                     (["--diff", "-s", "avg", old, new], 2), (["--diff", old, old + ".missing"], 1)):
        p = run([SFTRACE, "report"] + args, check_rc=rc)
        eq(p.stdout, "", f"no output for {args}")
        check(p.stderr.startswith("sftrace: error: "), p.stderr)

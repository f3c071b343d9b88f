"""The environment contract between `record` and the runtime
(src/format/sf_env.h): one list names every SFTRACE_* variable, no other
source file spells a name, every name used is on the list, and the docs
describe each one.

Runs under tests/run.py, or alone: python3 tests/cases/test_env_contract.py."""
import os
import re
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import sfkit  # noqa: E402
from sfkit import ROOT, check, eq  # noqa: E402

SRC = os.path.join(ROOT, "src")
ENV_H = os.path.join(SRC, "format", "sf_env.h")


def contract(macro="SF_ENV_LIST"):
    """The names of SF_ENV_LIST (or of another list in sf_env.h), in order."""
    text = open(ENV_H).read()
    body = text[text.index(f"#define {macro}(X)"):]
    body = body[:body.index("\n\n")]
    return re.findall(r"\bX\((\w+),", body)


def sources():
    for d, _, files in os.walk(SRC):
        for f in sorted(files):
            if f.endswith((".c", ".h", ".S")):
                yield os.path.join(d, f)


def code_of(path):
    """The file without its comments (string literals kept)."""
    text = open(path, encoding="utf-8").read()
    return re.sub(r'/\*.*?\*/|//[^\n]*|("(?:\\.|[^"\\\n])*")', lambda m: m.group(1) or " ", text, flags=re.S)


def test_env_contract_is_one_list():
    names = contract()
    eq(len(names), 23, f"the variables of {ENV_H}: {names}")
    eq(len(set(names)), len(names), "each variable once")
    spelled, used = [], set()
    for path in sources():
        code = code_of(path)
        used |= set(re.findall(r"\bSF_ENV\(([A-Z][A-Z_]*)\)", code))
        if path != ENV_H:
            for lit in re.findall(r'"(?:\\.|[^"\\\n])*"', code):
                if re.search(r"SFTRACE_[A-Z]", lit):
                    spelled.append(f"{os.path.relpath(path, ROOT)}: {lit}")
    eq(spelled, [], "SFTRACE_ names spelled as literals outside src/format/sf_env.h")
    user = contract("SF_ENV_USER_LIST")
    eq(sorted(used - set(names) - set(user)), [], "SF_ENV(NAME) names a variable of the lists")
    eq(sorted(set(user) - used), [], "every user variable is read somewhere")
    eq(sorted(set(names) - used), [], "every variable of the list is set or read somewhere")


def test_env_contract_is_documented():
    names = contract()
    readme = open(os.path.join(ROOT, "README.md")).read()
    man = open(os.path.join(ROOT, "docs", "man", "sftrace-record.1")).read()
    for n in names:
        check(re.search(r"(?m)^\|[^\n]*`SFTRACE_%s`" % n, readme), f"README's table describes SFTRACE_{n}")
        check(re.search(r"(?m)^\.B[R]? [^\n]*\bSFTRACE_%s\b" % n, man), f"sftrace-record(1) describes SFTRACE_{n}")


if __name__ == "__main__":
    sfkit.main(globals())

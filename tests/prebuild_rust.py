#!/usr/bin/python3
"""Builds examples/rust-bench with XRay sleds into BUILD/rust-bench, as the
first Rust workflow case would (tests/cases/test_rust_workflow.py,
bench_bin): scripts/test.sh runs it beside the fuzzer, so that the
crate's first build (about two minutes on 2 cores) is not on the e2e
cases' clock. Prints the bench's path; says why and exits 0 when cargo is
not installed (the cases skip then)."""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
import sfkit  # noqa: E402


def main():
    spec = importlib.util.spec_from_file_location("test_rust_workflow",
                                                  os.path.join(HERE, "cases", "test_rust_workflow.py"))
    workflow = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(workflow)
    try:
        print(workflow.bench_bin())
    except sfkit.Skip as e:
        print(f"prebuild_rust: not built: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmarks import the packages, never the tests, and leave sys.path alone: what they share with the tests (the
OpenAI double, the known-facts script, the CrossVid sample tree, the server process) lives in the packages."""

import ast
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_benchmarks_do_not_import_tests_or_edit_sys_path():
    offenders = []
    for path in sorted(BENCHMARKS.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: import {name}" for name in names if name.split(".")[0] == "tests"]
            if isinstance(node, ast.Attribute) and ast.unparse(node) == "sys.path":
                offenders.append(f"{path.name}: sys.path")
    assert offenders == []

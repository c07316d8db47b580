"""Measurement history lives in bench/README.md and commit messages, not in linklab's comments
and docstrings: those keep one line of why and point at bench/README.md, where it resolves."""

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "linklab").rglob("*.py"))
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
POINTER = re.compile(r"bench/README\.md#([a-z0-9-]+)")


def notes(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring line of a module."""
    src = path.read_text()
    out = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(src).readline)
           if t.type == tokenize.COMMENT]
    lines = src.splitlines()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out += [(n, lines[n - 1]) for n in range(node.lineno, node.end_lineno + 1)]
    return out


def anchors(markdown: str) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    heads = re.findall(r"^#+ (.+)$", markdown, re.M)
    return {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in heads}


def test_no_comment_or_docstring_carries_a_date():
    dated = [f"{p.relative_to(ROOT)}:{n}: {text.strip()}" for p in SOURCES for n, text in notes(p) if DATE.search(text)]
    assert not dated, "dates belong in bench/README.md or a commit message:\n" + "\n".join(dated)


def test_every_pointer_into_bench_readme_names_a_heading_there():
    have = anchors((ROOT / "bench" / "README.md").read_text())
    pointers = {(str(p.relative_to(ROOT)), m) for p in SOURCES for m in POINTER.findall(p.read_text())}
    assert pointers, "no code points at bench/README.md"
    assert not [x for x in pointers if x[1] not in have], sorted(x for x in pointers if x[1] not in have)

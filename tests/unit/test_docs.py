"""The documentation holds together, with no network: every relative link in README.md and docs/
reaches a file (and a heading, where it names one), every docs page is in mkdocs.yml's nav and
linked from the README, the site builds with `mkdocs build --strict`, and what code, help text
and CI name in the docs (README "Section", docs/page.md#anchor) exists.

mkdocs is a requirement (requirements.txt): its import failing fails this module, never skips it.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import markdown
import mkdocs  # noqa: F401  (a requirement: the site test below runs it)
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(DOCS.glob("*.md"))
# Where code, help text and CI scripts may point readers at a section of the docs.
REFERRING = [ROOT / "linklab", ROOT / "bench", ROOT / "exercises", ROOT / "scripts", ROOT / ".ci",
             ROOT / "Makefile", ROOT / "tests"]

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*:|//)")


@dataclass(frozen=True)
class Link:
    source: Path
    line: int
    target: str

    def where(self) -> str:
        shown = self.source.relative_to(ROOT) if self.source.is_relative_to(ROOT) else self.source.name
        return f"{shown}:{self.line}: {self.target}"


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans blanked: a link or
    a heading written as an example is not one."""
    out, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((n, CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)))
    return out


def links(path: Path) -> list[Link]:
    found = []
    for n, line in prose_lines(path.read_text(encoding="utf-8")):
        targets = [m.group(1) for m in INLINE_LINK.finditer(line)]
        ref = REF_DEFINITION.match(line)
        if ref:
            targets.append(ref.group(1))
        found += [Link(path, n, t) for t in targets]
    return found


def _markdown() -> markdown.Markdown:
    """Python-Markdown configured as mkdocs.yml configures it, so heading ids are the site's."""
    exts, configs = [], {}
    for ext in yaml.safe_load((ROOT / "mkdocs.yml").read_text()).get("markdown_extensions", []):
        if isinstance(ext, dict):
            (name, cfg), = ext.items()
            exts.append(name)
            configs[name] = cfg or {}
        else:
            exts.append(ext)
    return markdown.Markdown(extensions=exts, extension_configs=configs)


def github_slug(title: str) -> str:
    """A heading's anchor as GitHub (github-slugger) makes it: lower case, punctuation dropped,
    each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, as the site (Python-Markdown's toc) and as GitHub
    (README and docs are read on a forge too) name it: a link's anchor must be in both."""
    md = _markdown()
    md.convert(path.read_text(encoding="utf-8"))
    site, forge, seen = set(), set(), {}
    stack = list(md.toc_tokens)
    while stack:
        token = stack.pop(0)
        stack[:0] = token["children"]
        site.add(token["id"])
        slug = github_slug(html.unescape(token["name"]))
        forge.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return site & forge


def broken(link: Link, docs_dir: Path = DOCS) -> str | None:
    """What is wrong with a link (None: nothing). External links are not followed (no network)."""
    if SCHEME.match(link.target):
        return None
    path_part, _, anchor = link.target.partition("#")
    target = (link.source.parent / path_part).resolve() if path_part else link.source.resolve()
    if not target.exists():
        return f"{link.where()}: no such file"
    if link.source.resolve().is_relative_to(docs_dir.resolve()) and not target.is_relative_to(docs_dir.resolve()):
        return f"{link.where()}: outside docs/, where the site cannot follow it (name the file in `code`)"
    if anchor:
        if target.suffix != ".md":
            return f"{link.where()}: an anchor into a file that is not Markdown"
        if anchor not in anchors(target):
            return f"{link.where()}: no heading #{anchor} in {target.name} (has: {sorted(anchors(target))})"
    return None


def nav_pages(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for v in nav.values() for p in nav_pages(v)]
    return [p for item in nav for p in nav_pages(item)]


# --- the checker itself finds what it is there to find ---------------------------------------

def test_the_link_checker_finds_a_missing_file_and_a_missing_anchor(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Page A\n\n## Queues: `bfifo`\n\ntext\n")
    (docs / "b.md").write_text(
        "# B\n\n"
        "[ok](a.md#queues-bfifo) and [ok too](a.md) and [web](https://example.org/x.md)\n"
        "[gone](c.md) and [no such heading](a.md#queues)\n"
        "`[in code](nowhere.md)`\n\n```\n[in a block](nowhere.md)\n```\n"
        "[up](../README.md)\n\n[ref]: missing.md\n\n## Here\n\n[self](#here), [not here](#there)\n")
    (tmp_path / "README.md").write_text("# r\n")
    problems = [p for p in (broken(ln, docs) for ln in links(docs / "b.md")) if p]
    assert len(problems) == 5, problems
    assert "b.md:4: c.md: no such file" in problems[0]
    assert "b.md:4: a.md#queues: no heading #queues" in problems[1]
    assert "../README.md: outside docs/" in problems[2]
    assert "b.md:12: missing.md: no such file" in problems[3]
    assert "b.md:16: #there: no heading #there in b.md" in problems[4]


def test_heading_anchors_are_the_sites_and_githubs():
    page = DOCS / "topologies.md"
    assert "editor-set-up-json-schema" in anchors(page)      # "Editor set-up: JSON Schema"
    assert "commands-in-nodes-exec" in anchors(page)         # "Commands in nodes: `exec:`"
    assert github_slug("Interop: Mininet, containerlab, and a Mininet-style prompt") == \
        "interop-mininet-containerlab-and-a-mininet-style-prompt"


# --- the project's documentation -------------------------------------------------------------

def test_the_docs_exist_and_link_each_other():
    assert README.is_file() and len(PAGES) >= 10, PAGES
    assert DOCS / "index.md" in PAGES
    relative = [ln for p in (README, *PAGES) for ln in links(p) if not SCHEME.match(ln.target)]
    assert len(relative) >= 2 * len(PAGES), f"{len(relative)} relative links: the checker read nothing?"


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_its_file_and_heading(path):
    problems = [p for p in (broken(ln) for ln in links(path)) if p]
    assert not problems, "\n".join(problems)


def test_every_docs_page_is_in_the_nav_and_the_nav_names_only_pages():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["strict"] is True and config.get("docs_dir", "docs") == "docs"
    assert config["theme"]["name"] in ("mkdocs", "readthedocs"), "a built-in theme: no theme package"
    nav = nav_pages(config["nav"])
    assert len(nav) == len(set(nav)), f"a page twice in nav: {nav}"
    assert set(nav) == {p.name for p in PAGES}, (
        f"not in nav: {sorted({p.name for p in PAGES} - set(nav))}; "
        f"in nav, no such page: {sorted(set(nav) - {p.name for p in PAGES})}")


def test_the_readme_is_a_front_door_that_links_every_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300, "README.md is the front door: the rest goes in docs/"
    linked = {(README.parent / ln.target.partition("#")[0]).resolve() for ln in links(README)
              if not SCHEME.match(ln.target)}
    missing = [p.name for p in PAGES if p.resolve() not in linked]
    assert not missing, f"README.md does not link: {missing}"


def test_the_readmes_test_command_is_what_ci_runs():
    # README "Tests" shows the command; .ci/run runs it as a stage.
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Tests\n", 1)[1].split("\n## ", 1)[0]
    command = re.search(r"```\n(.+?)\n```", section).group(1).strip()
    assert command == "make test"
    assert re.search(rf'^stage "{command}" .* {command}\b', (ROOT / ".ci/run").read_text(), re.M)
    assert ".ci/run" in section


def test_the_site_builds_strict(tmp_path):
    site = tmp_path / "site"
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                          str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "WARNING" not in res.stderr, res.stderr
    built = {p.name for p in site.glob("*.html")}
    assert {p.with_suffix(".html").name for p in PAGES} <= built, built


def test_what_code_and_help_text_name_in_the_docs_exists():
    # README "Verdicts" (a section of the README) or docs/verdicts.md#anchor (a page, a heading).
    readme_titles = {html.unescape(t) for t in re.findall(r"^#{2,3} (.+)$", README.read_text(), re.M)}
    readme_titles = {re.sub(r"[`*]", "", t) for t in readme_titles}
    section_ref = re.compile(r"""README(?:'s)?,?\s+"([^"]+)\"""")
    page_ref = re.compile(r"\bdocs/([\w-]+\.md)(?:#([\w-]+))?")
    files = [f for d in REFERRING for f in ([d] if d.is_file() else d.rglob("*"))
             if f.is_file() and f.suffix in ("", ".py", ".md", ".sh", ".yaml") and "__pycache__" not in f.parts
             and f != Path(__file__).resolve()]
    problems, pages_named = [], 0
    for f in files:
        text = f.read_text(encoding="utf-8", errors="replace")
        for m in section_ref.finditer(text):
            title = m.group(1)
            if not any(t == title or t.startswith(title) for t in readme_titles):
                problems.append(f"{f.relative_to(ROOT)}: README \"{title}\": no such README section "
                                f"(moved to docs/?)")
        for m in page_ref.finditer(text):
            pages_named += 1
            page, anchor = DOCS / m.group(1), m.group(2)
            if not page.is_file():
                problems.append(f"{f.relative_to(ROOT)}: docs/{m.group(1)}: no such page")
            elif anchor and anchor not in anchors(page):
                problems.append(f"{f.relative_to(ROOT)}: docs/{m.group(1)}#{anchor}: no such heading")
    assert not problems, "\n".join(problems)
    assert pages_named, "nothing in the code names a docs page (the scan read nothing?)"

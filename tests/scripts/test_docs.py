"""The user's manual stays a manual: README.md and docs/*.md are of bounded size, no long line
repeats (a botched scripted edit once replaced docs/python.md with one paragraph pasted between
every character, 11 MB), and every relative link points at a file of the repository."""
import collections
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_size_and_no_repeated_lines(path):
    text = path.read_text(encoding="utf-8")
    assert len(text.encode()) < 200_000, f"{path.name} is {len(text.encode())} bytes"
    counts = collections.Counter(line for line in text.splitlines() if len(line.strip()) >= 60)
    repeated = {line: n for line, n in counts.items() if n > 3}
    assert not repeated, f"{path.name} repeats: {list(repeated.items())[:3]}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_relative_links_resolve(path):
    missing = []
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):
            continue  # http:, https:, mailto:
        if not (path.parent / target).exists():
            missing.append(target)
    assert not missing, f"{path.name}: {missing}"


# A section citation in the code: `pipeline-behaviour.md §4.8`, or a bare `§4.8` in a file that
# says once which document its numbers cite: `Section numbers (§n) cite docs/X.md`.
CITATION = re.compile(r"(?:([a-z-]+\.md) )?§(\d+(?:\.\d+)?)")
DECLARATION = re.compile(r"Section numbers \(§n\) cite docs/([a-z-]+\.md)")
CODE = [p for d in ("src", "python") for p in sorted((ROOT / d).rglob("*"))
        if p.suffix in (".cc", ".h", ".py")]


def headings(doc):
    """The section numbers a document defines: `## 4.` or `### 4.8` headings (with `§` or not)."""
    numbers = set()
    for line in (ROOT / "docs" / doc).read_text(encoding="utf-8").splitlines():
        m = re.match(r"^#+\s*§?(\d+(?:\.\d+)?)\.?\s", line)
        if m:
            numbers.add(m.group(1))
    return numbers


def test_code_cites_only_the_projects_own_documents():
    """Every `§n` in src/ and python/ is a section of a document of docs/ (named beside it, or
    declared once by its file), and no code points at documents outside the repository."""
    sections = {}
    unnamed, dangling = [], []
    for path in CODE:
        text = path.read_text(encoding="utf-8")
        assert "shared/spec" not in text, path
        declared = DECLARATION.search(text)
        for number, line in enumerate(text.splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{number}"
            for doc, section in CITATION.findall(line):
                doc = doc or (declared.group(1) if declared else "")
                if not doc:
                    unnamed.append(where)
                    continue
                if not (ROOT / "docs" / doc).exists():
                    dangling.append(f"{where}: {doc}")
                    continue
                if doc not in sections:
                    sections[doc] = headings(doc)
                if section not in sections[doc]:
                    dangling.append(f"{where}: {doc} §{section}")
    assert not unnamed, f"§ without a document: {unnamed[:10]}"
    assert not dangling, f"citations of no section: {dangling[:10]}"

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

#!/usr/bin/env python3
"""Lists every function longer than a limit (default 100 lines) in src/ (C++) and python/ (Python).

  python3 scripts/check-function-length.py [--limit N] [--top K] [paths...]

Exits 1 when any function is over the limit, printing `file:line: name is N lines (limit L)` for
each, longest first. C++ is read by a small scanner, not a compiler: comments, strings and
character literals are blanked, braces are matched, and a brace at namespace or class scope whose
head is not a namespace, class, struct, union, enum, extern block or an initialiser (`= {`) opens a
function body; the function's length runs from its head's first line to its closing brace. Lambdas
and local classes count toward the function they sit in. Python functions and methods are read with
the ast module (a nested function counts toward its own length and its parent's).
"""

import argparse
import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CPP_SUFFIXES = (".cc", ".h", ".cpp", ".hpp")
SCOPE_HEAD = re.compile(r"^(template\s*<.*>\s*)?(namespace|class|struct|union|enum|extern\s+\"C\")\b",
                        re.S)


def blank_literals(text):
    """Comments, strings and char literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + (m.group(1) if m else "") + '"', i)
            j = n if end < 0 else end + len(m.group(1) if m else "") + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            # A digit separator (1'000) is not a char literal.
            if c == "'" and i > 0 and text[i - 1].isalnum():
                out.append(c)
                i += 1
                continue
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c if j - i >= 2 else c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def cpp_functions(path):
    """(name, first line, line count) of each function body at namespace or class scope."""
    text = blank_literals(open(path, encoding="utf-8", errors="replace").read())
    # Preprocessor lines are not code heads.
    text = re.sub(r"(?m)^[ \t]*#.*(\\\n.*)*$", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    found = []
    stack = []  # for each open brace: "scope" (namespace/class/...), "body" or "other"
    head_start = 0  # index where the current statement's head began
    i = 0
    line_of = lambda k: text.count("\n", 0, k) + 1
    body_start = None
    while i < len(text):
        c = text[i]
        at_scope = all(kind == "scope" for kind in stack)
        if c == "{":
            if at_scope:
                head = text[head_start:i].strip()
                if SCOPE_HEAD.match(head) or head.endswith("=") or not head:
                    stack.append("scope" if SCOPE_HEAD.match(head) else "other")
                elif ")" in head or head.endswith(("const", "override", "noexcept", "final")):
                    stack.append("body")
                    m = re.search(r"([~\w:]+(?:operator\s*\S+?)?)\s*\(", head)
                    body_start = (m.group(1) if m else head[:40], head_start)
                else:
                    stack.append("other")
            else:
                stack.append("other")
            head_start = i + 1
        elif c == "}":
            kind = stack.pop() if stack else "scope"
            if kind == "body" and all(k == "scope" for k in stack) and body_start:
                name, start = body_start
                first = line_of(start + len(text[start:i]) - len(text[start:i].lstrip()))
                found.append((name, first, line_of(i) - first + 1))
                body_start = None
            head_start = i + 1
        elif c == ";" and at_scope:
            head_start = i + 1
        elif c == ":" and at_scope and re.search(r"\b(public|private|protected)\s*$", text[head_start:i]):
            head_start = i + 1
        i += 1
    return found


def python_functions(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield node.name, first, node.end_lineno - first + 1


def sources(paths):
    for top in paths:
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                if name.endswith(CPP_SUFFIXES) or name.endswith(".py"):
                    yield os.path.join(folder, name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--top", type=int, default=0, help="also list the K longest functions")
    parser.add_argument("paths", nargs="*", default=["src", "python"])
    args = parser.parse_args()
    everything = []
    for path in sources(args.paths):
        functions = python_functions(path) if path.endswith(".py") else cpp_functions(path)
        rel = os.path.relpath(path, ROOT)
        everything += [(length, rel, line, name) for name, line, length in functions]
    everything.sort(reverse=True)
    over = [f for f in everything if f[0] > args.limit]
    for length, rel, line, name in over:
        print(f"{rel}:{line}: {name} is {length} lines (limit {args.limit})")
    if args.top:
        print(f"-- the {args.top} longest:")
        for length, rel, line, name in everything[:args.top]:
            print(f"{rel}:{line}: {name} is {length} lines")
    print(f"{len(everything)} functions, {len(over)} over {args.limit} lines")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())

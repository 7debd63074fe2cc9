"""A small .gitignore matcher and the file walker used when ripgrep is not installed.

Supported syntax (what real repositories use): comments and blank lines, ``\\`` escapes,
``!`` negation, a trailing ``/`` for directories only, a ``/`` at the start or in the middle
anchoring the pattern to the .gitignore's directory, ``*``, ``?``, ``[...]`` classes, and ``**``
(leading ``**/``, trailing ``/**``, inner ``/**/``). Deeper .gitignore files take precedence over
shallower ones and, within a file, the last matching line wins — as in git. An ignored directory
is not descended into, so (as in git) a file inside it cannot be re-included.

The walker also reads ``.ignore`` files (ripgrep does) and ``.git/info/exclude``, and always
skips ``.git`` itself, so both search engines see the same files. The semantic index
(``nyzhi.index``) walks a project with it too, so it lives in ``tools``, not in a tool.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from nyzhi import records
from nyzhi.config.textfile import NotRegularFile, read_regular_text

IGNORE_FILES = (".gitignore", ".ignore")


def translate_glob(pat: str, *, braces: bool = False) -> str:
    """Regex source for a glob where ``*``/``?`` never cross ``/`` and ``**`` spans directories."""
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if c == "*":
            if pat.startswith("**", i):
                j = i + 2
                at_seg_start = i == 0 or pat[i - 1] == "/"
                if at_seg_start and j < n and pat[j] == "/":
                    out.append("(?:.*/)?")
                    i = j + 1
                    continue
                if at_seg_start and j == n:
                    out.append(".*")
                    i = j
                    continue
                out.append("[^/]*")
                i = j
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and pat[j] in "!^":
                j += 1
            if j < n and pat[j] == "]":
                j += 1
            while j < n and pat[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = pat[i + 1 : j]
                neg = body[:1] in ("!", "^")
                if neg:
                    body = body[1:]
                body = body.replace("\\", "\\\\")
                out.append(f"[{'^/' if neg else ''}{body}]" if neg else f"[{body}]")
                i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pat[i]))
        elif braces and c == "{":
            j = pat.find("}", i)
            if j == -1:
                out.append(re.escape(c))
            else:
                alts = pat[i + 1 : j].split(",")
                out.append("(?:" + "|".join(translate_glob(a) for a in alts) + ")")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def compile_glob(pat: str) -> re.Pattern[str]:
    """A glob matched against a whole relative path (``*.py`` = top level only; braces allowed)."""
    return re.compile(f"^{translate_glob(pat, braces=True)}$", re.DOTALL)


def compile_include(pat: str) -> re.Pattern[str]:
    """rg ``--glob`` semantics: a pattern without ``/`` matches the file name at any depth."""
    if "/" in pat.strip("/"):
        return re.compile(f"^{translate_glob(pat.lstrip('/'), braces=True)}$", re.DOTALL)
    return re.compile(f"^(?:.*/)?{translate_glob(pat, braces=True)}$", re.DOTALL)


@records.frozen
class Rule:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


def parse_rule(line: str) -> Rule | None:
    """One .gitignore line as a rule, or None for blanks and comments."""
    line = line.rstrip("\n").rstrip("\r")
    if not line or line.startswith("#"):
        return None
    # Trailing spaces are ignored unless escaped.
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        stripped += " "
    line = stripped
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    elif line.startswith("\\!") or line.startswith("\\#"):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    body = translate_glob(line)
    prefix = "^" if anchored else "^(?:.*/)?"
    return Rule(re.compile(f"{prefix}{body}$", re.DOTALL), negated, dir_only)


def parse_rules(text: str) -> list[Rule]:
    return [r for r in (parse_rule(line) for line in text.splitlines()) if r is not None]


@records.frozen
class IgnoreFile:
    base: str  # absolute directory the rules are relative to
    rules: tuple[Rule, ...]

    def match(self, path: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included by a negation; None: no rule matched."""
        rel = os.path.relpath(path, self.base)
        for rule in reversed(self.rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(rel):
                return not rule.negated
        return None


def _load(directory: str, special: list[str] | None = None) -> list[IgnoreFile]:
    """The ignore files of ``directory``; one that is not a regular file (a FIFO, which a
    plain ``open`` would wait on for ever) is skipped, and its path added to ``special``."""
    found = []
    for name in IGNORE_FILES:
        path = os.path.join(directory, name)
        try:
            rules = parse_rules(read_regular_text(path))
        except NotRegularFile:
            if special is not None:
                special.append(path)
            continue
        except OSError:  # absent or unreadable
            continue
        if rules:
            found.append(IgnoreFile(directory, tuple(rules)))
    return found


def ancestor_ignores(root: Path, special: list[str] | None = None) -> list[IgnoreFile]:
    """Ignore files that apply to ``root`` from its ancestors, shallowest first: up to the
    enclosing git repository's top (plus its .git/info/exclude), or every ancestor outside a
    repository (ripgrep with ``--no-require-git`` does the same)."""
    root = Path(os.path.abspath(root))
    chain: list[Path] = []
    top = None
    for d in [root, *root.parents]:
        chain.append(d)
        if (d / ".git").exists():
            top = d
            break
    files: list[IgnoreFile] = []
    if top is not None:
        exclude = top / ".git" / "info" / "exclude"
        try:
            files += [IgnoreFile(str(top), tuple(parse_rules(read_regular_text(exclude))))]
        except NotRegularFile:
            if special is not None:
                special.append(str(exclude))
        except OSError:
            pass
    for d in reversed(chain[1:]):  # the root itself is loaded by the walker
        files += _load(str(d), special)
    return files


def is_ignored(chain: list[IgnoreFile], path: str, is_dir: bool) -> bool:
    for ignore_file in reversed(chain):
        verdict = ignore_file.match(path, is_dir)
        if verdict is not None:
            return verdict
    return False


def walk_files(
    root: Path,
    *,
    hidden: bool = False,
    skip_dirs: frozenset[str] = frozenset(),
    use_ignore: bool = True,
    exclude: tuple[str, ...] = (),
    special: list[str] | None = None,
) -> Iterator[str]:
    """Absolute paths of the files under ``root`` that ripgrep would list, in sorted order.

    Skips ``.git``, hidden entries unless ``hidden``, directories named in ``skip_dirs`` and,
    with ``use_ignore``, anything the .gitignore / .ignore files exclude. ``exclude`` adds
    gitignore-style patterns relative to ``root`` that no .gitignore can re-include
    (``[index] exclude``). ``special`` collects the ignore files skipped as not regular.
    """
    start = os.path.abspath(root)
    base_chain = ancestor_ignores(Path(start), special) if use_ignore else []
    forced = IgnoreFile(start, tuple(parse_rules("\n".join(exclude)))) if exclude else None

    def walk(directory: str, chain: list[IgnoreFile]) -> Iterator[str]:
        if use_ignore:
            here = _load(directory, special)
            if here:
                chain = chain + here
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            name = entry.name
            if name == ".git" or (not hidden and name.startswith(".")):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir and name in skip_dirs:
                continue
            if chain and is_ignored(chain, entry.path, is_dir):
                continue
            if forced is not None and forced.match(entry.path, is_dir):
                continue
            if is_dir:
                yield from walk(entry.path, chain)
            elif entry.is_file(follow_symlinks=False):
                yield entry.path

    yield from walk(start, base_chain)

"""Which language server handles a file, and where its project root is.

The built-in defaults cover the servers people have installed; ``[lsp.NAME]`` tables change
a default (same NAME) or add a server. A server is usable when its command is found on PATH
(or next to nyz's own Python, where ``pip install basedpyright`` puts it). Nothing here starts
a process or imports ``lsprotocol``: the tools ask it on every call, cheaply.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nyzhi import records

# file suffix -> LSP language id
EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".go": "go",
    ".rs": "rust",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
}


@records.frozen
class Default:
    """A built-in server: the first of ``commands`` found on PATH is used."""

    commands: tuple[tuple[str, ...], ...]
    languages: tuple[str, ...]
    root_markers: tuple[str, ...]
    initialization_options: dict[str, Any] = {}


DEFAULTS: dict[str, Default] = {
    "pyright": Default(
        (("basedpyright-langserver", "--stdio"), ("pyright-langserver", "--stdio"), ("pylsp",)),
        ("python",),
        ("pyproject.toml", "pyrightconfig.json", "setup.py", "setup.cfg", "requirements.txt")),
    "typescript": Default(
        (("typescript-language-server", "--stdio"),),
        ("typescript", "typescriptreact", "javascript", "javascriptreact"),
        ("tsconfig.json", "jsconfig.json", "package.json"),
        # No separate syntax server: while the project loads, it answers "definition" with
        # the import line instead of the declaration. An agent wants the right answer.
        {"tsserver": {"useSyntaxServer": "never"}}),
    "gopls": Default((("gopls",),), ("go",), ("go.work", "go.mod")),
    "rust-analyzer": Default((("rust-analyzer",),), ("rust",), ("Cargo.toml",)),
    "clangd": Default((("clangd",),), ("c", "cpp"),
                      ("compile_commands.json", "compile_flags.txt", ".clangd", "CMakeLists.txt")),
}

SUGGEST = {
    "python": "pip install basedpyright (or pyright, or python-lsp-server)",
    "typescript": "npm install -g typescript-language-server typescript",
    "go": "go install golang.org/x/tools/gopls@latest",
    "rust": "rustup component add rust-analyzer",
    "c": "install clangd (your package manager's clangd or clang-tools)",
}


@records.frozen
class ServerChoice:
    """A server resolved for one language: its name, the command line to start it, and what
    it is configured with."""

    name: str
    argv: tuple[str, ...]
    languages: tuple[str, ...]
    root_markers: tuple[str, ...]
    initialization_options: dict[str, Any]
    settings: dict[str, Any]


class NoServer(Exception):
    """No language server for a file; the message says so plainly and suggests grep."""


def search_paths(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Where commands are looked for: PATH first, then next to nyz's own Python."""
    env = os.environ if env is None else env
    return (env.get("PATH", os.defpath), os.path.dirname(sys.executable))


def language_of(path: Path, config: Any = None) -> str | None:
    suffix = path.suffix.lower()
    for entry in (config.servers.values() if config is not None else ()):
        if suffix in (e.lower() for e in entry.extensions) and entry.languages:
            return entry.languages[0]
    return EXTENSIONS.get(suffix)


def _candidates(config: Any) -> list[tuple[str, tuple[tuple[str, ...], ...], Any, Default | None]]:
    """(name, command lines, config entry or None, default or None), configured first."""
    servers = dict(config.servers) if config is not None else {}
    out = []
    for name, entry in servers.items():
        if name not in DEFAULTS:
            argv = ((entry.command, *entry.args),) if entry.command else ()
            out.append((name, argv, entry, None))
    for name, default in DEFAULTS.items():
        entry = servers.get(name)
        if entry is not None and entry.command:
            argv: tuple[tuple[str, ...], ...] = ((entry.command, *entry.args),)
        else:
            argv = default.commands
        out.append((name, argv, entry, default))
    return out


def choose(language: str, config: Any = None,
           env: Mapping[str, str] | None = None) -> ServerChoice:
    """The server for ``language``; ``NoServer`` saying what to install otherwise."""
    tried: list[str] = []
    for name, argvs, entry, default in _candidates(config):
        languages = tuple(entry.languages) if entry is not None and entry.languages else (
            default.languages if default is not None else ())
        if language not in languages or (entry is not None and not entry.enabled):
            continue
        for path, argv in ((p, a) for p in search_paths(env) for a in argvs):
            found = shutil.which(argv[0], path=path)
            if found is None:
                tried.append(argv[0])
                continue
            markers = tuple(entry.root_markers) if entry is not None and entry.root_markers else (
                default.root_markers if default is not None else ())
            options = dict(default.initialization_options) if default is not None else {}
            options.update(entry.initialization_options if entry is not None else {})
            return ServerChoice(
                name=name, argv=(found, *argv[1:]), languages=languages, root_markers=markers,
                initialization_options=options,
                settings=dict(entry.settings) if entry else {},
            )
    hint = SUGGEST.get("c" if language == "cpp" else language.removesuffix("react"), "")
    looked = f" (looked for {', '.join(dict.fromkeys(tried))} on PATH)" if tried else ""
    install = f"; to get one: {hint}, or configure [lsp.NAME]" if hint else (
        "; configure one under [lsp.NAME] (command, languages)")
    raise NoServer(f"no language server for {language} files{looked}{install}. "
                   "Use grep to find definitions and references meanwhile.")


def project_root(path: Path, markers: tuple[str, ...], workspace: Path) -> Path:
    """The nearest directory at or above ``path``'s (not above the workspace, when ``path`` is
    inside it) holding one of ``markers``; else the workspace (or the file's directory)."""
    inside = path.is_relative_to(workspace)
    for parent in path.parents:
        if inside and not parent.is_relative_to(workspace):
            break
        if any((parent / m).exists() for m in markers):
            return parent
    return workspace if inside else path.parent

"""The environment every process nyz starts for a tool gets: one policy, one function.

A coding agent runs commands a model chose, and the model reads text anyone could have written
(a README, an issue, a web page). Whatever is in those commands' environment is one injected
instruction away from leaving the machine, so API keys and tokens are not passed down by
default. Every spawner — ``bash`` and ``verify`` through the executors, ``rg``/``git`` helpers,
hooks, MCP stdio servers — builds its child's environment with ``child_env``; nothing else
copies ``os.environ`` into a child.

``[shell.env]`` configures it:

* ``inherit``: ``"all"`` (the parent's environment), ``"core"`` (only ``CORE_VARS``) or
  ``"none"`` (empty);
* ``exclude``: glob patterns of names dropped from what is inherited (case-insensitive); the
  default catches ``*KEY*``, ``*SECRET*``, ``*TOKEN*``, ``*PASSWORD*``, ``*CREDENTIAL*`` and every
  built-in provider's key variable;
* ``include_only``: when non-empty, only inherited names matching one of these globs survive;
* ``set``: fixed values, added last (never excluded: the user wrote them on purpose).

A process that needs a key (a hook, an MCP server) gets it from its own ``env`` table in
config, passed as ``extra``: it is added after the policy, for that process only.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import attrs

from nyzhi import records

Inherit = Literal["all", "core", "none"]

CORE_VARS = ("PATH", "HOME", "USER", "LANG", "TERM", "TMPDIR", "SHELL")
SECRET_PATTERNS = ("*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*", "*CREDENTIAL*")


def provider_key_vars() -> tuple[str, ...]:
    """Every built-in provider's key variable (``GOOGLE_API_KEY``, ``OPENAI_API_KEY``, …)."""
    from nyzhi.config.presets import BUILTIN_PROVIDERS

    return tuple(dict.fromkeys(v for p in BUILTIN_PROVIDERS.values() for v in p.env_vars))


def search_key_vars() -> tuple[str, ...]:
    """The web_search backends' key variables (``BRAVE_API_KEY``, …): only nyz's own request
    to the search API uses them."""
    from nyzhi.tools.search_backends import BACKENDS

    return tuple(b.key_var for b in BACKENDS.values() if b.key_var)


def configured_secret_vars(config: Any) -> tuple[str, ...]:
    """The environment variables config names as holding a secret: each MCP server's
    ``client_secret_env`` (the variable's name, matched literally)."""
    names = (getattr(s, "client_secret_env", None) for s in config.mcp.servers.values())
    return tuple(dict.fromkeys(glob_literal(n) for n in names if n))


def glob_literal(name: str) -> str:
    """``name`` as a pattern that matches only itself (``[`` ``*`` ``?`` escaped)."""
    return re.sub(r"([*?\[])", r"[\1]", name)


def default_exclude() -> tuple[str, ...]:
    return (*SECRET_PATTERNS, *provider_key_vars(), *search_key_vars())


def _matches(name: str, patterns: Iterable[str]) -> bool:
    """``name`` matches one of the shell-style ``patterns``, case-insensitively."""
    found = _one_pattern(tuple(patterns))
    return found is not None and found.match(name.upper()) is not None


@functools.lru_cache(maxsize=32)
def _one_pattern(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """``patterns`` as one regex (upper-cased, as names are compared): matching an
    environment against the default ~25 patterns was ~1,000 ``fnmatchcase`` calls, at every
    start-up (the redactor's excluded variables) and every process a tool starts."""
    if not patterns:
        return None
    return re.compile("|".join(fnmatch.translate(p.upper()) for p in patterns))


@records.frozen
class EnvPolicy:
    """What a child process inherits (see the module docstring). The default is the safe one:
    everything except secret-looking names and provider key variables."""

    inherit: Inherit = attrs.field(default="all")
    exclude: tuple[str, ...] = attrs.field(factory=default_exclude, converter=records.as_tuple)
    include_only: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)
    set: dict[str, str] = attrs.field(factory=dict)

    @inherit.validator
    def _check_inherit(self, _attr: Any, value: str) -> None:
        if value not in ("all", "core", "none"):
            raise ValueError(
                f"shell.env.inherit: expected \"all\", \"core\" or \"none\", got {value!r}"
            )

    @classmethod
    def from_config(cls, config: Any) -> EnvPolicy:
        """From a whole ``Config``: ``[shell.env]`` (``exclude`` None keeps the default), plus
        the variables config names as holding a secret (``client_secret_env`` of an MCP
        server), which are dropped whatever ``exclude`` says: a secret nyz sends to one host
        must not reach a command the model chose, even under a name no pattern catches."""
        shell_env = config.shell.env
        exclude = default_exclude() if shell_env.exclude is None else shell_env.exclude
        exclude = (*exclude, *configured_secret_vars(config))
        return cls(shell_env.inherit, exclude, shell_env.include_only, dict(shell_env.set))

    def kept(self, name: str) -> bool:
        """Whether an inherited variable called ``name`` passes the policy."""
        if self.inherit == "none":
            return False
        if self.inherit == "core" and name not in CORE_VARS:
            return False
        if self.include_only and not _matches(name, self.include_only):
            return False
        return not _matches(name, self.exclude)

    def excluded(self, parent: Mapping[str, str] | None = None) -> dict[str, str]:
        """The variables of ``parent`` the exclude patterns drop (the redactor registers
        their values: a secret kept out of a child must not come back through its output)."""
        parent = os.environ if parent is None else parent
        return {k: v for k, v in parent.items() if _matches(k, self.exclude)}


DEFAULT_POLICY = EnvPolicy()


def child_env(
    policy: EnvPolicy | None = None,
    extra: Mapping[str, str] | None = None,
    parent: Mapping[str, str] | None = None,
    *,
    keep: Iterable[str] = (),
) -> dict[str, str]:
    """The complete environment for a child process.

    ``policy`` None is the default policy; ``parent`` None is ``os.environ``; ``extra`` (a
    process's own ``env`` table, or variables a tool sets such as ``GIT_PAGER``) is added after
    the policy's ``set``. ``keep`` names variables inherited regardless of the policy (the SSH
    client's ``SSH_AUTH_SOCK``: the agent socket it authenticates with, not a secret value).
    """
    policy = DEFAULT_POLICY if policy is None else policy
    parent = os.environ if parent is None else parent
    keep = set(keep)
    env = {k: v for k, v in parent.items() if k in keep or policy.kept(k)}
    env.update(policy.set)
    if extra:
        env.update(extra)
    return env

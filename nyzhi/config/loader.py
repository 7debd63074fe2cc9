"""``load_config``: read the three layers, validate each, merge, structure.

Each layer is validated on its own first, so an error names the exact file it is in. Then
the raw dicts are merged (``merge.py``) and the result structured into a ``Config``. Loading
reads files only; it never creates or modifies anything.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path

from nyzhi import records
from nyzhi.config import paths
from nyzhi.config.convert import dotted, structure
from nyzhi.config.errors import ConfigError, ConfigProblem, ConfigWarning
from nyzhi.config.key_classes import USER_ONLY_TABLES
from nyzhi.config.keys import check_layer
from nyzhi.config.merge import merge_layers
from nyzhi.config.schema import Config
from nyzhi.config.textfile import read_config_text
from nyzhi.config.workspace import Workspace, detect_workspace

LAYER_NAMES = ("global", "project", "local")


@records.frozen
class Layer:
    name: str  # "global" | "project" | "local"
    path: Path


@records.frozen
class LoadedConfig:
    config: Config
    workspace: Workspace
    sources: dict[str, str]  # dotted leaf key -> "global" | "project" | "local" | "a+b"
    layers: tuple[Layer, ...]  # the layer files that existed, in merge order
    candidates: tuple[Layer, ...]  # all three layer paths, existing or not
    # unknown keys (ignored) and keys not yet active, per file: for the user, never fatal
    warnings: tuple[ConfigWarning, ...] = ()

    def source_of(self, key: str) -> str:
        """The layer(s) that set ``key`` (or any key under it), else "default"."""
        if key in self.sources:
            return self.sources[key]
        found: list[str] = []
        for k, label in self.sources.items():
            if k.startswith(key + ".") or k.startswith(key + "["):
                for part in label.split("+"):
                    if part not in found:
                        found.append(part)
        return "+".join(found) if found else "default"

    def layer_path(self, name: str) -> Path:
        return next(layer.path for layer in self.candidates if layer.name == name)


def layer_paths(workspace: Workspace, env: Mapping[str, str] | None = None) -> tuple[Layer, ...]:
    return (
        Layer("global", paths.global_config_path(env)),
        Layer("project", workspace.project_config_path),
        Layer("local", workspace.local_config_path),
    )


# Tables read from the user's own config only: a project layer's copy is dropped with a warning
# before anything else (whatever it approved), since each one widens what the model reaches.
# The key table says which (every key of the table USER_ONLY): one list, not two.
USER_ONLY = USER_ONLY_TABLES


def _user_only(layer: Layer, raw: dict, warnings: list[ConfigWarning]) -> dict:
    """``raw`` without the ``USER_ONLY`` tables when ``layer`` is not the user's own."""
    if layer.name == "global" or not any(k in raw for k in USER_ONLY):
        return raw
    for key in USER_ONLY:
        if key in raw:
            warnings.append(ConfigWarning(layer.path, key, "ignored: only your own config "
                                          "may set it (it widens what the model may reach)"))
    return {k: v for k, v in raw.items() if k not in USER_ONLY}


def read_layer(path: Path) -> dict | None:
    """The raw TOML of ``path``, or None when it does not exist; ConfigError if unparsable."""
    text = read_config_text(path, "toml")
    if text is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(ConfigProblem(path, "", "valid TOML", f"a syntax error: {exc}")) from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise ConfigError(ConfigProblem(path, "", "valid TOML", f"a value it cannot hold: {exc}")
                          ) from None


def validate_layer(raw: dict, path: Path | None) -> Config:
    """Structure one layer alone (every key is optional), raising ConfigError naming ``path``.

    Strict: an unknown key is an error here (``nyz config set`` refuses to write a typo);
    ``load_config`` drops unknown keys first and only warns about them."""
    return structure(raw, path)


def load_config(cwd: Path | None = None, *, env: Mapping[str, str] | None = None,
                layer_filter: Callable[[str, dict], dict] | None = None,
                workspace: Workspace | None = None) -> LoadedConfig:
    """Load the merged configuration for the workspace containing ``cwd``.

    Raises ConfigError (naming file, key path, expected and found) on unreadable TOML or
    wrong types in any layer. A key the schema lacks (a typo) does not stop loading: it is
    dropped and reported in ``warnings`` with the file and a close match, as is a key that
    is known but not yet active. ``layer_filter(name, raw)`` may drop keys from a layer
    (checked, typos dropped) before it is merged (``nyzhi.config.project_trust`` drops what the user has not approved);
    ``workspace``: the one already detected for ``cwd`` (saves detecting it twice).
    """
    workspace = workspace or detect_workspace(cwd, env)
    candidates = layer_paths(workspace, env)
    raws: list[tuple[str, dict]] = []
    existing: list[Layer] = []
    problems: list[ConfigProblem] = []
    warnings: list[ConfigWarning] = []
    for layer in candidates:
        raw = read_layer(layer.path)
        if raw is None:
            continue
        existing.append(layer)
        raw = _user_only(layer, raw, warnings)
        raw, found, error = check_layer(raw, layer.path)  # one pass: keys and values
        warnings.extend(found)
        if error is not None:  # a bad value is reported whether or not it would be used
            problems.extend(error.problems)
        if layer_filter is not None:  # then what the user has not approved is left out
            raw = layer_filter(layer.name, raw)
        raws.append((layer.name, raw))
    if problems:
        raise ConfigError(problems)
    merged, sources = merge_layers(raws)
    config = structure(merged, None)
    return LoadedConfig(
        config=config,
        workspace=workspace,
        sources={dotted(k): v for k, v in sources.items()},
        layers=tuple(existing),
        candidates=candidates,
        warnings=tuple(warnings),
    )

"""A persistent prompt-state cache for the offline model's llama.cpp server (issue 54).

Every ``nyz`` process starts its own llama.cpp server (no daemon), so without this each run
processes the whole system prompt again before its first token. llama-cpp-python asks a
``BaseLlamaCache`` for the saved state with the longest prefix shared with the new prompt and
saves the state after each completion; this one keeps those states on disk, in
``$XDG_STATE_HOME/nyzhi/llama-cache/<model-ctx-build>/`` (0700), so the next run's server
restores the system prompt's KV state instead of evaluating it.

It runs inside the server process (the bootstrap in ``nyzhi.provider.llama_server`` attaches
it to the model the server loads). It imports neither llama_cpp nor numpy at module level.

File format, one file per state, ``<sha256 of its tokens>.state`` (not pickle: a planted file
must not run code when loaded):

* the magic ``NYZLLS1\\n``;
* a little-endian uint32, the length of a JSON header;
* the JSON header: ``n_tokens``, ``n_ids``, ``state_size``, ``seed``, ``n_vocab`` and
  ``sha256`` (of the two parts that follow);
* ``n_ids`` token ids as little-endian int32, then ``state_size`` bytes of llama.cpp state.

Logits are not kept (a restored state's scores are zeros): llama-cpp-python evaluates at least
the prompt's last token again after a restore, which refreshes them. A file that fails any
check is ignored (and removed); lookups and saves never raise into the server except for the
``KeyError`` a miss is. At most ``max_states`` files and ``max_bytes`` in all are kept, least
recently used first out (a hit refreshes the file's modification time). ``stats.json`` counts
hits and misses, for tests and for a curious user.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nyzhi.config.fsutil import atomic_write

MAGIC = b"NYZLLS1\n"
SUFFIX = ".state"
#: A lookup sharing fewer tokens than this with every saved state is a miss.
MIN_SHARED_TOKENS = 32
MAX_STATES = 8
MAX_BYTES = 256 * 1024 * 1024
_MAX_HEADER = 4096
_HEADER_KEYS = ("n_tokens", "n_ids", "state_size", "seed", "n_vocab")


def cache_root(env: dict[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/nyzhi/llama-cache`` (default ``~/.local/state/nyzhi/llama-cache``)."""
    from nyzhi.config.paths import state_dir

    return state_dir(env) / "llama-cache"


def build_key(model: Path, n_ctx: int, build: str) -> str:
    """The cache directory's name for a model file, a context size and a llama.cpp build: a
    state saved by one is meaningless to another."""
    try:
        st = model.stat()
        identity = f"{model.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    except OSError:
        identity = str(model)
    digest = hashlib.sha256(f"{identity}|{n_ctx}|{build}".encode()).hexdigest()[:16]
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in model.stem)[:48]
    return f"{stem}-ctx{n_ctx}-{digest}"


def _shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class _Corrupt(Exception):
    pass


class PromptStateCache:
    """A ``llama_cpp.BaseLlamaCache`` (duck-typed: llama_cpp only calls these methods) on
    disk. ``n_vocab`` shapes the zero scores of a restored state."""

    def __init__(
        self, directory: Path, *, n_vocab: int, max_states: int = MAX_STATES,
        max_bytes: int = MAX_BYTES,
    ) -> None:  # fmt: skip
        self.directory = Path(directory)
        self.n_vocab = n_vocab
        self.max_states = max_states
        self.capacity_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        try:
            for path in (self.directory.parent, self.directory):
                path.mkdir(parents=True, exist_ok=True, mode=0o700)
                os.chmod(path, 0o700)
        except OSError:
            pass  # every save then fails quietly: the server still answers, uncached

    # -- BaseLlamaCache -----------------------------------------------------------------

    @property
    def cache_size(self) -> int:
        return sum(size for _, size, _ in self._files())

    def __contains__(self, key: Sequence[int]) -> bool:
        return self._best(list(key)) is not None

    def __getitem__(self, key: Sequence[int]) -> Any:
        tokens = list(key)
        best = self._best(tokens)
        if best is None:
            self._count(hit=False)
            raise KeyError("no saved prompt state shares enough tokens")
        try:
            state = self._load(best)
        except (_Corrupt, OSError):
            self._discard(best)
            self._count(hit=False)
            raise KeyError("the saved prompt state could not be read") from None
        with contextlib.suppress(OSError):
            os.utime(best)  # most recently used
        self._count(hit=True)
        return state

    def __setitem__(self, key: Sequence[int], value: Any) -> None:
        try:
            self._save(list(key), value)
            self._evict()
        except Exception:  # a full disk must not fail the answer that was just given
            pass

    # -- files --------------------------------------------------------------------------

    def _files(self) -> list[tuple[Path, int, int]]:
        """(path, size, mtime_ns) of the state files, oldest use first."""
        found = []
        try:
            entries = list(os.scandir(self.directory))
        except OSError:
            return []
        for entry in entries:
            if not entry.name.endswith(SUFFIX):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if entry.is_file(follow_symlinks=False):
                found.append((Path(entry.path), st.st_size, st.st_mtime_ns))
        return sorted(found, key=lambda f: f[2])

    def _read_head(self, path: Path) -> tuple[dict[str, int], list[int], int]:
        """The header, the token ids and the offset of the state bytes; ``_Corrupt`` if the
        file is not one of ours or is cut short."""
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as f:
            head = f.read(len(MAGIC) + 4)
            if len(head) != len(MAGIC) + 4 or not head.startswith(MAGIC):
                raise _Corrupt("bad magic")
            (length,) = struct.unpack("<I", head[len(MAGIC):])
            if not 0 < length <= _MAX_HEADER:
                raise _Corrupt("bad header length")
            try:
                header = json.loads(f.read(length))
            except ValueError:
                raise _Corrupt("bad header") from None
            if not isinstance(header, dict) or not isinstance(header.get("sha256"), str):
                raise _Corrupt("bad header")
            for name in _HEADER_KEYS:
                value = header.get(name)
                if type(value) is not int or value < 0:
                    raise _Corrupt(f"bad {name}")
            if header["n_vocab"] != self.n_vocab or header["n_tokens"] > header["n_ids"]:
                raise _Corrupt("another model")
            offset = len(MAGIC) + 4 + length
            expected = offset + 4 * header["n_ids"] + header["state_size"]
            if os.fstat(f.fileno()).st_size != expected:
                raise _Corrupt("wrong size")
            raw = f.read(4 * header["n_ids"])
            ids = list(struct.unpack(f"<{header['n_ids']}i", raw))
        return header, ids, offset

    def _best(self, tokens: list[int]) -> Path | None:
        best, best_len = None, MIN_SHARED_TOKENS - 1
        for path, _, _ in self._files():
            try:
                header, ids, _ = self._read_head(path)
            except (_Corrupt, OSError, struct.error):
                self._discard(path)
                continue
            shared = _shared_prefix(ids[: header["n_tokens"]], tokens)
            if shared > best_len:
                best, best_len = path, shared
        return best

    def _load(self, path: Path) -> Any:
        import numpy as np
        from llama_cpp.llama import LlamaState

        header, _, offset = self._read_head(path)
        with open(path, "rb") as f:
            f.seek(offset)
            payload = f.read()
        if hashlib.sha256(payload).hexdigest() != header["sha256"]:
            raise _Corrupt("checksum")
        n_ids = header["n_ids"]
        input_ids = np.frombuffer(payload[: 4 * n_ids], dtype="<i4").astype(np.intc)
        return LlamaState(
            input_ids=input_ids,
            scores=np.zeros((1, self.n_vocab), dtype=np.single),
            n_tokens=header["n_tokens"],
            llama_state=payload[4 * n_ids:],
            llama_state_size=header["state_size"],
            seed=header["seed"],
        )

    def _save(self, key: list[int], value: Any) -> None:
        import numpy as np

        ids = np.asarray(value.input_ids, dtype="<i4").tobytes()
        state = bytes(value.llama_state)
        payload = ids + state
        header = json.dumps({
            "n_tokens": int(value.n_tokens), "n_ids": len(ids) // 4,
            "state_size": len(state), "seed": int(value.seed) & 0xFFFFFFFF,
            "n_vocab": self.n_vocab, "sha256": hashlib.sha256(payload).hexdigest(),
        }).encode()  # fmt: skip
        if len(payload) > self.capacity_bytes:
            return
        name = hashlib.sha256(struct.pack(f"<{len(key)}i", *key)).hexdigest()[:32] + SUFFIX
        data = MAGIC + struct.pack("<I", len(header)) + header + payload
        # No fsync: a state lost to a crash is only a slower next start.
        atomic_write(self.directory / name, data, mode=0o600, dir_mode=0o700, sync=False)

    def _evict(self) -> None:
        files = self._files()
        total = sum(size for _, size, _ in files)
        while files and (len(files) > self.max_states or total > self.capacity_bytes):
            path, size, _ = files.pop(0)
            self._discard(path)
            total -= size

    def _discard(self, path: Path) -> None:
        with contextlib.suppress(OSError):
            path.unlink()

    def _count(self, *, hit: bool) -> None:
        if hit:
            self.hits += 1
        else:
            self.misses += 1
        stats = json.dumps({"hits": self.hits, "misses": self.misses, "pid": os.getpid()})
        with contextlib.suppress(Exception):
            atomic_write(self.directory / "stats.json", stats.encode(), mode=0o600, sync=False)


def attach(llama: Any, model: Path, n_ctx: int, root: Path) -> PromptStateCache | None:
    """Give ``llama`` (a loaded ``llama_cpp.Llama``) a persistent cache under ``root``."""
    import llama_cpp

    build = f"llama-cpp-python {getattr(llama_cpp, '__version__', '?')}"
    directory = Path(root) / build_key(Path(model), n_ctx, build)
    cache = PromptStateCache(directory, n_vocab=int(llama.n_vocab()))
    llama.set_cache(cache)
    save_state = llama.save_state

    def save_state_without_logits() -> Any:
        # llama-cpp-python copies its logits (n_batch x n_vocab floats, 100 MB for SmolLM2)
        # into each state it saves; this cache keeps none, so it copies one row. The server
        # saves under its model lock, so nothing else sees the narrowed view.
        scores = getattr(llama, "scores", None)
        if not hasattr(scores, "shape") or len(scores.shape) != 2:
            return save_state()
        llama.scores = scores[:1]
        try:
            return save_state()
        finally:
            llama.scores = scores

    llama.save_state = save_state_without_logits
    return cache

"""The offline model's on-disk prompt-state cache (nyzhi.provider.llama_state_cache), in
process on real files: what llama-cpp-python's server would save and look up. The real
server's reuse is tested in test_local_model.py."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
llama = pytest.importorskip("llama_cpp.llama")

from nyzhi.provider.llama_state_cache import (  # noqa: E402
    MIN_SHARED_TOKENS,
    PromptStateCache,
    build_key,
    cache_root,
)

N_VOCAB = 50


def _state(tokens: list[int], blob: bytes = b"kv" * 500):
    return llama.LlamaState(
        input_ids=np.array(tokens, dtype=np.intc),
        scores=np.ones((len(tokens), N_VOCAB), dtype=np.single),
        n_tokens=len(tokens),
        llama_state=blob,
        llama_state_size=len(blob),
        seed=7,
    )


def _cache(tmp_path: Path, **kwargs) -> PromptStateCache:
    return PromptStateCache(tmp_path / "root" / "model", n_vocab=N_VOCAB, **kwargs)


def test_the_longest_shared_prefix_comes_back_with_zero_scores(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    system = list(range(100, 200))
    cache[system + [1, 2, 3]] = _state(system + [1, 2, 3], b"first")
    cache[system[:40]] = _state(system[:40], b"short")
    got = cache[system + [1, 2, 9, 9]]
    assert got.llama_state == b"first" and got.llama_state_size == 5
    assert got.input_ids.tolist() == system + [1, 2, 3] and got.n_tokens == 103
    assert got.scores.shape == (1, N_VOCAB) and not got.scores.any()
    assert got.seed == 7
    assert (cache.hits, cache.misses) == (1, 0)
    assert (tmp_path / "root").stat().st_mode & 0o777 == 0o700
    assert cache.directory.stat().st_mode & 0o777 == 0o700
    for path in cache.directory.iterdir():
        assert path.stat().st_mode & 0o777 == 0o600


def test_fewer_shared_tokens_than_the_minimum_is_a_miss(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    tokens = list(range(MIN_SHARED_TOKENS + 10))
    cache[tokens] = _state(tokens)
    with pytest.raises(KeyError):
        cache[tokens[: MIN_SHARED_TOKENS - 1] + [999]]
    assert cache[tokens[:MIN_SHARED_TOKENS] + [999]].n_tokens == len(tokens)
    assert (cache.hits, cache.misses) == (1, 1)


def test_at_most_max_states_are_kept_least_recently_used_out(tmp_path: Path) -> None:
    cache = _cache(tmp_path, max_states=2)
    a, b, c = ([k] * 40 for k in (1, 2, 3))
    cache[a] = _state(a, b"a")
    cache[b] = _state(b, b"b")
    import os

    for path in cache.directory.glob("*.state"):  # make both old, then use `a`
        os.utime(path, ns=(1, 1))
    assert cache[a].llama_state == b"a"
    cache[c] = _state(c, b"c")
    assert len(list(cache.directory.glob("*.state"))) == 2
    with pytest.raises(KeyError):
        cache[b]
    assert cache[a].llama_state == b"a" and cache[c].llama_state == b"c"


def test_the_byte_bound_holds(tmp_path: Path) -> None:
    cache = _cache(tmp_path, max_bytes=3000)
    for k in range(4):
        tokens = [k] * 40
        cache[tokens] = _state(tokens, bytes(1000))
    assert cache.cache_size <= 3000


@pytest.mark.parametrize("damage", ["truncated", "flipped", "magic", "header", "pickle"])
def test_a_damaged_or_planted_file_is_a_quiet_miss_and_is_removed(
    tmp_path: Path, damage: str, capsys
) -> None:
    cache = _cache(tmp_path)
    tokens = list(range(64))
    cache[tokens] = _state(tokens)
    (path,) = cache.directory.glob("*.state")
    data = path.read_bytes()
    if damage == "truncated":
        data = data[:-10]
    elif damage == "flipped":
        data = data[:-1] + bytes([data[-1] ^ 0xFF])
    elif damage == "magic":
        data = b"X" + data[1:]
    elif damage == "header":
        data = data[:12] + b"{not json" + data[21:]
    else:  # what LlamaDiskCache would have read: never unpickled
        data = pickle.dumps(_state(tokens))
    path.write_bytes(data)
    with pytest.raises(KeyError):
        cache[tokens]
    assert not path.exists()
    assert capsys.readouterr() == ("", "")


def test_a_symlinked_state_is_not_followed(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    tokens = list(range(64))
    cache[tokens] = _state(tokens)
    (path,) = cache.directory.glob("*.state")
    elsewhere = tmp_path / "elsewhere.state"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    with pytest.raises(KeyError):
        cache[tokens]


def test_the_directory_names_model_context_and_build_under_the_state_dir(tmp_path: Path) -> None:
    model = tmp_path / "Some Model.gguf"
    model.write_bytes(b"x")
    key = build_key(model, 4096, "b1")
    assert key.startswith("Some_Model-ctx4096-")
    assert build_key(model, 2048, "b1") != key != build_key(model, 4096, "b2")
    env = {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "st")}
    assert cache_root(env) == tmp_path / "st" / "nyzhi" / "llama-cache"
    assert cache_root({"HOME": str(tmp_path)}) == tmp_path / ".local/state/nyzhi/llama-cache"

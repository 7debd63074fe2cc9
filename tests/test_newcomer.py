"""A newcomer's first ten minutes (issue 33 item 8): a fresh clone, as an unprivileged user
whose PATH has no tmux and no ssh, runs the README's first command, ``make run
ARGS=--version``. The output must have no warning block (setuptools' "Please be careful"
notes) and must end with the hint for putting ``nyz`` on PATH.

It needs root (``useradd``). llama.cpp is not compiled again: the wheel pip built and cached
when this machine ran ``make test`` is offered to the newcomer's pip (``PIP_FIND_LINKS``,
with a constraint pinning that version). Without such a wheel the test is skipped, except in
CI (``CI`` set), where ``make test`` has just built it and its absence is a failure.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_BOUND_S = 900  # a safety bound for a broken install (downloads included), not a timing

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None,
                       reason="needs root and useradd to create an unprivileged user"),
]


def _cached_llama_wheel() -> Path | None:
    """The llama-cpp-python wheel in pip's cache (the newest), or None."""
    cache = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True,
                           text=True, check=False).stdout.strip()
    found = sorted(glob.glob(f"{cache}/wheels/**/llama_cpp_python-*.whl", recursive=True),
                   key=os.path.getmtime) if cache else []
    return Path(found[-1]) if found else None


def _bin_dir(root: Path, without: set[str]) -> Path:
    """A whole PATH: the system's programs, minus ``without`` (no venv, no sbin)."""
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for directory in ("/usr/local/bin", "/usr/bin", "/bin"):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            target = bin_dir / entry.name
            if entry.name in without or target.exists() or target.is_symlink():
                continue
            target.symlink_to(entry.path)
    return bin_dir


def _source_into(clone: Path, owner: str) -> list[str]:
    """The argv that makes ``clone`` a fresh copy of this checkout, run as ``owner``: a git
    clone of a bundle of HEAD (what was committed), or a plain copy when this is no git
    checkout."""
    if (REPO / ".git").exists():
        bundle = clone.parent / "repo.bundle"
        subprocess.run(["git", "-C", str(REPO), "bundle", "create", str(bundle), "HEAD"],
                       check=True, capture_output=True)
        shutil.chown(bundle, owner)
        return ["git", "clone", "-q", str(bundle), str(clone)]
    shutil.copytree(REPO, clone, ignore=shutil.ignore_patterns(
        ".venv", "__pycache__", "*.egg-info", ".pytest_cache", ".ruff_cache"))
    subprocess.run(["chown", "-R", owner, str(clone)], check=True)
    return ["true"]


def test_a_fresh_clone_runs_make_run_quietly_and_says_how_to_put_nyz_on_path() -> None:
    wheel = _cached_llama_wheel()
    if wheel is None:
        if os.environ.get("CI"):
            pytest.fail("no cached llama-cpp-python wheel, though make test built it")
        pytest.skip("no llama-cpp-python wheel in pip's cache (run make test once): the "
                    "newcomer would compile llama.cpp for minutes")
    version = wheel.name.split("-")[1]
    user = f"nyzhi-new-{secrets.token_hex(3)}"
    root = Path(tempfile.mkdtemp(prefix="nyzhi-newcomer-", dir="/tmp"))
    subprocess.run(["useradd", "--create-home", "--home-dir", str(root / "home"), user],
                   check=True, capture_output=True)
    try:
        account = pwd.getpwnam(user)
        root.chmod(0o755)
        shutil.chown(root, user)  # the clone is made in it, by the newcomer
        wheels = root / "wheels"
        wheels.mkdir()
        shutil.copy2(wheel, wheels / wheel.name)
        constraints = root / "constraints.txt"
        constraints.write_text(f"llama-cpp-python=={version}\n")
        bin_dir = _bin_dir(root, without={"tmux", "ssh", "sshd", "nyz"})
        clone = root / "clone"
        env = {
            "HOME": account.pw_dir, "USER": user, "LOGNAME": user, "PATH": str(bin_dir),
            "LANG": os.environ.get("LANG", "C.UTF-8"), "TERM": "dumb",
            "PIP_FIND_LINKS": " ".join(filter(None, [str(wheels),
                                                     os.environ.get("PIP_FIND_LINKS")])),
            "PIP_CONSTRAINT": " ".join(filter(None, [str(constraints),
                                                     os.environ.get("PIP_CONSTRAINT")])),
        }
        # How this machine reaches PyPI (a proxy, a CA bundle), as a newcomer's shell has it.
        for name in ("PIP_CERT", "PIP_INDEX_URL", "PIP_DEFAULT_TIMEOUT", "HTTPS_PROXY",
                     "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy",
                     "SSL_CERT_FILE"):
            if name in os.environ:
                env[name] = os.environ[name]
        as_user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": [],
                   "env": env}
        cloned = subprocess.run(_source_into(clone, user), cwd=root, capture_output=True,
                                text=True, check=False, **as_user)
        assert cloned.returncode == 0, cloned.stderr
        proc = subprocess.run(["make", "--no-print-directory", "run", "ARGS=--version"],
                              cwd=clone, capture_output=True, text=True,
                              timeout=_BOUND_S, check=False, **as_user)
    finally:
        subprocess.run(["userdel", "--remove", user], capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert re.search(r"^nyz \d", proc.stdout, re.M), output
    for block in ("BuildBackendWarning", "Please be careful", "!!\n", "Warning:"):
        assert block not in output, f"a warning block in the output ({block!r}):\n{output}"
    assert "make link" in output and 'export PATH="' in output, output
    assert "llama.cpp (llama-cpp-python): done in" in output  # the build's total is said

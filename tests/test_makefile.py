"""The Makefile's set-up (issue 23): `make run` needs only what running needs.

These run the real ``make`` on this checkout's Makefile, with a PATH built for each test
(symlinks to this machine's programs, minus the ones a test takes away) and a throwaway
``VENV`` so nothing is installed: the stamps of an installed checkout are plain files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")
BASH = shutil.which("bash")

pytestmark = pytest.mark.skipif(MAKE is None or BASH is None, reason="needs make and bash")

# The set-up steps of an installed checkout (see the Makefile's *_STAMP variables).
INSTALLED_STAMPS = (".installed-run", ".installed-local", ".system-run", ".bytecode", ".path-hint")


def _bin_dir(tmp_path: Path, *, without: set[str], stand_ins: set[str] = frozenset()) -> Path:
    """A directory to use as the whole PATH: every program on this machine's PATH except
    ``without``. A name in ``stand_ins`` this machine lacks becomes an empty program, since
    the checks only ask whether a command exists."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    dirs = os.environ.get("PATH", "").split(os.pathsep) + ["/usr/local/bin", "/usr/bin", "/bin"]
    for directory in dirs:
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            target = bin_dir / entry.name
            if entry.name in without or target.exists() or target.is_symlink():
                continue
            target.symlink_to(entry.path)
    for name in stand_ins - without:
        if not (bin_dir / name).exists():
            (bin_dir / name).write_text("#!/bin/sh\nexit 0\n")
            (bin_dir / name).chmod(0o755)
    return bin_dir


def _env(bin_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    # No sbin fallback: this machine's /usr/sbin/sshd must not count when PATH lacks sshd.
    env.update(PATH=str(bin_dir), SBIN_DIRS="")
    return env


def _make(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    assert MAKE is not None
    return subprocess.run(
        [MAKE, "--no-print-directory", "-C", str(REPO), *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _installed_venv(tmp_path: Path) -> Path:
    """A venv directory with the stamps an installed checkout has, all newer than
    pyproject.toml and every source file, and this interpreter's ``nyz``."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    nyz = Path(sys.executable).with_name("nyz")
    if nyz.exists():
        (venv / "bin" / "nyz").symlink_to(nyz)
    for name in INSTALLED_STAMPS:
        (venv / name).touch()
    return venv


# --- what each target needs -----------------------------------------------------------------


def test_without_tmux_and_sshd_run_passes_and_test_names_the_packages(tmp_path: Path) -> None:
    # apt-get is taken away too, so the check reports instead of installing (we may be root).
    bin_dir = _bin_dir(
        tmp_path, without={"tmux", "sshd", "apt-get"}, stand_ins={"git", "bwrap", "rg", "ssh"}
    )
    env = _env(bin_dir)

    run = _make(env, "-s", "check-run")
    assert run.returncode == 0, run.stderr
    assert run.stdout + run.stderr == "", "make run's needs are all there: nothing to say"

    test = _make(env, "-s", "check-test")
    assert test.returncode == 0, "make test goes on without them (their tests are skipped)"
    out = test.stderr
    assert "make test: missing system tools: tmux sshd" in out
    assert "apt-get install tmux openssh-server" in out
    assert "dnf install tmux openssh-server" in out
    assert "pacman -S tmux openssh" in out
    assert "brew install tmux" in out  # brew has no sshd package: it is left out there
    assert "ssh " not in out.replace("sshd", ""), "the ssh client is present: not reported"
    assert "going on without them" in out


def test_make_run_checks_only_the_run_set_and_make_test_both(tmp_path: Path) -> None:
    """The dependency graph itself: `make -n` lists the commands each target would run."""
    bin_dir = _bin_dir(tmp_path, without={"apt-get"})
    env = _env(bin_dir)
    venv = tmp_path / "fresh-venv"
    run = _make(env, "-n", "run", f"VENV={venv}")
    assert run.returncode == 0, run.stderr
    assert "system-deps.sh run" in run.stdout
    assert "system-deps.sh test" not in run.stdout
    assert "[dev]" not in run.stdout, "make run does not install the test tools"
    test = _make(env, "-n", "test", f"VENV={venv}")
    assert test.returncode == 0, test.stderr
    assert "system-deps.sh run" in test.stdout and "system-deps.sh test" in test.stdout
    # the MCP conformance suite and the node 22 it needs: test-only, in a prefix of their own
    assert "@modelcontextprotocol/conformance@" in test.stdout and "node@22" in test.stdout
    assert f"--prefix {venv}/mcp-conformance" in test.stdout
    assert "conformance" not in run.stdout


def test_make_test_stress_runs_the_suite_beside_stress_ng(tmp_path: Path) -> None:
    """`make test-stress` checks (and as root installs) stress-ng through the same script,
    starts one CPU hog per core beside the suite and stops them however the suite ends."""
    bin_dir = _bin_dir(tmp_path, without={"apt-get"})
    venv = tmp_path / "fresh-venv"
    stress = _make(_env(bin_dir), "-n", "test-stress", f"VENV={venv}", "STRESS_CPUS=2")
    assert stress.returncode == 0, stress.stderr
    out = stress.stdout
    assert "system-deps.sh test" in out and "system-deps.sh stress" in out
    assert "stress-ng --cpu 2" in out and "trap 'kill $hogs" in out
    assert "-m pytest -q" in out
    # the whole suite: the conformance scenarios run under load too, not skipped
    assert "@modelcontextprotocol/conformance@" in out and "node@22" in out
    plain = _make(_env(bin_dir), "-n", "test", f"VENV={venv}")
    assert "stress-ng" not in plain.stdout and "system-deps.sh stress" not in plain.stdout


def test_stress_ng_missing_is_named_with_its_consequence(tmp_path: Path) -> None:
    bin_dir = _bin_dir(tmp_path, without={"stress-ng", "apt-get"})
    result = subprocess.run(
        [BASH, str(REPO / "scripts" / "system-deps.sh"), "stress"],
        env=_env(bin_dir), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert "make test-stress: missing system tools: stress-ng" in result.stderr
    assert "apt-get install stress-ng" in result.stderr


def test_a_missing_run_tool_is_named_with_its_consequence(tmp_path: Path) -> None:
    bin_dir = _bin_dir(tmp_path, without={"bwrap", "rg", "apt-get"}, stand_ins={"git"})
    run = _make(_env(bin_dir), "-s", "check-run")
    assert run.returncode == 0
    out = run.stderr
    assert "make run: missing system tools: bwrap" in out
    assert 'fallback = "unsandboxed"' in out
    assert "without rg: the grep tool uses its Python walker" in out
    assert "apt-get install bubblewrap ripgrep" in out
    assert "brew install ripgrep" in out  # bubblewrap has no brew package


def test_only_rg_missing_is_a_notice_said_once(tmp_path: Path) -> None:
    bin_dir = _bin_dir(
        tmp_path, without={"rg", "apt-get"}, stand_ins={"git", "bwrap"}
    )
    env = _env(bin_dir)
    venv = _installed_venv(tmp_path)
    (venv / ".system-run").unlink()
    first = _make(env, "-s", str(venv / ".system-run"), f"VENV={venv}")
    assert first.returncode == 0
    assert "optional system tool not found: rg" in first.stderr
    assert (venv / ".system-run").exists(), "an optional tool does not keep the check open"
    second = _make(env, "-s", str(venv / ".system-run"), f"VENV={venv}")
    assert second.returncode == 0 and "rg" not in second.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the apt-get path is taken only as root")
def test_as_root_with_apt_get_make_test_installs_what_is_missing(tmp_path: Path) -> None:
    """CI runs `make test` as root on a fresh machine. apt-get here is a stand-in that records
    its arguments (a test must not install packages on the machine)."""
    bin_dir = _bin_dir(tmp_path, without={"tmux", "sshd", "apt-get"}, stand_ins={"ssh"})
    log = tmp_path / "apt.log"
    (bin_dir / "apt-get").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    (bin_dir / "apt-get").chmod(0o755)
    stamp = tmp_path / "system-test"
    result = subprocess.run(
        [BASH, str(REPO / "scripts" / "system-deps.sh"), "test", str(stamp)],
        env=_env(bin_dir), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "installing system packages: tmux openssh-server" in result.stdout
    calls = log.read_text().splitlines()
    assert calls[0] == "update -qq"
    assert calls[1] == "install -y -qq tmux openssh-server"
    assert stamp.exists()


def test_make_lint_runs_ruff_then_basedpyright(tmp_path: Path) -> None:
    """Issue 50: `make lint` type-checks what [tool.basedpyright] includes, after ruff. The real
    thing: the checkout's own ruff and basedpyright (the dev extra) in an installed venv, with
    the checked code clean."""
    tools = Path(sys.executable).parent
    if not (tools / "basedpyright").exists() or not (tools / "ruff").exists():
        pytest.skip("the dev extra (ruff, basedpyright) is not installed next to this interpreter")
    if sys.prefix == sys.base_prefix:
        pytest.skip("not running in a venv (the lint's interpreter must see the installed packages)")
    venv = _installed_venv(tmp_path)
    (venv / ".installed-dev").touch()
    for name in ("ruff", "basedpyright"):
        (venv / "bin" / name).symlink_to(tools / name)
    # This venv's own packages, so that its python (the one basedpyright asks for the import
    # paths) is this venv's and not the base interpreter it links to.
    shutil.copy(Path(sys.prefix) / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "lib").symlink_to(Path(sys.prefix) / "lib")
    env = _env(_bin_dir(tmp_path, without={"apt-get"}))
    plan = _make(env, "-n", "lint", f"VENV={venv}")
    assert plan.returncode == 0, plan.stderr
    commands = plan.stdout.strip().splitlines()
    assert commands == [f"{venv}/bin/ruff check actors nyzhi tests benchmarks",
                        f"{venv}/bin/basedpyright --pythonpath {venv}/bin/python"], commands
    lint = _make(env, "-s", "lint", f"VENV={venv}")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "0 errors" in lint.stdout, lint.stdout


# --- Python version ---------------------------------------------------------------------------


def _stand_in_python_39(directory: Path) -> Path:
    """Answers the version check as Python 3.9 would (prints 3.9, exits 1)."""
    path = directory / "python3.9"
    path.write_text("#!/bin/sh\necho 3.9\nexit 1\n")
    path.chmod(0o755)
    return path


def _real_old_python() -> str | None:
    """An installed interpreter older than 3.11 that actually runs (a pyenv shim for a
    version not selected does not), or None."""
    candidates = [shutil.which(f"python3.{minor}") for minor in (10, 9, 8)]
    candidates += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.*/bin/python3.*"))
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; sys.exit(sys.version_info >= (3, 11))"],
            capture_output=True, timeout=30, check=False,
        )  # fmt: skip
        if probe.returncode == 0:
            return candidate
    return None


@pytest.mark.parametrize("kind", ["stand-in", "real"])
def test_an_old_python_is_named_with_how_to_choose_another(tmp_path: Path, kind: str) -> None:
    if kind == "real":
        python = _real_old_python()
        if python is None:
            pytest.skip("no Python older than 3.11 on this machine")
    else:
        python = str(_stand_in_python_39(tmp_path))
    env = _env(_bin_dir(tmp_path, without=set()))
    result = _make(env, "-s", "check-python", f"PYTHON={python}")
    assert result.returncode != 0
    assert "nyzhi needs Python 3.11 or newer" in result.stderr
    assert f"{python} is Python 3." in result.stderr
    assert "make run PYTHON=python3.12" in result.stderr


def test_the_current_python_passes_the_check(tmp_path: Path) -> None:
    env = _env(_bin_dir(tmp_path, without=set()))
    result = _make(env, "-s", "check-python", f"PYTHON={sys.executable}")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


# --- progress and the second run -------------------------------------------------------------


def test_a_first_install_says_each_stage_and_warns_before_the_llama_build(tmp_path: Path) -> None:
    env = _env(_bin_dir(tmp_path, without={"apt-get"}))
    plan = _make(env, "-n", "run", f"VENV={tmp_path / 'fresh'}").stdout
    stages = ["[1/4] creating", "[2/4] installing nyzhi", "[3/4] building llama.cpp",
              "[4/4] installing the offline model"]  # fmt: skip
    positions = [plan.find(stage) for stage in stages]
    assert all(p >= 0 for p in positions), plan
    assert positions == sorted(positions)
    build_notice = plan[positions[2]:]
    assert "several" in build_notice and "offline model" in build_notice
    assert build_notice.find("several") < build_notice.find("pip install -q -e '.[local]'")


def test_a_second_make_run_runs_no_pip(tmp_path: Path) -> None:
    env = _env(_bin_dir(tmp_path, without={"apt-get"}))
    venv = _installed_venv(tmp_path)
    plan = _make(env, "-n", "run", f"VENV={venv}")
    assert plan.returncode == 0, plan.stderr
    assert "pip" not in plan.stdout
    assert plan.stdout.strip().splitlines() == [f"exec {venv}/bin/nyz"]


def test_a_second_make_run_starts_nyz(tmp_path: Path) -> None:
    """The real thing, not ``-n``: make compares the stamps' dates and starts nyz."""
    venv = _installed_venv(tmp_path)
    if not (venv / "bin" / "nyz").exists():
        pytest.skip("nyz is not installed next to this interpreter")
    env = _env(_bin_dir(tmp_path, without={"apt-get"}))
    result = _make(env, "-s", "run", f"VENV={venv}", "ARGS=--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("nyz "), result.stdout


def test_without_a_compiler_the_offline_model_is_skipped_not_fatal(tmp_path: Path) -> None:
    bin_dir = _bin_dir(tmp_path, without={"cc", "c++", "apt-get"})
    venv = _installed_venv(tmp_path)
    (venv / ".installed-local").unlink()
    plan = _make(_env(bin_dir), "-s", str(venv / ".installed-local"), f"VENV={venv}")
    assert plan.returncode == 0, plan.stderr
    assert "missing system tools: cc c++" in plan.stderr
    assert "apt-get install build-essential" in plan.stderr
    assert "[3/4] skipped" in plan.stderr
    assert not (venv / ".installed-local").exists(), "checked again on the next run"


def test_make_link_puts_nyz_on_path_and_the_first_set_up_says_how(tmp_path: Path) -> None:
    """Issue 33: the first set-up ends with the PATH hint (once); ``make link`` symlinks the
    venv's nyz into BINDIR and says when BINDIR is not on PATH."""
    env = _env(_bin_dir(tmp_path, without={"apt-get"}))
    venv = _installed_venv(tmp_path)
    (venv / ".path-hint").unlink()  # a checkout whose first set-up just ended
    first = _make(env, "-s", "install", f"VENV={venv}")
    assert first.returncode == 0, first.stderr
    assert "make link" in first.stdout and f'export PATH="{venv}/bin:$PATH"' in first.stdout
    again = _make(env, "-s", "install", f"VENV={venv}")
    assert "make link" not in again.stdout, "said once"

    bindir = tmp_path / "home-bin"
    linked = _make(env, "-s", "link", f"VENV={venv}", f"BINDIR={bindir}")
    assert linked.returncode == 0, linked.stderr
    assert (bindir / "nyz").is_symlink()
    assert os.readlink(bindir / "nyz") == f"{venv}/bin/nyz"
    assert f"{bindir} is not on this shell's PATH yet" in linked.stdout
    assert "Open a new login shell" in linked.stdout  # Debian's .profile adds it once it exists
    assert f'export PATH="{bindir}:$PATH"' in linked.stdout
    on_path = _make({**env, "PATH": f"{bindir}:{env['PATH']}"}, "-s", "link", f"VENV={venv}",
                    f"BINDIR={bindir}")
    assert "PATH yet" not in on_path.stdout


def _progress(tmp_path: Path, on_tty: bool) -> bytes:
    """scripts/progress.sh over a command held on a FIFO: the output is read until two updates
    have been printed (a condition, not a moment), then the command is let go."""
    import pty
    import select

    gate = tmp_path / "gate"
    os.mkfifo(gate)
    argv = ["bash", str(REPO / "scripts" / "progress.sh"), "build", "cat", str(gate)]
    env = {**os.environ, "PROGRESS_EVERY": "1"}
    if on_tty:
        parent, child = pty.openpty()
        proc = subprocess.Popen(argv, stdout=child, stderr=child, env=env)
        os.close(child)
    else:
        parent, child = os.pipe()
        proc = subprocess.Popen(argv, stdout=child, stderr=child, env=env)
        os.close(child)
    out = b""
    deadline = time.monotonic() + 120
    while out.count(b"so far") < 2:
        assert time.monotonic() < deadline, out
        if select.select([parent], [], [], 1)[0]:
            out += os.read(parent, 4096)
    with open(gate, "w") as release:
        release.write("")
    while True:
        try:
            chunk = os.read(parent, 4096) if select.select([parent], [], [], 30)[0] else b""
        except OSError:  # the pty closes with an EIO once the child is gone
            chunk = b""
        if not chunk:
            break
        out += chunk
    assert proc.wait(timeout=60) == 0
    os.close(parent)
    return out


def test_the_build_clock_rewrites_one_line_on_a_terminal(tmp_path: Path) -> None:
    """Issue 54: on a terminal the "… N s so far" updates rewrite one line (the build printed
    35 of them); in a log each stays its own line."""
    on_tty = _progress(tmp_path, on_tty=True)
    assert on_tty.count(b"so far") >= 2
    clock = on_tty[:on_tty.index(b"done in")]
    assert b"\n" not in clock.replace(b"\r\n", b"\n").rstrip(b"\n"), on_tty  # one line
    assert b"\r\x1b[K" in clock
    assert b"build: done in" in on_tty
    (tmp_path / "log").mkdir()
    in_log = _progress(tmp_path / "log", on_tty=False)
    assert b"\r" not in in_log
    assert in_log.count(b"so far\n") >= 2

import subprocess
import sys

from nyzhi import __version__
from nyzhi.cli.main import main


def test_version(capsys):
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert __version__ in capsys.readouterr().out


def test_help_lists_commands():
    out = subprocess.run(
        [sys.executable, "-m", "nyzhi", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "usage: nyz" in out
    assert "--trust" in out

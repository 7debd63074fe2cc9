"""A real OpenSSH server on a free loopback port, for the SSH executor tests.

Keys are generated in a temporary directory; the server runs in the foreground (``-D -e``) as a
child of the test process and is terminated at teardown. Readiness is detected by connecting to
the port (bounded), not by sleeping a fixed time.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import attrs

SSHD = "/usr/sbin/sshd"


@attrs.define
class SshServer:
    port: int
    user: str
    identity_file: Path
    known_hosts: Path
    proc: subprocess.Popen


def unavailable_reason() -> str | None:
    if not os.path.exists(SSHD):
        return f"{SSHD} is missing (Debian package openssh-server)"
    if shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "the OpenSSH client (ssh, ssh-keygen) is missing"
    if os.geteuid() != 0:
        return "sshd needs root here (privilege separation and PermitRootLogin)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )


def start(tmp: Path, *, ready_within: float = 10.0) -> SshServer:
    _keygen(tmp / "host_key")
    _keygen(tmp / "user_key")
    (tmp / "authorized_keys").write_text((tmp / "user_key.pub").read_text())
    os.chmod(tmp / "authorized_keys", 0o600)
    os.makedirs("/run/sshd", exist_ok=True)  # privilege separation directory
    port = _free_port()
    config = tmp / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {tmp / 'host_key'}\n"
        f"AuthorizedKeysFile {tmp / 'authorized_keys'}\nPidFile {tmp / 'sshd.pid'}\n"
        "UsePAM no\nStrictModes no\nPermitRootLogin yes\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nLogLevel ERROR\n"
    )
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + ready_within
    while True:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"sshd exited with {proc.returncode}: {err}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError as exc:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(
                    f"sshd did not listen on 127.0.0.1:{port} within {ready_within} s"
                ) from exc
            time.sleep(0.02)  # polling for readiness, bounded by the deadline
    user = os.environ.get("USER") or "root"
    return SshServer(port, user, tmp / "user_key", tmp / "known_hosts", proc)


def stop(server: SshServer) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait()

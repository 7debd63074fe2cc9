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
    finally:
        if server.proc.stderr is not None:
            server.proc.stderr.close()  # the pipe start() opened (unclosed: a ResourceWarning)


REMOTE_USER = "nyz-remote"


def remote_user_reason() -> str | None:
    """Why no second local user can stand in for another host's user (None: one can)."""
    reason = unavailable_reason()
    if reason is not None:
        return reason
    if shutil.which("useradd") is None or shutil.which("usermod") is None:
        return "useradd/usermod are missing (a second local user stands in for another host)"
    return None


def remote_user(home: Path) -> tuple[str, int]:
    """A second local user (made if missing) whose home is ``home``: the user of "another
    host". Its password field is ``*`` (no password, not locked: sshd refuses a locked
    account even for key authentication). Returns its name and uid."""
    import pwd

    try:
        pwd.getpwnam(REMOTE_USER)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/sh", "-d", str(home), REMOTE_USER],
                       check=True, capture_output=True)
    subprocess.run(["usermod", "-d", str(home), "-p", "*", REMOTE_USER], check=True,
                   capture_output=True)
    entry = pwd.getpwnam(REMOTE_USER)
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    return REMOTE_USER, entry.pw_uid


def share_keys(server: SshServer) -> None:
    """Let sshd read the authorized keys as another user (it opens them with that user's
    rights): a world-readable file in a directory everyone may enter."""
    os.chmod(server.identity_file.parent, 0o755)
    os.chmod(server.identity_file.parent / "authorized_keys", 0o644)

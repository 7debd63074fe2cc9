"""Finding test processes by a unique marker in their command line."""

import os
import uuid


def marker_seconds() -> str:
    """A unique `sleep` argument, so each test can find exactly its own processes."""
    return f"{900000 + uuid.uuid4().int % 99999}"


def alive_with(marker: str) -> list[int]:
    """Pids (not zombies) whose command line contains ``marker``, excluding this process."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 2 :].split()[0]
        if marker in cmd and state != b"Z":
            found.append(int(name))
    return found


async def started_alive(marker: str) -> list[int]:
    """``alive_with(marker)`` once it finds something (bounded): a child may not have exec'd yet."""
    from nyzhi.testing.waits import until

    return await until(lambda: alive_with(marker), what=f"a process running with {marker!r}")


async def settled_alive(marker: str) -> list[int]:
    """``alive_with(marker)`` once empty, or what is left after the bound: a process killed a
    moment ago may still be exiting on a busy machine; a leaked one stays."""
    from nyzhi.testing.waits import settled

    return await settled(lambda: alive_with(marker))

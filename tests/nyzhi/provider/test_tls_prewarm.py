"""The TLS context prewarmed at start-up is the verifying default, and the client gets it."""

from __future__ import annotations

import ssl
import subprocess
import sys

from nyzhi.provider import tls
from nyzhi.provider.http import make_client
from nyzhi.provider.spec import ProviderSpec


def test_prewarmed_context_verifies_and_is_handed_out_once() -> None:
    tls.prewarm()
    tls.prewarm()  # a second call while one is on its way starts nothing new
    ctx = tls.default_context()
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode is ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] > 0  # the CA bundle is loaded
    assert tls.default_context() is None  # nothing prewarmed any more: httpx builds its own


def test_honours_ssl_cert_file(monkeypatch) -> None:
    import certifi

    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    assert tls.build_default_context().cert_store_stats()["x509_ca"] > 0
    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent/ca.pem")
    tls.prewarm()
    assert tls.default_context() is None  # the failure is left to httpx, with its own message


async def test_client_uses_the_prewarmed_context() -> None:
    tls.prewarm()
    pending = tls._thread
    assert pending is not None
    spec = ProviderSpec(name="t", api_style="openai", base_url="https://example.invalid/v1", model="m")
    async with make_client(spec):
        assert tls._thread is None and not pending.is_alive()  # taken by make_client


HTTP2_LATER = """
import sys
import trio
from nyzhi import process
process.claim()  # as the nyz entry point does: only nyz skips h2 (nyzhi.process)
from nyzhi.provider.http import make_client
from nyzhi.provider.spec import ProviderSpec

async def main():
    spec = ProviderSpec(name="t", api_style="openai", base_url="http://127.0.0.1:9/v1", model="m")
    async with make_client(spec):
        assert "httpcore" in sys.modules and "h2" not in sys.modules, sorted(sys.modules)
    import h2.connection  # what hypercorn needs, after the client hid it for its own import
    assert h2.connection.H2Connection
    print("ok")

trio.run(main)
"""


def test_the_client_skips_http2_and_h2_still_imports_after() -> None:
    done = subprocess.run([sys.executable, "-c", HTTP2_LATER], capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr

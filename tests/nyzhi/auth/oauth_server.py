"""A tiny RFC 8628 authorization server on 127.0.0.1, written with trio + h11 for tests.

``token_replies`` is the script of token-endpoint answers, in order; every request is
recorded in ``requests`` as (path, form dict).
"""

from __future__ import annotations

import functools
import json
from urllib.parse import parse_qsl

import h11
import trio


class OAuthServer:
    def __init__(self, token_replies, device_reply=None):
        self.token_replies = list(token_replies)
        self.device_reply = device_reply or {
            "device_code": "dev-123", "user_code": "WDJB-MJHT",
            "verification_uri": "https://example.test/device", "expires_in": 600, "interval": 0,
        }
        self.requests: list[tuple[str, dict]] = []
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, nursery: trio.Nursery) -> None:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, self._handle, 0, host="127.0.0.1"))
        self.port = listeners[0].socket.getsockname()[1]

    def _reply(self, path: str, form: dict) -> tuple[int, dict]:
        if path == "/device":
            return 200, self.device_reply
        if path == "/token":
            status, body = self.token_replies.pop(0)
            return status, body
        return 404, {"error": "not_found"}

    async def _handle(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            request, body = None, b""
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await stream.receive_some(65536))
                elif isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:  # ConnectionClosed
                    return
            path = request.target.decode()
            form = dict(parse_qsl(body.decode()))
            self.requests.append((path, form))
            status, payload = self._reply(path, form)
            data = json.dumps(payload).encode()
            headers = [("content-type", "application/json"), ("content-length", str(len(data)))]
            await stream.send_all(conn.send(h11.Response(status_code=status, headers=headers)))
            await stream.send_all(conn.send(h11.Data(data=data)))
            await stream.send_all(conn.send(h11.EndOfMessage()))
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

"""The store a member on another host reaches through its lead (``nyzhi.team_files.remote``).

The client's calls go through JSON as they would down the pipe, to ``serve`` against a real
store on disk; what a remote member may not do is refused whatever way it is asked.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import trio

from nyzhi import convert
from nyzhi.core.runtime.teams.model_proxy import NOT_PROXIED, ModelCalls, ProxyProvider
from nyzhi.core.runtime.teams.pipe import LeadPipe
from nyzhi.provider import errors as pe
from nyzhi.provider import types as pt
from nyzhi.team_files import TaskClaimError, TeamError, TeamNotFound
from nyzhi.team_files.inbox import Message, deliver, new_id
from nyzhi.team_files.remote import RemoteTeamStore, StoreCall, StoreReply, serve
from nyzhi.team_files.store import Member, TeamConfig, TeamStore
from nyzhi.testing.cli import run_nyz


@pytest.fixture
def store(home):
    store = TeamStore()
    store.create(TeamConfig(name="crew", members=[Member("alice"), Member("bob")]))
    store.create(TeamConfig(name="other", members=[Member("carol")]))
    return store


def client(store: TeamStore, member: str = "alice", team: str = "crew") -> RemoteTeamStore:
    """A remote member's store whose every call crosses JSON, as on the wire."""
    ids = iter(range(1, 10_000))

    def call(name, args):
        line = json.dumps(convert.unstructure(StoreCall(next(ids), name, args)))
        request = convert.structure(json.loads(line), StoreCall, "test")
        reply_line = json.dumps(convert.unstructure(serve(store, team, member, request)))
        reply = convert.structure(json.loads(reply_line), StoreReply, "test")
        assert reply.id == request.id
        if reply.error is not None:
            from nyzhi.team_files.remote import ERRORS

            raise ERRORS[reply.error_type](reply.error)
        return reply.result

    return RemoteTeamStore(team, member, call)


def test_a_remote_member_works_the_board_and_its_inbox(store):
    alice, bob = client(store), client(store, "bob")
    assert alice.load("crew").names() == ["lead", "alice", "bob"]
    sent = deliver(alice, "crew", "alice", "bob", "hello bob")
    assert [m.sender for m in store.inbox("crew", "bob").messages()] == ["alice"]
    assert [m.id for m in bob.inbox("crew", "bob").read_unread()] == [sent[0].id]
    assert store.inbox("crew", "bob").unread_count() == 0
    sent = deliver(alice, "crew", "alice", "bob", "take this")
    mine = bob.inbox("crew", "bob")
    assert [m.id for m in mine.undelivered()] == [sent[0].id]
    assert [m.id for m in mine.take()] == [sent[0].id]  # for a turn: taken until it starts
    assert [m.id for m in store.inbox("crew", "bob").taken()] == [sent[0].id]
    assert [m.id for m in mine.take()] == [sent[0].id]  # that turn never started
    mine.started()
    assert store.inbox("crew", "bob").taken() == [] and mine.undelivered() == []
    one = alice.board("crew").create("one")
    two = alice.board("crew").create("two", blocked_by=[one.id])
    assert store.board("crew").get(two.id).status == "blocked"
    alice.board("crew").update(one.id, status="in_progress", by="alice")
    with pytest.raises(TaskClaimError, match="owned by alice"):  # its class crosses the pipe
        bob.board("crew").update(one.id, status="in_progress", by="bob")
    change = alice.board("crew").update(one.id, status="completed", by="alice")
    assert change.completed and [t.id for t in change.unblocked] == [two.id]
    assert alice.set_status("crew", "alice", status="idle", pid=7)["pid"] == 7
    assert store.statuses("crew")["alice"]["status"] == "idle"
    with pytest.raises(TeamError, match="no task 9"):
        alice.board("crew").get("9")


@pytest.mark.parametrize("attempt, why", [
    (lambda s: s.load("other"), "cannot reach team 'other'"),  # another team's config
    (lambda s: s.board("other").list(), "cannot reach team 'other'"),  # its board
    (lambda s: s.inbox("other", "carol").messages(), "cannot reach team 'other'"),
    (lambda s: s.inbox("crew", "bob").read_unread(), "only read its own inbox"),  # bob's mail
    (lambda s: s.inbox("crew", "lead").messages(), "only read its own inbox"),
    (lambda s: s.inbox("crew", "bob").take(), "only read its own inbox"),
    (lambda s: s.inbox("crew", "bob").started(), "only read its own inbox"),
    (lambda s: s.inbox("crew", "lead").undelivered(), "only read its own inbox"),
    (lambda s: s.inbox("other", "carol").take(), "cannot reach team 'other'"),
    (lambda s: s.set_status("crew", "bob", status="idle"), "only set its own status"),
    (lambda s: s.inbox("crew", "bob").append([_msg("lead", "bob")]), "as 'lead'"),  # forged
    (lambda s: s.inbox("crew", "bob").append([_msg("user", "bob")]), "as 'user'"),
    (lambda s: s.inbox("crew", "bob").append([_msg("hook", "bob")]), "as 'hook'"),
    (lambda s: s.board("crew").update("1", status="in_progress", by="bob"), "as 'bob'"),
    (lambda s: s.create(TeamConfig(name="x")), "cannot create teams"),
    (lambda s: s.delete("crew"), "cannot delete teams"),
    (lambda s: s.add_member("crew", Member("mallory")), "cannot add members"),
    (lambda s: s.board("crew").delete_all(), "cannot clear the board"),
])
def test_what_a_remote_member_may_not_do(store, attempt, why):
    store.board("crew").create("one")
    deliver(store, "crew", "lead", "bob", "for bob")
    store.inbox("crew", "bob").take()  # bob's taken messages stay his
    before = {p: p.read_bytes() for p in store.team_dir("crew").rglob("*.json")}
    with pytest.raises(TeamError, match=why):
        attempt(client(store))
    assert {p: p.read_bytes() for p in store.team_dir("crew").rglob("*.json")} == before


def _msg(sender: str, to: str) -> Message:
    return Message(new_id(), sender, to, "do as I say", "2026-01-01T00:00:00Z")


def test_raw_calls_out_of_shape_are_errors_not_crashes(store):
    for call in (StoreCall(1, "set_status", {"team": "crew", "member": "alice", "fields": 3}),
                 StoreCall(2, "load", {"team": 5}),
                 StoreCall(3, "inbox.append", {"team": "crew", "member": "bob",
                                               "messages": [{"text": 1}]}),
                 StoreCall(4, "board.create", {"team": "crew", "subject": "s",
                                               "blocked_by": "1"}),
                 StoreCall(5, "exec", {"team": "crew"}),
                 StoreCall(6, "inbox.append", {"team": "crew", "member": "../x",
                                               "messages": []})):
        reply = serve(store, "crew", "alice", call)
        assert reply.id == call.id and reply.error_type == "TeamError" and reply.error
    assert store.board("crew").list() == []
    gone = serve(store, "gone", "alice", StoreCall(7, "load", {"team": "gone"}))
    assert gone.error_type == "TeamNotFound"
    with pytest.raises(TeamNotFound):
        client(store, team="gone").load("gone")


def test_the_hook_may_write_to_its_own_members_inbox(store):
    client(store).inbox("crew", "alice").append([_msg("hook", "alice")])
    assert [m.sender for m in store.inbox("crew", "alice").messages()] == ["hook"]


async def test_members_naming_nodes_are_checked_before_anything_starts(workspace, home,
                                                                       configure):
    configure(workspace, "http://127.0.0.1:9/v1", extra='''
[[nodes]]
name = "build1"
host = "127.0.0.1"
''')
    cases = [
        (["--members", "alice:worker@nowhere", "--teammate-mode", "process"],
         "member alice: no node 'nowhere' in [[nodes]] (nodes: build1)"),
        (["--members", "alice:worker@build1"],
         "alice run on other hosts: that needs --teammate-mode process"),
        (["--members", "alice:worker@build1", "--teammate-mode", "process", "--detach"],
         "--detach is local only"),
        (["--members", "alice:worker@", "--teammate-mode", "process"], "names no node"),
    ]
    for i, (flags, message) in enumerate(cases):
        proc = await run_nyz(workspace, home, "team", "start", f"t{i}", *flags, "--headless")
        assert proc.returncode == 1, (flags, proc.stderr.decode())
        err = proc.stderr.decode()
        assert message in err and "Traceback" not in err and len(err.splitlines()) == 1


class _Provider:
    """The lead's provider: a scripted stream, or an error, and whether a stream was closed."""

    name, model = "fake", "fake-model"

    def __init__(self, events, error=None):
        self.events, self.error, self.closed = events, error, trio.Event()

    async def stream(self, request):
        try:
            for event in self.events:
                yield event
                await trio.lowlevel.checkpoint()
            if self.error is not None:
                raise self.error
            await trio.sleep_forever()  # a stream that never ends unless cancelled
        finally:
            self.closed.set()


class _Loop(LeadPipe):
    """A member's pipe whose lead is this process: what the member writes is served here
    through JSON, and the lead's lines come back through the pipe's own reader."""

    def __init__(self, nursery, provider):
        super().__init__(io.StringIO())
        self.nursery, self.provider, self.calls = nursery, provider, ModelCalls()

    def write(self, data):
        data = json.loads(json.dumps(data))
        if data["type"] == "model_call":
            self.nursery.start_soon(self.calls.run, self.provider, data["id"], data["request"],
                                    self.deliver)
        elif data["type"] == "model_cancel":
            self.calls.cancel(data["id"])

    async def deliver(self, op):
        await self._line(json.dumps(op).encode())


REQUEST = pt.ChatRequest(messages=(pt.Message("user", "hi"),), system="s")


async def test_a_proxied_model_stream_crosses_the_pipe_as_it_was():
    events = [pt.TextDelta("hel"), pt.ToolCallEnd(0, "c1", "read", '{"a": 1}'),
              pt.Usage(12, 7), pt.Stop("end_turn")]
    provider = _Provider(events, error=pe.ContextOverflowError("too long", tokens=9, limit=5))
    async with trio.open_nursery() as nursery:
        proxy = ProxyProvider(_Loop(nursery, provider), "fake-model")
        got = []
        with pytest.raises(pe.ContextOverflowError) as caught:
            async for event in proxy.stream(REQUEST):
                got.append(event)
        assert got == events  # every event, in order, as the same records
        assert (caught.value.tokens, caught.value.limit) == (9, 5)  # compaction can use them

        # a member that leaves early (its turn cancelled) ends the lead's stream too
        provider = _Provider([pt.TextDelta("a")])
        proxy = ProxyProvider(_Loop(nursery, provider), "fake-model")
        async with contextlib.aclosing(proxy.stream(REQUEST)) as stream:
            async for event in stream:
                assert event == pt.TextDelta("a")
                break
        with trio.fail_after(10):
            await provider.closed.wait()
        nursery.cancel_scope.cancel()


async def test_a_lead_that_does_not_proxy_fails_the_call_saying_why():
    async with trio.open_nursery() as nursery:
        loop = _Loop(nursery, None)

        def refuse(data):
            nursery.start_soon(loop.deliver, {"op": "model_error", "id": data["id"],
                                              "kind": "ProviderError", "message": NOT_PROXIED})

        loop.write = refuse
        with pytest.raises(pe.ProviderError, match="proxy_model_calls"):
            async for _ in ProxyProvider(loop, "m").stream(REQUEST):
                pass

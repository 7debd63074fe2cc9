"""``nyz memory list|show|clear``: what the agent remembers for you and for this project.

Memory lives outside the repository (``nyzhi.knowledge.memory``): the user's ``MEMORY.md``
and the project's memory directory under the data directory. These commands read and delete
the same files the ``memory_read`` / ``memory_write`` tools use.
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("memory", help="list, show or clear saved memory")
    actions = p.add_subparsers(dest="memory_action", metavar="ACTION", required=True)
    a = actions.add_parser("list", help="the memory files and project topics")
    a.set_defaults(handler=run_list)
    a = actions.add_parser("show", help="the user memory and project index, or one topic")
    a.add_argument("topic", nargs="?", help="a project topic (or a user memory section)")
    a.set_defaults(handler=run_show)
    a = actions.add_parser("clear", help="delete this project's memory (or the user's)")
    scope = a.add_mutually_exclusive_group()
    scope.add_argument("--user", dest="scope", action="store_const", const="user",
                       help="delete the user memory instead")
    scope.add_argument("--all", dest="scope", action="store_const", const="all",
                       help="delete both")
    a.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    a.set_defaults(handler=run_clear, scope="project")


def _store():
    from pathlib import Path

    from nyzhi.config.workspace import find_root
    from nyzhi.knowledge.memory import MemoryStore

    return MemoryStore.for_workspace(find_root(Path.cwd()))


def run_list(args: argparse.Namespace) -> int:
    from nyzhi.knowledge.frontmatter import first_prose_line

    store = _store()
    user = store.read_user()
    print(f"user memory:    {store.user_file}"
          + (f" ({len(user.splitlines())} lines)" if user else " (empty)"))
    print(f"project memory: {store.project_dir}")
    topics = store.topics()
    for topic in topics:
        print(f"  {topic}: {first_prose_line(store.read_topic(topic) or '', 80)}")
    if not topics:
        print("  (no topics)")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from nyzhi.knowledge.memory import MemoryRequestError

    store = _store()
    if args.topic is None:
        print("# User memory\n" + (store.read_user().strip() or "(empty)") + "\n")
        print(store.read_index().strip() or "# Project memory\n(empty)")
        return 0
    try:
        text = store.read_topic(args.topic)
    except MemoryRequestError as exc:
        print(f"nyz memory: {exc}", file=sys.stderr)
        return 1
    if text is None:
        known = ", ".join(store.topics()) or "none"
        print(f"nyz memory: no topic {args.topic!r} (project topics: {known})", file=sys.stderr)
        return 1
    print(text.rstrip())
    return 0


def run_clear(args: argparse.Namespace) -> int:
    store = _store()
    what = {"project": f"this project's memory ({store.project_dir})",
            "user": f"the user memory ({store.user_file})",
            "all": "the user memory and this project's memory"}[args.scope]
    if not args.yes:
        if not sys.stdin.isatty():
            print(f"nyz memory clear: would delete {what}; pass --yes to confirm",
                  file=sys.stderr)
            return 1
        if input(f"Delete {what}? [y/N] ").strip().lower() not in ("y", "yes"):
            print("nothing deleted")
            return 1
    removed = store.clear(args.scope)
    print(f"deleted {len(removed)} file(s)" if removed else "nothing to delete")
    return 0

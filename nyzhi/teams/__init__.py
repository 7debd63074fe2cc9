"""Teams on disk: team configs, member inboxes and the shared task board.

Several processes share one team (the lead and its teammate processes, ``nyz team send``), so
every file here is replaced atomically (temp + fsync + rename) and every read-modify-write
happens under an ``fcntl.flock`` on a lock file beside it: a ``kill -9`` at any moment leaves
every file readable, and two members racing for one task cannot both win.

Modules: ``errors`` (the error tree), ``names`` (what a team or member may be called),
``locking`` (the lock and the JSON read/write every module uses), ``store`` (team configs,
member status, where everything lives), ``inbox`` (messages and the FIFO poke), ``board``
(tasks and their dependencies), ``watch`` (a trio wait on the FIFO; the only module that
imports trio). Everything but ``watch`` is blocking: trio callers run it in a worker thread.
The package re-exports the public names of all but ``watch``, so importing it costs no trio.
"""

from nyzhi.teams.board import Task as Task
from nyzhi.teams.board import TaskBoard as TaskBoard
from nyzhi.teams.board import TaskChange as TaskChange
from nyzhi.teams.board import TaskStatus as TaskStatus
from nyzhi.teams.errors import TaskClaimError as TaskClaimError
from nyzhi.teams.errors import TeamError as TeamError
from nyzhi.teams.errors import TeamNotFound as TeamNotFound
from nyzhi.teams.inbox import Inbox as Inbox
from nyzhi.teams.inbox import Message as Message
from nyzhi.teams.inbox import deliver as deliver
from nyzhi.teams.names import LEAD as LEAD
from nyzhi.teams.names import check_name as check_name
from nyzhi.teams.store import Member as Member
from nyzhi.teams.store import TeamConfig as TeamConfig
from nyzhi.teams.store import TeamStore as TeamStore
from nyzhi.teams.store import tasks_root as tasks_root
from nyzhi.teams.store import teams_root as teams_root

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
"""

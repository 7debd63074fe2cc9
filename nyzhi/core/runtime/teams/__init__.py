"""Teams at run time: the lead and its teammates as agents, their inboxes wired to their turns.

The files a team is made of (config, inboxes, the task board) and their locking are in
``nyzhi.team_files``; this package runs members on them:

* ``member`` — ``MemberDriver``: one member's inbox fed into its agent (unread messages before
  each model call; a new message wakes an idle member), its status file, its idle notice;
* ``control`` — ``TeamRuntime``: what the team tools call (``ctx.teams``), the in-process
  teammates under ``/team/<team>/<member>``, process teammates, quiescence for headless runs;
* ``process`` — ``TeammateProcess``: the lead's actor for one ``nyz team member`` process
  (restarted when it dies, its events re-tagged onto the lead's bus; what that process runs
  is the front end ``nyzhi.headless.member``);
* ``leases`` — write leases held in the team's lock files (process teammates);
* ``worktrees`` — a git worktree per member (``nyz team start --worktrees``).
"""

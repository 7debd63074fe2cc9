"""The line chat (``chat``): ``nyz chat --plain``, a pipe or a redirect, one line in and the
session's events out, with the activity line rewritten in place on a terminal
(``activity_line``).

A front end, not part of ``cli``: it opens a runtime and drives its session, through the
session protocol (``nyzhi.core.protocol``) and ``open_runtime`` alone
(``tests/nyzhi/test_nyzhi_layering.py``). Importing the package costs nothing.
"""

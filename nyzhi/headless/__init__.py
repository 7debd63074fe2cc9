"""The front ends without a person at a screen: ``nyz run`` (text, json and stream-json:
``run``, printed by ``render``; ``--autopilot``: ``autopilot``), ``nyz team start --headless``
(``team``), a team's process member (``member``) and ``nyz sessions rerun`` (``rerun``).

A front end, not part of ``cli``: each opens a runtime and drives its session, so it reaches the
runtime through the session protocol (``nyzhi.core.protocol``) and ``open_runtime`` alone, as
``tests/nyzhi/test_nyzhi_layering.py`` holds it. ``cli`` parses the arguments and calls in.
Importing the package costs nothing: each module is imported by the command that needs it.
"""

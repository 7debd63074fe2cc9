"""What the front ends share, above core and below them: the front ends (``tui``, ``acp``,
``web``, ``headless``, ``linechat``) import none of each other, so a piece two of them need
lives here, such as the command-line flags' mapping onto ``RuntimeOptions`` (``flags``: the
console's, the line chat's, ``nyz run``'s and the cli's). Like a front end, it reaches the
runtime through the session protocol and ``open_runtime``; what else it imports is listed in
``tests/nyzhi/front_end_imports.txt``.
"""

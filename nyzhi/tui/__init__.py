"""The console: ``nyz`` on a terminal, an urwid screen over the shared runtime.

Only the CLI imports this package, and only when the console starts, so urwid's import cost
never reaches ``nyz --help`` or ``nyz run``; even then ``launch`` draws the first frame
(``first_frame``, standard library only) before urwid and trio are imported. The console
consumes runtime events through the one dispatch (``ConsoleRenderer``, an ``EventRenderer``)
and sends messages back (input, cancel, approval and question answers); it never runs the
agent itself.
"""

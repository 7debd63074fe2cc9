"""The ``nyz`` command line: argument parsing and dispatch to the runtime.

Every subcommand lives in its own ``cmd_*.py`` module that imports nothing heavier than
``argparse`` at module level, so ``nyz --help`` stays fast; the work is imported inside the
handler.
"""

"""The built-in tools, one module per group (see ``nyzhi.tools.registry.BUILTIN_MODULES``).

Names and parameters follow the original nyzhi so prompts and skills written for it keep working.
"""

"""One module per command: ``add_arguments(parser)`` and ``run(args) -> exit code``.

Modules import only the standard library at top level; the core is imported inside ``run`` so the
CLI starts fast whatever the command.
"""

"""The commands of `litebert`, one module per group (litebert.cli builds only the group of
the command it runs): each `cmd_*` function is a command, each `add_*_commands` adds a
group's parsers. A command imports what it runs inside itself, so a parser never loads torch.
"""

"""`kconsole mcp`: the commands as Model Context Protocol tools, for an AI assistant beside an operator.

A face like the CLI and the console: each tool runs the command of its name with `--json`, so an
agent gets the very document `kconsole CMD --json` prints (console.mcp_server.tools), and a change is
only ever planned by a tool and applied by a second call that types the stream's name back, through
the command that makes it for a person (console.mcp_server.plans). `command` registers `kconsole mcp`.
"""

"""An official MCP SDK (2.x ``MCPServer``) server speaking both eras, for the stateless (2026-07-28) churn test.

``python sdk_app.py PORT``; binds 127.0.0.1 only.
"""

import sys

from mcp.server.mcpserver import MCPServer

app = MCPServer("swarmgauge-sdk")


@app.tool()
def echo(text: str = "") -> str:
    return text


if __name__ == "__main__":
    app.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]), stateless_http=False)

"""A fastmcp (PyPI) server for the third-party tests: ``echo`` and ``slow`` (progress notifications mid-call).

Run by the fastmcp venv's Python: ``python fastmcp_app.py PORT [--json]``; binds 127.0.0.1 only.
"""

import asyncio
import sys

from fastmcp import Context, FastMCP

app = FastMCP("swarmgauge-thirdparty")


@app.tool()
def echo(text: str = "") -> str:
    return text


@app.tool()
async def slow(steps: int = 3, ctx: Context | None = None) -> str:
    for step in range(1, steps + 1):
        await asyncio.sleep(0.05)
        if ctx is not None:
            await ctx.report_progress(step, steps)
    return f"done {steps}"


if __name__ == "__main__":
    port = int(sys.argv[1])
    app.run(
        transport="http",
        host="127.0.0.1",
        port=port,
        json_response="--json" in sys.argv[2:],
        show_banner=False,
        log_level="warning",
    )

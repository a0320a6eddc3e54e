"""Drives `scry mcp` with the official Python MCP client (PyPI `mcp`, in the virtual environments
scripts/install-deps.sh mcp makes) for tests/e2e/test_mcp.py. Usage: mcp_client.py PLAN.json.
With "auto" in the plan, mcp 2.x's high-level Client in its default mode (it probes
server/discover first, on the same pipe, then falls back to the initialize handshake);
otherwise the ClientSession of 1.x.
PLAN: {"command", "args", "env", "stderr", "calls": [{"name", "arguments"}]}; an argument
"{{N.key}}" is replaced by structuredContent[key] of call N's answer (a path a tool made). Prints one JSON document:
{"server", "protocol", "tools", "results"}, each result {"is_error", "text", "structured"} or,
for a protocol error, {"error_code", "message"}."""

import asyncio
import json
import re
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
try:
    from mcp.shared.exceptions import McpError
except ImportError:  # 2.x
    from mcp import MCPError as McpError


def resolve(args, results):
    def one(v):
        m = re.fullmatch(r"\{\{(\d+)\.(\w+)\}\}", v) if isinstance(v, str) else None
        return results[int(m.group(1))]["structured"][m.group(2)] if m else v
    return {k: one(v) for k, v in args.items()}


async def auto(plan):
    """mcp 2.x: Client(params), mode "auto"."""
    from mcp import Client, MCPError
    params = StdioServerParameters(command=plan["command"], args=plan["args"], env=plan["env"])
    out = {"results": []}
    async with Client(params) as client:
        out["tools"] = [t.model_dump(exclude_none=True) for t in (await client.list_tools()).tools]
        for call in plan["calls"]:
            try:
                r = await client.call_tool(call["name"], resolve(call["arguments"], out["results"]))
            except MCPError as e:
                out["results"].append({"error_code": e.code, "message": str(e)})
                continue
            out["results"].append({
                "is_error": bool(r.is_error),
                "text": "".join(c.text for c in r.content if c.type == "text"),
                "structured": r.structured_content,
            })
    print(json.dumps(out))


async def main(plan):
    params = StdioServerParameters(command=plan["command"], args=plan["args"], env=plan["env"])
    out = {"results": []}
    with open(plan["stderr"], "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                out["server"] = init.serverInfo.model_dump()
                out["protocol"] = init.protocolVersion
                listed = await session.list_tools()
                out["tools"] = [t.model_dump(exclude_none=True) for t in listed.tools]
                for call in plan["calls"]:
                    try:
                        r = await session.call_tool(call["name"],
                                                    resolve(call["arguments"], out["results"]))
                    except McpError as e:
                        out["results"].append({"error_code": e.error.code,
                                               "message": e.error.message})
                        continue
                    out["results"].append({
                        "is_error": bool(r.isError),
                        "text": "".join(c.text for c in r.content if c.type == "text"),
                        "structured": r.structuredContent,
                    })
                await session.send_ping()
    print(json.dumps(out))


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        plan = json.load(f)
    asyncio.run(auto(plan) if plan.get("auto") else main(plan))

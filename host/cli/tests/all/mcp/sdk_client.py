"""A real MCP client for `goat mcp serve`: the Python SDK's (PyPI `mcp`).

Reads one JSON scenario from argv[1]: the server's command, args, env and
cwd, the client's name, how to answer elicitation ("accept", "decline",
"error", or null for a client without the capability), and the calls to
make. Prints one JSON object: what the handshake negotiated, tools/list,
each call's result, and the elicitation messages it was shown.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def main(spec):
    params = StdioServerParameters(
        command=spec["command"], args=spec["args"], env=spec["env"], cwd=spec["cwd"]
    )
    shown = []

    async def on_elicit(context, request):
        shown.append(request.message)
        answer = spec["elicit"]
        if answer == "accept":
            return types.ElicitResult(action="accept", content={})
        if answer == "error":
            return types.ErrorData(code=-32603, message="no person here after all")
        return types.ElicitResult(action="decline")

    callback = on_elicit if spec.get("elicit") else None
    out = {"results": [], "elicited": shown}
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read,
            write,
            elicitation_callback=callback,
            client_info=types.Implementation(name=spec["client"], version="1.0"),
        ) as session:
            init = await session.initialize()
            out["protocol"] = init.protocol_version
            out["server"] = init.server_info.name
            listed = await session.list_tools()
            out["tools"] = [
                {
                    "name": t.name,
                    "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True)
                    if t.annotations
                    else None,
                }
                for t in listed.tools
            ]
            for call in spec["calls"]:
                try:
                    result = await session.call_tool(call["name"], call["arguments"])
                    text = "".join(c.text for c in result.content if c.type == "text")
                    out["results"].append({"is_error": bool(result.is_error), "text": text})
                except Exception as e:  # a protocol error: said, and the client goes on
                    out["results"].append({"protocol_error": str(e)})
    print(json.dumps(out))


asyncio.run(main(json.loads(sys.argv[1])))

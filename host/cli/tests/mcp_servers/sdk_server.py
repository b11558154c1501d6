#!/usr/bin/env python3
"""An MCP server built on the official Python SDK (PyPI `mcp`), over stdio.

A well-behaved, real-world server for GOAT's MCP client tests, as opposed to
hostile.py. It needs the `mcp` package (CI pins it in the harbor venv, which
the tests find as $GOAT_MCP_PYTHON):

    $GOAT_MCP_PYTHON host/cli/tests/mcp_servers/sdk_server.py
    $GOAT_MCP_PYTHON host/cli/tests/mcp_servers/sdk_server.py http TOKEN

The second serves Streamable HTTP at http://127.0.0.1:PORT/mcp (PORT is the
first line on stdout) and refuses a request without `Bearer TOKEN` (401).

Works with mcp 2.x (`mcp.server.mcpserver.MCPServer`) and with 1.x, where the
same class was called `mcp.server.fastmcp.FastMCP`.

Tools
-----
add(a: int, b: int) -> int     the sum (as text, and as structuredContent
                               {"result": a + b})
shout(text: str) -> str        text upper-cased
count_files(dir: str) -> str   "N entries" for a directory relative to the
                               cwd (a server reading the workspace), or
                               "ERROR: <ExceptionType>: <message>"
whoami() -> str                "sdk-server"
"""

import os

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server

server = Server("sdk-server")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers and return the sum."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Return the text in upper case."""
    return text.upper()


@server.tool()
def count_files(dir: str) -> str:  # noqa: A002 - the argument's name is part of the test
    """Count the entries of a directory, relative to the server's working directory."""
    try:
        return "%d entries" % len(os.listdir(os.path.join(os.getcwd(), dir)))
    except OSError as e:
        return "ERROR: %s: %s" % (type(e).__name__, e)


@server.tool()
def whoami() -> str:
    """Say which server this is."""
    return "sdk-server"


def serve_http(token):
    """Streamable HTTP on a loopback port the kernel picks (printed first on
    stdout), answering only requests that carry `Bearer TOKEN`."""
    import socket
    import sys

    import uvicorn

    app = server.streamable_http_app()

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != ("Bearer %s" % token).encode():
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"no or wrong bearer token"})
                return
        await app(scope, receive, send)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before the port is said: a client that connects at once
    # waits in the backlog for uvicorn, never meets a refused connection.
    sock.listen(128)
    print(sock.getsockname()[1], flush=True)
    sys.stdout.flush()
    config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 2 and sys.argv[1] == "http":
        serve_http(sys.argv[2])
    else:
        server.run("stdio")

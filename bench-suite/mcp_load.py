"""The client side of `cargo xtask bench mcp`'s load test: concurrent `semantic_search` calls
against one `quarry mcp` server while it re-indexes, through the official Python SDK over stdio.

Usage: mcp_load.py QUARRY_BINARY REPO_ROOT CLIENTS CALLS STARTED QUERY... Starts the server
without indexing, warms it up, then runs CLIENTS concurrent callers of CALLS searches each over
the one session while an `index build` call re-indexes what changed; creates the file STARTED
once the server's index run holds the index (so that the CLI searches started then run beside
a writer). Prints JSON: each search's wall time in milliseconds, every error, and the build's
outcome and duration.
"""

import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def searcher(session, number, calls, queries, millis, errors):
    for i in range(calls):
        query = queries[(number + i) % len(queries)]
        started = time.perf_counter()
        try:
            result = await session.call_tool("semantic_search", {"query": query})
        except Exception as error:  # a protocol error or a dead server
            errors.append(f"caller {number}, call {i}: {error!r}")
            continue
        millis.append((time.perf_counter() - started) * 1000)
        if result.is_error:
            errors.append(f"caller {number}, call {i}: {result.content}")


async def build(session):
    started = time.perf_counter()
    result = await session.call_tool("index", {"action": "build"})
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "is_error": result.is_error, "result": result.structured_content}


async def main(quarry, root, clients, calls, started_file, queries):
    server = StdioServerParameters(
        command=quarry, args=["mcp", "--root", root, "--no-index"], env=dict(os.environ)
    )
    millis, errors = [], []
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for query in queries[:3]:
                await session.call_tool("semantic_search", {"query": query})
            started = time.perf_counter()
            building = asyncio.create_task(build(session))
            while not building.done():
                status = await session.call_tool("index", {"action": "status"})
                if status.structured_content["indexing"]["state"] != "idle":
                    break
                await asyncio.sleep(0.01)
            open(started_file, "w").close()
            await asyncio.gather(
                *(searcher(session, n, calls, queries, millis, errors) for n in range(clients))
            )
            searching = time.perf_counter() - started
            built = await building
    json.dump(
        {"millis": millis, "errors": errors, "build": built, "search_seconds": searching},
        sys.stdout,
    )


asyncio.run(
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6:])
)

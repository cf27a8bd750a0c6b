"""The client side of `cargo xtask bench mcp`: warm `semantic_search` latency through the
Model Context Protocol, as an agent sees it (the official Python SDK over stdio).

Usage: mcp_latency.py QUARRY_BINARY REPO_ROOT CALLS QUERY... Prints JSON: each call's
wall time in milliseconds, measured around `call_tool`.
"""

import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(quarry, root, calls, queries):
    server = StdioServerParameters(
        command=quarry, args=["mcp", "--root", root, "--no-index"], env=dict(os.environ)
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            # Warm up: the first searches load the vector index and the model's caches.
            for query in queries[:3]:
                await session.call_tool("semantic_search", {"query": query})
            millis = []
            for i in range(calls):
                started = time.perf_counter()
                result = await session.call_tool(
                    "semantic_search", {"query": queries[i % len(queries)]}
                )
                millis.append((time.perf_counter() - started) * 1000)
                if result.is_error:
                    raise SystemExit(f"semantic_search failed: {result.content}")
    json.dump({"millis": millis}, sys.stdout)


asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]))

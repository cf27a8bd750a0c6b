"""The server side of cli.rs's `the_cli_searches_indexes_and_reads_status_beside_a_serving_mcp`.

Usage: mcp_beside_cli.py QUARRY_BINARY REPO_ROOT SIGNAL_DIR. Serves REPO_ROOT with `quarry mcp`
(which indexes it on start) and searches it without pause, while the Rust test runs the CLI in
the same repository. Writes SIGNAL_DIR/served once the server's own index run has finished; then
searches until the test writes SIGNAL_DIR/edited (the CLI has indexed a new function), searches
for that function, has the server index again, and prints one JSON object: every call's error,
how many calls it made, and what it found.
"""

import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

QUERIES = ["retry with exponential backoff", "cart total with tax", "format a price"]


async def call(session, name, arguments, errors):
    """A call's structured result, or None with its error recorded."""
    try:
        result = await session.call_tool(name, arguments)
    except Exception as error:  # a protocol error or a dead server: both are failures here
        errors.append(f"{name} {arguments}: {error!r}")
        return None
    if result.is_error:
        text = " ".join(c.text for c in result.content if c.type == "text")
        errors.append(f"{name} {arguments}: {text}")
        return None
    return result.structured_content


async def main(quarry, root, signals):
    params = StdioServerParameters(command=quarry, args=["mcp", "--root", root], env=dict(os.environ))
    errors, calls, out = [], 0, {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            deadline = time.time() + 300
            served = False
            while time.time() < deadline and not os.path.exists(os.path.join(signals, "edited")):
                query = QUERIES[calls % len(QUERIES)]
                result = await call(session, "semantic_search", {"query": query}, errors)
                calls += 1
                if result is not None and not result["results"]:
                    errors.append(f"no results for {query!r}")
                if not served:
                    status = await call(session, "index", {"action": "status"}, errors)
                    state = status and status["indexing"]["state"]
                    if state == "failed":
                        errors.append(f"the server's index run failed: {status}")
                    if state in ("finished", "failed"):
                        out["served_status"] = status
                        open(os.path.join(signals, "served"), "w").close()
                        served = True
                await asyncio.sleep(0.05)
            # The CLI indexed a new function: the server sees its commit.
            found = await call(
                session,
                "semantic_search",
                {"query": "round_parcel_weight", "mode": "lexical", "limit": 1},
                errors,
            )
            out["found"] = found and [r["symbol"] for r in found["results"]]
            build = await call(session, "index", {"action": "build"}, errors)
            out["build"] = build and build["indexing"]["state"]
    out["calls"] = calls
    out["errors"] = errors
    json.dump(out, sys.stdout)


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))

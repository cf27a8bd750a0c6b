"""The client side of watch.rs's edge cases, with the official MCP Python SDK.

Usage: mcp_watch_edges.py QUARRY_BINARY INDEXED_ROOT DOOMED_ROOT POLLED_ROOT. Serves
INDEXED_ROOT with `--no-watch`: a function appended to a file is not found until the index
tool's build. Serves POLLED_ROOT (a git work tree with a branch `extra`) with `--poll`: a
function appended is found once the tree has been looked at, and a `git checkout extra` by
the next search. Then serves DOOMED_ROOT (watched), removes it, and searches: the answer
is a tool error that says so, and the server still answers after it. Prints one JSON object
with what it saw.
"""

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_watch import Client


def server(quarry, root, *flags):
    args = ["mcp", "--root", root, *flags]
    return StdioServerParameters(command=quarry, args=args, env=dict(os.environ))


@contextlib.asynccontextmanager
async def session_with(quarry, root, *flags):
    """An initialised client session with `quarry mcp` serving `root` with `flags`."""
    async with stdio_client(server(quarry, root, *flags)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def watch_state(session):
    """What the index tool's status says of the watch."""
    status = await session.call_tool("index", {"action": "status"})
    return status.structured_content["watch"]


def append_function(root, name):
    """Appends a function `name` to src/cart.rs, as an editor would."""
    with open(os.path.join(root, "src", "cart.rs"), "a") as f:
        f.write(f"\npub fn {name}() -> u32 {{\n    7\n}}\n")


async def defined_in(session, name):
    """The files of the results that define `name`."""
    result = await session.call_tool("semantic_search", {"query": name, "mode": "lexical"})
    assert not result.is_error, result.content
    return sorted({r["path"] for r in result.structured_content["results"] if r["symbol"] == name})


async def unwatched(quarry, root, out):
    async with session_with(quarry, root, "--no-watch", "--no-index") as session:
        out["watch"] = await watch_state(session)
        append_function(root, "tally_unwatched_parcels")
        await asyncio.sleep(0.5)
        out["before_build"] = await defined_in(session, "tally_unwatched_parcels")
        await session.call_tool("index", {"action": "build"})
        out["after_build"] = await defined_in(session, "tally_unwatched_parcels")


async def polled(quarry, root, out):
    async with session_with(quarry, root, "--poll") as session:
        out["polled_watch"] = await watch_state(session)
        append_function(root, "tally_polled_parcels")
        written = time.time()
        found = []
        while not found and time.time() - written < 60:
            found = await defined_in(session, "tally_polled_parcels")
            await asyncio.sleep(0.1)
        out["polled_found"] = found
        # A checkout: the next search sees it (the git state), without waiting for a poll.
        # It is made once the start-up run is over (its model load, on a loaded machine,
        # outlasts a search's wait for freshness), so that the search waits for the
        # checkout's first phase alone.
        await Client(session).settled()
        subprocess.run(["git", "checkout", "-q", "extra"], cwd=root, check=True)
        out["checkout_found"] = await defined_in(session, "polled_checkout_marker")


async def removed(quarry, root, out):
    async with session_with(quarry, root) as session:
        await defined_in(session, "cart_total")
        shutil.rmtree(root)
        result = await session.call_tool("semantic_search", {"query": "cart total"})
        out["root_gone"] = result.is_error and result.content[0].text
        status = await session.call_tool("index", {"action": "status"})
        out["still_serving"] = status.is_error and "is gone" in status.content[0].text


async def main(quarry, indexed, doomed, polled_root):
    out = {}
    await unwatched(quarry, indexed, out)
    await polled(quarry, polled_root, out)
    await removed(quarry, doomed, out)
    json.dump(out, sys.stdout)


asyncio.run(main(*sys.argv[1:5]))

"""The client side of watch.rs: a coding agent's edits, seen by a running `quarry mcp`.

Usage: mcp_watch.py QUARRY_BINARY REPO_ROOT. REPO_ROOT is a git work tree on branch `main`
with a branch `storm` that adds 2,000 files. Serves it with `quarry mcp` (which indexes it
and follows it), then, with the official MCP Python SDK: appends a function to a file and
searches for it at once; waits for its vector; deletes a file; renames one; checks out
`storm` while two clients search; waits until everything is indexed. Prints one JSON object
with what it saw; the Rust test checks it.
"""

import asyncio
import json
import os
import subprocess
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


class Client:
    """One session and the errors its calls met."""

    def __init__(self, session):
        self.session = session
        self.errors = []
        self.calls = 0

    async def call(self, name, arguments):
        """A call's structured result, or None with its error recorded."""
        self.calls += 1
        try:
            result = await self.session.call_tool(name, arguments)
        except Exception as error:  # a protocol error or a dead server: both are failures
            self.errors.append(f"{name} {arguments}: {error!r}")
            return None
        if result.is_error:
            text = " ".join(c.text for c in result.content if c.type == "text")
            self.errors.append(f"{name} {arguments}: {text}")
            return None
        return result.structured_content

    async def search(self, query, **arguments):
        found = await self.call("semantic_search", {"query": query, **arguments})
        return [] if found is None else found["results"]

    async def status(self):
        return await self.call("index", {"action": "status"})

    async def settled(self, timeout=600):
        """Polls status until nothing waits: no changed file, no run, no chunk without its
        vector. The last status, and the seconds it took."""
        started = time.time()
        while True:
            status = await self.status()
            done = (
                status is not None
                and status["watch"]["files_waiting"] == 0
                and status["indexing"]["state"] in ("finished", "failed", "idle")
                and status["coverage"]["chunks"] == status["coverage"]["embedded"]
            )
            if done or time.time() - started > timeout:
                return status, time.time() - started
            await asyncio.sleep(0.1)


def server(quarry, root):
    return StdioServerParameters(command=quarry, args=["mcp", "--root", root], env=dict(os.environ))


def located(results):
    return [(r["path"], r["symbol"]) for r in results]


async def edits(client, root, out):
    """An edit, a deletion and a rename, each searched for at once."""
    cart = os.path.join(root, "src", "cart.rs")
    with open(cart, "a") as f:
        f.write(
            "\n/// Registers every widget with the registry, twice over.\n"
            "pub fn frobnicate_widget_registry(widgets: &[u32]) -> usize {\n"
            "    widgets.len() * 2\n}\n"
        )
    edited = time.time()
    found = await client.search("frobnicate_widget_registry", mode="lexical", limit=3)
    out["edit_first_search"] = located(found)
    out["edit_first_search_s"] = time.time() - edited
    # Its vector: a search by the embedding alone finds it.
    while time.time() - edited < 300:
        found = await client.search("frobnicate widget registry", mode="semantic", limit=3)
        if any(r["symbol"] == "frobnicate_widget_registry" for r in found):
            break
        await asyncio.sleep(0.1)
    out["edit_semantic"] = located(found)
    out["edit_vector_s"] = time.time() - edited

    found = await client.search("shipping", mode="lexical", limit=20)
    out["before_delete_paths"] = sorted({r["path"] for r in found})
    os.remove(os.path.join(root, "src", "shipping.rs"))
    found = await client.search("shipping", mode="lexical", limit=20)
    out["deleted_paths"] = sorted({r["path"] for r in found})

    os.rename(os.path.join(root, "lib", "format.js"), os.path.join(root, "lib", "money.js"))
    found = await client.search("format a price", mode="lexical", limit=20)
    out["renamed_paths"] = sorted({r["path"] for r in found})


async def search_until(client, done):
    """Searches without pause until `done` is set."""
    queries = ["cart total with tax", "retry with exponential backoff", "storm handler"]
    while not done.is_set():
        await client.search(queries[client.calls % len(queries)])
        await asyncio.sleep(0.01)


async def storm(clients, root, out):
    """`git checkout storm` (2,000 files) while both clients search."""
    done = asyncio.Event()
    searching = [asyncio.create_task(search_until(c, done)) for c in clients]
    await asyncio.sleep(0.2)
    checkout = await asyncio.to_thread(
        subprocess.run,
        ["git", "checkout", "-q", "storm"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    out["checkout"] = checkout.returncode == 0 or checkout.stderr
    found = await clients[0].search("storm_handler_1234", mode="lexical", limit=1)
    out["storm_first_search"] = located(found)
    status, seconds = await clients[0].settled()
    done.set()
    await asyncio.gather(*searching)
    out["storm_settled_s"] = seconds
    out["storm_status"] = status


async def main(quarry, root):
    out = {}
    async with stdio_client(server(quarry, root)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            first = Client(session)
            out["start_status"], _ = await first.settled()
            await edits(first, root, out)
            async with stdio_client(server(quarry, root)) as (read2, write2):
                async with ClientSession(read2, write2) as session2:
                    await session2.initialize()
                    second = Client(session2)
                    await storm([first, second], root, out)
                    out["errors"] = first.errors + second.errors
                    out["calls"] = first.calls + second.calls
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))

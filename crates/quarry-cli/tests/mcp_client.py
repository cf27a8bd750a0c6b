"""The client side of tests/mcp.rs: drives `quarry mcp` with the official MCP Python SDK.

Usage: mcp_client.py QUARRY_BINARY REPO_ROOT FRESH_ROOT. REPO_ROOT is indexed already;
FRESH_ROOT is not, so its server answers while it indexes. Prints one JSON object with what
every call returned; the Rust test checks it (and compares the results with the CLI's).
"""

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time

from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client


async def call(session, name, arguments):
    """A call's outcome as data: the structured result, a tool error, or a protocol error."""
    try:
        result = await session.call_tool(name, arguments)
    except MCPError as error:
        return {"protocol_error": error.code, "message": error.message}
    if result.is_error:
        return {"tool_error": " ".join(c.text for c in result.content if c.type == "text")}
    return {"result": result.structured_content}


def server(quarry, root):
    return StdioServerParameters(command=quarry, args=["mcp", "--root", root], env=dict(os.environ))


async def wait_for_index(session):
    """Polls index status until the background indexing has finished; its last answer."""
    deadline = time.time() + 300
    while True:
        status = await call(session, "index", {"action": "status"})
        state = status["result"]["indexing"]["state"]
        if state in ("finished", "failed") or time.time() > deadline:
            return status
        await asyncio.sleep(0.5)


async def while_indexing(quarry, root):
    """A search right after start, while the server embeds, then one after it finished."""
    async with stdio_client(server(quarry, root)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            during = await call(session, "semantic_search", {"query": "cart total with tax"})
            await wait_for_index(session)
            after = await call(session, "semantic_search", {"query": "cart total with tax"})
            return {"during": during, "after": after}


def raw_protocol(quarry, root):
    """`quarry mcp` spoken to in raw JSON-RPC lines, as the SDK never would: a line that is not
    JSON (malformed, invalid UTF-8, a lone surrogate) gets a parse error (-32700, id null) at
    once, a tools/call without a name invalid params (-32602) naming it, and the server goes
    on. Raises if not; returns the answers."""
    process = subprocess.Popen(
        [quarry, "mcp", "--root", root, "--no-index"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=dict(os.environ),
    )
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()

    def send(raw):
        process.stdin.write(raw)
        process.stdin.flush()

    def receive():
        line = lines.get(timeout=60)  # queue.Empty: no answer
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0", line
        return message

    def request(id, method, params):
        send(json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).encode() + b"\n")
        answer = receive()
        assert answer.get("id") == id, answer
        return answer

    answers = {}
    try:
        init = request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "raw", "version": "0"}})
        assert init["result"]["serverInfo"]["name"] == "quarry", init
        send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        for key, raw in [
            ("malformed", b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"\n'),
            ("invalid_utf8", b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": "\xff"}}\n'),
            ("lone_surrogate", b'{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"x": "\\ud800"}}\n'),
        ]:
            send(raw)
            answer = answers[key] = receive()
            assert "id" in answer and answer["id"] is None, (key, answer)
            assert answer["error"]["code"] == -32700, (key, answer)
        answer = answers["no_name"] = request(5, "tools/call", {"arguments": {"query": "cart"}})
        assert answer["error"]["code"] == -32602 and "name" in answer["error"]["message"], answer
        answers["alive"] = request(6, "tools/call", {"name": "semantic_search",
                                                     "arguments": {"query": "cart", "mode": "lexical"}})
        assert answers["alive"]["result"]["structuredContent"]["results"], answers["alive"]
    finally:
        process.stdin.close()
        process.wait(timeout=30)
    assert process.returncode == 0, process.returncode
    return answers


async def main(quarry, root, fresh_root):
    out = {"fresh": await while_indexing(quarry, fresh_root)}
    async with stdio_client(server(quarry, root)) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = init.server_info.name
            out["instructions"] = init.instructions

            listings = [await session.list_tools() for _ in range(2)]
            schemas = [
                json.dumps([t.model_dump(mode="json") for t in listing.tools], sort_keys=True)
                for listing in listings
            ]
            out["schemas_stable"] = schemas[0] == schemas[1]
            out["tools"] = {t.name: t.model_dump(mode="json") for t in listings[0].tools}

            # The server brings the index up to date in the background on start.
            out["status"] = await wait_for_index(session)

            valid = {
                "search": ("semantic_search", {"query": "retry with exponential backoff"}),
                "search_filtered": (
                    "semantic_search",
                    {
                        "query": "format a price",
                        "mode": "lexical",
                        "paths": ["lib/**"],
                        "languages": ["javascript"],
                        "detail_level": "full",
                        "explain": True,
                    },
                ),
                "page_all": ("semantic_search", {"query": "shipping cost", "limit": 4}),
                "page_1": ("semantic_search", {"query": "shipping cost", "limit": 2}),
                "page_2": (
                    "semantic_search",
                    {"query": "shipping cost", "limit": 2, "offset": 2},
                ),
                "similar": ("find_similar", {"path": "lib/http_client.py", "line": 10}),
                "build": ("index", {"action": "build"}),
            }
            for key, (name, arguments) in valid.items():
                out[key] = await call(session, name, arguments)
            first = out["search"]["result"]["results"][0]["chunk_id"]
            out["related_id"] = first
            out["related"] = await call(session, "get_related", {"chunk_id": first})

            invalid = {
                "missing_query": ("semantic_search", {}),
                "empty_query": ("semantic_search", {"query": "  "}),
                "zero_limit": ("semantic_search", {"query": "cart", "limit": 0}),
                "wrong_type": ("semantic_search", {"query": "cart", "limit": "ten"}),
                "unknown_argument": ("semantic_search", {"query": "cart", "max_results": 5}),
                "unknown_scope": ("semantic_search", {"query": "cart", "scope": ["lib:nope"]}),
                "bad_glob": ("semantic_search", {"query": "cart", "paths": ["src/[oops"]}),
                "bad_mode": ("semantic_search", {"query": "cart", "mode": "psychic"}),
                "bad_chunk_id": ("get_related", {"chunk_id": "not-an-id"}),
                "unknown_chunk": ("get_related", {"chunk_id": "0" * 32}),
                "unknown_file": ("find_similar", {"path": "src/nope.rs", "line": 1}),
                "line_past_end": ("find_similar", {"path": "src/cart.rs", "line": 9999}),
                "bad_action": ("index", {"action": "explode"}),
                "unknown_tool": ("no_such_tool", {}),
            }
            out["invalid"] = {}
            for key, (name, arguments) in invalid.items():
                out["invalid"][key] = await call(session, name, arguments)
            out["alive_after_errors"] = await call(
                session, "semantic_search", {"query": "cart total with tax", "limit": 1}
            )
    out["raw"] = raw_protocol(quarry, root)
    json.dump(out, sys.stdout)


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))

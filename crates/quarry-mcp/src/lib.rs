//! quarry as a [Model Context Protocol](https://modelcontextprotocol.io) server: the
//! engine's search, related code and indexing as tools for coding agents, over stdio, for
//! one repository and its registered libraries.
//!
//! ```no_run
//! use quarry_engine::model::{DEFAULT_MODEL, Provisioner};
//! use quarry_engine::{Config, Engine, EngineOptions};
//! use quarry_mcp::{ServerOptions, serve_stdio};
//!
//! let root = std::path::Path::new("path/to/repo");
//! let model = Provisioner::from_env().resolve(&DEFAULT_MODEL)?;
//! let engine = Engine::open(root, &model, EngineOptions::default())?;
//! // Indexes in the background and answers meanwhile; returns when the client hangs up.
//! serve_stdio(engine, Config::load(root)?, model, ServerOptions::default())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Tools (see [`Server`]): `semantic_search`, `get_related`, `find_similar`, `index`.
//! Every result carries its `chunk_id`, repository-relative `path`, 1-based `start_line`
//! and `end_line`, and `score` (with `explanation` when asked), in the CLI's JSON schema
//! (`quarry_engine::json`).
//!
//! Invariants:
//!
//! - **Bounded responses:** a page holds at most `limit` results and fits
//!   [`ServerOptions::max_tokens`] (estimated at four bytes a token); what does not fit is
//!   left for the next page (`next_cursor`, or `next_offset`).
//! - **Pages never repeat:** a page asked for with the previous page's cursor leaves out every
//!   chunk the earlier pages showed, even when the index changed between them (the page then
//!   says `ranking_moved`).
//! - **Never a crash on bad input:** arguments that do not parse, unknown arguments, and
//!   engine errors (an unknown chunk id, scope or file) come back as tool errors
//!   (`isError`) that say what to fix; an unknown tool is a JSON-RPC error, a `tools/call`
//!   without `name` invalid params, and a line of input that is not JSON a parse error
//!   (`-32700`, `id` null). Every request is answered, and the server goes on; every error
//!   answer has an `id`: the request's where it is a string or an integer, else `null`.
//! - **Answers while indexing:** the index is brought up to date in the background at
//!   start, once any other process writing it is done (the server waits its turn as long
//!   as it takes); results found meanwhile say they are partial, and why.
//! - **Fresh answers:** the server follows the working tree (unless
//!   [`ServerOptions::watch`] is [`WatchMode::Off`]): a change counted before a search was asked is in
//!   the index when it answers (lexically at once, its vectors a moment later), or the
//!   answer says which files still wait. Changes are batched, so a checkout of thousands of
//!   files is one index run.
//! - **Stable schemas:** the tool list is built once, from types, and never changes.

mod args;
mod server;
mod stdio;

pub use args::{
    IndexAction, IndexArgs, MAX_LIMIT, MAX_OFFSET, PageAsk, RelatedArgs, ResultArgs, SearchArgs,
    SimilarArgs,
};
pub use server::{Server, ServerOptions, WatchMode, serve_stdio};

/// How many vectors a server's index runs insert or remove before the vector index, which
/// the server keeps in memory, is written to disk again
/// ([`quarry_engine::VectorSaves::AfterChanges`]): an edit changes a few, so most runs write
/// none of it, and a process that loads the copy on disk catches up by at most this many.
pub const UNSAVED_VECTORS: usize = 256;

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The async runtime could not start.
    #[error("starting the runtime: {0}")]
    Runtime(std::io::Error),
    /// The client's handshake failed.
    #[error("MCP handshake: {0}")]
    Handshake(String),
    /// The connection task failed.
    #[error("MCP connection: {0}")]
    Connection(String),
    /// The trees to follow could not be listed (the libraries file is unreadable).
    #[error("following the working tree: {0}")]
    Watch(String),
}

//! The command line as clap parses it, and how its flags become the engine's requests.

use std::path::PathBuf;

use clap::builder::RangedU64ValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use quarry_engine::{Detail, IncludeTests, MAX_LIMIT, MAX_PER_FILE, ResultRequest, SearchMode};
use quarry_mcp::ServerOptions;

#[derive(Parser)]
#[command(
    name = "quarry",
    version,
    about = "Semantic code search, local and offline",
    after_help = "Defaults for search options can be set in .quarry/config.toml (see docs/reference.md)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Build or update the index of a repository (only changed files are embedded again).
    Index(IndexArgs),
    /// Search the repository's code; indexes changed files first (their words at once, their
    /// vectors when few, or with --wait).
    Search(SearchArgs),
    /// Find code like a chunk ("more like this"), by the chunk id a search printed.
    Related(RelatedArgs),
    /// Report the index's health: size, model, stale files and drift.
    Status(StatusArgs),
    /// Register dependency sources to index beside the project (searched with --scope).
    Lib(LibArgs),
    /// Download the models into the user cache, or describe them.
    Model {
        #[command(subcommand)]
        command: ModelCommand,
    },
    /// Serve the repository to coding agents over the Model Context Protocol (stdio):
    /// semantic_search, get_related, find_similar and index as tools.
    Mcp(McpArgs),
}

/// The repository a command works in: the same flag on every command that has one.
#[derive(Args)]
pub struct RootArg {
    /// The repository root [default: the current directory's repository].
    #[arg(long, global = true)]
    pub root: Option<PathBuf>,
}

#[derive(Args)]
pub struct IndexArgs {
    /// The repository root, as --root gives it (kept for scripts written before --root).
    #[arg(conflicts_with = "root", value_name = "ROOT")]
    pub path: Option<PathBuf>,
    #[command(flatten)]
    pub root: RootArg,
    /// Replace the index (after a model change, or a damaged index).
    #[arg(long)]
    pub force: bool,
    /// The first phase alone, without the embedding model (its files need not be here):
    /// changed files are chunked and searchable by their words at once; their chunks wait
    /// for vectors until a `quarry index` with the model.
    #[arg(long, conflicts_with = "force")]
    pub lexical_only: bool,
    /// What a search starts when chunks wait for their vectors: embed them quietly, and
    /// leave at once if another process is writing the index.
    #[arg(long, conflicts_with_all = ["force", "lexical_only", "json"])]
    pub background: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct SearchArgs {
    /// What you are looking for: a description or an identifier.
    pub query: String,
    /// Embed every chunk still waiting for its vector before answering (full quality;
    /// minutes on a large fresh repository). Without it, a search embeds at most
    /// 32 waiting chunks and finds the rest by their words.
    #[arg(long)]
    pub wait: bool,
    /// Do not start embedding the waiting chunks in the background (by default a search
    /// that finds some starts `quarry index --background`; `[index] background = false`
    /// or `QUARRY_BACKGROUND=0` turn it off too).
    #[arg(long, conflicts_with = "wait")]
    pub no_background: bool,
    /// Retrieval legs: hybrid, semantic (embedding only) or lexical (no model run).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Rescore the candidates with a cross-encoder (cross-encoder/ms-marco-MiniLM-L6-v2,
    /// downloaded on first use): better order, seconds per query on a CPU.
    #[arg(long)]
    pub rerank: bool,
    #[command(flatten)]
    pub results: ResultArgs,
}

#[derive(Args)]
pub struct RelatedArgs {
    /// The chunk's id (`chunk_id` in --json, the last column otherwise).
    pub chunk_id: String,
    /// Also show the source chunk's own file.
    #[arg(long)]
    pub include_source_file: bool,
    /// Add the best chunk of each file that imports the source's file or that it imports.
    #[arg(long)]
    pub include_linked: bool,
    /// Only results scoring at least this (0 to 1).
    #[arg(long, default_value_t = 0.0, value_parser = unit_interval)]
    pub min_score: f32,
    #[command(flatten)]
    pub results: ResultArgs,
}

#[derive(Args)]
pub struct StatusArgs {
    /// List files whose last re-index moved their chunks by at least this (0 to 1)
    /// [default: 0.1, or `search.drift_threshold` in .quarry/config.toml].
    #[arg(long, value_parser = unit_interval)]
    pub threshold: Option<f32>,
    #[command(flatten)]
    pub root: RootArg,
    /// Print the status as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also read every page of the database against its checksum (redb's integrity check:
    /// slow, and it waits for no writer: refused while another process writes the index).
    #[arg(long)]
    pub deep: bool,
}

#[derive(Args)]
pub struct LibArgs {
    #[command(subcommand)]
    pub command: LibCommand,
    #[command(flatten)]
    pub root: RootArg,
}

#[derive(Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub root: RootArg,
    /// Do not bring the index up to date when the server starts.
    #[arg(long)]
    pub no_index: bool,
    /// Do not follow the working tree: files changed while the server runs are indexed
    /// only by the index tool's build (or a `quarry index`).
    #[arg(long, conflicts_with = "poll")]
    pub no_watch: bool,
    /// Follow the working tree by looking at it every 2 s rather than by file-system
    /// events: for a network mount, whose changes from other machines send no events.
    #[arg(long)]
    pub poll: bool,
    /// The most one tool response may hold, in tokens, 100 to 1000000 (longer result lists
    /// are paged).
    #[arg(
        long,
        default_value_t = ServerOptions::default().max_tokens,
        value_parser = RangedU64ValueParser::<usize>::new().range(100..=1_000_000),
    )]
    pub max_tokens: usize,
}

#[derive(Subcommand)]
pub enum LibCommand {
    /// Register a library and index it, as the scope `lib:NAME`.
    Add {
        /// Its name: letters, digits, '-', '_' and '.', a letter or digit first.
        name: String,
        /// Its source directory, e.g. ~/.cargo/registry/src/*/tokio-1.48.0.
        path: PathBuf,
        /// Index it even when it holds more than 10000 files or 64 MiB to index.
        #[arg(long)]
        force: bool,
    },
    /// List the registered libraries.
    List {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Unregister a library and drop its files from the index.
    Remove {
        /// Its name.
        name: String,
    },
}

#[derive(Subcommand)]
pub enum ModelCommand {
    /// Download the embedding model (and with --rerank the cross-encoder), or find it cached.
    Fetch {
        /// Also the cross-encoder that `search --rerank` uses.
        #[arg(long)]
        rerank: bool,
    },
    /// Load the embedding model and describe it.
    Info {
        /// Print the description as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// What `search` and `related` share: which results, and how they are shown.
#[derive(Args)]
pub struct ResultArgs {
    /// How many results, 1 to 1000 [default: 10].
    #[arg(
        short = 'k',
        long = "limit",
        value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_LIMIT as u64),
    )]
    pub limit: Option<usize>,
    /// Results per file at full score, 0 to 1000; a file's further ones rank lower (0: no
    /// cap) [default: 1].
    #[arg(
        long,
        value_parser = RangedU64ValueParser::<usize>::new().range(0..=MAX_PER_FILE as u64),
    )]
    pub max_per_file: Option<usize>,
    /// Test code: penalised unless the query is about tests (auto), or always / never shown.
    #[arg(long, value_enum)]
    pub include_tests: Option<IncludeTestsArg>,
    /// Only files matching this glob (repeatable).
    #[arg(long = "path")]
    pub paths: Vec<String>,
    /// Only files in this language (repeatable).
    #[arg(long = "lang")]
    pub languages: Vec<String>,
    /// Where to search: project, lib:NAME or all (repeatable) [default: project].
    #[arg(long = "scope")]
    pub scopes: Vec<String>,
    /// compact: location, symbol, score and the first lines; full: the whole chunk.
    #[arg(long, value_enum)]
    pub detail: Option<DetailArg>,
    #[command(flatten)]
    pub root: RootArg,
    /// Print results as JSON.
    #[arg(long)]
    pub json: bool,
    /// Show how each result's score came about.
    #[arg(long)]
    pub explain: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum IncludeTestsArg {
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ModeArg {
    Hybrid,
    Semantic,
    Lexical,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum DetailArg {
    Compact,
    Full,
}

impl ResultArgs {
    /// The flags as the engine's request; the configuration fills what they leave out.
    pub fn request(&self, mode: Option<ModeArg>) -> ResultRequest {
        ResultRequest {
            limit: self.limit,
            max_per_file: self.max_per_file,
            include_tests: self.include_tests.map(|arg| match arg {
                IncludeTestsArg::Auto => IncludeTests::Auto,
                IncludeTestsArg::Always => IncludeTests::Always,
                IncludeTestsArg::Never => IncludeTests::Never,
            }),
            paths: self.paths.clone(),
            languages: self.languages.clone(),
            scopes: self.scopes.clone(),
            mode: mode.map(|arg| match arg {
                ModeArg::Hybrid => SearchMode::Hybrid,
                ModeArg::Semantic => SearchMode::Semantic,
                ModeArg::Lexical => SearchMode::Lexical,
            }),
            detail: self.detail.map(|arg| match arg {
                DetailArg::Compact => Detail::Compact,
                DetailArg::Full => Detail::Full,
            }),
        }
    }
}

/// A number from 0 to 1 (a score or a drift), as a flag gives it.
fn unit_interval(text: &str) -> Result<f32, String> {
    match text.trim().parse::<f32>() {
        Ok(value) if (0.0..=1.0).contains(&value) => Ok(value),
        Ok(value) => Err(format!("{value} is not a number from 0 to 1")),
        Err(_) => Err(format!("{text:?} is not a number; give one from 0 to 1")),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// The reference every flag must be named in.
    const REFERENCE: &str = include_str!("../../../docs/reference.md");

    /// `--long` of every visible argument of `command` and its subcommands, each with the
    /// command line that takes it.
    fn long_flags(command: &clap::Command, path: &str, flags: &mut Vec<(String, String)>) {
        for arg in command.get_arguments().filter(|arg| !arg.is_hide_set()) {
            if let Some(long) = arg.get_long() {
                flags.push((path.to_owned(), format!("--{long}")));
            }
        }
        for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
            long_flags(sub, &format!("{path} {}", sub.get_name()), flags);
        }
    }

    /// docs/reference.md names every flag of every command: a flag added to the CLI without
    /// a word in the reference fails here.
    #[test]
    fn every_flag_is_in_the_reference() {
        let mut command = Cli::command();
        command.build();
        let mut flags = Vec::new();
        long_flags(&command, "quarry", &mut flags);
        assert!(
            flags.iter().any(|(_, flag)| flag == "--max-per-file"),
            "the walk found the flags: {flags:?}"
        );
        let missing: Vec<String> = flags
            .iter()
            .filter(|(_, flag)| {
                // Followed by a character that cannot continue the flag's name, so that
                // `--include-source-file` does not count for `--include-source`.
                !REFERENCE.match_indices(flag.as_str()).any(|(at, _)| {
                    REFERENCE[at + flag.len()..]
                        .chars()
                        .next()
                        .is_none_or(|next| !(next.is_ascii_alphanumeric() || next == '-'))
                })
            })
            .map(|(path, flag)| format!("{path} {flag}"))
            .collect();
        assert!(
            missing.is_empty(),
            "docs/reference.md does not name these flags: {}",
            missing.join(", ")
        );
    }
}

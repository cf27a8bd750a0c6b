//! Project chores, run as `cargo xtask <command>` (see `cargo xtask help`).

mod chunks;
mod fuzz;

use anyhow::{Result, bail};

const HELP: &str = "\
cargo xtask <command>

Commands:
  chunks <file>...        print the chunks quarry makes of files
         [--budget N]     characters per chunk (default: from the model's 256 tokens)
         [--text]         print each chunk's text too
         [--tree]         print the tree-sitter syntax tree instead (for writing rules)
  fuzz [--seconds N]      fuzz the chunker with cargo-fuzz (default 60 seconds;
       [-- <flag>...]     needs `cargo install cargo-fuzz`); the rest goes to libFuzzer
  help                    this text
";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("chunks") => chunks::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("help" | "--help" | "-h") | None => {
            print!("{HELP}");
            Ok(())
        }
        Some(other) => bail!("unknown command {other:?}\n\n{HELP}"),
    }
}

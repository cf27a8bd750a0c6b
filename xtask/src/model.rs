//! `cargo xtask model fetch|info`: provision the default model and describe it.

use std::io::Write;

use anyhow::{Context, Result, bail};
use quarry_embed::provision::Progress;
use quarry_embed::{DEFAULT_MODEL, Embedder, EmbedderOptions, ModelDir, Provisioner};

pub fn run(args: &[String]) -> Result<()> {
    let usage = "cargo xtask model fetch|info [--model-dir DIR]";
    let (command, rest) = args.split_first().context(usage)?;
    let mut provisioner = provisioner();
    let mut rest = rest.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--model-dir" => provisioner = provisioner.model_dir(rest.next().context(usage)?),
            other => bail!("unknown argument {other:?}: {usage}"),
        }
    }
    let model = provisioner.resolve(&DEFAULT_MODEL)?;
    match command.as_str() {
        "fetch" => {
            println!("{} ({:?})", model.path.display(), model.source);
            Ok(())
        }
        "info" => info(&model),
        other => bail!("unknown command {other:?}: {usage}"),
    }
}

/// A provisioner from the environment that reports download progress on stderr.
pub fn provisioner() -> Provisioner {
    Provisioner::from_env().on_progress(|progress| match progress {
        Progress::Started { what, total } => {
            let size = total.map_or(String::new(), |t| format!(" ({:.1} MB)", t as f64 / 1e6));
            eprint!("downloading {what}{size}");
        }
        Progress::Advanced { done } if done % (8 << 20) < (64 << 10) => {
            eprint!(".");
            let _ = std::io::stderr().flush();
        }
        Progress::Advanced { .. } => {}
        Progress::Finished => eprintln!(" checked"),
    })
}

fn info(model: &ModelDir) -> Result<()> {
    let embedder = Embedder::load(model, EmbedderOptions::from_env()?)?;
    let config = embedder.config();
    println!("model        {}", embedder.fingerprint());
    println!("directory    {} ({:?})", model.path.display(), model.source);
    println!("backend      {}", embedder.backend());
    println!("dimensions   {}", embedder.dimensions());
    println!("max tokens   {}", embedder.max_tokens());
    println!(
        "encoder      {} layers, {} hidden, {} heads, {:?}, pooling {:?}",
        config.bert.num_hidden_layers,
        config.bert.hidden_size,
        config.bert.num_attention_heads,
        config.bert.hidden_act,
        config.pooling
    );
    Ok(())
}

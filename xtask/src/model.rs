//! Provisioning the models for the benchmarks (users run `quarry model fetch|info`).

use std::io::Write;

use quarry_embed::Provisioner;
use quarry_embed::provision::Progress;

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

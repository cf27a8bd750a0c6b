//! Embedding in the background: a search that finds chunks waiting for their vectors starts
//! one detached `quarry index --background` at low priority, which embeds them under the
//! index's writer lock and is gone when done, so that later searches have the vectors with
//! no other command.

use std::io;
use std::path::Path;
use std::process::{Command, Stdio};

use quarry_engine::Config;

/// Whether a search may start a background run: not with `--no-background`, `[index]
/// background = false` or `QUARRY_BACKGROUND=0`.
pub fn allowed(config: &Config, no_background: bool) -> bool {
    let env_off =
        std::env::var("QUARRY_BACKGROUND").is_ok_and(|v| matches!(v.as_str(), "0" | "false"));
    config.index.background && !no_background && !env_off
}

/// Starts `quarry index --background` for the repository at `root`, detached from this
/// process and its terminal (a Ctrl-C of the search does not reach it), at low priority
/// where the system has a way to ask for it.
pub fn start(root: &Path) -> io::Result<()> {
    let quarry = std::env::current_exe()?;
    let args = [
        "index".as_ref(),
        "--background".as_ref(),
        "--root".as_ref(),
        root.as_os_str(),
    ];
    match spawn(lowered(&quarry).args(args)) {
        // No `nice` here: the same run at normal priority.
        Err(error) if error.kind() == io::ErrorKind::NotFound && cfg!(unix) => {
            spawn(Command::new(&quarry).args(args))
        }
        spawned => spawned,
    }
}

fn spawn(command: &mut Command) -> io::Result<()> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    detach(command);
    // Not waited for: it outlives this process, whose exit hands it to the system.
    command.spawn().map(drop)
}

/// `quarry` run at the lowest priority: through `nice` on Unix.
#[cfg(unix)]
fn lowered(quarry: &Path) -> Command {
    let mut command = Command::new("nice");
    command.args(["-n", "19"]).arg(quarry);
    command
}

/// `quarry` itself elsewhere (on Windows, [`detach`] asks for the lower priority).
#[cfg(not(unix))]
fn lowered(quarry: &Path) -> Command {
    Command::new(quarry)
}

/// Out of the search's process group (Unix) or console (Windows, below normal priority),
/// so that a signal to the terminal's foreground job leaves it running.
#[cfg(unix)]
fn detach(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
}

#[cfg(windows)]
fn detach(command: &mut Command) {
    use std::os::windows::process::CommandExt;
    const BELOW_NORMAL_PRIORITY_CLASS: u32 = 0x0000_4000;
    const DETACHED_PROCESS: u32 = 0x0000_0008;
    const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
    command
        .creation_flags(BELOW_NORMAL_PRIORITY_CLASS | DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
}

#[cfg(not(any(unix, windows)))]
fn detach(_: &mut Command) {}

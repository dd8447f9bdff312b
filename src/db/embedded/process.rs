//! Running the PostgreSQL tools and reporting how they failed.

use std::path::{Path, PathBuf};
use std::process::Output;

use tokio::process::Command;

use super::EmbeddedError;

/// Names the path in an I/O error.
pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> EmbeddedError + '_ {
    move |source| EmbeddedError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Runs `cmd` to its end with no input.
async fn spawn(mut cmd: Command, program: &Path) -> Result<Output, EmbeddedError> {
    cmd.stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|source| EmbeddedError::Spawn {
            program: program.to_path_buf(),
            source,
        })
}

/// Runs `cmd`; a failure names it (`name`) and says what it printed.
pub(super) async fn run(cmd: Command, name: &str) -> Result<(), EmbeddedError> {
    let program = PathBuf::from(cmd.as_std().get_program());
    let output = spawn(cmd, &program).await?;
    if output.status.success() {
        return Ok(());
    }
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).trim().to_owned();
    let detail = [text(&output.stderr), text(&output.stdout)]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" / ");
    Err(EmbeddedError::Command {
        command: name.to_owned(),
        status: output.status.to_string(),
        detail: one_line(&detail),
    })
}

/// The last lines of the server log, which say why a start failed.
pub(super) fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    let tail: Vec<&str> = lines.into_iter().rev().collect();
    one_line(&tail.join(" / "))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

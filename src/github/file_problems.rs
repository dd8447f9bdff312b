//! Why a project file GitHub shows cannot be read, in the words every
//! read of GitHub uses (the listing, the batch read, the REST read).

use super::MAX_FILE_BYTES;

/// Git's mode of a symbolic link.
pub const MODE_SYMLINK: u64 = 0o120_000;

/// What a project file that is a symbolic link reads as, on every source:
/// an edit to its target would never touch its path, so no push could be
/// trusted to show a change of it.
pub const SYMLINK_MESSAGE: &str =
    "the file is a symbolic link; Roster reads only a regular file at this path";

/// The message for a file over the size limit.
pub fn too_large(size: u64) -> String {
    format!("the file is {size} bytes, over the limit of {MAX_FILE_BYTES} bytes (256 KiB)")
}

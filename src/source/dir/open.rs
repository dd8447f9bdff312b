//! Opens a repository's project file without ever leaving the source folder
//! or blocking (docs/contract.md#bounds).
//!
//! The path is walked one component at a time from an open handle on the
//! folder, each step with `O_NOFOLLOW`: no symbolic link is followed, not even
//! one that points back inside the folder, so what is read is always the file
//! that lies at that path, and a link swapped in between two steps cannot
//! redirect the walk. The last step accepts only a regular file: it is checked
//! before opening (a device is never opened), opened with `O_NONBLOCK` (a FIFO
//! swapped in meanwhile cannot make the open wait for a writer) and checked
//! again on the open handle.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path};

/// What lies at a repository's project file path.
#[derive(Debug)]
pub enum Opened {
    /// A regular file inside the folder, open for reading.
    File(File),
    /// No file at that path.
    Absent,
    /// The repository's folder itself is gone (or is no folder any more).
    FolderGone,
    /// Something that is not a regular file inside the folder: a symbolic
    /// link anywhere on the path, a FIFO, a device, a socket, a folder.
    NotRegular,
}

/// Opens `root/folder/project_file` as described in the module comment.
/// `Err` only for failures of the file system itself (permissions, I/O).
pub fn open_project_file(root: &Path, folder: &str, project_file: &str) -> io::Result<Opened> {
    let mut names = vec![c_name(folder.as_ref())?];
    for component in Path::new(project_file).components() {
        match component {
            Component::Normal(name) => names.push(c_name(name)?),
            Component::CurDir => {}
            // Settings never allow these; refuse rather than climb out.
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Ok(Opened::NotRegular)
            }
        }
    }
    let (file_name, dirs) = match names.split_last() {
        Some((file_name, dirs)) if !dirs.is_empty() => (file_name, dirs),
        // The project file path named no file of its own.
        _ => return Ok(Opened::NotRegular),
    };
    let mut dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(root)?;
    for (depth, name) in dirs.iter().enumerate() {
        let not_there = if depth == 0 {
            Opened::FolderGone
        } else {
            Opened::Absent
        };
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        dir = match open_at(&dir, name, flags) {
            Ok(next) => next,
            Err(e) if is_missing(&e) => return Ok(not_there),
            // A symbolic link, or not a folder: say which.
            Err(e) if is_refused(&e) => {
                return Ok(match kind_at(&dir, name) {
                    Ok(kind) if kind.is_symlink() => Opened::NotRegular,
                    Ok(_) => not_there,
                    Err(e) if is_missing(&e) => not_there,
                    Err(e) => return Err(e),
                })
            }
            Err(e) => return Err(e),
        };
    }
    match kind_at(&dir, file_name) {
        Ok(kind) if kind.is_file() => {}
        Ok(_) => return Ok(Opened::NotRegular),
        Err(e) if is_missing(&e) => return Ok(Opened::Absent),
        Err(e) => return Err(e),
    }
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
    let file = match open_at(&dir, file_name, flags) {
        Ok(file) => file,
        Err(e) if is_missing(&e) => return Ok(Opened::Absent),
        // Swapped for a link (ELOOP) or a socket (ENXIO) since the check.
        Err(e) if is_refused(&e) || e.raw_os_error() == Some(libc::ENXIO) => {
            return Ok(Opened::NotRegular)
        }
        Err(e) => return Err(e),
    };
    if !file.metadata()?.file_type().is_file() {
        return Ok(Opened::NotRegular);
    }
    Ok(Opened::File(file))
}

fn c_name(name: &std::ffi::OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn is_missing(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
}

/// What `O_NOFOLLOW` / `O_DIRECTORY` answer for a link or a non-folder
/// (Linux says `ELOOP` or `ENOTDIR`, the BSDs also `EMLINK`, `EFTYPE`).
fn is_refused(e: &io::Error) -> bool {
    let refused = [libc::ELOOP, libc::ENOTDIR, libc::EMLINK];
    e.raw_os_error().is_some_and(|code| refused.contains(&code))
}

/// `openat(2)` relative to an open folder; the handle closes on exec.
fn open_at(dir: &File, name: &CStr, flags: libc::c_int) -> io::Result<File> {
    // SAFETY: `dir` is an open descriptor and `name` a NUL-terminated string,
    // both alive for the call; the result is checked before it is owned.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened here and nothing else owns it.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// The type of `name` in `dir`, without following a symbolic link.
fn kind_at(dir: &File, name: &CStr) -> io::Result<Kind> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `dir` is open, `name` NUL-terminated, and `stat` points to
    // writable memory of the right size; it is read only on success.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            stat.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fstatat` succeeded, so it filled `stat` in.
    let mode = unsafe { stat.assume_init() }.st_mode;
    Ok(Kind(mode & libc::S_IFMT))
}

/// A file type from `st_mode`.
#[derive(Debug, Clone, Copy)]
struct Kind(libc::mode_t);

impl Kind {
    fn is_file(self) -> bool {
        self.0 == libc::S_IFREG
    }

    fn is_symlink(self) -> bool {
        self.0 == libc::S_IFLNK
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::symlink;
    use std::time::Duration;

    const FILE: &str = "project.yaml";

    /// A source folder `org` with a repository folder `svc`, and a folder
    /// `outside` beside it holding a file the source must never read.
    struct Layout {
        _dir: tempfile::TempDir,
        org: std::path::PathBuf,
        outside: std::path::PathBuf,
    }

    fn layout() -> Layout {
        let dir = tempfile::tempdir().expect("temp dir");
        let org = dir.path().join("org");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(org.join("svc")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(outside.join(FILE), "name: secret\nowner: t\n").expect("write");
        Layout {
            _dir: dir,
            org,
            outside,
        }
    }

    /// Opens on another thread, so a regression that blocks fails the test
    /// instead of hanging it.
    fn open(root: &Path, folder: &str, project_file: &str) -> Opened {
        let (root, folder, file) = (root.to_owned(), folder.to_owned(), project_file.to_owned());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(open_project_file(&root, &folder, &file));
        });
        rx.recv_timeout(Duration::from_secs(5))
            .expect("opening blocked")
            .expect("opened")
    }

    fn contents(opened: Opened) -> String {
        match opened {
            Opened::File(mut f) => {
                let mut s = String::new();
                f.read_to_string(&mut s).expect("read");
                s
            }
            other => panic!("expected a file, got {other:?}"),
        }
    }

    #[test]
    fn open_should_read_a_regular_file_at_the_root_and_below() {
        let l = layout();
        std::fs::write(l.org.join("svc").join(FILE), "name: svc\n").expect("write");
        assert_eq!(contents(open(&l.org, "svc", FILE)), "name: svc\n");
        std::fs::create_dir(l.org.join("svc/.github")).expect("mkdir");
        std::fs::write(l.org.join("svc/.github").join(FILE), "name: nested\n").expect("write");
        assert_eq!(
            contents(open(&l.org, "svc", ".github/project.yaml")),
            "name: nested\n"
        );
    }

    #[test]
    fn open_should_tell_an_absent_file_from_a_gone_folder() {
        let l = layout();
        assert!(matches!(open(&l.org, "svc", FILE), Opened::Absent));
        assert!(matches!(
            open(&l.org, "svc", ".github/project.yaml"),
            Opened::Absent
        ));
        assert!(matches!(open(&l.org, "gone", FILE), Opened::FolderGone));
        std::fs::write(l.org.join("plain"), "x").expect("write");
        assert!(matches!(open(&l.org, "plain", FILE), Opened::FolderGone));
    }

    #[test]
    fn open_should_refuse_a_symlinked_file_leaving_the_folder() {
        let l = layout();
        symlink(l.outside.join(FILE), l.org.join("svc").join(FILE)).expect("symlink");
        assert!(matches!(open(&l.org, "svc", FILE), Opened::NotRegular));
    }

    #[test]
    fn open_should_refuse_a_symlink_even_to_a_file_inside_the_folder() {
        let l = layout();
        std::fs::write(l.org.join("svc/real.yaml"), "name: svc\n").expect("write");
        symlink("real.yaml", l.org.join("svc").join(FILE)).expect("symlink");
        assert!(matches!(open(&l.org, "svc", FILE), Opened::NotRegular));
    }

    #[test]
    fn open_should_refuse_a_dangling_symlink() {
        let l = layout();
        symlink("/nonexistent/x", l.org.join("svc").join(FILE)).expect("symlink");
        assert!(matches!(open(&l.org, "svc", FILE), Opened::NotRegular));
    }

    #[test]
    fn open_should_refuse_a_symlinked_repository_folder() {
        let l = layout();
        symlink(&l.outside, l.org.join("away")).expect("symlink");
        assert!(matches!(open(&l.org, "away", FILE), Opened::NotRegular));
        // Pointing inside the folder is refused the same way.
        symlink(l.org.join("svc"), l.org.join("alias")).expect("symlink");
        assert!(matches!(open(&l.org, "alias", FILE), Opened::NotRegular));
    }

    #[test]
    fn open_should_refuse_a_symlinked_folder_on_the_way_to_the_file() {
        let l = layout();
        symlink(&l.outside, l.org.join("svc/.github")).expect("symlink");
        assert!(matches!(
            open(&l.org, "svc", ".github/project.yaml"),
            Opened::NotRegular
        ));
    }

    #[test]
    fn open_should_refuse_a_folder_named_like_the_file() {
        let l = layout();
        std::fs::create_dir(l.org.join("svc").join(FILE)).expect("mkdir");
        assert!(matches!(open(&l.org, "svc", FILE), Opened::NotRegular));
    }

    #[test]
    fn open_should_refuse_a_fifo_without_blocking() {
        let l = layout();
        make_fifo(&l.org.join("svc").join(FILE));
        assert!(matches!(open(&l.org, "svc", FILE), Opened::NotRegular));
    }

    #[test]
    fn open_should_refuse_a_socket() {
        let l = layout();
        let _socket =
            std::os::unix::net::UnixListener::bind(l.org.join("svc").join(FILE)).expect("bind");
        assert!(matches!(open(&l.org, "svc", FILE), Opened::NotRegular));
    }

    #[test]
    fn open_should_refuse_a_device_without_opening_it() {
        let l = layout();
        let path = l.org.join("svc").join(FILE);
        // The same device as /dev/null (1, 3); needs CAP_MKNOD.
        if !make_char_device(&path, 1, 3) {
            println!("skipped: mknod is not permitted here");
            return;
        }
        assert!(matches!(open(&l.org, "svc", FILE), Opened::NotRegular));
    }

    #[test]
    fn open_should_refuse_a_path_that_climbs_out() {
        let l = layout();
        assert!(matches!(
            open(&l.org, "svc", "../outside/project.yaml"),
            Opened::NotRegular
        ));
        assert!(matches!(
            open(&l.org, "svc", "/etc/hostname"),
            Opened::NotRegular
        ));
        assert!(matches!(open(&l.org, "svc", "."), Opened::NotRegular));
    }

    fn make_fifo(path: &Path) {
        let c = CString::new(path.as_os_str().as_bytes()).expect("path");
        // SAFETY: `c` is a NUL-terminated path alive for the call.
        let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
        assert_eq!(rc, 0, "mkfifo: {}", io::Error::last_os_error());
    }

    fn make_char_device(path: &Path, major: u32, minor: u32) -> bool {
        let c = CString::new(path.as_os_str().as_bytes()).expect("path");
        let dev = libc::makedev(major, minor);
        // SAFETY: `c` is a NUL-terminated path alive for the call.
        unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o644, dev) == 0 }
    }
}

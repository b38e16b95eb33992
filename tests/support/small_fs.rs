//! Small, separate file systems for the bad-input tests: a tmpfs of a few KiB to fill up (a
//! full disk), one remounted read-only (a read-only store), and an exFAT one (a file system
//! without hard links, as on a USB stick or a VirtualBox shared folder). Shared by the
//! `pgdict` and `pgdict-trainer` end-to-end tests, which include this file with `#[path]`,
//! and the store tests (through `support`).
//!
//! Mounting needs root, and exFAT needs `mkfs.exfat` (Debian's exfatprogs), FUSE's
//! `mount.exfat-fuse` (exfat-fuse) and a loop device. CI runs as root with those installed,
//! so there these tests always run, and a failing mount fails them. A developer's run as
//! another user, or without the exFAT tools, skips them with a message on stderr, unless
//! `PGDICT_REQUIRE_ROOT_TESTS` is set (`.ci/run` sets it): then a missing requirement fails
//! them, so a CI that lost root or the tools could never pass them by skipping.

#![allow(dead_code)] // each test binary that includes this uses a different part

use std::path::PathBuf;
use std::process::Command;

/// A file system mounted on a temporary directory; unmounted (lazily) and removed on drop,
/// with its image file and loop device if it has them.
pub struct SmallFs {
    dir: tempfile::TempDir,
    /// exFAT's: the image file's directory and the loop device that holds it.
    image: Option<(tempfile::TempDir, String)>,
}

impl SmallFs {
    /// A tmpfs of `kib` KiB, or `None` (after saying why on stderr) when not running as root.
    pub fn mount(kib: u64) -> Option<SmallFs> {
        if !can_mount("a tmpfs", &[]) {
            return None;
        }
        let dir = tempfile::tempdir().expect("temporary directory");
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={kib}k,mode=0755"))
            .arg("tmpfs")
            .arg(dir.path()));
        Some(SmallFs { dir, image: None })
    }

    /// An exFAT file system of `mib` MiB through FUSE, which has no hard links (`link(2)` says
    /// EPERM), or `None` (after saying why on stderr) when not root or without the tools.
    pub fn mount_exfat(mib: u64) -> Option<SmallFs> {
        if !can_mount("exFAT", &["mkfs.exfat", "mount.exfat-fuse", "losetup"]) {
            return None;
        }
        let image_dir = tempfile::tempdir().expect("temporary directory");
        let image = image_dir.path().join("exfat.img");
        std::fs::File::create(&image)
            .and_then(|file| file.set_len(mib << 20))
            .expect("create the image file");
        run(Command::new("mkfs.exfat").arg(&image));
        let device = run(Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&image));
        let device = device.trim().to_string();
        let dir = tempfile::tempdir().expect("temporary directory");
        let fs = SmallFs {
            dir,
            image: Some((image_dir, device.clone())),
        };
        run(Command::new("mount.exfat-fuse")
            .arg(&device)
            .arg(fs.dir.path()));
        Some(fs)
    }

    /// The mount point.
    pub fn path(&self) -> &std::path::Path {
        self.dir.path()
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Makes the file system read-only: every write fails with EROFS, root's included.
    pub fn remount_read_only(&self) {
        run(Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(self.dir.path()));
    }

    /// The names in the directory `name`, sorted (none if it does not exist).
    pub fn list(&self, name: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.join(name))
            .map(|entries| {
                entries
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
        if let Some((_, device)) = &self.image {
            let _ = Command::new("losetup").args(["-d", device]).status();
        }
    }
}

/// Whether this run can mount `what` (root, and the named `tools` on the PATH); if not, says
/// why on stderr, or fails when `PGDICT_REQUIRE_ROOT_TESTS` is set.
fn can_mount(what: &str, tools: &[&str]) -> bool {
    let missing = if !is_root() {
        "root".to_string()
    } else if let Some(tool) = tools.iter().find(|tool| !on_path(tool)) {
        format!("{tool} (Debian: exfatprogs, exfat-fuse)")
    } else {
        return true;
    };
    assert!(
        std::env::var_os("PGDICT_REQUIRE_ROOT_TESTS").is_none(),
        "PGDICT_REQUIRE_ROOT_TESTS is set, but mounting {what} needs {missing}"
    );
    eprintln!("skipped: mounting {what} needs {missing} (CI has it)");
    false
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()))
}

pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0")
}

/// Runs `command`, failing the test if it fails; returns its standard output.
fn run(command: &mut Command) -> String {
    let out = command.output().expect("run a mount command");
    assert!(
        out.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

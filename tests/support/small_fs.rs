//! Small, separate file systems for the bad-input tests: a tmpfs of a few KiB to fill up (a
//! full disk) and one remounted read-only (a read-only store). Shared by the `pgdict` and
//! `pgdict-trainer` end-to-end tests, which include this file with `#[path]`.
//!
//! Mounting needs root. CI runs as root, so there these tests always run, and a failing mount
//! fails them. A developer's run as another user skips them with a message on stderr, unless
//! `PGDICT_REQUIRE_ROOT_TESTS` is set (`.ci/run` sets it): then not being root fails them, so
//! a CI that lost root could never pass them by skipping.

use std::path::PathBuf;
use std::process::Command;

/// A tmpfs mounted on a temporary directory; unmounted (lazily) and removed on drop.
pub struct SmallFs {
    dir: tempfile::TempDir,
}

impl SmallFs {
    /// A tmpfs of `kib` KiB, or `None` (after saying why on stderr) when not running as root.
    pub fn mount(kib: u64) -> Option<SmallFs> {
        if !is_root() {
            assert!(
                std::env::var_os("PGDICT_REQUIRE_ROOT_TESTS").is_none(),
                "PGDICT_REQUIRE_ROOT_TESTS is set, but mounting a tmpfs needs root"
            );
            eprintln!("skipped: mounting a tmpfs needs root (CI runs these tests as root)");
            return None;
        }
        let dir = tempfile::tempdir().expect("temporary directory");
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={kib}k,mode=0755"))
            .arg("tmpfs")
            .arg(dir.path()));
        Some(SmallFs { dir })
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
    }
}

pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0")
}

fn run(command: &mut Command) {
    let out = command.output().expect("run mount");
    assert!(
        out.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

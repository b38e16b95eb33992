//! Running a binary with given standard input, or on a terminal, for the end-to-end tests of
//! `pgdict` and `pgdict-trainer` (included with `#[path]`).

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `command` with `stdin` on its standard input, its output and errors captured. The
/// input is written from another thread: the child writes output while it reads, and a pipe
/// that nobody empties would stop both.
pub fn output_with_stdin(command: &mut Command, stdin: &[u8]) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the binary");
    let mut pipe = child.stdin.take().expect("a piped standard input");
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || pipe.write_all(&input));
    let output = child.wait_with_output().expect("wait for the binary");
    writer
        .join()
        .expect("the writer thread")
        .expect("write standard input");
    output
}

/// Runs `command` on a terminal: a pseudo-terminal that util-linux's `script` makes its
/// standard input, output and error (in the same directory, with the same environment, and
/// `TERM=xterm` as a terminal emulator would set: without `TERM`, or with `TERM=dumb`, nothing
/// is drawn). The output's `stdout` is what the terminal showed: output and errors together,
/// lines ended in `\r\n`; its `stderr` is `script`'s own.
pub fn output_on_terminal(command: &Command) -> Output {
    // `script` runs its command through the shell: each word single-quoted.
    let quoted = |word: &std::ffi::OsStr| {
        let word = word.to_str().expect("a UTF-8 argument");
        format!("'{}'", word.replace('\'', r"'\''"))
    };
    let line = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(quoted)
        .collect::<Vec<_>>()
        .join(" ");
    let mut script = Command::new("script");
    script
        .args(["--quiet", "--return", "--command", &line, "/dev/null"])
        .stdin(Stdio::null())
        .env("TERM", "xterm");
    if let Some(dir) = command.get_current_dir() {
        script.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => script.env(key, value),
            None => script.env_remove(key),
        };
    }
    script
        .output()
        .expect("run util-linux's script (Debian's bsdutils)")
}

/// Which of `phases` a terminal showed a progress bar (or spinner) of: each is drawn on a line
/// of its own, its name first (right-aligned, so after spaces).
pub fn bars_drawn<'a>(shown: &str, phases: &[&'a str]) -> Vec<&'a str> {
    let lines: Vec<&str> = shown.split(['\r', '\n']).map(str::trim_start).collect();
    (phases.iter().copied())
        .filter(|phase| {
            let name = format!("{phase} ");
            lines.iter().any(|line| line.starts_with(&name))
        })
        .collect()
}

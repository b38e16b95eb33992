//! Running a binary with given standard input, for the end-to-end tests of `pgdict` and
//! `pgdict-trainer` (included with `#[path]`).

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

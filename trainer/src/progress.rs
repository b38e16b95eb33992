//! Progress reports from the long steps (reading, sampling, building, evaluating), for a
//! progress bar.
//!
//! The library calls a [`Progress`]; it draws nothing itself. [`NoProgress`] ignores every
//! call; [`Bars`] draws `indicatif` bars on standard error, and draws nothing when standard
//! error is not a terminal (a pipe, a file, a test) or when asked to be quiet.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A long step: of training, or of reading rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Reading every row of a source (`pgdict compare`, which uses them all); counted as
    /// [`Phase::Sampling`] is.
    Reading,
    /// Reading the source into the reservoirs; counted in input bytes when the input's size
    /// is known, else in rows.
    Sampling,
    /// Building the dictionary (no count: a spinner, and the build's stage as it begins).
    Building,
    /// Compressing and decompressing the held-out rows; counted in rows.
    Evaluating,
    /// Compressing every row of a source (`pgdict compress`); counted as [`Phase::Sampling`]
    /// is.
    Compressing,
    /// Decompressing every datum of an input (`pgdict decompress`); counted in input bytes
    /// when the input's size is known, else in datums.
    Decompressing,
}

impl Phase {
    /// What the step is called on a bar.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Reading => "reading",
            Phase::Sampling => "sampling",
            Phase::Building => "building",
            Phase::Evaluating => "evaluating",
            Phase::Compressing => "compressing",
            Phase::Decompressing => "decompressing",
        }
    }
}

/// Receives progress. Every method has a default that does nothing.
pub trait Progress {
    /// A step begins; `total` is how many units it counts to, if known.
    fn begin(&self, phase: Phase, total: Option<u64>) {
        let _ = (phase, total);
    }

    /// The step has done `done` units so far (a position, not an increment).
    fn update(&self, done: u64) {
        let _ = done;
    }

    /// What the step is doing now, for steps that count nothing (a build's stages).
    fn note(&self, what: &str) {
        let _ = what;
    }

    /// The step has ended; `message` sums it up (shown if the bar stays on screen).
    fn end(&self, message: &str) {
        let _ = message;
    }
}

/// A step through a streamed input (reading, sampling, compressing, decompressing): reports
/// every [`InputProgress::EVERY`] items, in input bytes when the input's size is known, else in
/// items.
pub struct InputProgress<'a> {
    progress: &'a dyn Progress,
    by_bytes: bool,
    items: u64,
}

impl<'a> InputProgress<'a> {
    /// Items between two reports.
    pub const EVERY: u64 = 1024;

    /// Begins `phase` over an input of `input_len` bytes, if known.
    pub fn begin(progress: &'a dyn Progress, phase: Phase, input_len: Option<u64>) -> Self {
        progress.begin(phase, input_len);
        InputProgress {
            progress,
            by_bytes: input_len.is_some(),
            items: 0,
        }
    }

    /// One more item, which ended `bytes_read()` bytes into the input (asked only when
    /// reporting, and only of an input whose size is known).
    pub fn item(&mut self, bytes_read: impl FnOnce() -> u64) {
        self.items += 1;
        if self.items.is_multiple_of(Self::EVERY) {
            self.report(bytes_read);
        }
    }

    /// Items so far.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The step ends `bytes_read()` bytes into the input; `message` sums it up.
    pub fn end(self, bytes_read: impl FnOnce() -> u64, message: &str) {
        self.report(bytes_read);
        self.progress.end(message);
    }

    fn report(&self, bytes_read: impl FnOnce() -> u64) {
        self.progress.update(if self.by_bytes {
            bytes_read()
        } else {
            self.items
        });
    }
}

/// Ignores progress.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}

/// `indicatif` bars on standard error, one per step, each left on screen with its summary
/// when it ends. Hidden when standard error is not a terminal.
#[derive(Debug)]
pub struct Bars {
    visible: bool,
    current: std::cell::RefCell<Option<ProgressBar>>,
}

impl Bars {
    /// Bars that draw when standard error is a terminal and `quiet` is false.
    pub fn new(quiet: bool) -> Bars {
        let visible = !quiet && !ProgressDrawTarget::stderr().is_hidden();
        Bars {
            visible,
            current: std::cell::RefCell::new(None),
        }
    }

    /// Whether anything is drawn.
    pub fn visible(&self) -> bool {
        self.visible
    }
}

impl Progress for Bars {
    fn begin(&self, phase: Phase, total: Option<u64>) {
        if !self.visible {
            return;
        }
        let bar = match total {
            Some(total) => {
                let bar = ProgressBar::new(total);
                let counter = match phase {
                    Phase::Reading
                    | Phase::Sampling
                    | Phase::Compressing
                    | Phase::Decompressing => "{binary_bytes}/{binary_total_bytes}",
                    _ => "{human_pos}/{human_len} rows",
                };
                let template = format!("{{prefix:>10}} [{{bar:30}}] {counter} {{elapsed}} {{msg}}");
                if let Ok(style) = ProgressStyle::with_template(&template) {
                    bar.set_style(style.progress_chars("=> "));
                }
                bar
            }
            None => {
                let bar = ProgressBar::new_spinner();
                let counter = match phase {
                    Phase::Building => "",
                    Phase::Decompressing => "{human_pos} datums",
                    _ => "{human_pos} rows",
                };
                let template = format!("{{prefix:>10}} {{spinner}} {counter} {{elapsed}} {{msg}}");
                if let Ok(style) = ProgressStyle::with_template(&template) {
                    bar.set_style(style);
                }
                bar.enable_steady_tick(Duration::from_millis(120));
                bar
            }
        };
        bar.set_prefix(phase.label());
        if let Some(old) = self.current.replace(Some(bar)) {
            old.finish();
        }
    }

    fn update(&self, done: u64) {
        if let Some(bar) = self.current.borrow().as_ref() {
            bar.set_position(done);
        }
    }

    fn note(&self, what: &str) {
        if let Some(bar) = self.current.borrow().as_ref() {
            bar.set_message(what.to_string());
        }
    }

    fn end(&self, message: &str) {
        if let Some(bar) = self.current.take() {
            bar.finish_with_message(message.to_string());
            // indicatif leaves the cursor at the end of the finished bar: what is written
            // next (the report, on standard output) starts on a line of its own.
            eprintln!();
        }
    }
}

/// A count with thousands separators and its noun, for messages: `1 row`, `1,234 rows` (the
/// noun's plural takes an `s`).
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", thousands(n))
    }
}

/// A count with thousands separators: `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(counted(1, "row"), "1 row");
        assert_eq!(counted(1500, "row"), "1,500 rows");
    }
}

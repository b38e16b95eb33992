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
pub struct Bars {
    visible: bool,
    /// Where each bar draws: standard error (a test's terminal in the unit tests).
    draw_target: Box<dyn Fn() -> ProgressDrawTarget + Send>,
    current: std::cell::RefCell<Option<ProgressBar>>,
}

impl Bars {
    /// Bars that draw when standard error is a terminal and `quiet` is false.
    pub fn new(quiet: bool) -> Bars {
        let visible = !quiet && !ProgressDrawTarget::stderr().is_hidden();
        Bars::drawing_on(visible, ProgressDrawTarget::stderr)
    }

    /// Bars that draw on what `draw_target` makes (a new target for each bar), if `visible`.
    fn drawing_on(
        visible: bool,
        draw_target: impl Fn() -> ProgressDrawTarget + Send + 'static,
    ) -> Bars {
        Bars {
            visible,
            draw_target: Box::new(draw_target),
            current: std::cell::RefCell::new(None),
        }
    }
}

// By hand: the draw target's maker, a closure, has no `Debug`.
impl std::fmt::Debug for Bars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bars")
            .field("visible", &self.visible)
            .field("current", &self.current)
            .finish_non_exhaustive()
    }
}

impl Progress for Bars {
    fn begin(&self, phase: Phase, total: Option<u64>) {
        if !self.visible {
            return;
        }
        let bar = match total {
            Some(total) => {
                let bar = ProgressBar::with_draw_target(Some(total), (self.draw_target)());
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
                let bar = ProgressBar::with_draw_target(None, (self.draw_target)());
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

/// A [`Progress`] that records what it is told, for the tests of what reports progress.
#[cfg(test)]
pub(crate) mod recording {
    use std::cell::RefCell;

    use super::{Phase, Progress};

    /// What a [`Progress`] was told.
    #[derive(Debug, PartialEq)]
    pub(crate) enum Told {
        Begin(Phase, Option<u64>),
        Update(u64),
        End(String),
    }

    /// Keeps what it is told, in order.
    #[derive(Default)]
    pub(crate) struct Recorder(pub(crate) RefCell<Vec<Told>>);

    impl Progress for Recorder {
        fn begin(&self, phase: Phase, total: Option<u64>) {
            self.0.borrow_mut().push(Told::Begin(phase, total));
        }
        fn update(&self, done: u64) {
            self.0.borrow_mut().push(Told::Update(done));
        }
        fn end(&self, message: &str) {
            self.0.borrow_mut().push(Told::End(message.into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use indicatif::TermLike;

    use super::recording::{Recorder, Told};
    use super::*;

    #[test]
    fn an_input_of_known_size_is_reported_in_bytes_every_1024_items() {
        let recorder = Recorder::default();
        let mut step = InputProgress::begin(&recorder, Phase::Sampling, Some(1_000_000));
        let mut bytes_asked = 0;
        for i in 1..=2100u64 {
            step.item(|| {
                bytes_asked += 1;
                i * 100
            });
        }
        assert_eq!(step.items(), 2100);
        // Asked only when reporting.
        assert_eq!(bytes_asked, 2);
        step.end(|| 210_007, "2,100 rows");
        assert_eq!(
            recorder.0.into_inner(),
            [
                Told::Begin(Phase::Sampling, Some(1_000_000)),
                Told::Update(102_400),
                Told::Update(204_800),
                Told::Update(210_007),
                Told::End("2,100 rows".into()),
            ]
        );
    }

    #[test]
    fn an_input_of_unknown_size_is_reported_in_items() {
        let recorder = Recorder::default();
        let mut step = InputProgress::begin(&recorder, Phase::Decompressing, None);
        let unasked = || -> u64 { panic!("the bytes read of an input of unknown size") };
        for _ in 0..1025 {
            step.item(unasked);
        }
        assert_eq!(step.items(), 1025);
        step.end(unasked, "1,025 datums");
        assert_eq!(
            recorder.0.into_inner(),
            [
                Told::Begin(Phase::Decompressing, None),
                Told::Update(1024),
                Told::Update(1025),
                Told::End("1,025 datums".into()),
            ]
        );
    }

    /// A terminal that keeps every line drawn on it.
    #[derive(Clone, Debug, Default)]
    struct Screen(Arc<Mutex<String>>);

    impl Screen {
        fn bars(&self) -> Bars {
            let screen = self.clone();
            Bars::drawing_on(true, move || {
                ProgressDrawTarget::term_like(Box::new(screen.clone()))
            })
        }

        /// What was drawn since the last call.
        fn drawn(&self) -> String {
            std::mem::take(&mut *self.0.lock().unwrap())
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, line: &str) -> std::io::Result<()> {
            self.write_str(&format!("{line}\n"))
        }
        fn write_str(&self, text: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push_str(text);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            self.write_str("\n")
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_bar_counts_the_bytes_of_an_input_and_the_rows_evaluated() {
        let screen = Screen::default();
        let bars = screen.bars();
        for phase in [
            Phase::Reading,
            Phase::Sampling,
            Phase::Compressing,
            Phase::Decompressing,
        ] {
            bars.begin(phase, Some(4096));
            bars.update(2048);
            let drawn = screen.drawn();
            assert!(drawn.contains(&format!("{} [", phase.label())), "{drawn}");
            assert!(drawn.contains("] 2.00 KiB/4.00 KiB "), "{phase:?}: {drawn}");
            bars.end("all read");
            let drawn = screen.drawn();
            assert!(drawn.contains("] 4.00 KiB/4.00 KiB "), "{phase:?}: {drawn}");
            assert!(drawn.contains(" all read"), "{phase:?}: {drawn}");
        }
        bars.begin(Phase::Evaluating, Some(4096));
        bars.update(2048);
        let drawn = screen.drawn();
        assert!(drawn.contains("evaluating ["), "{drawn}");
        assert!(drawn.contains("] 2,048/4,096 rows "), "{drawn}");
    }

    #[test]
    fn a_spinner_counts_rows_or_datums_and_a_build_notes_its_stage() {
        let screen = Screen::default();
        let bars = screen.bars();
        for (phase, counted) in [
            (Phase::Sampling, "1,234 rows"),
            (Phase::Decompressing, "1,234 datums"),
        ] {
            bars.begin(phase, None);
            bars.update(1234);
            bars.end("done");
            let drawn = screen.drawn();
            assert!(drawn.contains(phase.label()), "{drawn}");
            assert!(
                drawn.contains(&format!(" {counted} ")),
                "{phase:?}: {drawn}"
            );
        }
        bars.begin(Phase::Building, None);
        bars.note("choosing prefixes");
        let drawn = screen.drawn();
        assert!(drawn.contains("building "), "{drawn}");
        assert!(drawn.contains(" choosing prefixes"), "{drawn}");
        // A step that counts nothing shows no count.
        assert!(!drawn.contains(" 0 "), "{drawn}");
    }

    #[test]
    fn hidden_bars_draw_nothing() {
        let screen = Screen::default();
        let shown = screen.clone();
        let bars = Bars::drawing_on(false, move || {
            ProgressDrawTarget::term_like(Box::new(shown.clone()))
        });
        bars.begin(Phase::Sampling, Some(10));
        bars.update(5);
        bars.note("half");
        bars.end("done");
        assert_eq!(screen.drawn(), "");
        let debug = format!("{bars:?}");
        assert!(
            debug.starts_with("Bars { visible: false, current: "),
            "{debug}"
        );
    }

    #[test]
    fn bars_can_move_to_another_thread() {
        fn send<T: Send>(_: T) {}
        send(Bars::new(true));
    }

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

//! Measuring side by side: the timing and summary arithmetic pgdict's comparisons share (the
//! `compare` and `demo` commands; the `vs_postgres`, `dict_ratio`, `lz4_parts` and
//! `zstd_dictionaries` examples; the trainer's `builders` example takes its geometric mean).
//!
//! The trainer's evaluation (`pgdict_trainer::eval`) times otherwise, and more quickly: each
//! method on each size bucket alone, run back to back until 20 ms have passed (3 runs at
//! least, 64 at most), keeping the fastest run. It reports one dictionary's speeds as a side
//! note to its sizes; two methods' speeds there may be taken at different machine speeds, so
//! `pgdict compare` is the one to read for how methods compare in speed.
//!
//! This machine class is shared and noisy: absolute times drift by 20-30 % between runs. So
//! the implementations being compared run in interleaved rounds on the same inputs, and each
//! keeps its median round: their ratio holds even when the absolute numbers move. Where one
//! ratio between two jobs is the point, [`paired_ratio`] takes it round by round, which
//! holds better still: the machine's speed drifts by the second, so two jobs timed within
//! the same round are timed at the same speed.

use std::time::{Duration, Instant};

/// One thing to time: a closure that does one round of work.
pub type Job<'a> = Box<dyn FnMut() + 'a>;

/// What [`side_by_side`] measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SideBySide {
    /// Each job's median round time, in the jobs' order.
    pub medians: Vec<Duration>,
    /// Rounds run: every job ran this many times (more than asked when the time asked for
    /// took more).
    pub rounds: usize,
}

/// Runs each job once per round, in turn, until every job has run `min_rounds` times and at
/// least `min_time` has passed; returns each job's median round time, in the jobs' order, and
/// how many rounds ran.
pub fn side_by_side(jobs: &mut [Job<'_>], min_rounds: usize, min_time: Duration) -> SideBySide {
    let times = rounds(jobs, min_rounds, min_time);
    SideBySide {
        rounds: times.first().map_or(0, Vec::len),
        medians: times.into_iter().map(median).collect(),
    }
}

/// The median over rounds of `time(b) / time(a)`, timing `a` and `b` once per round (each
/// going first in every other round) until both have run `min_rounds` times and at least
/// `min_time` has passed: how many times faster `a` is than `b`. Also each job's median
/// round time.
pub fn paired_ratio<'a>(
    a: &mut Job<'a>,
    b: &mut Job<'a>,
    min_rounds: usize,
    min_time: Duration,
) -> (f64, [Duration; 2]) {
    let jobs = [a, b];
    let mut times = [Vec::new(), Vec::new()];
    let started = Instant::now();
    while times[0].len() < min_rounds.max(1) || started.elapsed() < min_time {
        let first = times[0].len() % 2;
        for k in [first, 1 - first] {
            let start = Instant::now();
            (jobs[k])();
            times[k].push(start.elapsed());
        }
    }
    let mut ratios: Vec<f64> = times[0]
        .iter()
        .zip(&times[1])
        .map(|(a, b)| b.as_secs_f64() / a.as_secs_f64().max(f64::MIN_POSITIVE))
        .collect();
    ratios.sort_by(f64::total_cmp);
    (ratios[ratios.len() / 2], times.map(median))
}

/// The median of round times (the upper one of an even count); at least one round.
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Each job's round times, for [`side_by_side`].
fn rounds(jobs: &mut [Job<'_>], min_rounds: usize, min_time: Duration) -> Vec<Vec<Duration>> {
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); jobs.len()];
    if jobs.is_empty() {
        return times;
    }
    let started = Instant::now();
    while times[0].len() < min_rounds.max(1) || started.elapsed() < min_time {
        for (job, times) in jobs.iter_mut().zip(&mut times) {
            let start = Instant::now();
            job();
            times.push(start.elapsed());
        }
    }
    times
}

/// Throughput in MB/s (10^6 bytes per second); 0 when nothing was measured.
pub fn mbps(bytes: usize, time: Duration) -> f64 {
    if bytes == 0 || time.is_zero() {
        return 0.0;
    }
    bytes as f64 / 1e6 / time.as_secs_f64()
}

/// The geometric mean, the average for ratios; 0 for no values.
pub fn geometric_mean(values: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, count) = values
        .into_iter()
        .fold((0.0, 0usize), |(sum, count), v| (sum + v.ln(), count + 1));
    if count == 0 {
        0.0
    } else {
        (sum / count as f64).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_by_side_runs_every_job_the_same_number_of_times() {
        let mut runs = [0, 0];
        {
            let (a, b) = runs.split_at_mut(1);
            let mut jobs: Vec<Job<'_>> = vec![Box::new(|| a[0] += 1), Box::new(|| b[0] += 1)];
            let measured = side_by_side(&mut jobs, 7, Duration::ZERO);
            assert_eq!(measured.medians.len(), 2);
            assert_eq!(measured.rounds, 7);
        }
        assert_eq!(runs, [7, 7]);
    }

    /// Rounds go on past `min_rounds` until `min_time` has passed, and all of them count.
    #[test]
    fn side_by_side_counts_the_rounds_it_ran() {
        let mut runs = 0;
        let measured = {
            let mut jobs: Vec<Job<'_>> = vec![Box::new(|| {
                runs += 1;
                std::thread::sleep(Duration::from_millis(1));
            })];
            side_by_side(&mut jobs, 2, Duration::from_millis(30))
        };
        assert!(runs > 2, "{runs}");
        assert_eq!(measured.rounds, runs);
    }

    /// Each median is its own job's. This asserts order, not speed: 2 ms against 10 ms of
    /// sleep leaves a margin no busy machine closes (sleeping, unlike computing, is not
    /// slowed by other work).
    #[test]
    fn side_by_side_returns_the_medians_in_the_jobs_order() {
        let sleep = |millis| move || std::thread::sleep(Duration::from_millis(millis));
        let mut jobs: Vec<Job<'_>> = vec![Box::new(sleep(2)), Box::new(sleep(10))];
        let medians = side_by_side(&mut jobs, 5, Duration::ZERO).medians;
        assert!(medians[0] < medians[1], "{medians:?}");
    }

    #[test]
    fn paired_ratio_alternates_which_job_goes_first() {
        let calls = std::cell::RefCell::new(Vec::new());
        let mut a: Job<'_> = Box::new(|| calls.borrow_mut().push('a'));
        let mut b: Job<'_> = Box::new(|| calls.borrow_mut().push('b'));
        paired_ratio(&mut a, &mut b, 4, Duration::ZERO);
        drop((a, b));
        assert_eq!(calls.into_inner(), ['a', 'b', 'b', 'a', 'a', 'b', 'b', 'a']);
    }

    #[test]
    fn paired_ratio_compares_round_by_round() {
        // `b` takes four times as long as `a`: the ratio is about 4. They sleep rather than
        // compute, so that a machine busy with other work (tests beside it, a fuzzer) does not
        // stretch one more than the other (computing, this failed once beside a fuzzer).
        let work = |millis: u64| std::thread::sleep(Duration::from_millis(millis));
        let (mut runs_a, mut runs_b) = (0, 0);
        let (ratio, medians) = {
            let mut a: Job<'_> = Box::new(|| {
                runs_a += 1;
                work(3);
            });
            let mut b: Job<'_> = Box::new(|| {
                runs_b += 1;
                work(12);
            });
            paired_ratio(&mut a, &mut b, 9, Duration::ZERO)
        };
        assert_eq!((runs_a, runs_b), (9, 9));
        assert!((2.0..8.0).contains(&ratio), "{ratio}");
        assert!(medians[0] < medians[1]);
    }

    #[test]
    fn arithmetic() {
        assert_eq!(mbps(2_000_000, Duration::from_secs(2)), 1.0);
        assert_eq!(mbps(0, Duration::from_secs(1)), 0.0);
        assert!((geometric_mean([2.0, 8.0]) - 4.0).abs() < 1e-12);
        assert_eq!(geometric_mean([]), 0.0);
    }
}

//! Ending on Ctrl-C (SIGINT), SIGTERM or SIGHUP as the signal would, after the cleanups
//! registered run: a query cancelled on the server (a PostgreSQL source's), temporary files
//! removed (`pgdict`'s outputs). Without this a signal ends the process at once, and the
//! server goes on running the query it was reading from.
//!
//! The handler is a thread that waits for the signals (signal-hook), installed with the first
//! cleanup. A signal the process was started ignoring (`nohup` ignores SIGHUP; a shell
//! script's `cmd &`, SIGINT) stays ignored; where that cannot be told, no signal is handled.

use std::sync::{Mutex, MutexGuard, Once, PoisonError};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

type Cleanup = Box<dyn Fn() + Send>;

/// The cleanups registered, by key.
static CLEANUPS: Mutex<Vec<(u64, Cleanup)>> = Mutex::new(Vec::new());

fn cleanups() -> MutexGuard<'static, Vec<(u64, Cleanup)>> {
    // A panic while it was held leaves the list as valid as before.
    CLEANUPS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A registered cleanup; dropping it unregisters it.
#[must_use = "the cleanup is unregistered when this is dropped"]
pub struct Registration {
    key: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        cleanups().retain(|(key, _)| *key != self.key);
    }
}

/// Runs `cleanup` if a signal ends the process while the returned registration lives
/// (installing the handler, once). Cleanups run in the order registered, on the handler's
/// thread, while the others may still run: each must be safe to run at any point.
pub fn on_signal(cleanup: impl Fn() + Send + 'static) -> Registration {
    static NEXT_KEY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    install();
    let key = NEXT_KEY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    cleanups().push((key, Box::new(cleanup)));
    Registration { key }
}

/// Installs the handler (once).
fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let Some(ignored) = ignored_signals() else {
            return;
        };
        let handled: Vec<i32> = [SIGINT, SIGTERM, SIGHUP]
            .into_iter()
            .filter(|&signal| ignored & (1 << (signal - 1)) == 0)
            .collect();
        // The thread first: signals caught with no thread to act on them would be ignored,
        // and without the handler a signal still ends the process (skipping the cleanups).
        // The thread ends at once if the signals cannot be caught.
        let (give, take) = std::sync::mpsc::channel::<signal_hook::iterator::Signals>();
        let watch = move || {
            let Ok(mut signals) = take.recv() else {
                return;
            };
            if let Some(signal) = signals.forever().next() {
                // Held until the process ends: nothing registers or unregisters meanwhile.
                let held = cleanups();
                for (_, cleanup) in held.iter() {
                    cleanup();
                }
                signal_hook::low_level::emulate_default_handler(signal).ok();
                std::process::exit(128 + signal);
            }
        };
        if std::thread::Builder::new().spawn(watch).is_err() {
            return;
        }
        if let Ok(signals) = signal_hook::iterator::Signals::new(handled) {
            let _ = give.send(signals);
        }
    });
}

/// The signals this process ignores, a bit each (signal N is bit N - 1), as Linux tells in
/// `/proc/self/status`; `None` where that cannot be read. A process starts ignoring what its
/// parent ignored (`nohup`: SIGHUP; a shell script's `cmd &`: SIGINT).
pub fn ignored_signals() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let mask = status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))?;
    u64::from_str_radix(mask.trim(), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered() -> Vec<u64> {
        cleanups().iter().map(|(key, _)| *key).collect()
    }

    #[test]
    fn dropping_a_registration_unregisters_its_cleanup_alone() {
        let first = on_signal(|| {});
        let second = on_signal(|| {});
        let (first_key, second_key) = (first.key, second.key);
        assert_ne!(first_key, second_key);
        assert!(registered().contains(&first_key));
        drop(first);
        let left = registered();
        assert!(!left.contains(&first_key), "{left:?}");
        assert!(left.contains(&second_key), "{left:?}");
        drop(second);
        assert!(!registered().contains(&second_key));
    }
}

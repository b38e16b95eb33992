//! Items read on one thread, worked on in batches on several, their results written back in
//! input order, so that what a command writes does not depend on the number of threads.
//! `compress` (rows to datums) and `decompress` (datums to rows) each give [`run`] a reader, a
//! worker and a writer.
//!
//! A batch closes at 4096 items or 1 MiB of them, by the size the reader gives each: for
//! `decompress`, what a datum decodes to, so that a batch's result is about 1 MiB too (a batch
//! can still be one item of any size: memory is bounded by the jobs, two batches each, and the
//! largest value). Batch `k` goes to worker `k % jobs`; each
//! worker answers its batches in the order it got them, so the results are taken back round the
//! workers in the same order. At most two batches a worker are in flight: the reader waits for
//! the oldest result before it sends more. Before a read that may wait (a pipe with nothing
//! ready), the batch held is sent, everything in flight written and the output flushed: rows
//! come out as the input comes in, not when a batch fills.
//!
//! A batch's output is [`Pieces`]: a large value is handed over to it, not copied.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;

use anyhow::{anyhow, Context};

/// Items read together, done by one worker.
pub struct Batch<T> {
    /// The 0-based number of its first item among all items, for messages.
    pub first: u64,
    pub items: Vec<T>,
    /// The items' bytes, summed.
    bytes: usize,
}

/// A batch is full at this many items, or at [`BATCH_BYTES`] of them.
const BATCH_ITEMS: usize = 4096;
const BATCH_BYTES: usize = 1 << 20;

impl<T> Batch<T> {
    pub fn starting_at(first: u64) -> Batch<T> {
        Batch {
            first,
            items: Vec::new(),
            bytes: 0,
        }
    }

    /// Adds an item of `len` bytes.
    pub fn push(&mut self, item: T, len: usize) {
        self.items.push(item);
        self.bytes += len;
    }

    pub fn is_full(&self) -> bool {
        self.items.len() >= BATCH_ITEMS || self.bytes >= BATCH_BYTES
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The items' bytes, summed.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Room to reserve for the batch's result: about its size, but no more than two full
    /// batches (a size may come from a header, which claims it; the result grows past this as
    /// it is written).
    pub fn room(&self) -> usize {
        self.bytes.min(2 * BATCH_BYTES)
    }

    /// This batch, leaving in its place an empty one that starts after it.
    pub fn take(&mut self) -> Batch<T> {
        let next = Batch::starting_at(self.first + self.items.len() as u64);
        std::mem::replace(self, next)
    }
}

/// A batch's output, written to the output in order: its bytes, in which a large value (a
/// datum, a decoded row) that the output holds byte for byte is not copied but handed over,
/// a piece of its own between the bytes before and after it. Copied, a value of hundreds of
/// megabytes would be held twice; a small one is copied, into one growing buffer.
pub struct Pieces {
    /// The pieces in order; the last is the one [`Pieces::bytes`] appends to.
    pieces: Vec<Vec<u8>>,
}

/// A value at least this long is handed over by [`Pieces::put`], not copied.
pub const HAND_OVER_MIN: usize = 1 << 20;

impl Pieces {
    /// No bytes yet, with room for `capacity` of them.
    pub fn with_capacity(capacity: usize) -> Pieces {
        Pieces {
            pieces: vec![Vec::with_capacity(capacity)],
        }
    }

    /// The bytes to append to.
    pub fn bytes(&mut self) -> &mut Vec<u8> {
        self.pieces
            .last_mut()
            .expect("there is always a last piece")
    }

    /// Appends `value`: taken, leaving it empty, if it is [`HAND_OVER_MIN`] bytes or more;
    /// else copied, and left as it is.
    pub fn put(&mut self, value: &mut Vec<u8>) {
        if value.len() < HAND_OVER_MIN {
            self.bytes().extend_from_slice(value);
            return;
        }
        self.pieces.push(std::mem::take(value));
        self.pieces.push(Vec::new());
    }

    /// The pieces, in order, to be written as one ([`crate::output::Output::write_pieces`]: a
    /// record may span two of them, a datum's length and the datum handed over).
    pub fn pieces(&self) -> &[Vec<u8>] {
        &self.pieces
    }
}

/// What a command reads, an item at a time, on the calling thread.
pub trait ItemReader {
    type Item: Send;

    /// The next item and its size in bytes; `None` at the end of the input.
    fn next_item(&mut self) -> Option<anyhow::Result<(Self::Item, usize)>>;

    /// Whether the next read may wait for input that has not come yet (a pipe). The items held
    /// are then handed on and their results written and flushed first.
    fn may_wait(&self) -> bool;
}

/// Where the batches' results go, in input order.
pub trait ResultWriter<R> {
    /// Writes one batch's result. A result that carries an error writes what it holds, then
    /// returns the error: that ends the work.
    fn write(&mut self, result: R) -> anyhow::Result<()>;

    fn flush(&mut self) -> anyhow::Result<()>;
}

/// Reads every item of `reader` into batches, has `jobs` worker threads (at least one) turn
/// each batch into a result, and writes the results to `writer` in input order. Each worker
/// makes its own state with `new_worker` (an encoder, a decoder). An error reading ends the
/// work after the results of every item before it are written, as one thread would have.
pub fn run<T, R, W>(
    jobs: usize,
    new_worker: impl Fn() -> W + Sync,
    reader: &mut impl ItemReader<Item = T>,
    writer: &mut impl ResultWriter<R>,
) -> anyhow::Result<()>
where
    T: Send,
    R: Send,
    W: FnMut(Batch<T>) -> R,
{
    with_workers(jobs, new_worker, |batches| {
        let mut batch = Batch::starting_at(0);
        let read_result = loop {
            // What has come in goes out before the reader waits for more.
            if reader.may_wait() {
                if !batch.is_empty() {
                    batches.send(batch.take(), writer)?;
                }
                // Also batches sent full before it.
                batches.drain(writer)?;
                writer.flush()?;
            }
            match reader.next_item() {
                None => break Ok(()),
                Some(Err(error)) => break Err(error),
                Some(Ok((item, len))) => {
                    batch.push(item, len);
                    if batch.is_full() {
                        batches.send(batch.take(), writer)?;
                    }
                }
            }
        };
        if !batch.is_empty() {
            batches.send(batch, writer)?;
        }
        batches.drain(writer)?;
        read_result
    })
}

/// Batches sent to the workers whose results are not yet written.
struct InOrder<B, R> {
    to_workers: Vec<mpsc::Sender<B>>,
    from_workers: Vec<mpsc::Receiver<R>>,
    sent: u64,
    taken: u64,
}

/// Runs `body` beside `jobs` worker threads (at least one), each turning the batches `body`
/// sends into results with the state `new_worker` makes on its thread. The workers end when
/// `body` returns.
fn with_workers<B, R, W, T>(
    jobs: usize,
    new_worker: impl Fn() -> W + Sync,
    body: impl FnOnce(&mut InOrder<B, R>) -> anyhow::Result<T>,
) -> anyhow::Result<T>
where
    B: Send,
    R: Send,
    W: FnMut(B) -> R,
{
    let jobs = jobs.max(1);
    let new_worker = &new_worker;
    std::thread::scope(|scope| {
        let mut in_order = InOrder {
            to_workers: Vec::with_capacity(jobs),
            from_workers: Vec::with_capacity(jobs),
            sent: 0,
            taken: 0,
        };
        for started in 0..jobs {
            let (to_worker, batches) = mpsc::channel::<B>();
            let (results, from_worker) = mpsc::channel::<R>();
            let worker = move || {
                let mut work = new_worker();
                for batch in batches {
                    // A panic (a bug) ends this worker like an error, not the process: its
                    // results channel closes, `body` returns "a worker thread stopped", and the
                    // command ends its output as broken (a consumer must not take what came
                    // before for all of it). The panic's message is on standard error already.
                    let result = std::panic::catch_unwind(AssertUnwindSafe(|| work(batch)));
                    let Ok(result) = result else { break };
                    if results.send(result).is_err() {
                        break; // `body` has returned: nobody takes this.
                    }
                }
            };
            // An error, not a panic, when the system has no more threads to give: returning
            // ends the workers started so far, and the caller cleans up as after any error.
            std::thread::Builder::new()
                .spawn_scoped(scope, worker)
                .with_context(|| format!("cannot start worker thread {} of {jobs}", started + 1))?;
            in_order.to_workers.push(to_worker);
            in_order.from_workers.push(from_worker);
        }
        // Dropping `in_order` when this returns closes the workers' channels: they end, and
        // the scope joins them.
        body(&mut in_order)
    })
}

impl<B, R> InOrder<B, R> {
    /// Sends `batch` to the next worker in turn. With two batches a worker in flight, it first
    /// writes the oldest result, so memory stays bounded however fast the reader is.
    fn send(&mut self, batch: B, writer: &mut impl ResultWriter<R>) -> anyhow::Result<()> {
        let jobs = self.to_workers.len() as u64;
        if self.sent - self.taken >= 2 * jobs {
            self.write_next(writer)?;
        }
        self.to_workers[(self.sent % jobs) as usize]
            .send(batch)
            .map_err(|_| anyhow!("a worker thread stopped"))?;
        self.sent += 1;
        Ok(())
    }

    /// Writes every result still in flight, in order.
    fn drain(&mut self, writer: &mut impl ResultWriter<R>) -> anyhow::Result<()> {
        while self.taken < self.sent {
            self.write_next(writer)?;
        }
        Ok(())
    }

    fn write_next(&mut self, writer: &mut impl ResultWriter<R>) -> anyhow::Result<()> {
        let worker = (self.taken % self.from_workers.len() as u64) as usize;
        let result = self.from_workers[worker]
            .recv()
            .map_err(|_| anyhow!("a worker thread stopped"))?;
        self.taken += 1;
        writer.write(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_value_is_handed_over_and_a_small_one_copied() {
        let mut pieces = Pieces::with_capacity(16);
        pieces.bytes().extend_from_slice(b"head");
        let mut small = vec![b's'; HAND_OVER_MIN - 1];
        pieces.put(&mut small);
        assert_eq!(
            small.len(),
            HAND_OVER_MIN - 1,
            "a small value is left to its owner"
        );
        let mut large = vec![b'l'; HAND_OVER_MIN];
        let large_at = large.as_ptr();
        pieces.put(&mut large);
        assert!(large.is_empty());
        pieces.bytes().push(b'\n');
        let handed_over = pieces
            .pieces()
            .iter()
            .find(|piece| piece.as_ptr() == large_at);
        assert_eq!(
            handed_over.map(Vec::len),
            Some(HAND_OVER_MIN),
            "the large value was copied"
        );
        assert_eq!(pieces.pieces().len(), 3);
        let written = pieces.pieces().concat();
        let expected = [&b"head"[..], &small, &vec![b'l'; HAND_OVER_MIN], b"\n"].concat();
        assert!(written == expected);
    }

    /// Numbers 0..count, one byte each; `fail_at` fails that read; `waits` says when the
    /// next read may wait.
    struct Numbers {
        next: u64,
        count: u64,
        fail_at: Option<u64>,
        waits: fn(u64) -> bool,
    }

    impl ItemReader for Numbers {
        type Item = u64;

        fn next_item(&mut self) -> Option<anyhow::Result<(u64, usize)>> {
            let n = self.next;
            if n == self.count {
                return None;
            }
            self.next += 1;
            if self.fail_at == Some(n) {
                return Some(Err(anyhow!("cannot read item {n}")));
            }
            Some(Ok((n, 1)))
        }

        fn may_wait(&self) -> bool {
            (self.waits)(self.next)
        }
    }

    /// Each batch's items times ten; fails on an item of `fail_on`.
    fn worker(fail_on: Option<u64>) -> impl FnMut(Batch<u64>) -> (Vec<u64>, Option<String>) {
        move |batch| {
            let mut out = Vec::new();
            for &n in &batch.items {
                if n % 997 == 0 {
                    // Some batches take longer than others.
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                if Some(n) == fail_on {
                    return (out, Some(format!("cannot do item {n}")));
                }
                out.push(n * 10);
            }
            (out, None)
        }
    }

    /// What was written, and each flush as the count written by then.
    #[derive(Default)]
    struct Written {
        items: Vec<u64>,
        flushes: Vec<usize>,
    }

    impl ResultWriter<(Vec<u64>, Option<String>)> for Written {
        fn write(&mut self, (items, error): (Vec<u64>, Option<String>)) -> anyhow::Result<()> {
            self.items.extend(items);
            error.map_or(Ok(()), |e| Err(anyhow!(e)))
        }

        fn flush(&mut self) -> anyhow::Result<()> {
            self.flushes.push(self.items.len());
            Ok(())
        }
    }

    fn numbers(count: u64) -> Numbers {
        Numbers {
            next: 0,
            count,
            fail_at: None,
            waits: |_| false,
        }
    }

    #[test]
    fn results_are_written_in_input_order_on_any_number_of_workers() {
        let count = 3 * BATCH_ITEMS as u64 + 100;
        for jobs in [1, 2, 3, 8] {
            let mut written = Written::default();
            run(jobs, || worker(None), &mut numbers(count), &mut written).unwrap();
            let expected: Vec<u64> = (0..count).map(|n| n * 10).collect();
            assert!(written.items == expected, "{jobs} jobs");
            assert!(written.flushes.is_empty());
        }
    }

    #[test]
    fn an_error_ends_the_output_after_the_items_before_it() {
        let count = 3 * BATCH_ITEMS as u64;
        let at = BATCH_ITEMS as u64 + 5;
        for jobs in [1, 2] {
            // A worker's error.
            let mut written = Written::default();
            let error = run(jobs, || worker(Some(at)), &mut numbers(count), &mut written);
            assert_eq!(
                error.unwrap_err().to_string(),
                format!("cannot do item {at}")
            );
            assert_eq!(written.items.len() as u64, at, "{jobs} jobs");
            // A read error.
            let mut written = Written::default();
            let mut reader = numbers(count);
            reader.fail_at = Some(at);
            let error = run(jobs, || worker(None), &mut reader, &mut written);
            assert_eq!(
                error.unwrap_err().to_string(),
                format!("cannot read item {at}")
            );
            assert_eq!(written.items.len() as u64, at, "{jobs} jobs");
        }
    }

    /// A worker that panics (a bug) ends the work with an error, as a worker's error does,
    /// after the results before its batch: the caller then ends its output as broken. The
    /// panic used to unwind through the thread scope instead, past that ending, while the
    /// output flushed what it held as if it were all.
    #[test]
    fn a_worker_that_panics_ends_the_work_with_an_error() {
        let count = 4 * BATCH_ITEMS as u64;
        let at = 2 * BATCH_ITEMS as u64 + 7;
        for jobs in [1, 2, 3] {
            let mut written = Written::default();
            let panicking = || {
                let mut inner = worker(None);
                move |batch: Batch<u64>| {
                    if batch.items.contains(&at) {
                        panic!("a bug on item {at}");
                    }
                    inner(batch)
                }
            };
            let error = run(jobs, panicking, &mut numbers(count), &mut written);
            assert_eq!(error.unwrap_err().to_string(), "a worker thread stopped");
            // Whole batches before the one that panicked, and nothing after it.
            let expected: Vec<u64> = (0..2 * BATCH_ITEMS as u64).map(|n| n * 10).collect();
            assert!(
                written.items == expected,
                "{jobs} jobs: {}",
                written.items.len()
            );
        }
    }

    #[test]
    fn what_has_come_in_is_written_and_flushed_before_a_read_that_may_wait() {
        // Before the first read (nothing held), then right after each batch was sent full
        // (nothing held either, but that batch is in flight), then after 50 more.
        let waits = |next: u64| {
            next.is_multiple_of(BATCH_ITEMS as u64) || next == 3 * BATCH_ITEMS as u64 + 50
        };
        let count = 3 * BATCH_ITEMS as u64 + 100;
        for jobs in [1, 2] {
            let mut reader = numbers(count);
            reader.waits = waits;
            let mut written = Written::default();
            run(jobs, || worker(None), &mut reader, &mut written).unwrap();
            assert_eq!(written.items.len() as u64, count);
            let expected: Vec<usize> = (0..count)
                .filter(|&n| waits(n))
                .map(|n| n as usize)
                .collect();
            assert_eq!(written.flushes, expected, "{jobs} jobs");
        }
    }

    /// [`Numbers`], saying in `read` how many it has read.
    struct Counted<'a> {
        numbers: Numbers,
        read: &'a std::cell::Cell<u64>,
    }

    impl ItemReader for Counted<'_> {
        type Item = u64;

        fn next_item(&mut self) -> Option<anyhow::Result<(u64, usize)>> {
            let item = self.numbers.next_item();
            self.read.set(self.numbers.next);
            item
        }

        fn may_wait(&self) -> bool {
            false
        }
    }

    /// How many items had been read when each result was written.
    struct ReadAtWrite<'a> {
        read: &'a std::cell::Cell<u64>,
        at_writes: Vec<u64>,
    }

    impl<R> ResultWriter<R> for ReadAtWrite<'_> {
        fn write(&mut self, _result: R) -> anyhow::Result<()> {
            self.at_writes.push(self.read.get());
            Ok(())
        }

        fn flush(&mut self) -> anyhow::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn at_most_two_batches_a_worker_are_in_flight() {
        let full = BATCH_ITEMS as u64;
        for jobs in [1, 2, 3] {
            let read = std::cell::Cell::new(0);
            let numbers = numbers(10 * full);
            let mut reader = Counted {
                numbers,
                read: &read,
            };
            let mut writer = ReadAtWrite {
                read: &read,
                at_writes: Vec::new(),
            };
            run(jobs as usize, || worker(None), &mut reader, &mut writer).unwrap();
            // Result k is written once batch k + 2 jobs is read, before it is sent.
            let expected: Vec<u64> = (0..10)
                .map(|k| ((k + 2 * jobs + 1) * full).min(10 * full))
                .collect();
            assert_eq!(writer.at_writes, expected, "{jobs} jobs");
        }
    }

    #[test]
    fn a_batch_is_full_at_its_item_or_byte_limit_and_the_next_starts_after_it() {
        let mut batch = Batch::starting_at(10);
        for n in 0..BATCH_ITEMS - 1 {
            batch.push(n, 1);
        }
        assert!(!batch.is_full());
        batch.push(0, 1);
        assert!(batch.is_full());
        let full = batch.take();
        assert_eq!(
            (full.first, full.items.len(), full.bytes()),
            (10, BATCH_ITEMS, BATCH_ITEMS)
        );
        assert!(batch.is_empty());
        assert_eq!(batch.first, 10 + BATCH_ITEMS as u64);
        batch.push(0, BATCH_BYTES);
        assert!(batch.is_full());
    }
}

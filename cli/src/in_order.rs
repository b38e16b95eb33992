//! Batches of independent work done on several threads, their results taken back in the order
//! the batches were made, so that what a command writes does not depend on the number of
//! threads. `compress` and `decompress` read on the calling thread, send batches of rows or
//! datums here, and write each batch's result when its turn comes.
//!
//! Batch `k` goes to worker `k % jobs`; each worker answers its batches in the order it got
//! them, so the results are taken back round the workers in the same order. At most two batches
//! a worker are in flight: the reader waits for the oldest result before it sends more.

use std::sync::mpsc;

use anyhow::anyhow;

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

    /// The items' bytes, summed: room to reserve for a result about as large.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// This batch, leaving in its place an empty one that starts after it.
    pub fn take(&mut self) -> Batch<T> {
        let next = Batch::starting_at(self.first + self.items.len() as u64);
        std::mem::replace(self, next)
    }
}

/// Batches sent to the workers whose results are not yet taken back.
pub struct InOrder<B, R> {
    to_workers: Vec<mpsc::Sender<B>>,
    from_workers: Vec<mpsc::Receiver<R>>,
    sent: u64,
    taken: u64,
}

/// Runs `body` beside `jobs` worker threads (at least one). Each worker makes its own state with
/// `new_worker` (an encoder, a decoder) and turns each batch `body` sends into a result; `body`
/// takes the results back in order. The workers end when `body` returns.
pub fn with_workers<B, R, W, T>(
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
        for _ in 0..jobs {
            let (to_worker, batches) = mpsc::channel::<B>();
            let (results, from_worker) = mpsc::channel::<R>();
            scope.spawn(move || {
                let mut work = new_worker();
                for batch in batches {
                    if results.send(work(batch)).is_err() {
                        break; // `body` has returned: nobody takes this.
                    }
                }
            });
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
    /// hands the oldest result to `take`, so memory stays bounded however fast the reader is.
    pub fn send(
        &mut self,
        batch: B,
        take: &mut impl FnMut(R) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let jobs = self.to_workers.len() as u64;
        if self.sent - self.taken >= 2 * jobs {
            self.take_next(take)?;
        }
        self.to_workers[(self.sent % jobs) as usize]
            .send(batch)
            .map_err(|_| anyhow!("a worker thread stopped"))?;
        self.sent += 1;
        Ok(())
    }

    /// Hands every result still in flight to `take`, in order.
    pub fn drain(&mut self, take: &mut impl FnMut(R) -> anyhow::Result<()>) -> anyhow::Result<()> {
        while self.taken < self.sent {
            self.take_next(take)?;
        }
        Ok(())
    }

    fn take_next(&mut self, take: &mut impl FnMut(R) -> anyhow::Result<()>) -> anyhow::Result<()> {
        let worker = (self.taken % self.from_workers.len() as u64) as usize;
        let result = self.from_workers[worker]
            .recv()
            .map_err(|_| anyhow!("a worker thread stopped"))?;
        self.taken += 1;
        take(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_the_order_sent_on_any_number_of_workers() {
        for jobs in [1, 2, 3, 8] {
            let mut got = Vec::new();
            with_workers(
                jobs,
                || {
                    // Workers that take longer on some batches than on others.
                    |n: u64| {
                        if n.is_multiple_of(5) {
                            std::thread::sleep(std::time::Duration::from_millis(2));
                        }
                        n * 10
                    }
                },
                |batches| {
                    let mut take = |r: u64| {
                        got.push(r);
                        Ok(())
                    };
                    for n in 0..100 {
                        batches.send(n, &mut take)?;
                        // No more than two batches a worker are ever in flight.
                        assert!(batches.sent - batches.taken <= 2 * jobs as u64);
                    }
                    batches.drain(&mut take)
                },
            )
            .unwrap();
            assert_eq!(
                got,
                (0..100).map(|n| n * 10).collect::<Vec<_>>(),
                "{jobs} jobs"
            );
        }
    }

    #[test]
    fn an_error_taking_a_result_ends_the_work() {
        let mut taken = 0;
        let result = with_workers(
            2,
            || |n: u32| n,
            |batches| {
                let mut take = |n: u32| {
                    taken += 1;
                    anyhow::ensure!(n != 7, "batch {n} failed");
                    Ok(())
                };
                for n in 0..100 {
                    batches.send(n, &mut take)?;
                }
                batches.drain(&mut take)
            },
        );
        assert_eq!(result.unwrap_err().to_string(), "batch 7 failed");
        assert_eq!(taken, 8);
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

//! How many tool calls run at once, and how many may wait: a fixed number of workers and a
//! bounded queue, past which a call is refused as busy at once.
//!
//! Each call runs on tokio's blocking pool, which grows to 512 threads: a burst of 1,000
//! calls sent in one write once took the server to 517 threads and 943 MB, kept after the
//! burst. With a bound the threads, and the memory each search holds while it runs, stay
//! those of a few calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Calls waiting for a worker, at most: past this many, a call is answered busy.
pub(crate) const MAX_QUEUED_CALLS: usize = 64;

/// The `index` tool's workers: a status answers while a build waits for its run.
pub(crate) const INDEX_WORKERS: usize = 2;

/// The workers and the queue in front of them.
pub(crate) struct Calls {
    workers: Arc<Semaphore>,
    worker_count: usize,
    /// Calls admitted and not yet running.
    queued: AtomicUsize,
    max_queued: usize,
}

/// The call was refused: the queue is full.
#[derive(Debug)]
pub(crate) struct Busy {
    pub workers: usize,
    pub queued: usize,
}

impl Busy {
    /// What the client is told.
    pub fn message(&self) -> String {
        format!(
            "quarry is busy: {} calls run and {} wait (its most); call again when earlier \
             answers have come",
            self.workers, self.queued
        )
    }
}

impl Calls {
    /// `workers` calls at once, `max_queued` waiting.
    pub fn new(workers: usize, max_queued: usize) -> Self {
        let workers = workers.max(1);
        Self {
            workers: Arc::new(Semaphore::new(workers)),
            worker_count: workers,
            queued: AtomicUsize::new(0),
            max_queued,
        }
    }

    /// How many searches run at once on this machine: one per core, two at least. A search
    /// keeps a core busy embedding its query and scanning, so more at once answer none
    /// sooner, and each holds its working memory meanwhile (four at once on two cores left
    /// resident memory 10-15% above its rest after a burst, two 3-10%).
    pub fn search_workers() -> usize {
        std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 16))
    }

    /// A worker for one call, once one is free; [`Busy`] at once where the queue is full.
    pub async fn admit(&self) -> Result<OwnedSemaphorePermit, Busy> {
        let place = Queued::take(&self.queued);
        if place.ahead >= self.max_queued {
            return Err(Busy {
                workers: self.worker_count,
                queued: place.ahead,
            });
        }
        let permit = Arc::clone(&self.workers)
            .acquire_owned()
            .await
            .expect("the workers' semaphore is never closed");
        Ok(permit)
    }
}

/// A call's place in the queue, given up when dropped: when it runs, when it is refused,
/// and when the client cancels it while it waits (rmcp drops the call's future then).
struct Queued<'a> {
    queued: &'a AtomicUsize,
    /// How many were queued before it.
    ahead: usize,
}

impl<'a> Queued<'a> {
    fn take(queued: &'a AtomicUsize) -> Self {
        let ahead = queued.fetch_add(1, Ordering::SeqCst);
        Self { queued, ahead }
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.queued.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_past_the_queue_are_busy_and_the_queue_drains() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let calls = Arc::new(Calls::new(1, 2));
            let running = calls.admit().await.unwrap();
            let waiting: Vec<_> = (0..2)
                .map(|_| {
                    let calls = Arc::clone(&calls);
                    tokio::spawn(async move { calls.admit().await.map(drop) })
                })
                .collect();
            while calls.queued.load(Ordering::SeqCst) < 2 {
                tokio::task::yield_now().await;
            }
            let busy = calls.admit().await.unwrap_err();
            assert_eq!((busy.workers, busy.queued), (1, 2));
            assert!(busy.message().contains("busy"), "{}", busy.message());
            drop(running);
            for call in waiting {
                call.await.unwrap().unwrap();
            }
            assert_eq!(calls.queued.load(Ordering::SeqCst), 0);
            drop(calls.admit().await.unwrap());
            // A waiting call the client cancels gives up its place.
            let running = calls.admit().await.unwrap();
            let cancelled = {
                let calls = Arc::clone(&calls);
                tokio::spawn(async move { calls.admit().await.map(drop) })
            };
            while calls.queued.load(Ordering::SeqCst) < 1 {
                tokio::task::yield_now().await;
            }
            cancelled.abort();
            assert!(cancelled.await.unwrap_err().is_cancelled());
            assert_eq!(calls.queued.load(Ordering::SeqCst), 0);
            drop(running);
        });
    }
}

//! One long-lived thread that runs every analysis and frees what analyses
//! made.
//!
//! An analysis of a 20,000-task model allocates about 60 MB in small pieces.
//! On tokio's blocking pool each keystroke's analysis ran on whichever pool
//! thread was free, and glibc's malloc gives each thread its own arena (up
//! to eight per core): every arena an analysis had ever run in kept the
//! model-sized holes its frees left, which the next analysis, on another
//! thread, could not reuse: 113 MB after opening, 532 MB after 150 edits,
//! and 226 MB with `MALLOC_ARENA_MAX=1` (`benches/memory.rs`). Here every
//! analysis allocates on one thread and every free of its model happens on
//! the same thread, so one arena serves them all and each analysis reuses
//! the memory the one before it freed: 237 MB after 150 edits, level from
//! the twentieth on (docs/performance.md).
//!
//! A panic in a job is caught and returned as its message; the thread goes
//! on with the next job.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;

type Job = Box<dyn FnOnce() + Send>;

/// The thread, and the queue of jobs it runs in order. Dropping the worker
/// ends the thread once the jobs queued so far have run.
#[derive(Debug)]
pub struct Worker {
    jobs: mpsc::Sender<Job>,
}

/// The message of a panic payload.
pub fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

impl Worker {
    /// A worker thread named `name` (an error if the system refuses one).
    pub fn new(name: &str) -> std::io::Result<Worker> {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                for job in queue {
                    job();
                }
            })?;
        Ok(Worker { jobs })
    }

    /// Run `f` on the worker after the jobs queued before it; its result, or
    /// the message of its panic.
    pub async fn run<T, F>(&self, f: F) -> Result<T, String>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let out = catch_unwind(AssertUnwindSafe(f)).map_err(panic_message);
            let _ = tx.send(out);
        });
        if self.jobs.send(job).is_err() {
            return Err("the analysis thread has stopped".to_string());
        }
        rx.await
            .unwrap_or_else(|_| Err("the analysis thread has stopped".to_string()))
    }

    /// Run `f` on the worker without waiting for it (a free: nothing to
    /// answer). A panic in it is dropped with it.
    pub fn spawn(&self, f: impl FnOnce() + Send + 'static) {
        let _ = self.jobs.send(Box::new(move || {
            let _ = catch_unwind(AssertUnwindSafe(f));
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_in_order_on_one_thread_and_a_panic_is_an_answer() {
        let w = Worker::new("test-worker").unwrap();
        let a = w.run(|| std::thread::current().id()).await.unwrap();
        let boom = w.run(|| -> u8 { panic!("on purpose") }).await;
        assert_eq!(boom, Err("on purpose".to_string()));
        let b = w.run(|| std::thread::current().id()).await.unwrap();
        assert_eq!(a, b, "one thread runs every job, after a panic too");
        assert_ne!(a, std::thread::current().id());
    }
}

//! Lanes: where a serving process runs handler attempts and channel
//! deliveries, apart from the loop that decides.
//!
//! The decision loop never runs a handler or a delivery itself. When the
//! next thing due for an instance is an attempt or a delivery, the chooser
//! ([`crate::driver`]'s `Ctx`, with a [`LaneView`]) hands back a
//! [`Job`] instead of an event: for an attempt, the in-flight record is
//! written first (under the claim, its own transaction), then the claim is
//! let go and the job goes to a lane. Its outcome comes back as
//! [`Done`], and is decided under a fresh claim from the facts as they
//! are then (the attempt's decision checks that the node still waits for
//! that attempt; a delivery's that its row is still pending), so a timer, a
//! response or an operator's action decided meanwhile is never overwritten.
//!
//! [`Pool`] is the lanes themselves: a bounded set of threads (the
//! handlers are synchronous: closures, commands, blocking HTTP), at most
//! `concurrency` jobs in flight, and at most `bound(dependency)` for one
//! task name or channel (a bulkhead). A job over a bound is not taken: the
//! chooser leaves it due, and it is dispatched when a lane frees.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

use serde_json::Value;

use crate::world::{AttemptCall, DeliveryCall, World};
use qflow_instance::event::{ChannelOutcome, DeliveryOutcome, TaskOutcome};
use qflow_instance::OutboxRow;

/// What a lane runs: one attempt of a registered task, or one delivery of
/// an outbox row, with everything it needs read under the claim.
#[derive(Debug, Clone)]
pub enum Job {
    Attempt {
        instance: String,
        node: String,
        task: String,
        attempt: u32,
        /// Its idempotency key (from the store's key ledger).
        key: String,
        runs: usize,
        variables: BTreeMap<String, Value>,
        /// The retry timer the attempt re-drives (`None`: a first attempt).
        timer: Option<i64>,
        /// When it was due (the run's clock): a first attempt is due when
        /// its token became ready, a retry at its timer.
        due_ms: i64,
    },
    Delivery {
        instance: String,
        row: OutboxRow,
        correlation: String,
        tried: usize,
        delivered: usize,
        body: Value,
        due_ms: i64,
    },
}

/// What the serving loop hears: a lane's outcome, or a prompt to look again.
#[derive(Debug)]
pub enum Msg {
    Done(Box<Done>),
    Wake,
    /// Another process committed new work (PostgreSQL's `NOTIFY`, heard
    /// by the serving loop's listener): look again, as for [`Msg::Wake`].
    Notified,
}

/// How a job went.
#[derive(Debug, Clone)]
pub enum Outcome {
    Attempt(TaskOutcome),
    Delivery(DeliveryOutcome, Option<ChannelOutcome>),
}

/// A job and its outcome, back from its lane.
#[derive(Debug, Clone)]
pub struct Done {
    pub job: Job,
    pub outcome: Outcome,
}

impl Job {
    pub fn instance(&self) -> &str {
        match self {
            Job::Attempt { instance, .. } | Job::Delivery { instance, .. } => instance,
        }
    }

    /// The dependency it calls: the task's name, or the channel.
    pub fn dependency(&self) -> &str {
        match self {
            Job::Attempt { task, .. } => task,
            Job::Delivery { row, .. } => &row.channel,
        }
    }

    pub fn node(&self) -> &str {
        match self {
            Job::Attempt { node, .. } => node,
            Job::Delivery { row, .. } => &row.node,
        }
    }

    pub fn due_ms(&self) -> i64 {
        match self {
            Job::Attempt { due_ms, .. } | Job::Delivery { due_ms, .. } => *due_ms,
        }
    }

    /// Run it in `world` (on a lane: this may take as long as the handler).
    pub fn run(&self, world: &dyn World) -> Outcome {
        match self {
            Job::Attempt {
                instance,
                node,
                task,
                attempt,
                key,
                runs,
                variables,
                ..
            } => Outcome::Attempt(world.attempt(&AttemptCall {
                instance,
                node,
                task,
                attempt: *attempt,
                key,
                runs: *runs,
                variables,
            })),
            Job::Delivery {
                instance,
                row,
                correlation,
                tried,
                delivered,
                body,
                ..
            } => {
                let (o, c) = world.deliver(&DeliveryCall {
                    instance,
                    node: &row.node,
                    channel: &row.channel,
                    idempotency_key: &row.idempotency_key,
                    correlation,
                    attempt: row.attempt,
                    tried: *tried,
                    delivered: *delivered,
                    body,
                });
                Outcome::Delivery(o, c)
            }
        }
    }
}

/// What the chooser of one instance is told of the lanes.
pub struct LaneView<'a> {
    /// This instance's task nodes whose attempt runs on a lane of this process.
    pub nodes: &'a BTreeSet<String>,
    /// Outbox rows (of any instance) a lane of this process is delivering.
    pub rows: &'a BTreeSet<i64>,
    /// Whether a lane may take one more request to this dependency now.
    pub free: &'a dyn Fn(&str) -> bool,
}

/// The default bound on jobs in flight (`qflow serve --concurrency`).
pub const DEFAULT_CONCURRENCY: usize = 32;

struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
}

/// The lanes: threads that run jobs in a world and send back what happened.
pub struct Pool {
    queue: Arc<(Mutex<Queue>, Condvar)>,
    threads: Vec<std::thread::JoinHandle<()>>,
    spawned: usize,
    concurrency: usize,
    bounds: BTreeMap<String, usize>,
    /// Jobs handed to a lane and not yet back, by dependency.
    by_dependency: BTreeMap<String, usize>,
    in_flight: usize,
    world: Arc<dyn World + Send + Sync>,
    done: mpsc::Sender<Msg>,
}

impl Pool {
    /// `concurrency` lanes at most (threads are started as jobs need them),
    /// `bounds` per dependency; outcomes are sent on `done`.
    pub fn new(
        world: Arc<dyn World + Send + Sync>,
        concurrency: usize,
        bounds: BTreeMap<String, usize>,
        done: mpsc::Sender<Msg>,
    ) -> Pool {
        Pool {
            queue: Arc::new((
                Mutex::new(Queue {
                    jobs: VecDeque::new(),
                    closed: false,
                }),
                Condvar::new(),
            )),
            threads: Vec::new(),
            spawned: 0,
            concurrency: concurrency.max(1),
            bounds,
            by_dependency: BTreeMap::new(),
            in_flight: 0,
            world,
            done,
        }
    }

    /// Whether one more job to `dependency` may be taken now.
    pub fn free(&self, dependency: &str) -> bool {
        self.in_flight < self.concurrency
            && self.bounds.get(dependency).is_none_or(|b| {
                self.by_dependency.get(dependency).copied().unwrap_or(0) < (*b).max(1)
            })
    }

    /// [`Pool::free`] with `taken` more jobs chosen but not yet handed
    /// over, `taken_here` of them to `dependency` (a serving round hands
    /// its group's jobs over once their in-flight records are committed).
    pub fn free_beside(&self, dependency: &str, taken: usize, taken_here: usize) -> bool {
        self.in_flight + taken < self.concurrency
            && self.bounds.get(dependency).is_none_or(|b| {
                self.by_dependency.get(dependency).copied().unwrap_or(0) + taken_here < (*b).max(1)
            })
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Hand a job to a lane (the caller checked [`Pool::free`]).
    pub fn submit(&mut self, job: Job) {
        self.in_flight += 1;
        *self
            .by_dependency
            .entry(job.dependency().to_string())
            .or_insert(0) += 1;
        if self.spawned < self.concurrency && self.spawned < self.in_flight {
            self.spawn();
        }
        let (lock, ready) = &*self.queue;
        lock.lock().expect("lane queue").jobs.push_back(job);
        ready.notify_one();
    }

    /// A job came back ([`Done`] received): its lane is free again.
    pub fn finished(&mut self, job: &Job) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if let Some(n) = self.by_dependency.get_mut(job.dependency()) {
            *n = n.saturating_sub(1);
        }
    }

    fn spawn(&mut self) {
        let (queue, world, done) = (self.queue.clone(), self.world.clone(), self.done.clone());
        self.spawned += 1;
        let name = format!("qflow-lane-{}", self.spawned);
        let t = std::thread::Builder::new()
            .name(name)
            .spawn(move || loop {
                let job = {
                    let (lock, ready) = &*queue;
                    let mut q = lock.lock().expect("lane queue");
                    loop {
                        if let Some(j) = q.jobs.pop_front() {
                            break j;
                        }
                        if q.closed {
                            return;
                        }
                        q = ready.wait(q).expect("lane queue");
                    }
                };
                let outcome = job.run(&*world);
                if done
                    .send(Msg::Done(Box::new(Done { job, outcome })))
                    .is_err()
                {
                    return;
                }
            })
            .expect("a lane thread starts");
        self.threads.push(t);
    }
}

impl Drop for Pool {
    /// Lanes finish the job they run (a handler is never abandoned mid-way
    /// by the engine) and take no other; their outcomes go nowhere, and the
    /// attempts are decided by the next process from their in-flight
    /// records, as after a crash.
    fn drop(&mut self) {
        let (lock, ready) = &*self.queue;
        if let Ok(mut q) = lock.lock() {
            q.closed = true;
            q.jobs.clear();
        }
        ready.notify_all();
    }
}

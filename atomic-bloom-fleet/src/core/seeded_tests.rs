//! Seeded schedules against the model of the server: one process
//! crawling through a frontier whose calls are dropped and whose replies
//! are lost, and the tasks of one seen-set sharing rounds (the group
//! commit) while tasks are cancelled, servers of a round dropped and
//! replies of shared pipelines lost. `FLEET_MODEL_SEEDS=N` runs N seeds of
//! each (40 by default).

use std::collections::{HashMap, VecDeque};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use super::call::{Io, Step};
use super::frontier::{Leased, Push};
use super::group::{Serve, Ticket, Turn};
use super::model::{disturbed, drive_faulty, frontier, roll, seen_client, Faults, Model};
use super::seen::{Answer, Offer};
use super::tests::{config, Fake};
use crate::sync::{Arc, AtomicU64, Ordering};

/// Seeds a seeded model test runs: `FLEET_MODEL_SEEDS`, 40 by default.
fn seeds() -> u64 {
    std::env::var("FLEET_MODEL_SEEDS")
        .ok()
        .and_then(|seeds| seeds.parse().ok())
        .unwrap_or(40)
}

/// One process crawling a small web through the core against the model,
/// every call's rounds disturbed by the seed's schedule (dropped calls as
/// a cancelled tokio future drops them, replies lost after their commands
/// ran, pipelines cut part way), and dropped `Leased`s: every page crawled
/// exactly once (no process dies, no lease expires), and "finished" only
/// once nothing is queued, leased or held. 40 seeds by default, a second
/// here; `FLEET_MODEL_SEEDS=N` for more (2,000 passed in a minute). On the
/// code before the push's fix, seed 10 lost the start URL with its push.
#[test]
fn seeded_dropped_and_lost_calls_lose_and_repeat_nothing() {
    for seed in 0..seeds() {
        model_crawl(seed);
    }
}

fn model_crawl(seed: u64) {
    const PAGES: usize = 80;
    let url = |page: usize| format!("https://w/{page}");
    let links = |page: usize| {
        [
            (page * 7 + 1) % PAGES,
            (page * 13 + 5) % PAGES,
            (page + 1) % PAGES,
        ]
    };
    let page_of = |url: &str| -> usize { url.rsplit('/').next().unwrap().parse().unwrap() };
    let mut rng = super::Rng::new(seed);
    let faults = Faults {
        drop_before: rng.draw() % 80,
        drop_after: rng.draw() % 80,
        lose_after: rng.draw() % 80,
        cut: rng.draw() % 80,
    };
    let config = config()
        .batch_size(1 + (rng.draw() % 4) as usize)
        .pop_batch(1 + (rng.draw() % 6) as usize)
        .retry_for(Duration::from_millis(300));
    let mut fake = Fake::new();
    let mut model = Model::default();
    let (core, mut wire) = frontier(&config, &mut fake, &mut model);
    let mut beat = core.client.beat_link().expect("a link");
    let mut crawled = vec![0usize; PAGES];
    // Pages in hand, each with the links it has yet to push.
    let mut in_hand: Vec<(Leased, Vec<usize>)> = Vec::new();
    let mut seed_pushed = false;
    let mut steps = 0;
    loop {
        steps += 1;
        assert!(
            steps < 200_000,
            "seed {seed} ({faults:?}): no end; crawled {crawled:?}"
        );
        // The heartbeat, now and then.
        if rng.draw().is_multiple_of(8) {
            drive_faulty(
                &mut fake,
                &mut model,
                &mut rng,
                faults,
                core.beat(&mut beat),
            );
        }
        fake.now += Duration::from_millis(rng.draw() % 5);
        if !seed_pushed {
            let pushed = match core.push(url(0), fake.now) {
                Push::Answered(accepted) => Some(Ok(accepted)),
                Push::Slow(left) => drive_faulty(
                    &mut fake,
                    &mut model,
                    &mut rng,
                    faults,
                    core.push_slow(&mut wire, left),
                ),
            };
            // A dropped push keeps its URL (see above); an error did not take it.
            seed_pushed = !matches!(pushed, Some(Err(_)));
            continue;
        }
        match rng.draw() % 6 {
            0 | 1 => {
                let popped = match core.pop_buffered() {
                    Some(page) => Some(Ok(Some(page))),
                    None => {
                        drive_faulty(&mut fake, &mut model, &mut rng, faults, core.pop(&mut wire))
                    }
                };
                if let Some(Ok(Some(page))) = popped {
                    let todo = links(page_of(page.url())).to_vec();
                    in_hand.push((page, todo));
                }
            }
            2 | 3 if !in_hand.is_empty() => {
                let at = (rng.draw() % in_hand.len() as u64) as usize;
                if let Some(&link) = in_hand[at].1.last() {
                    let pushed = match core.push(url(link), fake.now) {
                        Push::Answered(accepted) => Some(Ok(accepted)),
                        Push::Slow(left) => drive_faulty(
                            &mut fake,
                            &mut model,
                            &mut rng,
                            faults,
                            core.push_slow(&mut wire, left),
                        ),
                    };
                    if !matches!(pushed, Some(Err(_))) {
                        in_hand[at].1.pop();
                    }
                } else {
                    let (page, _) = in_hand.swap_remove(at);
                    if rng.draw().is_multiple_of(10) {
                        // A worker that gave up on it: given back.
                        drop(page);
                    } else {
                        crawled[page_of(page.url())] += 1;
                        core.complete(page);
                    }
                }
            }
            4 => {
                drive_faulty(
                    &mut fake,
                    &mut model,
                    &mut rng,
                    faults,
                    core.flush(&mut wire),
                );
            }
            _ => {
                let finished = drive_faulty(
                    &mut fake,
                    &mut model,
                    &mut rng,
                    faults,
                    core.is_finished(&mut wire),
                );
                if let Some(Ok(true)) = finished {
                    let queued: usize = model.queues.values().map(VecDeque::len).sum();
                    assert!(
                        queued == 0 && model.leases.is_empty() && in_hand.is_empty(),
                        "seed {seed} ({faults:?}): finished with {queued} queued, {} leases, {} \
                         in hand",
                        model.leases.len(),
                        in_hand.len()
                    );
                    break;
                }
            }
        }
    }
    let missed: Vec<usize> = (0..PAGES).filter(|&page| crawled[page] == 0).collect();
    let twice: Vec<usize> = (0..PAGES).filter(|&page| crawled[page] > 1).collect();
    assert!(
        missed.is_empty() && twice.is_empty(),
        "seed {seed} ({faults:?}): never crawled {missed:?}, crawled twice {twice:?}"
    );
}

/// A task's waker: counts its wakes.
#[derive(Default)]
pub(super) struct Woken(AtomicU64);

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        // Relaxed: the model runs on one thread; the count orders nothing.
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

impl Woken {
    /// Whether it was woken since the last look, which this one ends.
    pub(super) fn take(&self) -> bool {
        // Relaxed: as above.
        self.0.swap(0, Ordering::Relaxed) > 0
    }

    /// Whether it was woken since the last [`take`](Self::take).
    pub(super) fn is_woken(&self) -> bool {
        // Relaxed: as above.
        self.0.load(Ordering::Relaxed) > 0
    }
}

/// Where a simulated task of one seen-set stands.
enum Task<'t> {
    /// Its next offer is `next` of its script.
    Idle { next: usize },
    /// Offer `offer` of its script waits for its answer.
    Waiting {
        offer: usize,
        ticket: Ticket<'t, Offer, Answer>,
    },
}

/// What a seeded coalescing schedule saw.
#[derive(Debug, Default)]
struct Tally {
    /// Rounds that carried the offers of two tasks or more.
    shared_rounds: usize,
    /// Of those, rounds a reply of which was lost or cut.
    shared_rounds_disturbed: usize,
    /// Tasks cancelled while their offer was in a round under way.
    cancelled_in_flight: usize,
    /// Rounds dropped with their server.
    servers_dropped: usize,
}

/// The tasks of one seen-set share rounds (the group commit) while the
/// seed's schedule cancels tasks (queued, or while their offer is in a
/// round under way), drops a round's server before or after its pipelines
/// ran, and loses or cuts the replies of shared pipelines; a task whose
/// call failed offers the same items again. Each task gets its own
/// answers (one per item, a repeat within its offer `false`, an item no
/// one else offered `true`), and every item is answered new exactly once
/// over the whole schedule, the answers of cancelled tasks found by a last
/// offer of every item. Only tasks that were woken are polled: a task
/// whose turn came and was not told would hang the schedule.
#[test]
fn seeded_shared_rounds_answer_each_task_its_own() {
    let mut tally = Tally::default();
    for seed in 0..seeds() {
        shared_rounds(seed, &mut tally);
    }
    eprintln!("{tally:?}");
    if seeds() >= 40 {
        assert!(tally.shared_rounds > 0, "{tally:?}");
        assert!(tally.shared_rounds_disturbed > 0, "{tally:?}");
        assert!(tally.cancelled_in_flight > 0, "{tally:?}");
        assert!(tally.servers_dropped > 0, "{tally:?}");
    }
}

fn shared_rounds(seed: u64, tally: &mut Tally) {
    let mut rng = super::Rng::new(seed ^ 0x636f_616c);
    let faults = Faults {
        drop_before: rng.draw() % 60,
        drop_after: rng.draw() % 60,
        lose_after: rng.draw() % 120,
        cut: rng.draw() % 80,
    };
    let cancel = rng.draw() % 80;
    let config = config()
        .batch_size(1 + (rng.draw() % 4) as usize)
        .max_buffered(4 + (rng.draw() % 12) as usize)
        .retry_for(Duration::from_millis(200));
    let mut fake = Fake::new();
    let mut model = Model::default();
    let (seen, mut wire) = seen_client(&config, &mut fake, &mut model);
    // Each task's offers: 1 to 5 items of 40, repeats within and across.
    let tasks = 2 + (rng.draw() % 5) as usize;
    let scripts: Vec<Vec<Offer>> = (0..tasks)
        .map(|_| {
            (0..1 + rng.draw() % 4)
                .map(|_| {
                    (0..1 + rng.draw() % 5)
                        .map(|_| format!("item-{}", rng.draw() % 40))
                        .collect()
                })
                .collect()
        })
        .collect();
    let mut offered: HashMap<&str, usize> = HashMap::new();
    for item in scripts.iter().flatten().flatten() {
        *offered.entry(item.as_str()).or_default() += 1;
    }
    let what = format!("seed {seed} ({faults:?}, cancel {cancel}/1000, {tasks} tasks)");
    let wakers: Vec<Arc<Woken>> = (0..tasks).map(|_| Arc::default()).collect();
    let mut states: Vec<Task<'_>> = (0..tasks).map(|_| Task::Idle { next: 0 }).collect();
    // New answers given to callers, by item.
    let mut new: HashMap<String, usize> = HashMap::new();
    let mut steps = 0;
    loop {
        steps += 1;
        assert!(steps < 100_000, "{what}: no end");
        let live: Vec<usize> = (0..tasks)
            .filter(|&task| match &states[task] {
                Task::Idle { next } => *next < scripts[task].len(),
                Task::Waiting { .. } => true,
            })
            .collect();
        if live.is_empty() {
            break;
        }
        // No round is under way here: every waiting ticket was woken since
        // the last one ended (or is new); one that was not may be left
        // waiting for good.
        for (task, state) in states.iter().enumerate() {
            if let Task::Waiting { offer, .. } = state {
                let woken = wakers[task].is_woken();
                assert!(woken, "{what}: task {task} waits (offer {offer}) unwoken");
            }
        }
        let task = live[(rng.draw() % live.len() as u64) as usize];
        let (offer, mut ticket) = match std::mem::replace(&mut states[task], Task::Idle { next: 0 })
        {
            Task::Idle { next } => {
                let ticket = seen.offer(&scripts[task][next]);
                wakers[task].wake_by_ref();
                (next, ticket)
            }
            Task::Waiting { offer, ticket } => (offer, ticket),
        };
        if roll(&mut rng, cancel) {
            // Cancelled while queued: its offer is withdrawn.
            drop(ticket);
            states[task] = Task::Idle { next: offer + 1 };
            continue;
        }
        wakers[task].take();
        let waker = Waker::from(Arc::clone(&wakers[task]));
        let mut round = match ticket.poll_turn(&mut Context::from_waker(&waker)) {
            Poll::Pending => {
                states[task] = Task::Waiting { offer, ticket };
                continue;
            }
            Poll::Ready(Turn::Answered(answer)) => {
                let items = &scripts[task][offer];
                states[task] = answered(items, offer, answer, (&offered, &mut new), &what);
                continue;
            }
            Poll::Ready(Turn::Serve(round)) => round,
        };
        // This task serves a round; the others act between its requests.
        states[task] = Task::Waiting { offer, ticket };
        let requests = round.take_requests();
        let carried = requests.len();
        let mut call = seen.serve(&mut wire, requests);
        let mut disturbed_any = false;
        let served = loop {
            for _ in 0..rng.draw() % 3 {
                let other = (rng.draw() % tasks as u64) as usize;
                if other == task {
                    continue;
                }
                match std::mem::replace(&mut states[other], Task::Idle { next: 0 }) {
                    Task::Idle { next } if next < scripts[other].len() => {
                        let ticket = seen.offer(&scripts[other][next]);
                        wakers[other].wake_by_ref();
                        states[other] = Task::Waiting {
                            offer: next,
                            ticket,
                        };
                    }
                    Task::Waiting { offer, ticket } if roll(&mut rng, cancel * 4) => {
                        // Cancelled while queued, or while its offer is in
                        // this round.
                        tally.cancelled_in_flight += usize::from(carried > 1);
                        drop(ticket);
                        states[other] = Task::Idle { next: offer + 1 };
                    }
                    Task::Waiting { offer, mut ticket } if wakers[other].take() => {
                        // Looks while the round is under way: waits.
                        let waker = Waker::from(Arc::clone(&wakers[other]));
                        states[other] = match ticket.poll_turn(&mut Context::from_waker(&waker)) {
                            Poll::Pending => Task::Waiting { offer, ticket },
                            // Answered by an earlier round.
                            Poll::Ready(Turn::Answered(answer)) => {
                                let items = &scripts[other][offer];
                                answered(items, offer, answer, (&offered, &mut new), &what)
                            }
                            Poll::Ready(turn) => panic!("{what}: {turn:?} during another's round"),
                        };
                    }
                    state => states[other] = state,
                }
            }
            let pipelines = match call.step(fake.now) {
                Step::Done(answers) => break Some(answers),
                Step::Io(Io::Sleep(until)) => {
                    fake.now = fake.now.max(until);
                    call.answer(Vec::new());
                    continue;
                }
                Step::Io(Io::Round(pipelines)) => pipelines,
            };
            if roll(&mut rng, faults.drop_before) {
                break None;
            }
            if roll(&mut rng, faults.drop_after) {
                pipelines
                    .iter()
                    .for_each(|pipeline| drop(model.answer(pipeline)));
                break None;
            }
            let lost_before = model.ran.len();
            let received = disturbed(&mut model, &mut rng, faults, &pipelines);
            disturbed_any |= received.iter().any(|received| received.lost.is_some());
            debug_assert!(model.ran.len() >= lost_before);
            call.answer(received);
        };
        drop(call);
        if carried > 1 {
            tally.shared_rounds += 1;
            tally.shared_rounds_disturbed += usize::from(disturbed_any);
        }
        match served {
            Some(answers) => {
                round.finish(answers);
                // A server looks at its own ticket again at once.
                wakers[task].wake_by_ref();
            }
            None => {
                // The server's task cancelled: its round and its own call.
                tally.servers_dropped += 1;
                drop(round);
                if let Task::Waiting { offer, ticket } =
                    std::mem::replace(&mut states[task], Task::Idle { next: 0 })
                {
                    drop(ticket);
                    states[task] = Task::Idle { next: offer + 1 };
                }
            }
        }
    }
    // One last offer of every item finds what cancelled tasks left.
    let all: Vec<String> = (0..40).map(|n| format!("item-{n}")).collect();
    let last = super::model::drive(
        &mut fake,
        &mut model,
        super::seen::insert_many(&seen, &mut wire, &all),
    )
    .unwrap_or_else(|error| panic!("{what}: the last offer failed: {error}"));
    for (item, answer) in all.iter().zip(last) {
        *new.entry(item.clone()).or_default() += usize::from(answer);
    }
    let wrong: Vec<(&String, &usize)> = new.iter().filter(|(_, &count)| count != 1).collect();
    assert!(
        wrong.is_empty(),
        "{what}: answered new other than once: {wrong:?}"
    );
}

/// Where a task whose offer `offer` (`items`) got `answer` goes next: on
/// to its next offer, or the same again after an error (as a caller
/// would); its new answers counted in `new`.
fn answered<'t>(
    items: &[String],
    offer: usize,
    answer: Answer,
    (offered, new): (&HashMap<&str, usize>, &mut HashMap<String, usize>),
    what: &str,
) -> Task<'t> {
    match answer.take() {
        Ok(answers) => {
            check_answers(items, &answers, offered, what);
            for (item, answer) in items.iter().zip(answers) {
                *new.entry(item.clone()).or_default() += usize::from(answer);
            }
            Task::Idle { next: offer + 1 }
        }
        Err(_) => Task::Idle { next: offer },
    }
}

/// One task's answers to `items`: one each, a repeat within them `false`,
/// an item offered by no other task and in no other offer `true`.
fn check_answers(items: &[String], answers: &[bool], offered: &HashMap<&str, usize>, what: &str) {
    assert_eq!(
        answers.len(),
        items.len(),
        "{what}: {items:?} answered {answers:?}"
    );
    for (at, (item, &answer)) in items.iter().zip(answers).enumerate() {
        let repeat = items[..at].contains(item);
        assert!(
            !(repeat && answer),
            "{what}: a repeat of {item} answered new: {items:?} {answers:?}"
        );
        let alone = offered.get(item.as_str()) == Some(&1);
        assert!(
            !alone || answer,
            "{what}: {item}, offered once by this task alone, answered seen: {items:?} {answers:?}"
        );
    }
}

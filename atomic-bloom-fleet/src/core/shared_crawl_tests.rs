//! Many tasks of one frontier crawl a small web against the model of the
//! server, their calls sharing rounds (the group commit): pushes, pops and
//! checks of several tasks in one round, while the seed's schedule cancels
//! calls (queued, or while their round is under way), drops rounds with
//! their server, loses or cuts replies, and loses the scripts part-way
//! through a pipeline (NOSCRIPT). `FLEET_MODEL_SEEDS=N` runs N
//! seeds (40 by default).

use std::collections::VecDeque;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use super::call::{Io, Step};
use super::frontier::{Answer, FrontierCore, Leased, Push, Request};
use super::group::{Serve, Ticket, Turn};
use super::model::{disturbed, drive, drive_faulty, frontier, roll, Faults, Model};
use super::seeded_tests::Woken;
use super::tests::{config, script, Fake};
use crate::sync::Arc;

const PAGES: usize = 80;

fn url(page: usize) -> String {
    format!("https://w/{page}")
}

fn links(page: usize) -> Vec<usize> {
    vec![
        (page * 7 + 1) % PAGES,
        (page * 13 + 5) % PAGES,
        (page + 1) % PAGES,
    ]
}

fn page_of(url: &str) -> usize {
    url.rsplit('/')
        .next()
        .and_then(|page| page.parse().ok())
        .expect("a page's URL")
}

/// A call under way: what it asked, and its ticket.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Pop,
    Push,
    Check,
}

/// One crawling task.
#[derive(Default)]
struct Crawler<'t> {
    /// The page in hand, with the links it has yet to push.
    page: Option<(Leased, Vec<usize>)>,
    /// Its call under way.
    call: Option<(Kind, Ticket<'t, Request, Answer>)>,
    /// Its last pop found nothing: it checks the fleet next.
    idle: bool,
    /// It saw the fleet finished.
    finished: bool,
}

/// The tasks' calls share rounds while calls are cancelled, servers of
/// rounds dropped and replies lost: every page is crawled exactly once
/// (no process dies, no lease expires), a task sees the fleet finished
/// only once nothing is queued, leased or held, and every task sees it.
/// Only woken tasks look at their calls, and at every point between rounds
/// every waiting call was woken. With a replica to wait for (odd seeds),
/// every `WAIT` follows a write of its own pipeline's (the mark).
#[test]
fn seeded_tasks_sharing_rounds_crawl_each_page_once() {
    let seeds = std::env::var("FLEET_MODEL_SEEDS")
        .ok()
        .and_then(|seeds| seeds.parse().ok())
        .unwrap_or(40u64);
    let (mut shared, mut noscripts) = (0, 0);
    for seed in 0..seeds {
        let (rounds, lost) = shared_crawl(seed);
        shared += rounds;
        noscripts += lost;
    }
    assert!(seeds < 10 || shared > 0, "no round carried two calls");
    assert!(seeds < 10 || noscripts > 0, "no EVALSHA met lost scripts");
}

/// One seed's crawl; the rounds that carried calls of two tasks or more,
/// and the `NOSCRIPT` replies the server gave.
fn shared_crawl(seed: u64) -> (usize, usize) {
    let mut rng = super::Rng::new(seed ^ 0x6372_6177);
    let faults = Faults {
        drop_before: rng.draw() % 40,
        drop_after: rng.draw() % 40,
        lose_after: rng.draw() % 80,
        cut: rng.draw() % 60,
    };
    let cancel = rng.draw() % 60;
    let mut config = config()
        .batch_size(1 + (rng.draw() % 4) as usize)
        .pop_batch(1 + (rng.draw() % 6) as usize)
        .retry_for(Duration::from_millis(300));
    // Odd seeds wait for a replica: every pipeline of a round, shared or
    // sent again, writes a mark of its own before its WAIT.
    let waits = seed % 2 == 1;
    if waits {
        config = config.wait_for_replicas(1, Duration::from_millis(50));
    }
    let tasks = 2 + (rng.draw() % 5) as usize;
    // The server loses its scripts (a restart, a failover) now and then,
    // part-way through a shared pipeline: its EVALSHAs from there on answer
    // NOSCRIPT, running nothing, until the scripts are loaded again. A
    // generator of its own keeps the other draws of each seed as they were.
    let mut restarts = super::Rng::new(seed ^ 0x6e6f_7363);
    let restart = restarts.draw() % 80;
    let what = format!(
        "seed {seed} ({faults:?}, cancel {cancel}/1000, {tasks} tasks, scripts lost \
         {restart}/1000 rounds)"
    );
    let mut fake = Fake::new();
    let mut model = Model::default();
    let (core, mut wire) = frontier(&config, &mut fake, &mut model);
    let mut beat = core.client.beat_link().expect("a link");
    let Push::Slow(left) = core.push(url(0), fake.now) else {
        panic!("the first push marks the client busy");
    };
    drive(&mut fake, &mut model, core.push_slow(&mut wire, left)).expect("pushed");
    let wakers: Vec<Arc<Woken>> = (0..tasks).map(|_| Arc::default()).collect();
    let mut crawlers: Vec<Crawler<'_>> = (0..tasks).map(|_| Crawler::default()).collect();
    let mut crawled = vec![0usize; PAGES];
    let mut shared = 0;
    for steps in 0.. {
        assert!(steps < 200_000, "{what}: no end; crawled {crawled:?}");
        if crawlers.iter().all(|crawler| crawler.finished) {
            break;
        }
        for (task, crawler) in crawlers.iter().enumerate() {
            let woken = wakers[task].is_woken();
            assert!(
                crawler.call.is_none() || woken,
                "{what}: task {task} waits unwoken"
            );
        }
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
        let task = (rng.draw() % tasks as u64) as usize;
        if crawlers[task].finished {
            continue;
        }
        let Some((kind, mut ticket)) = crawlers[task].call.take() else {
            step(
                &core,
                &mut crawlers[task],
                &wakers[task],
                &mut crawled,
                (&mut rng, fake.now),
            );
            continue;
        };
        if roll(&mut rng, cancel) {
            cancelled(&mut crawlers[task], kind, ticket);
            continue;
        }
        wakers[task].take();
        let waker = Waker::from(Arc::clone(&wakers[task]));
        let mut round = match ticket.poll_turn(&mut Context::from_waker(&waker)) {
            Poll::Pending => {
                crawlers[task].call = Some((kind, ticket));
                continue;
            }
            Poll::Ready(Turn::Answered(answer)) => {
                answered(&mut crawlers, task, kind, answer, (&model, &what));
                continue;
            }
            Poll::Ready(Turn::Serve(round)) => round,
        };
        crawlers[task].call = Some((kind, ticket));
        let requests = round.take_requests();
        shared += usize::from(requests.len() > 1);
        let served = {
            let mut call = core.serve(&mut wire, requests);
            loop {
                // Others cancel their calls meanwhile, or look at them.
                let other = (rng.draw() % tasks as u64) as usize;
                if other != task {
                    if let Some((kind, ticket)) = crawlers[other].call.take() {
                        match roll(&mut rng, cancel * 4) {
                            true => cancelled(&mut crawlers[other], kind, ticket),
                            false => crawlers[other].call = Some((kind, ticket)),
                        }
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
                if roll(&mut restarts, restart) {
                    model.lose_scripts_in = Some((restarts.draw() % 8) as usize);
                }
                call.answer(disturbed(&mut model, &mut rng, faults, &pipelines));
            }
        };
        match served {
            Some(answers) => {
                round.finish(answers);
                // A server looks at its own call again at once.
                wakers[task].wake_by_ref();
            }
            None => {
                drop(round);
                if let Some((kind, ticket)) = crawlers[task].call.take() {
                    cancelled(&mut crawlers[task], kind, ticket);
                }
            }
        }
    }
    let ran = &model.ran;
    let waited = (1..ran.len()).filter(|&at| ran[at][0] == "WAIT").count();
    assert!(!waits || waited > 0, "{what}: no WAIT");
    for at in (1..ran.len()).filter(|&at| ran[at][0] == "WAIT") {
        assert_eq!(
            script(&ran[at - 1]),
            "mark",
            "{what}: before a WAIT: {:?}",
            ran[at - 1]
        );
    }
    let missed: Vec<usize> = (0..PAGES).filter(|&page| crawled[page] == 0).collect();
    let twice: Vec<usize> = (0..PAGES).filter(|&page| crawled[page] > 1).collect();
    assert!(
        missed.is_empty() && twice.is_empty(),
        "{what}: never crawled {missed:?}, crawled twice {twice:?}"
    );
    (shared, model.noscripts)
}

/// The next thing a task with no call under way does: push a link of its
/// page, complete (or give back) the page, pop, or check the fleet.
fn step<'t>(
    core: &'t Arc<FrontierCore>,
    crawler: &mut Crawler<'t>,
    waker: &Arc<Woken>,
    crawled: &mut [usize],
    (rng, now): (&mut super::Rng, std::time::Instant),
) {
    let asked = match crawler.page.take() {
        Some((page, mut todo)) => match todo.last() {
            Some(&link) => match core.push(url(link), now) {
                Push::Answered(_) => {
                    todo.pop();
                    crawler.page = Some((page, todo));
                    None
                }
                Push::Slow(left) => {
                    crawler.page = Some((page, todo));
                    Some((Kind::Push, Request::Push(left)))
                }
            },
            // A worker that gave up on it gives it back.
            None if rng.draw().is_multiple_of(10) => {
                drop(page);
                None
            }
            None => {
                crawled[page_of(page.url())] += 1;
                core.complete(page);
                None
            }
        },
        None => match core.pop_buffered() {
            Some(page) => {
                let todo = links(page_of(page.url()));
                crawler.page = Some((page, todo));
                None
            }
            None if crawler.idle => Some((Kind::Check, Request::IsFinished)),
            None => Some((Kind::Pop, Request::Pop)),
        },
    };
    if let Some((kind, request)) = asked {
        waker.wake_by_ref();
        crawler.call = Some((kind, core.ask(request)));
    }
}

/// A task's call cancelled: a push's URL is the client's to send (it was
/// buffered, or sent with its round), a pop or a check is made again.
fn cancelled(crawler: &mut Crawler<'_>, kind: Kind, ticket: Ticket<'_, Request, Answer>) {
    drop(ticket);
    if kind == Kind::Push {
        if let Some((_, todo)) = &mut crawler.page {
            todo.pop();
        }
    }
}

/// A task's call answered.
fn answered(
    crawlers: &mut [Crawler<'_>],
    task: usize,
    kind: Kind,
    answer: Answer,
    (model, what): (&Model, &str),
) {
    let held = crawlers
        .iter()
        .filter(|crawler| crawler.page.is_some())
        .count();
    let crawler = &mut crawlers[task];
    match kind {
        Kind::Push => {
            // An error did not take the URL: pushed again.
            if answer.pushed().is_ok() {
                if let Some((_, todo)) = &mut crawler.page {
                    todo.pop();
                }
            }
        }
        Kind::Pop => match answer.popped() {
            Ok(Some(page)) => {
                let todo = links(page_of(page.url()));
                crawler.page = Some((page, todo));
                crawler.idle = false;
            }
            Ok(None) => crawler.idle = true,
            Err(_) => {}
        },
        Kind::Check => match answer.finished() {
            Ok(true) => {
                let queued: usize = model.queues.values().map(VecDeque::len).sum();
                assert!(
                    queued == 0 && model.leases.is_empty() && held == 0,
                    "{what}: finished with {queued} queued, {} leases, {held} pages in hand",
                    model.leases.len(),
                );
                crawler.finished = true;
            }
            Ok(false) => crawler.idle = false,
            Err(_) => {}
        },
    }
}

//! What a shared round leaves to the tasks whose requests it carried, at
//! the points where one task's leaving meets another task's round: an
//! answer dropped while a later round reads and clears the seen-set's
//! book, a push refused in a round that its server dropped, a push whose
//! task left while its round refused it.

use std::task::{Context, Poll, Waker};

use super::call::{Io, Step};
use super::frontier::{Push, Request};
use super::group::{Again, Group, Retry, Serve, Turn};
use super::model::{drive, frontier, seen_client, Model};
use super::tests::{commands, config, script, Fake};
use crate::sync::{Arc, AtomicU64, Mutex, Ordering};

/// A task that leaves before taking its answer leaves it to the book even
/// while a later round, which read the book before, is under way: the
/// item stays new for the caller who offers it again. Here `x` was new for
/// task A and seen for task C in one round; C left first (its `false` in
/// the book), then B's round answered B's `x` from the book, and A left
/// while B's round waited for its pipeline (A's `true` joined the book).
/// Before, B's round, once answered, cleared `x` from the book, A's `true`
/// with it: offered again, `x` was answered seen, never new for anyone.
#[test]
fn an_answer_left_during_a_later_round_stays_new_for_the_next_caller() {
    let config = config();
    let mut fake = Fake::new();
    let mut model = Model::default();
    let (seen, mut wire) = seen_client(&config, &mut fake, &mut model);
    let mut context = Context::from_waker(Waker::noop());
    let x = ["x"];
    let mut a = seen.offer(&x);
    let c = seen.offer(&x);
    let Poll::Ready(Turn::Serve(mut round)) = a.poll_turn(&mut context) else {
        panic!("the first ticket serves");
    };
    let requests = round.take_requests();
    assert_eq!(requests.len(), 2, "A and C share the round");
    let answers = drive(&mut fake, &mut model, seen.serve(&mut wire, requests));
    round.finish(answers);
    // C leaves with its answer untaken: `x` seen, to the book.
    drop(c);
    let xy = ["x", "y"];
    let mut b = seen.offer(&xy);
    let Poll::Ready(Turn::Serve(mut round)) = b.poll_turn(&mut context) else {
        panic!("B serves the next round");
    };
    let mut call = seen.serve(&mut wire, round.take_requests());
    let Step::Io(Io::Round(pipelines)) = call.step(fake.now) else {
        panic!("B's `y` goes to the server");
    };
    // A leaves while B's round waits: `x` new, to the book.
    drop(a);
    call.answer(pipelines.iter().map(|p| model.answer(p)).collect());
    let answers = drive(&mut fake, &mut model, call);
    round.finish(answers);
    let Poll::Ready(Turn::Answered(answer)) = b.poll_turn(&mut context) else {
        panic!("B's round answered B");
    };
    assert_eq!(answer.take(), Ok(vec![false, true]), "B: x seen, y new");
    drop(b);
    // A's caller offers `x` again: A's answer, which it never took.
    let again = drive(
        &mut fake,
        &mut model,
        super::seen::insert_many(&seen, &mut wire, &x),
    );
    assert_eq!(
        again,
        Ok(vec![true]),
        "x was new for A, which never took it"
    );
}

/// A frontier client whose shard's room is held by a batch the server
/// refuses for now (one item a shard), and a URL of that shard that a push
/// cannot buffer: its push goes through a round.
fn full_shard(
    fake: &mut Fake,
    model: &mut Model,
) -> (
    Arc<super::frontier::FrontierCore>,
    super::wire::Wire,
    String,
    super::frontier::PushLeft,
) {
    let config = config().batch_size(1).max_buffered(1);
    let (core, mut wire) = frontier(&config, fake, model);
    let mut urls = (0..).map(|n| format!("https://example.com/{n}"));
    let first = urls.next().expect("a URL");
    let shard = core.client.shard_of(&first);
    let Push::Slow(left) = core.push(first, fake.now) else {
        panic!("the first push marks the client busy");
    };
    model.refuse_offers = true;
    let pushed = drive(fake, model, core.push_slow(&mut wire, left));
    assert!(pushed.is_err(), "{pushed:?}");
    let url = (urls.by_ref())
        .find(|url| core.client.shard_of(url) == shard)
        .expect("another URL of the shard");
    let Push::Slow(left) = core.push(url.clone(), fake.now) else {
        panic!("a full shard's push goes through the wire");
    };
    (core, wire, url, left)
}

/// A push refused in a shared round (its shard full and unable to send)
/// whose server is then dropped (its task cancelled, after the push was
/// answered and before the round ended) keeps its URL: the push's caller,
/// told to ask again, is answered that its URL is on its way, so it must
/// be. Before, the refused URL was in no buffer while the push answered
/// `Ok(true)`: lost.
#[test]
fn a_push_refused_in_a_round_whose_server_left_keeps_its_url() {
    let mut fake = Fake::new();
    let mut model = Model::default();
    let (core, mut wire, url, left) = full_shard(&mut fake, &mut model);
    let mut context = Context::from_waker(Waker::noop());
    let mut push = core.ask(Request::Push(left));
    let mut pop = core.ask(Request::Pop);
    let Poll::Ready(Turn::Serve(mut round)) = pop.poll_turn(&mut context) else {
        panic!("the pop serves");
    };
    let mut call = core.serve(&mut wire, round.take_requests());
    // The round runs to its take (the push refused by then), and its
    // server's task is cancelled there.
    loop {
        match call.step(fake.now) {
            Step::Done(answers) => panic!("the round ended before its take: {answers:?}"),
            Step::Io(Io::Sleep(until)) => {
                fake.now = fake.now.max(until);
                call.answer(Vec::new());
            }
            Step::Io(Io::Round(pipelines)) => {
                let takes = (pipelines.iter())
                    .flat_map(|pipeline| commands(&pipeline.bytes))
                    .any(|command| script(&command) == "take");
                if takes {
                    break;
                }
                call.answer(pipelines.iter().map(|p| model.answer(p)).collect());
            }
        }
    }
    drop(call);
    drop(round);
    drop(pop);
    let Poll::Ready(Turn::Answered(answer)) = push.poll_turn(&mut context) else {
        panic!("the push asks again: its round was dropped");
    };
    let pushed = answer.pushed();
    drop(push);
    model.refuse_offers = false;
    drive(&mut fake, &mut model, core.flush(&mut wire)).expect("flushed");
    if pushed.is_ok() {
        assert!(
            model.queued(&url),
            "the push answered {pushed:?}, and {url} never reached a queue"
        );
    }
}

/// A push whose task left while its request rode in another task's round,
/// which refused it (its shard full and unable to send), keeps its URL, as
/// a push dropped before it returns does: a later call sends it. Before,
/// the refusal, unclaimed, was dropped, and the URL with it.
#[test]
fn a_push_whose_task_left_while_its_round_refused_it_keeps_its_url() {
    let mut fake = Fake::new();
    let mut model = Model::default();
    let (core, mut wire, url, left) = full_shard(&mut fake, &mut model);
    let mut context = Context::from_waker(Waker::noop());
    let push = core.ask(Request::Push(left));
    let mut flush = core.ask(Request::Flush);
    let Poll::Ready(Turn::Serve(mut round)) = flush.poll_turn(&mut context) else {
        panic!("the flush serves");
    };
    let requests = round.take_requests();
    assert_eq!(requests.len(), 2, "the push and the flush share the round");
    // The push's task is cancelled while its request is in the round.
    drop(push);
    let answers = drive(&mut fake, &mut model, core.serve(&mut wire, requests));
    round.finish(answers);
    let Poll::Ready(Turn::Answered(answer)) = flush.poll_turn(&mut context) else {
        panic!("the flush was answered");
    };
    assert!(answer.flushed().is_err(), "the shard refused its batches");
    drop(flush);
    model.refuse_offers = false;
    drive(&mut fake, &mut model, core.flush(&mut wire)).expect("flushed");
    assert!(
        model.queued(&url),
        "{url}, pushed by a task that left, never reached a queue"
    );
}

/// An answer whose drop waits for `gate` (as a push's refusal waits for its
/// shard's buffer), saying first that it began.
struct Gated {
    gate: Arc<Mutex<()>>,
    dropping: Arc<AtomicU64>,
}

impl Drop for Gated {
    fn drop(&mut self) {
        // SeqCst: the test's thread polls this flag while this thread waits
        // for the gate; one flag, read after it is set, orders enough.
        self.dropping.store(1, Ordering::SeqCst);
        drop(self.gate.lock());
    }
}

/// What a round's callers that left leave behind is in place before the
/// next round starts: a round finishing drops their answers while it is
/// still under way. A push's refusal, unclaimed, buffers its URL as it
/// drops; a check of the fleet in the next round must see it. Before, the
/// next round could start (and its check look at the buffers) while the
/// last round's unclaimed answers were still being dropped.
#[test]
fn the_next_round_waits_for_what_callers_that_left_leave_behind() {
    let group: Group<(), Gated> = Group::new(8);
    let again = || -> Again<'_, (), Gated> { Box::new(|| Retry::Ask((), 1)) };
    let mut context = Context::from_waker(Waker::noop());
    let mut server = group.submit((), 1, again());
    let left = group.submit((), 1, again());
    let Poll::Ready(Turn::Serve(mut round)) = server.poll_turn(&mut context) else {
        panic!("the first ticket serves");
    };
    assert_eq!(round.take_requests().len(), 2);
    // The second caller leaves while its request is in the round.
    drop(left);
    let gate = Arc::new(Mutex::new(()));
    let dropping = Arc::new(AtomicU64::new(0));
    let answers = (0..2)
        .map(|_| Gated {
            gate: Arc::clone(&gate),
            dropping: Arc::clone(&dropping),
        })
        .collect();
    let held = gate.lock().expect("the gate");
    let turn_meanwhile = std::thread::scope(|scope| {
        let finishing = scope.spawn(|| round.finish(answers));
        // SeqCst: see `Gated`.
        while dropping.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        // The unclaimed answer is being dropped: a caller that looks now.
        let mut next = group.submit((), 1, again());
        let turn = format!("{:?}", next.poll_turn(&mut context));
        drop(held);
        finishing.join().expect("finished");
        drop(next);
        turn
    });
    assert_eq!(
        turn_meanwhile, "Pending",
        "a round started while the last one's unclaimed answers were still being dropped"
    );
    let Poll::Ready(Turn::Answered(_)) = server.poll_turn(&mut context) else {
        panic!("the server's own answer");
    };
}

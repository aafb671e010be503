//! How a client's commands reach the server: with what rides on the next
//! pipeline in front (answers acknowledged, leases ended, URLs given
//! back), each command retried until `retry_for` runs out, and what the
//! replies to the riders mean.

use std::time::Duration;

use redis::Value;

use super::client::{add, Client};
use super::failure::Failure;
use super::wire::{Piggyback, ShardCommand, Wire};
use super::{lock, scripts, Rng};
use crate::Error;

/// Commands carried in front of a pipeline, at most.
const PIGGYBACK_PER_PIPELINE: usize = 512;

/// The first pause between two tries; it doubles up to `MAX_PAUSE`, and
/// each sleep is a random part of it between a half and all, so that a
/// fleet that lost its server does not come back in lockstep.
const FIRST_PAUSE: Duration = Duration::from_millis(20);
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// A sleep between `pause / 2` and `pause`.
fn jittered(pause: Duration, rng: &mut Rng) -> Duration {
    let fraction = (rng.draw() >> 11) as f64 / (1u64 << 53) as f64;
    pause.mul_f64(0.5 + fraction / 2.0)
}

impl Client {
    /// The commands that carry a piggyback entry.
    fn piggyback_commands(&self, entry: &Piggyback) -> Vec<ShardCommand> {
        match entry {
            Piggyback::Acknowledge { shard, key } => {
                let mut unlink = redis::cmd("UNLINK");
                unlink.arg(key);
                vec![(*shard, key.clone(), unlink)]
            }
            Piggyback::Complete { shard, token } => {
                let keys = &self.keys[*shard];
                (scripts::complete(keys, token).into_iter())
                    .map(|command| (*shard, keys.leases.clone(), command))
                    .collect()
            }
            Piggyback::Release { shard, token, url } => {
                let keys = &self.keys[*shard];
                let command = scripts::release(keys, token, url);
                vec![(*shard, keys.inflight.clone(), command)]
            }
        }
    }

    /// Runs `commands`, with what rides on the next pipeline in front, and
    /// returns each command's own outcome. Commands that fail in a way a
    /// new try may mend are sent again, alone, until `retry_for` runs out:
    /// at once after a stale map (mapped again first), after a jittered
    /// pause that doubles otherwise. A refusal is final at once.
    pub(super) async fn execute(
        &self,
        wire: &mut Wire,
        commands: &[ShardCommand],
    ) -> Vec<Result<Value, Error>> {
        self.execute_carrying(wire, commands, true).await
    }

    /// [`execute`](Self::execute), with what rides on the next pipeline in
    /// front only if `carry`.
    pub(super) async fn execute_carrying(
        &self,
        wire: &mut Wire,
        commands: &[ShardCommand],
        carry: bool,
    ) -> Vec<Result<Value, Error>> {
        let deadline = wire.now() + self.config.retry_for;
        let mut pause = FIRST_PAUSE;
        let mut immediate_tries = 0;
        let mut outcomes: Vec<Option<Result<Value, Error>>> =
            (0..commands.len()).map(|_| None).collect();
        let mut waiting: Vec<usize> = (0..commands.len()).collect();
        loop {
            let carried = if carry {
                wire.piggyback.len().min(PIGGYBACK_PER_PIPELINE)
            } else {
                0
            };
            let mut pipeline: Vec<ShardCommand> = Vec::new();
            let mut carriers = Vec::with_capacity(carried);
            for entry in &wire.piggyback[..carried] {
                let entry_commands = self.piggyback_commands(entry);
                carriers.push(entry_commands.len());
                pipeline.extend(entry_commands);
            }
            let in_front = pipeline.len();
            pipeline.extend(waiting.iter().map(|&at| commands[at].clone()));
            add(&self.counters.round_trips, 1);
            let mut results = wire.link.send(&pipeline).await.into_iter();
            // A piggyback entry is done once all its commands are (a refused
            // one is dropped: it would be refused again).
            let mut kept = Vec::new();
            let mut ended = Vec::new();
            let mut failures: Vec<Failure> = Vec::new();
            for (entry, count) in wire.piggyback.drain(..carried).zip(carriers) {
                let mut retry = false;
                let mut refused = false;
                let mut out_of_memory = false;
                for result in results.by_ref().take(count) {
                    if let Err(failure) = result {
                        if failure.is_out_of_memory() {
                            out_of_memory = true;
                        } else if matches!(failure, Failure::Refused(_)) {
                            refused = true;
                        } else {
                            retry = true;
                            failures.push(failure);
                        }
                    }
                }
                match entry {
                    entry if retry => kept.push(entry),
                    // A give-back refused for want of memory is sent again
                    // with a later pipeline, its lease kept and renewed
                    // meanwhile (dropping the lease would send every URL of
                    // its take, finished or in hand, back to the queue).
                    entry @ Piggyback::Release { .. } if out_of_memory => {
                        log::warn!(
                            "atomic-bloom fleet: the server is out of memory: a dropped URL \
                             is given back once it has room"
                        );
                        kept.push(entry);
                    }
                    Piggyback::Complete { shard, token } => {
                        lock(&self.leases).remove(&(shard, token));
                    }
                    // A URL given back counts as done for its lease; one the
                    // server refused to give back stays leased, so the lease
                    // is no longer renewed: it ends, and its URLs go back.
                    Piggyback::Release { shard, token, .. } if refused => {
                        log::warn!(
                            "atomic-bloom fleet: a dropped URL could not be given back; its \
                             take goes back on the queue when its lease ends"
                        );
                        lock(&self.leases).remove(&(shard, token));
                    }
                    Piggyback::Release { shard, token, .. } => {
                        ended.extend(self.count_done(shard, token, 1));
                    }
                    Piggyback::Acknowledge { .. } => {}
                }
            }
            wire.piggyback.splice(0..0, kept);
            wire.piggyback.extend(ended);
            debug_assert_eq!(results.len(), pipeline.len() - in_front);
            let mut still = Vec::new();
            for (at, result) in waiting.into_iter().zip(results) {
                match result {
                    Ok(value) => outcomes[at] = Some(Ok(value)),
                    Err(Failure::Refused(error)) => outcomes[at] = Some(Err(error)),
                    Err(failure) => {
                        still.push((at, failure.clone()));
                        failures.push(failure);
                    }
                }
            }
            if still.is_empty() {
                break;
            }
            add(&self.counters.retries, 1);
            if failures.iter().any(Failure::needs_map) {
                wire.link.map_again().await;
            }
            // A stale map is sent again at once, twice at most in a row: a
            // map that does not settle gets the pauses too.
            let only_stale = failures.iter().all(Failure::is_stale) && immediate_tries < 2;
            immediate_tries = if only_stale { immediate_tries + 1 } else { 0 };
            let first = failures.swap_remove(0).into_error();
            if wire.now() + pause > deadline {
                log::warn!("atomic-bloom fleet: {first}; giving up for now");
                for (at, failure) in still {
                    outcomes[at] = Some(Err(failure.into_error()));
                }
                break;
            }
            if only_stale {
                log::debug!("atomic-bloom fleet: {first}; mapped again, sending again");
            } else {
                log::warn!("atomic-bloom fleet: {first}; trying again in {pause:?}");
                let until = wire.now() + jittered(pause, &mut wire.rng);
                wire.link.port.sleep_until(until).await;
                pause = (pause * 2).min(MAX_PAUSE);
            }
            waiting = still.into_iter().map(|(at, _)| at).collect();
        }
        outcomes
            .into_iter()
            .map(|outcome| outcome.expect("every command has an outcome"))
            .collect()
    }

    /// Runs `commands` as [`execute`](Self::execute) does, and answers all
    /// their replies, or the first error.
    pub(super) async fn run(
        &self,
        wire: &mut Wire,
        commands: &[ShardCommand],
    ) -> Result<Vec<Value>, Error> {
        self.execute(wire, commands).await.into_iter().collect()
    }

    /// Sends what waits to ride on a pipeline, if anything does, in a
    /// pipeline of its own.
    pub(crate) async fn send_piggyback(&self, wire: &mut Wire) {
        if !wire.piggyback.is_empty() {
            self.execute(wire, &[]).await;
        }
    }

    /// Sends what waits to ride on a pipeline beyond what the next one
    /// carries (a call of more than that many batches leaves as many
    /// acknowledgements): otherwise each such call would add more than the
    /// next one takes, and they would pile up on both sides. Called before
    /// a call's batches go, never after their answers came back.
    pub(super) async fn send_excess_piggyback(&self, wire: &mut Wire) {
        let mut rounds = wire.piggyback.len() / PIGGYBACK_PER_PIPELINE;
        while rounds > 0 && wire.piggyback.len() > PIGGYBACK_PER_PIPELINE {
            self.execute(wire, &[]).await;
            rounds -= 1;
        }
    }

    /// Counts `done` more URLs of `shard`'s lease `token` as done; once
    /// all are, the lease's end rides on `wire`'s next pipeline.
    pub(crate) fn complete(&self, wire: &mut Wire, shard: usize, token: String, done: usize) {
        wire.piggyback.extend(self.count_done(shard, token, done));
    }

    /// Gives a URL of `shard`'s lease `token`, dropped without being
    /// completed, back to the queue with `wire`'s next pipeline; once the
    /// server has it, it counts as done for the lease.
    pub(crate) fn release(&self, wire: &mut Wire, shard: usize, token: String, url: String) {
        wire.piggyback
            .push(Piggyback::Release { shard, token, url });
    }

    /// Counts `done` more URLs of a lease as done: its end, once all are.
    fn count_done(&self, shard: usize, token: String, done: usize) -> Option<Piggyback> {
        let mut leases = lock(&self.leases);
        let left = leases.get_mut(&(shard, token.clone()))?;
        *left = left.saturating_sub(done);
        (*left == 0).then_some(Piggyback::Complete { shard, token })
    }
}

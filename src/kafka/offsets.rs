//! Which offsets a consumer may commit.
//!
//! The batches of one partition leave the consumer in offset order and come
//! back in any order: workers run side by side, and a batch is back only
//! once its results are written (and, with a results topic, confirmed by
//! the broker). A Kafka commit is one number per partition meaning "every
//! message before this one is done", so a partition's commit advances only
//! over the run of done batches from its oldest: one batch still out holds
//! back every later one, however many of those are done. A batch whose
//! results could not be written blocks its partition for good: the run
//! stops, and the next owner of the partition starts at that batch.

use std::collections::{BTreeMap, VecDeque};

/// Where one batch is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Out,
    Done,
    Failed,
}

/// One batch out: its ticket and the offset after its last message.
#[derive(Debug)]
struct Span {
    ticket: u64,
    end: i64,
    state: State,
}

/// One partition's batches out, oldest first, and its commit positions.
#[derive(Debug, Default)]
struct Lane {
    out: VecDeque<Span>,
    /// The end of the done run: every message before it is done.
    done_to: Option<i64>,
    /// The offset last sent in a commit.
    sent: Option<i64>,
    /// A batch failed: the done run ends before it for good.
    blocked: bool,
}

impl Lane {
    /// Moves the done run over the done batches at the front.
    fn advance(&mut self) {
        while let Some(front) = self.out.front() {
            match front.state {
                State::Done => {
                    self.done_to = Some(front.end);
                    self.out.pop_front();
                }
                State::Failed => {
                    self.blocked = true;
                    return;
                }
                State::Out => return,
            }
        }
    }

    fn in_flight(&self) -> usize {
        self.out.iter().filter(|s| s.state == State::Out).count()
    }
}

/// The commit positions of the partitions a consumer owns.
#[derive(Debug, Default)]
pub(crate) struct Offsets {
    lanes: BTreeMap<i32, Lane>,
    next_ticket: u64,
}

impl Offsets {
    /// A partition was assigned (again): a fresh lane, unless one is kept.
    pub(crate) fn assign(&mut self, partition: i32) {
        self.lanes.entry(partition).or_default();
    }

    /// A partition was revoked: its lane is dropped (whatever it still
    /// holds is the next owner's to do).
    pub(crate) fn revoke(&mut self, partition: i32) {
        self.lanes.remove(&partition);
    }

    /// A batch of `partition` whose last message is `end - 1` leaves; its
    /// ticket comes back with it.
    pub(crate) fn dispatch(&mut self, partition: i32, end: i64) -> u64 {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.lanes
            .entry(partition)
            .or_default()
            .out
            .push_back(Span {
                ticket,
                end,
                state: State::Out,
            });
        ticket
    }

    /// The batch with `ticket` is back: done (`ok`) or not. A ticket of a
    /// partition no longer owned is ignored.
    pub(crate) fn finish(&mut self, partition: i32, ticket: u64, ok: bool) {
        let Some(lane) = self.lanes.get_mut(&partition) else {
            return;
        };
        // Tickets only grow, and a lane holds them in dispatch order.
        if let Ok(i) = lane.out.binary_search_by_key(&ticket, |s| s.ticket) {
            lane.out[i].state = if ok { State::Done } else { State::Failed };
            lane.advance();
        }
    }

    /// Batches of `partition` still out.
    pub(crate) fn in_flight(&self, partition: i32) -> usize {
        self.lanes.get(&partition).map_or(0, Lane::in_flight)
    }

    /// Batches still out, all partitions.
    pub(crate) fn total_in_flight(&self) -> usize {
        self.lanes.values().map(Lane::in_flight).sum()
    }

    /// The offset `partition` may be committed at, if any message is done.
    pub(crate) fn committable(&self, partition: i32) -> Option<i64> {
        self.lanes.get(&partition).and_then(|l| l.done_to)
    }

    /// Whether a batch of `partition` failed.
    #[cfg(test)]
    fn blocked(&self, partition: i32) -> bool {
        self.lanes.get(&partition).is_some_and(|l| l.blocked)
    }

    /// The partitions whose done run moved since their last commit, and
    /// where to. [`Offsets::sent`] records a commit of them.
    pub(crate) fn due(&self) -> Vec<(i32, i64)> {
        self.lanes
            .iter()
            .filter_map(|(&p, l)| match l.done_to {
                Some(o) if l.sent != Some(o) => Some((p, o)),
                _ => None,
            })
            .collect()
    }

    /// Every owned partition with a done run, for a final commit.
    pub(crate) fn all(&self) -> Vec<(i32, i64)> {
        self.lanes
            .iter()
            .filter_map(|(&p, l)| l.done_to.map(|o| (p, o)))
            .collect()
    }

    /// A commit of `offset` for `partition` was sent.
    pub(crate) fn sent(&mut self, partition: i32, offset: i64) {
        if let Some(l) = self.lanes.get_mut(&partition) {
            l.sent = Some(offset);
        }
    }

    /// A commit of `offset` for `partition` failed: it is due again.
    pub(crate) fn unsent(&mut self, partition: i32, offset: i64) {
        if let Some(l) = self.lanes.get_mut(&partition) {
            if l.sent == Some(offset) {
                l.sent = None;
            }
        }
    }

    /// The owned partitions.
    #[cfg(test)]
    fn partitions(&self) -> impl Iterator<Item = i32> + '_ {
        self.lanes.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_only_the_run_of_done_batches_from_the_oldest() {
        let mut o = Offsets::default();
        o.assign(0);
        let a = o.dispatch(0, 10);
        let b = o.dispatch(0, 20);
        let c = o.dispatch(0, 35);
        assert_eq!(o.in_flight(0), 3);
        o.finish(0, c, true);
        assert_eq!(
            o.committable(0),
            None,
            "the oldest batch holds back the others"
        );
        assert!(o.due().is_empty());
        o.finish(0, a, true);
        assert_eq!(o.committable(0), Some(10));
        assert_eq!(o.due(), vec![(0, 10)]);
        o.sent(0, 10);
        assert!(o.due().is_empty());
        o.finish(0, b, true);
        assert_eq!(o.committable(0), Some(35), "b done releases c");
        assert_eq!(o.due(), vec![(0, 35)]);
        assert_eq!(o.in_flight(0), 0);
    }

    #[test]
    fn partitions_advance_apart() {
        let mut o = Offsets::default();
        let a0 = o.dispatch(0, 5);
        let a1 = o.dispatch(1, 7);
        let b1 = o.dispatch(1, 9);
        o.finish(1, b1, true);
        o.finish(0, a0, true);
        assert_eq!(o.due(), vec![(0, 5)]);
        assert_eq!(o.total_in_flight(), 1);
        o.finish(1, a1, true);
        assert_eq!(o.due(), vec![(0, 5), (1, 9)]);
    }

    #[test]
    fn a_failed_batch_blocks_its_partition_for_good() {
        let mut o = Offsets::default();
        let a = o.dispatch(3, 10);
        let b = o.dispatch(3, 20);
        let c = o.dispatch(3, 30);
        o.finish(3, a, true);
        o.finish(3, b, false);
        o.finish(3, c, true);
        assert_eq!(o.committable(3), Some(10));
        assert!(o.blocked(3));
        assert_eq!(o.in_flight(3), 0, "nothing is out: a stop may proceed");
    }

    #[test]
    fn a_failed_commit_is_due_again_and_revoked_lanes_are_gone() {
        let mut o = Offsets::default();
        let a = o.dispatch(2, 4);
        o.finish(2, a, true);
        o.sent(2, 4);
        assert!(o.due().is_empty());
        o.unsent(2, 3);
        assert!(
            o.due().is_empty(),
            "an older failure does not undo a newer commit"
        );
        o.unsent(2, 4);
        assert_eq!(o.due(), vec![(2, 4)]);
        assert_eq!(o.all(), vec![(2, 4)]);
        o.revoke(2);
        assert!(o.all().is_empty());
        // A late batch of a revoked partition changes nothing.
        o.finish(2, a, true);
        assert_eq!(o.committable(2), None);
        assert_eq!(o.partitions().count(), 0);
    }
}

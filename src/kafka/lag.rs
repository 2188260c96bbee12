//! The group's lag over every partition of the topic, whoever owns them.
//!
//! A member's own lag series ([`super::meters`]) cover the partitions it
//! owns: while the group rebalances (a member restarted within the dead
//! one's session) every member owns nothing, no lag series exists, and a
//! sum of them reads 0 however much waits. So each member also asks the
//! group coordinator for the group's committed offsets and the brokers for
//! the high watermarks of all the topic's partitions, with a client of its
//! own that does not join the group (the consumer loop never blocks on
//! it), and publishes the total and the partition count: every member
//! publishes the same numbers, and an alert compares the partitions the
//! members own with the topic's (docs/kafka.md, contrib/prometheus).

use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

use super::client::Client;
use super::meters::Meters;

/// How often the group's lag is asked for: a few small requests each
/// time, against the statistics' one second of the member's own lag.
const EVERY: Duration = Duration::from_secs(2);
/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Publishes the group's lag into `meters` every [`EVERY`] until
/// `halted`. A round that fails (the brokers away) keeps the last values.
pub(crate) fn watch(
    client: &Client,
    topic: &str,
    group: &str,
    meters: &Meters,
    halted: &(dyn Fn() -> bool + Sync),
) {
    let consumer: BaseConsumer = match client.consumer(group).and_then(|c| {
        c.create()
            .map_err(|e| format!("kafka: the lag client: {e}"))
    }) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("edgeguard: {e}: edgeguard_replay_group_lag is not published");
            return;
        }
    };
    let mut last = None;
    while !halted() {
        if last.is_none_or(|t: Instant| t.elapsed() >= EVERY) {
            last = Some(Instant::now());
            if let Ok((partitions, lag)) = group_lag(&consumer, topic) {
                meters.group_observed(partitions, lag);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The topic's partition count, and the messages past the group's commits
/// in all of them.
fn group_lag(consumer: &BaseConsumer, topic: &str) -> Result<(usize, i64), String> {
    let metadata = consumer
        .fetch_metadata(Some(topic), TIMEOUT)
        .map_err(|e| e.to_string())?;
    let Some(t) = metadata.topics().iter().find(|t| t.name() == topic) else {
        return Err(format!("no topic {topic}"));
    };
    let partitions: Vec<i32> = t.partitions().iter().map(|p| p.id()).collect();
    if partitions.is_empty() {
        return Err(format!("no partitions in {topic}"));
    }
    let mut tpl = TopicPartitionList::new();
    for &p in &partitions {
        tpl.add_partition(topic, p);
    }
    let committed = consumer
        .committed_offsets(tpl, TIMEOUT)
        .map_err(|e| e.to_string())?;
    let mut lag = 0;
    for &p in &partitions {
        let (low, high) = consumer
            .fetch_watermarks(topic, p, TIMEOUT)
            .map_err(|e| e.to_string())?;
        let done = match committed.find_partition(topic, p).map(|e| e.offset()) {
            Some(Offset::Offset(o)) => Some(o),
            _ => None,
        };
        lag += lag_of(low, high, done);
    }
    Ok((partitions.len(), lag))
}

/// One partition's lag: its high watermark past the group's commit, or,
/// with nothing committed, past its low watermark (a new group starts at
/// the earliest message: `auto.offset.reset=earliest`).
fn lag_of(low: i64, high: i64, committed: Option<i64>) -> i64 {
    (high - committed.unwrap_or(low).max(low)).max(0)
}

#[cfg(test)]
mod tests {
    use super::lag_of;

    #[test]
    fn lag_counts_from_the_commit_or_the_first_message_kept() {
        assert_eq!(lag_of(0, 100, Some(40)), 60);
        assert_eq!(lag_of(0, 100, None), 100);
        assert_eq!(lag_of(30, 100, None), 70, "deleted messages are not owed");
        assert_eq!(
            lag_of(30, 100, Some(10)),
            70,
            "a commit before the log's start"
        );
        assert_eq!(lag_of(0, 100, Some(100)), 0);
        assert_eq!(lag_of(0, 5, Some(9)), 0, "never negative");
    }
}

//! The librdkafka configuration of edgeguard's Kafka clients: the brokers,
//! the user's `-X` properties, and the defaults and fixed settings the
//! consumer and producers need.
//!
//! A `-X` property reaches every client, unless it is prefixed: `-X
//! consumer.KEY=VALUE` reaches only the consumer, `-X producer.KEY=VALUE`
//! only the producers (results, dead letters, `ship`), as Kafka Connect
//! spells it (no librdkafka property starts with either word). librdkafka
//! warns (`CONFWARN`) about a consumer property set on a producer and the
//! reverse, and a size limit must differ between them at times.

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::ClientConfig;

/// Consumer properties edgeguard sets itself and a `-X` may not change:
/// offsets are committed by the consumer when results are written (never
/// automatically), and the end of a partition is reported (`--exit-at-end`).
const CONSUMER_FIXED: [(&str, &str); 3] = [
    ("enable.auto.commit", "false"),
    ("enable.auto.offset.store", "false"),
    ("enable.partition.eof", "true"),
];

/// Consumer defaults a `-X` may change.
const CONSUMER_DEFAULTS: [(&str, &str); 6] = [
    // How long the group waits for a member that stopped heartbeating
    // before its partitions move (librdkafka: 45 s). A member killed and
    // restarted within it leaves the group rebalancing, every member
    // owning nothing, until the dead session ends: measured ~30 s with
    // 45 s. Heartbeats come from librdkafka's own thread, not from
    // scoring, so a busy member does not miss them; Apache Kafka's
    // brokers accept 6 s and up (`group.min.session.timeout.ms`).
    ("session.timeout.ms", "10000"),
    // librdkafka wants at most a third of the session.
    ("heartbeat.interval.ms", "1000"),
    // A new group reads the topic from its start.
    ("auto.offset.reset", "earliest"),
    // The lag metrics come from librdkafka's statistics.
    ("statistics.interval.ms", "1000"),
    // librdkafka's prefetch queue (default 64 MiB): bounded either way,
    // smaller here because replay's own pool is where work waits.
    ("queued.max.messages.kbytes", "16384"),
    // How long a partition is not fetched once that queue is full
    // (librdkafka: 1 000 ms, which its documentation says to lower with a
    // small queue): replay drains 16 MiB in about 100 ms, then waited the
    // rest of the second. Measured, 200 000 lines of 1.2 KB, 4 partitions:
    // 41 k msg/s at 1 000 ms, 131-183 k at 20 ms.
    ("fetch.queue.backoff.ms", "20"),
];

/// Producer defaults (results, dead letters, `edgeguard ship`) a `-X` may
/// change.
const PRODUCER_DEFAULTS: [(&str, &str); 3] = [
    // Messages without a key go to a random partition each, not to one
    // partition per batch (librdkafka's sticky default): a backfill of a
    // few batches still spreads over every partition, and so over the
    // replay group's members.
    ("sticky.partitioning.linger.ms", "0"),
    // A result counts as written once every in-sync replica has it.
    ("acks", "all"),
    // The send queue's bound (librdkafka's default is 1 GiB): a slow
    // broker fills it, the writer waits, and the consumer pauses.
    ("queue.buffering.max.kbytes", "65536"),
];

/// The prefix of a `-X` property for the consumer only.
const CONSUMER_PREFIX: &str = "consumer.";
/// The prefix of a `-X` property for the producers only.
const PRODUCER_PREFIX: &str = "producer.";

/// librdkafka's `message.max.bytes` when not set: the largest message a
/// producer sends (key, headers and overhead included).
pub(crate) const DEFAULT_MESSAGE_MAX_BYTES: usize = 1_000_000;

/// Which clients a property is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Consumer,
    Producer,
}

/// How to reach Kafka.
#[derive(Clone, Debug, Default)]
pub struct Client {
    /// `bootstrap.servers`: `host:port[,host:port...]`.
    pub brokers: String,
    /// librdkafka properties (`-X key=value`), after the defaults, so they
    /// win: for every client, or, prefixed `consumer.` or `producer.`,
    /// for those only.
    pub properties: Vec<(String, String)>,
}

impl Client {
    /// The configuration of a consumer in `group`. Refuses a property that
    /// would undo the commit discipline.
    pub(crate) fn consumer(&self, group: &str) -> Result<ClientConfig, String> {
        for (k, _) in self.of(Role::Consumer) {
            if k == "group.id" || CONSUMER_FIXED.iter().any(|(f, _)| *f == k) {
                return Err(format!(
                    "-X {k}: edgeguard sets it (offsets are committed once results are written; \
                     the group is --group)"
                ));
            }
        }
        let mut c = self.base(&CONSUMER_DEFAULTS, Role::Consumer);
        // KIP-848's protocol sets the session and the heartbeat on the
        // broker: librdkafka refuses a client that sets either.
        if c.get("group.protocol") == Some("consumer") {
            for key in ["session.timeout.ms", "heartbeat.interval.ms"] {
                if !self.of(Role::Consumer).any(|(k, _)| k == key) {
                    c.remove(key);
                }
            }
        }
        c.set("group.id", group);
        for (k, v) in CONSUMER_FIXED {
            c.set(k, v);
        }
        Ok(c)
    }

    /// The configuration of a producer (results, dead letters).
    pub(crate) fn producer(&self) -> ClientConfig {
        self.base(&PRODUCER_DEFAULTS, Role::Producer)
    }

    /// The largest message the producers send (`message.max.bytes`).
    pub(crate) fn producer_message_max(&self) -> usize {
        self.producer()
            .get("message.max.bytes")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_MESSAGE_MAX_BYTES)
    }

    /// The properties for `role`, unprefixed; later ones win.
    fn of(&self, role: Role) -> impl Iterator<Item = (&str, &str)> {
        self.properties.iter().filter_map(move |(k, v)| {
            let (for_role, key) = if let Some(key) = k.strip_prefix(CONSUMER_PREFIX) {
                (Some(Role::Consumer), key)
            } else if let Some(key) = k.strip_prefix(PRODUCER_PREFIX) {
                (Some(Role::Producer), key)
            } else {
                (None, k.as_str())
            };
            for_role
                .is_none_or(|r| r == role)
                .then_some((key, v.as_str()))
        })
    }

    fn base(&self, defaults: &[(&str, &str)], role: Role) -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", &self.brokers);
        c.set("client.id", "edgeguard");
        // Warnings and errors; everything when librdkafka's `debug` is asked for.
        let debug = self.of(role).any(|(k, _)| k == "debug");
        c.set_log_level(if debug {
            RDKafkaLogLevel::Debug
        } else {
            RDKafkaLogLevel::Warning
        });
        for (k, v) in defaults {
            c.set(*k, *v);
        }
        for (k, v) in self.of(role) {
            c.set(k, v);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(props: &[(&str, &str)]) -> Client {
        Client {
            brokers: "127.0.0.1:9092".into(),
            properties: props
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn user_properties_win_over_defaults_but_not_the_commit_settings() {
        let c = client(&[("auto.offset.reset", "latest"), ("acks", "1")]);
        let consumer = c.consumer("g").unwrap();
        assert_eq!(consumer.get("auto.offset.reset"), Some("latest"));
        assert_eq!(consumer.get("group.id"), Some("g"));
        assert_eq!(consumer.get("enable.auto.commit"), Some("false"));
        assert_eq!(consumer.get("bootstrap.servers"), Some("127.0.0.1:9092"));
        assert_eq!(c.producer().get("acks"), Some("1"));
        assert_eq!(client(&[]).producer().get("acks"), Some("all"));
        for bad in ["enable.auto.commit", "group.id", "enable.partition.eof"] {
            let err = client(&[(bad, "x")]).consumer("g").unwrap_err();
            assert!(err.starts_with(&format!("-X {bad}:")), "{err}");
            let prefixed = format!("consumer.{bad}");
            let err = client(&[(&prefixed, "x")]).consumer("g").unwrap_err();
            assert!(err.starts_with(&format!("-X {bad}:")), "{err}");
        }
        // The producers may be told anything about their own commits (none).
        assert!(client(&[("producer.enable.auto.commit", "x")])
            .consumer("g")
            .is_ok());
    }

    #[test]
    fn prefixed_properties_reach_their_clients_only() {
        let c = client(&[
            ("consumer.session.timeout.ms", "6000"),
            ("producer.message.max.bytes", "2000000"),
            ("producer.acks", "1"),
            ("security.protocol", "ssl"),
        ]);
        let consumer = c.consumer("g").unwrap();
        let producer = c.producer();
        assert_eq!(consumer.get("session.timeout.ms"), Some("6000"));
        assert_eq!(producer.get("session.timeout.ms"), None);
        assert_eq!(producer.get("message.max.bytes"), Some("2000000"));
        assert_eq!(consumer.get("message.max.bytes"), None);
        assert_eq!(consumer.get("acks"), None);
        assert_eq!(producer.get("acks"), Some("1"));
        for config in [&consumer, &producer] {
            assert_eq!(config.get("security.protocol"), Some("ssl"));
            assert!(config
                .config_map()
                .keys()
                .all(|k| !k.contains("consumer.") && !k.contains("producer.")));
        }
        assert_eq!(c.producer_message_max(), 2_000_000);
        assert_eq!(
            client(&[]).producer_message_max(),
            DEFAULT_MESSAGE_MAX_BYTES
        );
    }

    #[test]
    fn the_default_session_moves_a_dead_members_partitions_within_seconds() {
        let consumer = client(&[]).consumer("g").unwrap();
        let session: u64 = consumer.get("session.timeout.ms").unwrap().parse().unwrap();
        let heartbeat: u64 = consumer
            .get("heartbeat.interval.ms")
            .unwrap()
            .parse()
            .unwrap();
        assert!((6000..=10_000).contains(&session) && heartbeat * 3 <= session);
        assert_eq!(client(&[]).producer().get("session.timeout.ms"), None);
        // Under KIP-848's protocol the broker sets them.
        let c = client(&[("consumer.group.protocol", "consumer")]);
        let consumer = c.consumer("g").unwrap();
        assert_eq!(consumer.get("session.timeout.ms"), None);
        assert_eq!(consumer.get("heartbeat.interval.ms"), None);
    }
}

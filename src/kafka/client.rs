//! The librdkafka configuration of edgeguard's Kafka clients: the brokers,
//! the user's `-X` properties, and the defaults and fixed settings the
//! consumer and producers need.

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
const CONSUMER_DEFAULTS: [(&str, &str); 4] = [
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

/// How to reach Kafka.
#[derive(Clone, Debug, Default)]
pub struct Client {
    /// `bootstrap.servers`: `host:port[,host:port...]`.
    pub brokers: String,
    /// librdkafka properties for every client (`-X key=value`), after the
    /// defaults, so they win.
    pub properties: Vec<(String, String)>,
}

impl Client {
    /// The configuration of a consumer in `group`. Refuses a property that
    /// would undo the commit discipline.
    pub(crate) fn consumer(&self, group: &str) -> Result<ClientConfig, String> {
        for (k, _) in &self.properties {
            if k == "group.id" || CONSUMER_FIXED.iter().any(|(f, _)| f == k) {
                return Err(format!(
                    "-X {k}: edgeguard sets it (offsets are committed once results are written; \
                     the group is --group)"
                ));
            }
        }
        let mut c = self.base(&CONSUMER_DEFAULTS);
        c.set("group.id", group);
        for (k, v) in CONSUMER_FIXED {
            c.set(k, v);
        }
        Ok(c)
    }

    /// The configuration of a producer (results, dead letters).
    pub(crate) fn producer(&self) -> ClientConfig {
        self.base(&PRODUCER_DEFAULTS)
    }

    fn base(&self, defaults: &[(&str, &str)]) -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", &self.brokers);
        c.set("client.id", "edgeguard");
        // Warnings and errors; everything when librdkafka's `debug` is asked for.
        let debug = self.properties.iter().any(|(k, _)| k == "debug");
        c.set_log_level(if debug {
            RDKafkaLogLevel::Debug
        } else {
            RDKafkaLogLevel::Warning
        });
        for (k, v) in defaults {
            c.set(*k, *v);
        }
        for (k, v) in &self.properties {
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
        }
    }
}

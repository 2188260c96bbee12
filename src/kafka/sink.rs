//! Messages out (results, dead letters), and knowing when every message of
//! a batch is delivered: a batch counts as written only then, so its
//! offsets are committed only then.
//!
//! A message the broker or librdkafka refuses for what it is (too large,
//! an invalid record) is refused again however often it is sent: it is
//! reported with the batch's outcome, apart from failures (a broker away,
//! a timeout), so that the caller skips and counts it instead of stopping
//! or sending it for ever.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Headers as _, Message as _, OwnedHeaders};
use rdkafka::producer::{
    BaseRecord, DeliveryResult, Producer as _, ProducerContext, ThreadedProducer,
};
use rdkafka::ClientContext;

use super::client::Client;

/// How a batch's deliveries ended.
#[derive(Debug, Default)]
pub(crate) struct Settled {
    /// The first failure that sending again may cure (the broker away, a
    /// timeout): the batch is not delivered.
    pub(crate) failure: Option<String>,
    /// Messages refused for what they are, each with its topic and
    /// described: the rest of the batch is delivered unless `failure`
    /// says otherwise.
    pub(crate) refused: Vec<(String, String)>,
}

/// A batch's deliveries are over: its ticket, and how.
pub(crate) type Delivered = (u64, Settled);

/// Whether librdkafka's or the broker's refusal is about the message
/// itself: sent again, it is refused again.
pub(crate) fn refused_for_good(e: &KafkaError) -> bool {
    matches!(
        e.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::MessageSizeTooLarge
                | RDKafkaErrorCode::InvalidMessageSize
                | RDKafkaErrorCode::InvalidMessage
                | RDKafkaErrorCode::InvalidRecord
        )
    )
}

/// A refused message in a few words: its topic, where it came from (the
/// `edgeguard-source` header, else its key), its size, and why.
fn describe(
    topic: &str,
    source: Option<&[u8]>,
    key: Option<&[u8]>,
    size: usize,
    why: &KafkaError,
) -> String {
    let from = source
        .or(key)
        .map(|s| format!(" for {}", String::from_utf8_lossy(&s[..s.len().min(200)])))
        .unwrap_or_default();
    format!("{topic}: a message{from} of {size} bytes refused: {why}")
}

/// A producer that reports, per ticket, when all of its messages are
/// delivered (or one failed after librdkafka's retries).
pub(crate) struct Producer {
    inner: ThreadedProducer<Deliveries>,
}

/// How one message failed.
enum End {
    /// Refused for what it is: its topic, and why.
    Refused(String, String),
    /// Failed otherwise (sending again may cure it).
    Failed(String),
}

struct Pending {
    left: usize,
    outcome: Settled,
}

/// The producer's context: deliveries still awaited, per ticket.
struct Deliveries {
    pending: Mutex<HashMap<u64, Pending>>,
    done: Box<dyn Fn(Delivered) + Send + Sync>,
}

impl Deliveries {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Pending>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One message of `ticket` is over: delivered (`None`), failed, or
    /// refused for good.
    fn one(&self, ticket: u64, end: Option<End>) {
        let finished = {
            let mut pending = self.lock();
            let Some(p) = pending.get_mut(&ticket) else {
                return;
            };
            p.left -= 1;
            match end {
                Some(End::Refused(topic, why)) => p.outcome.refused.push((topic, why)),
                Some(End::Failed(why)) => {
                    p.outcome.failure.get_or_insert(why);
                }
                None => {}
            }
            if p.left == 0 {
                pending.remove(&ticket).map(|p| p.outcome)
            } else {
                None
            }
        };
        if let Some(outcome) = finished {
            (self.done)((ticket, outcome));
        }
    }
}

impl ClientContext for Deliveries {
    /// librdkafka filters by the configured level ([`Client`]).
    fn log(&self, _: RDKafkaLogLevel, fac: &str, message: &str) {
        eprintln!("edgeguard: kafka producer: {fac}: {message}");
    }

    fn error(&self, error: KafkaError, reason: &str) {
        eprintln!("edgeguard: kafka producer: {error}: {reason}");
    }
}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, ticket: usize) {
        let end = result.as_ref().err().map(|(e, m)| {
            if refused_for_good(e) {
                let source = m.headers().and_then(|h| {
                    h.iter()
                        .find(|h| h.key == SOURCE_HEADER)
                        .and_then(|h| h.value)
                });
                let size = m.payload_len();
                let why = describe(m.topic(), source, m.key(), size, e);
                End::Refused(m.topic().to_owned(), why)
            } else {
                End::Failed(e.to_string())
            }
        });
        self.one(ticket as u64, end);
    }
}

/// The header naming where a dead letter came from.
pub(crate) const SOURCE_HEADER: &str = "edgeguard-source";

/// One message to send.
pub(crate) struct Outgoing<'a> {
    pub(crate) topic: &'a str,
    pub(crate) key: Option<&'a [u8]>,
    pub(crate) payload: &'a [u8],
    /// (name, value) headers.
    pub(crate) headers: Vec<(&'a str, Option<&'a [u8]>)>,
}

impl Producer {
    /// A producer calling `done` (on its own thread) when a ticket's
    /// messages are all over.
    pub(crate) fn new(
        client: &Client,
        done: impl Fn(Delivered) + Send + Sync + 'static,
    ) -> Result<Producer, String> {
        let ctx = Deliveries {
            pending: Mutex::new(HashMap::new()),
            done: Box::new(done),
        };
        let inner = client
            .producer()
            .create_with_context(ctx)
            .map_err(|e| format!("kafka producer: {e}"))?;
        Ok(Producer { inner })
    }

    /// Sends `messages` under `ticket` (which must not have messages out).
    /// Waits while librdkafka's queue is full (a slow broker: the writer
    /// waits, and the consumer pauses). A message librdkafka refuses at
    /// once (too large) is reported refused; another error fails the
    /// ticket.
    pub(crate) fn send_all<'a>(
        &self,
        ticket: u64,
        messages: impl ExactSizeIterator<Item = Outgoing<'a>>,
    ) {
        let n = messages.len();
        if n == 0 {
            (self.inner.context().done)((ticket, Settled::default()));
            return;
        }
        // Registered first: deliveries may come before the last send.
        self.inner.context().lock().insert(
            ticket,
            Pending {
                left: n,
                outcome: Settled::default(),
            },
        );
        for m in messages {
            let source = m
                .headers
                .iter()
                .find(|(k, _)| *k == SOURCE_HEADER)
                .and_then(|(_, v)| *v);
            let mut headers = OwnedHeaders::new_with_capacity(m.headers.len());
            for &(key, value) in &m.headers {
                headers = headers.insert(Header { key, value });
            }
            let mut record =
                BaseRecord::with_opaque_to(m.topic, ticket as usize).payload(m.payload);
            if let Some(key) = m.key {
                record = record.key(key);
            }
            if !m.headers.is_empty() {
                record = record.headers(headers);
            }
            loop {
                match self.inner.send(record) {
                    Ok(()) => break,
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                        record = r;
                        thread::sleep(Duration::from_millis(5));
                    }
                    Err((e, _)) if refused_for_good(&e) => {
                        let why = describe(m.topic, source, m.key, m.payload.len(), &e);
                        let end = End::Refused(m.topic.to_owned(), why);
                        self.inner.context().one(ticket, Some(end));
                        break;
                    }
                    Err((e, _)) => {
                        self.inner
                            .context()
                            .one(ticket, Some(End::Failed(e.to_string())));
                        break;
                    }
                }
            }
        }
    }

    /// Waits up to `timeout` for everything sent to be delivered.
    pub(crate) fn flush(&self, timeout: Duration) {
        // What is not delivered by then is reported per ticket.
        let _ = self.inner.flush(timeout);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_refusals_of_the_message_itself_are_for_good() {
        let production = |c| KafkaError::MessageProduction(c);
        assert!(refused_for_good(&production(
            RDKafkaErrorCode::MessageSizeTooLarge
        )));
        assert!(refused_for_good(&production(
            RDKafkaErrorCode::InvalidRecord
        )));
        for transient in [
            RDKafkaErrorCode::MessageTimedOut,
            RDKafkaErrorCode::Unknown,
            RDKafkaErrorCode::BrokerTransportFailure,
            RDKafkaErrorCode::UnknownTopicOrPartition,
        ] {
            assert!(!refused_for_good(&production(transient)), "{transient:?}");
        }
        let why = production(RDKafkaErrorCode::MessageSizeTooLarge);
        let d = describe("dead", Some(b"requests:1:7"), Some(b"k"), 1_500_000, &why);
        assert!(
            d.starts_with("dead: a message for requests:1:7 of 1500000 bytes refused: "),
            "{d}"
        );
        assert!(describe("t", None, None, 3, &why).starts_with("t: a message of 3 bytes"));
    }
}

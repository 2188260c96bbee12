//! Messages out (results, dead letters), and knowing when every message of
//! a batch is delivered: a batch counts as written only then, so its
//! offsets are committed only then.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{
    BaseRecord, DeliveryResult, Producer as _, ProducerContext, ThreadedProducer,
};
use rdkafka::ClientContext;

use super::client::Client;

/// A batch's deliveries are over: its ticket, and the first failure.
pub(crate) type Delivered = (u64, Option<String>);

/// A producer that reports, per ticket, when all of its messages are
/// delivered (or one failed after librdkafka's retries).
pub(crate) struct Producer {
    inner: ThreadedProducer<Deliveries>,
}

struct Pending {
    left: usize,
    failure: Option<String>,
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

    /// One message of `ticket` is over.
    fn one(&self, ticket: u64, failure: Option<String>) {
        let finished = {
            let mut pending = self.lock();
            let Some(p) = pending.get_mut(&ticket) else {
                return;
            };
            p.left -= 1;
            if p.failure.is_none() {
                p.failure = failure;
            }
            if p.left == 0 {
                pending.remove(&ticket).map(|p| p.failure)
            } else {
                None
            }
        };
        if let Some(failure) = finished {
            (self.done)((ticket, failure));
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
        let failure = result.as_ref().err().map(|(e, _)| e.to_string());
        self.one(ticket as u64, failure);
    }
}

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
    /// once fails the ticket.
    pub(crate) fn send_all<'a>(
        &self,
        ticket: u64,
        messages: impl ExactSizeIterator<Item = Outgoing<'a>>,
    ) {
        let n = messages.len();
        if n == 0 {
            (self.inner.context().done)((ticket, None));
            return;
        }
        // Registered first: deliveries may come before the last send.
        self.inner.context().lock().insert(
            ticket,
            Pending {
                left: n,
                failure: None,
            },
        );
        for m in messages {
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
                    Err((e, _)) => {
                        self.inner.context().one(ticket, Some(e.to_string()));
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

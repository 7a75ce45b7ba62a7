//! Waiting for the producer's delivery reports without spinning.
//!
//! rust-rdkafka's `BaseProducer::poll(timeout)` polls librdkafka's queue until the deadline
//! passes, with the remaining time truncated to whole milliseconds: its last millisecond is
//! a busy loop, and `poll(1 ms)` is nothing but one. The sink waits for acknowledgements at
//! every commit and for queue space whenever Kafka is slower than the sink, so those spins
//! took a core from the broker and the source on a small machine. Instead, librdkafka is
//! asked to write a byte to a pipe when an event reaches the producer's main queue (where
//! the delivery reports go) while nobody polls it (`rd_kafka_queue_io_event_enable`; one
//! byte per period without a poll), the sink serves what is there with non-blocking polls,
//! and sleeps in `poll(2)` on the pipe until the next report — woken at once, costing
//! nothing meanwhile.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use rdkafka::bindings as rdsys;
use rdkafka::client::{Client, ClientContext};

use crate::error::{Error, Result};

/// The pipe librdkafka writes to when the producer's main queue gets an event.
pub struct Wakeup {
    read: OwnedFd,
    /// Kept open while librdkafka may write to it.
    _write: OwnedFd,
}

impl Wakeup {
    /// Creates the pipe and hands its write end to `client`'s main queue.
    pub fn enable<C: ClientContext>(client: &Client<C>) -> Result<Wakeup> {
        let mut fds = [0; 2];
        // SAFETY: `pipe2` writes two descriptors into the array it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
            return Err(Error::definite(format!(
                "cannot create the pipe the Kafka producer signals delivery reports on: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: both descriptors were just created and are owned by nothing else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        set_main_queue_fd(client, write.as_raw_fd());
        Ok(Wakeup {
            read,
            _write: write,
        })
    }

    /// Sleeps until librdkafka signals an event or `max` passes (whole milliseconds, at least
    /// one), then empties the pipe.
    pub fn wait(&self, max: Duration) {
        let mut fd = libc::pollfd {
            fd: self.read.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = max.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: one valid `pollfd` for the length given. An error (EINTR) only ends the
        // wait early; the caller looks again.
        unsafe { libc::poll(&mut fd, 1, ms) };
        let mut buf = [0u8; 64];
        loop {
            // SAFETY: reads into a buffer of the length given, from a non-blocking pipe.
            let n =
                unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < buf.len() as isize {
                break;
            }
        }
    }

    /// Stops librdkafka writing to the pipe: before the pipe is closed, so no byte goes to a
    /// descriptor number used again by something else.
    pub fn disable<C: ClientContext>(&self, client: &Client<C>) {
        set_main_queue_fd(client, -1);
    }
}

/// Points the io event of `client`'s main queue at `fd` (-1: none).
fn set_main_queue_fd<C: ClientContext>(client: &Client<C>, fd: i32) {
    const PAYLOAD: &[u8] = b"1";
    // SAFETY: `rd_kafka_queue_get_main` returns a new reference to the client's main queue
    // (released with `rd_kafka_queue_destroy`, which leaves the queue itself alive: the
    // client holds it). The payload is a static of the length given; librdkafka copies it.
    unsafe {
        let queue = rdsys::rd_kafka_queue_get_main(client.native_ptr());
        if queue.is_null() {
            return;
        }
        if fd < 0 {
            rdsys::rd_kafka_queue_io_event_enable(queue, -1, std::ptr::null(), 0);
        } else {
            rdsys::rd_kafka_queue_io_event_enable(
                queue,
                fd,
                PAYLOAD.as_ptr().cast(),
                PAYLOAD.len(),
            );
        }
        rdsys::rd_kafka_queue_destroy(queue);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdkafka::config::ClientConfig;
    use rdkafka::mocking::MockCluster;
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    use std::time::Instant;

    #[test]
    fn a_delivery_report_wakes_the_wait_at_once() {
        let cluster = MockCluster::new(1).unwrap();
        let producer: BaseProducer = ClientConfig::new()
            .set("bootstrap.servers", cluster.bootstrap_servers())
            .set("linger.ms", "0")
            .create()
            .unwrap();
        cluster.create_topic("t", 1, 1).unwrap();
        let wakeup = Wakeup::enable(producer.client()).unwrap();
        for round in 0..5 {
            producer
                .send(BaseRecord::<[u8], [u8]>::to("t").payload(b"x"))
                .unwrap();
            let started = Instant::now();
            // Each wait would last its whole 5 s without a signal.
            while producer.in_flight_count() > 0 && started.elapsed() < Duration::from_secs(20) {
                wakeup.wait(Duration::from_secs(5));
                producer.poll(Duration::ZERO);
            }
            assert_eq!(producer.in_flight_count(), 0, "round {round}");
            assert!(
                started.elapsed() < Duration::from_secs(4),
                "round {round}: the report did not wake the wait: {:?}",
                started.elapsed()
            );
        }
        wakeup.disable(producer.client());
    }
}

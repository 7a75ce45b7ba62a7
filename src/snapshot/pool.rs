//! The pool of chunk readers: `parallelism` [`Reader`]s, each on its own connection, taking
//! requests from one queue and returning their results on one bounded channel.
//!
//! Invariant: at most `parallelism` results wait in the channel (each a chunk of at most
//! `snapshot.chunk_max_bytes` and one row), besides the one each reader is reading; a reader
//! that fails ends (its error is its last result), and dropping the pool stops every reader.

use std::sync::Arc;
use tracing::Instrument;

use tokio::sync::mpsc;

use super::reader::{ReadOutcome, ReadRequest, Reader};
use crate::config::SnapshotConfig;
use crate::error::{Error, Result};
use crate::mysql::server::{ConnectOptions, ServerInfo};

/// `parallelism` chunk readers, each on its own connection, taking requests from one queue.
pub struct Pool {
    requests: mpsc::Sender<ReadRequest>,
    results: mpsc::Receiver<Result<ReadOutcome>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Pool {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Pool {
    /// Connects the readers.
    pub async fn start(
        options: &ConnectOptions,
        info: &ServerInfo,
        cfg: &SnapshotConfig,
    ) -> Result<Pool> {
        let n = cfg.parallelism.max(1);
        let (req_tx, req_rx) = mpsc::channel::<ReadRequest>(n * 2);
        // Results read and not yet taken by the stream: at most `n` (each a chunk of at most
        // `chunk_max_bytes` and one row), besides the one each reader is reading.
        let (res_tx, res_rx) = mpsc::channel(n);
        let req_rx = Arc::new(tokio::sync::Mutex::new(req_rx));
        let readers =
            futures_util::future::try_join_all((0..n).map(|_| Reader::connect(options, info, cfg)))
                .await?;
        let tasks = readers
            .into_iter()
            .map(|mut reader| {
                let (req_rx, res_tx) = (req_rx.clone(), res_tx.clone());
                tokio::spawn(
                    async move {
                        loop {
                            let req = { req_rx.lock().await.recv().await };
                            let Some(req) = req else { return };
                            let out = reader.serve(&req, &res_tx).await;
                            let failed = out.is_err();
                            let sent = match out {
                                Ok(None) => true,
                                Ok(Some(o)) => res_tx.send(Ok(o)).await.is_ok(),
                                Err(e) => res_tx.send(Err(e)).await.is_ok(),
                            };
                            if !sent || failed {
                                return;
                            }
                        }
                    }
                    .in_current_span(),
                )
            })
            .collect();
        Ok(Pool {
            requests: req_tx,
            results: res_rx,
            tasks,
        })
    }

    /// Queues a request.
    pub async fn send(&self, req: ReadRequest) -> Result<()> {
        self.requests
            .send(req)
            .await
            .map_err(|_| Error::transient("the snapshot readers stopped"))
    }

    /// The next result (cancel-safe).
    pub async fn next(&mut self) -> Option<Result<ReadOutcome>> {
        self.results.recv().await
    }
}

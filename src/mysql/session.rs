//! Query connections to the source (preflight, schema reads, snapshot chunks, retention
//! checks), opened as `source.ssl_mode` says.
//!
//! Invariant: over plaintext, the password is never encrypted to an RSA key the server sends
//! unless `source.allow_public_key_retrieval` is set. The client library fetches that key
//! unasked on a `caching_sha2_password` full login, so without the setting a plaintext
//! connection first logs in with sluice's own client ([`Replication`]), which refuses that
//! exchange; only when that login needs no key is the library's connection opened.

use mysql_async::Conn;

use crate::error::Result;
use crate::mysql::replication::Replication;
use crate::mysql::server::{self, Attempt, ConnectOptions};

/// Connects to the source as `source.ssl_mode` says. `preferred` tries TLS first and falls
/// back to plaintext only when the server's handshake does not offer TLS (its CLIENT_SSL
/// capability flag is off); any other TLS failure is an error, as for `required`.
pub async fn connect(opts: &ConnectOptions) -> Result<Conn> {
    server::connect_with(opts, |ssl| async move {
        if ssl.is_none() && !opts.allow_public_key_retrieval {
            // Refused here when the login would need the server's key; dropped at once.
            drop(Replication::attempt(opts, None).await?);
        }
        server::attempt(opts, ssl).await.map_err(Attempt::Failed)
    })
    .await
}

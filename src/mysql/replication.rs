//! sluice's own replication connection: it connects and authenticates like a MySQL client,
//! asks for the binlog dump and yields the raw events, one packet at a time.
//!
//! The query connections stay with the client library; this one exists because the library's
//! binlog stream decompresses every TRANSACTION_PAYLOAD in memory (the whole transaction at
//! once) and then yields its inner events a second time. Here a payload is yielded as the one
//! event it is on the wire, and [`crate::binlog::payload`] streams its inner events.
//!
//! Invariants:
//! * memory holds one packet (one binlog event) at a time; a packet larger than
//!   [`MAX_PACKET`] is refused.
//! * failures are expressed as the client library's error type, so every caller maps them
//!   with the same functions as the query connections (`mysql_error`, the connect-time
//!   messages of [`server`], the purged-binlog message of the stream).

use std::borrow::Cow;

use mysql_async::{DriverError, SslOpts};
use mysql_common::binlog::events::Event;
use mysql_common::constants::CapabilityFlags;
use mysql_common::io::ParseBuf;
use mysql_common::packets::binlog_request::BinlogRequest;
use mysql_common::packets::{
    AuthPlugin, AuthSwitchRequest, ComRegisterSlave, ErrPacket, HandshakePacket, HandshakeResponse,
    SslRequest,
};
use mysql_common::proto::MySerialize;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufStream};
use tokio::net::TcpStream;

use crate::binlog::verify::{Damaged, EventDecoder};
use crate::error::{mysql_error, Error, Result};
use crate::mysql::packet::{frame, PacketReader};
use crate::mysql::server::{self, Attempt, ConnectOptions};

/// The largest packet accepted before [`Replication::set_max_event_bytes`] (the server's
/// `max_allowed_packet` cannot exceed 1 GiB).
pub const MAX_PACKET: usize = 1 << 30;

/// `max_packet_size` announced in the handshake response.
const CLIENT_MAX_PACKET: u32 = 1 << 30;

/// utf8mb4_general_ci.
const COLLATION: u8 = 45;

type MyResult<T> = std::result::Result<T, mysql_async::Error>;

/// A byte stream to the server, plaintext or TLS.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Why the next event could not be had.
#[derive(Debug)]
pub enum ReadError {
    /// The connection failed (I/O, framing, a server error), as the client library reports
    /// it: transient or definite as [`mysql_error`] classifies it.
    Conn(mysql_async::Error),
    /// The event failed its length or checksum checks ([`crate::binlog::verify`]).
    Damaged(Damaged),
    /// The event is larger than `source.max_event_bytes`: `size` bytes at least.
    TooLarge { size: u64, limit: u64 },
}

impl ReadError {
    /// The pipeline error, for the event at `at` (`file:pos`).
    pub fn into_error(self, at: impl std::fmt::Display) -> Error {
        match self {
            ReadError::Conn(e) => mysql_error(format!("binlog stream at {at}"), &e),
            ReadError::Damaged(d) => Error::definite(format!(
                "the binlog event at {at} is damaged ({d}); sluice stops rather than decode \
                 it, and nothing of it or after it is written. If it fails at the same position \
                 again after a restart, the binlog file on the server is damaged (check it with \
                 `mysqlbinlog --verify-binlog-checksum`); otherwise it was damaged on the way \
                 (network, proxy) and a restart reads it again"
            )),
            ReadError::TooLarge { size, limit } => Error::definite(format!(
                "the binlog event at {at} is larger than source.max_event_bytes ({limit} \
                 bytes): {size} bytes at least; fix: raise source.max_event_bytes (or \
                 SLUICE_SOURCE_MAX_EVENT_BYTES) above the event's size, e.g. to 1073741824 \
                 (1 GiB, the default and the server's own max_allowed_packet ceiling)"
            )),
        }
    }
}

/// The server error of an ERR packet (first byte 0xFF), as the client library reports it.
pub fn err_packet(packet: &[u8], caps: CapabilityFlags) -> mysql_async::Error {
    match ParseBuf(packet).parse::<ErrPacket<'_>>(caps) {
        Ok(ErrPacket::Error(e)) => e.into(),
        _ => DriverError::UnexpectedPacket {
            payload: packet.to_vec(),
        }
        .into(),
    }
}

/// What the client sends after an authentication method was chosen (handshake or auth
/// switch): the scramble of `pass` with `nonce`, empty for an empty password. Other methods
/// than mysql_native_password and caching_sha2_password are a definite error naming them.
pub fn auth_response(plugin: &AuthPlugin<'_>, pass: &str, nonce: &[u8]) -> Result<Vec<u8>> {
    match plugin {
        AuthPlugin::MysqlNativePassword | AuthPlugin::CachingSha2Password => Ok(plugin
            .gen_data(Some(pass), nonce)
            .map(|d| d.to_vec())
            .unwrap_or_default()),
        other => Err(Error::definite(format!(
            "the source asks for the authentication method `{}`, which sluice's replication \
             connection does not speak (it speaks mysql_native_password and \
             caching_sha2_password); fix: create the replication user IDENTIFIED WITH one of \
             those",
            String::from_utf8_lossy(other.as_bytes())
        ))),
    }
}

/// caching_sha2_password full authentication over plaintext: `pass` (NUL-terminated) XORed
/// with the nonce, encrypted with the server's RSA public key (PEM) using OAEP padding.
pub fn rsa_encrypted_password(pass: &str, nonce: &[u8], pem: &[u8]) -> Result<Vec<u8>> {
    use openssl::rsa::{Padding, Rsa};
    if nonce.is_empty() {
        return Err(Error::definite(
            "caching_sha2_password: the server sent no nonce",
        ));
    }
    let mut plain: Vec<u8> = pass.as_bytes().to_vec();
    plain.push(0);
    for (i, b) in plain.iter_mut().enumerate() {
        *b ^= nonce[i % nonce.len()];
    }
    let key = Rsa::public_key_from_pem(pem)
        .or_else(|_| Rsa::public_key_from_pem_pkcs1(pem))
        .map_err(|e| {
            Error::definite(format!(
                "caching_sha2_password: the server's public key is not a PEM RSA key: {e}"
            ))
        })?;
    let mut out = vec![0u8; key.size() as usize];
    let n = key
        .public_encrypt(&plain, &mut out, Padding::PKCS1_OAEP)
        .map_err(|e| {
            Error::definite(format!(
                "caching_sha2_password: encrypting the password with the server's key: {e}"
            ))
        })?;
    out.truncate(n);
    Ok(out)
}

/// One replication connection to the source.
///
/// Cancel-safe: a [`Replication::next_event`] future dropped before it finished (a `select!`
/// branch that won, a timeout) loses no byte of the stream; the next call continues the packet
/// (see [`crate::mysql::packet`]).
pub struct Replication {
    io: BufStream<Box<dyn Io>>,
    /// Packet reader; its sequence id is the connection's (writes continue from it).
    rd: PacketReader,
    caps: CapabilityFlags,
    decoder: EventDecoder,
    /// `source.max_event_bytes`.
    max_event_bytes: u64,
    ended: bool,
}

/// Who logs in, and whether the server's RSA key may be fetched over plaintext.
struct Login<'a> {
    host: &'a str,
    user: &'a str,
    pass: &'a str,
    allow_public_key_retrieval: bool,
}

/// The error of a `caching_sha2_password` full login over plaintext without
/// `source.allow_public_key_retrieval`.
pub(crate) fn public_key_refused(user: &str) -> Error {
    Error::definite(format!(
        "the source asks for user `{user}`'s password over plaintext (caching_sha2_password \
         full authentication): sending it needs the server's RSA public key, and over \
         plaintext nothing proves the key is the server's (a man in the middle could serve \
         its own and read the password); fix: use TLS (source.ssl_mode = \"required\", or \
         \"verify_ca\"/\"verify_identity\" to also check the server), or set \
         source.allow_public_key_retrieval = true to trust the key the server sends"
    ))
}

impl Replication {
    /// Connects and authenticates as `source.url` and `source.ssl_mode` say (with the same
    /// fallback and error messages as the query connections).
    pub async fn connect(opts: &ConnectOptions) -> Result<Replication> {
        server::connect_with(opts, |ssl| Replication::attempt(opts, ssl)).await
    }

    /// One login (see [`server::connect_with`]).
    pub(crate) async fn attempt(
        opts: &ConnectOptions,
        ssl: Option<SslOpts>,
    ) -> std::result::Result<Replication, Attempt> {
        let url = &opts.url;
        let tcp = TcpStream::connect((url.host(), url.port()))
            .await
            .map_err(|e| Attempt::Failed(e.into()))?;
        let _ = tcp.set_nodelay(true);
        let mut conn = Replication {
            io: BufStream::new(Box::new(tcp) as Box<dyn Io>),
            rd: PacketReader::new(MAX_PACKET),
            caps: CapabilityFlags::empty(),
            decoder: EventDecoder::new(),
            max_event_bytes: MAX_PACKET as u64,
            ended: false,
        };
        let pass = url
            .password()
            .map(|p| p.expose().clone())
            .unwrap_or_default();
        let login = Login {
            host: url.host(),
            user: url.user().unwrap_or(""),
            pass: &pass,
            allow_public_key_retrieval: opts.allow_public_key_retrieval,
        };
        conn.handshake(&login, ssl).await?;
        Ok(conn)
    }

    /// Events larger than `max` bytes (`source.max_event_bytes`) are refused, before their
    /// memory is reserved.
    pub fn set_max_event_bytes(&mut self, max: u64) {
        self.max_event_bytes = max;
        // The packet is the event and its leading 0x00.
        self.rd
            .set_limit(usize::try_from(max.saturating_add(1)).unwrap_or(usize::MAX));
    }

    async fn read(&mut self) -> MyResult<()> {
        self.rd.read(&mut self.io).await
    }

    /// The last packet read.
    fn buf(&self) -> &[u8] {
        self.rd.packet()
    }

    async fn write(&mut self, payload: &[u8]) -> MyResult<()> {
        let mut out = Vec::with_capacity(payload.len() + 4);
        frame(&mut self.rd.seq, payload, &mut out);
        self.io.write_all(&out).await?;
        self.io.flush().await?;
        Ok(())
    }

    /// Sends a command (a new sequence).
    async fn command(&mut self, payload: &[u8]) -> MyResult<()> {
        self.rd.seq = 0;
        self.write(payload).await
    }

    fn unexpected(&self) -> mysql_async::Error {
        DriverError::UnexpectedPacket {
            payload: self.buf().to_vec(),
        }
        .into()
    }

    async fn handshake(
        &mut self,
        login: &Login<'_>,
        ssl: Option<SslOpts>,
    ) -> std::result::Result<(), Attempt> {
        let (host, user, pass) = (login.host, login.user, login.pass);
        self.read().await.map_err(Attempt::Failed)?;
        if self.buf().first() == Some(&0xFF) {
            return Err(Attempt::Failed(err_packet(self.buf(), self.caps)));
        }
        let hs = ParseBuf(self.buf())
            .parse::<HandshakePacket<'_>>(())
            .map_err(|e| Attempt::Failed(e.into()))?;
        let mut nonce = hs.scramble_1_ref().to_vec();
        nonce.extend_from_slice(hs.scramble_2_ref().unwrap_or(&[]));
        nonce.resize(20, 0);
        let version = hs
            .maria_db_server_version_parsed()
            .or_else(|| hs.server_version_parsed())
            .unwrap_or((0, 0, 0));
        let mut plugin = match hs.auth_plugin() {
            Some(AuthPlugin::CachingSha2Password) => AuthPlugin::CachingSha2Password,
            _ => AuthPlugin::MysqlNativePassword,
        };
        let mut want = CapabilityFlags::CLIENT_PROTOCOL_41
            | CapabilityFlags::CLIENT_SECURE_CONNECTION
            | CapabilityFlags::CLIENT_LONG_PASSWORD
            | CapabilityFlags::CLIENT_TRANSACTIONS
            | CapabilityFlags::CLIENT_PLUGIN_AUTH;
        if ssl.is_some() {
            want |= CapabilityFlags::CLIENT_SSL;
        }
        let server_caps = hs.capabilities();
        self.caps = server_caps & want;
        let mut secure = false;
        if let Some(ssl) = ssl {
            if !server_caps.contains(CapabilityFlags::CLIENT_SSL) {
                return Err(Attempt::Failed(
                    DriverError::NoClientSslFlagFromServer.into(),
                ));
            }
            let mut req = Vec::new();
            SslRequest::new(self.caps, CLIENT_MAX_PACKET, COLLATION).serialize(&mut req);
            self.write(&req).await.map_err(Attempt::Failed)?;
            let connector = server::tls_connector(&ssl).await?;
            let plain = std::mem::replace(
                &mut self.io,
                BufStream::new(Box::new(tokio::io::duplex(1).0) as Box<dyn Io>),
            )
            .into_inner();
            let tls = tokio_native_tls::TlsConnector::from(connector)
                .connect(host, plain)
                .await
                .map_err(|e| Attempt::Failed(e.into()))?;
            self.io = BufStream::new(Box::new(tls) as Box<dyn Io>);
            secure = true;
        }
        let data = auth_response(&plugin, pass, &nonce).map_err(Attempt::Refused)?;
        let mut resp = Vec::new();
        HandshakeResponse::new(
            Some(&data[..]),
            version,
            Some(user.as_bytes()),
            None::<&[u8]>,
            Some(plugin.borrow()),
            self.caps,
            None,
            CLIENT_MAX_PACKET,
        )
        .serialize(&mut resp);
        self.write(&resp).await.map_err(Attempt::Failed)?;

        let mut switched = false;
        let mut server_key: Option<Vec<u8>> = None;
        loop {
            self.read().await.map_err(Attempt::Failed)?;
            match self.buf().first().copied() {
                Some(0x00) => return Ok(()),
                Some(0xFF) => return Err(Attempt::Failed(err_packet(self.buf(), self.caps))),
                Some(0xFE) if !switched => {
                    switched = true;
                    let sw = ParseBuf(self.buf())
                        .parse::<AuthSwitchRequest<'_>>(())
                        .map_err(|e| Attempt::Failed(e.into()))?;
                    nonce = sw.plugin_data().to_vec();
                    plugin = sw.auth_plugin().into_owned();
                    let data = auth_response(&plugin, pass, &nonce).map_err(Attempt::Refused)?;
                    self.write(&data).await.map_err(Attempt::Failed)?;
                }
                Some(0x01) if plugin == AuthPlugin::CachingSha2Password => {
                    match self.buf().get(1).copied() {
                        // Fast authentication succeeded: the OK follows.
                        Some(0x03) => {}
                        // Full authentication.
                        Some(0x04) if secure => {
                            let mut clear = pass.as_bytes().to_vec();
                            clear.push(0);
                            self.write(&clear).await.map_err(Attempt::Failed)?;
                        }
                        Some(0x04) => {
                            let key = match server_key.take() {
                                Some(k) => k,
                                None if !login.allow_public_key_retrieval => {
                                    return Err(Attempt::Refused(public_key_refused(user)));
                                }
                                None => {
                                    self.write(&[0x02]).await.map_err(Attempt::Failed)?;
                                    self.read().await.map_err(Attempt::Failed)?;
                                    match self.buf().split_first() {
                                        Some((0x01, pem)) => pem.to_vec(),
                                        Some((0xFF, _)) => {
                                            return Err(Attempt::Failed(err_packet(
                                                self.buf(),
                                                self.caps,
                                            )))
                                        }
                                        _ => return Err(Attempt::Failed(self.unexpected())),
                                    }
                                }
                            };
                            let enc = rsa_encrypted_password(pass, &nonce, &key)
                                .map_err(Attempt::Refused)?;
                            server_key = Some(key);
                            self.write(&enc).await.map_err(Attempt::Failed)?;
                        }
                        _ => return Err(Attempt::Failed(self.unexpected())),
                    }
                }
                _ => return Err(Attempt::Failed(self.unexpected())),
            }
        }
    }

    /// Reads the reply to a command that answers OK or ERR.
    async fn read_ok(&mut self) -> MyResult<()> {
        self.read().await?;
        match self.buf().first() {
            Some(0x00) => Ok(()),
            Some(0xFF) => Err(err_packet(self.buf(), self.caps)),
            _ => Err(self.unexpected()),
        }
    }

    /// Runs a statement that returns no result set (the session settings before the dump).
    pub async fn query_drop(&mut self, sql: &str) -> MyResult<()> {
        let mut payload = Vec::with_capacity(sql.len() + 1);
        payload.push(0x03);
        payload.extend_from_slice(sql.as_bytes());
        self.command(&payload).await?;
        self.read_ok().await
    }

    /// Announces CRC32 checksums (so the events the server makes up before the first format
    /// description carry one, see [`crate::binlog::verify`]), registers as a replica with
    /// `server_id` and sends the dump request; events follow through
    /// [`Replication::next_event`].
    pub async fn start_dump(&mut self, request: &BinlogRequest<'_>) -> MyResult<()> {
        self.query_drop("SET @master_binlog_checksum = 'CRC32'")
            .await?;
        let mut payload = Vec::new();
        ComRegisterSlave::new(request.server_id()).serialize(&mut payload);
        self.command(&payload).await?;
        self.read_ok().await?;
        payload.clear();
        request.as_cmd().serialize(&mut payload);
        self.command(&payload).await
    }

    /// The next event of the dump, its length and checksum verified; `None` when the server
    /// ended the stream (a non-blocking dump reached the end of the binlog). Cancel-safe.
    pub async fn next_event(&mut self) -> std::result::Result<Option<Event>, ReadError> {
        if self.ended {
            return Ok(None);
        }
        if let Err(e) = self.rd.read(&mut self.io).await {
            return Err(match self.rd.too_large() {
                Some(n) => ReadError::TooLarge {
                    size: (n as u64).saturating_sub(1),
                    limit: self.max_event_bytes,
                },
                None => ReadError::Conn(e),
            });
        }
        let packet = self.rd.packet();
        match packet.first() {
            Some(0x00) => self
                .decoder
                .decode(&packet[1..])
                .map(Some)
                .map_err(ReadError::Damaged),
            Some(0xFF) => Err(ReadError::Conn(err_packet(packet, self.caps))),
            Some(0xFE) if packet.len() < 8 => {
                self.ended = true;
                Ok(None)
            }
            _ => Err(ReadError::Conn(self.unexpected())),
        }
    }
}

/// Builds the dump request: COM_BINLOG_DUMP (from `file`/`pos`) or, with `sids`,
/// COM_BINLOG_DUMP_GTID.
pub fn dump_request<'a>(
    server_id: u32,
    file: Option<&'a [u8]>,
    pos: u64,
    sids: Option<Vec<mysql_common::packets::Sid<'a>>>,
    non_blocking: bool,
) -> BinlogRequest<'a> {
    let mut req = BinlogRequest::new(server_id).with_pos(pos);
    if let Some(file) = file {
        req = req.with_filename(Cow::Borrowed(file));
    }
    if let Some(sids) = sids {
        req = req.with_use_gtid(true).with_sids(sids);
    }
    if non_blocking {
        req = req.with_flags(mysql_common::packets::BinlogDumpFlags::BINLOG_DUMP_NON_BLOCK);
    }
    req
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{mysql_error, ErrorKind};

    #[test]
    fn auth_responses_are_the_scrambles() {
        let nonce: Vec<u8> = (1..=20).collect();
        let native = auth_response(&AuthPlugin::MysqlNativePassword, "sluice", &nonce).unwrap();
        assert_eq!(
            native,
            mysql_common::scramble::scramble_native(&nonce, b"sluice")
                .unwrap()
                .to_vec()
        );
        let sha2 = auth_response(&AuthPlugin::CachingSha2Password, "sluice", &nonce).unwrap();
        assert_eq!(
            sha2,
            mysql_common::scramble::scramble_sha256(&nonce, b"sluice")
                .unwrap()
                .to_vec()
        );
        // No password: an empty response.
        assert!(auth_response(&AuthPlugin::MysqlNativePassword, "", &nonce)
            .unwrap()
            .is_empty());
        // Other methods are refused, naming the method.
        for name in [
            "client_ed25519",
            "mysql_clear_password",
            "auth_gssapi_client",
        ] {
            let e =
                auth_response(&AuthPlugin::from_bytes(name.as_bytes()), "p", &nonce).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Definite);
            assert!(e.to_string().contains(name), "{e}");
        }
    }

    #[test]
    fn full_auth_password_is_rsa_oaep_of_the_xored_password() {
        use openssl::rsa::{Padding, Rsa};
        let key = Rsa::generate(2048).unwrap();
        let pem = key.public_key_to_pem().unwrap();
        let nonce: Vec<u8> = (1..=20).collect();
        let enc =
            rsa_encrypted_password("a fairly long password, over 20 bytes", &nonce, &pem).unwrap();
        assert_eq!(enc.len(), 256);
        let mut dec = vec![0u8; 256];
        let n = key
            .private_decrypt(&enc, &mut dec, Padding::PKCS1_OAEP)
            .unwrap();
        let clear: Vec<u8> = dec[..n]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ nonce[i % nonce.len()])
            .collect();
        assert_eq!(clear, b"a fairly long password, over 20 bytes\0");
        let e = rsa_encrypted_password("p", &nonce, b"not a key").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Definite);
    }

    fn err(code: u16, state: &str, msg: &str) -> Vec<u8> {
        let mut p = vec![0xFF];
        p.extend(code.to_le_bytes());
        p.push(b'#');
        p.extend(state.as_bytes());
        p.extend(msg.as_bytes());
        p
    }

    #[test]
    fn error_packets_map_like_the_client_library() {
        let caps = CapabilityFlags::CLIENT_PROTOCOL_41;
        let e = err_packet(&err(1045, "28000", "Access denied for user 'x'@'h'"), caps);
        match &e {
            mysql_async::Error::Server(se) => {
                assert_eq!(se.code, 1045);
                assert_eq!(se.state, "28000");
                assert_eq!(se.message, "Access denied for user 'x'@'h'");
            }
            other => panic!("not a server error: {other:?}"),
        }
        assert_eq!(mysql_error("x", &e).kind(), ErrorKind::Definite);
        let purged = err_packet(
            &err(
                1236,
                "HY000",
                "Could not find first log file name in binary log index file",
            ),
            caps,
        );
        let pe = mysql_error("binlog stream", &purged);
        assert_eq!(pe.kind(), ErrorKind::Definite);
        assert!(pe.to_string().contains("1236"), "{pe}");
        let busy = err_packet(&err(1040, "08004", "Too many connections"), caps);
        assert_eq!(mysql_error("x", &busy).kind(), ErrorKind::Transient);
        // Garbage is an unexpected packet, not a panic.
        assert!(matches!(
            err_packet(&[0xFF, 1], caps),
            mysql_async::Error::Driver(DriverError::UnexpectedPacket { .. })
        ));
    }

    #[test]
    fn dump_requests() {
        let mut b = Vec::new();
        dump_request(77, Some(b"binlog.000002"), 1234, None, true)
            .as_cmd()
            .serialize(&mut b);
        // COM_BINLOG_DUMP, pos u32, flags u16 (NON_BLOCK), server id u32, file name.
        let mut want = vec![0x12];
        want.extend(1234u32.to_le_bytes());
        want.extend(1u16.to_le_bytes());
        want.extend(77u32.to_le_bytes());
        want.extend(b"binlog.000002");
        assert_eq!(b, want);
        let mut b = Vec::new();
        dump_request(77, None, 4, Some(Vec::new()), false)
            .as_cmd()
            .serialize(&mut b);
        assert_eq!(b[0], 0x1e, "COM_BINLOG_DUMP_GTID");
    }
}

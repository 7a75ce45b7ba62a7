//! sluice's own replication connection: it connects and authenticates like a MySQL client,
//! asks for the binlog dump and yields the raw events, one packet at a time.
//!
//! The query connections stay with the client library; this one exists because the library's
//! binlog stream decompresses every TRANSACTION_PAYLOAD in memory (the whole transaction at
//! once) and then yields its inner events a second time. Here a payload is yielded as the one
//! event it is on the wire, and [`crate::source::payload`] streams its inner events.
//!
//! Invariants:
//! * memory holds one packet (one binlog event) at a time; a packet larger than
//!   [`MAX_PACKET`] is refused.
//! * failures are expressed as the client library's error type, so every caller maps them
//!   with the same functions as the query connections (`mysql_error`, the connect-time
//!   messages of [`server`], the purged-binlog message of the stream).

use std::borrow::Cow;

use mysql_async::{DriverError, SslOpts};
use mysql_common::binlog::consts::BinlogVersion;
use mysql_common::binlog::events::Event;
use mysql_common::binlog::EventStreamReader;
use mysql_common::constants::CapabilityFlags;
use mysql_common::io::ParseBuf;
use mysql_common::packets::binlog_request::BinlogRequest;
use mysql_common::packets::{
    AuthPlugin, AuthSwitchRequest, ComRegisterSlave, ErrPacket, HandshakePacket, HandshakeResponse,
    SslRequest,
};
use mysql_common::proto::MySerialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufStream};
use tokio::net::TcpStream;

use crate::error::{Error, Result};
use crate::source::server::{self, Attempt, ConnectOptions};

/// The largest payload of one packet chunk; a chunk this long continues in the next one.
const MAX_CHUNK: usize = 0xFF_FFFF;

/// The largest packet accepted (the server's `max_allowed_packet` cannot exceed 1 GiB).
pub const MAX_PACKET: usize = 1 << 30;

/// `max_packet_size` announced in the handshake response.
const CLIENT_MAX_PACKET: u32 = 1 << 30;

/// utf8mb4_general_ci.
const COLLATION: u8 = 45;

type MyResult<T> = std::result::Result<T, mysql_async::Error>;

/// Packet buffer capacity kept between packets; a larger one is released after use.
const RETAINED_BUFFER: usize = 4 << 20;

/// A byte stream to the server, plaintext or TLS.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Appends `payload` to `out` as packets starting at sequence id `*seq`: chunks of at most
/// [`MAX_CHUNK`] bytes, each with a 4-byte header (3-byte little-endian length, sequence id);
/// a payload whose length is a multiple of [`MAX_CHUNK`] (including 0) ends with an empty
/// chunk.
pub fn frame(seq: &mut u8, payload: &[u8], out: &mut Vec<u8>) {
    let mut rest = payload;
    loop {
        let n = rest.len().min(MAX_CHUNK);
        let len = (n as u32).to_le_bytes();
        out.extend_from_slice(&len[..3]);
        out.push(*seq);
        *seq = seq.wrapping_add(1);
        out.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        if n < MAX_CHUNK {
            return;
        }
    }
}

/// Reads one packet (all its chunks) into `buf`, checking the sequence ids from `*seq` on.
pub async fn read_packet<R: AsyncRead + Unpin>(
    r: &mut R,
    seq: &mut u8,
    buf: &mut Vec<u8>,
) -> MyResult<()> {
    buf.clear();
    loop {
        let mut hdr = [0u8; 4];
        r.read_exact(&mut hdr).await?;
        let n = usize::from(hdr[0]) | usize::from(hdr[1]) << 8 | usize::from(hdr[2]) << 16;
        if hdr[3] != *seq {
            return Err(DriverError::PacketOutOfOrder.into());
        }
        *seq = seq.wrapping_add(1);
        if buf.len() + n > MAX_PACKET {
            return Err(DriverError::PacketTooLarge.into());
        }
        let at = buf.len();
        buf.resize(at + n, 0);
        r.read_exact(&mut buf[at..]).await?;
        if n < MAX_CHUNK {
            return Ok(());
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
pub struct Replication {
    io: BufStream<Box<dyn Io>>,
    seq: u8,
    caps: CapabilityFlags,
    buf: Vec<u8>,
    esr: EventStreamReader,
    ended: bool,
}

impl Replication {
    /// Connects and authenticates as `source.url` and `source.ssl_mode` say (with the same
    /// fallback and error messages as the query connections).
    pub async fn connect(opts: &ConnectOptions) -> Result<Replication> {
        server::connect_with(opts, |ssl| Replication::attempt(opts, ssl)).await
    }

    async fn attempt(
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
            seq: 0,
            caps: CapabilityFlags::empty(),
            buf: Vec::new(),
            esr: EventStreamReader::new(BinlogVersion::Version4),
            ended: false,
        };
        let pass = url
            .password()
            .map(|p| p.expose().clone())
            .unwrap_or_default();
        conn.handshake(url.host(), url.user().unwrap_or(""), &pass, ssl)
            .await?;
        Ok(conn)
    }

    async fn read(&mut self) -> MyResult<()> {
        // One large event (a big compressed transaction) must not pin its size for the rest
        // of the stream: give the memory back before reading the next packet.
        if self.buf.capacity() > RETAINED_BUFFER {
            self.buf = Vec::with_capacity(RETAINED_BUFFER);
        }
        read_packet(&mut self.io, &mut self.seq, &mut self.buf).await
    }

    async fn write(&mut self, payload: &[u8]) -> MyResult<()> {
        let mut out = Vec::with_capacity(payload.len() + 4);
        frame(&mut self.seq, payload, &mut out);
        self.io.write_all(&out).await?;
        self.io.flush().await?;
        Ok(())
    }

    /// Sends a command (a new sequence).
    async fn command(&mut self, payload: &[u8]) -> MyResult<()> {
        self.seq = 0;
        self.write(payload).await
    }

    fn unexpected(&self) -> mysql_async::Error {
        DriverError::UnexpectedPacket {
            payload: self.buf.clone(),
        }
        .into()
    }

    async fn handshake(
        &mut self,
        host: &str,
        user: &str,
        pass: &str,
        ssl: Option<SslOpts>,
    ) -> std::result::Result<(), Attempt> {
        self.read().await.map_err(Attempt::Failed)?;
        if self.buf.first() == Some(&0xFF) {
            return Err(Attempt::Failed(err_packet(&self.buf, self.caps)));
        }
        let hs = ParseBuf(&self.buf)
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
            match self.buf.first().copied() {
                Some(0x00) => return Ok(()),
                Some(0xFF) => return Err(Attempt::Failed(err_packet(&self.buf, self.caps))),
                Some(0xFE) if !switched => {
                    switched = true;
                    let sw = ParseBuf(&self.buf)
                        .parse::<AuthSwitchRequest<'_>>(())
                        .map_err(|e| Attempt::Failed(e.into()))?;
                    nonce = sw.plugin_data().to_vec();
                    plugin = sw.auth_plugin().into_owned();
                    let data = auth_response(&plugin, pass, &nonce).map_err(Attempt::Refused)?;
                    self.write(&data).await.map_err(Attempt::Failed)?;
                }
                Some(0x01) if plugin == AuthPlugin::CachingSha2Password => {
                    match self.buf.get(1).copied() {
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
                                None => {
                                    self.write(&[0x02]).await.map_err(Attempt::Failed)?;
                                    self.read().await.map_err(Attempt::Failed)?;
                                    match self.buf.split_first() {
                                        Some((0x01, pem)) => pem.to_vec(),
                                        Some((0xFF, _)) => {
                                            return Err(Attempt::Failed(err_packet(
                                                &self.buf, self.caps,
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
        match self.buf.first() {
            Some(0x00) => Ok(()),
            Some(0xFF) => Err(err_packet(&self.buf, self.caps)),
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

    /// Announces the checksum sluice reads (whatever the server writes), registers as a
    /// replica with `server_id` and sends the dump request; events follow through
    /// [`Replication::next_event`].
    pub async fn start_dump(&mut self, request: &BinlogRequest<'_>) -> MyResult<()> {
        self.query_drop("SET @master_binlog_checksum='ALL'").await?;
        let mut payload = Vec::new();
        ComRegisterSlave::new(request.server_id()).serialize(&mut payload);
        self.command(&payload).await?;
        self.read_ok().await?;
        payload.clear();
        request.as_cmd().serialize(&mut payload);
        self.command(&payload).await
    }

    /// The next event of the dump; `None` when the server ended the stream (a non-blocking
    /// dump reached the end of the binlog).
    pub async fn next_event(&mut self) -> MyResult<Option<Event>> {
        if self.ended {
            return Ok(None);
        }
        self.read().await?;
        match self.buf.first() {
            Some(0x00) => {
                let ev = self.esr.read(&self.buf[1..])?;
                Ok(ev)
            }
            Some(0xFF) => Err(err_packet(&self.buf, self.caps)),
            Some(0xFE) if self.buf.len() < 8 => {
                self.ended = true;
                Ok(None)
            }
            _ => Err(self.unexpected()),
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

    fn framed(payload: &[u8], seq: u8) -> Vec<u8> {
        let mut s = seq;
        let mut out = Vec::new();
        frame(&mut s, payload, &mut out);
        out
    }

    async fn unframe(wire: &[u8], seq: u8) -> MyResult<(Vec<u8>, u8)> {
        let mut r = wire;
        let mut s = seq;
        let mut buf = Vec::new();
        read_packet(&mut r, &mut s, &mut buf).await?;
        Ok((buf, s))
    }

    #[test]
    fn small_packets_have_one_header() {
        assert_eq!(framed(b"\x03SELECT 1", 0)[..4], [9, 0, 0, 0]);
        assert_eq!(framed(b"", 7), [0, 0, 0, 7]);
    }

    #[test]
    fn long_packets_continue_in_the_next_chunk() {
        // Exactly one full chunk: a full chunk, then an empty one.
        let payload = vec![0xAB; MAX_CHUNK];
        let wire = framed(&payload, 0);
        assert_eq!(wire.len(), MAX_CHUNK + 8);
        assert_eq!(wire[..4], [0xFF, 0xFF, 0xFF, 0]);
        assert_eq!(wire[MAX_CHUNK + 4..], [0, 0, 0, 1]);
        // Two full chunks and a rest; the sequence id wraps.
        let payload: Vec<u8> = (0..2 * MAX_CHUNK + 3).map(|i| i as u8).collect();
        let wire = framed(&payload, 255);
        assert_eq!(wire.len(), payload.len() + 12);
        assert_eq!(wire[3], 255);
        assert_eq!(wire[MAX_CHUNK + 4 + 3], 0);
        assert_eq!(
            wire[2 * (MAX_CHUNK + 4)..2 * (MAX_CHUNK + 4) + 4],
            [3, 0, 0, 1]
        );
    }

    #[tokio::test]
    async fn packets_read_back_whole() {
        for len in [
            0,
            1,
            100,
            MAX_CHUNK - 1,
            MAX_CHUNK,
            MAX_CHUNK + 1,
            2 * MAX_CHUNK + 3,
        ] {
            let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut wire = framed(&payload, 3);
            // A second packet follows; the first read stops at its own end.
            let next_seq = 3 + (len / MAX_CHUNK) as u8 + 1;
            wire.extend(framed(b"next", next_seq));
            let (got, seq) = unframe(&wire, 3).await.unwrap();
            assert_eq!(got.len(), len);
            assert!(got == payload, "payload of {len} bytes");
            assert_eq!(seq, next_seq);
        }
    }

    #[tokio::test]
    async fn broken_framing_is_an_error() {
        // Out of order.
        let e = unframe(&framed(b"abc", 5), 4).await.unwrap_err();
        assert!(matches!(
            e,
            mysql_async::Error::Driver(DriverError::PacketOutOfOrder)
        ));
        // Cut short: an I/O error, so transient (the connection is gone).
        let wire = framed(b"abcdef", 0);
        let e = unframe(&wire[..7], 0).await.unwrap_err();
        assert_eq!(mysql_error("x", &e).kind(), ErrorKind::Transient);
        // A continuation chunk missing.
        let wire = framed(&vec![1; MAX_CHUNK], 0);
        assert!(unframe(&wire[..MAX_CHUNK + 4], 0).await.is_err());
    }

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

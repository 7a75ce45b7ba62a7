# shellcheck shell=bash
# Test TLS material for the private database servers. Source after common.sh.
#
#   ensure_tls   create (once) in .data/tls/:
#                  ca.pem, ca-key.pem                  a throw-away test CA
#                  server-cert.pem, server-key.pem     CN=localhost,
#                                                      SAN DNS:localhost, IP:127.0.0.1
#   ensure_tls_kafka   beside them (once), for the Kafka broker's TLS listeners:
#                  kafka-broker.pem                    server-key.pem + server-cert.pem in one
#                                                      PEM key store (ssl.keystore.type=PEM)
#                  kafka-<client>-cert.pem, -key.pem   client certificates CN=sluice-<client>
#                                                      for the mutual-TLS listener (clients
#                                                      `writer` and `denied`)
#
# Every MariaDB and MySQL instance is started with --ssl-ca/--ssl-cert/--ssl-key
# pointing here; clients verify against ca.pem (e.g. --ssl-mode=VERIFY_IDENTITY
# --ssl-ca=.data/tls/ca.pem).

TLS_DIR="$DATA_DIR/tls"
TLS_CA="$TLS_DIR/ca.pem"
TLS_CERT="$TLS_DIR/server-cert.pem"
TLS_KEY="$TLS_DIR/server-key.pem"
TLS_DAYS=${TLS_DAYS:-3650}

tls_ready() {
    [[ -s $TLS_CA && -s $TLS_DIR/ca-key.pem && -s $TLS_CERT && -s $TLS_KEY ]]
}

ensure_tls() {
    tls_ready && return 0
    command -v openssl >/dev/null 2>&1 || die "openssl not found (apt-get install openssl)"
    say "tls: creating a test CA and a server certificate for localhost in $(rel "$TLS_DIR")"
    local tmp="$TLS_DIR.tmp" log="$DATA_DIR/tls.log"
    rm -rf -- "$tmp"
    mkdir -p "$tmp"
    : >"$log"
    if ! (
        set -e
        cd "$tmp"
        umask 077
        openssl req -x509 -newkey rsa:2048 -sha256 -nodes -days "$TLS_DAYS" \
            -subj "/CN=sluice test CA" \
            -addext "basicConstraints=critical,CA:TRUE" \
            -addext "keyUsage=critical,keyCertSign,cRLSign" \
            -keyout ca-key.pem -out ca.pem
        openssl req -new -newkey rsa:2048 -sha256 -nodes -subj "/CN=localhost" \
            -keyout server-key.pem -out server.csr
        printf '%s\n' \
            "basicConstraints=critical,CA:FALSE" \
            "keyUsage=critical,digitalSignature,keyEncipherment" \
            "extendedKeyUsage=serverAuth" \
            "subjectAltName=DNS:localhost,IP:127.0.0.1" \
            "subjectKeyIdentifier=hash" \
            "authorityKeyIdentifier=keyid" >server.ext
        openssl x509 -req -sha256 -days "$TLS_DAYS" -in server.csr \
            -CA ca.pem -CAkey ca-key.pem -set_serial "0x$(openssl rand -hex 8)" \
            -extfile server.ext -out server-cert.pem
        openssl verify -CAfile ca.pem server-cert.pem
        rm -f server.csr server.ext
        # The servers run as the user running this script; the certificates
        # are public, the keys stay private to that user.
        chmod 0644 ca.pem server-cert.pem
        chmod 0600 ca-key.pem server-key.pem
    ) </dev/null >>"$log" 2>&1; then
        fail_with_log "$log" "tls: creating the test certificates failed"
    fi
    rm -rf -- "$TLS_DIR"
    mv "$tmp" "$TLS_DIR"
}

# tls_server_args: the --ssl-* options for mariadbd/mysqld (one per line).
tls_server_args() {
    printf '%s\n' "--ssl-ca=$TLS_CA" "--ssl-cert=$TLS_CERT" "--ssl-key=$TLS_KEY"
}

# The clients of the Kafka broker's mutual-TLS listener: certificate CN=sluice-<client>, so
# the broker's principal is User:CN=sluice-<client>.
TLS_KAFKA_CLIENTS="writer denied"
TLS_KAFKA_KEYSTORE="$TLS_DIR/kafka-broker.pem"

tls_kafka_ready() {
    local c
    [[ -s $TLS_KAFKA_KEYSTORE ]] || return 1
    for c in $TLS_KAFKA_CLIENTS; do
        [[ -s $TLS_DIR/kafka-$c-cert.pem && -s $TLS_DIR/kafka-$c-key.pem ]] || return 1
    done
}

# ensure_tls_kafka: the broker's PEM key store and the client certificates, signed by the
# test CA of ensure_tls (created first when missing).
ensure_tls_kafka() {
    ensure_tls
    tls_kafka_ready && return 0
    say "tls: creating the Kafka broker key store and client certificates in $(rel "$TLS_DIR")"
    local log="$DATA_DIR/tls.log"
    if ! (
        set -e
        cd "$TLS_DIR"
        umask 077
        cat server-key.pem server-cert.pem >kafka-broker.pem.tmp
        mv kafka-broker.pem.tmp kafka-broker.pem
        for c in $TLS_KAFKA_CLIENTS; do
            openssl req -new -newkey rsa:2048 -sha256 -nodes -subj "/CN=sluice-$c" \
                -keyout "kafka-$c-key.pem" -out "kafka-$c.csr"
            printf '%s\n' \
                "basicConstraints=critical,CA:FALSE" \
                "keyUsage=critical,digitalSignature,keyEncipherment" \
                "extendedKeyUsage=clientAuth" \
                "subjectKeyIdentifier=hash" \
                "authorityKeyIdentifier=keyid" >"kafka-$c.ext"
            openssl x509 -req -sha256 -days "$TLS_DAYS" -in "kafka-$c.csr" \
                -CA ca.pem -CAkey ca-key.pem -set_serial "0x$(openssl rand -hex 8)" \
                -extfile "kafka-$c.ext" -out "kafka-$c-cert.pem"
            openssl verify -CAfile ca.pem "kafka-$c-cert.pem"
            rm -f "kafka-$c.csr" "kafka-$c.ext"
            chmod 0644 "kafka-$c-cert.pem"
        done
    ) </dev/null >>"$log" 2>&1; then
        fail_with_log "$log" "tls: creating the Kafka certificates failed"
    fi
}

# shellcheck shell=bash
# Test TLS material for the private database servers. Source after common.sh.
#
#   ensure_tls   create (once) in .data/tls/:
#                  ca.pem, ca-key.pem                  a throw-away test CA
#                  server-cert.pem, server-key.pem     CN=localhost,
#                                                      SAN DNS:localhost, IP:127.0.0.1
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

# shellcheck shell=bash
# Private Oracle MySQL instances, run from the unpacked Debian sid root
# (mysql-sid.sh). Source after common.sh, tls.sh and mysql-sid.sh.
#
#   mysql_up NAME PORT SERVER_ID          init (first time) + start + provision users
#   mysql_replica_up NAME PORT SERVER_ID SOURCE_NAME SOURCE_PORT
#                                         the same, then replicate SOURCE (GTID auto-position)
#   mysql_down NAME                       graceful shutdown, SIGKILL after a timeout
#   mysql_status NAME PORT                one status line
#   mysql_client NAME ARGS...             the private mysql client, root over NAME's socket
#
# Instance NAME keeps its datadir in .data/NAME (error log .data/NAME/error.log),
# its LOAD DATA / SELECT INTO OUTFILE folder in .data/NAME-files, its pid file
# and socket in $RUN_DIR/NAME.{pid,sock}.
#
# Users: root without password (socket and 127.0.0.1), sluice/sluice and
# sluice_tls/sluice (REQUIRE SSL) with SELECT, RELOAD, REPLICATION SLAVE,
# REPLICATION CLIENT, repl/repl (REPLICATION SLAVE) for the replicas. All use
# MySQL's default caching_sha2_password; connect over TLS or let the client
# fetch the server's RSA key (--get-server-public-key).

MYSQL_START_TIMEOUT=${MYSQL_START_TIMEOUT:-120}
MYSQL_STOP_TIMEOUT=${MYSQL_STOP_TIMEOUT:-60}
MYSQL_REPLICA_TIMEOUT=${MYSQL_REPLICA_TIMEOUT:-120}
MYSQL_REPL_USER=repl
MYSQL_REPL_PASSWORD=repl

_my_datadir() { printf '%s' "$DATA_DIR/$1"; }
_my_filesdir() { printf '%s' "$DATA_DIR/$1-files"; }
_my_pidfile() { printf '%s' "$RUN_DIR/$1.pid"; }
_my_socket() { printf '%s' "$RUN_DIR/$1.sock"; }
_my_errlog() { printf '%s' "$DATA_DIR/$1/error.log"; }

# mysql_pid NAME: pid of our running instance NAME (fails if not running).
mysql_pid() {
    owned_pid "$(_my_pidfile "$1")" "--datadir=$(_my_datadir "$1")"
}

# _my_tool BIN ARGS...: run a client program from the private root.
_my_tool() {
    local bin=$1
    shift
    mysql_sid_cmd "$bin"
    local root=${MYSQL_ROOT:-$(mysql_sid_root_path)}
    "${MYSQL_SID_CMD[@]}" --no-defaults --character-sets-dir="$root/usr/share/mysql/charsets" "$@"
}

mysql_client() {
    local name=$1
    shift
    _my_tool mysql --protocol=socket -S "$(_my_socket "$name")" -uroot "$@"
}

_my_ping() {
    _my_tool mysqladmin --protocol=socket -S "$(_my_socket "$1")" -uroot \
        --connect-timeout=2 ping >/dev/null 2>&1
}

# _my_base_args NAME: options shared by --initialize and the server.
_my_base_args() {
    local name=$1 root=$MYSQL_ROOT
    printf '%s\n' --no-defaults \
        "--datadir=$(_my_datadir "$name")" \
        "--basedir=$root/usr" \
        "--lc-messages-dir=$root/usr/share/mysql" \
        "--character-sets-dir=$root/usr/share/mysql/charsets" \
        "--plugin-dir=$root/usr/lib/mysql/plugin" \
        "--secure-file-priv=$(_my_filesdir "$name")" \
        --user="$(id -un)" \
        --innodb-buffer-pool-size=32M \
        --innodb-log-buffer-size=8M \
        --innodb-redo-log-capacity=64M
}

# _my_init NAME: create the system tables in a fresh datadir.
_my_init() {
    local name=$1 datadir
    datadir=$(_my_datadir "$name")
    local stamp="$datadir/.sluice-initialized"
    [[ -f $stamp ]] && return 0
    if [[ -e $datadir ]]; then
        warn "$(rel "$datadir") exists but was never fully initialised; recreating it"
        rm -rf -- "$datadir"
    fi
    mkdir -p "$DATA_DIR" "$(_my_filesdir "$name")"
    local log="$DATA_DIR/$name-install.log" args
    mapfile -t args < <(_my_base_args "$name")
    say "$name: initialising $(rel "$datadir")"
    mysql_sid_cmd mysqld
    if ! "${MYSQL_SID_CMD[@]}" "${args[@]}" --initialize-insecure --disable-log-bin \
        --log-error="$log" </dev/null >>"$log" 2>&1; then
        fail_with_log "$log" "$name: mysqld --initialize-insecure failed"
    fi
    touch "$stamp"
}

# _my_provision NAME [if-changed]: create/refresh the users (see _mdb_provision).
_my_provision() {
    local name=$1 mode=${2:-always} h
    local sql="
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
GRANT PROXY ON ''@'' TO 'root'@'127.0.0.1' WITH GRANT OPTION;
"
    for h in '%' 'localhost' '127.0.0.1'; do
        sql+="
CREATE USER IF NOT EXISTS 'sluice'@'$h' IDENTIFIED BY 'sluice';
ALTER USER 'sluice'@'$h' IDENTIFIED WITH caching_sha2_password BY 'sluice' REQUIRE NONE;
REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'sluice'@'$h';
GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'sluice'@'$h';
CREATE USER IF NOT EXISTS 'sluice_tls'@'$h' IDENTIFIED BY 'sluice' REQUIRE SSL;
ALTER USER 'sluice_tls'@'$h' IDENTIFIED WITH caching_sha2_password BY 'sluice' REQUIRE SSL;
REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'sluice_tls'@'$h';
GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'sluice_tls'@'$h';
CREATE USER IF NOT EXISTS '$MYSQL_REPL_USER'@'$h' IDENTIFIED BY '$MYSQL_REPL_PASSWORD';
ALTER USER '$MYSQL_REPL_USER'@'$h' IDENTIFIED WITH caching_sha2_password BY '$MYSQL_REPL_PASSWORD' REQUIRE NONE;
REVOKE ALL PRIVILEGES, GRANT OPTION FROM '$MYSQL_REPL_USER'@'$h';
GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '$MYSQL_REPL_USER'@'$h';
"
    done
    local stamp hash
    stamp="$(_my_datadir "$name")/.sluice-provisioned"
    hash=$(printf '%s' "$sql" | sha256sum | cut -c1-64)
    if [[ $mode == if-changed && $(cat "$stamp" 2>/dev/null) == "$hash" ]]; then
        return 0
    fi
    [[ $mode == if-changed ]] && say "$name: updating its users"
    local out
    # Not binlogged: every instance provisions its own users, replicas included.
    out=$(mysql_client "$name" -e "SET SESSION sql_log_bin=0; $sql" 2>&1) \
        || fail_with_log "$(_my_errlog "$name")" "$name: provisioning users failed: $out"
    printf '%s\n' "$hash" >"$stamp"
}

_my_wait() {
    local name=$1 port=$2 pid=$3 i
    for ((i = 0; i < MYSQL_START_TIMEOUT * 4; i++)); do
        pid_alive "$pid" || fail_with_log "$(_my_errlog "$name")" "$name: mysqld (pid $pid) exited during startup"
        if _my_ping "$name" && port_open 127.0.0.1 "$port"; then
            return 0
        fi
        sleep 0.25
    done
    fail_with_log "$(_my_errlog "$name")" "$name: not answering on 127.0.0.1:$port after ${MYSQL_START_TIMEOUT}s"
}

# _my_start NAME PORT SERVER_ID [EXTRA_OPTION...]: start mysqld unless it runs.
# Returns 0 after a fresh start, 3 when it was already running.
_my_start() {
    local name=$1 port=$2 server_id=$3 pid
    shift 3
    if pid=$(mysql_pid "$name"); then
        if _my_ping "$name" && port_open 127.0.0.1 "$port"; then
            say "$name: already running (pid $pid, 127.0.0.1:$port)"
        else
            say "$name: process $pid exists, waiting for it to answer"
            _my_wait "$name" "$port" "$pid"
            say "$name: up (pid $pid, 127.0.0.1:$port)"
        fi
        _my_provision "$name" if-changed
        return 3
    fi

    local datadir pidfile sock errlog
    datadir=$(_my_datadir "$name")
    pidfile=$(_my_pidfile "$name")
    sock=$(_my_socket "$name")
    errlog=$(_my_errlog "$name")
    mkdir -p "$RUN_DIR"
    rm -f "$pidfile" "$sock" "$sock.lock"

    if port_open 127.0.0.1 "$port"; then
        die "$name: port 127.0.0.1:$port is in use by another process ($(port_owner "$port")); set another port (see scripts/services --help)"
    fi

    _my_init "$name"
    mkdir -p "$(_my_filesdir "$name")"
    chmod 0750 "$(_my_filesdir "$name")"

    local args tls
    mapfile -t args < <(_my_base_args "$name")
    mapfile -t tls < <(tls_server_args)
    mysql_sid_cmd mysqld
    say "$name: starting MySQL on 127.0.0.1:$port"
    (
        close_extra_fds
        exec setsid nohup "${MYSQL_SID_CMD[@]}" "${args[@]}" \
            --bind-address=127.0.0.1 \
            --port="$port" \
            --socket="$sock" \
            --pid-file="$pidfile" \
            --log-error="$errlog" \
            --mysqlx=OFF \
            --skip-name-resolve \
            --performance-schema=OFF \
            --log-bin=mysql-bin \
            --binlog-format=ROW \
            --binlog-row-image=FULL \
            --binlog-row-metadata=FULL \
            --gtid-mode=ON \
            --enforce-gtid-consistency=ON \
            --server-id="$server_id" \
            --binlog-expire-logs-seconds=604800 \
            --max-connections=500 \
            --innodb-flush-log-at-trx-commit=2 \
            --sync-binlog=0 \
            --character-set-server=utf8mb4 \
            "${tls[@]}" \
            "$@" \
            </dev/null >>"$DATA_DIR/$name.stdout.log" 2>&1
    ) &
    pid=$!
    echo "$pid" >"$pidfile"
    _my_wait "$name" "$port" "$pid"
    _my_provision "$name"
    say "$name: up (pid $pid, 127.0.0.1:$port)"
}

mysql_up() {
    local rc=0
    _my_start "$@" || rc=$?
    (( rc == 0 || rc == 3 )) || return "$rc"
}

# _my_replica_status NAME: SHOW REPLICA STATUS, vertical (empty when not a replica).
_my_replica_status() {
    mysql_client "$1" -E -e 'SHOW REPLICA STATUS'
}

_my_field() { sed -n "s/^ *$1: //p" | head -n1; }

# _my_replica_wait NAME SOURCE_PORT: until both replication threads run.
_my_replica_wait() {
    local name=$1 source_port=$2 i io sql st
    for ((i = 0; i < MYSQL_REPLICA_TIMEOUT * 2; i++)); do
        st=$(_my_replica_status "$name" 2>&1) \
            || fail_with_log "$(_my_errlog "$name")" "$name: SHOW REPLICA STATUS failed: $st"
        io=$(_my_field Replica_IO_Running <<<"$st")
        sql=$(_my_field Replica_SQL_Running <<<"$st")
        [[ $io == Yes && $sql == Yes ]] && return 0
        # Give up early on a hard error (a connection retry shows as "Connecting").
        if [[ $sql == No ]] || { [[ $io == No ]] && (( i > 10 )); }; then
            break
        fi
        sleep 0.5
    done
    printf '%s\n' "$st" | grep -E '^ *(Source_Host|Source_Port|Replica_IO_Running|Replica_SQL_Running|Last_IO_Err|Last_SQL_Err|Last_Err|Retrieved_Gtid_Set|Executed_Gtid_Set)' >&2 || true
    fail_with_log "$(_my_errlog "$name")" "$name: replication from 127.0.0.1:$source_port is not running (IO: ${io:-?}, SQL: ${sql:-?})"
}

# _my_replica_configure NAME SOURCE_NAME SOURCE_PORT: point NAME at its source
# (first time, or when the source port changed) and start replication.
_my_replica_configure() {
    local name=$1 source=$2 source_port=$3 st host port sql=""
    st=$(_my_replica_status "$name" 2>&1) \
        || fail_with_log "$(_my_errlog "$name")" "$name: SHOW REPLICA STATUS failed: $st"
    host=$(_my_field Source_Host <<<"$st")
    port=$(_my_field Source_Port <<<"$st")
    if [[ -z $host ]]; then
        # Fresh replica: replay the source's whole history when its binlogs
        # still have it, else start from the source's current state.
        local purged executed
        purged=$(mysql_client "$source" -N -B -e 'SELECT @@GLOBAL.gtid_purged' | tr -d '\n')
        if [[ -n $purged ]]; then
            executed=$(mysql_client "$source" -N -B -e 'SELECT @@GLOBAL.gtid_executed' | tr -d '\n')
            warn "$name: $source has purged binlogs (gtid_purged $purged); the replica starts at its current gtid_executed and does not get the older data"
            sql+="RESET BINARY LOGS AND GTIDS; SET GLOBAL gtid_purged='$executed';"
        fi
        say "$name: replicating $source (127.0.0.1:$source_port) with GTID auto-positioning"
    elif [[ $port != "$source_port" || $host != 127.0.0.1 ]]; then
        say "$name: source moved to 127.0.0.1:$source_port (was $host:$port); re-pointing"
        sql+="STOP REPLICA;"
    else
        [[ $(_my_field Replica_IO_Running <<<"$st") == Yes &&
            $(_my_field Replica_SQL_Running <<<"$st") == Yes ]] && return 0
        say "$name: replication threads not running; starting them"
        mysql_client "$name" -e 'START REPLICA' >/dev/null 2>&1 || true
        _my_replica_wait "$name" "$source_port"
        return 0
    fi
    sql+="CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=$source_port,
        SOURCE_USER='$MYSQL_REPL_USER', SOURCE_PASSWORD='$MYSQL_REPL_PASSWORD',
        SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=2, SOURCE_RETRY_COUNT=100000,
        SOURCE_SSL=1, SOURCE_SSL_CA='$TLS_CA', GET_SOURCE_PUBLIC_KEY=1;
        START REPLICA;"
    local out
    out=$(mysql_client "$name" -e "$sql" 2>&1) \
        || fail_with_log "$(_my_errlog "$name")" "$name: setting up replication failed: $out"
    _my_replica_wait "$name" "$source_port"
}

mysql_replica_up() {
    local name=$1 port=$2 server_id=$3 source=$4 source_port=$5
    mysql_pid "$source" >/dev/null || die "$name: its source $source is not running"
    mysql_up "$name" "$port" "$server_id" --relay-log=relay-bin --log-replica-updates=ON
    _my_replica_configure "$name" "$source" "$source_port"
}

mysql_down() {
    local name=$1 pid
    if pid=$(mysql_pid "$name"); then
        say "$name: stopping (pid $pid)"
        stop_pid "$pid" "$name" "$MYSQL_STOP_TIMEOUT"
        say "$name: stopped"
    else
        say "$name: not running"
    fi
    rm -f "$(_my_pidfile "$name")"
}

mysql_status() {
    local name=$1 port=$2 pid state extra=""
    if pid=$(mysql_pid "$name"); then
        if port_open 127.0.0.1 "$port"; then state=up; else state=starting; fi
        if [[ $state == up ]]; then
            local st host sport io sql
            st=$(_my_replica_status "$name" 2>/dev/null || true)
            host=$(_my_field Source_Host <<<"$st")
            if [[ -n $host ]]; then
                sport=$(_my_field Source_Port <<<"$st")
                io=$(_my_field Replica_IO_Running <<<"$st")
                sql=$(_my_field Replica_SQL_Running <<<"$st")
                extra=", replica of $host:$sport (IO $io, SQL $sql)"
            fi
        fi
    else
        pid="" state=down
    fi
    status_line "$name" "$state" "$pid" "127.0.0.1:$port" \
        "MySQL, data $(rel "$(_my_datadir "$name")"), log $(rel "$(_my_errlog "$name")")$extra"
}

# shellcheck shell=bash
# Private MariaDB instances (never the packaged system service). Source after
# common.sh, deps.sh, tls.sh, mysql-sid.sh and mariadb-trixie.sh.
#
# Instances named mariadb11* run MariaDB 11.8 from the unpacked Debian trixie
# root (mariadb-trixie.sh) through its own loader; the others run the host's
# packaged MariaDB (10.11 on bookworm).
#
#   mariadb_up NAME PORT [SERVER_ID [OPTION...]]
#                             init (first time) + start + provision users
#   mariadb_replica_up NAME PORT SERVER_ID SOURCE_NAME SOURCE_PORT
#                             the same, then replicate SOURCE (MASTER_USE_GTID=slave_pos)
#   mariadb_down NAME         graceful shutdown, SIGKILL after a timeout
#   mariadb_status NAME PORT  one status line
#
# Instance NAME keeps its datadir in .data/NAME (error log: .data/NAME/error.log),
# its pid file and socket in $RUN_DIR/NAME.{pid,sock}.
#
# Users: root without password (socket and 127.0.0.1), sluice/sluice,
# sluice_tls/sluice (REQUIRE SSL) and sluice_plain/sluice (mysql_native_password,
# for tests whose connections must stay plaintext, e.g. through a fault proxy) with
# SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT, repl/repl (REPLICATION
# SLAVE) for the replicas.

MARIADB_START_TIMEOUT=${MARIADB_START_TIMEOUT:-120}
MARIADB_STOP_TIMEOUT=${MARIADB_STOP_TIMEOUT:-60}
MARIADB_REPLICA_TIMEOUT=${MARIADB_REPLICA_TIMEOUT:-120}
MARIADB_REPL_USER=repl
MARIADB_REPL_PASSWORD=repl

_mdb_datadir() { printf '%s' "$DATA_DIR/$1"; }
_mdb_pidfile() { printf '%s' "$RUN_DIR/$1.pid"; }
_mdb_socket() { printf '%s' "$RUN_DIR/$1.sock"; }
_mdb_errlog() { printf '%s' "$DATA_DIR/$1/error.log"; }

# mariadb_pid NAME: pid of our running instance NAME (fails if not running).
mariadb_pid() {
    owned_pid "$(_mdb_pidfile "$1")" "--datadir=$(_mdb_datadir "$1")"
}

# _mdb_is11 NAME: the instance runs MariaDB 11.8 from the trixie root.
_mdb_is11() { [[ $1 == mariadb11* ]]; }

# _mdb_cmd NAME BIN: MDB_CMD=(command line running BIN for instance NAME).
_mdb_cmd() {
    if _mdb_is11 "$1"; then
        mariadb_trixie_cmd "$2"
        MDB_CMD=("${MARIADB_TRIXIE_CMD[@]}")
    else
        MDB_CMD=("$2")
    fi
}

# _mdb_root_args NAME: where the trixie root keeps messages and charsets.
_mdb_root_args() {
    _mdb_is11 "$1" || return 0
    local root
    root=$(mariadb_trixie_root_path)
    printf '%s\n' "--basedir=$root/usr" \
        "--lc-messages-dir=$root/usr/share/mariadb" \
        "--character-sets-dir=$root/usr/share/mariadb/charsets"
}

_mdb_client() {
    local name=$1 extra=()
    shift
    _mdb_cmd "$name" mariadb
    _mdb_is11 "$name" && extra=("--character-sets-dir=$(mariadb_trixie_root_path)/usr/share/mariadb/charsets")
    "${MDB_CMD[@]}" --no-defaults "${extra[@]}" --protocol=socket -S "$(_mdb_socket "$name")" -uroot "$@"
}

_mdb_ping() {
    if _mdb_is11 "$1"; then
        # The trixie root has the client-core package only (no mariadb-admin).
        _mdb_client "$1" --connect-timeout=2 -N -B -e 'SELECT 1' >/dev/null 2>&1
        return
    fi
    mariadb-admin --no-defaults --protocol=socket -S "$(_mdb_socket "$1")" -uroot \
        --connect-timeout=2 ping >/dev/null 2>&1
}

# _mdb_bootstrap11 NAME DATADIR LOG: what mariadb-install-db does (its script
# would start the root's mariadbd without the loader): the system tables, data,
# help tables and sys schema through `mariadbd --bootstrap`, root without a
# password (--auth-root-authentication-method=normal), no test database.
_mdb_bootstrap11() {
    local name=$1 datadir=$2 log=$3 share args
    share="$(mariadb_trixie_root_path)/usr/share/mariadb"
    mapfile -t args < <(_mdb_root_args "$name")
    _mdb_cmd "$name" mariadbd
    {
        printf '%s\n' 'create database if not exists mysql;' 'use mysql;' 'SET @auth_root_socket=NULL;'
        cat "$share/mariadb_system_tables.sql" "$share/mariadb_performance_tables.sql" \
            "$share/mariadb_system_tables_data.sql" "$share/fill_help_tables.sql" \
            "$share/maria_add_gis_sp_bootstrap.sql" "$share/mariadb_sys_schema.sql"
    } | sed -e '/@current_hostname/d' | "${MDB_CMD[@]}" --no-defaults --bootstrap "${args[@]}" \
        --datadir="$datadir" --user=root --log-warnings=0 --enforce-storage-engine="" \
        --max_allowed_packet=8M --net_buffer_length=16K >"$log" 2>&1
}

# Stop the MariaDB/MySQL server listening on PORT when it is not one of ours
# (e.g. the Debian system service). Only the listener on that port is touched,
# and never a server of another sluice checkout (its --datadir ends in /.data/NAME).
_mdb_stop_foreign() {
    local port=$1
    say "port $port is busy and not ours ($(port_owner "$port")); stopping the system MariaDB"
    local p comm cmd pids=()
    if command -v ss >/dev/null 2>&1; then
        mapfile -t pids < <(ss -Hltnp "sport = :$port" 2>/dev/null | grep -oE 'pid=[0-9]+' | cut -d= -f2 | sort -u)
    fi
    ((${#pids[@]})) || die "port $port is busy and its owner is unknown ($(port_owner "$port"))"
    for p in "${pids[@]}"; do
        comm=$(cat "/proc/$p/comm" 2>/dev/null || true)
        case $comm in
            mariadbd|mysqld) ;;
            *) die "port $port is in use by $comm (pid $p), not a MariaDB server; set another port" ;;
        esac
        cmd=$(pid_cmdline "$p")
        if [[ $cmd =~ --datadir=[^\ ]*/\.data/ ]]; then
            die "port $port is used by a sluice test server this checkout does not track (pid $p: $cmd); stop it or set another port"
        fi
    done
    if [[ -x /etc/init.d/mariadb ]]; then
        /etc/init.d/mariadb stop </dev/null >/dev/null 2>&1 || true
    fi
    # A safe wrapper that is the parent of the listener would respawn it.
    local parent
    for p in "${pids[@]}"; do
        parent=$(awk '/^PPid:/ {print $2}' "/proc/$p/status" 2>/dev/null || true)
        if [[ -n $parent && $(cat "/proc/$parent/comm" 2>/dev/null) == *safe ]]; then
            kill -TERM "$parent" 2>/dev/null || true
        fi
    done
    for p in "${pids[@]}"; do
        stop_pid "$p" "foreign mariadbd" 60
    done
}

# _mdb_init NAME: create the system tables in a fresh datadir.
_mdb_init() {
    local name=$1 datadir
    datadir=$(_mdb_datadir "$name")
    local stamp="$datadir/.sluice-initialized"
    [[ -f $stamp ]] && return 0
    if [[ -e $datadir ]]; then
        warn "$(rel "$datadir") exists but was never fully initialised; recreating it"
        rm -rf -- "$datadir"
    fi
    mkdir -p "$datadir"
    local log="$DATA_DIR/$name-install.log"
    say "$name: initialising $(rel "$datadir")"
    if _mdb_is11 "$name"; then
        _mdb_bootstrap11 "$name" "$datadir" "$log" \
            || fail_with_log "$log" "$name: mariadbd --bootstrap failed"
    elif ! mariadb-install-db --no-defaults --datadir="$datadir" --user=root \
        --auth-root-authentication-method=normal --skip-test-db \
        --skip-name-resolve >"$log" 2>&1; then
        fail_with_log "$log" "$name: mariadb-install-db failed"
    fi
    touch "$stamp"
}

# _mdb_provision NAME [if-changed]: create/refresh the users. With if-changed,
# only when this script's user set differs from the one the instance last got
# (a server started by an older version of this script is brought up to date).
_mdb_provision() {
    local name=$1 mode=${2:-always} h
    local sql="
-- root: no password over TCP and the socket, native password (not unix_socket only).
ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('');
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
ALTER USER 'root'@'127.0.0.1' IDENTIFIED VIA mysql_native_password USING PASSWORD('');
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
GRANT PROXY ON ''@'%' TO 'root'@'127.0.0.1' WITH GRANT OPTION;
"
    for h in '%' 'localhost' '127.0.0.1'; do
        sql+="
CREATE USER IF NOT EXISTS 'sluice'@'$h' IDENTIFIED BY 'sluice';
ALTER USER 'sluice'@'$h' IDENTIFIED VIA mysql_native_password USING PASSWORD('sluice');
REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'sluice'@'$h';
GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'sluice'@'$h';
CREATE USER IF NOT EXISTS 'sluice_tls'@'$h' IDENTIFIED BY 'sluice';
ALTER USER 'sluice_tls'@'$h' IDENTIFIED VIA mysql_native_password USING PASSWORD('sluice') REQUIRE SSL;
REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'sluice_tls'@'$h';
GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'sluice_tls'@'$h';
CREATE USER IF NOT EXISTS 'sluice_plain'@'$h' IDENTIFIED BY 'sluice';
ALTER USER 'sluice_plain'@'$h' IDENTIFIED VIA mysql_native_password USING PASSWORD('sluice') REQUIRE NONE;
REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'sluice_plain'@'$h';
GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'sluice_plain'@'$h';
CREATE USER IF NOT EXISTS '$MARIADB_REPL_USER'@'$h' IDENTIFIED BY '$MARIADB_REPL_PASSWORD';
ALTER USER '$MARIADB_REPL_USER'@'$h' IDENTIFIED VIA mysql_native_password USING PASSWORD('$MARIADB_REPL_PASSWORD');
REVOKE ALL PRIVILEGES, GRANT OPTION FROM '$MARIADB_REPL_USER'@'$h';
GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '$MARIADB_REPL_USER'@'$h';
"
    done
    local stamp hash
    stamp="$(_mdb_datadir "$name")/.sluice-provisioned"
    hash=$(printf '%s' "$sql" | sha256sum | cut -c1-64)
    if [[ $mode == if-changed && $(cat "$stamp" 2>/dev/null) == "$hash" ]]; then
        return 0
    fi
    [[ $mode == if-changed ]] && say "$name: updating its users"
    # Anonymous accounts would shadow 'sluice'@'%' for local connections.
    local anon
    anon=$(_mdb_client "$name" -N -B -e "SELECT CONCAT(QUOTE(User),'@',QUOTE(Host)) FROM mysql.user WHERE User=''" 2>&1) \
        || fail_with_log "$(_mdb_errlog "$name")" "$name: cannot query mysql.user: $anon"
    while read -r h; do
        [[ -n $h ]] && sql+="DROP USER $h;"
    done <<<"$anon"
    local out
    out=$(_mdb_client "$name" -e "SET SESSION sql_log_bin=0; $sql" 2>&1) \
        || fail_with_log "$(_mdb_errlog "$name")" "$name: provisioning users failed: $out"
    printf '%s\n' "$hash" >"$stamp"
}

# _mdb_check_tls NAME: warn when a running instance was started without TLS.
_mdb_check_tls() {
    local name=$1 have
    have=$(_mdb_client "$name" -N -B -e 'SELECT @@have_ssl' 2>/dev/null || true)
    if [[ $have != YES ]]; then
        warn "$name runs without TLS (started by an older scripts/services); to get it: scripts/services down && scripts/services up"
    fi
}

mariadb_up() {
    local name=$1 port=$2 server_id=${3:-1} pid
    shift $(( $# < 3 ? $# : 3 ))
    if pid=$(mariadb_pid "$name"); then
        if _mdb_ping "$name" && port_open 127.0.0.1 "$port"; then
            say "$name: already running (pid $pid, 127.0.0.1:$port)"
        else
            say "$name: process $pid exists, waiting for it to answer"
            _mdb_wait "$name" "$port" "$pid"
            say "$name: up (pid $pid, 127.0.0.1:$port)"
        fi
        _mdb_provision "$name" if-changed
        _mdb_check_tls "$name"
        return 0
    fi

    if _mdb_is11 "$name"; then
        mariadb_trixie_ensure_root
    else
        command -v mariadbd >/dev/null 2>&1 || die "mariadbd not installed (apt-get install mariadb-server)"
    fi
    local datadir pidfile sock errlog
    datadir=$(_mdb_datadir "$name")
    pidfile=$(_mdb_pidfile "$name")
    sock=$(_mdb_socket "$name")
    errlog=$(_mdb_errlog "$name")
    mkdir -p "$RUN_DIR"
    rm -f "$pidfile" "$sock" "$sock.lock"

    if port_open 127.0.0.1 "$port"; then
        _mdb_stop_foreign "$port"
        port_open 127.0.0.1 "$port" && die "$name: port 127.0.0.1:$port is in use by another process ($(port_owner "$port"))"
    fi

    _mdb_init "$name"

    local tls root_args
    mapfile -t tls < <(tls_server_args)
    mapfile -t root_args < <(_mdb_root_args "$name")
    _mdb_cmd "$name" mariadbd
    say "$name: starting on 127.0.0.1:$port"
    (
        close_extra_fds
        exec setsid nohup "${MDB_CMD[@]}" --no-defaults \
            "${root_args[@]}" \
            --datadir="$datadir" \
            --user=root \
            --bind-address=127.0.0.1 \
            --port="$port" \
            --socket="$sock" \
            --pid-file="$pidfile" \
            --log-error="$errlog" \
            --skip-name-resolve \
            --log-bin=mysql-bin \
            --binlog-format=ROW \
            --binlog-row-image=FULL \
            --binlog-row-metadata=FULL \
            --gtid-strict-mode=ON \
            --server-id="$server_id" \
            --log-slave-updates \
            --binlog-expire-logs-seconds=604800 \
            --max-connections=500 \
            --innodb-buffer-pool-size=256M \
            --innodb-flush-log-at-trx-commit=2 \
            --sync-binlog=0 \
            --character-set-server=utf8mb4 \
            "${tls[@]}" \
            "$@" \
            </dev/null >>"$DATA_DIR/$name.stdout.log" 2>&1
    ) &
    pid=$!
    echo "$pid" >"$pidfile"
    _mdb_wait "$name" "$port" "$pid"
    _mdb_provision "$name"
    say "$name: up (pid $pid, 127.0.0.1:$port)"
}

_mdb_wait() {
    local name=$1 port=$2 pid=$3 i
    for ((i = 0; i < MARIADB_START_TIMEOUT * 4; i++)); do
        pid_alive "$pid" || fail_with_log "$(_mdb_errlog "$name")" "$name: mariadbd (pid $pid) exited during startup"
        if _mdb_ping "$name" && port_open 127.0.0.1 "$port"; then
            return 0
        fi
        sleep 0.25
    done
    fail_with_log "$(_mdb_errlog "$name")" "$name: not answering on 127.0.0.1:$port after ${MARIADB_START_TIMEOUT}s"
}

mariadb_down() {
    local name=$1 pid
    if pid=$(mariadb_pid "$name"); then
        say "$name: stopping (pid $pid)"
        stop_pid "$pid" "$name" "$MARIADB_STOP_TIMEOUT"
        say "$name: stopped"
    else
        say "$name: not running"
    fi
    rm -f "$(_mdb_pidfile "$name")"
}

mariadb_status() {
    local name=$1 port=$2 pid state extra=""
    if pid=$(mariadb_pid "$name"); then
        if port_open 127.0.0.1 "$port"; then state=up; else state=starting; fi
        if [[ $state == up ]]; then
            local st host
            st=$(_mdb_slave_status "$name" 2>/dev/null || true)
            host=$(_mdb_field Master_Host <<<"$st")
            [[ -n $host ]] && extra=", replica of $host:$(_mdb_field Master_Port <<<"$st") (IO $(_mdb_field Slave_IO_Running <<<"$st"), SQL $(_mdb_field Slave_SQL_Running <<<"$st"))"
        fi
    else
        pid="" state=down
    fi
    local what=""
    _mdb_is11 "$name" && what="MariaDB 11.8 (Debian trixie build), "
    status_line "$name" "$state" "$pid" "127.0.0.1:$port" \
        "${what}data $(rel "$(_mdb_datadir "$name")"), log $(rel "$(_mdb_errlog "$name")"), socket $(rel "$(_mdb_socket "$name")")$extra"
}

# _mdb_slave_status NAME: SHOW SLAVE STATUS\G (empty when not a replica).
_mdb_slave_status() {
    _mdb_client "$1" -e 'SHOW SLAVE STATUS\G'
}

_mdb_field() { sed -n "s/^ *$1: //p" | head -n1; }

# _mdb_replica_wait NAME SOURCE_PORT: until both replication threads run.
_mdb_replica_wait() {
    local name=$1 source_port=$2 i io sql st
    for ((i = 0; i < MARIADB_REPLICA_TIMEOUT * 2; i++)); do
        st=$(_mdb_slave_status "$name" 2>&1) \
            || fail_with_log "$(_mdb_errlog "$name")" "$name: SHOW SLAVE STATUS failed: $st"
        io=$(_mdb_field Slave_IO_Running <<<"$st")
        sql=$(_mdb_field Slave_SQL_Running <<<"$st")
        [[ $io == Yes && $sql == Yes ]] && return 0
        if [[ $sql == No ]] || { [[ $io == No ]] && (( i > 10 )); }; then
            break
        fi
        sleep 0.5
    done
    printf '%s\n' "$st" | grep -E '^ *(Master_Host|Master_Port|Slave_IO_Running|Slave_SQL_Running|Last_IO_Err|Last_SQL_Err|Last_Err|Using_Gtid|Gtid_IO_Pos|Gtid_Slave_Pos)' >&2 || true
    fail_with_log "$(_mdb_errlog "$name")" "$name: replication from 127.0.0.1:$source_port is not running (IO: ${io:-?}, SQL: ${sql:-?})"
}

# _mdb_history_complete SOURCE: the source's binlogs still start at the very
# first transaction (the oldest binlog has an empty Gtid_list).
_mdb_history_complete() {
    local source=$1 first list
    first=$(_mdb_client "$source" -N -B -e 'SHOW BINARY LOGS' | awk 'NR == 1 {print $1}')
    [[ -n $first ]] || return 1
    list=$(_mdb_client "$source" -N -B -e "SHOW BINLOG EVENTS IN '$first' LIMIT 5" \
        | awk -F'\t' '$3 == "Gtid_list" {print $6; exit}')
    [[ $list == '[]' ]]
}

# _mdb_replica_configure NAME SOURCE_NAME SOURCE_PORT: point NAME at its
# source (first time, or when the source port changed) and start replication.
_mdb_replica_configure() {
    local name=$1 source=$2 source_port=$3 st host port sql=""
    st=$(_mdb_slave_status "$name" 2>&1) \
        || fail_with_log "$(_mdb_errlog "$name")" "$name: SHOW SLAVE STATUS failed: $st"
    host=$(_mdb_field Master_Host <<<"$st")
    port=$(_mdb_field Master_Port <<<"$st")
    if [[ -z $host ]]; then
        # Fresh replica: replay the source's whole history when its binlogs
        # still have it, else start from the source's current position.
        if _mdb_history_complete "$source"; then
            sql+="SET GLOBAL gtid_slave_pos='';"
        else
            local pos
            pos=$(_mdb_client "$source" -N -B -e 'SELECT @@GLOBAL.gtid_binlog_pos' | tr -d '\n')
            warn "$name: $source's binlogs no longer hold its whole history; the replica starts at its current position ($pos) and does not get the older data"
            sql+="SET GLOBAL gtid_slave_pos='$pos';"
        fi
        say "$name: replicating $source (127.0.0.1:$source_port) with GTID (slave_pos)"
    elif [[ $port != "$source_port" || $host != 127.0.0.1 ]]; then
        say "$name: source moved to 127.0.0.1:$source_port (was $host:$port); re-pointing"
        sql+="STOP SLAVE;"
    else
        [[ $(_mdb_field Slave_IO_Running <<<"$st") == Yes &&
            $(_mdb_field Slave_SQL_Running <<<"$st") == Yes ]] && return 0
        say "$name: replication threads not running; starting them"
        _mdb_client "$name" -e 'START SLAVE' >/dev/null 2>&1 || true
        _mdb_replica_wait "$name" "$source_port"
        return 0
    fi
    local ssl="MASTER_SSL=1, MASTER_SSL_CA='$TLS_CA'"
    [[ $(_mdb_client "$source" -N -B -e 'SELECT @@have_ssl' 2>/dev/null) == YES ]] || ssl="MASTER_SSL=0"
    sql+="CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$source_port,
        MASTER_USER='$MARIADB_REPL_USER', MASTER_PASSWORD='$MARIADB_REPL_PASSWORD',
        MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=2, $ssl;
        START SLAVE;"
    local out
    out=$(_mdb_client "$name" -e "$sql" 2>&1) \
        || fail_with_log "$(_mdb_errlog "$name")" "$name: setting up replication failed: $out"
    _mdb_replica_wait "$name" "$source_port"
}

mariadb_replica_up() {
    local name=$1 port=$2 server_id=$3 source=$4 source_port=$5
    mariadb_pid "$source" >/dev/null || die "$name: its source $source is not running"
    # Replication settings live in the datadir (master.info, relay-log.info,
    # mysql.gtid_slave_pos), so a restarted replica resumes on its own.
    mariadb_up "$name" "$port" "$server_id" --relay-log=relay-bin
    _mdb_replica_configure "$name" "$source" "$source_port"
}

# shellcheck shell=bash
# Private MariaDB instances (never the packaged system service). Source after
# common.sh and deps.sh.
#
#   mariadb_up NAME PORT      init (first time) + start + provision users
#   mariadb_down NAME         graceful shutdown, SIGKILL after a timeout
#   mariadb_status NAME PORT  one status line
#
# Instance NAME keeps its datadir in .data/NAME (error log: .data/NAME/error.log),
# its pid file and socket in $RUN_DIR/NAME.{pid,sock}.

MARIADB_START_TIMEOUT=${MARIADB_START_TIMEOUT:-120}
MARIADB_STOP_TIMEOUT=${MARIADB_STOP_TIMEOUT:-60}

_mdb_datadir() { printf '%s' "$DATA_DIR/$1"; }
_mdb_pidfile() { printf '%s' "$RUN_DIR/$1.pid"; }
_mdb_socket() { printf '%s' "$RUN_DIR/$1.sock"; }
_mdb_errlog() { printf '%s' "$DATA_DIR/$1/error.log"; }

# mariadb_pid NAME: pid of our running instance NAME (fails if not running).
mariadb_pid() {
    owned_pid "$(_mdb_pidfile "$1")" "--datadir=$(_mdb_datadir "$1")"
}

_mdb_client() {
    local name=$1
    shift
    mariadb --no-defaults --protocol=socket -S "$(_mdb_socket "$name")" -uroot "$@"
}

_mdb_ping() {
    mariadb-admin --no-defaults --protocol=socket -S "$(_mdb_socket "$1")" -uroot \
        --connect-timeout=2 ping >/dev/null 2>&1
}

# Kill mariadbd/mysqld processes that are not one of our instances (e.g. the
# Debian system service) when they block our port.
_mdb_stop_foreign() {
    local port=$1
    say "port $port is busy and not ours ($(port_owner "$port")); stopping the system MariaDB"
    if [[ -x /etc/init.d/mariadb ]]; then
        /etc/init.d/mariadb stop </dev/null >/dev/null 2>&1 || true
    fi
    local p comm cmd pids=()
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        comm=$(cat "/proc/$p/comm" 2>/dev/null || true)
        case $comm in
            mysqld_safe|mariadbd-safe|mariadbd|mysqld) ;;
            *) continue ;;
        esac
        cmd=$(pid_cmdline "$p")
        [[ $cmd == *"--datadir=$DATA_DIR/"* ]] && continue
        pids+=("$p")
    done
    # The safe wrappers first, so they do not respawn the server.
    for p in "${pids[@]}"; do
        [[ $(cat "/proc/$p/comm" 2>/dev/null) == *safe ]] && kill -TERM "$p" 2>/dev/null || true
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
    if ! mariadb-install-db --no-defaults --datadir="$datadir" --user=root \
        --auth-root-authentication-method=normal --skip-test-db \
        --skip-name-resolve >"$log" 2>&1; then
        fail_with_log "$log" "$name: mariadb-install-db failed"
    fi
    touch "$stamp"
}

_mdb_provision() {
    local name=$1 h
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
"
    done
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
}

mariadb_up() {
    local name=$1 port=$2 pid
    if pid=$(mariadb_pid "$name"); then
        if _mdb_ping "$name" && port_open 127.0.0.1 "$port"; then
            say "$name: already running (pid $pid, 127.0.0.1:$port)"
            return 0
        fi
        say "$name: process $pid exists, waiting for it to answer"
        _mdb_wait "$name" "$port" "$pid"
        say "$name: up (pid $pid, 127.0.0.1:$port)"
        return 0
    fi

    command -v mariadbd >/dev/null 2>&1 || die "mariadbd not installed (apt-get install mariadb-server)"
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

    say "$name: starting on 127.0.0.1:$port"
    (
        close_extra_fds
        exec setsid nohup mariadbd --no-defaults \
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
            --server-id=1 \
            --log-slave-updates \
            --binlog-expire-logs-seconds=604800 \
            --max-connections=500 \
            --innodb-buffer-pool-size=256M \
            --innodb-flush-log-at-trx-commit=2 \
            --sync-binlog=0 \
            --character-set-server=utf8mb4 \
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
    local name=$1 port=$2 pid state
    if pid=$(mariadb_pid "$name"); then
        if port_open 127.0.0.1 "$port"; then state=up; else state=starting; fi
    else
        pid="" state=down
    fi
    status_line "$name" "$state" "$pid" "127.0.0.1:$port" \
        "data $(rel "$(_mdb_datadir "$name")"), log $(rel "$(_mdb_errlog "$name")"), socket $(rel "$(_mdb_socket "$name")")"
}

# shellcheck shell=bash
# Shared helpers for scripts/services and scripts/lib/*. Source it, don't run it.

SLUICE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SLUICE_LIB="$SLUICE_ROOT/scripts/lib"
DATA_DIR="$SLUICE_ROOT/.data"
CACHE_DIR="${SLUICE_CACHE_DIR:-${HOME:-/root}/.cache/sluice}"

# Pid files and unix sockets. Unix socket paths are limited to ~107 bytes, so
# fall back to a per-checkout folder in /tmp when the repo lives too deep.
RUN_DIR="$DATA_DIR/run"
if (( ${#RUN_DIR} > 70 )); then
    RUN_DIR="/tmp/sluice-run-$(printf '%s' "$SLUICE_ROOT" | md5sum | cut -c1-10)"
fi

say() { printf '[services] %s\n' "$*"; }
warn() { printf '[services] WARNING: %s\n' "$*" >&2; }
die() { printf '[services] ERROR: %s\n' "$*" >&2; exit 1; }

# show_log_tail FILE [LINES]: print the end of a log file to stderr.
show_log_tail() {
    local file=$1 lines=${2:-40}
    if [[ -s $file ]]; then
        printf '[services] ---- last %s lines of %s ----\n' "$lines" "$file" >&2
        tail -n "$lines" "$file" >&2 || true
        printf '[services] ---- end of %s ----\n' "$file" >&2
    else
        printf '[services] (log %s is empty or missing)\n' "$file" >&2
    fi
}

# fail_with_log FILE MESSAGE...: show the log tail, then exit 1.
fail_with_log() {
    local file=$1
    shift
    show_log_tail "$file" 60
    die "$* (see $file)"
}

# pid_alive PID: process exists and is not a zombie.
pid_alive() {
    local pid=${1:-}
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    local state
    state=$(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [[ $state != Z ]]
}

# pid_cmdline PID: the process' command line with spaces between arguments.
pid_cmdline() {
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true
}

# read_pid FILE: the pid in FILE, or nothing.
read_pid() {
    local f=$1 pid=""
    [[ -f $f ]] && read -r pid <"$f" 2>/dev/null || true
    [[ $pid =~ ^[0-9]+$ ]] && printf '%s' "$pid"
    return 0
}

# owned_pid PIDFILE PATTERN: print the pid from PIDFILE if that process runs
# and its command line contains PATTERN (guards against pid reuse).
owned_pid() {
    local pid
    pid=$(read_pid "$1")
    [[ -n $pid ]] || return 1
    pid_alive "$pid" || return 1
    [[ $(pid_cmdline "$pid") == *"$2"* ]] || return 1
    printf '%s' "$pid"
}

# port_open HOST PORT: something accepts TCP connections there.
port_open() {
    (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

# port_owner PORT: best-effort description of the process listening on PORT.
port_owner() {
    if command -v ss >/dev/null 2>&1; then
        ss -Hltnp "sport = :$1" 2>/dev/null | sed -n 's/.*users:((\(.*\)))/\1/p' | head -n1
    fi
}

# stop_pid PID NAME [TIMEOUT]: SIGTERM, wait, then SIGKILL.
stop_pid() {
    local pid=$1 name=$2 timeout=${3:-60} waited=0
    pid_alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    while pid_alive "$pid"; do
        if (( waited >= timeout * 10 )); then
            warn "$name (pid $pid) did not stop within ${timeout}s; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.5
            break
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
}

# close_extra_fds: close every fd above 2 in the current (sub)shell, so that
# daemons started from it do not keep the caller's pipes or our lock open.
close_extra_fds() {
    local fd
    for fd in /proc/$BASHPID/fd/*; do
        fd=${fd##*/}
        [[ $fd =~ ^[0-9]+$ ]] && ((fd > 2)) && eval "exec $fd>&-" 2>/dev/null
    done
    return 0
}

# rel PATH: PATH relative to the repo root when it lies inside it (for output).
rel() {
    local p=$1
    if [[ $p == "$SLUICE_ROOT/"* ]]; then
        printf '%s' "${p#"$SLUICE_ROOT/"}"
    else
        printf '%s' "$p"
    fi
}

# status_line SERVICE STATE PID ADDRESS DETAIL
status_line() {
    printf '%-16s %-9s %-8s %-22s %s\n' "$1" "$2" "${3:--}" "$4" "${5:-}"
}

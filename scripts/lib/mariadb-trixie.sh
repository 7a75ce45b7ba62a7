# shellcheck shell=bash
# MariaDB 11.8 LTS from Debian 13 (trixie), unpacked into a private root in the
# cache and run through trixie's own dynamic loader (its build needs a newer
# glibc than bookworm's). The same machinery as MySQL from sid (mysql-sid.sh):
# a private apt configuration (own sources.list, lists, cache and status under
# $CACHE_DIR/mariadb-trixie), the packages pinned with versions and sha256 in
# scripts/lib/mariadb-trixie.lock, extracted with `dpkg -x`; nothing is
# installed into the system. Source after common.sh and mysql-sid.sh.
#
#   mariadb_trixie_ensure_root   fetch + unpack (once; cached); sets MARIADB_TRIXIE_ROOT
#   mariadb_trixie_root_ready    the unpacked root for the current lock file exists
#   mariadb_trixie_root_path     where that root lives
#   mariadb_trixie_cmd BIN       set MARIADB_TRIXIE_CMD to the command line running BIN
#                                (mariadbd, mariadb, mariadb-admin, mariadb-binlog, ...)

MARIADB_TRIXIE_ROOT=

# _mtx NAME ARGS...: run a mysql-sid.sh function with the trixie settings.
_mtx() {
    local MYSQL_SID_LOCK="$SLUICE_LIB/mariadb-trixie.lock"
    local MYSQL_SID_DIR="$CACHE_DIR/mariadb-trixie"
    local MYSQL_SID_DEBS="$CACHE_DIR/mariadb-trixie/debs"
    local MYSQL_SID_SUITE=trixie
    local MYSQL_SID_KEY_PKG=mariadb-server-core
    local MYSQL_SID_ROOT_PREFIX=mariadb-root
    local MYSQL_SID_LABEL=mariadb11
    local -a MYSQL_SID_WANT=(mariadb-server-core mariadb-client-core)
    # Only maintainer scripts and perl/shell helpers we never run need these.
    local MYSQL_SID_SKIP_RE='^(perl|perl-base|perl-modules-.*|libperl.*|debconf|debconf-2.0|cdebconf|adduser|passwd|lsb-base|sysvinit-utils|init-system-helpers|mysql-common|mariadb-common|mariadb-client-compat|mariadb-server-compat|galera-4|tzdata|psmisc|procps|rsync|socat|iproute2|lsof|gawk|libdbi-perl|libdbd-mariadb-perl|libconfig-inifiles-perl)$'
    local _MSID_UPDATED=0
    local MYSQL_ROOT=${MARIADB_TRIXIE_ROOT:-}
    "$@"
    MARIADB_TRIXIE_ROOT=$MYSQL_ROOT
}

mariadb_trixie_root_path() { _mtx mysql_sid_root_path; }
mariadb_trixie_root_ready() { _mtx mysql_sid_root_ready; }

mariadb_trixie_ensure_root() {
    _mtx mysql_sid_ensure_root
}

# mariadb_trixie_cmd BIN: MARIADB_TRIXIE_CMD=(loader --library-path ... ROOT/usr/{s,}bin/BIN).
mariadb_trixie_cmd() {
    [[ -n $MARIADB_TRIXIE_ROOT ]] || MARIADB_TRIXIE_ROOT=$(mariadb_trixie_root_path)
    _mtx mysql_sid_cmd "$1"
    MARIADB_TRIXIE_CMD=("${MYSQL_SID_CMD[@]}")
}

# shellcheck shell=bash
# Debian package helpers. Source after common.sh.
#
#   ensure_apt_packages PKG...  install the packages that are not installed yet
#                               (runs `apt-get update` once, and only then)
#   ensure_build_deps           cmake, libssl-dev, pkg-config (+ compiler) for
#                               building the rdkafka crate
#   ensure_service_deps         mariadb-server, mariadb-client, kcat, curl, Java (JDK), Maven,
#                               Python 3 with venv
#   apt_fetch_deb PKG DIR       download PKG's candidate .deb into DIR without installing
#                               it (for `dpkg -x`); prints the file's path

_APT_UPDATED=${_APT_UPDATED:-0}

# pkg_installed PKG: dpkg says the package is fully installed.
pkg_installed() {
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true) == installed ]]
}

ensure_apt_packages() {
    local missing=() pkg
    for pkg in "$@"; do
        pkg_installed "$pkg" || missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0

    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install manually: ${missing[*]}"
    (( EUID == 0 )) || die "need root to install: ${missing[*]}"

    # Make sure apt does not start the packaged services (mariadb) on install.
    # Only create the policy file if there is none, and remove it afterwards.
    local policy=/usr/sbin/policy-rc.d created_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\n# written by sluice scripts/services during apt-get install\nexit 101\n' >"$policy"
        chmod 0755 "$policy"
        created_policy=1
    fi

    local log="$CACHE_DIR/apt.log" rc=0
    mkdir -p "$CACHE_DIR"
    : >"$log"
    export DEBIAN_FRONTEND=noninteractive
    if (( _APT_UPDATED == 0 )); then
        say "apt-get update"
        apt-get -o DPkg::Lock::Timeout=300 update >>"$log" 2>&1 || rc=$?
        _APT_UPDATED=1
    fi
    if (( rc == 0 )); then
        say "apt-get install ${missing[*]}"
        apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends \
            -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
            "${missing[@]}" </dev/null >>"$log" 2>&1 || rc=$?
    fi
    if (( created_policy )); then
        rm -f "$policy"
    fi
    (( rc == 0 )) || fail_with_log "$log" "apt-get failed installing: ${missing[*]}"
}

ensure_build_deps() {
    # libcurl4-openssl-dev: librdkafka's cmake build enables curl when it finds libcurl.
    ensure_apt_packages cmake libssl-dev pkg-config build-essential libcurl4-openssl-dev zlib1g-dev
}

ensure_service_deps() {
    local pkgs=(mariadb-server mariadb-client kcat curl)
    command -v java >/dev/null 2>&1 || pkgs+=(openjdk-17-jre-headless)
    # javac: the test bed compiles scripts/lib/connect-json-check against Kafka's jars.
    command -v javac >/dev/null 2>&1 || pkgs+=(openjdk-17-jdk-headless)
    command -v python3 >/dev/null 2>&1 || pkgs+=(python3 python3-venv)
    command -v mvn >/dev/null 2>&1 || pkgs+=(maven)
    ensure_apt_packages "${pkgs[@]}"
}

# _apt_candidate PKG: the version apt would install, or nothing.
_apt_candidate() {
    apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)" {print $2; exit}'
}

# apt_fetch_deb PKG DIR: download the candidate .deb of PKG (no dependencies) into DIR,
# which is emptied of older .debs of PKG first, and print its path. Nothing is installed
# and no maintainer script runs; unpack it with `dpkg -x`. Runs `apt-get update` first
# when apt knows no candidate yet (a fresh machine's empty lists), at most once per run.
apt_fetch_deb() {
    local pkg=$1 dir=$2 log="$CACHE_DIR/apt.log" ver f
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; cannot fetch the Debian package $pkg"
    mkdir -p "$dir" "$CACHE_DIR"
    export DEBIAN_FRONTEND=noninteractive
    ver=$(_apt_candidate "$pkg")
    if [[ -z $ver ]] && (( _APT_UPDATED == 0 )); then
        say "apt-get update" >&2
        apt-get -o DPkg::Lock::Timeout=300 update </dev/null >>"$log" 2>&1 \
            || fail_with_log "$log" "apt-get update failed (needed to find $pkg)"
        _APT_UPDATED=1
        ver=$(_apt_candidate "$pkg")
    fi
    [[ -n $ver ]] || die "apt knows no package $pkg (apt-cache policy $pkg shows no candidate)"
    rm -f -- "$dir/${pkg}_"*.deb
    say "apt-get download $pkg=$ver (unpacked with dpkg -x, not installed)" >&2
    if ! (cd "$dir" && apt-get -q -o APT::Sandbox::User=root download "$pkg=$ver") </dev/null >>"$log" 2>&1; then
        # Stale lists name a version the mirror no longer serves: refresh once and retry.
        (( _APT_UPDATED == 0 )) || fail_with_log "$log" "apt-get download $pkg=$ver failed"
        say "apt-get download failed; apt-get update and retry" >&2
        apt-get -o DPkg::Lock::Timeout=300 update </dev/null >>"$log" 2>&1 \
            || fail_with_log "$log" "apt-get update failed (needed to find $pkg)"
        _APT_UPDATED=1
        ver=$(_apt_candidate "$pkg")
        [[ -n $ver ]] || die "apt knows no package $pkg after apt-get update"
        (cd "$dir" && apt-get -q -o APT::Sandbox::User=root download "$pkg=$ver") </dev/null >>"$log" 2>&1 \
            || fail_with_log "$log" "apt-get download $pkg=$ver failed"
    fi
    for f in "$dir/${pkg}_"*.deb; do
        [[ -f $f ]] && { printf '%s' "$f"; return 0; }
    done
    fail_with_log "$log" "apt-get download $pkg=$ver left no ${pkg}_*.deb in $dir"
}

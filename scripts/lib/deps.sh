# shellcheck shell=bash
# Debian package helpers. Source after common.sh.
#
#   ensure_apt_packages PKG...  install the packages that are not installed yet
#                               (runs `apt-get update` once, and only then)
#   ensure_build_deps           cmake, libssl-dev, pkg-config (+ compiler) for
#                               building the rdkafka crate
#   ensure_service_deps         mariadb-server, mariadb-client, kcat, curl, Java, Maven,
#                               Python 3 with venv

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
    command -v python3 >/dev/null 2>&1 || pkgs+=(python3 python3-venv)
    command -v mvn >/dev/null 2>&1 || pkgs+=(maven)
    ensure_apt_packages "${pkgs[@]}"
}

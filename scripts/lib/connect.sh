# shellcheck shell=bash
# Kafka Connect for the test bed: one distributed worker (`connect`) running Kafka's own
# connect-runtime (the broker's Kafka version: the jars of kafka.sh's cache) with the plugins
# pinned in connect-plugins.lock (Debezium's MySQL, MariaDB and JDBC sink connectors, Apicurio's
# converters). Source after common.sh and kafka.sh.
#
#   connect_ensure_plugins   fetch and unpack the plugins once (stamp file holds the lock's hash)
#   connect_plugins_ready
#   connect_up / connect_down / connect_status / connect_pid
#   connect_ensure_json_check  compile scripts/lib/connect-json-check (javac, once per source)
#
# The worker: REST on 127.0.0.1:CONNECT_PORT (8083), group `sluice-testbed-connect`, its
# internal topics `_sluice_testbed_connect.{configs,offsets,status}` on the test bed's broker
# (replication factor 1), `connector.client.config.override.policy=All` (a connector may set
# its own consumer.override.* / producer.override.*, e.g. isolation.level=read_committed),
# `exactly.once.source.support=enabled`, sink offsets committed every second
# (offset.flush.interval.ms=1000), JsonConverter as the worker's default converter; one class
# loader per plugin directory under plugin.path. Data and logs in .data/connect.
#
# The JVM: heap SLUICE_CONNECT_HEAP_OPTS (default -Xms128m -Xmx640m) and the collector and JIT
# flags SLUICE_CONNECT_JVM_OPTS (default -XX:+UseSerialGC -XX:TieredStopAtLevel=1: small and
# quick to start, for tests; `scripts/bench --peer debezium` gives the worker a 2 GB heap and
# Kafka's own G1 flags instead).

CONNECT_PLUGINS_LOCK="$SLUICE_LIB/connect-plugins.lock"
CONNECT_PLUGINS_HOME="$CACHE_DIR/connect-plugins"
CONNECT_PLUGIN_PATH="$CONNECT_PLUGINS_HOME/plugins"
CONNECT_PLUGINS_STAMP="$CONNECT_PLUGIN_PATH/.sluice-complete"
CONNECT_DATA="$DATA_DIR/connect"
CONNECT_PROPS="$CONNECT_DATA/connect-distributed.properties"
CONNECT_LOG="$CONNECT_DATA/connect.log"
CONNECT_PIDFILE="$RUN_DIR/connect.pid"
CONNECT_PORT=${SLUICE_CONNECT_PORT:-8083}
CONNECT_URL="http://127.0.0.1:$CONNECT_PORT"
CONNECT_GROUP=sluice-testbed-connect
CONNECT_TOPIC_PREFIX=_sluice_testbed_connect
CONNECT_START_TIMEOUT=${CONNECT_START_TIMEOUT:-180}
CONNECT_STOP_TIMEOUT=${CONNECT_STOP_TIMEOUT:-60}
CONNECT_JSON_CHECK_SRC="$SLUICE_LIB/connect-json-check/ConnectJsonCheck.java"

_connect_lock_hash() { sha256sum "$CONNECT_PLUGINS_LOCK" | cut -c1-64; }

connect_plugins_ready() {
    [[ -f $CONNECT_PLUGINS_STAMP && $(cat "$CONNECT_PLUGINS_STAMP" 2>/dev/null) == "$(_connect_lock_hash)" ]]
}

# _connect_fetch_archive DIR ARTIFACT SHA256 ROOT LOG: unpack a plugin archive into ROOT/DIR.
_connect_fetch_archive() {
    local dir=$1 artifact=$2 sha=$3 root=$4 log=$5 dl="$CONNECT_PLUGINS_HOME/download" f got
    rm -rf "$dl"
    if ! (cd "$CONNECT_PLUGINS_HOME" && mvn -B -ntp -Dmaven.repo.local="$CACHE_DIR/m2" \
        org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
        -Dartifact="$artifact" -DoutputDirectory="$dl" </dev/null >>"$log" 2>&1); then
        fail_with_log "$log" "connect: maven could not fetch $artifact (plugin $dir)"
    fi
    f=$(find "$dl" -maxdepth 1 -type f -name '*.tar.gz' | head -n1)
    [[ -n $f ]] || fail_with_log "$log" "connect: no .tar.gz in $dl after fetching $artifact"
    got=$(sha256sum "$f" | cut -c1-64)
    [[ $got == "$sha" ]] \
        || die "connect: $artifact has sha256 $got, connect-plugins.lock pins $sha (a changed upload, or edit the lock)"
    mkdir -p "$root/$dir"
    tar -xzf "$f" -C "$root/$dir" --strip-components=1 || die "connect: could not unpack $f into $root/$dir"
    find "$root/$dir" -maxdepth 1 -name '*.jar' | grep -q . || die "connect: $f held no jar for plugin $dir"
    rm -rf "$dl"
}

# _connect_fetch_deps DIR ARTIFACT SHA256 ROOT LOG: ARTIFACT's jar and its runtime dependencies
# (without Kafka's own jars) into ROOT/DIR.
_connect_fetch_deps() {
    local dir=$1 artifact=$2 sha=$3 root=$4 log=$5 g a v pom="$CONNECT_PLUGINS_HOME/$1-pom.xml" got
    IFS=: read -r g a v <<<"$artifact"
    cat >"$pom" <<EOP
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <!-- Written by scripts/lib/connect.sh to fetch $artifact and its dependencies. -->
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.sluice.testbed</groupId>
  <artifactId>connect-plugin-$dir</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version></dependency>
  </dependencies>
</project>
EOP
    if ! (cd "$CONNECT_PLUGINS_HOME" && mvn -B -ntp -f "$pom" -Dmaven.repo.local="$CACHE_DIR/m2" \
        org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
        -DincludeScope=runtime -DexcludeGroupIds=org.apache.kafka \
        -DoutputDirectory="$root/$dir" </dev/null >>"$log" 2>&1); then
        fail_with_log "$log" "connect: maven could not fetch $artifact and its dependencies (plugin $dir)"
    fi
    [[ -f $root/$dir/$a-$v.jar ]] || fail_with_log "$log" "connect: $a-$v.jar missing after fetching $artifact"
    got=$(sha256sum "$root/$dir/$a-$v.jar" | cut -c1-64)
    [[ $got == "$sha" ]] \
        || die "connect: $a-$v.jar has sha256 $got, connect-plugins.lock pins $sha (a changed upload, or edit the lock)"
}

connect_ensure_plugins() {
    connect_plugins_ready && return 0
    command -v mvn >/dev/null 2>&1 || die "mvn not found (apt-get install maven)"
    say "connect: fetching the plugins of $(rel "$CONNECT_PLUGINS_LOCK") from Maven Central into $CONNECT_PLUGIN_PATH (once)"
    mkdir -p "$CONNECT_PLUGINS_HOME"
    local log="$CONNECT_PLUGINS_HOME/mvn.log" tmp="$CONNECT_PLUGIN_PATH.tmp" dir artifact how sha rest
    : >"$log"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    while read -r dir artifact how sha rest; do
        [[ -z $dir || $dir == \#* ]] && continue
        [[ -n $sha && -z $rest && $sha =~ ^[0-9a-f]{64}$ ]] \
            || die "connect: bad line in $(rel "$CONNECT_PLUGINS_LOCK"): '$dir $artifact $how $sha $rest' (expected: dir artifact archive|deps sha256)"
        say "connect: plugin $dir ($artifact)"
        case $how in
            archive) _connect_fetch_archive "$dir" "$artifact" "$sha" "$tmp" "$log" ;;
            deps) _connect_fetch_deps "$dir" "$artifact" "$sha" "$tmp" "$log" ;;
            *) die "connect: plugin $dir: unknown kind '$how' in $(rel "$CONNECT_PLUGINS_LOCK") (archive or deps)" ;;
        esac
    done <"$CONNECT_PLUGINS_LOCK"
    rm -rf "$CONNECT_PLUGIN_PATH"
    mv "$tmp" "$CONNECT_PLUGIN_PATH"
    _connect_lock_hash >"$CONNECT_PLUGINS_STAMP"
    say "connect: $(find "$CONNECT_PLUGIN_PATH" -name '*.jar' | wc -l) jars in $CONNECT_PLUGIN_PATH"
}

# connect_ensure_json_check: compile ConnectJsonCheck.java against Kafka's connect-json,
# connect-api and Jackson jars (the broker's cache) into the download cache, once per source;
# sets CONNECT_JSON_CHECK_CP to the classpath that runs it.
connect_ensure_json_check() {
    kafka_ensure_libs
    command -v javac >/dev/null 2>&1 || die "javac not found (apt-get install openjdk-17-jdk-headless)"
    local hash out
    hash=$(cat "$CONNECT_JSON_CHECK_SRC" "$KAFKA_STAMP" | sha256sum | cut -c1-12)
    out="$CACHE_DIR/connect-json-check-$hash"
    if [[ ! -f $out/ConnectJsonCheck.class ]]; then
        # Tests run the checker concurrently: each compiles into a folder of its own and the
        # first to finish renames it into place (rename(2) onto a folder that exists and is
        # not empty fails, so a later one discards its copy; no one sees a half-written one).
        local tmp
        tmp=$(mktemp -d "$out.tmp.XXXXXX")
        javac -d "$tmp" -cp "$KAFKA_LIBS/*" "$CONNECT_JSON_CHECK_SRC" >&2 \
            || { rm -rf "$tmp"; die "connect: javac failed on $(rel "$CONNECT_JSON_CHECK_SRC")"; }
        mv -T "$tmp" "$out" 2>/dev/null || rm -rf "$tmp"
        [[ -f $out/ConnectJsonCheck.class ]] || die "connect: $out holds no ConnectJsonCheck.class"
    fi
    CONNECT_JSON_CHECK_CP="$out:$KAFKA_LIBS/*"
}

connect_pid() {
    owned_pid "$CONNECT_PIDFILE" "ConnectDistributed $CONNECT_PROPS"
}

_connect_write_props() {
    mkdir -p "$CONNECT_DATA"
    cat >"$CONNECT_PROPS" <<EOP
# Generated by scripts/services on every start; edit scripts/lib/connect.sh, not this file.
bootstrap.servers=$KAFKA_BOOTSTRAP
group.id=$CONNECT_GROUP
listeners=http://127.0.0.1:$CONNECT_PORT
rest.advertised.host.name=127.0.0.1
rest.advertised.port=$CONNECT_PORT
plugin.path=$CONNECT_PLUGIN_PATH
# The plugins are found by scanning their jars (Debezium's and Apicurio's jars do not all
# carry the ServiceLoader manifests service_load needs).
plugin.discovery=hybrid_warn
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
config.storage.topic=$CONNECT_TOPIC_PREFIX.configs
offset.storage.topic=$CONNECT_TOPIC_PREFIX.offsets
status.storage.topic=$CONNECT_TOPIC_PREFIX.status
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
offset.storage.partitions=5
status.storage.partitions=1
# Connectors may override their clients' settings (consumer.override.isolation.level=...).
connector.client.config.override.policy=All
# Source connectors write with transactions (Debezium's exactly.once.support=required).
exactly.once.source.support=enabled
# Sink consumer offsets and source offsets flushed every second (default 60 s), so a test
# sees a sink's committed position promptly.
offset.flush.interval.ms=1000
# A deleted or restarted connector's tasks get 10 s to stop (default 5 s).
task.shutdown.graceful.timeout.ms=10000
EOP
}

_connect_ready() {
    curl -fsS -m 5 -o /dev/null "$CONNECT_URL/health" 2>/dev/null
}

_connect_wait() {
    local pid=$1 i
    for ((i = 0; i < CONNECT_START_TIMEOUT * 4; i++)); do
        pid_alive "$pid" || fail_with_log "$CONNECT_LOG" "connect: worker (pid $pid) exited during startup"
        _connect_ready && return 0
        sleep 0.25
    done
    fail_with_log "$CONNECT_LOG" "connect: $CONNECT_URL/health not answering after ${CONNECT_START_TIMEOUT}s"
}

connect_up() {
    local pid t0=$SECONDS
    if pid=$(connect_pid); then
        if _connect_ready; then
            say "connect: already running (pid $pid, $CONNECT_URL)"
            return 0
        fi
        say "connect: process $pid exists, waiting for it to answer"
        _connect_wait "$pid"
        say "connect: up (pid $pid, $CONNECT_URL)"
        return 0
    fi
    command -v curl >/dev/null 2>&1 || die "curl not installed (apt-get install curl)"
    command -v java >/dev/null 2>&1 || die "java not found (apt-get install openjdk-17-jdk-headless)"
    port_open 127.0.0.1 "$KAFKA_PORT" \
        || die "connect: needs the test bed's Kafka on $KAFKA_BOOTSTRAP, which does not answer (scripts/services up kafka)"
    port_open 127.0.0.1 "$CONNECT_PORT" \
        && die "connect: port 127.0.0.1:$CONNECT_PORT is in use by another process ($(port_owner "$CONNECT_PORT"))"
    kafka_ensure_libs
    connect_ensure_plugins
    mkdir -p "$RUN_DIR" "$CONNECT_DATA/logs" "$CONNECT_DATA/tmp"
    rm -f "$CONNECT_PIDFILE"
    _connect_write_props
    say "connect: starting a distributed worker on $CONNECT_URL (Kafka $KAFKA_VERSION, plugins $CONNECT_PLUGIN_PATH)"
    printf '\n===== %s starting kafka connect %s =====\n' "$(date -Is)" "$KAFKA_VERSION" >>"$CONNECT_LOG"
    (
        close_extra_fds
        # shellcheck disable=SC2086
        exec setsid nohup java ${SLUICE_CONNECT_HEAP_OPTS:--Xms128m -Xmx640m} \
            ${SLUICE_CONNECT_JVM_OPTS:--XX:+UseSerialGC -XX:TieredStopAtLevel=1} -Djava.awt.headless=true \
            -Djava.io.tmpdir="$CONNECT_DATA/tmp" \
            -Dlog4j2.configurationFile="$SLUICE_LIB/connect-log4j2.xml" \
            -Dkafka.logs.dir="$CONNECT_DATA/logs" \
            -cp "$KAFKA_LIBS/*" org.apache.kafka.connect.cli.ConnectDistributed "$CONNECT_PROPS" \
            </dev/null >>"$CONNECT_LOG" 2>&1
    ) &
    pid=$!
    echo "$pid" >"$CONNECT_PIDFILE"
    _connect_wait "$pid"
    say "connect: up (pid $pid, $CONNECT_URL, $((SECONDS - t0))s)"
}

connect_down() {
    local pid
    if pid=$(connect_pid); then
        say "connect: stopping (pid $pid)"
        stop_pid "$pid" connect "$CONNECT_STOP_TIMEOUT"
        say "connect: stopped"
    else
        say "connect: not running"
    fi
    rm -f "$CONNECT_PIDFILE"
}

connect_status() {
    local pid state
    if pid=$(connect_pid); then
        if _connect_ready; then state=up; else state=starting; fi
    else
        pid="" state=down
    fi
    status_line connect "$state" "$pid" "127.0.0.1:$CONNECT_PORT" \
        "Kafka Connect $KAFKA_VERSION (distributed, group $CONNECT_GROUP), topics $CONNECT_TOPIC_PREFIX.*, log $(rel "$CONNECT_LOG")"
}

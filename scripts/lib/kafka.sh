# shellcheck shell=bash
# Apache Kafka from Maven Central jars: the single KRaft node (broker+controller) every test
# uses, and a three-node cluster (each node broker+controller, a KRaft quorum of three) for
# the chaos run's broker faults. Source after common.sh.
#
#   kafka_ensure_libs   fetch the jars into $KAFKA_LIBS once (stamp file)
#   kafka_up / kafka_down / kafka_status / kafka_pid          the single node `kafka`
#   kafka_cluster_up / kafka_cluster_down / kafka_cluster_status
#                       all three nodes of `kafka-cluster` (started together: a node alone
#                       has no quorum)
#   kafka_node_up NAME / kafka_node_down NAME / kafka_node_pid NAME
#                       one node by service name: kafka, kafka-cluster-1 .. kafka-cluster-3
#   kafka_java CLASS ARGS...   run a Kafka class with the cached classpath
#
# The single node also has the listeners of the security tests (the cluster has none):
#   SASL_SSL on KAFKA_SASL_PORT     mechanisms SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN
#   SSL on KAFKA_MTLS_PORT          client certificates required (ensure_tls_kafka)
# both with the broker certificate of the test CA (PEM key store), and the StandardAuthorizer:
# `super.users` are User:ANONYMOUS (every PLAINTEXT client of the test bed, and the broker
# itself) and User:admin; `allow.everyone.if.no.acl.found=false`, so a missing ACL really is
# missing. kafka_security_provision (run by kafka_up, once per data directory) creates the
# SASL users of KAFKA_SASL_USERS (password `<user>-secret`, also in
# .data/kafka/sasl/<user>.password) and the ACLs of the pipelines named `secure*`:
#   User:writer and User:CN=sluice-writer   may use the topics `secure*`,
#       `_sluice_offsets.secure*` and `_sluice_schema_history.secure*` (Create, Write, Read,
#       Describe, DescribeConfigs), the transactional ids `sluice-secure_*` (Write, Describe:
#       a pipeline named `securenotxn…` has its topics but not its transactional id)
#       and the groups `sluice-*` (Read, Describe)
#   User:denied and User:CN=sluice-denied   authenticate, and may do nothing

KAFKA_VERSION=4.4.0
KAFKA_HOME="$CACHE_DIR/kafka-$KAFKA_VERSION"
KAFKA_LIBS="$KAFKA_HOME/libs"
KAFKA_STAMP="$KAFKA_LIBS/.sluice-complete"
KAFKA_POM="$SLUICE_LIB/kafka-pom.xml"
KAFKA_DATA="$DATA_DIR/kafka"
KAFKA_PROPS="$KAFKA_DATA/server.properties"
KAFKA_LOG="$KAFKA_DATA/server.log"
KAFKA_PIDFILE="$RUN_DIR/kafka.pid"
KAFKA_PORT=${SLUICE_KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${SLUICE_KAFKA_CONTROLLER_PORT:-9093}
# A second listener for fault tests: the broker listens on KAFKA_PROXIED_PORT but advertises
# KAFKA_PROXY_PORT, where a test's fault proxy listens and forwards to KAFKA_PROXIED_PORT. A
# client bootstrapped at the proxy port is told to reach every broker (and the transaction
# coordinator) there too, so all its traffic crosses the proxy.
KAFKA_PROXIED_PORT=${SLUICE_KAFKA_PROXIED_PORT:-9094}
KAFKA_PROXY_PORT=${SLUICE_KAFKA_PROXY_PORT:-19094}
KAFKA_SASL_PORT=${SLUICE_KAFKA_SASL_PORT:-9095}
KAFKA_MTLS_PORT=${SLUICE_KAFKA_MTLS_PORT:-9096}
KAFKA_SASL_USERS="admin writer denied"
KAFKA_SASL_DIR="$KAFKA_DATA/sasl"
KAFKA_START_TIMEOUT=${KAFKA_START_TIMEOUT:-180}
KAFKA_STOP_TIMEOUT=${KAFKA_STOP_TIMEOUT:-60}
KAFKA_BOOTSTRAP="127.0.0.1:$KAFKA_PORT"

# The three-node cluster: node n (1..3) is the service kafka-cluster-n, a broker on the n-th
# port of KAFKA_CLUSTER_PORTS and a controller on the n-th of KAFKA_CLUSTER_CONTROLLER_PORTS,
# data and logs in .data/kafka-cluster/n. Replication factor 3 and min.insync.replicas 2
# everywhere (topics, consumer offsets, transaction state), so one node may be down.
KAFKA_CLUSTER_DATA="$DATA_DIR/kafka-cluster"
IFS=, read -r -a KAFKA_CLUSTER_PORTS <<<"${SLUICE_KAFKA_CLUSTER_PORTS:-9192,9292,9392}"
IFS=, read -r -a KAFKA_CLUSTER_CONTROLLER_PORTS <<<"${SLUICE_KAFKA_CLUSTER_CONTROLLER_PORTS:-9193,9293,9393}"
KAFKA_CLUSTER_NODES="kafka-cluster-1 kafka-cluster-2 kafka-cluster-3"
KAFKA_CLUSTER_BOOTSTRAP="127.0.0.1:${KAFKA_CLUSTER_PORTS[0]},127.0.0.1:${KAFKA_CLUSTER_PORTS[1]},127.0.0.1:${KAFKA_CLUSTER_PORTS[2]}"
KAFKA_CLUSTER_VOTERS="1@127.0.0.1:${KAFKA_CLUSTER_CONTROLLER_PORTS[0]},2@127.0.0.1:${KAFKA_CLUSTER_CONTROLLER_PORTS[1]},3@127.0.0.1:${KAFKA_CLUSTER_CONTROLLER_PORTS[2]}"

_kafka_pom_hash() { sha256sum "$KAFKA_POM" | cut -c1-64; }

kafka_libs_ready() {
    [[ -f $KAFKA_STAMP && $(cat "$KAFKA_STAMP" 2>/dev/null) == "$(_kafka_pom_hash)" ]]
}

kafka_ensure_libs() {
    kafka_libs_ready && return 0
    command -v mvn >/dev/null 2>&1 || die "mvn not found (apt-get install maven)"
    command -v java >/dev/null 2>&1 || die "java not found (apt-get install openjdk-17-jre-headless)"
    say "kafka: fetching Kafka $KAFKA_VERSION jars from Maven Central into $KAFKA_LIBS (once)"
    mkdir -p "$KAFKA_HOME"
    cp "$KAFKA_POM" "$KAFKA_HOME/pom.xml"
    rm -rf "$KAFKA_LIBS.tmp"
    local log="$KAFKA_HOME/mvn.log"
    if ! (cd "$KAFKA_HOME" && mvn -B -ntp -f "$KAFKA_HOME/pom.xml" \
        -Dmaven.repo.local="$CACHE_DIR/m2" \
        dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$KAFKA_LIBS.tmp" </dev/null >"$log" 2>&1); then
        fail_with_log "$log" "kafka: maven could not fetch the Kafka jars"
    fi
    local jar
    for jar in "kafka_2.13-$KAFKA_VERSION.jar" "kafka-tools-$KAFKA_VERSION.jar" "kafka-clients-$KAFKA_VERSION.jar"; do
        [[ -f $KAFKA_LIBS.tmp/$jar ]] || fail_with_log "$log" "kafka: $jar missing after maven run"
    done
    rm -rf "$KAFKA_LIBS"
    mv "$KAFKA_LIBS.tmp" "$KAFKA_LIBS"
    _kafka_pom_hash >"$KAFKA_STAMP"
    say "kafka: $(find "$KAFKA_LIBS" -name '*.jar' | wc -l) jars in $KAFKA_LIBS"
}

# kafka_java_cmd: set KAFKA_JAVA_CMD to the java command line (without the main
# class) for running Kafka tools; tool logging is WARN to stderr.
kafka_java_cmd() {
    # shellcheck disable=SC2206
    KAFKA_JAVA_CMD=(java ${KAFKA_HEAP_OPTS:--Xmx512m} ${KAFKA_OPTS:-} -Djava.awt.headless=true
        "-Dlog4j2.configurationFile=$SLUICE_LIB/kafka-tools-log4j2.xml"
        -cp "$KAFKA_LIBS/*")
}

# kafka_java CLASS ARGS...: run a Kafka main class with the cached classpath.
kafka_java() {
    kafka_java_cmd
    "${KAFKA_JAVA_CMD[@]}" "$@"
}

# _kafka_node NAME: select a node for the _kafka_node_* functions (sets KN_*).
_kafka_node() {
    KN_NAME=$1
    case $1 in
        kafka)
            KN_ID=1 KN_CLUSTER=0
            KN_DATA=$KAFKA_DATA KN_PROPS=$KAFKA_PROPS KN_LOG=$KAFKA_LOG KN_PIDFILE=$KAFKA_PIDFILE
            KN_PORT=$KAFKA_PORT KN_CONTROLLER_PORT=$KAFKA_CONTROLLER_PORT
            KN_PORTS=("$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT" "$KAFKA_PROXIED_PORT" "$KAFKA_SASL_PORT" "$KAFKA_MTLS_PORT")
            KN_HEAP=${KAFKA_BROKER_HEAP_OPTS:--Xmx512m -Xms256m}
            KN_BOOTSTRAP=$KAFKA_BOOTSTRAP
            ;;
        kafka-cluster-[123])
            KN_ID=${1#kafka-cluster-} KN_CLUSTER=1
            KN_DATA="$KAFKA_CLUSTER_DATA/$KN_ID"
            KN_PROPS="$KN_DATA/server.properties" KN_LOG="$KN_DATA/server.log"
            KN_PIDFILE="$RUN_DIR/$1.pid"
            KN_PORT=${KAFKA_CLUSTER_PORTS[KN_ID - 1]:-}
            KN_CONTROLLER_PORT=${KAFKA_CLUSTER_CONTROLLER_PORTS[KN_ID - 1]:-}
            [[ $KN_PORT =~ ^[0-9]+$ && $KN_CONTROLLER_PORT =~ ^[0-9]+$ ]] \
                || die "$1: SLUICE_KAFKA_CLUSTER_PORTS / SLUICE_KAFKA_CLUSTER_CONTROLLER_PORTS need three ports each"
            KN_PORTS=("$KN_PORT" "$KN_CONTROLLER_PORT")
            KN_HEAP=${KAFKA_CLUSTER_HEAP_OPTS:--Xmx512m -Xms128m}
            KN_BOOTSTRAP="127.0.0.1:$KN_PORT"
            ;;
        *) die "unknown Kafka node $1" ;;
    esac
}

_kafka_node_pid() {
    owned_pid "$KN_PIDFILE" "kafka.Kafka $KN_PROPS"
}

# kafka_node_pid NAME: the pid of a running node.
kafka_node_pid() {
    _kafka_node "$1"
    _kafka_node_pid
}

kafka_pid() {
    kafka_node_pid kafka
}

_kafka_write_props() {
    mkdir -p "$KN_DATA"
    local quorum listeners advertised protocols rf=1 min_isr=1
    if ((KN_CLUSTER)); then
        quorum="controller.quorum.voters=$KAFKA_CLUSTER_VOTERS"
        listeners="PLAINTEXT://127.0.0.1:$KN_PORT,CONTROLLER://127.0.0.1:$KN_CONTROLLER_PORT"
        advertised=$listeners
        protocols="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
        rf=3 min_isr=2
    else
        quorum="controller.quorum.bootstrap.servers=127.0.0.1:$KN_CONTROLLER_PORT"
        local secure="SASL_SSL://127.0.0.1:$KAFKA_SASL_PORT,MTLS://127.0.0.1:$KAFKA_MTLS_PORT"
        listeners="PLAINTEXT://127.0.0.1:$KN_PORT,CONTROLLER://127.0.0.1:$KN_CONTROLLER_PORT,PROXIED://127.0.0.1:$KAFKA_PROXIED_PORT,$secure"
        advertised="PLAINTEXT://127.0.0.1:$KN_PORT,CONTROLLER://127.0.0.1:$KN_CONTROLLER_PORT,PROXIED://127.0.0.1:$KAFKA_PROXY_PORT,$secure"
        protocols="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PROXIED:PLAINTEXT,SASL_SSL:SASL_SSL,MTLS:SSL"
    fi
    cat >"$KN_PROPS" <<EOP
# Generated by scripts/services on every start; edit the script, not this file.
process.roles=broker,controller
node.id=$KN_ID
$quorum
listeners=$listeners
advertised.listeners=$advertised
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=$protocols
num.network.threads=3
num.io.threads=4
log.dirs=$KN_DATA/data
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$min_isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$min_isr
group.initial.rebalance.delay.ms=0
transaction.max.timeout.ms=900000
# Abort timed-out transactions within a second (default 10 s), so fault tests that stall a
# commit past kafka.transaction_timeout_ms see the coordinator's epoch bump promptly.
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
log.retention.hours=168
log.segment.bytes=1073741824
EOP
    ((KN_CLUSTER)) || _kafka_write_security_props
    if ((KN_CLUSTER)); then
        cat >>"$KN_PROPS" <<EOP
# Cluster node: every replica on all three nodes, a write needs two of them.
default.replication.factor=3
min.insync.replicas=2
EOP
    fi
}

# _kafka_write_security_props: the single node's TLS listeners, SASL mechanisms and
# authorizer (appended to its server.properties).
_kafka_write_security_props() {
    local u plain_users=""
    mkdir -p "$KAFKA_SASL_DIR"
    for u in $KAFKA_SASL_USERS; do
        (umask 077 && printf '%s' "$u-secret" >"$KAFKA_SASL_DIR/$u.password")
        plain_users+=" user_$u=\"$u-secret\""
    done
    cat >>"$KN_PROPS" <<EOP
# The security tests' listeners: SASL_SSL (SCRAM and PLAIN) and SSL with client certificates.
ssl.keystore.type=PEM
ssl.keystore.location=$TLS_KAFKA_KEYSTORE
ssl.truststore.type=PEM
ssl.truststore.location=$TLS_CA
listener.name.mtls.ssl.client.auth=required
listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$plain_users;
# Every PLAINTEXT client (and the broker itself) is User:ANONYMOUS, a super user: only the
# secure listeners' principals are held to their ACLs, and one without an ACL is refused.
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS;User:admin
allow.everyone.if.no.acl.found=false
EOP
}

# The users and ACLs kafka_security_provision creates; a change re-runs it.
_kafka_security_spec() {
    printf 'users %s\n' "$KAFKA_SASL_USERS"
    printf 'acl topic secure _sluice_offsets.secure _sluice_schema_history.secure: Create Write Read Describe DescribeConfigs\n'
    printf 'acl transactional-id sluice-secure_: Write Describe\n'
    printf 'acl group sluice-: Read Describe\n'
}

# kafka_security_provision: the SASL users' SCRAM credentials and the writer's ACLs, once per
# data directory (a stamp there holds the spec they were made from).
kafka_security_provision() {
    _kafka_node kafka
    local stamp="$KN_DATA/data/.sluice-security" spec log="$KN_DATA/security.log" u
    spec=$(_kafka_security_spec)
    [[ -f $stamp && $(cat "$stamp") == "$spec" ]] && return 0
    say "kafka: creating the SASL users ($KAFKA_SASL_USERS) and the ACLs of the secure test pipelines"
    : >"$log"
    local mechanism
    # One mechanism per request: the broker refuses two credentials of one user in one.
    for u in $KAFKA_SASL_USERS; do
        for mechanism in SCRAM-SHA-512 SCRAM-SHA-256; do
            kafka_java org.apache.kafka.tools.ConfigCommand --bootstrap-server "$KAFKA_BOOTSTRAP" \
                --alter --entity-type users --entity-name "$u" \
                --add-config "$mechanism=[password=$u-secret]" </dev/null >>"$log" 2>&1 \
                || fail_with_log "$log" "kafka: creating the $mechanism user $u failed"
        done
    done
    local principals=(--allow-principal User:writer --allow-principal User:CN=sluice-writer)
    local acl=(org.apache.kafka.tools.AclCommand --bootstrap-server "$KAFKA_BOOTSTRAP" --add --force
        --resource-pattern-type prefixed "${principals[@]}")
    kafka_java "${acl[@]}" --topic secure --topic _sluice_offsets.secure \
        --topic _sluice_schema_history.secure --operation Create --operation Write \
        --operation Read --operation Describe --operation DescribeConfigs \
        </dev/null >>"$log" 2>&1 || fail_with_log "$log" "kafka: adding the topic ACLs failed"
    kafka_java "${acl[@]}" --transactional-id sluice-secure_ --operation Write --operation Describe \
        </dev/null >>"$log" 2>&1 || fail_with_log "$log" "kafka: adding the transactional id ACLs failed"
    kafka_java "${acl[@]}" --group sluice- --operation Read --operation Describe \
        </dev/null >>"$log" 2>&1 || fail_with_log "$log" "kafka: adding the group ACLs failed"
    printf '%s' "$spec" >"$stamp"
}

# _kafka_cluster_id: the cluster id every node of kafka-cluster is formatted with (made once,
# kept in .data/kafka-cluster/cluster.id).
_kafka_cluster_id() {
    local f="$KAFKA_CLUSTER_DATA/cluster.id" id="" log=$1
    [[ -f $f ]] && read -r id <"$f"
    if [[ -z $id ]]; then
        mkdir -p "$KAFKA_CLUSTER_DATA"
        id=$(kafka_java kafka.tools.StorageTool random-uuid 2>"$log") \
            || fail_with_log "$log" "$KN_NAME: StorageTool random-uuid failed"
        printf '%s\n' "$id" >"$f"
    fi
    printf '%s' "$id"
}

_kafka_format() {
    [[ -f $KN_DATA/data/meta.properties ]] && return 0
    local log="$KN_DATA/format.log" cluster_id
    rm -rf -- "$KN_DATA/data"
    if ((KN_CLUSTER)); then
        cluster_id=$(_kafka_cluster_id "$log")
    else
        cluster_id=$(kafka_java kafka.tools.StorageTool random-uuid 2>"$log") \
            || fail_with_log "$log" "$KN_NAME: StorageTool random-uuid failed"
    fi
    say "$KN_NAME: formatting $(rel "$KN_DATA/data") (cluster id $cluster_id)"
    # The single node bootstraps a quorum of itself; the cluster's nodes have a static quorum
    # (controller.quorum.voters), for which the format takes no initial controllers.
    local standalone=()
    ((KN_CLUSTER)) || standalone=(--standalone)
    if ! kafka_java kafka.tools.StorageTool format "${standalone[@]}" -t "$cluster_id" \
        -c "$KN_PROPS" >>"$log" 2>&1; then
        fail_with_log "$log" "$KN_NAME: storage format failed"
    fi
}

_kafka_ready() {
    port_open 127.0.0.1 "$KN_PORT" || return 1
    kcat -b "$KN_BOOTSTRAP" -L -m 3 2>/dev/null | grep -q "broker $KN_ID at"
}

_kafka_wait() {
    local pid=$1 i
    for ((i = 0; i < KAFKA_START_TIMEOUT * 2; i++)); do
        pid_alive "$pid" || fail_with_log "$KN_LOG" "$KN_NAME: broker (pid $pid) exited during startup"
        _kafka_ready && return 0
        sleep 0.5
    done
    fail_with_log "$KN_LOG" "$KN_NAME: broker not answering on $KN_BOOTSTRAP after ${KAFKA_START_TIMEOUT}s"
}

# _kafka_launch: start the selected node's JVM (not running yet) and set KN_PID; does not
# wait for it to answer.
_kafka_launch() {
    command -v kcat >/dev/null 2>&1 || die "kcat not installed (apt-get install kcat)"
    kafka_ensure_libs
    local p
    for p in "${KN_PORTS[@]}"; do
        port_open 127.0.0.1 "$p" && die "$KN_NAME: port 127.0.0.1:$p is in use by another process ($(port_owner "$p"))"
    done
    mkdir -p "$RUN_DIR" "$KN_DATA/logs"
    rm -f "$KN_PIDFILE"
    ((KN_CLUSTER)) || ensure_tls_kafka
    _kafka_write_props
    _kafka_format

    say "$KN_NAME: starting on $KN_BOOTSTRAP (controller 127.0.0.1:$KN_CONTROLLER_PORT)"
    printf '\n===== %s starting kafka %s =====\n' "$(date -Is)" "$KAFKA_VERSION" >>"$KN_LOG"
    (
        close_extra_fds
        # shellcheck disable=SC2086
        exec setsid nohup java $KN_HEAP \
            -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
            -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true \
            -Dlog4j2.configurationFile="$SLUICE_LIB/kafka-log4j2.xml" \
            -Dkafka.logs.dir="$KN_DATA/logs" \
            -cp "$KAFKA_LIBS/*" kafka.Kafka "$KN_PROPS" \
            </dev/null >>"$KN_LOG" 2>&1
    ) &
    KN_PID=$!
    echo "$KN_PID" >"$KN_PIDFILE"
}

# _kafka_start: start the selected node unless it runs; KN_PID is its pid and KN_WAIT 1 when
# it still has to be waited for (_kafka_wait), 0 when it already answers.
_kafka_start() {
    KN_WAIT=1
    if KN_PID=$(_kafka_node_pid); then
        if _kafka_ready; then
            say "$KN_NAME: already running (pid $KN_PID, $KN_BOOTSTRAP)"
            KN_WAIT=0
            return 0
        fi
        say "$KN_NAME: process $KN_PID exists, waiting for it to answer"
        return 0
    fi
    _kafka_launch
}

# kafka_node_up NAME: start one node and wait until it answers (a cluster node needs a
# second one running for the quorum).
kafka_node_up() {
    _kafka_node "$1"
    _kafka_start
    ((KN_WAIT)) || return 0
    _kafka_wait "$KN_PID"
    say "$KN_NAME: up (pid $KN_PID, $KN_BOOTSTRAP)"
}

kafka_up() {
    kafka_node_up kafka
    kafka_security_provision
}

# kafka_node_down NAME: SIGTERM one node (SIGKILL after KAFKA_STOP_TIMEOUT).
kafka_node_down() {
    _kafka_node "$1"
    local pid
    if pid=$(_kafka_node_pid); then
        say "$KN_NAME: stopping (pid $pid)"
        stop_pid "$pid" "$KN_NAME" "$KAFKA_STOP_TIMEOUT"
        say "$KN_NAME: stopped"
    else
        say "$KN_NAME: not running"
    fi
    rm -f "$KN_PIDFILE"
}

kafka_down() {
    kafka_node_down kafka
}

# kafka_node_status NAME: one status line.
kafka_node_status() {
    _kafka_node "$1"
    local pid state
    if pid=$(_kafka_node_pid); then
        if port_open 127.0.0.1 "$KN_PORT"; then state=up; else state=starting; fi
    else
        pid="" state=down
    fi
    status_line "$KN_NAME" "$state" "$pid" "$KN_BOOTSTRAP" \
        "controller 127.0.0.1:$KN_CONTROLLER_PORT, data $(rel "$KN_DATA/data"), log $(rel "$KN_LOG")"
}

kafka_status() {
    kafka_node_status kafka
}

# kafka_cluster_up: start every node of kafka-cluster that is not running (together, as the
# quorum needs two of them), wait for each, then until all three brokers are registered.
kafka_cluster_up() {
    local name pids=() names=() i
    for name in $KAFKA_CLUSTER_NODES; do
        _kafka_node "$name"
        _kafka_start
        if ((KN_WAIT)); then
            pids+=("$KN_PID")
            names+=("$name")
        fi
    done
    for i in "${!names[@]}"; do
        _kafka_node "${names[i]}"
        _kafka_wait "${pids[i]}"
        say "$KN_NAME: up (pid ${pids[i]}, $KN_BOOTSTRAP)"
    done
    for ((i = 0; i < KAFKA_START_TIMEOUT * 2; i++)); do
        if kcat -b "$KAFKA_CLUSTER_BOOTSTRAP" -L -m 3 2>/dev/null | grep -q '^ *3 brokers:'; then
            say "kafka-cluster: up ($KAFKA_CLUSTER_BOOTSTRAP; controllers ${KAFKA_CLUSTER_VOTERS})"
            return 0
        fi
        sleep 0.5
    done
    die "kafka-cluster: the three brokers did not all register within ${KAFKA_START_TIMEOUT}s (see $(rel "$KAFKA_CLUSTER_DATA")/*/server.log)"
}

# kafka_cluster_down: SIGTERM every node at once (a node shutting down alone would wait for a
# quorum that is already gone), SIGKILL what is left after KAFKA_STOP_TIMEOUT.
kafka_cluster_down() {
    local name pid pids=() names=() i waited=0 left
    for name in $KAFKA_CLUSTER_NODES; do
        _kafka_node "$name"
        if pid=$(_kafka_node_pid); then
            say "$name: stopping (pid $pid)"
            kill -TERM "$pid" 2>/dev/null || true
            pids+=("$pid")
            names+=("$name")
        else
            say "$name: not running"
            rm -f "$KN_PIDFILE"
        fi
    done
    while :; do
        left=0
        for pid in "${pids[@]}"; do
            pid_alive "$pid" && left=$((left + 1))
        done
        ((left == 0)) && break
        if ((waited >= KAFKA_STOP_TIMEOUT * 10)); then
            for i in "${!pids[@]}"; do
                if pid_alive "${pids[i]}"; then
                    warn "${names[i]} (pid ${pids[i]}) did not stop within ${KAFKA_STOP_TIMEOUT}s; sending SIGKILL"
                    kill -KILL "${pids[i]}" 2>/dev/null || true
                fi
            done
            sleep 0.5
            break
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    for i in "${!names[@]}"; do
        _kafka_node "${names[i]}"
        rm -f "$KN_PIDFILE"
        say "${names[i]}: stopped"
    done
}

kafka_cluster_status() {
    local name
    for name in $KAFKA_CLUSTER_NODES; do
        kafka_node_status "$name"
    done
}

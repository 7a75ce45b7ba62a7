# shellcheck shell=bash
# shellcheck disable=SC2154 # the variables of scripts/bench, which sources this file
# `scripts/bench --peer debezium` (or BENCH_PEER=debezium): sluice and Debezium 3.5 side by side
# on the same preload, the same broker and the same machine. Sourced by scripts/bench, whose
# variables (rows, flavor, port, db, start_gtid, start_file, start_pos, work, bin) and functions
# (sql, calc, median, run_mode, run_snapshot, proc_cpu, proc_mib) it uses.
#
# Debezium runs on the test bed's Kafka Connect worker (scripts/lib/connect.sh: one distributed
# worker, `exactly.once.source.support=enabled`, the Debezium 3.5.0.Final MySQL and MariaDB
# connectors of scripts/lib/connect-plugins.lock from Maven Central) with a 2 GB heap and Kafka's
# own JVM flags (BENCH_PEER_HEAP, default "-Xms256m -Xmx2g" as Kafka's connect-distributed.sh;
# BENCH_PEER_JVM_OPTS, default the G1 flags of Kafka's kafka-run-class.sh), not the test bed's
# small serial-GC, C1-only JVM.
#
# The worker is restarted before every Debezium run and stopped after it (it is not running
# while sluice runs):
# - its cold start (launch until the REST API answers and lists the connector's class) is timed
#   and reported apart from the runs;
# - peak RSS is the worker JVM's VmHWM at the end of the run, so it covers the worker's own start
#   and that one run, nothing of an earlier run (a JVM does not give its heap back, so on a
#   long-lived worker the high-water mark, or the RSS sampled during a run, would carry the
#   earlier runs' heap);
# - every Debezium run starts as cold as sluice's, which is a new process each run.
# CPU is the worker's utime + stime (/proc/<pid>/stat) from the connector's start to the last
# record seen, so the worker's cold start is not in it (sluice's CPU includes its own start).
#
# Each run is timed by the same independent consumer for both systems: kcat with
# isolation.level=read_committed reading the run's data topic from the beginning. "first record"
# is the time from the start until it saw the first record, rows/s the preload's rows over the
# time until it saw the last. sluice's start: its launch (`sluice run`, exactly as
# scripts/bench's exactly-once drain and 1-reader snapshot). Debezium's start: the connector's
# start on the running worker.
#
# Drain: Debezium must read the preload from the binlog, not snapshot it. No snapshot mode of
# Debezium 3.5's binlog connectors does that by itself: `no_data` streams from the current end
# of the binlog (after the preload), `never` from the binlog's first file (every earlier
# transaction on the server). So the connector is created stopped (Connect's `initial_state`),
# its offset set to the position sluice starts from (file and position, and the GTID position,
# which Debezium's MariaDB connector requires) through Connect's offsets API, and resumed with
# `snapshot.mode=recovery`: it records the tables' current schema (no rows) and streams from the
# offset. Its start is the resume. Each system's data topic is created before its start, so
# the consumer is already reading when the first record comes (sluice then finds its topic
# there, as it does on every restart).
#
# Snapshot: sluice `start = "snapshot_only"` (1 reader, chunk BENCH_SNAPSHOT_CHUNK) against a
# new connector with `snapshot.mode=initial_only`, timed from its creation;
# `snapshot.locking.mode=none` (sluice takes no lock either).
#
# Both: `exactly.once.support=required` (Connect's transactional source tasks, the default
# transaction boundary: one transaction per poll), JsonConverter without schemas for key and
# value (sluice's JSON), decimal.handling.mode=string and time.precision.mode=
# adaptive_time_microseconds (the value types of sluice's JSON), one partition, a new connector
# name and topic prefix per run (Connect keeps a deleted connector's offsets), every run's
# connector and topics deleted after it. Debezium connects without TLS (its own plaintext login,
# as scripts/parity); sluice negotiates TLS (ssl_mode "preferred", its default) as in the other
# runs of scripts/bench.

# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/kafka.sh
source scripts/lib/kafka.sh
# shellcheck source=scripts/lib/connect.sh
source scripts/lib/connect.sh

peer_heap=${BENCH_PEER_HEAP:--Xms256m -Xmx2g}
peer_jvm=${BENCH_PEER_JVM_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent}
peer_timeout=${BENCH_PEER_TIMEOUT:-900}
peer_id=$(date +%s)
peer_log="$work/peer-worker.log"
peer_worker=""
peer_watch_pid=""
case $flavor in
  mariadb) peer_class=io.debezium.connector.mariadb.MariaDbConnector peer_user=sluice_plain peer_ssl=disable ;;
  mysql) peer_class=io.debezium.connector.mysql.MySqlConnector peer_user=sluice peer_ssl=disabled ;;
esac

# Before the preload: Debezium 3.5's MySQL connector cannot parse tagged GTIDs (`uuid:tag:n`),
# which the test bed's MySQL holds once some of sluice's tests ran on it. The bench does not
# reset a shared server's GTIDs; it stops here.
peer_precheck() {
  command -v jq >/dev/null || { echo "--peer debezium needs jq" >&2; exit 2; }
  command -v gawk >/dev/null || { echo "--peer debezium needs gawk" >&2; exit 2; }
  [[ $flavor == mysql ]] || return 0
  local executed
  executed=$(sql "SELECT REPLACE(@@GLOBAL.gtid_executed, '\n', '')")
  if grep -Eq ':[A-Za-z_]' <<<"$executed"; then
    echo "MySQL on $port holds tagged GTIDs ($executed), which Debezium 3.5's MySQL connector" >&2
    echo "cannot parse: no Debezium run is possible against it (RESET BINARY LOGS AND GTIDS on" >&2
    echo "that server would clear them; the bench does not do that to the test bed's server)." >&2
    echo "The test bed's scratch MySQL has none: BENCH_PORT=3317." >&2
    exit 2
  fi
  # A server with no GTID executed yet (a fresh scratch server): Debezium 3.5 fails with a
  # NullPointerException (`this.gtidSet` is null) when the drain's start offset holds an
  # empty GTID set. One transaction first.
  if [[ -z $executed ]]; then
    sql "CREATE DATABASE IF NOT EXISTS peer_gtid_seed; DROP DATABASE peer_gtid_seed"
  fi
}

peer_connect() { curl -sS -m 30 -H 'Content-Type: application/json' "$@"; }

# (Re)starts the worker with the bench's JVM settings; sets peer_worker (pid) and records the
# cold start: from the launch until the REST API lists the connector class.
peer_worker_start() {
  if connect_pid >/dev/null; then connect_down >>"$peer_log"; fi
  local t0 k
  t0=$EPOCHREALTIME
  SLUICE_CONNECT_HEAP_OPTS=$peer_heap SLUICE_CONNECT_JVM_OPTS=$peer_jvm connect_up >>"$peer_log"
  for ((k = 0; k < 600; k++)); do
    curl -s -m 5 "$CONNECT_URL/connector-plugins" | grep -qF "\"$peer_class\"" && break
    sleep 0.1
  done
  peer_worker=$(connect_pid)
  local secs
  secs=$(calc "$EPOCHREALTIME - $t0" 2)
  echo "$secs" >>"$work/peer_cold"
  echo "   worker (pid $peer_worker, $peer_heap) ready after $secs s"
}

peer_worker_stop() {
  connect_down >>"$peer_log"
  peer_worker=""
}

# The connector's config (JSON) for topic prefix $1, snapshot mode $2, server id $3.
peer_config() { # name snapshot_mode server_id
  jq -n --arg class "$peer_class" --arg port "$port" --arg user "$peer_user" --arg ssl "$peer_ssl" \
    --arg name "$1" --arg db "$db" --arg mode "$2" --arg sid "$3" '{
    "connector.class": $class, "tasks.max": "1",
    "database.hostname": "127.0.0.1", "database.port": $port,
    "database.user": $user, "database.password": "sluice", "database.ssl.mode": $ssl,
    "database.allowPublicKeyRetrieval": "true", "database.server.id": $sid,
    "topic.prefix": $name, "database.include.list": $db, "include.schema.changes": "false",
    "schema.history.internal.kafka.bootstrap.servers": "127.0.0.1:9092",
    "schema.history.internal.kafka.topic": ($name + ".history"),
    "schema.history.internal.store.only.captured.databases.ddl": "true",
    "snapshot.mode": $mode, "snapshot.locking.mode": "none",
    "decimal.handling.mode": "string", "time.precision.mode": "adaptive_time_microseconds",
    "binary.handling.mode": "bytes",
    "exactly.once.support": "required",
    "topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "1",
    "key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "false",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false"}'
}

peer_topic_create() { # topic
  scripts/lib/kafka-run-class org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:9092 \
    --create --topic "$1" --partitions 1 --replication-factor 1 >/dev/null
}
# Deletes the topics whose whole name matches the regular expression $1.
peer_topics_delete() { # regex
  scripts/lib/kafka-run-class org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:9092 \
    --delete --if-exists --topic "$1" >/dev/null 2>&1 || echo "   (could not delete the topics $1)"
}

# A read_committed consumer of topic $1 in the background, once the topic exists. File $3 gets
# "first <epoch s>" when it sees the first record and "last <epoch s> <records> <value bytes>"
# when it has seen $2.
peer_watch_start() { # topic rows out
  : >"$3"
  (
    until kcat -b 127.0.0.1:9092 -L -m 2 2>/dev/null | grep -qF "topic \"$1\" with"; do sleep 0.05; done
    kcat -b 127.0.0.1:9092 -X isolation.level=read_committed -C -t "$1" -o beginning -q -c "$2" -f '%S\n' \
      | gawk -v want="$2" '{ n++; if ($1 > 0) b += $1 }
          n == 1 { print "first"; fflush() }
          n == want { print "last", n, b; fflush(); exit }' \
      | while read -r what rest; do echo "$what $EPOCHREALTIME $rest"; done >>"$3"
  ) &
  peer_watch_pid=$!
}
# Waits until the consumer has seen every record (0), or $2 seconds or the check "$3 ..." (run
# every second) failing (1: the consumer is stopped).
peer_watch_wait() { # out timeout [check...]
  local out=$1 limit=$2 k
  shift 2
  for ((k = 0; k < limit * 10; k++)); do
    if grep -q '^last ' "$out"; then wait "$peer_watch_pid" 2>/dev/null || true; peer_watch_pid=""; return 0; fi
    if ((k % 10 == 9 && $# > 0)); then "$@" || break; fi
    sleep 0.1
  done
  peer_watch_stop
  return 1
}
peer_watch_stop() {
  [[ -n $peer_watch_pid ]] || return 0
  pkill -TERM -P "$peer_watch_pid" 2>/dev/null || true
  kill -TERM "$peer_watch_pid" 2>/dev/null || true
  wait "$peer_watch_pid" 2>/dev/null || true
  peer_watch_pid=""
}
# "<first s> <last s> <records> <value bytes>" of the consumer's file $1, from start time $2.
peer_watch_times() { # out t0
  gawk -v t0="$2" '$1 == "first" { f = $2 - t0 } $1 == "last" { l = $2 - t0; n = $3; b = $4 }
    END { printf "%s %s %d %d\n", (f == "" ? "n/a" : sprintf("%.2f", f)), (n ? sprintf("%.3f", l) : "n/a"), n, b }' "$1"
}

# Connector $1 still running (its task not FAILED); prints the task's trace otherwise.
peer_connector_ok() { # name
  local st
  st=$(curl -s -m 5 "$CONNECT_URL/connectors/$1/status" || true)
  if grep -q '"state":"FAILED"' <<<"$st"; then
    echo "   connector $1 FAILED:"; jq -r '.tasks[]?.trace // .connector.trace // empty' <<<"$st" | head -20
    return 1
  fi
}

# Appends a result line: kind|system|first s|secs|rows/s|CPU s/M rows|peak RSS MiB|value bytes.
peer_record() { # kind system first secs n cpu rss bytes
  local rate=n/a cpu_m=n/a avg=n/a
  if (($5 > 0)); then
    rate=$(calc "$5 / $4" 0); cpu_m=$(calc "$6 * 1000000 / $5" 2); avg=$(($8 / $5))
  fi
  ((${5} == rows)) || echo "   $2 $1: the consumer saw $5 records, expected $rows"
  echo "$1|$2|$3|$4|$rate|$cpu_m|$7|$avg" >>"$work/peer"
  echo "   $2 $1: $5 records seen after $4 s ($rate rows/s), first after $3 s, CPU $6 s ($cpu_m s / M rows), peak RSS $7 MiB, avg value $avg B"
}

# sluice's runs: scripts/bench's own (run_mode, run_snapshot) with the consumer started beside,
# on the data topic created before the launch as Debezium's is before its start (so the
# consumer is reading when the first record comes, not starting after the topic appears).
peer_sluice_watch() {
  peer_topic_create "$1"
  peer_watch_start "$1" "$rows" "$work/peer_sluice.watch"
}
peer_sluice() { # kind round
  local first secs n bytes cpu rss line name
  bench_watch=peer_sluice_watch
  if [[ $1 == drain ]]; then
    run_mode exactly-once json "sluice r$2"
    line=$(tail -1 "$work/results")
    # CPU s / M rows and peak RSS of the process (/usr/bin/time), as in the other modes
    cpu=$(cut -d'|' -f5 <<<"$line"); rss=$(cut -d'|' -f6 <<<"$line")
  else
    run_snapshot "${BENCH_SNAPSHOT_PARALLELISM%% *}" "sluice r$2"
    line=$(tail -1 "$work/snapshots")
    cpu=$(cut -d'|' -f4 <<<"$line"); rss=$(cut -d'|' -f5 <<<"$line")
  fi
  # shellcheck disable=SC2034 # read by run_mode and run_snapshot
  bench_watch=""
  peer_watch_wait "$work/peer_sluice.watch" 120 || echo "   the consumer did not see all $rows records of sluice's run"
  read -r first secs n bytes <<<"$(peer_watch_times "$work/peer_sluice.watch" "$run_t_start")"
  peer_record "$1" sluice "$first" "$secs" "$n" "$(calc "$cpu * $n / 1000000" 2)" "$rss" "$bytes"
  name=$run_name
  peer_topics_delete "(_sluice_schema_history\.)?$name(\..*)?"
}

# One Debezium run: $1 drain (seeded offset, snapshot.mode=recovery) or snapshot (initial_only).
peer_debezium() { # kind round
  local kind=$1 name="peer_${peer_id}_dbz_${1}_r$2" topic out t0 cpu0 cpu1 hwm first secs n bytes
  local sid=$((6200 + $2)) cfg
  [[ $kind == snapshot ]] && sid=$((6300 + $2))
  topic="$name.$db.t"; out="$work/$name.watch"
  echo "== round $2: Debezium $kind ($name)"
  peer_worker_start
  peer_topic_create "$topic"
  if [[ $kind == drain ]]; then
    cfg=$(peer_config "$name" recovery "$sid")
    peer_connect -X POST "$CONNECT_URL/connectors" \
      -d "$(jq -n --arg n "$name" --argjson c "$cfg" '{name: $n, config: $c, initial_state: "STOPPED"}')" >/dev/null
    local offset
    offset=$(jq -n --arg n "$name" --arg f "$start_file" --argjson p "$start_pos" --arg g "$start_gtid" \
      '{offsets: [{partition: {server: $n}, offset: ({file: $f, pos: $p} + (if $g == "" then {} else {gtids: $g} end))}]}')
    # The worker may take a moment to have the new connector in its config before it takes offsets.
    local k
    for ((k = 0; k < 50; k++)); do
      peer_connect -X PATCH "$CONNECT_URL/connectors/$name/offsets" -d "$offset" 2>/dev/null \
        | grep -q 'altered successfully' && break
      sleep 0.2
    done
    ((k < 50)) || { echo "   could not set the offset of $name"; peer_worker_stop; return 1; }
    peer_watch_start "$topic" "$rows" "$out"
    cpu0=$(proc_cpu "$peer_worker"); t0=$EPOCHREALTIME
    peer_connect -X PUT "$CONNECT_URL/connectors/$name/resume" >/dev/null
  else
    cfg=$(peer_config "$name" initial_only "$sid")
    peer_watch_start "$topic" "$rows" "$out"
    cpu0=$(proc_cpu "$peer_worker"); t0=$EPOCHREALTIME
    peer_connect -X POST "$CONNECT_URL/connectors" -d "$(jq -n --arg n "$name" --argjson c "$cfg" '{name: $n, config: $c}')" >/dev/null
  fi
  if ! peer_watch_wait "$out" "$peer_timeout" peer_connector_ok "$name"; then
    echo "   Debezium $kind did not deliver all $rows records (see $CONNECT_LOG)"
  fi
  cpu1=$(proc_cpu "$peer_worker"); hwm=$(proc_mib "$peer_worker" VmHWM)
  read -r first secs n bytes <<<"$(peer_watch_times "$out" "$t0")"
  peer_record "$kind" debezium "$first" "$secs" "$n" "$(calc "$cpu1 - $cpu0" 2)" "$hwm" "$bytes"
  peer_connect -X DELETE "$CONNECT_URL/connectors/$name" >/dev/null || true
  peer_worker_stop
  peer_topics_delete "$name\..*"
}

# ---- latency at the same rates -----------------------------------------------------------
# For each rate in BENCH_PEER_LATENCY_RATES ("1000 10000" rows/s; empty: none), on a table of
# its own (created before either system starts, so both know it from their start): Debezium
# streaming it (snapshot.mode=no_data on a freshly started worker, exactly.once.support=required)
# and `sluice bench-latency` (hidden: rows written at the rate, open loop, one row per
# transaction; each row timed from its COMMIT returning to the driver until a read_committed
# consumer with fetch.wait.max.ms 5 receives it) against its topic; then a sluice pipeline
# (exactly-once, start = "latest", every other setting its default) on a table of its own and
# the same driver at the same rate. BENCH_LATENCY_WARMUP (20) s of warm-up, then
# BENCH_LATENCY_SECONDS (120) s measured, as BENCH_LATENCY=1.
peer_lat_run() { # system rate table topic
  local out rc=0 field v line="$2|$1"
  out=$("$bin" bench-latency --source "mysql://root@127.0.0.1:$port" --table "$3" --topic "$4" \
    --rate "$2" --warmup-s "${BENCH_LATENCY_WARMUP:-20}" --seconds "${BENCH_LATENCY_SECONDS:-120}" \
    2>>"$work/peer_lat.err") || rc=$?
  for field in achieved_rows_per_s p50_ms p99_ms p999_ms max_ms bounded missing; do
    v=$(json_field "$field" "$out"); line+="|${v:-n/a}"
  done
  echo "$line" >>"$work/peer_lat"
  echo "   $1 at $2 rows/s: ${out:-no result, exit $rc: $(tail -1 "$work/peer_lat.err")}"
}
peer_latency() {
  local rates=${BENCH_PEER_LATENCY_RATES-1000 10000} rate ldb name topic cfg sid=6400 pid k
  [[ -n $rates ]] || return 0
  : >"$work/peer_lat"
  for rate in $rates; do
    ldb="${db}_lat_$rate"
    sql "CREATE DATABASE $ldb; CREATE TABLE $ldb.t (id BIGINT PRIMARY KEY, v VARCHAR(200) NOT NULL)"
    # Debezium
    name="peer_${peer_id}_dbz_lat_$rate" topic="peer_${peer_id}_dbz_lat_$rate.$ldb.t" sid=$((sid + 1))
    echo "== latency at $rate rows/s: Debezium ($name)"
    peer_worker_start
    peer_topic_create "$topic"
    cfg=$(db=$ldb peer_config "$name" no_data "$sid")
    peer_connect -X POST "$CONNECT_URL/connectors" -d "$(jq -n --arg n "$name" --argjson c "$cfg" '{name: $n, config: $c}')" >/dev/null
    for ((k = 0; k < 600; k++)); do
      curl -s -m 5 "$CONNECT_URL/connectors/$name/status" | grep -q '"tasks":\[{"id":0,"state":"RUNNING"' && break
      sleep 0.1
    done
    peer_lat_run debezium "$rate" "$ldb.t" "$topic"
    peer_connector_ok "$name" || true
    peer_connect -X DELETE "$CONNECT_URL/connectors/$name" >/dev/null || true
    peer_worker_stop
    peer_topics_delete "$name\..*"
    # sluice, on a table of its own (the same shape)
    ldb="${ldb}_s" name="peer_${peer_id}_sluice_lat_$rate"
    sql "CREATE DATABASE $ldb; CREATE TABLE $ldb.t (id BIGINT PRIMARY KEY, v VARCHAR(200) NOT NULL)"
    echo "== latency at $rate rows/s: sluice ($name)"
    { pipeline_file "$name" $((sid + 100)) latest "$ldb"; printf '[api]\nenabled = false\n'; } >"$work/$name.toml"
    peer_topic_create "$name.t"
    "$bin" run --config "$work/$name.toml" 2>"$work/$name.log" &
    pid=$!
    for ((k = 0; k < 1500; k++)); do
      "$bin" offsets show --config "$work/$name.toml" 2>/dev/null | grep -q '"position"' && break
      kill -0 "$pid" 2>/dev/null || { echo "   sluice exited early:"; tail -3 "$work/$name.log"; break; }
      sleep 0.2
    done
    peer_lat_run sluice "$rate" "$ldb.t" "$name.t"
    kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
    peer_topics_delete "(_sluice_schema_history\.)?$name(\..*)?"
    sql "DROP DATABASE ${ldb%_s}; DROP DATABASE $ldb"
  done
}

peer_cleanup() {
  peer_watch_stop
  [[ -n $peer_worker ]] && peer_worker_stop
  return 0
}

peer_main() {
  local repeat=${BENCH_REPEAT:-3} round
  BENCH_SNAPSHOT_PARALLELISM=${BENCH_SNAPSHOT_PARALLELISM:-1}
  trap peer_cleanup EXIT
  touch "$work/results" "$work/snapshots" "$work/peer" "$work/peer_cold"
  # A worker someone left running would use other JVM settings: it is restarted per run.
  for ((round = 1; round <= repeat; round++)); do
    if [[ ${BENCH_STREAM:-1} != 0 ]]; then
      echo "== round $round: sluice drain (exactly-once)"
      peer_sluice drain "$round"
      peer_debezium drain "$round"
    fi
    if [[ ${BENCH_SNAPSHOT:-1} != 0 ]]; then
      echo "== round $round: sluice snapshot (1 reader)"
      peer_sluice snapshot "$round"
      peer_debezium snapshot "$round"
    fi
  done
  peer_latency
  peer_report "$repeat"
}

peer_report() { # rounds
  local machine cmd v kind sys server a b
  machine="$(nproc) cores, $(awk '/model name/ {$1=$2=$3=""; print; exit}' /proc/cpuinfo | xargs), $(free -g | awk '/Mem/ {print $2}') GiB"
  server="$(sql 'SELECT VERSION()')"
  cmd=""
  for v in $(compgen -e | grep '^BENCH_' | sort); do cmd+="$v=${!v} "; done
  cmd+="./scripts/bench --peer debezium"
  [[ -n ${BENCH_PEER:-} ]] && cmd=${cmd% --peer debezium}
  echo
  echo "Command: \`$cmd\`; $machine; $flavor $server; $rows rows; Debezium $(awk '$1 == "debezium-connector-mysql" { split($2, a, ":"); print a[3] }' scripts/lib/connect-plugins.lock) on Kafka Connect $KAFKA_VERSION ($peer_heap $peer_jvm)."
  echo
  echo "| date | machine | source | rows | run | system | runs | rows/s (median) | first record s (median) | CPU s / M rows (median) | peak RSS MiB (median) | value bytes | rows/s per run |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for kind in drain snapshot; do
    for sys in sluice debezium; do
      key="$kind|$sys"
      grep -q "^$key|" "$work/peer" || continue
      echo "| $(date +%F) | $machine | $flavor | $rows | $kind | $sys | $(grep -c "^$key|" "$work/peer") | $(peer_median 5 "$key") | $(peer_median 3 "$key") | $(peer_median 6 "$key") | $(peer_median 7 "$key") | $(peer_median 8 "$key") | $(awk -F'|' -v k="$key" '$1 "|" $2 == k {printf "%s%s", s, $5; s = ", "}' "$work/peer") |"
    done
  done
  echo
  echo "| ratio (medians) | measured | target |"
  echo "| --- | --- | --- |"
  peer_ratio "drain rows/s, sluice / Debezium" drain 5 sluice debezium "≥ 6"
  peer_ratio "drain CPU per row, Debezium / sluice" drain 6 debezium sluice "≥ 10"
  peer_ratio "drain peak RSS, Debezium / sluice" drain 7 debezium sluice "≥ 30"
  peer_ratio "snapshot rows/s, sluice / Debezium" snapshot 5 sluice debezium "≥ 3"
  peer_ratio "snapshot CPU per row, Debezium / sluice" snapshot 6 debezium sluice "-"
  peer_ratio "snapshot peak RSS, Debezium / sluice" snapshot 7 debezium sluice "-"
  local rate
  cut -d'|' -f1 "$work/peer_lat" 2>/dev/null | sort -un | while read -r rate; do
    a=$(awk -F'|' -v r="$rate" '$1 == r && $2 == "debezium" {print $5}' "$work/peer_lat")
    b=$(awk -F'|' -v r="$rate" '$1 == r && $2 == "sluice" {print $5}' "$work/peer_lat")
    v=n/a
    [[ $a =~ ^[0-9.]+$ && $b =~ ^[0-9.]+$ ]] && v="$(calc "$a / $b" 1)×"
    # A rate whose lag grew without bound has no latency to compare: say who fell behind.
    for sys in debezium sluice; do
      if [[ $(awk -F'|' -v r="$rate" -v s="$sys" '$1 == r && $2 == s {print $8}' "$work/peer_lat") == false ]]; then
        v="$v ($sys fell behind: its lag grew without bound, its p99 is the backlog's age)"
      fi
    done
    echo "| latency p99 at $rate rows/s, Debezium / sluice | $v | ≥ 5 |"
  done
  if [[ -s $work/peer_lat ]]; then
    echo
    echo "Latency (one row per source transaction, BENCH_LATENCY_WARMUP ${BENCH_LATENCY_WARMUP:-20} s warm-up, BENCH_LATENCY_SECONDS ${BENCH_LATENCY_SECONDS:-120} s measured; ms from the source COMMIT returning to a read_committed consumer's receipt):"
    echo
    echo "| rate rows/s | system | achieved rows/s | p50 ms | p99 ms | p99.9 ms | max ms | lag bounded | rows missing |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    tr '|' ' ' <"$work/peer_lat" | while read -r r sys ach p50 p99 p999 mx bd miss; do
      echo "| $r | $sys | $ach | $p50 | $p99 | $p999 | $mx | $bd | $miss |"
    done
  fi
  echo
  echo "Kafka Connect worker cold start (launch until the REST API lists $peer_class), before each Debezium run: median $(sort -g "$work/peer_cold" | awk '{a[NR] = $1} END {if (NR == 0) print "n/a"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f", (a[NR / 2] + a[NR / 2 + 1]) / 2}') s ($(paste -sd, "$work/peer_cold" | sed 's/,/, /g') s)."
  sql "DROP DATABASE $db"
}
peer_median() { # column key
  awk -F'|' -v k="$2" -v c="$1" '$1 "|" $2 == k && $c != "n/a" {print $c}' "$work/peer" | sort -g \
    | awk '{a[NR] = $1} END {if (NR == 0) print "n/a"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
peer_ratio() { # label kind column numerator denominator target
  local a b r=n/a
  a=$(peer_median "$3" "$2|$4"); b=$(peer_median "$3" "$2|$5")
  [[ $a != n/a && $b != n/a && $b != 0 ]] && r="$(calc "$a / $b" 1)×"
  [[ $a == n/a && $b == n/a ]] && return 0
  echo "| $1 | $r | $6 |"
}

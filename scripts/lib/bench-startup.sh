# BENCH_STARTUP=1 ./scripts/bench: how long a pipeline takes from its launch to the first record
# a read_committed consumer can see, over TLS to both servers. Sourced by scripts/bench, which
# provides sql, client, calc, median, note_names, $bin, $work, $port, $flavor and $gtid_sql;
# the certificates are the test bed's (scripts/services up writes them to .data/tls).
#
# One pipeline (exactly-once, JSON) named secure_startup_* (the test bed's TLS listeners give
# the `secure` prefix its ACLs): the source as `sluice_tls` (REQUIRE SSL) with
# ssl_mode = "verify_identity", Kafka on the SSL listener with client certificates (mutual
# TLS; BENCH_STARTUP_KAFKA_TLS=0: the plaintext listener). First a new pipeline (its topics
# created) drains a backlog of BENCH_STARTUP_ROWS (10000) rows; then BENCH_REPEAT (5)
# resumes, each after as many more rows were written while it was stopped; each run is
# stopped once it committed the backlog.
# Per run: launch → `started: requesting the binlog stream after_ms` (the log), launch → the
# first commit with records (the log's clock, the shell's too), CPU, peak RSS. Commit mode
# BENCH_STARTUP_COMMIT ("eager"; "interval" waits commit.max_ms after the first record).

TLS_DIR=${SLUICE_TEST_TLS_DIR:-$PWD/.data/tls}

startup_file() { # name db kafka_tls commit_mode start
  local bootstrap=127.0.0.1:9092 security=""
  if [[ $3 != 0 ]]; then
    bootstrap=127.0.0.1:9096
    security=$(printf '[kafka.security]\nprotocol = "ssl"\nca_file = "%s"\ncert_file = "%s"\nkey_file = "%s"\n' \
      "$TLS_DIR/ca.pem" "$TLS_DIR/kafka-writer-cert.pem" "$TLS_DIR/kafka-writer-key.pem")
  fi
  cat <<TOML
name = "$1"
delivery = "exactly-once"
[source]
url = "mysql://sluice_tls:sluice@127.0.0.1:$port"
ssl_mode = "verify_identity"
ssl_ca = "$TLS_DIR/ca.pem"
server_id = 7301
include = ["$2\\\\..*"]
start = "${5:-earliest}"
[kafka]
bootstrap_servers = "$bootstrap"
offsets_topic = "_sluice_offsets.$1"
[api]
enabled = false
[commit]
mode = "$4"
$security
TOML
}

# One run of pipeline file $1 until its committed position reaches the server's GTID now
# (written before the launch); appends "kind|stream ms|first record s|cpu s|rss MiB" to
# $work/startup. $2: new or resume.
startup_run() { # cfg kind
  local cfg=$1 kind=$2 log="$work/startup.$2.$RANDOM.log" target t0 pid first started cpu rss
  target=$(sql "$gtid_sql")
  t0=$(date +%s.%N)
  SLUICE_LOG="info,sluice::sink=debug" \
    /usr/bin/time -v -o "$log.time" "$bin" run --config "$cfg" 2>"$log" &
  pid=$!
  local deadline=$((SECONDS + 120))
  until grep ' committed ' "$log" 2>/dev/null | grep -qF -- "$target"; do
    kill -0 $pid 2>/dev/null || { echo "   sluice exited early:"; tail -5 "$log"; return 1; }
    ((SECONDS < deadline)) || { echo "   no commit of $target after 120 s:"; tail -5 "$log"; pkill -TERM -f "^$bin run --config $cfg"; return 1; }
    sleep 0.05
  done
  # The signal goes to sluice, not to `time` (which would die without its report).
  pkill -TERM -f "^$bin run --config $cfg" || true
  wait $pid || true
  first=$(grep ' committed records=[1-9]' "$log" | head -1 | awk '{print $1}')
  started=$(grep -o 'started: requesting the binlog stream after_ms=[0-9]*' "$log" | head -1 | grep -o '[0-9]*$' || true)
  cpu=$(awk -F: '/User time|System time/ {s+=$2} END {print s}' "$log.time")
  rss=$(awk -F: '/Maximum resident/ {gsub(/ /,"",$2); print int($2/1024)}' "$log.time")
  [[ -n $first ]] || { echo "   no commit with records in the log:"; tail -5 "$log"; return 1; }
  first=$(calc "$(date -d "$first" +%s.%N) - $t0" 3)
  echo "$kind|${started:-n/a}|$first|$cpu|$rss" >>"$work/startup"
  echo "   $kind: stream requested after ${started:-n/a} ms, first record visible after $first s, cpu ${cpu}s, peak RSS ${rss} MiB"
  echo "     $(grep -o 'steps=.*' "$log" | head -1)"
}

startup_main() {
  local kafka_tls=${BENCH_STARTUP_KAFKA_TLS:-1} runs=${BENCH_REPEAT:-5} more=${BENCH_STARTUP_ROWS:-10000}
  local commit=${BENCH_STARTUP_COMMIT:-eager} tag sdb cfg i
  [[ -s $TLS_DIR/ca.pem && -s $TLS_DIR/kafka-writer-cert.pem ]] \
    || { echo "BENCH_STARTUP: the test bed's certificates are missing in $TLS_DIR: run ./scripts/services up" >&2; exit 1; }
  tag="secure_startup_$(date +%s)"
  sdb="bench_startup_$(date +%s)"
  cfg="$work/$tag.toml"
  note_names "$tag"
  : >"$work/startup"
  sql "CREATE DATABASE $sdb; CREATE TABLE $sdb.t (id BIGINT PRIMARY KEY, v VARCHAR(200) NOT NULL)"
  # The new pipeline starts before the first backlog (a server with no GTID yet: earliest).
  local from
  from=$(sql "$gtid_sql")
  startup_file "$tag" "$sdb" "$kafka_tls" "$commit" "${from:+gtid:$from}" >"$cfg"
  # Rows id a .. a+n-1 of ~170 bytes, 1,000 per INSERT.
  insert_rows() { # first count
    awk -v db="$sdb" -v a="$1" -v n="$2" 'BEGIN {
      for (i = 0; i < n; i++) {
        if (i % 1000 == 0) printf "%sINSERT INTO %s.t VALUES ", (i ? ";\n" : ""), db; else printf ","
        printf "(%d,REPEAT(\"x\",160))", a + i
      }
      print ";"
    }'
  }
  echo "== start-up: source $flavor over TLS (verify_identity), Kafka $([[ $kafka_tls != 0 ]] && echo "over mutual TLS (127.0.0.1:9096)" || echo "plaintext (127.0.0.1:9092)"), commit mode $commit"
  echo "== a new pipeline (from before its backlog), then $runs resumes, each after $more rows written while stopped"
  insert_rows 1 "$more" | client "$sdb"
  startup_run "$cfg" new || exit 1
  for ((i = 1; i <= runs; i++)); do
    insert_rows $((i * more + 1)) "$more" | client "$sdb"
    startup_run "$cfg" resume || exit 1
  done
  sql "DROP DATABASE $sdb"
  local machine
  machine="$(nproc) cores, $(awk '/model name/ {$1=$2=$3=""; print; exit}' /proc/cpuinfo | xargs), $(free -g | awk '/Mem/ {print $2}') GiB"
  echo
  echo "| date | machine | source | Kafka | commit mode | run | runs | stream requested after ms (median) | first record visible s (median) | CPU s (median) | peak RSS MiB (median) | first record s per run |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  local kind
  for kind in new resume; do
    echo "| $(date +%F) | $machine | $flavor (TLS) | $([[ $kafka_tls != 0 ]] && echo "mutual TLS" || echo plaintext) | $commit | $kind | $(grep -c "^$kind|" "$work/startup") | $(median "$work/startup" 2 "$kind") | $(median "$work/startup" 3 "$kind") | $(median "$work/startup" 4 "$kind") | $(median "$work/startup" 5 "$kind") | $(awk -F'|' -v k="$kind" '$1 == k {printf "%s%s", s, $3; s = ", "}' "$work/startup") |"
  done
}

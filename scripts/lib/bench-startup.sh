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
# BENCH_COMPARE="a=/path/sluice b=/path/sluice": each build has its own pipeline and database;
# every round (the new pipelines', then each resume's) runs the builds in turn, one table row
# per build and kind.
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
# $work/startup. $2: new or resume; $3: the build's label.
startup_run() { # cfg kind label
  local cfg=$1 kind=$2 label=$3 log="$work/startup.$2.$RANDOM.log" target t0 pid first started cpu rss
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
  echo "$kind|${started:-n/a}|$first|$cpu|$rss|$label" >>"$work/startup"
  echo "   $label $kind: stream requested after ${started:-n/a} ms, first record visible after $first s, cpu ${cpu}s, peak RSS ${rss} MiB"
  echo "     $(grep -o 'steps=.*' "$log" | head -1)"
}

startup_main() {
  local kafka_tls=${BENCH_STARTUP_KAFKA_TLS:-1} runs=${BENCH_REPEAT:-5} more=${BENCH_STARTUP_ROWS:-10000}
  local commit=${BENCH_STARTUP_COMMIT:-eager}
  [[ -s $TLS_DIR/ca.pem && -s $TLS_DIR/kafka-writer-cert.pem ]] \
    || { echo "BENCH_STARTUP: the test bed's certificates are missing in $TLS_DIR: run ./scripts/services up" >&2; exit 1; }
  local builds=("current=$bin") entry b n
  [[ -z ${BENCH_COMPARE:-} ]] || read -r -a builds <<<"$BENCH_COMPARE"
  local stamp tags=() dbs=() cfgs=() from
  stamp=$(date +%s)
  : >"$work/startup"
  # Each build has a pipeline and a database of its own; a new pipeline starts before its first
  # backlog (on a server with no GTID yet: earliest).
  for b in "${!builds[@]}"; do
    tags[b]="secure_startup_${stamp}_$b"
    dbs[b]="bench_startup_${stamp}_$b"
    cfgs[b]="$work/${tags[b]}.toml"
    note_names "${tags[b]}"
    sql "CREATE DATABASE ${dbs[b]}; CREATE TABLE ${dbs[b]}.t (id BIGINT PRIMARY KEY, v VARCHAR(200) NOT NULL)"
    from=$(sql "$gtid_sql")
    startup_file "${tags[b]}" "${dbs[b]}" "$kafka_tls" "$commit" "${from:+gtid:$from}" >"${cfgs[b]}"
  done
  # Rows id a .. a+n-1 of ~170 bytes, 1,000 per INSERT, into database $1.
  insert_rows() { # db first count
    awk -v db="$1" -v a="$2" -v n="$3" 'BEGIN {
      for (i = 0; i < n; i++) {
        if (i % 1000 == 0) printf "%sINSERT INTO %s.t VALUES ", (i ? ";\n" : ""), db; else printf ","
        printf "(%d,REPEAT(\"x\",160))", a + i
      }
      print ";"
    }' | client "$1"
  }
  echo "== start-up: source $flavor over TLS (verify_identity), Kafka $([[ $kafka_tls != 0 ]] && echo "over mutual TLS (127.0.0.1:9096)" || echo "plaintext (127.0.0.1:9092)"), commit mode $commit"
  echo "== per build a new pipeline (from before its backlog), then $runs resumes, each after $more rows written while stopped${BENCH_COMPARE:+; the builds take turns}"
  for ((n = 0; n <= runs; n++)); do
    for b in "${!builds[@]}"; do
      entry=${builds[b]}
      insert_rows "${dbs[b]}" $((n * more + 1)) "$more"
      bin=${entry#*=}
      startup_run "${cfgs[b]}" "$( ((n)) && echo resume || echo new)" "${entry%%=*}" || exit 1
    done
  done
  for b in "${!builds[@]}"; do sql "DROP DATABASE ${dbs[b]}"; done
  local machine
  machine="$(nproc) cores, $(awk '/model name/ {$1=$2=$3=""; print; exit}' /proc/cpuinfo | xargs), $(free -g | awk '/Mem/ {print $2}') GiB"
  echo
  echo "| date | machine | source | Kafka | commit mode | build | run | runs | stream requested after ms (median) | first record visible s (median) | CPU s (median) | peak RSS MiB (median) | first record s per run |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  local kind label rows="$work/startup.build"
  for kind in new resume; do
    for entry in "${builds[@]}"; do
      label=${entry%%=*}
      awk -F'|' -v l="$label" '$6 == l' "$work/startup" >"$rows"
      grep -q "^$kind|" "$rows" || continue
      echo "| $(date +%F) | $machine | $flavor (TLS) | $([[ $kafka_tls != 0 ]] && echo "mutual TLS" || echo plaintext) | $commit | $label | $kind | $(grep -c "^$kind|" "$rows") | $(median "$rows" 2 "$kind") | $(median "$rows" 3 "$kind") | $(median "$rows" 4 "$kind") | $(median "$rows" 5 "$kind") | $(awk -F'|' -v k="$kind" '$1 == k {printf "%s%s", s, $3; s = ", "}' "$rows") |"
    done
  done
}

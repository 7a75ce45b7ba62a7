# shellcheck shell=bash
# shellcheck disable=SC2154 # the variables of scripts/bench, which sources this file (rows, work, bin, produce_x, compression)
# Sourced by scripts/bench for BENCH_PRODUCE_SPLIT=1: where the difference between the two
# delivery modes goes on the producer side, with no source and no encoding.
#
# sluice's own producer (`sluice bench-produce`) writes BENCH_ROWS records of
# BENCH_VALUE_BYTES bytes (default 725, a drain's average JSON value) with sluice's keys, in six
# variants that add one thing at a time, from the idempotent producer's streaming rate to
# exactly-once's transactions:
#   idempotent          no waits but the last (the producer's streaming rate)
#   batched             a wait for every acknowledgement after each 10,000 records or 100 ms
#                       (at-least-once's cadence: it waits before each offset record)
#   batched + header    the same, every record with the transaction header exactly-once puts
#                       on records (`sluice.txn`)
#   transactional, no header
#                       transactions of the same size, committed as the sink commits
#   transactional       the same with the header, and each commit's markers waited for before
#                       the next transaction: exactly-once's producer
#   transactional, markers not checked
#                       the next transaction begins at once (its first records then usually
#                       meet the coordinator still completing the commit: a 20 ms retry)
# BENCH_REPEAT rounds (default 5) of the six, alternated, each on a topic of its own; medians
# of records/s and CPU s per million records, and each step's share of the rate. Every variant
# compresses with BENCH_COMPRESSION when it is set (compression.type, -X).
# Needs only Kafka (the test bed's, up or started by scripts/bench).

split_variants=("idempotent|--idempotent" "batched|--idempotent --batched"
  "batched + header|--idempotent --batched --header true"
  "transactional, no header|--header false" "transactional|"
  "transactional, markers not checked|--check-markers false")

split_main() {
  local repeat=${BENCH_REPEAT:-5} bytes=${BENCH_VALUE_BYTES:-725} round k label flags out topic
  local rate cpu
  split_prefix="split_$(date +%s)"
  trap 'bench_topics_delete "$split_prefix.*"' EXIT
  : >"$work/split"
  for ((round = 1; round <= repeat; round++)); do
    for ((k = 0; k < ${#split_variants[@]}; k++)); do
      label=${split_variants[k]%%|*} flags=${split_variants[k]#*|}
      topic="${split_prefix}_${round}_$k"
      bench_topic_create "$topic"
      # shellcheck disable=SC2086 # the flags are words
      out=$("$bin" bench-produce --topic "$topic" --records "$rows" --value-bytes "$bytes" $flags "${produce_x[@]}" \
        2>>"$work/split.err") || { echo "   $label: failed:"; tail -3 "$work/split.err"; exit 1; }
      rate=$(json_field records_per_s "$out" | cut -d. -f1)
      cpu=$(calc "$(json_field cpu_s "$out") * 1000000 / $rows" 2)
      echo "$k|$label|$rate|$cpu" >>"$work/split"
      echo "   round $round, $label: $rate records/s, $cpu CPU s / M records"
    done
  done
  split_report "$repeat" "$bytes"
}

split_median() { # variant column
  awk -F'|' -v k="$1" -v c="$2" '$1 == k { print $c }' "$work/split" | sort -n \
    | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

split_report() { # rounds bytes
  local machine k label rate cpu base prev runs
  machine="$(nproc) cores, $(awk '/model name/ {$1=$2=$3=""; print; exit}' /proc/cpuinfo | xargs), $(free -g | awk '/Mem/ {print $2}') GiB"
  echo
  echo "Command: \`BENCH_PRODUCE_SPLIT=1 BENCH_ROWS=$rows BENCH_REPEAT=$1 BENCH_VALUE_BYTES=$2${compression:+ BENCH_COMPRESSION=$compression} ./scripts/bench\`; $machine; $rows records of $2 bytes, one partition, compression ${compression:-not set (none)}, medians of $1 alternated rounds."
  echo
  echo "| date | variant | records/s (median) | share of the idempotent rate | change from the row above | CPU s / M records (median) | records/s per run |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  base=$(split_median 0 3) prev=$base
  for ((k = 0; k < ${#split_variants[@]}; k++)); do
    label=${split_variants[k]%%|*}
    rate=$(split_median "$k" 3) cpu=$(split_median "$k" 4)
    runs=$(awk -F'|' -v k="$k" '$1 == k { printf "%s%s", sep, $3; sep = ", " }' "$work/split")
    echo "| $(date +%F) | $label | $rate | $(calc "100 * $rate / $base" 0)% | $(calc "100 * ($rate - $prev) / $prev" 1)% | $cpu | $runs |"
    prev=$rate
  done
}

# shellcheck shell=bash
# shellcheck disable=SC2154 # the variables of scripts/bench, which sources this file (rows, txn_rows, peer, flavor, work)
# shellcheck disable=SC2034 # variables set here for scripts/bench (produce_x, table_rows)
# Sourced by scripts/bench: the workload of the drains, ceilings and snapshots (BENCH_SHAPE,
# BENCH_MIX, BENCH_MIX_KEYS, BENCH_TABLES) and the producer's compression (BENCH_COMPRESSION),
# documented in the script's header: their checks, the tables, the SQL that fills them and
# the counts a drain or a snapshot must end with.

# Stops the bench (exit 2): variable $1 holds $2, $3 is what it must be.
workload_refuse() { # variable found expected
  echo "$1 must be $3, got '$2'" >&2
  exit 2
}

# Reads and checks the options (before anything is started). Sets shape, mix, mix_keys,
# tables, compression and produce_x (bench-produce's -X for the compression).
workload_check() {
  shape=${BENCH_SHAPE:-narrow} mix=${BENCH_MIX:-insert} mix_keys=${BENCH_MIX_KEYS:-100000}
  tables=${BENCH_TABLES:-1} compression=${BENCH_COMPRESSION:-}
  [[ $shape == narrow || $shape == wide ]] || workload_refuse BENCH_SHAPE "$shape" "narrow or wide"
  [[ $mix == insert || $mix == mixed ]] || workload_refuse BENCH_MIX "$mix" "insert or mixed"
  [[ $mix_keys =~ ^[1-9][0-9]*$ ]] || workload_refuse BENCH_MIX_KEYS "$mix_keys" "a positive number of rows"
  [[ $tables =~ ^[1-9][0-9]*$ ]] || workload_refuse BENCH_TABLES "$tables" "a positive number of tables"
  ((rows % tables == 0)) \
    || workload_refuse BENCH_TABLES "$tables" "a number of tables that divides BENCH_ROWS ($rows)"
  case $compression in
    '' | none | lz4 | zstd | snappy | gzip) ;;
    *) workload_refuse BENCH_COMPRESSION "$compression" "none, lz4, zstd, snappy or gzip (the producer's compression.type)" ;;
  esac
  # The wide rows' size is their columns'; BENCH_VALUE_BYTES sizes BENCH_PRODUCE_SPLIT's
  # records only (which has no table), so with wide it can only be a mistake.
  if [[ $shape == wide && -n ${BENCH_VALUE_BYTES:-} ]]; then
    workload_refuse BENCH_VALUE_BYTES "$BENCH_VALUE_BYTES" "unset with BENCH_SHAPE=wide (its rows are 2-4 KB by their columns; BENCH_VALUE_BYTES sizes BENCH_PRODUCE_SPLIT's records only)"
  fi
  if [[ $mix == mixed ]]; then
    # One transaction's updates and deletes (at most 40% of it, rounded up) find live keys.
    ((mix_keys >= txn_rows)) \
      || workload_refuse BENCH_MIX_KEYS "$mix_keys" "at least BENCH_TXN_ROWS ($txn_rows) with BENCH_MIX=mixed"
    ((tables == 1)) || workload_refuse BENCH_TABLES "$tables" "1 with BENCH_MIX=mixed (the mix runs on one table)"
  fi
  # The workload is the preload's of the drains, ceilings and snapshots (also BENCH_COMPARE's);
  # the other benches load their own tables.
  local other=""
  [[ ${BENCH_PIPELINES:-0} != 0 ]] && other=BENCH_PIPELINES=1
  [[ ${BENCH_TAKEOVER:-0} != 0 ]] && other=BENCH_TAKEOVER=1
  [[ ${BENCH_LATENCY:-0} != 0 ]] && other=BENCH_LATENCY=1
  [[ ${BENCH_PRODUCE_SPLIT:-0} != 0 ]] && other=BENCH_PRODUCE_SPLIT=1
  [[ -n $peer ]] && other="--peer $peer"
  if [[ -n $other ]]; then
    [[ $shape == narrow ]] || workload_refuse BENCH_SHAPE "$shape" "narrow (unset) with $other"
    [[ $mix == insert ]] || workload_refuse BENCH_MIX "$mix" "insert (unset) with $other"
    ((tables == 1)) || workload_refuse BENCH_TABLES "$tables" "1 (unset) with $other"
  fi
  # Debezium's producer would write uncompressed beside it: no comparison.
  [[ -z $compression || -z $peer ]] \
    || workload_refuse BENCH_COMPRESSION "$compression" "unset with --peer debezium (Debezium's producer is not set to compress)"
  produce_x=()
  [[ -z $compression ]] || produce_x=(-X "compression.type=$compression")
  return 0
}

# The workload in words, for the run's header and its summary.
workload_desc() {
  local d
  if [[ $shape == wide ]]; then
    d="wide rows (2-4 KB: 4 DECIMAL(20,6), 3 DATETIME(6), JSON ~1 KB, TEXT 1.5-2.5 KB)"
  else
    d="narrow rows (~200 bytes)"
  fi
  if [[ $mix == mixed ]]; then
    d+=", mixed changes on $mix_keys preloaded keys ($mix_ins inserts, $mix_upd updates, $mix_del deletes: $records records with the tombstones)"
  else
    d+=", inserts"
  fi
  d+=", $tables table$([[ $tables == 1 ]] || echo s), compression "
  if [[ -n $compression ]]; then d+="$compression"; else d+="none (not set: sluice's default)"; fi
  echo "$d"
}
# The same, shortened, behind the mode in the tables' rows: empty for the default workload
# (the rows then read as before these options).
workload_tag() {
  local t=()
  [[ $shape == narrow ]] || t+=("wide rows")
  [[ $mix == insert ]] || t+=("mixed 60/30/10 on $mix_keys keys")
  ((tables == 1)) || t+=("$tables tables")
  [[ -z $compression ]] || t+=("compression $compression")
  ((${#t[@]})) || return 0
  local IFS=,
  echo " (${t[*]})" | sed 's/,/, /g'
}

# The table names: t alone, or t0001 ... (at least 4 digits, as many as BENCH_TABLES has).
table_name() { # k (1-based)
  if ((tables == 1)); then echo t; else printf 't%0*d' "$((${#tables} > 4 ? ${#tables} : 4))" "$1"; fi
}

# The columns of a table of the shape.
shape_columns() {
  if [[ $shape == wide ]]; then
    echo "(id BIGINT PRIMARY KEY, p1 DECIMAL(20,6) NOT NULL, p2 DECIMAL(20,6) NOT NULL,
       p3 DECIMAL(20,6) NOT NULL, p4 DECIMAL(20,6) NOT NULL, t1 DATETIME(6) NOT NULL,
       t2 DATETIME(6) NOT NULL, t3 DATETIME(6) NOT NULL, doc JSON NOT NULL, body TEXT NOT NULL)"
  else
    echo "(id BIGINT PRIMARY KEY, a INT NOT NULL,
       b VARCHAR(100) NOT NULL, c DECIMAL(12,2) NOT NULL, d DATETIME(6) NOT NULL, e VARCHAR(60) NOT NULL)"
  fi
}
# The select list of the row with key `seq` (a column of rows_from). Wide: the JSON document
# (about 1 KB) and the TEXT (1,500 to 2,500 bytes, by the key) are words and hex digits of
# random bytes, so that a compressor shrinks them about as it would text, not as one repeated
# string (the bytes differ between runs; their size and mix do not).
shape_select() {
  if [[ $shape == wide ]]; then
    echo "seq, seq * 1234.567891, seq / 7, (seq % 1000) * 99.999999, seq * -0.000001,
      '2024-03-01 10:20:30.123456' + INTERVAL seq SECOND, '2020-01-01 00:00:00.000001' + INTERVAL seq * 37 SECOND,
      '2030-12-31 23:59:59.999999' - INTERVAL seq MICROSECOND,
      JSON_OBJECT('id', seq, 'sku', CONCAT('SKU-', LPAD(seq, 12, '0')), 'name', CONCAT('item ', seq, ' ', LEFT(SHA2(seq, 256), 16)),
        'price', ROUND(seq / 7, 2), 'qty', seq % 1000, 'active', seq % 2 = 0,
        'tags', JSON_ARRAY('red', 'green', 'blue', CONCAT('tag-', seq % 13), CONCAT('tag-', seq % 17)),
        'dims', JSON_OBJECT('w', seq % 100, 'h', seq % 37, 'd', seq % 11, 'unit', 'mm'),
        'checksum', SHA2(seq, 256),
        'history', JSON_ARRAY(JSON_OBJECT('at', '2024-03-01 10:20:30' + INTERVAL seq SECOND, 'by', CONCAT('user-', seq % 101), 'what', 'created'),
          JSON_OBJECT('at', '2024-03-02 11:21:31' + INTERVAL seq SECOND, 'by', CONCAT('user-', seq % 103), 'what', 'priced')),
        'notes', CONCAT('Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ', HEX(RANDOM_BYTES(220)))),
      LEFT(CONCAT(REPEAT(CONCAT('Row ', seq, ': lorem ipsum dolor sit amet, consectetur adipiscing elit. '), 12),
        HEX(RANDOM_BYTES(512)), REPEAT(' sed do eiusmod tempor incididunt ut labore', 16)), 1500 + seq * 7919 % 1001)"
  else
    echo "seq, seq % 1000, CONCAT('name-', seq, '-', REPEAT('x', 70)), seq / 7, '2024-03-01 10:20:30.123456' + INTERVAL seq SECOND, LEFT(SHA2(seq, 256), 32)"
  fi
}
# What an update of the mix changes (always a new value: an unchanged row writes no event).
shape_update() {
  if [[ $shape == wide ]]; then echo "p1 = p1 + 1, t1 = t1 + INTERVAL 1 SECOND"; else echo "a = a + 1, d = d + INTERVAL 1 SECOND"; fi
}

# The SQL that creates database $1 and its tables and inserts keys 1..$2 in $txn_rows-row
# transactions (the last one shorter when $txn_rows does not divide $2: the mix's keys); table
# k of the N holds the keys (k-1)*$2/N+1 .. k*$2/N, and a transaction spanning tables is one
# INSERT ... SELECT per table in a START TRANSACTION ... COMMIT.
preload_sql() { # db rows
  local k lo hi per=$(($2 / tables)) cols sel a b
  cols=$(shape_columns) sel=$(shape_select)
  echo "CREATE DATABASE $1; USE $1;"
  for ((k = 1; k <= tables; k++)); do echo "CREATE TABLE $1.$(table_name "$k") $cols;"; done
  [[ $flavor == mysql ]] && echo "SET SESSION cte_max_recursion_depth = $((txn_rows + 10));"
  for ((lo = 1; lo <= $2; lo += txn_rows)); do
    hi=$((lo + txn_rows - 1)); ((hi <= $2)) || hi=$2
    if ((tables == 1)); then
      echo "INSERT INTO $1.t SELECT $sel $(rows_from "$lo" "$hi");"
      continue
    fi
    (((lo - 1) / per == (hi - 1) / per)) || echo "START TRANSACTION;"
    for ((a = lo; a <= hi; a = b + 1)); do
      b=$((((a - 1) / per + 1) * per)); ((b <= hi)) || b=$hi
      echo "INSERT INTO $1.$(table_name $(((a - 1) / per + 1))) SELECT $sel $(rows_from "$a" "$b");"
    done
    (((lo - 1) / per == (hi - 1) / per)) || echo "COMMIT;"
  done
}

# Of changes 0 .. $1-1 of the mix, how many are inserts, updates, deletes (set in mix_i, mix_u,
# mix_d; no subshell, it runs once a transaction): change i is an insert when i mod 10 < 6, an
# update when < 9, else a delete.
mix_upto() { # n
  local m=$(($1 % 10))
  mix_d=$(($1 / 10)); mix_i=$((mix_d * 6 + (m < 6 ? m : 6))) mix_u=$((mix_d * 3 + (m > 6 ? m - 6 : 0)))
}
# What a drain and a snapshot must end with: records (a drain's records: one per change and a
# tombstone per delete, sluice's default), table_rows (the rows the tables hold at the end);
# mix_ins, mix_upd, mix_del for the mix.
workload_counts() {
  records=$rows table_rows=$rows
  [[ $mix == mixed ]] || return 0
  mix_upto "$rows"
  mix_ins=$mix_i mix_upd=$mix_u mix_del=$mix_d
  records=$((rows + mix_del)) table_rows=$((mix_keys + mix_ins - mix_del))
}

# The SQL of the mix on $1.t, which holds keys 1..$mix_keys: $rows changes in $txn_rows-change
# transactions. The live keys are always one range, lo..hi: inserts take the keys after it,
# deletes the oldest ones, and each transaction's updates a range of live keys that moves
# through it (by 7919 keys a transaction, modulo its size); each transaction is its INSERT ...
# SELECT, then its UPDATE, then its DELETE.
mix_sql() { # db
  local k ni nu nd pi=0 pu=0 pd=0 lo=1 hi=$mix_keys a n sel upd
  sel=$(shape_select) upd=$(shape_update)
  [[ $flavor == mysql ]] && echo "SET SESSION cte_max_recursion_depth = $((txn_rows + 10));"
  for ((k = 0; k < rows / txn_rows; k++)); do
    mix_upto $(((k + 1) * txn_rows))
    ni=$((mix_i - pi)) nu=$((mix_u - pu)) nd=$((mix_d - pd)) pi=$mix_i pu=$mix_u pd=$mix_d
    n=$(((ni > 0) + (nu > 0) + (nd > 0)))
    ((n == 1)) || echo "START TRANSACTION;"
    if ((ni > 0)); then
      echo "INSERT INTO $1.t SELECT $sel $(rows_from $((hi + 1)) $((hi + ni)));"
      hi=$((hi + ni))
    fi
    if ((nu > 0)); then
      a=$((lo + k * 7919 % (hi - lo + 2 - nu)))
      echo "UPDATE $1.t SET $upd WHERE id BETWEEN $a AND $((a + nu - 1));"
    fi
    if ((nd > 0)); then
      echo "DELETE FROM $1.t WHERE id BETWEEN $lo AND $((lo + nd - 1));"
      lo=$((lo + nd))
    fi
    ((n == 1)) || echo "COMMIT;"
  done
}

# The value size of every record (-1: a tombstone) in pipeline $1's data topics, one a line,
# read_committed: the topic $1.t, or with several tables every topic $1.t<digits> through one
# consumer (a group of its own that commits no offsets; kcat's warning that this sets a
# deprecated alias is left out of its messages).
run_sizes() { # pipeline
  if ((tables == 1)); then
    kcat -b 127.0.0.1:9092 -X isolation.level=read_committed -C -t "$1.t" -o beginning -e -q -f '%S\n'
  else
    kcat -b 127.0.0.1:9092 -X isolation.level=read_committed -X auto.offset.reset=earliest \
      -X enable.auto.commit=false -G "$1.count" -e -q -f '%S\n' "^$1\\.t[0-9]+\$" 2>"$work/$1.kcat.err"
    grep -v CONFWARN "$work/$1.kcat.err" >&2 || true
  fi
}

# SELECT * of every table, for the SELECT ceiling.
select_all_sql() { # db
  local k
  for ((k = 1; k <= tables; k++)); do echo "SELECT * FROM $1.$(table_name "$k");"; done
}

# The [kafka.properties] table of BENCH_COMPRESSION, appended to every pipeline file the bench
# writes (TOML takes the sub-table after the others); nothing when it is not set.
compression_toml() {
  [[ -z $compression ]] || printf '[kafka.properties]\n"compression.type" = "%s"\n' "$compression"
}

# Before the tables: the workload, and every count that was not the expected one.
workload_summary() {
  echo
  echo "Workload: $(workload_desc)."
  if [[ -s $work/checks ]]; then
    echo "Counts NOT as expected:"
    sed 's/^/- /' "$work/checks"
  else
    echo "Counts: every drain and snapshot ended with the records expected."
  fi
}

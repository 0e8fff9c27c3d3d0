#!/bin/bash
# The issue-28 benches one after the other, as RESULTS-fleet.md §10 ran them, on a quiet
# machine (run nothing else meanwhile). Usage, from any checkout:
#   bash contrib/bench/rerun_issue28.sh OUTDIR [TREE] [full]
# TREE (default: this checkout) is the tree measured: its own benches run against its own code;
# the instruction counts use this checkout's bench_instructions.py with DBWATCH_BENCH_ROOT=TREE.
# "full": the fleet at 500, 1,000 and 2,000 targets (else 1,000 only). Each bench writes its JSON
# into OUTDIR. About 11 minutes on 2 cores ("full").
set -u
OUT=${1:?usage: rerun_issue28.sh OUTDIR [TREE] [full]}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
T=$(cd "${2:-$HERE}" && pwd)
FULL=${3:-}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
cd "$T"
export PYTHONPATH="$T" DBWATCH_BENCH_ROOT="$T"
python -m compileall -q dbwatch
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
python contrib/bench/bench_startup.py --runs 10 --json "$OUT/startup.json" > /dev/null
for a in "mariadb 30" "mariadb 10 --vary" "mysql57 10" "mysql57 10 --vary"; do
  set -- $a
  python contrib/bench/bench_tail.py --report "$1" --seconds "$2" ${3:-} > "$OUT/tail_$1_$2${3:-}.json"
done
python contrib/bench/bench_floor.py --throwaway --cycles 300 --phases --json "$OUT/floor_pg_gap0.json" > /dev/null
python contrib/bench/bench_floor.py --throwaway --cycles 300 --phases --gap 0.03 --json "$OUT/floor_pg_gap03.json" > /dev/null
python contrib/bench/bench_floor.py --engine mysql --cycles 300 --phases --gap 0.03 --json "$OUT/floor_my_gap03.json" > /dev/null
python "$HERE/contrib/bench/bench_instructions.py" --interval 3600 --json "$OUT/instr.json" > /dev/null
python contrib/bench/bench_queue_libs.py --throwaway --backlog --libs pg-boss10,pg-boss11 --repeat 3 --json "$OUT/pgboss.json" > /dev/null
python contrib/bench/bench_queue_libs.py --throwaway --backlog --libs symfony-mariadb,procrastinate,que --repeat 3 --json "$OUT/q_backlog.json" > /dev/null
python contrib/bench/bench_queue_libs.py --throwaway --libs laravel-pg,laravel-mariadb --repeat 3 --json "$OUT/q_default.json" > /dev/null
if [ "$FULL" = full ]; then S=500,1000,2000; else S=1000; fi
python contrib/bench/bench_daemon.py --throwaway --sizes "$S" --per-server 2100 --interval 15 --cycles 4 --json "$OUT/fleet.json" > "$OUT/fleet.out" 2>&1
echo "end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"

#!/bin/bash
# Behaviour unchanged (issue 25.7): the same dbwatch commands over the repository's recorded
# inputs (InnoDB status texts, error/PostgreSQL logs, query logs, refused files, rules/explain)
# run on a base revision and on the working tree; stdout+stderr and exit codes compared, timing
# figures (MB/s, "seconds", "generated_at") left out. Usage: contrib/differential.sh [REV]
# The same command lines are golden files in the suite: tests/test_differential.py.
set -u
REV=${1:-main}
HERE=$(cd "$(dirname "$0")/.." && pwd)
BASE=$(mktemp -d)
trap 'rm -rf "$BASE"' EXIT
git -C "$HERE" archive "$REV" | tar -x -C "$BASE"
F=$HERE/tests/fixtures
C=$HERE/../shared/innodb-status
[ -d "$C" ] || C=/work/shared/corpus/innodb-status
cases=()
for f in "$C"/* "$F"/innodb/*.txt; do [ -f "$f" ] && cases+=("deadlocks --file $f --format json"); done
for f in "$F"/innodb/*.log "$F"/innodb/*.json "$F"/pglog/*.* "$F"/innodb/published/* \
    "$F"/innodb/variants/* "$F"/pglog/published/*; do
  [ -f "$f" ] && cases+=("deadlocks --log $f --format json")
done
for f in "$F"/logs/*; do cases+=("audit --log $f --format json" "audit --log $f"); done
cases+=("rules --format json" "explain PG201" "explain DW001" "audit --log /bin/ls"
  "deadlocks --file /bin/ls" "deadlocks --log /etc/hostname --format json")
strip() { sed -E 's/[0-9.]+ MB\/s//; s/"(seconds|generated_at)": [^,]*//'; }
n=0; bad=0
for c in "${cases[@]}"; do
  n=$((n + 1))
  # shellcheck disable=SC2086  # the case is a command line
  a=$(cd "$BASE" && timeout 60 python -m dbwatch $c 2>&1 | strip; echo "rc=${PIPESTATUS[0]}")
  # shellcheck disable=SC2086
  b=$(cd "$HERE" && timeout 60 python -m dbwatch $c 2>&1 | strip; echo "rc=${PIPESTATUS[0]}")
  if [ "$a" != "$b" ]; then
    bad=$((bad + 1))
    echo "DIFF: $c"
    diff <(echo "$a") <(echo "$b") | head -8
  fi
done
echo "cases=$n differing=$bad"
[ "$bad" -eq 0 ]

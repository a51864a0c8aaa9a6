#!/bin/sh
# bench/spark.sh BUILD_DIR — rally-gbdt as rally.spark's GBDTClassifier beside
# xgboost.spark's SparkXGBClassifier on one Spark (pyspark, xgboost from
# PyPI in the checkout's .venv: scripts/deps.sh), local-cluster[2,1,1024],
# the same DataFrame, 200 trees of depth 6: seconds per tree, test accuracy
# and log-loss, and the seconds to a model when an executor is killed -9
# halfway (rally: resumed from its snapshot in a retried stage; xgboost.spark:
# its fit fails and is run again).  Rounds interleave ABBA
# (bindings/python/bench/spark_gbdt.py); the table gives min, median and
# max over the rounds, this machine's memcpy and its load beside them.
#   BENCH_SPARK_ROUNDS=2  BENCH_SPARK_ROWS=100000  BENCH_SPARK_TREES=200
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/bench/lib.sh"
py=$src/.venv/bin/python
[ -x "$py" ] || { echo "bench spark: no $py (make deps: scripts/deps.sh)" >&2; exit 1; }
rounds=${BENCH_SPARK_ROUNDS:-2}
rows=${BENCH_SPARK_ROWS:-100000}
trees=${BENCH_SPARK_TREES:-200}
out=$(mktemp -d "$build/bench-spark.XXXXXX")
trap 'rm -rf "$out"' EXIT
echo "rally.spark GBDTClassifier beside xgboost.spark SparkXGBClassifier: local-cluster[2,1,1024], 2 workers,"
echo "$rows rows x 16 features (test: $((rows / 4))), $trees trees of depth 6, $rounds rounds ABBA; min median max"
"$build/bench/ceiling" memcpy | awk '{ printf "  %-54s %9.1f  GB/s\n", "memcpy (this machine, same block)", $3 }'
echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
PYTHONPATH="$build/python" timeout 3600 "$py" "$src/bindings/python/bench/spark_gbdt.py" \
    "$out/shared" "$rounds" "$rows" "$trees" >"$out/res" 2>"$out/err" ||
    { tail -n 30 "$out/err" >&2; exit 1; }
row "rally.spark: s per tree" s "$out/res" rally_tree
row "xgboost.spark: s per tree" s "$out/res" xgb_tree
row "xgboost.spark / rally.spark, s per tree" x "$out/res" xgb_tree rally_tree
row "rally.spark: test accuracy (%)" "" "$out/res" rally_acc
row "xgboost.spark: test accuracy (%)" "" "$out/res" xgb_acc
row "rally.spark: test log-loss x 1000" n "$out/res" rally_logloss
row "xgboost.spark: test log-loss x 1000" n "$out/res" xgb_logloss
row "rally.spark: s to a model, failure-free" s "$out/res" rally_fit
row "xgboost.spark: s to a model, failure-free" s "$out/res" xgb_fit
row "rally.spark: s to a model, executor killed halfway" s "$out/res" rally_kill
row "xgboost.spark: s to a model, executor killed halfway" s "$out/res" xgb_kill
echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

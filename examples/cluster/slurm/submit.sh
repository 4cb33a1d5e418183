#!/bin/bash
# Submit a class to Slurm: a job array of KIT_SHARDS shards, then a merge that waits for all of them.
#   KIT_PYTHON=/opt/kit/.venv/bin/python KIT_SUBMISSIONS=/shared/subs KIT_OUT=/shared/out KIT_SHARDS=8 \
#       bash examples/cluster/slurm/submit.sh
# Optional: KIT_CPUS (cores per shard, default 2), KIT_LANG (es, en), KIT_ROSTER (the LMS's export),
# KIT_MERGE_OPTIONS (e.g. '--assignment "Práctica 2 (777)" --scale 10').
# KIT_SUBMISSIONS and KIT_OUT must be on a file system every node sees.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${KIT_PYTHON:?}" "${KIT_SUBMISSIONS:?}" "${KIT_OUT:?}" "${KIT_SHARDS:?}"
mkdir -p "$KIT_OUT"
array=$(sbatch --parsable --array="1-$KIT_SHARDS" --cpus-per-task="${KIT_CPUS:-2}" \
    --output="$KIT_OUT/shard-%a.log" "$here/grade.sbatch")
merge=$(sbatch --parsable --dependency="afterany:$array" --output="$KIT_OUT/merge.log" "$here/merge.sbatch")
echo "shards: job $array (array 1-$KIT_SHARDS); merge: job $merge -> $KIT_OUT/merged"

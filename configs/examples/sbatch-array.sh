#!/bin/bash
# An array of 4 elements, at most 2 running at once (%2): `fedq submit configs/examples/sbatch-array.sh`.
# fedq numbers elements from 0, as --array=0-3 does; an element reads its index from its job id (ID-INDEX).
#SBATCH -J sbatch-sweep
#SBATCH -p prod.batch
#SBATCH -a 0-3%2
#SBATCH -c 1 --mem-per-cpu=128M
#SBATCH -t 2:00
#SBATCH --output=sweep-%A_%a.out
index=${FEDQ_JOB_ID##*-}
echo "element $index of array ${FEDQ_JOB_ID%-*}: trying learning rate 0.0$((index + 1))"

#!/bin/sh
# Two tasks of one job, placed together (a gang, as an sbatch allocation is): each prints its index.
#SBATCH --job-name=sbatch-tasks
#SBATCH --partition=prod.batch
#SBATCH --ntasks=2 --cpus-per-task=1
#SBATCH --mem-per-cpu=128M
#SBATCH --time=0-00:05:00
echo "task $FEDQ_TASK_INDEX of job $FEDQ_JOB_ID"

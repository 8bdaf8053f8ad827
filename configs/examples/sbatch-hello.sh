#!/bin/bash
# A Slurm batch script fedq runs as it is: `fedq submit configs/examples/sbatch-hello.sh`.
# Its #SBATCH lines become the job's spec (federation/submitfiles/slurm.py); the script is the task's command.
#SBATCH --job-name=sbatch-hello
#SBATCH --partition=research.vision
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --mem=256M
#SBATCH --time=5
echo "hello from $(hostname), job $FEDQ_JOB_ID"

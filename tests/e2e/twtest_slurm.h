/* twtest_slurm.h - what the tests on the project's Slurm cluster read from
 * the state directory scripts/slurm.sh wrote (the ctest fixture
 * slurm_cluster_start passes it as $TW_SLURM_DIR). */
#ifndef TW_TESTS_E2E_TWTEST_SLURM_H
#define TW_TESTS_E2E_TWTEST_SLURM_H

struct twtest_slurm {
  char state_dir[512];
  char url[256];        /* slurmrestd */
  char token_file[512]; /* its JWT */
  char output_dir[512]; /* where jobs' output lands */
  char slurm_conf[600]; /* for squeue, scancel */
};

/* Fills s from $TW_SLURM_DIR/slurm.env: 0, or -1 when the cluster never
 * started (the caller reports SKIPPED). */
int twtest_slurm_load(struct twtest_slurm *s);

#endif

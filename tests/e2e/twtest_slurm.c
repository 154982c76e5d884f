/* twtest_slurm.c - see twtest_slurm.h. */
#include "tests/e2e/twtest_slurm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int twtest_slurm_load(struct twtest_slurm *s) {
  memset(s, 0, sizeof *s);
  const char *dir = getenv("TW_SLURM_DIR");
  if (!dir || !*dir)
    return -1;
  snprintf(s->state_dir, sizeof s->state_dir, "%s", dir);
  char path[600], line[1024];
  snprintf(path, sizeof path, "%s/slurm.env", dir);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *eq = strchr(line, '=');
    if (strncmp(line, "export ", 7) || !eq)
      continue;
    *eq = '\0';
    const char *k = line + 7, *v = eq + 1;
    if (!strcmp(k, "TW_SLURM_URL"))
      snprintf(s->url, sizeof s->url, "%s", v);
    else if (!strcmp(k, "TW_SLURM_TOKEN_FILE"))
      snprintf(s->token_file, sizeof s->token_file, "%s", v);
    else if (!strcmp(k, "TW_SLURM_OUTPUT_DIR"))
      snprintf(s->output_dir, sizeof s->output_dir, "%s", v);
    else if (!strcmp(k, "SLURM_CONF"))
      snprintf(s->slurm_conf, sizeof s->slurm_conf, "%s", v);
  }
  fclose(f);
  return s->url[0] && s->token_file[0] && s->output_dir[0] ? 0 : -1;
}

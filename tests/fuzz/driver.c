/* driver.c - runs a libFuzzer-style target without libFuzzer, so every fuzz
 * target is also an ordinary ctest (under ASan+UBSan in CI):
 *
 *   fuzz_x [--iterations N] [--seed S] [CORPUS_FILE_OR_DIR ...]
 *
 * Each corpus file is run as is, then N mutations of them (bit flips,
 * byte insertions, deletions, splices, truncations) from a seeded PRNG.
 * The seed is printed so a failure can be replayed.  Build with
 * -DTW_FUZZ=ON and clang to get real coverage-guided libFuzzer binaries. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

struct input {
  uint8_t *data;
  size_t len;
};

static struct input *inputs;
static size_t n_inputs;

static uint64_t rng_state;
static uint64_t rng(void) {
  uint64_t x = rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return rng_state = x;
}

static void add_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (n < 0 || n > (1 << 20)) {
    fclose(f);
    return;
  }
  uint8_t *d = malloc((size_t)n + 1);
  if (fread(d, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(d);
    return;
  }
  fclose(f);
  inputs = realloc(inputs, (n_inputs + 1) * sizeof *inputs);
  inputs[n_inputs].data = d;
  inputs[n_inputs].len = (size_t)n;
  n_inputs++;
}

static void add_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "fuzz: %s: not found\n", path);
    exit(2);
  }
  if (!S_ISDIR(st.st_mode)) {
    add_file(path);
    return;
  }
  DIR *d = opendir(path);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", path, e->d_name);
    add_path(p);
  }
  if (d)
    closedir(d);
}

int main(int argc, char **argv) {
  long iterations = 20000;
  uint64_t seed = 0x7ade3141;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
      iterations = strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = strtoull(argv[++i], NULL, 10);
    else
      add_path(argv[i]);
  }
  if (n_inputs == 0) {
    static uint8_t empty[1];
    inputs = calloc(1, sizeof *inputs);
    inputs[0].data = empty;
    n_inputs = 1;
  }
  printf("fuzz: %zu corpus inputs, %ld mutations, seed %llu\n", n_inputs,
         iterations, (unsigned long long)seed);
  fflush(stdout);
  rng_state = seed ? seed : 1;
  for (size_t i = 0; i < n_inputs; i++)
    LLVMFuzzerTestOneInput(inputs[i].data, inputs[i].len);
  uint8_t *buf = malloc(1 << 16);
  for (long it = 0; it < iterations; it++) {
    struct input *src = &inputs[rng() % n_inputs];
    size_t len = src->len < (1 << 15) ? src->len : (1 << 15);
    memcpy(buf, src->data, len);
    int muts = 1 + (int)(rng() % 8);
    for (int m = 0; m < muts; m++) {
      size_t pos = len ? rng() % len : 0;
      switch (rng() % 6) {
      case 0: /* flip a bit */
        if (len)
          buf[pos] ^= (uint8_t)(1u << (rng() % 8));
        break;
      case 1: /* set an interesting byte */
        if (len) {
          static const uint8_t v[] = {0,   0xff, '"', '\'', ':',  '{',
                                      '}', '[',  ']', ',',  '\n', '-',
                                      '<', '>',  '&', '%'};
          buf[pos] = v[rng() % sizeof v];
        }
        break;
      case 2: /* insert a byte */
        if (len < (1 << 15)) {
          memmove(buf + pos + 1, buf + pos, len - pos);
          buf[pos] = (uint8_t)rng();
          len++;
        }
        break;
      case 3: /* delete a run */
        if (len) {
          size_t n = 1 + rng() % 8;
          if (pos + n > len)
            n = len - pos;
          memmove(buf + pos, buf + pos + n, len - pos - n);
          len -= n;
        }
        break;
      case 4: /* truncate */
        len = pos;
        break;
      case 5: { /* splice from another input */
        struct input *o = &inputs[rng() % n_inputs];
        if (o->len && len < (1 << 15)) {
          size_t from = rng() % o->len, n = 1 + rng() % 32;
          if (from + n > o->len)
            n = o->len - from;
          if (len + n > (1 << 15))
            n = (1 << 15) - len;
          memmove(buf + pos + n, buf + pos, len - pos);
          memcpy(buf + pos, o->data + from, n);
          len += n;
        }
        break;
      }
      }
    }
    /* hand the target an exact-size copy so ASan sees overreads */
    uint8_t *exact = malloc(len ? len : 1);
    memcpy(exact, buf, len);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
  }
  free(buf);
  printf("fuzz: done, no crash\n");
  return 0;
}

/* boot.c - instances that boot for real (boot.h). */
#include "tests/fakecloud/boot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fakecloud/fakecloud.h"
#include "tests/fakecloud/module.h"

extern char **environ;

char *fc_base64_decode(const char *text, size_t *len) {
  size_t n = strlen(text);
  char *clean = malloc(n + 1);
  size_t m = 0, pad = 0;
  for (size_t i = 0; i < n; i++) {
    char c = text[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
      continue;
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=';
    if (!ok || (pad && c != '=')) {
      free(clean);
      return NULL;
    }
    if (c == '=')
      pad++;
    clean[m++] = c;
  }
  if (m % 4 || pad > 2) {
    free(clean);
    return NULL;
  }
  unsigned char *out = malloc(m / 4 * 3 + 1);
  int got = m ? EVP_DecodeBlock(out, (const unsigned char *)clean, (int)m) : 0;
  free(clean);
  if (got < 0) {
    free(out);
    return NULL;
  }
  size_t real = (size_t)got - pad;
  out[real] = '\0';
  if (len)
    *len = real;
  return (char *)out;
}

void fc_boot_dir_of(const struct fc_server *s, const char *id, char *out,
                    size_t cap) {
  int n = snprintf(out, cap, "%s/%s", fc_boot_root(s), id);
  if (n < 0 || (size_t)n >= cap)
    out[0] = '\0';
}

static bool id_ok(const char *id) {
  if (!*id || strlen(id) > 80)
    return false;
  for (const char *p = id; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
      return false;
  return id[0] != '.';
}

int fc_boot_start(struct fc_server *s, const char *id, const char *script,
                  size_t len, struct fc_boot *b) {
  memset(b, 0, sizeof *b);
  if (!id_ok(id))
    return -1;
  char dir[4096], path[4200], log[4200], meta[256], envdir[4200], envid[128];
  fc_boot_dir_of(s, id, dir, sizeof dir);
  if (!dir[0] || (mkdir(dir, 0700) && errno != EEXIST)) {
    fprintf(stderr, "tradewind-fakecloud: boot %s: cannot make %s: %s\n", id,
            dir, strerror(errno));
    return -1;
  }
  snprintf(path, sizeof path, "%s/user-data", dir);
  snprintf(log, sizeof log, "%s/console.log", dir);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(script, 1, len, f) != len) {
    if (f)
      fclose(f);
    return -1;
  }
  fclose(f);
  snprintf(meta, sizeof meta, "TRADEWIND_METADATA_URL=http://%s:%u/_meta/%s",
           fc_opts(s)->listen_host, fc_meta_port(s), id);
  snprintf(envdir, sizeof envdir, "TRADEWIND_AGENT_DIR=%s", dir);
  snprintf(envid, sizeof envid, "TRADEWIND_INSTANCE_ID=%s", id);
  /* The environment, built before fork (the server has threads). */
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = calloc(n + 4, sizeof *env);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "TRADEWIND_METADATA_URL=", 23) &&
        strncmp(environ[i], "TRADEWIND_AGENT_DIR=", 20) &&
        strncmp(environ[i], "TRADEWIND_INSTANCE_ID=", 22))
      env[k++] = environ[i];
  env[k++] = meta;
  env[k++] = envdir;
  env[k++] = envid;
  env[k] = NULL;
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
  char *argv[] = {"sh", path, NULL};
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    if (chdir(dir))
      _exit(126);
    dup2(nul, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    execve("/bin/sh", argv, env);
    _exit(127);
  }
  free(env);
  if (fd >= 0)
    close(fd);
  if (nul >= 0)
    close(nul);
  if (pid < 0)
    return -1;
  b->sid = pid;
  fc_boot_track(s, pid);
  if (fc_opts(s)->verbose)
    fprintf(stderr, "tradewind-fakecloud: booted %s (session %d) in %s\n", id,
            (int)pid, dir);
  return 0;
}

/* The session of process pid from /proc/<pid>/stat (field 6), or -1. */
static pid_t session_of(const char *pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%s/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command may hold blanks */
  int ppid, pgrp, sess;
  char st;
  if (!p || sscanf(p + 1, " %c %d %d %d", &st, &ppid, &pgrp, &sess) != 4)
    return -1;
  return st == 'Z' ? -1 : (pid_t)sess;
}

/* Sends sig (0: none) to every live process of session sid; returns how
 * many there are. */
static int each_in_session(pid_t sid, int sig) {
  DIR *d = opendir("/proc");
  if (!d)
    return 0;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9')
      continue;
    if (session_of(de->d_name) == sid) {
      n++;
      if (sig)
        kill((pid_t)atoi(de->d_name), sig);
    }
  }
  closedir(d);
  return n;
}

void fc_boot_kill(struct fc_boot *b) {
  if (!b->sid || b->killed)
    return;
  b->killed = true;
  kill(-b->sid, SIGKILL);
  each_in_session(b->sid, SIGKILL); /* groups the agent made for its job */
}

bool fc_boot_alive(const struct fc_boot *b) {
  if (!b->sid)
    return false;
  return each_in_session(b->sid, 0) > 0;
}

void fc_rm_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st))
    return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    struct dirent *de;
    while (d && (de = readdir(d))) {
      if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
        continue;
      char sub[4200];
      int n = snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
      if (n > 0 && (size_t)n < sizeof sub)
        fc_rm_tree(sub);
    }
    if (d)
      closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

bool fc_meta_split(const char *path, char *id, size_t cap, const char **sub) {
  if (strncmp(path, "/_meta/", 7))
    return false;
  const char *p = path + 7;
  size_t n = strcspn(p, "/");
  if (!n || n >= cap)
    return false;
  memcpy(id, p, n);
  id[n] = '\0';
  if (!id_ok(id))
    return false;
  *sub = p + n;
  return true;
}

bool fc_imds_ttl(const char *header, long *ttl) {
  if (!header || !*header || strlen(header) > 6)
    return false;
  long v = 0;
  for (const char *p = header; *p; p++) {
    if (*p < '0' || *p > '9')
      return false;
    v = v * 10 + (*p - '0');
  }
  if (v < 1 || v > 21600)
    return false;
  *ttl = v;
  return true;
}

int fc_az_start_requests(const char *body, size_t len, char (*ids)[64],
                         int max) {
  json_t *b = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, NULL);
  json_t *sr = json_object_get(b, "StartRequests");
  if (!json_is_array(sr)) {
    json_decref(b);
    return -1;
  }
  int n = 0;
  size_t i;
  json_t *e;
  json_array_foreach(sr, i, e) {
    const char *eid = json_string_value(json_object_get(e, "EventId"));
    if (!eid || strlen(eid) >= 64) {
      json_decref(b);
      return -1;
    }
    if (n < max)
      snprintf(ids[n++], 64, "%s", eid);
  }
  json_decref(b);
  return n;
}

/* bench-trace - the tracer's own CPU per traced submission, on N threads.
 *
 * Makes the two spans a traced `POST /v1/jobs` makes (the request's server
 * span with its six attributes, api/server.c; the admission's with two,
 * api/handlers.c; the traceparent written for the job's row) in a loop on
 * N threads of one process, with the tracer's exporter thread encoding
 * every batch as the daemon's does and the HTTP send replaced by a
 * function that counts the bytes.  CPU time moves less with the load of a
 * shared machine than bench-submit's rates (though a loaded machine's
 * cache and core contention still move it), so this is the figure to
 * compare builds of the tracer by, alternating them:
 *   trace_t16_cpu_per_job 1.25 us/job      (the whole process)
 *   trace_t16_request_cpu_per_job 0.80 us/job  (the request threads)
 *   trace_t16_export_cpu_per_job 0.45 us/job   (the rest: the exporter)
 *   trace_bytes_per_span 477 bytes/span
 * The request threads never let more than 768 spans wait (of the queue's
 * 2,048), so nothing is dropped; a dropped span fails the run.  Exit 0 when
 * every span was exported, 1 otherwise, 2 on usage errors.
 *
 * build/bench/bench-trace            # 1, 4, 16 threads, 200,000 jobs each
 * build/bench/bench-trace --quick    # 50,000 jobs each
 * build/bench/bench-trace --smoke    # 2,000 jobs on 4 threads */
#define _GNU_SOURCE /* clock_gettime, nanosleep under -std=c11 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/base/err.h"
#include "broker/base/trace.h"

#define MAX_THREADS 16

struct run {
  struct tw_tracer *t;
  long jobs;
  long long bytes; /* atomic: bodies sent */
};

static long count_send(void *ctx, const char *url, const char *const *headers,
                       const char *body, size_t len) {
  struct run *r = ctx;
  (void)url;
  (void)headers;
  (void)body;
  __atomic_add_fetch(&r->bytes, (long long)len, __ATOMIC_RELAXED);
  return 200;
}

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct worker {
  struct run *run;
  double cpu_s; /* the thread's own CPU */
};

static void *worker_main(void *arg) {
  struct worker *w = arg;
  struct tw_tracer *t = w->run->t;
  double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
  for (long i = 0; i < w->run->jobs; i++) {
    /* as api/server.c's span_begin(): no traceparent from the caller */
    struct tw_trace_ctx parent;
    tw_traceparent_parse(NULL, &parent);
    struct tw_span *sp = tw_span_alloc(t);
    tw_span_start(t, sp, "POST /v1/jobs", TW_SPAN_SERVER, &parent);
    tw_span_attr_str(sp, "http.request.method", "POST");
    tw_span_attr_str(sp, "http.route", "/v1/jobs");
    tw_span_attr_str(sp, "url.path", "/v1/jobs");
    tw_span_attr_str(sp, "tradewind.request_id", "r-6f1c2a9e0b7d4c35");
    /* as api/handlers.c's submission: the admission's span */
    struct tw_span adm;
    tw_span_start(t, &adm, "admission", TW_SPAN_INTERNAL, &sp->ctx);
    tw_span_attr_str(&adm, "tradewind.tenant", "default");
    tw_span_attr_str(&adm, "tradewind.admission", "admitted");
    tw_span_end(&adm);
    char tp[TW_TRACEPARENT_LEN + 1];
    tw_traceparent_fmt(&sp->ctx, tp, sizeof tp);
    tw_span_attr_str(sp, "tradewind.job_id", "j-01JDX4Q8Z7M2N5P6R3S9T0V1W");
    tw_span_attr_int(sp, "http.response.status_code", 201);
    tw_span_end(sp);
    tw_span_release(t, sp);
    if (i % 8 == 7) { /* 16 threads x 16 spans over 768 stay below the
                         queue's 2048: nothing dropped */
      struct tw_tracer_stats st;
      for (tw_tracer_stats(t, &st); st.queued > 768; tw_tracer_stats(t, &st)) {
        struct timespec z = {0, 200000};
        nanosleep(&z, NULL);
      }
    }
  }
  w->cpu_s = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
  return NULL;
}

/* One level: n threads, jobs each; returns failures. */
static int level(int n, long jobs) {
  struct run r = {.jobs = jobs};
  struct tw_tracer_opts o = {.endpoint = "http://127.0.0.1:4318",
                             .sampling = 1,
                             .send = count_send,
                             .send_ctx = &r};
  struct tw_err err = {0};
  if (tw_tracer_new(&o, &r.t, &err)) {
    fprintf(stderr, "bench-trace: %s\n", err.msg);
    return 1;
  }
  struct worker w[MAX_THREADS];
  pthread_t th[MAX_THREADS];
  double p0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  for (int i = 0; i < n; i++) {
    w[i] = (struct worker){.run = &r};
    if (pthread_create(&th[i], NULL, worker_main, &w[i])) {
      fprintf(stderr, "bench-trace: no thread\n");
      exit(1);
    }
  }
  double req = 0;
  for (int i = 0; i < n; i++) {
    pthread_join(th[i], NULL);
    req += w[i].cpu_s;
  }
  long total = jobs * n;
  long long spans = 2LL * total;
  /* every span exported before the tracer goes (10 s at most) */
  struct tw_tracer_stats st;
  for (int i = 0; i < 1000; i++) {
    tw_tracer_stats(r.t, &st);
    if (st.exported + st.dropped >= (uint64_t)spans)
      break;
    struct timespec z = {0, 10000000};
    nanosleep(&z, NULL);
  }
  tw_tracer_free(r.t, 10000);
  double all = clock_s(CLOCK_PROCESS_CPUTIME_ID) - p0;
  if (st.exported != (uint64_t)spans || st.dropped) {
    fprintf(stderr,
            "bench-trace: %d threads: %llu of %lld spans exported, %llu "
            "dropped\n",
            n, (unsigned long long)st.exported, spans,
            (unsigned long long)st.dropped);
    return 1;
  }
  printf("trace_t%d_cpu_per_job %.2f us/job\n", n, all * 1e6 / (double)total);
  printf("trace_t%d_request_cpu_per_job %.2f us/job\n", n,
         req * 1e6 / (double)total);
  printf("trace_t%d_export_cpu_per_job %.2f us/job\n", n,
         (all - req) * 1e6 / (double)total);
  printf("trace_bytes_per_span %.0f bytes/span\n",
         (double)__atomic_load_n(&r.bytes, __ATOMIC_RELAXED) / (double)spans);
  printf("trace_t%d_spans_exported %lld spans\n", n, spans);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  int levels[8] = {1, 4, 16}, n_levels = 3;
  long jobs = 200000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      jobs = 50000;
    } else if (!strcmp(argv[i], "--smoke")) {
      jobs = 2000;
      levels[0] = 4;
      n_levels = 1;
    } else {
      fprintf(stderr, "usage: bench-trace [--quick | --smoke]\n");
      return 2;
    }
  }
  printf("# bench-trace: two spans per job (a traced POST /v1/jobs), %ld "
         "jobs per thread, the send counting bytes\n",
         jobs);
  int failed = 0;
  for (int l = 0; l < n_levels; l++)
    failed += level(levels[l], jobs);
  return failed ? 1 : 0;
}

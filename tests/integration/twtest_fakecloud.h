/* twtest_fakecloud.h - tradewind-fakecloud as a subprocess, its control
 * API (/_fake/...) for the adapter integration tests (checks: tests/twtest.h).
 *
 * One fake per test process: twtest_fake_start() forks the binary with
 * `--listen 127.0.0.1:0 --seed 7 --clock-speed 0` plus the caller's
 * arguments, reads the address from its first stdout line (`listening
 * URL`) into twtest_fake_url, and the child dies with the test
 * (PR_SET_PDEATHSIG: start it from the main thread).  twtest_fake_ctl_ok
 * is a check: it fails the running cmocka test.
 *
 *   if (!twtest_fake_start((const char *[]){"--pending-ms", "5000", NULL}))
 *     return 1;
 *   twtest_fake_advance(1000);                 // the fake's clock, no sleep
 *   long n = twtest_fake_calls("/_fake/ec2/state", "RunInstances");
 *   twtest_fake_stop(); */
#ifndef TW_TESTS_INTEGRATION_TWTEST_FAKECLOUD_H
#define TW_TESTS_INTEGRATION_TWTEST_FAKECLOUD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "broker/base/err.h"
#include "tests/twtest.h"

/* The running fake's base URL ("http://127.0.0.1:PORT" or https). */
extern char twtest_fake_url[64];

/* Starts the fake with the common arguments followed by extra_args
 * (NULL-terminated, may be NULL).  Returns false, with the fake's first
 * line on stderr, when it did not announce an address. */
bool twtest_fake_start(const char *const extra_args[]);

/* SIGTERM and reap; harmless when not running. */
void twtest_fake_stop(void);

/* The CA file the control client trusts (an https fake with a test
 * certificate); NULL for the system default.  Kept, not copied. */
void twtest_fake_set_cainfo(const char *path);

/* method path [json body] -> the parsed JSON answer (json_decref it), or
 * NULL; a transport error or an HTTP status >= 300 is logged on stderr. */
json_t *twtest_fake_ctl(const char *method, const char *path, const char *body);

/* twtest_fake_ctl that must answer JSON (a TW_CHECK), the answer dropped. */
void twtest_fake_ctl_ok(const char *method, const char *path, const char *body);

/* Moves the fake's clock forward by ms. */
void twtest_fake_advance(int64_t ms);

/* Adds one fault rule (JSON), or drops them all. */
void twtest_fake_add_fault(const char *rule);
void twtest_fake_clear_faults(void);

/* calls.<action> of the state document at state_path
 * (e.g. "/_fake/ec2/state"): how many calls that action received. */
long twtest_fake_calls(const char *state_path, const char *action);

#endif

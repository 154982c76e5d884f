/* main.c - the `tradewind` program: the real streams, environment and
 * clock around tw_cli_run(). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include <curl/curl.h>

#include "broker/base/clock.h"
#include "cli/cli.h"

static void real_sleep_ms(void *ctx, int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

int main(int argc, char **argv) {
  /* A server that closes the connection while a TLS record is being
   * written must give an error, not kill the program (OpenSSL writes
   * without MSG_NOSIGNAL). */
  signal(SIGPIPE, SIG_IGN);
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    fputs("tradewind: cannot initialise libcurl\n", stderr);
    return 3;
  }
  struct tw_cli_io io = {
      .out = stdout,
      .err = stderr,
      .in = stdin,
      .env_url = getenv("TRADEWIND_URL"),
      .env_token = getenv("TRADEWIND_TOKEN"),
      .env_cacert = getenv("TRADEWIND_CACERT"),
      .env_config = getenv("TRADEWIND_CONFIG"),
      .env_home = getenv("HOME"),
      .clock = tw_clock_real(),
      .sleep_ms = real_sleep_ms,
  };
  int code = tw_cli_run(argc, argv, &io);
  curl_global_cleanup();
  return code;
}

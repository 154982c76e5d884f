/* test_spec_machine.c - the job's machine in the spec (broker/core/spec.h):
 * image, disk and ports, their shapes, their canonical JSON and the
 * operator's allow-list (struct tw_spec_machine), each refusal naming the
 * field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/twtest.h"
#include "broker/base/node.h"
#include "broker/core/spec.h"

static const char *const IMAGES[] = {"ami-*", "ubuntu-22.04", NULL};
static const char *const DISKS[] = {"gp3", "Premium_LRS", NULL};
static const struct tw_port_range PORTS[] = {{22, 22}, {8000, 9000}};
static const struct tw_spec_machine MACHINE = {.images = IMAGES,
                                               .disk_types = DISKS,
                                               .disk_max_gb = 2048,
                                               .ports = PORTS,
                                               .n_ports = 2};
static const struct tw_spec_opts ALLOW = {.machine = &MACHINE};
static const struct tw_spec_machine NOTHING = {0};
static const struct tw_spec_opts NONE = {.machine = &NOTHING};

static enum tw_rc parse(const char *text, const struct tw_spec_opts *o,
                        struct tw_job_spec *s, struct tw_err *err) {
  tw_err_clear(err);
  return tw_spec_parse_opts(text, strlen(text), false, o, s, err);
}

static void test_fields(void **state) {
  (void)state;
  struct tw_job_spec s;
  struct tw_err err;
  TW_CHECK_RC(parse("name: a\nimage: ami-0abc\ndisk: {size_gb: 200, type: "
                    "gp3}\nports: [\"8080-8090\", 22]\n",
                    &ALLOW, &s, &err),
              TW_OK, err);
  TW_CHECK_STR(s.image, "ami-0abc");
  TW_CHECK_INT(s.disk_size_gb, 200);
  TW_CHECK_STR(s.disk_type, "gp3");
  TW_CHECK_INT(s.n_ports, 2);
  TW_CHECK_INT(s.ports[0].lo, 22);
  TW_CHECK_INT(s.ports[0].hi, 22);
  TW_CHECK_INT(s.ports[1].lo, 8080);
  TW_CHECK_INT(s.ports[1].hi, 8090);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_spec_to_json(&s, &b);
  TW_CHECK(strstr(b.data, "\"image\":\"ami-0abc\",\"disk\":{\"size_gb\":200,"
                          "\"type\":\"gp3\"},\"ports\":[22,\"8080-8090\"]"),
           "%s", b.data);
  /* the canonical JSON reads back to the same spec */
  struct tw_job_spec t;
  TW_CHECK_RC(tw_spec_parse_opts(b.data, b.len, true, &ALLOW, &t, &err), TW_OK,
              err);
  struct tw_buf c;
  tw_buf_init(&c);
  tw_spec_to_json(&t, &c);
  TW_CHECK_STR(c.data, b.data);
  tw_buf_release(&b);
  tw_buf_release(&c);
  tw_spec_release(&t);
  tw_spec_release(&s);

  /* one port as a scalar, as SkyPilot writes it */
  TW_CHECK_RC(parse("name: a\nports: 8080\n", &ALLOW, &s, &err), TW_OK, err);
  TW_CHECK_INT(s.n_ports, 1);
  TW_CHECK_INT(s.ports[0].lo, 8080);
  tw_spec_release(&s);
  /* without an allow-list (stored specs) anything well-shaped passes */
  TW_CHECK_RC(parse("name: a\nimage: x\nports: [1]\n", NULL, &s, &err), TW_OK,
              err);
  tw_spec_release(&s);
}

struct bad {
  const char *text;
  const struct tw_spec_opts *opts;
  const char *field, *frag;
};

static const struct bad bad_cases[] = {
    {"name: a\nimage: [x]\n", NULL, "image", "expected an image id"},
    {"name: a\nimage: \"a b\"\n", NULL, "image", "may only contain"},
    {"name: a\ndisk: 100\n", NULL, "disk", "expected a mapping"},
    {"name: a\ndisk: {size: 100}\n", NULL, "disk.size", "unknown key"},
    {"name: a\ndisk: {size_gb: 0}\n", NULL, "disk.size_gb", "must be 1..65536"},
    {"name: a\ndisk: {type: \"g p\"}\n", NULL, "disk.type", "disk type"},
    {"name: a\nports: [0]\n", NULL, "ports[0]", "1..65535"},
    {"name: a\nports: [22, \"90-80\"]\n", NULL, "ports[1]", "range"},
    {"name: a\nports: [\"1-70000\"]\n", NULL, "ports[0]", "1..65535"},
    {"name: a\nports: {a: 1}\n", NULL, "ports", "expected a list"},
    {"name: a\nimage: debian-12\n", &ALLOW, "image",
     "image: debian-12 is not in the operator's allow-list (machine.images)"},
    {"name: a\nimage: ami-1\n", &NONE, "image", "allow-list"},
    {"name: a\ndisk: {type: io2}\n", &ALLOW, "disk.type",
     "io2 is not in the operator's allow-list (machine.disk_types)"},
    {"name: a\ndisk: {size_gb: 4096}\n", &ALLOW, "disk.size_gb",
     "4096 GB is more than the operator allows (machine.disk_max_gb: 2048)"},
    {"name: a\ndisk: {size_gb: 10}\n", &NONE, "disk.size_gb", "machine"},
    {"name: a\nports: [8080, 23, 22]\n", &ALLOW, "ports[1]",
     "ports[1]: 23 is not in the operator's allow-list (machine.ports)"},
    {"name: a\nports: [\"8500-9001\"]\n", &ALLOW, "ports[0]",
     "8500-9001 is not in"},
};

static void test_bad(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
    const struct bad *b = &bad_cases[i];
    struct tw_job_spec s;
    struct tw_err err;
    enum tw_rc rc = parse(b->text, b->opts, &s, &err);
    TW_CHECK(rc == TW_E_INVALID, "case %zu accepted: %s", i, b->text);
    if (rc != TW_E_INVALID) {
      tw_spec_release(&s);
      continue;
    }
    TW_CHECK_STR(err.field, b->field);
    TW_CHECK(strstr(err.msg, b->frag), "case %zu: %s", i, err.msg);
  }
}

/* the config's machine: section, as the daemon reads it */
static void test_config(void **state) {
  (void)state;
  const char *doc = "images: [\"ami-0*\", ubuntu-22.04]\ndisk_types: [gp3]\n"
                    "disk_max_gb: 500\nports: [22, \"8000-8100\"]\n";
  struct tw_node *n = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_node_parse_yaml(doc, strlen(doc), &n, &err), TW_OK, err);
  struct tw_spec_machine m;
  TW_CHECK_RC(tw_spec_machine_parse(n, &m, &err), TW_OK, err);
  tw_node_free(n);
  TW_CHECK_STR(m.images[1], "ubuntu-22.04");
  TW_CHECK(m.images[2] == NULL);
  TW_CHECK_INT(m.disk_max_gb, 500);
  TW_CHECK_INT(m.n_ports, 2);
  TW_CHECK_INT(m.ports[1].hi, 8100);
  struct tw_spec_opts o = {.machine = &m};
  struct tw_job_spec s;
  TW_CHECK_RC(parse("name: a\nimage: ami-0123\ndisk: {size_gb: 500, type: "
                    "gp3}\nports: [8050]\n",
                    &o, &s, &err),
              TW_OK, err);
  tw_spec_release(&s);
  TW_CHECK(parse("name: a\nports: [8101]\n", &o, &s, &err) == TW_E_INVALID);
  TW_CHECK_STR(err.field, "ports[0]");
  tw_spec_machine_release(&m);

  const struct {
    const char *doc, *field;
  } bad[] = {{"images: ami-1\n", "machine.images"},
             {"images: [\"a b\"]\n", "machine.images[0]"},
             {"disk_types: [\"gp*\"]\n", "machine.disk_types[0]"},
             {"disk_max_gb: 0\n", "machine.disk_max_gb"},
             {"ports: [22, \"9-1\"]\n", "machine.ports[1]"},
             {"imagez: []\n", "machine.imagez"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    TW_CHECK_RC(tw_node_parse_yaml(bad[i].doc, strlen(bad[i].doc), &n, &err),
                TW_OK, err);
    tw_err_clear(&err);
    TW_CHECK(tw_spec_machine_parse(n, &m, &err) == TW_E_INVALID, "%s",
             bad[i].doc);
    TW_CHECK_STR(err.field, bad[i].field);
    tw_node_free(n);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fields),
      cmocka_unit_test(test_bad),
      cmocka_unit_test(test_config),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

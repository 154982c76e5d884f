/* The provider's own times, which billing follows (docs/billing.md,
 * "Metering"): what each adapter's parser reads as the instance's start
 * of running and its end (struct tw_instance running_ms, ended_ms), from
 * answers shaped as the APIs write them: EC2 LaunchTime and the state
 * transition reason, ARM's instance view status times, ECS StartTime and
 * CreationTime, Slurm's start_time and end_time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/model.h"
#include "providers/alibaba/ecs_json.h"
#include "providers/aws/ec2_xml.h"
#include "providers/azure/arm_json.h"
#include "providers/slurm/slurm_json.h"

/* 2026-12-01T10:00:00Z */
#define T10 1796119200000LL

static const char EC2_BODY[] =
    "<DescribeInstancesResponse xmlns=\"http://ec2.amazonaws.com/doc/"
    "2016-11-15/\"><reservationSet><item><instancesSet>"
    "<item><instanceId>i-run</instanceId><instanceType>m5.large"
    "</instanceType><instanceState><code>16</code><name>running</name>"
    "</instanceState><launchTime>2026-12-01T10:00:00.000Z</launchTime>"
    "<reason></reason></item>"
    "<item><instanceId>i-gone</instanceId><instanceType>m5.large"
    "</instanceType><instanceState><code>48</code><name>terminated</name>"
    "</instanceState><launchTime>2026-12-01T10:00:00.000Z</launchTime>"
    "<reason>User initiated (2026-12-01 10:00:40 GMT)</reason>"
    "<stateReason><code>Client.UserInitiatedShutdown</code></stateReason>"
    "</item>"
    "<item><instanceId>i-spot</instanceId><instanceType>m5.large"
    "</instanceType><instanceState><code>48</code><name>terminated</name>"
    "</instanceState><launchTime>2026-12-01T10:00:00.000Z</launchTime>"
    "<reason>Service initiated (2026-12-01 10:20:00 GMT)</reason>"
    "<instanceLifecycle>spot</instanceLifecycle></item>"
    "<item><instanceId>i-wait</instanceId><instanceType>m5.large"
    "</instanceType><instanceState><code>0</code><name>pending</name>"
    "</instanceState><launchTime>2026-12-01T10:00:00.000Z</launchTime>"
    "</item>"
    "</instancesSet></item></reservationSet></DescribeInstancesResponse>";

static const struct tw_instance *find(const struct tw_instance_list *l,
                                      const char *id) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->items[i].id, id))
      return &l->items[i];
  return NULL;
}

static void ec2_launch_time_and_state_transition(void **state) {
  (void)state;
  struct tw_instance_list l;
  struct tw_err err = {0};
  tw_instance_list_init(&l);
  assert_int_equal(
      tw_ec2_parse_instances(EC2_BODY, strlen(EC2_BODY), &l, NULL, &err),
      TW_OK);
  const struct tw_instance *run = find(&l, "i-run");
  const struct tw_instance *gone = find(&l, "i-gone");
  const struct tw_instance *spot = find(&l, "i-spot");
  const struct tw_instance *wait = find(&l, "i-wait");
  assert_non_null(run);
  assert_non_null(gone);
  assert_non_null(spot);
  assert_non_null(wait);
  assert_int_equal(run->running_ms, T10);
  assert_int_equal(run->ended_ms, 0);
  assert_int_equal(gone->running_ms, T10);
  assert_int_equal(gone->ended_ms, T10 + 40000); /* 40 s ran */
  assert_string_equal(gone->state_reason, "Client.UserInitiatedShutdown");
  assert_int_equal(spot->ended_ms, T10 + 20 * 60000);
  /* the transition text stands in for a missing stateReason */
  assert_string_equal(spot->state_reason,
                      "Service initiated (2026-12-01 10:20:00 GMT)");
  assert_int_equal(wait->running_ms, 0); /* not running yet: not billed */
  tw_instance_list_release(&l);
}

static void arm_instance_view_times(void **state) {
  (void)state;
  static const char vm_json[] =
      "{\"name\":\"tw-1\",\"location\":\"eastus\",\"properties\":{"
      "\"hardwareProfile\":{\"vmSize\":\"Standard_D2s_v5\"},"
      "\"provisioningState\":\"Succeeded\","
      "\"timeCreated\":\"2026-12-01T09:59:50Z\","
      "\"instanceView\":{\"statuses\":["
      "{\"code\":\"ProvisioningState/succeeded\",\"level\":\"Info\","
      "\"time\":\"2026-12-01T10:00:00Z\"},"
      "{\"code\":\"PowerState/deallocated\",\"level\":\"Info\","
      "\"time\":\"2026-12-01T10:01:30Z\"}]}}}";
  struct tw_arm_vm vm;
  struct tw_err err = {0};
  assert_int_equal(tw_arm_parse_vm(vm_json, strlen(vm_json), &vm, &err),
                   TW_OK);
  struct tw_instance in;
  tw_instance_init(&in);
  tw_arm_vm_instance(&vm, &in);
  assert_int_equal(in.state, TW_INST_STOPPED);
  assert_int_equal(in.launched_ms, T10 - 10000);
  assert_int_equal(in.running_ms, T10); /* provisioned, not created */
  assert_int_equal(in.ended_ms, T10 + 90000);
}

static void ecs_start_time(void **state) {
  (void)state;
  static const char body[] =
      "{\"RequestId\":\"r\",\"TotalCount\":1,\"PageNumber\":1,"
      "\"PageSize\":100,\"Instances\":{\"Instance\":[{"
      "\"InstanceId\":\"i-ali\",\"RegionId\":\"cn-hangzhou\","
      "\"ZoneId\":\"cn-hangzhou-h\",\"InstanceType\":\"ecs.g7.large\","
      "\"Status\":\"Running\",\"SpotStrategy\":\"SpotAsPriceGo\","
      "\"CreationTime\":\"2026-12-01T09:59Z\","
      "\"StartTime\":\"2026-12-01T10:00Z\"}]}}";
  struct tw_instance_list l;
  struct tw_err err = {0};
  tw_instance_list_init(&l);
  assert_int_equal(tw_ecs_parse_instances(body, strlen(body), &l, NULL, &err),
                   TW_OK);
  assert_int_equal(l.n, 1);
  assert_int_equal(l.items[0].launched_ms, T10 - 60000);
  assert_int_equal(l.items[0].running_ms, T10);
  tw_instance_list_release(&l);
}

static void slurm_start_and_end_time(void **state) {
  (void)state;
  struct slurm_job j;
  memset(&j, 0, sizeof j);
  snprintf(j.state, sizeof j.state, "COMPLETED");
  j.submit_time = T10 / 1000 - 30;
  j.start_time = T10 / 1000;
  j.end_time = T10 / 1000 + 40; /* 40 s elapsed */
  struct slurm_state_map m;
  slurm_map_state(&j, &m);
  int64_t run, end;
  slurm_run_times(&j, &m, &run, &end);
  assert_int_equal(run, T10);
  assert_int_equal(end, T10 + 40000);
  /* running: Slurm's end_time is the time limit's, not an end */
  snprintf(j.state, sizeof j.state, "RUNNING");
  j.end_time = T10 / 1000 + 3600;
  slurm_map_state(&j, &m);
  slurm_run_times(&j, &m, &run, &end);
  assert_int_equal(run, T10);
  assert_int_equal(end, 0);
  /* pending: start_time is only Slurm's estimate */
  snprintf(j.state, sizeof j.state, "PENDING");
  slurm_map_state(&j, &m);
  slurm_run_times(&j, &m, &run, &end);
  assert_int_equal(run, 0);
}

int main(void) {
  tw_ec2_xml_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ec2_launch_time_and_state_transition),
      cmocka_unit_test(arm_instance_view_times),
      cmocka_unit_test(ecs_start_time),
      cmocka_unit_test(slurm_start_and_end_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

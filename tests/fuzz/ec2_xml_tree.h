/* ec2_xml_tree.h - the tree-based EC2 parsers the tests compare
 * providers/aws/ec2_xml.c against (tests/fuzz/ec2_xml_tree.c); the same
 * contracts as the tw_ec2_* functions of providers/aws/ec2_xml.h. */
#ifndef TW_TESTS_FUZZ_EC2_XML_TREE_H
#define TW_TESTS_FUZZ_EC2_XML_TREE_H

#include "providers/aws/ec2_xml.h"

bool tw_ec2_tree_parse_error(const char *body, size_t len,
                             struct tw_ec2_error *out);
enum tw_rc tw_ec2_tree_response_error(const char *action, long http_status,
                                      const char *body, size_t len,
                                      struct tw_err *err);
enum tw_rc tw_ec2_tree_parse_instances(const char *body, size_t len,
                                       struct tw_instance_list *out,
                                       char **next_token, struct tw_err *err);
enum tw_rc
tw_ec2_tree_parse_state_changes(const char *body, size_t len,
                                struct tw_ec2_state_change_list *out,
                                struct tw_err *err);
enum tw_rc tw_ec2_tree_parse_spot_prices(const char *body, size_t len,
                                         struct tw_ec2_spot_price_list *out,
                                         char **next_token,
                                         struct tw_err *err);
enum tw_rc
tw_ec2_tree_parse_spot_requests(const char *body, size_t len,
                                struct tw_ec2_spot_request_list *out,
                                char **next_token, struct tw_err *err);
enum tw_rc
tw_ec2_tree_parse_instance_types(const char *body, size_t len,
                                 struct tw_ec2_instance_type_list *out,
                                 char **next_token, struct tw_err *err);
enum tw_rc tw_ec2_tree_parse_zones(const char *body, size_t len,
                                   struct tw_ec2_zone_list *out,
                                   struct tw_err *err);

/* Runs every parser of both kinds over body and aborts on the first
 * difference (rc, message, every field, the next token), after printing
 * it to stderr.  For the fuzz target and the unit test. */
void tw_ec2_tree_compare(const char *body, size_t len);

#endif

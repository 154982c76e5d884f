# Security (issue 16): sign-in through an identity provider.  Every test
# carries the label `security`.

# The loopback OpenID Connect issuer the tests sign tokens with.
add_library(twtest_oidc STATIC
            ${CMAKE_SOURCE_DIR}/tests/integration/twtest_oidc.c)
target_link_libraries(twtest_oidc PUBLIC tw_api PkgConfig::OPENSSL
                      PkgConfig::MHD)

# RS256 and ES256 tokens from two loopback issuers (one by discovery, one
# shaped as GitHub Actions tokens) against the live server: the mapped
# principal and role, every refusal (iss, aud, exp, nbf, iat, signature,
# alg none, HS256 confusion, key type), the unknown-kid refetch and its
# rate limit, no role without a rule, the audit of sign-ins.
tw_add_test(test_oidc
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_oidc.c
  LIBS twtest_oidc tw_api PkgConfig::CURL PkgConfig::CMOCKA
  LABELS integration security TIMEOUT 120)

# JWT and JWK Set parsing and the signature check against hostile and
# patched input: only the issuer's own unchanged tokens verify.
tw_add_fuzz(fuzz_jwt
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_jwt.c
  LIBS twtest_oidc tw_api
  LABELS security
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/jwt)

# The front door's judgement of a first request head (api/door.c): what
# passes to libmicrohttpd, what waits, what is refused with which status.
tw_add_test(test_door_judge
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_door_judge.c
  LIBS tw_api PkgConfig::CMOCKA PkgConfig::JANSSON
  LABELS unit security)

# The front door's judgement of a request head (api/door.c): a prefix
# decides as the whole does, a passing head is a whole HTTP/1.x head
# within the limit, every refusal a problem+json answer.
tw_add_fuzz(fuzz_door_head
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_door_head.c
  LIBS tw_api PkgConfig::JANSSON
  LABELS security
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/door_head)

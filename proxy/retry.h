/* retry.h -- the upstream transfer's decisions, as pure functions.
 *
 * What a failed round is worth (another try, and when), where a route
 * falls back to, and when an upstream is late: each a function of plain
 * values (curl's result, the provider's status and Retry-After, the
 * clocks), so test/unit/test_retry.c checks them without a socket and
 * proxy/upstream.c only acts on what they say. No state, no allocation.
 */
#ifndef TG_RETRY_H
#define TG_RETRY_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

/* Worth another try: the request never reached a model (connect
 * failures) or the provider said "not now" (429/5xx). A round toolgate
 * timed out itself (timed_out: ttfb or idle) is not retried. The caller
 * adds what the request's state decides (nothing has reached the client
 * yet, the client is still there). */
bool tg_retryable(CURLcode result, long status, bool timed_out);

/* The wait before retry number attempt + 1 in ms, or -1 for "do not
 * retry": the route's retries are spent, or the provider's Retry-After
 * (seconds) names more than 60 s (the agent had better decide). Without a
 * usable Retry-After: exponential backoff with jitter, in
 * [base/2, base] for base = 100 ms << min(attempt, 7) (50-100 ms first,
 * at most 12.8 s); jitter is any number (the clock), taken modulo the
 * range. */
long tg_retry_delay_ms(int attempt, int retries, const char *retry_after, uint64_t jitter);

/* The route to fall back to once retries are spent: the route's fallback
 * (its name, borrowed) when it has one, has not been used yet, and the
 * request is a chat one (toolgate rewrites only those for another route's
 * dialect); else NULL. */
const char *tg_fallback_route(const char *fallback, bool fell_back, bool is_chat);

/* Is an upstream late at `now` (all times in µs of one clock)? Before its
 * first byte the ttfb limit counts from the round's start, after it the
 * idle limit from the last byte; a limit of 0 is none. Connect and total
 * limits are curl's own. */
typedef enum { TG_ON_TIME, TG_LATE_TTFB, TG_LATE_IDLE } tg_lateness;
tg_lateness tg_upstream_late(uint64_t now, uint64_t t_start, uint64_t t_first_byte,
                             uint64_t t_last_byte, long ttfb_timeout_ms, long idle_timeout_ms);

/* A failed round is a timeout (504) rather than unreachable (502) when
 * toolgate timed it out or curl did (connect_timeout, total_timeout). */
bool tg_upstream_timed_out(bool timed_out, CURLcode result);

#endif

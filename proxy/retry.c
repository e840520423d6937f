/* retry.c -- the upstream transfer's decisions (see retry.h): retryable
 * answers, the delay before a retry, the fallback, lateness. Pure
 * functions of plain values, called by proxy/upstream.c. */
#include "proxy/retry.h"

#include <stdlib.h>

bool tg_retryable(CURLcode result, long status, bool timed_out)
{
    if (timed_out)
        return false;
    switch (result) {
    case CURLE_OK:
        return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
        return true;
    default:
        return false;
    }
}

long tg_retry_delay_ms(int attempt, int retries, const char *retry_after, uint64_t jitter)
{
    if (attempt >= retries)
        return -1;
    if (retry_after) {
        char *end;
        double secs = strtod(retry_after, &end);
        if (end != retry_after && secs >= 0)
            return secs > 60 ? -1 : (long)(secs * 1000);
    }
    long base = 100L << (attempt < 7 ? attempt : 7);
    return base / 2 + (long)(jitter % (uint64_t)(base / 2 + 1));
}

const char *tg_fallback_route(const char *fallback, bool fell_back, bool is_chat)
{
    return fallback && !fell_back && is_chat ? fallback : NULL;
}

tg_lateness tg_upstream_late(uint64_t now, uint64_t t_start, uint64_t t_first_byte,
                             uint64_t t_last_byte, long ttfb_timeout_ms, long idle_timeout_ms)
{
    if (!t_first_byte)
        return ttfb_timeout_ms && now > t_start &&
                       now - t_start > (uint64_t)ttfb_timeout_ms * 1000
                   ? TG_LATE_TTFB
                   : TG_ON_TIME;
    return idle_timeout_ms && now > t_last_byte &&
                   now - t_last_byte > (uint64_t)idle_timeout_ms * 1000
               ? TG_LATE_IDLE
               : TG_ON_TIME;
}

bool tg_upstream_timed_out(bool timed_out, CURLcode result)
{
    return timed_out || result == CURLE_OPERATION_TIMEDOUT;
}

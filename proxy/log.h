/* log.h -- diagnostics to stderr, access log lines to their own stream.
 * The level is process-wide and set once at start-up (before workers run). */
#ifndef TG_LOG_H
#define TG_LOG_H

#include <stdbool.h>

#include "conf/conf.h"

void tg_log_setup(tg_log_level level, const char *access_log);
tg_log_level tg_log_level_get(void);
void tg_log(tg_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One access-log line (a JSON object, no newline); written with one write(2)
 * so lines from several workers never interleave. */
void tg_access_log(const char *line, size_t len);
bool tg_access_log_on(void);

#endif

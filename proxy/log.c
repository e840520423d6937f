/* log.c -- see log.h. Settings are written once in main() before any worker
 * thread starts and only read afterwards, so they need no lock. Secrets never
 * reach these functions: callers pass redacted values (see access_log_line
 * in proxy/request.c). */
#include "proxy/log.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static tg_log_level log_level = TG_LOG_INFO;
static int access_fd = 1;

void tg_log_setup(tg_log_level level, const char *access_log)
{
    log_level = level;
    if (!access_log || !strcmp(access_log, "-"))
        access_fd = 1;
    else if (!strcmp(access_log, "off"))
        access_fd = -1;
    else {
        int fd = open(access_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        access_fd = fd >= 0 ? fd : 1;
    }
}

tg_log_level tg_log_level_get(void)
{
    return log_level;
}

bool tg_access_log_on(void)
{
    return access_fd >= 0;
}

void tg_log(tg_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (level > log_level)
        return;
    char line[2048];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02dZ toolgate %s: ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(2, line, len);
    (void)w;
}

void tg_access_log(const char *line, size_t len)
{
    if (access_fd < 0)
        return;
    char buf[4096];
    if (len + 1 <= sizeof buf) {
        memcpy(buf, line, len);
        buf[len] = '\n';
        ssize_t w = write(access_fd, buf, len + 1);
        (void)w;
    }
}
